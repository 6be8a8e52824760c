"""The `robot-rl` console script: a registry of subcommands, each imported only when chosen.

A subcommand is a module in `robot_rl.commands` with a config dataclass (parsed by tyro: each
field's docstring is its --help) and `run(config) -> int`; adding one is a module plus one entry
in COMMANDS. A module that sets `CONFIG_FILE = True` also takes `--config FILE`
(`robot_rl.config_file`: the file's fields, then the flags beside it). Nothing heavy is imported
here, so `robot-rl --help` stays fast and works without JAX.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
import re
import sys
from collections.abc import Sequence

from robot_rl.errors import UserError

# name -> (module, config class in that module, one-line description); the module is
# robot_rl.commands.<name with "_" for "-">
COMMANDS: dict[str, tuple[str, str, str]] = {
    name: (f"robot_rl.commands.{name.replace('-', '_')}", config, description)
    for name, (config, description) in {
        "doctor": (
            "DoctorConfig",
            "what this machine has: JAX devices, MuJoCo rendering, rclpy and its RMW, "
            "librealsense, torch",
        ),
        "train": (
            "TrainConfig",
            "single-process training with progress output, checkpoints and curves",
        ),
        "train-fb": (
            "ForwardBackwardConfig",
            "forward-backward reset-free training on the twin: two policies take turns (SERL)",
        ),
        "eval": (
            "EvalConfig",
            "success rate with a 95% confidence interval, cycle time, optional MP4",
        ),
        "report": (
            "ReportConfig",
            "learning curves and tables of a run as PNG/HTML (report.html, curves.png)",
        ),
        "learner": (
            "LearnerConfig",
            "the training half of a distributed run: actors connect and stream transitions",
        ),
        "actor": (
            "ActorConfig",
            "the acting half of a distributed run: runs the task, streams to a learner",
        ),
        "up": (
            "UpConfig",
            "the whole stack as processes: twin or driver nodes, cameras, actor (ROS 2), learner",
        ),
        "keys": ("KeysConfig", "CURVE key pairs so a learner can listen beyond loopback"),
        "record-demos": (
            "RecordDemosConfig",
            "successful demonstration episodes as MCAP files (ROS 2 encoding) for --demo-path",
        ),
        "import-demos": (
            "ImportDemosConfig",
            "a LeRobotDataset (folder or Hub) or a ROS 2 bag as MCAP demonstrations for "
            "--demo-path",
        ),
        "export-demos": (
            "ExportDemosConfig",
            "MCAP demonstrations as a LeRobotDataset v3.0 folder, optionally pushed to the Hub",
        ),
        "record-lap": (
            "RecordLapConfig",
            "one teleoperated car lap (odometry MCAP) and the car_lap checkpoints it gives",
        ),
        "record-labels": (
            "RecordLabelsConfig",
            "success / failure camera frames (.npz) for the reward classifier",
        ),
        "train-reward": (
            "TrainRewardConfig",
            "the reward classifier on labelled frames, with held-out precision and recall",
        ),
        "convert-encoder": (
            "ConvertEncoderConfig",
            "SERL/HIL-SERL's pickled ResNet-10 to safetensors (never runs pickled code)",
        ),
    }.items()
}

PROG = "robot-rl"
PRINT_CONFIG = "--print-config"
"""Commands that take ``--config FILE`` also print their whole resolved config with this."""


def _print_config(module, config) -> int:
    from robot_rl.config_file import to_data

    resolve = getattr(module, "resolve_config", None)
    print(json.dumps(to_data(resolve(config) if resolve else config), indent=2))
    return 0


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"usage: {PROG} <command> [options]",
        "",
        "Real-world robot reinforcement learning: SAC/RLPD/DrQ learner, ROS 2 nodes, MuJoCo twin.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {desc}" for name, (_, _, desc) in COMMANDS.items()),
        "",
        f"Run '{PROG} <command> --help' for the options of one command.",
    ]
    return "\n".join(lines)


def _exit_code(err: SystemExit) -> int:
    if err.code is None:
        return 0
    return err.code if isinstance(err.code, int) else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(usage(), file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] == "--version":
        from robot_rl import __version__

        print(f"{PROG} {__version__}")
        return 0

    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        print(
            f"{PROG}: unknown command '{name}'.{hint} Commands: {', '.join(COMMANDS)}.\n"
            f"Run '{PROG} --help' for what each does.",
            file=sys.stderr,
        )
        return 2

    module_name, config_name, description = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        # An optional dependency of this one command is missing; the others still work.
        print(
            f"{PROG} {name}: cannot import {module_name}: {err}\n"
            f"Run '{PROG} doctor' to see what this machine lacks and how to install it.",
            file=sys.stderr,
        )
        return 1
    config_cls = getattr(module, config_name)

    import tyro

    ros_args = None
    flag = getattr(module, "ROS_ARGS_FLAG", None)  # the rest of the line goes to the nodes
    if flag and flag in rest:
        rest, ros_args = rest[: rest.index(flag)], tuple(rest[rest.index(flag) + 1 :])
    from robot_rl.runtime import stopping

    print_config = PRINT_CONFIG in rest and getattr(module, "CONFIG_FILE", False)
    if print_config:
        rest = [a for a in rest if a != PRINT_CONFIG]
    try:
        with _one_line_parse_errors(f"{PROG} {name}"):
            if getattr(module, "CONFIG_FILE", False):  # --config FILE: the whole config
                from robot_rl.config_file import parse_args

                config = parse_args(
                    config_cls, rest, prog=f"{PROG} {name}", description=description
                )
            else:
                config = tyro.cli(
                    config_cls, args=rest, prog=f"{PROG} {name}", description=description
                )
        if ros_args is not None:
            config = dataclasses.replace(config, ros_args=(*config.ros_args, *ros_args))
        if print_config:  # the whole config, recipe applied: a file to start from (--config)
            return _print_config(module, config)
        stopping.sigterm_as_sigint()  # SLURM, docker stop, systemd: a graceful stop, as Ctrl-C
        return stopping.interrupted_exit_code(int(module.run(config) or 0))
    except SystemExit as err:  # --help, a bad option, or a command that calls sys.exit
        return stopping.interrupted_exit_code(_exit_code(err))
    except UserError as err:  # bad input: one line, no traceback (robot_rl/errors.py)
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a command without a stop path of its own: one line
        print(f"{PROG} {name}: stopped ({stopping.stop_name()})", file=sys.stderr)
        return stopping.interrupted_exit_code()


_BOX = re.compile(r"^[\s│╭╰─╮╯┃┏┗━]*|[\s│╭╰─╮╯┃┓┛━]*$")


def condense_parse_error(text: str, prog: str) -> str | None:
    """tyro's boxed message for a bad option, as one line that names the option; None when
    ``text`` has no such box (printed as it is)."""
    # the box's title line (╭─ Value error ─╮) is left out: the message says it
    lines = [_BOX.sub("", ln) for ln in text.splitlines() if not ln.lstrip().startswith("╭")]
    paragraphs, current = [], []
    for line in lines:
        if not line or set(line) <= set("─━ "):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(line)
    if current:
        paragraphs.append(" ".join(current))
    paragraphs = [p for p in paragraphs if not p.startswith(("For full helptext", "Argument "))]
    if not paragraphs:
        return None
    first = paragraphs[0]
    if first.startswith("Missing from"):
        missing = ", ".join(re.findall(r"(--[\w.-]+)", first))
        return f"missing required option {missing} (see {prog} --help)"
    parsing = re.match(
        r"Error parsing (\S+): no type matching (.+) could be instantiated from \[(.*)\]", first
    )
    if parsing:
        option, kind, value = parsing.groups()
        kind = kind.replace("{None}|", "").strip().rstrip(".")
        kind = {"INT": "an integer", "FLOAT": "a number"}.get(kind, kind)
        return f"{option}: {value} is not {kind.rstrip('.')} (see {prog} --help)"
    return f"{first.rstrip('.')} (see {prog} --help)"


class _one_line_parse_errors:
    """Collect what the parser writes to stderr; a failed parse becomes ``error: <one line>``
    naming the option, anything else (a warning, --help's own exit) is passed on unchanged."""

    def __init__(self, prog: str):
        self.prog = prog

    def __enter__(self):
        import io

        self._saved, sys.stderr = sys.stderr, io.StringIO()
        return self

    def __exit__(self, kind, value, traceback) -> bool:
        captured, sys.stderr = sys.stderr.getvalue(), self._saved
        failed = kind is SystemExit and _exit_code(value) != 0
        line = condense_parse_error(captured, self.prog) if failed else None
        if line is not None:
            print(f"error: {line}", file=sys.stderr)
        elif captured:
            sys.stderr.write(captured)
        return False


if __name__ == "__main__":
    sys.exit(main())
