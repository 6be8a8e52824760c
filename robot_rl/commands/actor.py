"""`robot-rl actor`: the acting half of a distributed run; feeds a learner over the transport."""

from __future__ import annotations

import json
import logging

from rich.console import Console

from robot_rl.runtime.actor import ActorConfig, LearnerRefused, run_actor

__all__ = ["ActorConfig", "run"]


def run(config: ActorConfig) -> int:
    from robot_rl.transport.security import SecurityError

    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("robot_rl").setLevel(logging.INFO)
    console = Console(soft_wrap=True)
    try:
        summary = run_actor(config, console=console)
    except LearnerRefused as err:
        console.print(f"[red]the learner refused this actor:[/] {err}")
        return 2
    except (ValueError, SecurityError) as err:
        console.print(f"[red]error:[/] {err}")
        return 2
    except KeyboardInterrupt:
        return 130
    console.print(json.dumps(summary))
    return 0
