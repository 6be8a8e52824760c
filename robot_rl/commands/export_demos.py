"""`robot-rl export-demos`: our demonstration folder (MCAP, ``record-demos`` / ``import-demos``)
as a LeRobotDataset v3.0 (``robot_rl.data.lerobot_write``), optionally pushed to the Hub.

    robot-rl export-demos --to lerobot out/pick_cube_lerobot --demo-path demos/pick_cube \
        [--push user/pick_cube]

Each episode of T steps becomes T + 1 frames (``robot_rl.data.lerobot_demos``): the state as
``observation.state``, each camera as ``observation.images.<camera>`` (H.264 MP4), the applied
action as ``action``, and ``next.reward`` / ``next.done``. ``--push`` uploads the folder with
``huggingface_hub`` and tags it ``v3.0`` (the revision LeRobot's loader asks for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import tyro

from robot_rl.errors import UserError


@dataclass
class ExportDemosConfig:
    out: tyro.conf.Positional[str]
    """Folder to write the dataset to (must not hold one)."""
    demo_path: str
    """Our demonstrations: a folder of .mcap files or one file."""
    to: Annotated[Literal["lerobot"], tyro.conf.arg(name="to")] = "lerobot"
    """Format to write: 'lerobot' (LeRobotDataset v3.0)."""
    push: str | None = None
    """Also upload to this Hugging Face Hub dataset (user/name); needs a token (hf auth login)."""
    private: bool = False
    """With --push: create the Hub repository private."""
    robot_type: str | None = None
    """info.json's robot_type (LeRobot's name for the robot, e.g. 'franka'); default none."""


def run(config: ExportDemosConfig) -> int:
    from robot_rl.data.lerobot_demos import export_episodes
    from robot_rl.data.lerobot_hub import push_dataset
    from robot_rl.data.lerobot_write import write_dataset
    from robot_rl.data.mcap_demos import demo_files, read_episode

    try:
        files = [read_episode(f) for f in demo_files(config.demo_path)]
    except FileNotFoundError as err:
        raise UserError(str(err)) from err
    rates = {f.control_hz for f in files}
    if len(rates) > 1:
        raise UserError(f"{config.demo_path}: episodes at different control rates {sorted(rates)}")
    first = files[0]
    for f in files[1:]:
        if set(f.observation_space.spaces) != set(first.observation_space.spaces):
            raise UserError(f"{config.demo_path}: episodes with different observation keys")
    episodes, features = export_episodes(files)
    root = write_dataset(
        config.out, episodes, features, first.control_hz, robot_type=config.robot_type
    )
    frames = sum(len(e) for e in episodes)
    print(
        f"exported {len(episodes)} episodes ({frames} frames at {first.control_hz:g} fps) from "
        f"{config.demo_path} as a LeRobotDataset v3.0 in {root}"
    )
    if config.push:
        url = push_dataset(root, config.push, private=config.private)
        print(f"pushed to {url} (tag v3.0)")
    return 0
