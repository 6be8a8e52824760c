"""Forward-backward reset-free training (SERL): two policies take turns on one robot.

The forward policy does the task (pick_cube), the backward policy undoes it (put_down_cube),
each with its own task, reward, episode loop and learning core. When one's episode ends, the
other starts from wherever the scene is (``RobotEnv.start_in_place``); the scene is reset only
at the start, after a real failure and after ``stalled_episodes``, each kind counted. Each
direction is evaluated on a twin of its own; both are checkpointed as a pair at every evaluation
and on Ctrl-C (``fb_checkpoint``), and ``resume`` continues from the last complete pair.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np
from rich.console import Console

from robot_rl.agents.config import ENSEMBLE_AGENT, AgentConfig
from robot_rl.agents.sac import SACAgent
from robot_rl.data.replay import ReplayBuffer
from robot_rl.envs.task import task_class
from robot_rl.runtime import fb_checkpoint
from robot_rl.runtime.demos import collect_demos
from robot_rl.runtime.episode_loop import EPISODE_SCALARS, EpisodeLoop
from robot_rl.runtime.evaluation import evaluate
from robot_rl.runtime.learning_core import LearningCore
from robot_rl.runtime.progress import Every, PerSecond, on_stop
from robot_rl.runtime.run_dir import RunLogger
from robot_rl.runtime.stopping import raise_if_pending

FB_FIGURES = ("return", "length", "success")
"""The episode figures each direction logs (no operator here)."""


@dataclass
class ForwardBackwardConfig:
    task: str = "pick_cube"
    """Forward task; its backward task undoes it (pick_cube -> put_down_cube)."""
    backward_task: str | None = None
    """Backward task; default: the forward task's own (``Task.backward_task``)."""
    demos: int = 20
    """Successful scripted-expert demonstrations per direction, in that direction's demo buffer."""
    demo_fraction: float = 0.5
    """Share of every batch drawn from the demo buffer (RLPD: 0.5)."""
    seed: int = 0
    """Seed of the agents, the start reset and replay sampling."""
    total_steps: int = 20_000
    """Environment steps to train for, both directions together."""
    start_steps: int = 200
    """Uniformly random actions per direction before its policy acts and its updates begin."""
    batch_size: int = 256
    """Transitions per critic minibatch."""
    utd_ratio: int = 2
    """Critic updates per environment step of a direction, for that direction's agent."""
    update_every: int = 2
    """A direction's steps between its update calls (utd_ratio * update_every updates each)."""
    replay_capacity: int = 100_000
    """Online replay capacity per direction (transitions)."""
    eval_every: int = 2_000
    """Environment steps between evaluations of both deterministic policies."""
    eval_episodes: int = 10
    """Episodes per evaluation and direction."""
    log_every: int = 1_000
    """Environment steps between progress lines."""
    stalled_episodes: int = 20
    """Reset the scene after this many episodes in a row without a success in either direction
    (the cube pushed out of reach: where a person would step in)."""
    run_dir: str | None = None
    """Where logs, curves and checkpoints go (forward/ and backward/ inside); default
    runs/<task>-fb-s<seed>-<time>."""
    resume: bool = False
    """Continue from the last complete checkpoint pair in run_dir (written at every evaluation
    and on Ctrl-C); the scene starts from a fresh reset."""
    stop_at_success: float | None = None
    """Stop early once an evaluation of both directions reaches this success rate."""
    agent: AgentConfig = field(default_factory=lambda: ENSEMBLE_AGENT)
    """Both agents: RLPD's ensemble with SERL's initial temperature, as `robot-rl train`."""

    @property
    def backward_name(self) -> str:
        if self.backward_task is not None:
            return self.backward_task
        backward = task_class(self.task).backward_task
        if backward is None:
            raise ValueError(f"no backward task for {self.task!r}; pass --backward-task")
        return backward

    def validate(self) -> None:
        for name in ("total_steps", "batch_size", "utd_ratio", "update_every", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("start_steps", "demos", "eval_episodes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.demo_fraction <= 1.0:
            raise ValueError(f"demo_fraction must be in [0, 1], got {self.demo_fraction}")
        if self.stalled_episodes < 2:
            raise ValueError(f"stalled_episodes must be >= 2, got {self.stalled_episodes}")
        if self.backward_name == self.task:
            raise ValueError("the backward task must differ from the forward task")
        if self.resume and self.run_dir is None:
            raise ValueError("--resume needs --run-dir of the run to continue")
        self.agent.validate()


class Direction:
    """One side of the pair: its task's env on the shared robot, an eval env, its own episode
    loop (which does not reset: the pair decides what follows an episode) and learning core."""

    def __init__(self, name: str, env, eval_env, core: LearningCore, logger=None):
        self.name, self.env, self.eval_env = name, env, eval_env
        self.core, self.logger = core, logger
        self.loop = EpisodeLoop(env, core.add, auto_reset=False)
        self.last_eval: dict | None = None

    @property
    def agent(self) -> SACAgent:
        return self.core.agent

    @property
    def replay(self) -> ReplayBuffer:
        return self.core.replay

    @property
    def demos(self) -> ReplayBuffer:
        return self.core.demos

    @property
    def steps(self) -> int:
        return self.loop.steps

    @property
    def episodes(self) -> int:
        return self.loop.episodes

    @property
    def recent(self) -> list[float]:
        return self.loop.recent_success

    @property
    def successes(self) -> int:
        return int(sum(self.loop.recent_success))

    @property
    def updates(self) -> int:
        return self.core.updates

    def state_dict(self) -> dict:
        """The direction's counters (its checkpoint's meta.json holds them for --resume)."""
        return {
            "steps": self.steps,
            "episodes": self.episodes,
            "successes": self.successes,
            "updates": self.updates,
            "recent": list(self.recent),
            "last_eval": self.last_eval,
        }

    def load_state(self, counters: dict) -> None:
        """Counters as ``state_dict`` gave them (the core's agent and buffers load apart)."""
        self.core.received, self.core.updates = counters["steps"], counters["updates"]
        self.loop.steps, self.loop.episodes = counters["steps"], counters["episodes"]
        self.loop.recent_success = list(counters["recent"])
        self.last_eval = counters["last_eval"]

    def act(self, obs: dict) -> np.ndarray:
        return self.core.behaviour_action(obs, self.env.action_space)

    def summary(self) -> dict:
        return {
            "task": self.env.task.name if hasattr(self.env, "task") else self.name,
            "env_steps": self.steps,
            "episodes": self.episodes,
            "successes": self.successes,
            "train_success_rate": self.successes / max(self.episodes, 1),
            "train_success_last20": float(np.mean(self.recent[-20:] or [0.0])),
            "updates": self.updates,
            "final_eval": self.last_eval,
        }


def with_shared_structure(agent: SACAgent, template: SACAgent) -> SACAgent:
    """``agent``'s parameters, optimiser states and RNG inside ``template``'s static parts
    (network definitions, optimisers, config). JAX caches compiled functions by that static
    structure, which each ``SACAgent.create`` builds anew: sharing it compiles the update and
    acting functions once for both directions instead of twice."""
    leaves = jax.tree_util.tree_leaves(agent)
    template_leaves, template_def = jax.tree_util.tree_flatten(template)
    shapes = [np.shape(x) for x in leaves]
    if shapes != [np.shape(x) for x in template_leaves] or agent.config != template.config:
        raise ValueError("the agents differ in spaces or config: nothing to share")
    return jax.tree_util.tree_unflatten(template_def, leaves)


def make_direction(
    name,
    env,
    eval_env,
    cfg: ForwardBackwardConfig,
    seed: int,
    log_dir=None,
    template: SACAgent | None = None,
    resume: bool = False,
) -> Direction:
    """A direction with a fresh agent and empty buffers (the demo buffer is filled separately).
    With a ``template`` agent of the same spaces and config, the new agent shares its compiled
    functions (``with_shared_structure``)."""
    agent = SACAgent.create(seed, env.observation_space, env.action_space, cfg.agent)
    if template is not None:
        agent = with_shared_structure(agent, template)
    # each direction samples its batches from its own stream
    core = LearningCore.for_run(agent, env.observation_space, env.action_space, cfg, seed=seed)
    env.action_space.seed(seed)
    config = dataclasses.asdict(cfg)
    logger = None if log_dir is None else RunLogger(log_dir, config=config, resume=resume)
    return Direction(name, env, eval_env, core, logger)


def run_forward_backward(
    cfg: ForwardBackwardConfig,
    forward: Direction,
    backward: Direction,
    console: Console | None = None,
    resume: dict | None = None,
    checkpoint: Callable[[int, dict], None] | None = None,
) -> dict:
    """The alternating loop. The two directions' envs must share one robot (backend).

    ``checkpoint(step, loop_state)`` is called after every evaluation and on Ctrl-C;
    ``resume`` is such a loop state with its ``step``: the loop goes on from there, from a fresh
    reset of the direction that was acting (the scene at the interruption is not restorable)."""
    console = console or Console(soft_wrap=True)
    resets = {"start": 1, "failure": 0, "stalled": 0}
    handovers, dry_streak, start = 0, 0, 0
    active = forward
    if resume is not None:
        start, handovers, dry_streak = resume["step"], resume["handovers"], resume["dry_streak"]
        resets = {**resume["resets"], "start": resume["resets"]["start"] + 1}
        active = backward if resume["active"] == backward.name else forward
        console.print(
            f"[bold]resumed[/] at step {start}: the scene starts from a fresh reset (its state "
            f"at the interruption cannot be restored); the {active.name} policy goes on"
        )
    active.loop.reset(seed=cfg.seed + start)
    chunk = cfg.utd_ratio * cfg.update_every
    log_due, eval_due = Every(cfg.log_every, start), Every(cfg.eval_every, start)
    env_rate = PerSecond(start)

    def loop_state() -> dict:
        return dict(active=active.name, dry_streak=dry_streak, resets=resets, handovers=handovers)

    def evaluate_both(step: int) -> None:
        for d in (forward, backward):
            policy = d.agent.eval_actions
            result = evaluate(policy, d.eval_env, cfg.eval_episodes, seed=cfg.seed + 1)
            d.last_eval = {"step": step, **result.as_dict()}
            if d.logger is not None:
                d.logger.evaluation(step, result.as_dict())
            console.print(
                f"  eval {d.name} @ {step}: success {result.success_rate:.0%} "
                f"[{result.success_ci_low:.0%}, {result.success_ci_high:.0%}], "
                f"return {result.return_mean:.1f}"
            )

    def stopped() -> None:  # keep what both policies learned, every stored transition
        if checkpoint is not None:
            step = forward.steps + backward.steps
            checkpoint(step, loop_state())
            console.print(
                f"[yellow]interrupted[/] at step {step}: checkpoints written, --resume goes on"
            )

    step = start
    with on_stop(stopped):
        for step in range(start + 1, cfg.total_steps + 1):
            raise_if_pending()  # a SIGTERM whose raise a gc callback swallowed
            d = active
            result = d.loop.step(d.act)
            ended = result.ended
            while d.core.may_update(chunk):
                d.core.update(chunk)

            if ended is not None:
                succeeded = bool(ended.figures["success"])
                dry_streak = 0 if succeeded else dry_streak + 1
                if d.logger is not None:
                    d.logger.scalars(
                        step,
                        {
                            **{EPISODE_SCALARS[k]: ended.figures[k] for k in FB_FIGURES},
                            "charts/resets": sum(resets.values()),
                        },
                    )
                if result.transition.terminated and not succeeded:  # the scene needs a reset
                    resets["failure"] += 1
                    active, dry_streak = forward, 0
                    forward.loop.reset()
                elif dry_streak >= cfg.stalled_episodes:
                    resets["stalled"] += 1
                    active, dry_streak = forward, 0
                    forward.loop.reset()
                else:  # hand the robot over as it is: no reset
                    active = backward if d is forward else forward
                    active.loop.begin(active.env.start_in_place()[0])
                    handovers += 1

            reached = False
            if eval_due.due(step) or step == cfg.total_steps:
                evaluate_both(step)
                if checkpoint is not None:
                    checkpoint(step, loop_state())
                success = min(d.last_eval["success_rate"] for d in (forward, backward))
                reached = cfg.stop_at_success is not None and success >= cfg.stop_at_success
            if log_due.due(step):
                console.print(
                    f"step {step}/{cfg.total_steps} | forward {forward.episodes} episodes, "
                    f"success (last 20) {np.mean(forward.recent[-20:] or [0]):.0%} | backward "
                    f"{backward.episodes}, {np.mean(backward.recent[-20:] or [0]):.0%} | resets "
                    f"{resets['failure'] + resets['stalled']} after the start | "
                    f"{env_rate(step):.0f} env steps/s"
                )
            if reached:
                console.print("both directions reached the stop criterion: stopping early")
                break
    return {
        "env_steps": step,
        "resets": resets,
        "resets_after_start": resets["failure"] + resets["stalled"],
        "handovers": handovers,
        "forward": forward.summary(),
        "backward": backward.summary(),
    }


def train_forward_backward(cfg: ForwardBackwardConfig, console: Console | None = None) -> dict:
    """Forward-backward training on the twin; returns the summary (also run_dir/summary.json)."""
    from robot_rl.envs.robot_env import RobotEnv
    from robot_rl.envs.task import make_task
    from robot_rl.sim import make_expert, make_twin_env

    cfg.validate()
    console = console or Console(soft_wrap=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = Path(cfg.run_dir or f"runs/{cfg.task}-fb-s{cfg.seed}-{stamp}")
    state = fb_checkpoint.read_state(run_dir, cfg) if cfg.resume else None
    if state is None and (run_dir / fb_checkpoint.STATE_FILE).is_file():
        raise ValueError(
            f"{run_dir} holds a train-fb checkpoint: pass --resume to continue that run, "
            "or another --run-dir"
        )
    forward_task, backward_task = make_task(cfg.task), make_task(cfg.backward_name)
    if forward_task.robot != backward_task.robot:
        raise ValueError(f"{cfg.task} and {cfg.backward_name} do not drive the same robot")
    forward_env = make_twin_env(forward_task, seed=cfg.seed)
    # one robot, two tasks: the backward env drives the forward env's twin
    backward_env = RobotEnv(backward_task, forward_env.backend)
    eval_envs = [make_twin_env(t, seed=cfg.seed + 10_000) for t in (forward_task, backward_task)]
    resume = state is not None
    forward = make_direction(
        "forward", forward_env, eval_envs[0], cfg, cfg.seed, run_dir / "forward", resume=resume
    )
    same_spaces = forward_env.observation_space == backward_env.observation_space
    same_spaces = same_spaces and forward_env.action_space == backward_env.action_space
    backward = make_direction(
        "backward",
        backward_env,
        eval_envs[1],
        cfg,
        cfg.seed + 1,
        run_dir / "backward",
        template=forward.agent if same_spaces else None,
        resume=resume,
    )
    directions = [forward, backward]
    if resume:
        fb_checkpoint.restore_pair(run_dir, cfg, directions, state["step"])
    console.print(
        f"[bold]train-fb[/] {cfg.task} <-> {cfg.backward_name} on the twin for "
        f"{cfg.total_steps} steps -> {run_dir}"
    )
    for d, task in zip(directions, (forward_task, backward_task), strict=True):
        if cfg.demos and not resume:  # a resumed run has its demo buffers back
            demo_env = make_twin_env(task)
            counts = collect_demos(
                demo_env, make_expert(task), d.demos, cfg.demos, seed=cfg.seed + 20_000
            )
            demo_env.close()
            console.print(
                f"demos {d.name} ({task.name}): {counts['episodes']} successful expert episodes, "
                f"{counts['transitions']} transitions"
            )

    def checkpoint(step: int, loop_state: dict) -> None:
        fb_checkpoint.save_pair(run_dir, cfg, directions, step, loop_state)

    t0 = time.perf_counter()
    try:
        summary = run_forward_backward(
            cfg, *directions, console=console, resume=state, checkpoint=checkpoint
        )
    finally:
        forward_env.close()  # closes the shared twin; backward_env has nothing of its own
        for env in eval_envs:
            env.close()
    summary = {"run_dir": str(run_dir), "wall_s": round(time.perf_counter() - t0, 1), **summary}
    for d in directions:
        if d.logger is not None:
            d.logger.finish(d.summary())
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    console.print(json.dumps(summary))
    return summary
