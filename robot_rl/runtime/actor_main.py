"""The actor as a program: ``run_actor`` with its exit codes and one-line errors, shared by
`robot-rl actor` (``commands/actor.py``) and the actor node (``ros/actor_node.py``)."""

from __future__ import annotations

import json
import logging

from rich.console import Console

from robot_rl.runtime.actor import ActorConfig, LearnerRefused, run_actor


def actor_main(config: ActorConfig) -> int:
    """0: every transition acknowledged; 1: some wait in the outbox (said in one line), the
    disk stayed full, or the outbox is damaged; 2: bad input or a refusal; 130: interrupted."""
    from robot_rl.data.durable_log import DurableLogError
    from robot_rl.runtime.actor import OutboxFull
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
    except (OutboxFull, DurableLogError) as err:
        console.print(f"[red]error:[/] {err}")
        return 1
    except OSError as err:  # the outbox's disk (other than full: that is OutboxFull)
        console.print(f"[red]error:[/] {err}")
        return 1
    except KeyboardInterrupt:
        return 130
    console.print(json.dumps(summary))
    return 1 if summary["unacknowledged"] else 0
