"""The one error type that means "the user asked for something that cannot be done".

A command that meets bad input (a missing file, a wrong option, a checkpoint of another shape)
raises a ``UserError`` subclass with a one-line message; ``robot_rl.cli.main`` prints it as
``error: <message>`` on stderr and exits 2, with no traceback. Anything else is a bug
and keeps its traceback. It subclasses ``ValueError`` so that callers that already catch bad
values keep working.
"""

from __future__ import annotations

import sys


class UserError(ValueError):
    """Bad input from the user: reported in one line, exit code 2."""


def print_error(err: BaseException | str) -> None:
    """``error: <message>`` on stderr, the one line a command prints for bad input (its
    progress and results stay on stdout)."""
    print(f"error: {err}", file=sys.stderr, flush=True)
