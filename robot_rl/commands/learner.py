"""`robot-rl learner`: the training half of a distributed run; actors connect to it.

``--config FILE`` (JSON, ``robot_rl.config_file``) gives the whole config, as ``robot-rl up``
and the launch files do; flags beside it override the file."""

from __future__ import annotations

import logging

from rich.console import Console

from robot_rl.runtime.learner import Learner, LearnerConfig

CONFIG_FILE = True


def run(config: LearnerConfig) -> int:
    from robot_rl.transport.security import SecurityError, ServerKeys

    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("robot_rl").setLevel(logging.INFO)
    console = Console(soft_wrap=True)
    try:
        keys = None
        if config.curve_secret_key:
            keys = ServerKeys(config.curve_secret_key, config.authorized_keys)
        Learner(config, console=console).run(keys=keys)
    except (ValueError, SecurityError, FileNotFoundError) as err:
        console.print(f"[red]error:[/] {err}")
        return 2
    except (RuntimeError, OSError) as err:  # a damaged log or checkpoint, a full disk
        console.print(f"[red]error:[/] {err}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
