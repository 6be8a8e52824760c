"""Evaluation on a robot: ``robot-rl eval --checkpoint DIR --hardware FILE``.

The checkpoint's policy acts through the ROS 2 backend as ``up robot``'s actor does; the
hardware file's drivers are started and stopped here (``runtime/driver_bringup.py``) unless
``--no-start-drivers``. In robot mode one judge says each episode's success (``--operator``,
``--reward-classifier`` or the task's score from the robot's readings) and the other sources are
witnesses (``runtime/eval_judge.py``); a simulated cell's ground truth judges only when asked
(``--judge cell-ground-truth``), and the report says so. Each episode prints a line and appends
a JSON line to the report as it ends; the last line is the summary (success rate with its 95%
interval, return, episode length and time).
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


JUDGE_NAMES = {
    "classifier": "the reward classifier",
    "cell-ground-truth": "the cell's ground truth (/sim/objects/*)",
}


def is_simulated_cell(hardware) -> bool:
    """Whether a hardware file's nodes include a simulated cell's (``sim/cells``): the only
    setups with a ground truth."""
    from robot_rl.drivers.registry import DEVICES

    return any(
        n.device_type in DEVICES and DEVICES[n.device_type].module.startswith("robot_rl.sim.")
        for n in hardware.nodes
    )


def choose_judge(task: str, cfg, hardware=None) -> tuple[str, tuple[str, ...], str]:
    """(judge, witnesses, the judge in words): the one source that decides success on the
    robot (``--judge``; auto: the operator, else the classifier, else the task where it scores
    from the robot's own readings) and the other sources the run has. Refuses a task that
    would need the twin for it, and the cell's ground truth on real hardware."""
    from robot_rl.runtime.observation_mode import _task_class

    available = []
    if cfg.operator != "off":
        available.append("operator")
    if cfg.reward_classifier:
        available.append("classifier")
    if not _task_class(task).reward_needs_twin:
        available.append("task")
    judge = getattr(cfg, "judge", "auto")
    if judge == "cell-ground-truth":
        if hardware is None or not is_simulated_cell(hardware):
            raise UserError(
                f"--judge cell-ground-truth: {cfg.hardware} is not a simulated cell, and a "
                "robot has no ground truth: judge with --operator keyboard|joy"
            )
        witnesses = tuple(a for a in available if a != "task")  # the same score
    elif judge == "auto":
        if not available:
            raise UserError(
                f"eval --hardware: {task}'s success reads the twin's object poses, which a robot "
                "does not have; say who judges it: --operator keyboard|joy or "
                "--reward-classifier DIR (in a simulated cell also --judge cell-ground-truth)"
            )
        judge, witnesses = available[0], tuple(available[1:])
    else:
        if judge not in available:
            needs = {"operator": "--operator keyboard|joy", "classifier": "--reward-classifier"}
            raise UserError(
                f"--judge {judge} needs "
                + needs.get(judge, f"a task that scores from the robot's readings ({task} reads "
                                   "the twin)")
            )  # fmt: skip
        witnesses = tuple(a for a in available if a != judge)
    names = {
        **JUDGE_NAMES,
        "operator": f"the operator ({cfg.operator})",
        "task": f"the task ({task} scores from the robot's own readings)",
    }
    return judge, witnesses, names[judge]


def check_success_source(task: str, cfg) -> str:
    """Who judges success on the robot, in words (``choose_judge``)."""
    return choose_judge(task, cfg)[2]


def evaluate_on_hardware(cfg, checkpoint: Path, meta: dict, console) -> dict:
    """Evaluate ``checkpoint`` on the robot of ``cfg.hardware``; returns the summary.

    The drivers start before the agent is built: JAX's backend warns at every fork once it
    runs (``os.fork() was called ... JAX is multithreaded``), and starting a driver forks."""
    import contextlib

    from robot_rl.envs.task import make_task
    from robot_rl.hardware import load_hardware
    from robot_rl.runtime.driver_bringup import drivers_up

    hardware = load_hardware(cfg.hardware)
    task_name = cfg.task or meta.get("task")
    mode = robot_observation_mode(meta, str(checkpoint))
    judge, witnesses, judged_by = choose_judge(task_name, cfg, hardware)
    # the cell's ground truth: the task scores itself from /sim/objects/* (evaluation only)
    options = mode.task_options(
        task_name, ground_truth=True if judge == "cell-ground-truth" else None
    )
    task = make_task(task_name, **options)
    hardware.check_task(task)
    report = Path(cfg.report) if cfg.report else default_report(checkpoint, hardware.name)
    report.parent.mkdir(parents=True, exist_ok=True)
    trained_on = meta.get("hardware") or meta.get("backend", "twin")
    console.print(
        f"[bold]eval[/] {task_name} @ {checkpoint.name} (trained on {trained_on}) on "
        f"{hardware.name} ({cfg.hardware}): {cfg.episodes} episodes; success judged by "
        f"{judged_by}" + (f", witnesses: {', '.join(witnesses)}" if witnesses else "")
        + f"; report {report}"
    )  # fmt: skip
    if judge == "cell-ground-truth":
        console.print(
            "[bold yellow]SUCCESS JUDGED BY THE CELL'S GROUND TRUTH[/] (/sim/objects/*: a "
            "simulated cell's, for evaluation only; a robot has none)"
        )
    elif judge == "classifier" and not witnesses:
        console.print(
            "[yellow]warning:[/] success judged by the reward classifier alone, which nothing "
            "checks: add --operator joy|keyboard (or, in a simulated cell, --judge "
            "cell-ground-truth)"
        )
    if cfg.start_drivers:
        bringup = drivers_up(
            cfg.hardware, report.with_suffix("") / "logs", console, cfg.ready_timeout, cfg.grace
        )
    else:
        bringup = contextlib.nullcontext()
    with bringup:
        result, judged = _run_episodes(cfg, checkpoint, task, task_name, options, hardware,
                                       (judge, witnesses), report, console)  # fmt: skip
    summary = {
        "kind": "summary", "checkpoint": str(checkpoint), "task": task_name,
        "step": meta.get("step"), "hardware": str(cfg.hardware), "trained_on": trained_on,
        "success_judged_by": judged_by, **judged, **result.as_dict(),
        "cycle_time_s": result.length_mean / task.control_hz, "report": str(report),
    }  # fmt: skip
    _append(report, summary)
    return summary


def _run_episodes(cfg, checkpoint, task, task_name, options, hardware, sources, report, console):
    """The episodes, with the drivers up: (the evaluation's result, the judge's report)."""
    from robot_rl.agents.checkpoint import read_config, restore_agent
    from robot_rl.agents.sac import SACAgent
    from robot_rl.resets.retry import reset_with_retry
    from robot_rl.rewards.reward_sources import with_reward_sources
    from robot_rl.runtime.environments import make_env
    from robot_rl.runtime.eval_judge import SuccessJudge, TaskSuccessRecord
    from robot_rl.runtime.evaluation import evaluate

    template = SACAgent.create(
        0, task.observation_space(), task.action_space(), read_config(checkpoint)
    )
    agent = restore_agent(checkpoint, template)
    judge, witnesses = sources
    env = None
    try:
        ros = dataclasses.replace(
            cfg.ros,
            namespace=hardware.robot_namespace,
            camera_namespaces=dict(hardware.cameras),
            node_name=cfg.ros.node_name or "eval",
        )

        def build(opts):
            return TaskSuccessRecord(make_env("ros", task_name, "", cfg.seed, opts, ros=ros))

        env = with_reward_sources(
            build, options, reward_classifier=cfg.reward_classifier, operator=cfg,
            robot_mode=True, log=console.print, classifier_ends_episodes=judge == "classifier",
        )  # fmt: skip
        device = getattr(env, "operator", None)
        if cfg.operator_starts_episodes:
            from robot_rl.rewards.operator import OperatorStartsEpisodes

            env = OperatorStartsEpisodes(env, device, log=console.print)
        env = SuccessJudge(env, judge, witnesses, device, cfg.operator_wait, log=console.print)
        judged = env
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
            _append(report, {"kind": "episode", **figures, "verdicts": dict(judged.verdicts)})

        def on_start(episode: int) -> None:
            console.print(f"episode {episode + 1}/{cfg.episodes}: running")

        def reset(**kwargs):  # a refused reset (the arm not yet home) is tried again
            return reset_with_retry(env, log=lambda line: console.print(f"[yellow]{line}[/]"),
                                    **kwargs)  # fmt: skip

        result = evaluate(agent.eval_actions, env, cfg.episodes, seed=cfg.seed,
                          on_episode=on_episode, on_start=on_start, reset=reset)  # fmt: skip
    finally:
        if env is not None:
            env.close()
    return result, judged.report()


def _append(report: Path, record: dict) -> None:
    with open(report, "a") as f:
        f.write(json.dumps(record) + "\n")
