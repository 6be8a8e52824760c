"""`robot-rl keys DIR`: CURVE key pairs for a learner and its actors (ZeroMQ certificates)."""

from __future__ import annotations

from dataclasses import dataclass

import tyro
from rich.console import Console

from robot_rl.errors import print_error


@dataclass
class KeysConfig:
    directory: tyro.conf.Positional[str]
    """Where to write learner.key(_secret), actor.key(_secret) and authorized_actors/."""


def run(config: KeysConfig) -> int:
    from robot_rl.transport.security import SecurityError, generate_keys

    console = Console(soft_wrap=True)
    try:
        written = generate_keys(config.directory)
    except (SecurityError, OSError) as err:
        print_error(err)
        return 2
    d = config.directory
    console.print(f"keys written to {d}: " + ", ".join(p.name for p in written.values()))
    console.print(
        "learner: robot-rl learner --bind tcp://0.0.0.0:5555 "
        f"--curve-secret-key {d}/learner.key_secret --authorized-keys {d}/authorized_actors\n"
        "actor:   robot-rl actor --learner tcp://LEARNER_HOST:5555 "
        f"--curve-secret-key {d}/actor.key_secret --learner-public-key {d}/learner.key\n"
        "Copy actor.key_secret and learner.key to the robot; keep learner.key_secret on the "
        "learner. Add more actors' public keys to authorized_actors/."
    )
    return 0
