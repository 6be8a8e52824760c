"""Learning curves of a run as a PNG: evaluation success rate and return against env steps."""

from __future__ import annotations

from pathlib import Path

from robot_rl.runtime.step_records import read_jsonl


def plot_curves(run_dir: str | Path, out_name: str = "curves.png") -> Path | None:
    """Write run_dir/curves.png from eval.jsonl and metrics.jsonl; None if there is no data."""
    run_dir = Path(run_dir)
    # A malformed line (a run killed mid-write, then resumed) is skipped: curves never stop a run.
    evals = read_jsonl(run_dir / "eval.jsonl", warnings=[])
    metrics = read_jsonl(run_dir / "metrics.jsonl", warnings=[])
    return draw_curves(evals, metrics, run_dir / out_name, title=run_dir.name)


def draw_curves(evals: list[dict], metrics: list[dict], out: Path, title: str) -> Path | None:
    """The curves of these eval.jsonl and metrics.jsonl records as the PNG ``out``; None (and
    nothing written) if there is no data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    episodes = [m for m in metrics if "charts/episode_return" in m]
    if not evals and not episodes:
        return None
    # a gymnasium run has no success signal (its eval records say so): returns only
    no_success = bool(evals) and all(e.get("success_signal") is False for e in evals)
    if no_success:
        fig, ax_return = plt.subplots(1, 1, figsize=(5.5, 3.8))
        ax_success = None
    else:
        fig, (ax_success, ax_return) = plt.subplots(1, 2, figsize=(10, 3.8))
    if evals and ax_success is not None:
        steps = [e["step"] for e in evals]
        ax_success.plot(steps, [e["success_rate"] for e in evals], marker="o", label="eval")
        ax_success.fill_between(
            steps,
            [e["success_ci_low"] for e in evals],
            [e["success_ci_high"] for e in evals],
            alpha=0.2,
            label="95% CI",
        )
    if evals:
        ax_return.plot(
            [e["step"] for e in evals], [e["return_mean"] for e in evals], marker="o", label="eval"
        )
    successes = [m for m in episodes if "charts/success" in m]
    if successes and ax_success is not None:
        # Training episodes succeed or not: a rolling mean over 20 reads as a rate.
        values = [m["charts/success"] for m in successes]
        window = [sum(values[max(0, i - 19) : i + 1]) / len(values[max(0, i - 19) : i + 1])
                  for i in range(len(values))]  # fmt: skip
        ax_success.plot(
            [m["step"] for m in successes], window, alpha=0.6, label="training (last 20 episodes)"
        )
    if episodes:
        ax_return.plot(
            [m["step"] for m in episodes],
            [m["charts/episode_return"] for m in episodes],
            alpha=0.4,
            label="training episodes",
        )
    if ax_success is not None:
        ax_success.set(xlabel="environment steps", ylabel="success rate", ylim=(-0.02, 1.02))
    ax_return.set(xlabel="environment steps", ylabel="episode return")
    for ax in (a for a in (ax_success, ax_return) if a is not None):
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
