"""`robot-rl convert-encoder`: SERL / HIL-SERL's pickled ResNet-10 parameters to safetensors.

The pickle is read with a restricted unpickler that builds only dicts and numpy arrays (never
``pickle.load``: a pickle can run any code), checked against the ``serl_resnet10`` trunk and
written as safetensors for ``--agent.encoder serl_resnet10 --agent.encoder-frozen
--agent.encoder-weights DST``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro
from rich.console import Console

from robot_rl.errors import UserError


@dataclass
class ConvertEncoderConfig:
    src: tyro.conf.Positional[str]
    """SERL's parameter pickle (e.g. ~/.serl/resnet10_params.pkl)."""
    dst: tyro.conf.Positional[str]
    """The .safetensors file to write."""
    trunk: Literal["serl_resnet10"] = "serl_resnet10"
    """The trunk the parameters are for (checked tensor by tensor)."""
    force: bool = False
    """Overwrite DST if it exists."""


def run(config: ConvertEncoderConfig) -> int:
    from robot_rl.agents.encoders.serl_import import convert_serl_pickle
    from robot_rl.agents.pretrained import weights_sha256

    dst = Path(config.dst)
    if dst.suffix.lower() != ".safetensors":
        raise UserError(f"{dst} must end in .safetensors")
    if dst.exists() and not config.force:
        raise UserError(f"{dst} exists; pass --force to overwrite it")
    try:
        path, count = convert_serl_pickle(config.src, dst, config.trunk)
    except FileNotFoundError as err:
        raise UserError(str(err)) from None
    console = Console(soft_wrap=True)
    console.print(
        f"[bold]converted[/] {count / 1e6:.2f}M parameters -> {path} (sha256 "
        f"{weights_sha256(path)[:12]}); use: --agent.encoder {config.trunk} "
        f"--agent.encoder-frozen --agent.encoder-weights {path}"
    )
    return 0
