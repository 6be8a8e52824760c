"""`robot-rl eval`: success rate with a 95% confidence interval, cycle time, optional MP4.

On the twin (the default) in the checkpoint's observation mode, scored by the task's ground
truth; a robot's checkpoint only with ``--on-twin`` (docs/ARCHITECTURE.md, "Checkpoints"). On a
robot with ``--hardware FILE`` (robot_rl.runtime.robot_evaluation), in robot mode, its drivers
started and stopped here: the options' help says the rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rich.console import Console

from robot_rl.errors import UserError, print_error
from robot_rl.rewards.operator import OperatorOptions
from robot_rl.ros.config import RosBackendConfig


@dataclass
class EvalConfig(OperatorOptions):
    checkpoint: str
    """A checkpoint directory (step_*/) or a run's checkpoints/ directory (newest is used)."""
    task: str | None = None
    """Task to evaluate on; default: the task the checkpoint was trained on."""
    episodes: int = 50
    """Evaluation episodes (deterministic policy, seeded resets)."""
    seed: int = 1_000
    """Seed of the first evaluation episode's reset."""
    video: str | None = None
    """Write an MP4 of the episodes to this path (the twin's scene, or a gymnasium env's
    render_mode='rgb_array' frames)."""
    video_size: int = 256
    """Side of the video frames in pixels."""
    json_out: bool = False
    """Print the result as one JSON line instead of text."""
    privileged_state: bool | None = None
    """Override the checkpoint's recorded privileged state (a checkpoint written before runs
    recorded their observation mode had it on)."""
    on_twin: bool = False
    """Evaluate a checkpoint trained on a robot (backend 'robot') on the twin anyway: the
    twin's figure, not the robot's. Without it eval refuses such a checkpoint on the twin."""
    hardware: str | None = None
    """Evaluate on the robot of this hardware file (hardware/*.yaml) instead of the twin;
    success from --operator or --reward-classifier, never from the twin."""
    reward_classifier: str | None = None
    """With --hardware: a reward classifier checkpoint that says success (the judge when there
    is no operator; else a witness whose disagreements are reported)."""
    judge: Literal["auto", "operator", "classifier", "task", "cell-ground-truth"] = "auto"
    """With --hardware: who decides each episode's success; the other sources the run has are
    witnesses, and each disagreement is one warning line. 'auto': the operator with
    --operator, else the classifier, else the task where it scores from the robot's own
    readings. 'cell-ground-truth': a simulated cell's ground truth (/sim/objects/*),
    evaluation only, refused on real hardware."""
    operator_wait: float = 3.0
    """With --hardware and --operator: seconds the operator has to press success after another
    source said it (as a person does a moment later), before the operator's verdict is no."""
    operator_starts_episodes: bool = False
    """With --hardware and --operator: after each reset wait for the operator's success key or
    button (the scene set up again by hand) before the episode starts."""
    start_drivers: bool = True
    """With --hardware: start the hardware file's driver nodes (as `up robot` does) and stop
    them at the end; --no-start-drivers uses nodes that already run."""
    ready_timeout: float = 120.0
    """With --hardware: seconds for every driver node to become active."""
    grace: float = 20.0
    """With --hardware: seconds between SIGINT and SIGKILL when stopping the drivers."""
    report: str | None = None
    """With --hardware: the JSON-lines report (a line per episode, then the summary); default
    <run>/eval/<hardware name>-<time>.jsonl beside the run's checkpoints/."""
    ros: RosBackendConfig = field(
        default_factory=lambda: RosBackendConfig(use_sim_time=False, service_timeout=60.0)
    )
    """With --hardware: the ROS 2 backend's bounds (namespaces come from the hardware file;
    wall time unless --ros.use-sim-time, for twin nodes posing as hardware)."""

    def validate(self) -> None:
        if self.episodes < 1:
            raise UserError("--episodes must be >= 1")
        self.check_operator()
        if self.hardware is None:
            if self.operator != "off" or self.reward_classifier or self.judge != "auto":
                raise UserError(
                    "--operator, --reward-classifier and --judge judge success on a robot: give "
                    "--hardware FILE (on the twin the task's ground truth judges it)"
                )
            return
        if self.operator_wait < 0:
            raise UserError("--operator-wait must be >= 0")
        if self.on_twin:
            raise UserError("--on-twin and --hardware exclude each other")
        if self.operator_starts_episodes and self.operator == "off":
            raise UserError("--operator-starts-episodes needs --operator keyboard or joy")
        if self.video:
            raise UserError("--video renders the twin: it does not go with --hardware")
        if not self.ready_timeout > 0 or self.grace < 0:
            raise UserError("--ready-timeout must be > 0 and --grace >= 0")


def run(config: EvalConfig) -> int:
    console = Console(soft_wrap=True)
    from robot_rl.agents.checkpoint import CheckpointError, latest_checkpoint, read_metadata

    config.validate()
    path = latest_checkpoint(config.checkpoint)
    if path is None:
        raise UserError(f"no checkpoint at {config.checkpoint}")
    try:
        meta = read_metadata(path)
    except CheckpointError as err:  # a damaged meta.json: one line that names it
        raise UserError(str(err)) from None
    if config.hardware is not None:
        from robot_rl.runtime.robot_evaluation import evaluate_on_hardware

        try:
            summary = evaluate_on_hardware(config, Path(path), meta, console)
        except KeyboardInterrupt:
            console.print("[yellow]interrupted[/]: the episodes so far are in the report")
            return 130
        if config.json_out:
            print(json.dumps(summary))
        else:
            _print_result(console, f"{summary['task']} on {summary['hardware']}", path, summary)
            console.print(judge_line(summary))
        return 0
    return _evaluate_on_twin(config, path, meta, console)


def _evaluate_on_twin(config: EvalConfig, path, meta: dict, console: Console) -> int:
    from robot_rl.agents.checkpoint import CheckpointError, read_config, restore_agent
    from robot_rl.agents.sac import SACAgent
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.evaluation import evaluate
    from robot_rl.runtime.observation_mode import observation_from_metadata
    from robot_rl.runtime.progress import JobProgress, stderr_console
    from robot_rl.runtime.video import VideoRecorder

    task = config.task or meta.get("task")
    backend, env_id = meta.get("backend", "twin"), meta.get("env_id", "")
    trained_on_robot = backend == "robot"
    if trained_on_robot and not config.on_twin:
        where = meta.get("hardware") or "a robot"
        raise UserError(
            f"{path} was trained on {where}: evaluate it there with --hardware FILE, or give "
            "--on-twin for the twin's figure (not the robot's)"
        )
    if trained_on_robot:
        backend = "twin"
    try:
        # the observation mode the checkpoint was trained in, scored by the twin's ground truth
        mode = observation_from_metadata(meta, privileged_state=config.privileged_state)
        if backend == "gym":
            options = gym_options(path, meta, video=bool(config.video))
        else:
            options = mode.task_options(task, ground_truth=True)
        env = make_env(backend, task, env_id, config.seed, options)
        template = SACAgent.create(0, env.observation_space, env.action_space, read_config(path))
        agent = restore_agent(path, template)
    except (ValueError, CheckpointError) as err:  # a checkpoint of another shape or mode
        print_error(err)
        return 2

    recorder = VideoRecorder(config.video, config.video_size) if config.video else None
    # on stderr: stdout is the result (--json-out); a bar on a terminal, lines in a log
    progress = JobProgress("eval", config.episodes, unit="episodes", console=stderr_console())

    def episode_done(figures: dict) -> None:
        progress.update(figures["episode"] + 1, note=f"return {figures['return']:.1f}")

    try:
        result = evaluate(
            agent.eval_actions,
            env,
            config.episodes,
            seed=config.seed,
            on_frame=recorder.capture if recorder else None,
            on_episode=episode_done,
        )
    finally:
        progress.close()
    env.close()
    control_hz = getattr(getattr(env, "task", None), "control_hz", None)
    label = task if backend == "twin" else env_id
    out = {"checkpoint": str(path), "task": label, "step": meta.get("step"), **result.as_dict()}
    out["success_source"] = "twin-ground-truth" if backend == "twin" else "env"
    if getattr(env, "success_signal", False):  # a gymnasium env whose info says success
        out["success_source"] = "env-info"
    if trained_on_robot:
        out["evaluated_on"] = "twin"
        out["trained_on"] = meta.get("hardware") or "robot"
    if control_hz:
        out["cycle_time_s"] = result.length_mean / control_hz
    if recorder:
        out["video"] = str(recorder.close())
    if config.json_out:
        print(json.dumps(out))
        return 0
    if trained_on_robot:
        label = f"{label} on the twin (trained on {out['trained_on']})"
    _print_result(console, label, path, out)
    if result.final_info:
        console.print(
            "at episode end: "
            + ", ".join(f"{k} {v:.2f}" for k, v in sorted(result.final_info.items()))
        )
    if recorder:
        console.print(f"video: {out['video']}")
    return 0


def gym_options(path, meta: dict, video: bool = False) -> dict:
    """The gymnasium env a checkpoint was trained on, as ``make_gym_env``'s keyword arguments:
    its cameras and image size from the checkpoint, --env-kwargs and --state-keys from the
    run's config.json beside checkpoints/ (none where there is no such file)."""
    from robot_rl.envs.gym_adapter import parse_env_kwargs

    run_config = Path(path).resolve().parent.parent / "config.json"
    saved = json.loads(run_config.read_text()) if run_config.is_file() else {}
    return {
        "env_kwargs": parse_env_kwargs(saved.get("env_kwargs", ())),
        "cameras": tuple(meta.get("cameras", ())),
        "image_size": int(meta.get("image_size", 64)),
        "state_keys": tuple(saved.get("state_keys", ())),
        "render_mode": "rgb_array" if video else None,
    }


def judge_line(summary: dict) -> str:
    """The summary's last line: who judged, how often each witness disagreed, the report."""
    line = f"success judged by {summary['success_judged_by']}"
    if summary["success_source"] == "cell-ground-truth":
        line = f"[bold yellow]{line.upper()}[/] (a simulated cell's; evaluation only)"
    for witness, seen in summary.get("witnesses", {}).items():
        verb = "[yellow]disagreed[/] with it" if seen["disagreed"] else "agreed with it"
        count = f"on {seen['disagreed']} of" if seen["disagreed"] else "on all"
        line += f"; {witness} {verb} {count} {seen['episodes']} episodes"
    return f"{line}; report {summary['report']}"


def _print_result(console: Console, label: str, path, out: dict) -> None:
    cycle = out.get("cycle_time_s")
    if out.get("success_source") == "env":  # a gymnasium env: returns, no success signal
        console.print(
            f"{label} @ {Path(path).name}: return {out['return_mean']:.1f} +- "
            f"{out['return_std']:.1f} over {out['episodes']} episodes; "
            f"episode length {out['length_mean']:.1f} steps"
        )
        return
    console.print(
        f"{label} @ {Path(path).name}: success {out['success_rate']:.0%} "
        f"(95% CI {out['success_ci_low']:.0%}-{out['success_ci_high']:.0%}) over "
        f"{out['episodes']} episodes; "
        f"return {out['return_mean']:.1f} +- {out['return_std']:.1f}; "
        f"episode length {out['length_mean']:.1f} steps" + (f" = {cycle:.1f} s" if cycle else "")
    )
    if out["failure_rate"]:
        console.print(
            f"episodes ending in failure (crash, dropped object): {out['failure_rate']:.0%}"
        )
