"""`robot-rl actor`: the acting half of a distributed run; feeds a learner over the transport.

``--config FILE`` (JSON, ``robot_rl.config_file``) gives the whole config; flags beside it
override the file."""

from __future__ import annotations

from robot_rl.runtime.actor import ActorConfig
from robot_rl.runtime.actor_main import actor_main

CONFIG_FILE = True


def run(config: ActorConfig) -> int:
    """Exit codes as ``robot_rl.runtime.actor_main.actor_main`` says."""
    return actor_main(config)
