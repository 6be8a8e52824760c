"""The one error type that means "the user asked for something that cannot be done".

A command that meets bad input (a missing file, a wrong option, a checkpoint of another shape)
raises a ``UserError`` subclass with a one-line message; ``robot_rl.cli.main`` prints it as
``error: <message>`` on stderr and exits 2, with no traceback. Anything else is a bug
and keeps its traceback. It subclasses ``ValueError`` so that callers that already catch bad
values keep working.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input from the user: reported in one line, exit code 2."""
