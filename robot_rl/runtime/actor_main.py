"""The actor as a program: ``run_actor`` with its exit codes and one-line errors, shared by
`robot-rl actor` (``commands/actor.py``) and the actor node (``ros/actor_node.py``)."""

from __future__ import annotations

import json
import logging

from rich.console import Console

from robot_rl.runtime.actor import ActorConfig, LearnerRefused, actor_id_and_outbox, run_actor


def repair_outbox(config: ActorConfig, console: Console, errors: Console) -> int:
    """``--repair-outbox``: 0 once the outbox is sound (what was dropped said in one line); 1 if
    it cannot be repaired (its header is gone, an actor holds it, a disk error)."""
    from robot_rl.data.durable_log import DurableLogError
    from robot_rl.transport.outbox import repair

    _, directory = actor_id_and_outbox(config)
    try:
        report = repair(directory)
    except (DurableLogError, ValueError, OSError) as err:
        errors.print(f"[red]error:[/] cannot repair the outbox {directory}: {err}")
        return 1
    ack = (
        f"; its acknowledgement record was impossible: reset to {report['acked']} (the learner "
        "drops what it already holds)"
        if report["ack_reset"]
        else ""
    )
    console.print(
        f"outbox {directory}: kept {report['kept']} intact transitions, dropped "
        f"{report['dropped']} from {report['damaged_segments']} damaged segment(s){ack}"
    )
    console.print(json.dumps(report))
    return 0


def actor_main(config: ActorConfig) -> int:
    """0: every transition acknowledged (or ``--repair-outbox`` done); 1: some wait in the
    outbox (said in one line), the disk stayed full, the outbox is damaged or its
    acknowledgement record impossible, or the robot refused every try of a reset; 2: bad input
    or a refusal; 130 (``interrupted_exit_code``): stopped by SIGINT or SIGTERM."""
    from robot_rl.data.durable_log import DurableLogError
    from robot_rl.resets.retry import ResetFailed
    from robot_rl.runtime.actor import OutboxFull
    from robot_rl.transport.security import SecurityError

    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("robot_rl").setLevel(logging.INFO)
    console = Console(soft_wrap=True)
    errors = Console(soft_wrap=True, stderr=True)  # every error: one line on stderr
    if config.repair_outbox:
        return repair_outbox(config, console, errors)
    try:
        summary = run_actor(config, console=console)
    except LearnerRefused as err:
        errors.print(f"[red]the learner refused this actor:[/] {err}")
        return 2
    except (ValueError, SecurityError) as err:
        errors.print(f"[red]error:[/] {err}")
        return 2
    except (OutboxFull, DurableLogError, ResetFailed) as err:
        errors.print(f"[red]error:[/] {err}")
        return 1
    except OSError as err:  # the outbox's disk (other than full: that is OutboxFull)
        errors.print(f"[red]error:[/] {err}")
        return 1
    except KeyboardInterrupt:
        return config.interrupted_exit_code
    console.print(json.dumps(summary))
    return 1 if summary["unacknowledged"] else 0
