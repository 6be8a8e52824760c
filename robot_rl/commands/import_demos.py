"""`robot-rl import-demos`: demonstrations from elsewhere as our MCAP demo files, which
``train`` / ``learner`` / ``up --demo-path <out>`` load unchanged.

    robot-rl import-demos --from lerobot user/dataset_or_folder --task pick_cube \
        --cameras front --image-size 64 --robot-mode --out demos/imported [--mapping map.yaml]
    robot-rl import-demos --from bag recording.mcap --task pick_cube --cameras front \
        --robot-mode --out demos/from_bag [--all-success]

The observation options (``--task``, ``--cameras``, ``--image-size``, ``--robot-mode``, ...)
are the learner's: the files record the task's spaces, and the learner refuses files of other
spaces. ``--from lerobot``: a LeRobotDataset folder, or a Hub dataset id (downloaded with
``huggingface_hub``; a local folder of that name wins); the mapping, action scaling and outcome
rules are ``robot_rl.data.lerobot_demos``'s. ``--from bag``: a ROS 2 bag (MCAP) of the robot's
topics; episode and success rules are ``robot_rl.data.ros_bag_demos``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import tyro

from robot_rl.errors import UserError
from robot_rl.runtime.observation_mode import ObservationMode


@dataclass(kw_only=True)
class ImportDemosConfig(ObservationMode):
    source: tyro.conf.Positional[str]
    """LeRobotDataset folder or Hub id (user/name), or a bag (.mcap file or bag folder)."""
    from_format: Annotated[Literal["lerobot", "bag"], tyro.conf.arg(name="from")]
    """What the source is: 'lerobot' (LeRobotDataset v3.0 or v2.1) or 'bag' (ROS 2 MCAP bag)."""
    task: str = "pick_cube"
    """Task whose observation and action the demos are for (tasks/)."""
    out: str | None = None
    """Folder for the .mcap files; default demos/<task>-imported/."""
    mapping: str | None = None
    """lerobot: YAML file of 'dataset feature: our key' pairs (and action_bounds)."""
    map: tuple[str, ...] = ()
    """lerobot: FEATURE=KEY pairs (observation.state=state), beside or instead of --mapping."""
    action_low: tuple[float, ...] | None = None
    """lerobot: the dataset's action value that maps to -1, per entry."""
    action_high: tuple[float, ...] | None = None
    """lerobot: the dataset's action value that maps to +1, per entry."""
    action_bounds_from_data: bool = False
    """lerobot: map each action entry's min..max over the dataset onto [-1, 1]."""
    outcome: Literal["auto", "dataset", "success", "truncated"] = "auto"
    """lerobot: rewards and episode ends: from next.reward/next.done ('dataset'), every episode a
    success ('success'), or none ('truncated'); 'auto': 'dataset' when it has both columns."""
    revision: str | None = None
    """lerobot: Hub revision (branch, tag or commit) of a Hub dataset."""
    success_topic: str = "/teleop/joy"
    """bag: the operator's verdicts: a sensor_msgs/Joy topic (--success-button keeps an episode,
    --reject-button drops it) or a std_msgs/Bool topic (True ends an episode as a success)."""
    success_button: int = 3
    """bag: Joy button that says success (the teleop contract's)."""
    reject_button: int = 4
    """bag: Joy button that rejects an episode."""
    all_success: bool = False
    """bag: every episode counts as a success at its end (no operator verdicts needed)."""
    max_age: float = 0.3
    """bag: a control step whose newest sensor message is older than this (s) ends the episode
    (the robot backend's staleness bound)."""
    teleop_max_age: float = 0.3
    """bag: a teleop message older than this (s) counts as released (zero action)."""


def run(config: ImportDemosConfig) -> int:
    from robot_rl.data.mcap_demos import write_episode
    from robot_rl.data.ros_schemas import message_definition
    from robot_rl.envs.task import make_task

    # the files are ROS 2 MCAP: say now, in one line, when the message definitions are missing
    message_definition("std_msgs/msg/Float32MultiArray")
    try:
        task = make_task(config.task, **config.task_options(config.task))
    except ValueError as err:
        raise UserError(str(err)) from err
    out = Path(config.out or f"demos/{config.task}-imported")
    if out.exists() and any(out.glob("*.mcap")):
        raise UserError(f"{out} already holds .mcap files; choose another --out")
    if config.from_format == "lerobot":
        episodes, source = _from_lerobot(config, task)
    else:
        episodes, source = _from_bag(config, task)
    stored = steps = 0
    for episode in episodes:
        episode.info.setdefault("task", config.task)
        write_episode(
            out / f"episode_{stored:03d}.mcap",
            episode,
            task.observation_space(),
            task.action_space(),
            control_hz=task.control_hz,
        )
        stored += 1
        steps += len(episode)
    if not stored:
        raise UserError(f"{config.source}: no episode to import ({source})")
    print(
        f"imported {stored} episodes ({steps} transitions) from {config.source} ({source}) into "
        f"{out}; train with: robot-rl train --task {config.task} --demo-path {out}"
    )
    return 0


def _from_lerobot(config: ImportDemosConfig, task):
    from robot_rl.data.lerobot_demos import (
        ActionScale,
        import_episodes,
        load_mapping_file,
        parse_pairs,
        plan_import,
    )
    from robot_rl.data.lerobot_format import read_dataset
    from robot_rl.data.lerobot_hub import resolve_dataset

    pairs, scale = load_mapping_file(config.mapping) if config.mapping else ({}, ActionScale())
    pairs.update(parse_pairs(config.map))
    if config.action_low is not None or config.action_high is not None:
        scale = ActionScale(config.action_low, config.action_high)
    scale.from_data = scale.from_data or config.action_bounds_from_data
    dataset = read_dataset(resolve_dataset(config.source, config.revision))
    plan = plan_import(
        dataset,
        task.observation_space(),
        task.action_space(),
        task.control_hz,
        pairs=pairs,
        scale=scale,
        outcome=config.outcome,
        task_name=config.task,
    )
    mapped = ", ".join(f"{f} -> {k}" for k, f in plan.features.items())
    print(
        f"{config.source}: LeRobotDataset {dataset.version}, {len(dataset.episodes)} episodes at "
        f"{dataset.fps:g} fps; {mapped}; outcome: {plan.outcome}"
        + (f"; every {plan.step}th frame" if plan.step > 1 else "")
    )

    def episodes():
        for episode, frames in import_episodes(
            dataset, plan, task.observation_space(), task.action_space()
        ):
            episode.info.update(
                source=f"lerobot:{config.source}",
                lerobot_episode=str(frames.index),
                lerobot_task=frames.task,
            )
            yield episode

    return episodes(), f"LeRobotDataset {dataset.version}"


def _from_bag(config: ImportDemosConfig, task):
    from robot_rl.data.ros_bag_demos import BagRules, bag_episodes

    rules = BagRules(
        success_topic=config.success_topic,
        success_button=config.success_button,
        reject_button=config.reject_button,
        all_success=config.all_success,
        max_age=config.max_age,
        teleop_max_age=config.teleop_max_age,
    )
    return bag_episodes(config.source, task, rules), "ROS 2 bag"
