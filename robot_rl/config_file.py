"""A command's whole configuration as a file: how ``robot-rl up`` and the launch files hand the
learner and the actor their configuration (``--config FILE``), instead of command lines.

The file's format and how a bad one is refused (one ``UserError`` line naming the file and the
field): docs/ARCHITECTURE.md, "Configuration".

Pure Python: no tyro import until ``parse_args`` runs.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

from robot_rl.errors import UserError

C = TypeVar("C")
CONFIG_FLAG = "--config"


class ConfigFileError(UserError):
    """A config file that cannot configure the command; the message names file and field."""


def to_data(config: Any) -> Any:
    """A config dataclass as JSON-ready data (every field, nested dataclasses included)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: to_data(getattr(config, f.name)) for f in dataclasses.fields(config)}
    if isinstance(config, (tuple, list)):
        return [to_data(v) for v in config]
    if isinstance(config, dict):
        return {str(k): to_data(v) for k, v in config.items()}
    return config


def write_config(config: Any, path: str | Path) -> Path:
    """Write ``config`` to ``path`` (its folder made), atomically: a reader never sees half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_data(config), indent=2) + "\n")
    tmp.replace(path)
    return path


def read_config(cls: type[C], path: str | Path, base: C | None = None) -> C:
    """The ``cls`` that the file at ``path`` describes, on top of ``base`` (default: ``cls()``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigFileError(f"no config file at {path}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigFileError(f"{path}: cannot read it: {err}") from None
    except json.JSONDecodeError as err:
        raise ConfigFileError(f"{path}: not valid JSON: {err}") from None
    return from_data(cls, data, str(path), base)


def from_data(cls: type[C], data: Any, where: str = "<config>", base: C | None = None) -> C:
    """``base`` (default: ``cls()``) with the fields ``data`` names replaced, each checked
    against its type."""
    if not isinstance(data, dict):
        raise ConfigFileError(f"{where}: must be a mapping of fields, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigFileError(
            f"{where}: {cls.__name__} has no field {', '.join(map(repr, unknown))}"
        )
    base = cls() if base is None else base
    changes = {}
    for name, value in data.items():
        key = f"{where}: {name}"
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            changes[name] = from_data(hint, value, key, getattr(base, name))
        else:
            changes[name] = _convert(hint, value, key)
    return dataclasses.replace(base, **changes)


class _Mismatch(Exception):
    pass


def _convert(hint: Any, value: Any, key: str) -> Any:
    try:
        return _value(hint, value)
    except _Mismatch:
        shown = json.dumps(value, default=repr)
        raise ConfigFileError(f"{key}: expected {_type_name(hint)}, got {shown}") from None


def _value(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin is typing.Annotated:
        return _value(args[0], value)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for option in args:
            if option is type(None):
                continue
            try:
                return _value(option, value)
            except _Mismatch:
                pass
        raise _Mismatch
    if origin is Literal:
        if value in args and not (isinstance(value, bool) and True not in args):
            return value
        raise _Mismatch
    if origin is tuple:
        if not isinstance(value, list):
            raise _Mismatch
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in value)
        if args and len(args) != len(value):
            raise _Mismatch
        return tuple(_value(a, v) for a, v in zip(args, value, strict=True)) if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        key_type, value_type = args or (Any, Any)
        return {_value(key_type, k): _value(value_type, v) for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        try:
            return from_data(hint, value)
        except ConfigFileError:
            raise _Mismatch from None
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # JSON writes 5 for 5.0
    if isinstance(hint, type) and not isinstance(value, hint):
        raise _Mismatch
    if hint in (int, float) and isinstance(value, bool):  # bool is an int to Python, not here
        raise _Mismatch
    return value


def _type_name(hint: Any) -> str:
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint.__name__
    return str(hint).replace("typing.", "")


def split_config_flag(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the file ``--config FILE`` or ``--config=FILE`` names, the other arguments)."""
    path, rest, items = None, [], iter(args)
    for arg in items:
        if arg == CONFIG_FLAG:
            path = next(items, None)
            if path is None:
                raise ConfigFileError(f"{CONFIG_FLAG} needs a file")
        elif arg.startswith(CONFIG_FLAG + "="):
            path = arg[len(CONFIG_FLAG) + 1 :]
        else:
            rest.append(arg)
    return path, rest


def parse_args(
    cls: type[C],
    args: Sequence[str],
    default: C | None = None,
    prog: str | None = None,
    description: str | None = None,
) -> C:
    """``tyro.cli`` for ``cls`` that also takes ``--config FILE``: the file's fields on top of
    ``default``, then the other flags on top of the file."""
    import tyro

    path, rest = split_config_flag(args)
    base = read_config(cls, path, default) if path is not None else default
    return tyro.cli(cls, args=rest, default=base, prog=prog, description=description)
