"""What a run observes and what scores it, as one set of options every command shares.

The configs of ``train``, ``actor``, ``learner``, ``up`` and ``record-demos`` derive from
``ObservationMode`` (cameras, image size, privileged state, robot mode). Privileged state (the
twin's object poses) is on by default only without cameras. Robot mode observes and scores only
what a robot's drivers publish (no privileged state, no twin reading, no ``/sim/`` topic): a task
whose scoring reads the twin then needs a reward source (classifier or operator), and relabelling
needs the operator (the twin's ground-truth labeller is refused). Checkpoints record the resolved
mode so ``eval``, ``--resume`` and actors rebuild the same observation space. No JAX, MuJoCo or
ROS import.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from robot_rl.errors import UserError
from robot_rl.runtime.recipes import Unset


@dataclass(kw_only=True)
class ObservationMode:
    cameras: tuple[str, ...] = ()
    """Camera observations (empty: state only)."""
    image_size: int = Unset(64)
    """Camera image side in pixels."""
    privileged_state: bool | None = None
    """Append the twin's object poses to the state (twin only); default: True without
    cameras, False with cameras; always False in robot mode."""
    robot_mode: bool = False
    """Observe and score only what the robot's drivers publish (`up robot` sets it): no
    privileged state, no twin reading in reward, success or termination, no /sim/ topic."""
    checkpoints: str | None = None
    """car_lap: the checkpoints file of a recorded lap (`robot-rl record-lap` writes one);
    default: the twin track's."""

    def resolved_privileged_state(self) -> bool:
        if self.robot_mode:
            if self.privileged_state:
                raise ValueError(
                    "robot mode observes only what the robot's drivers publish: "
                    "--privileged-state True is for the twin"
                )
            return False
        if self.privileged_state is None:
            return not self.cameras
        return bool(self.privileged_state)

    def task_options(self, task: str, *, ground_truth: bool | None = None) -> dict:
        """``make_task`` keyword arguments for ``task`` in this mode. ``ground_truth=True``
        scores with the task's own ground truth whatever the mode (evaluation on the twin)."""
        task_class = _task_class(task)
        options: dict = {"cameras": tuple(self.cameras), "image_size": self.image_size}
        names = {f.name for f in dataclasses.fields(task_class)}
        privileged = self.resolved_privileged_state()
        if "privileged_state" in names:
            options["privileged_state"] = privileged
        elif self.privileged_state:
            raise ValueError(f"task {task!r} has no privileged state to turn on")
        if self.checkpoints is not None:
            if "checkpoints" not in names:
                raise ValueError(f"task {task!r} takes no --checkpoints file")
            from robot_rl.data.lap_checkpoints import load_checkpoints

            options["checkpoints"] = load_checkpoints(self.checkpoints)
        if ground_truth is None:
            ground_truth = not (self.robot_mode and task_class.reward_needs_twin)
        if not ground_truth:
            options["ground_truth"] = False
        return options

    def check_reward_source(self, task: str, reward_source: str | None) -> None:
        """Refuse robot mode on a task whose scoring reads the twin when nothing else scores,
        and a robot-mode relabelling that the twin's ground truth would answer."""
        if self.robot_mode and reward_source is None and _task_class(task).reward_needs_twin:
            raise UserError(
                f"robot mode: {task}'s reward and success read the twin's object poses, which a "
                "robot does not have; give a reward source: --reward-classifier DIR, or "
                "--operator keyboard|joy (the operator's success key or /teleop/joy button; "
                "robot-rl actor, up, eval --hardware)"
            )
        self._check_relabel_labeller()

    def _check_relabel_labeller(self) -> None:
        """A command whose config derives from this class and asks --relabel-false-positives
        (``train``, ``actor``) is refused here, before any step, when the twin's ground truth
        would answer in robot mode: ``train`` always relabels with the ground truth, the actor
        when no operator is given. (Its labeller would otherwise fail at the first query.)"""
        if not (self.robot_mode and getattr(self, "relabel_false_positives", False)):
            return
        from robot_rl.rewards.labelers import RelabelOptions, check_labeler

        if isinstance(self, RelabelOptions):  # actor, up: --labeler or --operator says who
            check_labeler(self.resolved_labeler(self.operator), robot_mode=True)
            return
        raise UserError(
            "robot mode: train's --relabel-false-positives answers with the twin's ground "
            "truth, which a robot does not have; relabel on a robot with the operator "
            "(robot-rl actor or up robot --operator joy --relabel-false-positives)"
        )

    def metadata(self, task: str) -> dict:
        """The resolved mode of ``task`` as checkpoints record it (a task without privileged
        state records False)."""
        return {
            "cameras": list(self.cameras),
            "image_size": self.image_size,
            "privileged_state": self.task_options(task).get("privileged_state", False),
            "robot_mode": self.robot_mode,
            **({"checkpoints": self.checkpoints} if self.checkpoints is not None else {}),
        }

    def check_matches(self, meta: dict, task: str, where: str) -> None:
        """Refuse to continue a checkpoint written in another observation mode (``--resume``)."""
        saved = observation_from_metadata(meta).metadata(task)
        now = self.metadata(task)
        differences = [
            f"{k}: checkpoint has {saved[k]!r}, this run has {now[k]!r}"
            for k in ("cameras", "image_size", "privileged_state")
            if saved[k] != now[k]
        ]
        if differences:
            raise ValueError(
                f"{where} was trained in another observation mode: " + "; ".join(differences)
            )


def observation_from_metadata(meta: dict, **overrides) -> ObservationMode:
    """The mode a checkpoint was trained in. Checkpoints older than this record had the
    task's default: privileged state on where the task has it."""
    saved = meta.get("observation") or {}
    task = meta.get("task")
    legacy = True if task and _has_privileged_state(task) else None
    privileged = saved.get("privileged_state", legacy)
    mode = ObservationMode(
        cameras=tuple(saved.get("cameras", meta.get("cameras", ()))),
        image_size=int(saved.get("image_size", meta.get("image_size", 64))),
        privileged_state=privileged,
        robot_mode=bool(saved.get("robot_mode", False)),
        checkpoints=saved.get("checkpoints"),
    )
    return dataclasses.replace(mode, **{k: v for k, v in overrides.items() if v is not None})


def _has_privileged_state(task: str) -> bool:
    try:
        return "privileged_state" in {f.name for f in dataclasses.fields(_task_class(task))}
    except ValueError:  # not a task (a gymnasium run)
        return False


def _task_class(task: str):
    import robot_rl.tasks  # noqa: F401  (registers the tasks)
    from robot_rl.envs.task import TASKS

    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(sorted(TASKS))}")
    return TASKS[task]
