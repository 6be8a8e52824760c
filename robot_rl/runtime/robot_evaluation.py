"""Evaluation on a robot: ``robot-rl eval --checkpoint DIR --hardware FILE``.

The checkpoint's policy acts on the robot through the ROS 2 backend, as the actor of ``up robot``
does: the hardware file names the robot's and the cameras' namespaces and (unless
``--no-start-drivers``) the driver nodes, which are started and brought to ``active`` first, as
``up robot`` does, and stopped at the end. The task runs in robot mode, so nothing reads a twin
reading: success comes from the operator's key or button (``--operator``) or from the reward
classifier (``--reward-classifier``), never from the twin's ground truth.

Every episode prints one progress line and appends one JSON line to the report as it ends, so an
interrupted evaluation keeps what it measured; the last line is the summary (success rate with
its 95% interval, return, episode length and time).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from robot_rl.errors import UserError


def default_report(checkpoint: Path, hardware_name: str) -> Path:
    """``<run>/eval/<hardware>-<time>.jsonl`` beside the run's checkpoints/."""
    run = checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" else checkpoint.parent
    return run / "eval" / f"{hardware_name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def robot_observation_mode(meta: dict, where: str):
    """The checkpoint's observation mode, in robot mode (refused if it needs the twin)."""
    from robot_rl.runtime.observation_mode import observation_from_metadata

    mode = observation_from_metadata(meta)
    if mode.resolved_privileged_state():
        raise UserError(
            f"{where} observes the twin's privileged state (object poses), which a robot does "
            "not have: only a policy trained without it can be evaluated on a robot"
        )
    return dataclasses.replace(mode, privileged_state=False, robot_mode=True)


def check_success_source(task: str, cfg) -> str:
    """Who judges success on the robot; refuses a task that would need the twin for it."""
    from robot_rl.runtime.observation_mode import _task_class

    sources = []
    if cfg.operator != "off":
        sources.append(f"the operator ({cfg.operator})")
    if cfg.reward_classifier:
        sources.append("the reward classifier")
    if not sources:
        if _task_class(task).reward_needs_twin:
            raise UserError(
                f"eval --hardware: {task}'s success reads the twin's object poses, which a robot "
                "does not have; say who judges it: --operator keyboard|joy or "
                "--reward-classifier DIR"
            )
        return f"the task ({task} scores from the robot's own readings)"
    return " or ".join(sources)


def evaluate_on_hardware(cfg, checkpoint: Path, meta: dict, console) -> dict:
    """Evaluate ``checkpoint`` on the robot of ``cfg.hardware``; returns the summary."""
    from robot_rl.agents.checkpoint import read_config, restore_agent
    from robot_rl.agents.sac import SACAgent
    from robot_rl.envs.task import make_task
    from robot_rl.hardware import load_hardware
    from robot_rl.rewards.reward_sources import with_reward_sources
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.evaluation import evaluate

    hardware = load_hardware(cfg.hardware)
    task_name = cfg.task or meta.get("task")
    mode = robot_observation_mode(meta, str(checkpoint))
    options = mode.task_options(task_name)
    judge = check_success_source(task_name, cfg)
    task = make_task(task_name, **options)
    hardware.check_task(task)
    template = SACAgent.create(
        0, task.observation_space(), task.action_space(), read_config(checkpoint)
    )
    agent = restore_agent(checkpoint, template)
    report = Path(cfg.report) if cfg.report else default_report(checkpoint, hardware.name)
    report.parent.mkdir(parents=True, exist_ok=True)
    trained_on = meta.get("hardware") or meta.get("backend", "twin")
    console.print(
        f"[bold]eval[/] {task_name} @ {checkpoint.name} (trained on {trained_on}) on "
        f"{hardware.name} ({cfg.hardware}): {cfg.episodes} episodes; success judged by {judge}; "
        f"report {report}"
    )
    supervisor = _start_drivers(cfg, hardware, report, console) if cfg.start_drivers else None
    env = None
    try:
        ros = dataclasses.replace(
            cfg.ros,
            namespace=hardware.robot_namespace,
            camera_namespaces=dict(hardware.cameras),
            node_name=cfg.ros.node_name or "eval",
        )
        build = lambda opts: make_env("ros", task_name, "", cfg.seed, opts, ros=ros)
        env = with_reward_sources(
            build, options, reward_classifier=cfg.reward_classifier, operator=cfg,
            robot_mode=True, log=console.print,
        )  # fmt: skip
        if cfg.operator_starts_episodes:
            from robot_rl.rewards.operator import OperatorStartsEpisodes

            env = OperatorStartsEpisodes(env, env.operator, log=console.print)
        tally = {"episodes": 0, "successes": 0}

        def on_episode(figures: dict) -> None:
            tally["episodes"] += 1
            tally["successes"] += int(figures["success"])
            outcome = "success" if figures["success"] else (
                "failure" if figures["failure"] else "no success")  # fmt: skip
            console.print(
                f"episode {figures['episode'] + 1}/{cfg.episodes}: {outcome} after "
                f"{figures['length']} steps ({figures['seconds']:.1f} s), return "
                f"{figures['return']:.2f} | success so far {tally['successes']}/"
                f"{tally['episodes']}"
            )
            _append(report, {"kind": "episode", **figures})

        def on_start(episode: int) -> None:
            console.print(f"episode {episode + 1}/{cfg.episodes}: running")

        result = evaluate(agent.eval_actions, env, cfg.episodes, seed=cfg.seed,
                          on_episode=on_episode, on_start=on_start)  # fmt: skip
    finally:
        if env is not None:
            env.close()
        if supervisor is not None:
            supervisor.stop(cfg.grace)
    summary = {
        "kind": "summary", "checkpoint": str(checkpoint), "task": task_name,
        "step": meta.get("step"), "hardware": str(cfg.hardware), "trained_on": trained_on,
        "success_judged_by": judge, **result.as_dict(),
        "cycle_time_s": result.length_mean / task.control_hz, "report": str(report),
    }  # fmt: skip
    _append(report, summary)
    return summary


def _append(report: Path, record: dict) -> None:
    with open(report, "a") as f:
        f.write(json.dumps(record) + "\n")


def _start_drivers(cfg, hardware, report: Path, console):
    """The hardware file's nodes as ``up robot`` starts them, each brought to active."""
    from robot_rl.runtime.node_readiness import StackFailed, wait_until_active
    from robot_rl.runtime.supervisor import Supervisor

    missing = hardware.missing_executables()
    if missing:
        raise UserError(
            f"{cfg.hardware} names driver executables that are not installed: "
            f"{', '.join(sorted(set(missing)))}"
        )
    supervisor = Supervisor(report.with_suffix("") / "logs")
    from robot_rl.stack import driver_processes

    nodes = driver_processes(hardware)
    try:
        for spec in nodes:
            supervisor.start(spec)
        wait_until_active(supervisor, nodes, cfg.ready_timeout, console)
    except StackFailed as err:
        supervisor.stop(cfg.grace)
        raise UserError(f"the robot's drivers did not come up: {err}") from None
    except BaseException:
        supervisor.stop(cfg.grace)
        raise
    return supervisor
