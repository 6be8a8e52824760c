"""Subcommands of `robot-rl`, one module each (what a module holds: `robot_rl.cli`). Modules are
imported only when their command runs, so they may import JAX freely.
"""
