"""One live line for a whole stack, read from the actor's and the learner's progress output.

The processes print their own progress lines (``robot-rl actor`` / ``robot-rl learner``);
this reads what their logs gained since the last call and keeps the newest figure of each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PATTERNS = {
    "learner": {
        "transitions": r"transitions (\d+)",
        "episodes": r"episodes (\d+)",
        "success": r"success \(last 20\) (\d+%|-)",
        "updates": r"updates (\d+) \(",
        "updates_per_s": r"updates \d+ \((\d+)/s\)",
        "weights": r"weights v(-?\d+)",
        "lag": r"\| lag (\d+) \|",
        "utd": r"UTD ([\d.]+|-)/",
    },
    "actor": {
        "steps": r"steps (\d+)",
        "control_hz": r"control ([\d.]+) Hz",
        "weights": r"weights v(-?\d+)",
        "unacknowledged": r"unacknowledged (\d+)",
        "stale": r"(stale reading)",
    },
}


class LogFollower:
    """The newest value of each pattern in a growing log file."""

    def __init__(self, path: Path, patterns: dict[str, str]):
        self.path = path
        self.patterns = {k: re.compile(v) for k, v in patterns.items()}
        self.values: dict[str, str] = {}
        self.counts: dict[str, int] = dict.fromkeys(patterns, 0)
        self._offset = 0
        self._partial = ""

    def update(self) -> dict[str, str]:
        if not self.path.is_file():
            return self.values
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk.decode(errors="replace")).split("\n")
        self._partial = lines.pop()
        for line in lines:
            for key, pattern in self.patterns.items():
                found = pattern.findall(line)
                if found:
                    self.values[key] = found[-1]
                    self.counts[key] += 1
        return self.values


class StackProgress:
    def __init__(self, log_dir: Path):
        self.followers = {
            name: LogFollower(log_dir / f"{name}.log", patterns)
            for name, patterns in PATTERNS.items()
        }

    def line(self) -> str:
        learner = self.followers["learner"].update()
        actor = self.followers["actor"].update()
        stale = self.followers["actor"].counts["stale"]
        return (
            f"env steps {actor.get('steps', '0')} (learner has {learner.get('transitions', '0')})"
            f" | episodes {learner.get('episodes', '0')}"
            f" | success (last 20) {learner.get('success', '-')}"
            f" | learner {learner.get('updates_per_s', '0')} updates/s"
            f" ({learner.get('updates', '0')} in all)"
            f" | actor {actor.get('control_hz', '-')} Hz"
            f" | weights v{learner.get('weights', '-')} (actor v{actor.get('weights', '-')})"
            + f" | UTD {learner.get('utd', '-')}, learner lag {learner.get('lag', '-')}"
            + (f" | stale steps {stale}" if stale else "")
        )


def actor_summary(log: Path) -> dict | None:
    """The actor's closing JSON line (``robot-rl actor`` prints its summary last), if any."""
    if not log.is_file():
        return None
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if line.startswith("{") and '"actor"' in line:
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def utd_report(learner: dict | None, actor: dict | None, paced: bool) -> dict:
    """report.json's ``utd``: the learner's ratio while data came in, and the actor's waits."""
    utd = dict((learner or {}).get("utd") or {})
    utd["paced"] = paced
    if actor is not None:
        utd["actor_waits"] = actor.get("learner_waits", 0)
        utd["actor_wait_seconds"] = actor.get("learner_wait_seconds", 0.0)
    return utd


def utd_text(utd: dict) -> str:
    """The closing line's account: ratio while acting against the recipe, and the waits or lag."""
    ratio = utd.get("effective_while_acting")
    text = (
        f"UTD {ratio:.2f} while acting (recipe {utd.get('recipe')})"
        if ratio is not None
        else "UTD - (no update while acting)"
    )
    if utd.get("paced"):
        return text + (
            f", actor waited {utd.get('actor_waits', '?')} times "
            f"({utd.get('actor_wait_seconds', 0.0):.0f} s)"
        )
    return (
        text + f", learner lag at the end of the data {utd.get('lag_at_data_end', '?')} "
        f"transitions (max {utd.get('max_lag', '?')})"
    )
