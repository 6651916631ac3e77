"""PNG plots of benchmarks and training runs (matplotlib, imported lazily by callers).

* :func:`plot_score_distributions`: each agent's final-score histogram, with the
  solver's optimal expected score as a vertical line.
* :func:`plot_learning_curve`: mean evaluation score (± std) against training
  timesteps from ``train.py``'s ``evaluations.csv``, with the optimal line.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from types import ModuleType


def _pyplot() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    return plt


def plot_score_distributions(result: Any, path: str | Path) -> Path:
    """Histogram of every agent's scores (a :class:`agents.evaluation.benchmark.BenchmarkResult`)."""
    plt = _pyplot()
    data, scores = result.data, result.scores
    fig, ax = plt.subplots(figsize=(9, 5))
    everything = np.concatenate([np.asarray(s, dtype=float) for s in scores.values()]) if scores else np.zeros(1)
    bins = np.linspace(everything.min(), everything.max() + 1, 60)
    for name, values in scores.items():
        row = data["agents"][name]
        ax.hist(values, bins=bins, alpha=0.45, density=True, label=f"{name}: mean {row['mean']:.1f}")
    optimal = data.get("optimal_expected_score")
    if optimal is not None:
        ax.axvline(optimal, color="black", linestyle="--", label=f"optimal expected {optimal:.2f}")
    ax.set_xlabel("final score")
    ax.set_ylabel("density")
    ax.set_title(f"{data['rules']}: score distributions ({data['games']} games per agent)")
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def read_evaluations(path: str | Path) -> dict[str, np.ndarray]:
    """Columns of ``evaluations.csv`` as float arrays."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        return {}
    return {key: np.array([float(r[key]) if r[key] not in ("", "None") else np.nan for r in rows]) for key in rows[0]}


def plot_learning_curve(
    evaluations_csv: str | Path, path: str | Path, optimal: float | None = None, title: str = "learning curve"
) -> Path:
    """Mean eval score ± std against timesteps, with the optimal expected score line."""
    plt = _pyplot()
    cols = read_evaluations(evaluations_csv)
    fig, ax = plt.subplots(figsize=(9, 5))
    if cols:
        t, mean, std = cols["timesteps"], cols["mean_score"], cols["std_score"]
        ax.plot(t, mean, marker="o", label="agent (eval mean)")
        ax.fill_between(t, mean - std, mean + std, alpha=0.2, label="± 1 std")
    if optimal is not None:
        ax.axhline(optimal, color="black", linestyle="--", label=f"optimal expected {optimal:.2f}")
        ax.axhline(0.85 * optimal, color="gray", linestyle=":", label="85% of optimal")
    ax.set_xlabel("timesteps")
    ax.set_ylabel("final score")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
