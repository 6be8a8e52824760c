"""Single-process training, the fast path for simulated runs and tests: the episode loop feeding
the learning core directly (the distributed runtime: docs/ARCHITECTURE.md, "One loop, one core").
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from rich.console import Console

from robot_rl.agents.checkpoint import latest_checkpoint, read_metadata
from robot_rl.agents.config import ENSEMBLE_AGENT, AgentConfig
from robot_rl.agents.pretrained import create_agent
from robot_rl.envs.gym_adapter import parse_env_kwargs
from robot_rl.errors import UserError
from robot_rl.runtime.demos import fill_demo_buffer
from robot_rl.runtime.environments import BACKENDS, make_env
from robot_rl.runtime.episode_loop import EPISODE_SCALARS, EpisodeLoop
from robot_rl.runtime.evaluation import evaluate
from robot_rl.runtime.interventions import (
    check_interventions,
    realtime_pace,
    with_interventions,
)
from robot_rl.runtime.learning_core import INTERVENTION_FIELDS, LearningCore, checkpoint_metadata
from robot_rl.runtime.observation_mode import ObservationMode
from robot_rl.runtime.progress import Every, JobProgress, PerSecond, format_seconds, on_stop
from robot_rl.runtime.recipes import Unset, resolve
from robot_rl.runtime.run_dir import RunLogger
from robot_rl.runtime.stopping import raise_if_pending, stop_name


@dataclass
class TrainConfig(ObservationMode):
    task: str = "pick_cube"
    """Task name (tasks/): pick_cube, peg_insert, car_lap."""
    backend: Literal["twin", "gym"] = "twin"
    """'twin' (the in-process MuJoCo twin of the task) or 'gym' (a gymnasium env, see env_id)."""
    env_id: str = "Pendulum-v1"
    """Gymnasium environment id for --backend gym (bounded Box actions; Box or Dict
    observations: robot_rl/envs/gym_adapter.py). ``ns/Name`` imports the module ``ns`` when the
    registry lacks it, as ``module:Name`` does (gym_hil/PandaPickCubeBase-v0)."""
    env_kwargs: tuple[str, ...] = ()
    """--backend gym: keyword arguments for gym.make as key=value, each value a Python literal
    (3, 0.5, True, 'text'; true/false; a bare word is a string), e.g. image_obs=True."""
    state_keys: tuple[str, ...] = ()
    """--backend gym, Dict observations: the entries (paths such as agent_pos or
    pixels/front, or a leaf name) flattened into the state, in this order; default: every
    entry that is not a camera, in sorted path order. --cameras names the image entries."""
    demos: int | None = None
    """Successful scripted-expert demonstrations put in the demo buffer first (the twin's
    expert, or --expert's on --backend gym); default: the task's recipe (runtime/recipes.py)."""
    expert: str | None = None
    """--backend gym: the scripted policy whose successful episodes --demos keeps, as
    module:name or path/to/file.py:name; called with the env, it returns a policy from the
    env's observation to its action (robot_rl/envs/gym_expert.py)."""
    demo_path: str | None = None
    """MCAP demonstrations (a file or a directory; robot-rl record-demos) loaded into the demo
    buffer instead of scripted ones."""
    reward_classifier: str | None = None
    """Reward classifier checkpoint (robot-rl train-reward): its sparse reward and termination
    replace the task's (success is still reported from the task; evaluation on the twin reads
    the task's ground truth, as robot-rl eval does)."""
    reward_consecutive: int = 1
    """With --reward-classifier: frames in a row that must pass its threshold before it pays."""
    relabel_false_positives: bool = False
    """With --reward-classifier: every time it fires, a labeler (on the twin, the task's ground
    truth in the operator's place) confirms; a false success pays 0, the episode goes on and the
    classifier is fine-tuned on the frame (HIL-SERL). Its fine-tunes go to run_dir."""
    relabel_every: int | None = None
    """With --relabel-false-positives: labelled frames between fine-tunes of the classifier;
    default: robot_rl.rewards.relabel.RelabelConfig's (50)."""
    demo_fraction: float = 0.5
    """Share of every batch drawn from the demo buffer (RLPD: 0.5)."""
    intervention_penalty: float = 0.0
    """Taken off the reward of the policy's last step before each operator takeover (RLIF's
    signal: stalling until the operator finishes costs the policy); 0: none."""
    seed: int = 0
    """Seed of the agent, the environment resets and replay sampling."""
    total_steps: int | None = None
    """Environment steps to train for; default: the task's recipe."""
    start_steps: int | None = None
    """Uniformly random actions before the policy acts and updates begin; default: recipe."""
    batch_size: int = Unset(256)
    """Transitions per critic minibatch."""
    pixel_recipe: bool = True
    """With cameras on the twin, image size and batch size left at their defaults come from the
    pixel recipe (runtime/recipes.py: 32 px, batch 64); False keeps the defaults."""
    utd_ratio: int = 2
    """Critic updates per environment step (update-to-data ratio)."""
    update_every: int = 2
    """Environment steps between update calls; each call runs utd_ratio * update_every critic
    updates in one compiled scan, so the ratio holds while dispatch overhead shrinks."""
    replay_capacity: int = 200_000
    """Online replay capacity in transitions (the demo buffer holds up to 100,000)."""
    eval_every: int = 2_000
    """Environment steps between evaluations of the deterministic policy."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    checkpoint_every: int = 5_000
    """Environment steps between checkpoints (agent, optimiser, replay, loop state)."""
    log_every: int = 1_000
    """Environment steps between progress lines."""
    run_dir: str | None = None
    """Where checkpoints, logs and curves go; default runs/<env>-s<seed>-<time>."""
    resume: bool = False
    """Continue from the newest checkpoint in run_dir."""
    stop_at_return: float | None = None
    """Stop early once an evaluation's mean return reaches this value."""
    stop_at_success: float | None = None
    """Stop early once an evaluation's success rate reaches this value."""
    interventions: Literal["off", "sim", "ros"] = "off"
    """Operator takeovers while training: 'sim' is the twin's simulated human (scripted expert),
    'ros' an operator on the /teleop/twist and /teleop/joy topics (any teleop node)."""
    wandb: bool = False
    """Also log to Weights & Biases, beside TensorBoard (needs the wandb extra; WANDB_MODE=offline
    keeps the run on disk). Off: wandb is not imported."""
    wandb_project: str = "robot_rl"
    """The Weights & Biases project of --wandb runs."""
    agent: AgentConfig = field(default_factory=lambda: ENSEMBLE_AGENT)
    """The agent: RLPD's ensemble (10 critics, min over 2) with SERL's initial temperature 0.01,
    which suits rewards of about 1 per step (agents/config.py's ENSEMBLE_AGENT)."""

    def validate(self) -> None:
        if not self.intervention_penalty >= 0.0:
            raise ValueError(f"intervention_penalty must be >= 0, got {self.intervention_penalty}")
        for name in ("total_steps", "demos", "start_steps"):
            if getattr(self, name) is None:
                raise ValueError(f"{name} is unset: call recipes.resolve(config) first")
        for name in ("total_steps", "batch_size", "utd_ratio", "update_every", "eval_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.start_steps < 0:
            raise ValueError(f"start_steps must be >= 0, got {self.start_steps}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.expert and self.backend != "gym":
            raise ValueError("--expert is for --backend gym (the twin has its task's expert)")
        if self.demos and self.backend == "gym" and not self.expert:
            raise ValueError("--demos on --backend gym needs --expert (a scripted policy)")
        if not 0.0 <= self.demo_fraction <= 1.0:
            raise ValueError(f"demo_fraction must be in [0, 1], got {self.demo_fraction}")
        check_interventions(self.interventions, self.backend)
        if self.reward_consecutive < 1:
            raise ValueError(f"reward_consecutive must be >= 1, got {self.reward_consecutive}")
        if self.relabel_false_positives and not self.reward_classifier:
            raise ValueError("--relabel-false-positives needs --reward-classifier")
        if self.relabel_every is not None:
            if not self.relabel_false_positives:
                raise ValueError("--relabel-every needs --relabel-false-positives")
            if self.relabel_every < 1:
                raise ValueError(f"relabel_every must be >= 1, got {self.relabel_every}")
        if self.resume and self.run_dir is None:
            raise ValueError("--resume needs --run-dir of the run to continue")
        if self.backend == "gym":
            parse_env_kwargs(self.env_kwargs)  # a malformed pair is one line before any step
        elif self.env_kwargs or self.state_keys:
            raise ValueError("--env-kwargs and --state-keys are for --backend gym")
        if self.backend != "gym":
            self.task_options(self.task)  # refuses a privileged state the mode forbids
            self.check_reward_source(self.task, self.reward_classifier)
        self.agent.validate()

    @property
    def run_name(self) -> str:
        return self.task if self.backend == "twin" else self.env_id.replace("/", "_")

    def demo_expert(self):
        """``make_expert(env)`` for --demos: --expert's policy on --backend gym; None (the
        twin task's scripted expert) otherwise."""
        if self.backend != "gym" or not self.expert:
            return None
        from robot_rl.envs.gym_expert import make_gym_expert

        return lambda env: make_gym_expert(self.expert, env)

    def gym_options(self) -> dict:
        """``make_gym_env``'s keyword arguments for this run (--backend gym)."""
        return {
            "env_kwargs": parse_env_kwargs(self.env_kwargs),
            "cameras": tuple(self.cameras),
            "image_size": int(self.image_size),
            "state_keys": tuple(self.state_keys),
        }

    def make_env(self, seed: int, ground_truth: bool = False):
        """The run's env; ``ground_truth``: without the reward classifier, scored by the
        task's ground truth also in robot mode (evaluation on the twin)."""
        if self.backend == "gym":
            options = self.gym_options()
        else:
            options = self.task_options(self.task, ground_truth=True if ground_truth else None)
        if self.reward_classifier and not ground_truth:
            from robot_rl.rewards.wrapper import with_reward_classifier

            build = lambda opts: make_env(self.backend, self.task, self.env_id, seed, opts)
            return with_reward_classifier(
                self.reward_classifier, build, options, consecutive=self.reward_consecutive
            )
        return make_env(self.backend, self.task, self.env_id, seed, options)


def reached(cfg: TrainConfig, result: dict) -> bool:
    if cfg.stop_at_return is not None and result["return_mean"] >= cfg.stop_at_return:
        return True
    return cfg.stop_at_success is not None and result["success_rate"] >= cfg.stop_at_success


def _say_convolution_path(cfg: TrainConfig, console: Console) -> None:
    """Pixels on the CPU without the oneDNN extension: one line on what that costs."""
    import jax

    if not cfg.cameras or jax.default_backend() != "cpu":
        return
    from robot_rl.agents.encoders import onednn_conv
    from robot_rl.agents.onednn_prerequisites import cost_line

    reason = onednn_conv.unavailable_reason()
    if reason is not None:
        console.print(f"[yellow]{cost_line(reason)}[/]")


def train(cfg: TrainConfig, console: Console | None = None) -> dict:
    """Train and return the final evaluation summary (also written to run_dir/summary.json)."""
    cfg = resolve(cfg)
    cfg.validate()
    if cfg.wandb:  # before anything starts: asked for and not installed is one line
        from robot_rl.runtime.wandb_log import MISSING

        if importlib.util.find_spec("wandb") is None:
            raise UserError(MISSING)
    console = console or Console(soft_wrap=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = Path(cfg.run_dir or f"runs/{cfg.run_name}-{cfg.backend}-s{cfg.seed}-{stamp}")
    env = cfg.make_env(cfg.seed)
    try:
        # success is measured on the task's ground truth, not on what the classifier believes
        eval_env = cfg.make_env(cfg.seed + 10_000, ground_truth=True)
    except BaseException:
        env.close()
        raise
    try:
        return _train(cfg, console, run_dir, env, eval_env)
    finally:
        env.close()
        eval_env.close()


def _train(cfg: TrainConfig, console: Console, run_dir: Path, env, eval_env) -> dict:
    ckpt_dir = run_dir / "checkpoints"
    hil = cfg.interventions != "off"
    # a resumed run takes its frozen trunk from the checkpoint, not from --agent.encoder-weights
    agent = create_agent(
        cfg.seed, env.observation_space, env.action_space, cfg.agent, load_weights=not cfg.resume
    )
    extras = INTERVENTION_FIELDS if hil else None
    core = LearningCore.for_run(
        agent, env.observation_space, env.action_space, cfg, extra_fields=extras
    )
    env = with_interventions(env, cfg.interventions, seed=cfg.seed)
    start_step, episodes = 0, 0

    checkpoint = latest_checkpoint(ckpt_dir) if cfg.resume else None
    if cfg.resume and checkpoint is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {ckpt_dir}")
    if checkpoint is not None:
        if cfg.backend != "gym":
            cfg.check_matches(read_metadata(checkpoint), cfg.task, str(checkpoint))
        meta = core.restore(checkpoint)
        start_step, episodes = meta["step"], meta["episodes"]
        console.print(f"[bold]resumed[/] {checkpoint} at step {start_step}")
    core.spread(console.print)

    run_config = dataclasses.asdict(cfg)
    if cfg.backend == "gym":  # labelled by its environment, not the unused twin task
        run_config["task"] = cfg.env_id
    logger = RunLogger(run_dir, config=run_config, resume=checkpoint is not None)
    if cfg.wandb:
        from robot_rl.runtime.wandb_log import WandbLogger

        logger = WandbLogger(
            logger, project=cfg.wandb_project, name=run_dir.name,
            config=dataclasses.asdict(cfg), run_dir=run_dir,
        )  # fmt: skip
    relabeler = None
    if cfg.relabel_false_positives:
        from robot_rl.rewards.labelers import GroundTruthLabeler
        from robot_rl.rewards.relabel import RelabelConfig, attach_relabeler

        every = cfg.relabel_every
        relabel = None if every is None else RelabelConfig(update_every=every)  # None: defaults
        # the twin's ground truth answers in the operator's place (a key press on a robot)
        relabeler = attach_relabeler(
            env, GroundTruthLabeler(), run_dir, config=relabel, log=console.print
        )
    fill_demo_buffer(
        core.demos, cfg.demo_path, cfg.demos, cfg.make_env, cfg.seed + 20_000, console.print,
        make_expert=cfg.demo_expert(),
    )  # fmt: skip
    console.print(
        f"[bold]train[/] {cfg.run_name} ({cfg.backend}) for {cfg.total_steps} steps, "
        f"{cfg.agent.num_critics} critics, UTD {cfg.utd_ratio} -> {run_dir}"
    )
    _say_convolution_path(cfg, console)

    run_metadata = checkpoint_metadata(cfg, cfg.backend, cfg.env_id)
    loop = EpisodeLoop(env, core.add)
    loop.episodes = episodes

    def checkpoint_now(step: int) -> None:
        core.save(ckpt_dir, step, metadata={"episodes": loop.episodes, **run_metadata})

    def policy(obs: dict) -> np.ndarray:
        return core.behaviour_action(obs, env.action_space)

    loop.reset(seed=cfg.seed + start_step)
    chunk = cfg.utd_ratio * cfg.update_every
    last_eval, update_info, eval_seconds, run_start = None, {}, 0.0, time.perf_counter()
    log_due, eval_due, checkpoint_due = (
        Every(n, start_step) for n in (cfg.log_every, cfg.eval_every, cfg.checkpoint_every)
    )
    env_rate = PerSecond(start_step)
    update_rate = PerSecond(core.updates, clock=lambda: core.update_seconds)
    # A person at the teleop device needs the twin at the task's rate, not as fast as it can go.
    operator_pace = realtime_pace(env, cfg.interventions, cfg.backend)

    def returns_only() -> bool:  # a gymnasium env that never said success: figures are returns
        said = getattr(env, "success_signal", False) or getattr(eval_env, "success_signal", False)
        return cfg.backend == "gym" and not said

    last_return = None
    # a bar on a terminal; in a log file the progress lines below carry the ETA
    progress = JobProgress("train", cfg.total_steps, console=console, start=start_step, lines=False)

    def stopped() -> None:  # keep what this run learned: the agent, every stored transition
        checkpoint_now(core.received)
        console.print(
            f"[yellow]stopped ({stop_name()})[/] at step {core.received}: checkpoint written, "
            "--resume goes on"
        )

    with progress, on_stop(stopped):
        for step in range(start_step + 1, cfg.total_steps + 1):
            raise_if_pending()  # a SIGTERM whose raise a gc callback swallowed
            ended = loop.step(policy).ended
            progress.update(step)
            if operator_pace is not None:
                operator_pace.sleep()
            if ended is not None:
                figures = {EPISODE_SCALARS[k]: v for k, v in ended.figures.items()}
                last_return = figures.get("charts/episode_return", last_return)
                if returns_only():  # nothing to plot as a success
                    figures.pop("charts/success", None)
                figures.pop("robot/intervention_rate")  # with interventions: the wrapper's
                logger.scalars(step, {**figures, **ended.info.get("intervention_metrics", {})})
            while core.may_update(chunk):
                update_info = core.update(chunk)
            log_now = log_due.due(step)
            if log_now and update_info:
                logger.scalars(step, {k: float(v) for k, v in update_info.items()})

            done = step == cfg.total_steps
            if eval_due.due(step) or done:
                eval_start = time.perf_counter()
                result = evaluate(
                    core.agent.eval_actions, eval_env, cfg.eval_episodes, cfg.seed + 1
                )
                last_eval = {"step": step, **result.as_dict()}
                signal = {"success_signal": False} if returns_only() else {}
                logger.evaluation(step, {**result.as_dict(), **signal})
                eval_seconds += time.perf_counter() - eval_start
                success = "" if returns_only() else f", success {result.success_rate:.0%}"
                console.print(
                    f"  eval @ {step}: return {result.return_mean:.1f}"
                    f" +- {result.return_std:.1f}{success}"
                )
            if log_now:
                share = loop.recent_intervention_rate() or 0
                hil_part = f"interventions (last 20) {share:.0%} | " if hil else ""
                if returns_only():
                    trained = "" if last_return is None else f"last return {last_return:.1f}"
                else:
                    trained = f"train success (last 20) {loop.recent_success_rate() or 0:.0%}"
                console.print(
                    f"step {step}/{cfg.total_steps} | episodes {loop.episodes} | "
                    f"{trained + ' | ' if trained else ''}"
                    f"{hil_part}"
                    f"{env_rate(step):.0f} env steps/s | "
                    f"{update_rate(core.updates):.0f} updates/s | "
                    f"ETA {format_seconds(progress.eta())}"
                )
            if checkpoint_due.due(step) or done:
                checkpoint_now(step)
            if last_eval is not None and last_eval["step"] == step and reached(cfg, last_eval):
                console.print("reached the stop criterion: stopping early")
                if not done and step % cfg.checkpoint_every:
                    checkpoint_now(step)
                break

    summary = {
        "run_dir": str(run_dir),
        "episodes": loop.episodes,
        "final_eval": last_eval,
        "updates": core.updates,
        # where the loop's time went: updates (sampling included), evaluation, the rest
        # (acting, env steps, storing, logging, checkpoints)
        "seconds": {
            "loop": round(time.perf_counter() - run_start, 2),
            "updates": round(core.update_seconds, 2),
            "sampling": round(core.sample_seconds, 2),
            "evaluation": round(eval_seconds, 2),
        },
    }
    if relabeler is not None:
        summary["reward_relabel"] = relabeler.counts()
    logger.finish(summary)
    console.print(f"[bold]done[/]: curves {run_dir / 'curves.png'}")
    console.print(json.dumps(summary))
    return summary
