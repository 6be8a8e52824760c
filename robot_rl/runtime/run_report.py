"""A run's report (`robot-rl report`): its learning curves and tables in one HTML page.

Reads what `robot-rl train` and `robot-rl learner` write in a run directory (config.json,
metrics.jsonl, eval.jsonl, summary.json, checkpoints/step_*/) and, for `robot-rl up`, the
learner's run directory learner/ under the stack's one, with the stack's report.json, stack.json
and logs/. A malformed JSON line (a run stopped mid-write leaves a torn last one) is skipped with a
warning. Pure Python and matplotlib: no JAX, ROS 2 or MuJoCo.
"""

from __future__ import annotations

import base64
import html
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from robot_rl.errors import UserError
from robot_rl.runtime.plots import draw_curves
from robot_rl.runtime.step_records import read_jsonl

RUN_FILES = ("config.json", "metrics.jsonl", "eval.jsonl")
LEARNER_DIR = "learner"
"""Where `robot-rl up` puts the learner's run directory inside its own."""
KEY_FIELDS = (
    "task", "backend", "env_id", "cameras", "seed", "total_steps", "start_steps", "demos",
    "demo_path", "demo_fraction", "batch_size", "utd_ratio", "eval_every", "eval_episodes",
    "interventions", "reward_classifier", "relabel_false_positives", "bind", "resume",
)  # fmt: skip
EVAL_HEADERS = ("step", "episodes", "success (95% CI)", "return", "length")
_STEP_DIR = re.compile(r"^step_(\d+)$")
_PARTIAL_STEP_DIR = re.compile(r"^\.tmp_step_(\d+)_\d+$")  # a checkpoint write cut short


class NotARunDir(UserError):
    """The path holds none of the files a run writes."""


@dataclass
class Run:
    root: Path
    """The directory the user named."""
    data_dir: Path
    """Where config.json, metrics.jsonl and eval.jsonl are: root, or root/learner for `up`."""
    config: dict | None = None
    metrics: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    summary: dict | None = None
    stack_report: dict | None = None
    processes: list[dict] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    checkpoints: list[dict] = field(default_factory=list)
    classifier_counts: dict | None = None
    """The reward classifier's relabel counts at its last fine-tune (reward_classifier/)."""
    warnings: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.data_dir != self.root:
            return "robot-rl up (whole stack)"
        if self.config is not None and "bind" in self.config:
            return "robot-rl learner (distributed)"
        return "robot-rl train (single process)"

    @property
    def title(self) -> str:
        parts = [] if self.data_dir == self.root else ["learner"]
        if self.config is not None and self.config.get("task"):
            parts.append(str(self.config["task"]))
        return self.root.name + (f" ({', '.join(parts)})" if parts else "")


def _read_json(path: Path, warnings: list[str]) -> dict | list | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(errors="replace"))
    except json.JSONDecodeError as err:
        warnings.append(f"{path}: malformed JSON ({err.msg}), ignored")
        return None


def _checkpoints(directory: Path, warnings: list[str]) -> list[dict]:
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        done, partial = _STEP_DIR.match(path.name), _PARTIAL_STEP_DIR.match(path.name)
        if not path.is_dir() or not (done or partial):
            continue
        meta = _read_json(path / "meta.json", warnings) if done else None
        meta = meta if isinstance(meta, dict) else {}
        found.append(
            {
                "step": int((done or partial).group(1)),
                "complete": bool(done),
                **{k: meta[k] for k in ("episodes", "received", "updates") if k in meta},
            }
        )
    return sorted(found, key=lambda c: c["step"])


def load_run(run_dir: str | Path) -> Run:
    """Everything a report shows of ``run_dir``; NotARunDir if it is not a run directory."""
    root = Path(run_dir)
    if not root.exists():
        raise NotARunDir(f"not a run directory: {root} does not exist")
    if not root.is_dir():
        raise NotARunDir(f"not a run directory: {root} is not a directory")
    data_dir = root
    if not any((root / name).is_file() for name in RUN_FILES):
        data_dir = root / LEARNER_DIR
        if not any((data_dir / name).is_file() for name in RUN_FILES):
            raise NotARunDir(
                f"not a run directory: {root} (expected {', '.join(RUN_FILES)} as robot-rl train "
                f"and robot-rl learner write them, or {LEARNER_DIR}/ holding them as robot-rl up "
                "writes it)"
            )
    run = Run(root=root, data_dir=data_dir)
    warn = run.warnings
    config = _read_json(data_dir / "config.json", warn)
    run.config = config if isinstance(config, dict) else None
    run.metrics = read_jsonl(data_dir / "metrics.jsonl", warn)
    run.evals = read_jsonl(data_dir / "eval.jsonl", warn)
    summary = _read_json(data_dir / "summary.json", warn)
    run.summary = summary if isinstance(summary, dict) else None
    run.checkpoints = _checkpoints(data_dir / "checkpoints", warn)
    classifier = _read_json(data_dir / "reward_classifier" / "config.json", warn)
    if isinstance(classifier, dict) and isinstance(classifier.get("metrics"), dict):
        run.classifier_counts = classifier["metrics"]
    if data_dir != root:
        report = _read_json(root / "report.json", warn)
        run.stack_report = report if isinstance(report, dict) else None
        processes = _read_json(root / "stack.json", warn)
        run.processes = [p for p in processes or [] if isinstance(p, dict)]
        if (root / "logs").is_dir():
            run.logs = sorted(p.name for p in (root / "logs").iterdir() if p.is_file())
    return run


def missing(run: Run) -> list[str]:
    """What the run directory lacks, each with what that means."""
    notes = []
    if run.config is None:
        notes.append("config.json: missing or unreadable (no configuration to show)")
    if not run.metrics:
        notes.append("metrics.jsonl: missing or empty (no training episodes or losses logged)")
    if not run.evals:
        notes.append("eval.jsonl: missing or empty (no evaluation yet)")
    if run.summary is None:
        notes.append(
            "summary.json: missing (the run has not finished: still running, crashed or stopped)"
        )
    if not any(c["complete"] for c in run.checkpoints):
        notes.append("checkpoints/: no complete checkpoint")
    if run.data_dir != run.root:
        if run.stack_report is None:
            notes.append("report.json: missing (the stack did not finish: no final evaluation)")
        if not run.logs:
            notes.append("logs/: missing or empty (no process logs)")
    return notes


def _num(value, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "–"


def _pct(value) -> str:
    return f"{value:.0%}" if isinstance(value, (int, float)) else "–"


def success_text(e: dict) -> str:
    text = _pct(e.get("success_rate"))
    if "success_ci_low" in e and "success_ci_high" in e:
        text += f" [{_pct(e['success_ci_low'])}, {_pct(e['success_ci_high'])}]"
    return text


def eval_rows(evals: list[dict]) -> list[tuple[str, ...]]:
    """One row per evaluation under EVAL_HEADERS."""
    return [
        (
            str(e["step"]),
            str(e.get("episodes", "–")),
            success_text(e),
            f"{_num(e.get('return_mean'))} ± {_num(e.get('return_std'))}",
            _num(e.get("length_mean")),
        )
        for e in evals
    ]


def _numbers(records: list[dict], key: str) -> list[float]:
    return [r[key] for r in records if isinstance(r.get(key), (int, float))]


def training_rows(run: Run) -> list[tuple[str, str]]:
    """The training summary: episodes, training success, interventions, relabels, losses."""
    summary, rows = run.summary or {}, []
    rows.append(("finished", "yes (summary.json)" if run.summary else "no summary.json"))
    if run.metrics:
        rows.append(("last logged step", str(max(m["step"] for m in run.metrics))))
    episodes = [m for m in run.metrics if "charts/episode_return" in m]
    if "episodes" in summary:
        rows.append(("episodes", str(summary["episodes"])))
    else:
        rows.append(("episodes (in metrics.jsonl)", str(len(episodes))))
    for key, label in (
        ("charts/success", "training success"),
        ("robot/intervention_rate", "intervention rate"),
    ):
        values = _numbers(run.metrics, key)
        if values:
            last = values[-20:]
            rows.append((f"{label} (last {len(last)} episodes)", _pct(sum(last) / len(last))))
            rows.append((f"{label} (all {len(values)} episodes)", _pct(sum(values) / len(values))))
    seconds = _numbers(run.metrics, "robot/intervention_seconds")
    if seconds:
        rows.append(("intervention time (s)", _num(sum(seconds))))
    relabel, source = summary.get("reward_relabel"), ""
    if not isinstance(relabel, dict) and run.classifier_counts:
        relabel, source = run.classifier_counts, " (at its last fine-tune)"
    for key, value in (relabel or {}).items():
        rows.append((f"reward classifier: {key.replace('_', ' ')}{source}", str(value)))
    for key in ("received", "updates", "actors", "update_seconds"):
        if key in summary:
            rows.append(
                (
                    f"learner: {key.replace('_', ' ')}",
                    _num(summary[key]) if isinstance(summary[key], float) else _value(summary[key]),
                )
            )
    updates = [m for m in run.metrics if any(k.startswith("losses/") for k in m)]
    if updates:
        last = updates[-1]
        figures = ", ".join(
            f"{k} {v:.4g}"
            for k, v in last.items()
            if isinstance(v, (int, float))
            and (k.startswith(("losses/", "values/")) or k == "charts/temperature")
        )
        rows.append((f"last update figures (step {last['step']})", figures))
    return rows


def stack_rows(run: Run) -> list[tuple[str, str]]:
    """`robot-rl up`: its processes, times and the final checkpoint's evaluation."""
    report, rows = run.stack_report or {}, []
    for key in ("mode", "task", "total_steps"):
        if key in report:
            rows.append((key.replace("_", " "), str(report[key])))
    for key in ("train_seconds", "wall_seconds"):
        if isinstance(report.get(key), (int, float)):
            rows.append((key.replace("_seconds", " time"), f"{report[key] / 60:.1f} min"))
    utd = report.get("utd")
    if isinstance(utd, dict) and utd.get("recipe") is not None:
        from robot_rl.runtime.stack_progress import utd_text

        rows.append(("update-to-data ratio", utd_text(utd)))
    final = report.get("eval")
    if isinstance(final, dict):
        text = f"success {success_text(final)} over {final.get('episodes', '?')} episodes"
        if "cycle_time_s" in final:
            text += f", cycle time {_num(final['cycle_time_s'], 2)} s"
        rows.append((f"final evaluation ({Path(str(final.get('checkpoint', ''))).name})", text))
    if run.processes:
        rows.append(
            ("processes", ", ".join(f"{p.get('name')} ({p.get('role')})" for p in run.processes))
        )
    if run.logs:
        rows.append(("logs", ", ".join(f"logs/{name}" for name in run.logs)))
    return rows


def _flatten(config: dict, prefix: str = "") -> list[tuple[str, object]]:
    items = []
    for key, value in config.items():
        if isinstance(value, dict):
            items += _flatten(value, f"{prefix}{key}.")
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _value(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "none"
    return str(value)


def config_rows(config: dict, key_only: bool) -> list[tuple[str, str]]:
    items = _flatten(config)
    if key_only:
        gym = config.get("backend") == "gym"
        items = [(k, v) for k, v in items if k in KEY_FIELDS and (k != "env_id" or gym)]
    return [(k, _value(v)) for k, v in items]


def checkpoint_rows(run: Run) -> list[tuple[str, str]]:
    rows = []
    for c in run.checkpoints:
        notes = [f"{k} {c[k]}" for k in ("episodes", "received", "updates") if k in c]
        if not c["complete"]:
            notes.append("incomplete: its write was cut short")
        rows.append((str(c["step"]), ", ".join(notes)))
    return rows


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:left}th{background:#f3f3f3}img{max-width:100%}.warn{color:#a35c00}code{color:#555}"""


def _table(headers: tuple[str, ...] | None, rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers or ())
    head = f"<tr>{head}</tr>" if head else ""
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table>{head}{body}</table>"


def _items(texts: list[str], css: str = "") -> str:
    if not texts:
        return ""
    return f'<ul class="{css}">' + "".join(f"<li>{html.escape(t)}</li>" for t in texts) + "</ul>"


def build_html(run: Run, curves_png: bytes | None) -> str:
    """The whole report as one page; the curves PNG, if any, embedded as base64."""
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(run.title)}</title>"
        f"<style>{CSS}</style></head><body><h1>Run report: {e(run.title)}</h1>"
        f"<p><code>{e(str(run.root.absolute()))}</code> · {e(run.kind)} · "
        f"generated {e(time.strftime('%Y-%m-%d %H:%M:%S'))}</p><h2>Learning curves</h2>"
    ]
    if curves_png:
        data = base64.b64encode(curves_png).decode("ascii")
        parts.append(f'<img alt="learning curves" src="data:image/png;base64,{data}">')
    else:
        parts.append("<p>No curves: no evaluations and no training episodes logged.</p>")
    parts.append("<h2>Evaluations</h2>")
    parts.append(_table(EVAL_HEADERS, eval_rows(run.evals)) if run.evals else "<p>None.</p>")
    parts.append("<h2>Training</h2>" + _table(None, training_rows(run)))
    if run.data_dir != run.root:
        parts.append("<h2>Stack (robot-rl up)</h2>" + _table(None, stack_rows(run)))
    parts.append("<h2>Checkpoints</h2>")
    rows = checkpoint_rows(run)
    parts.append(_table(("step", "notes"), rows) if rows else "<p>None.</p>")
    parts.append("<h2>Configuration</h2>")
    if run.config is None:
        parts.append("<p>No config.json.</p>")
    else:
        full = config_rows(run.config, key_only=False)
        parts.append(_table(("key", "value"), config_rows(run.config, key_only=True)))
        parts.append(
            f"<details><summary>all {len(full)} config keys</summary>"
            f"{_table(('key', 'value'), full)}</details>"
        )
    notes = missing(run)
    if notes or run.warnings:
        parts.append("<h2>Missing and skipped</h2>" + _items(notes) + _items(run.warnings, "warn"))
    parts.append("</body></html>")
    return "\n".join(parts)


def _plottable(e: dict) -> bool:
    keys = ("success_rate", "success_ci_low", "success_ci_high", "return_mean")
    return all(isinstance(e.get(k), (int, float)) for k in keys)


def write_report(run: Run, out_dir: str | Path) -> dict[str, Path | None]:
    """Write curves.png (when there is data) and report.html into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    evals = [e for e in run.evals if _plottable(e)]
    curves = draw_curves(evals, run.metrics, out_dir / "curves.png", title=run.title)
    page = out_dir / "report.html"
    page.write_text(build_html(run, curves.read_bytes() if curves else None), encoding="utf-8")
    return {"report": page, "curves": curves}
