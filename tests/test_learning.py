"""The agent learns: Pendulum-v1 swing-up from state within a fixed step budget."""

import json

import pytest

from robot_rl.agents.config import AgentConfig
from robot_rl.runtime.train_loop import TrainConfig, train

PENDULUM_TARGET_RETURN = -300.0
STEP_BUDGET = 6_000


@pytest.mark.slow
def test_sac_swings_up_pendulum_within_budget(tmp_path):
    cfg = TrainConfig(
        backend="gym",
        env_id="Pendulum-v1",
        seed=0,
        total_steps=STEP_BUDGET,
        start_steps=1_000,
        utd_ratio=1,
        update_every=2,
        agent=AgentConfig(num_critics=2, critic_subsample=2),
        eval_every=1_000,
        eval_episodes=5,
        checkpoint_every=STEP_BUDGET,
        log_every=1_000,
        run_dir=str(tmp_path / "run"),
        stop_at_return=PENDULUM_TARGET_RETURN,
    )
    summary = train(cfg)
    final = summary["final_eval"]
    assert final["return_mean"] >= PENDULUM_TARGET_RETURN, final
    assert final["step"] <= STEP_BUDGET
    # The run left its artefacts: curves, TensorBoard events, evaluations, a checkpoint.
    run = tmp_path / "run"
    assert (run / "curves.png").stat().st_size > 0
    assert any((run / "tb").iterdir())
    evals = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert evals[-1]["return_mean"] == final["return_mean"]
    assert any((run / "checkpoints").iterdir())
