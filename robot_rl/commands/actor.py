"""`robot-rl actor`: the acting half of a distributed run; feeds a learner over the transport.

``--config FILE`` (JSON, ``robot_rl.config_file``) gives the whole config; flags beside it
override the file."""

from __future__ import annotations

from robot_rl.runtime.actor import ActorConfig
from robot_rl.runtime.actor_main import actor_main

__all__ = ["CONFIG_FILE", "ActorConfig", "run"]

CONFIG_FILE = True


def run(config: ActorConfig) -> int:
    """0: every transition acknowledged; 1: some wait in the outbox (said in one line), the
    disk stayed full, or the outbox is damaged; 2: bad input or a refusal; 130: interrupted."""
    return actor_main(config)
