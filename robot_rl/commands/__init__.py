"""Subcommands of `robot-rl`, one module each.

Each module exposes a config dataclass (every field with a one-line docstring, parsed by tyro)
and `run(config) -> int`; `robot_rl.cli.COMMANDS` names the module, the class and a one-line
description. Modules are imported only when their command runs, so they may import JAX freely.
"""
