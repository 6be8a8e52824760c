"""`robot-rl learner`: the training half of a distributed run; actors connect to it.

``--config FILE`` (JSON, ``robot_rl.config_file``) gives the whole config, as ``robot-rl up``
and the launch files do; flags beside it override the file."""

from __future__ import annotations

import logging

from rich.console import Console

from robot_rl.errors import print_error
from robot_rl.runtime.learner import Learner, LearnerConfig

CONFIG_FILE = True


def resolve_config(config: LearnerConfig) -> LearnerConfig:
    """What --print-config prints: the config with the task's recipe filled in (recorded demos
    or a robot: no scripted ones)."""
    from robot_rl.runtime.recipes import resolve

    return resolve(config, recorded_demos=True)


def run(config: LearnerConfig) -> int:
    from robot_rl.transport.security import SecurityError, ServerKeys

    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("robot_rl").setLevel(logging.INFO)
    console = Console(soft_wrap=True)
    if config.repair_ingest_log:
        return repair_ingest_log(config, console)
    try:
        keys = None
        if config.curve_secret_key:
            keys = ServerKeys(config.curve_secret_key, config.authorized_keys)
        Learner(config, console=console).run(keys=keys)
    except (ValueError, SecurityError, FileNotFoundError) as err:
        print_error(err)
        return 2
    except (RuntimeError, OSError) as err:  # a damaged log or checkpoint, a full disk
        print_error(err)
        return 1
    except KeyboardInterrupt:
        return config.interrupted_exit_code
    return 0


def repair_ingest_log(config: LearnerConfig, console: Console) -> int:
    """``--repair-ingest-log``: 0 once the log is sound (what was dropped said in one line);
    1 if it cannot be repaired; 2 without --run-dir."""
    import json
    from pathlib import Path

    from robot_rl.transport.ingest_log import IngestLog

    if config.run_dir is None:
        print_error("--repair-ingest-log needs --run-dir of the learner run")
        return 2
    directory = Path(config.run_dir) / "ingest"
    try:
        report = IngestLog.repair(directory)
    except (RuntimeError, ValueError, OSError) as err:
        print_error(f"cannot repair the ingest log {directory}: {err}")
        return 1
    lost = "; ".join(
        f"actor {actor} lost sequence numbers " + ", ".join(f"{a}-{b - 1}" for a, b in ranges)
        for actor, ranges in report["lost"].items()
    )
    console.print(
        f"ingest log {directory}: kept {report['kept']} intact batches, dropped "
        f"{report['dropped']} from {report['damaged_segments']} damaged segment(s)"
        + (f" ({lost})" if lost else "")
    )
    console.print(json.dumps(report))
    return 0
