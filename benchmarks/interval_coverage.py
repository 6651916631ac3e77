"""How often a 95% percentile-bootstrap interval over a few seeds holds the true value: why the leaderboard
and the sweep tables give no interval below ``MIN_SEEDS_FOR_INTERVAL`` seeds.

    python benchmarks/interval_coverage.py [--datasets 2000] [--reps 2000] [--json FILE]

Each dataset is ``n`` seeds' results drawn from a normal distribution (its mean and IQM are 0); the interval
is the one the leaderboard computes for one ruleset (rliable's bootstrap of the IQM over seeds, percentile
method, ``--reps`` resamples), beside the same bootstrap of the mean and Student's t-interval of the mean.
The coverage is the fraction of ``--datasets`` datasets whose interval holds 0; a 95% interval should hold it
in about 95% of them (within about one point at 2,000 datasets).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's agents package

from agents.commands.arguments import at_least  # noqa: E402 - after the path

SEEDS = (2, 3, 4, 5, 10)


def iqm(values: np.ndarray) -> np.ndarray:
    """The interquartile mean along the last axis, as rliable's ``aggregate_iqm`` (scipy's ``trim_mean``
    at 25%: ``int(0.25 * n)`` values cut at each end)."""
    n = values.shape[-1]
    cut = int(0.25 * n)
    return np.sort(values, axis=-1)[..., cut : n - cut].mean(axis=-1)


def coverage(n: int, datasets: int, reps: int, rng: np.random.Generator) -> dict[str, Any]:
    """The three intervals' coverage over ``datasets`` datasets of ``n`` seeds."""
    from scipy import stats

    data = rng.standard_normal((datasets, n))
    held = {"bootstrap_iqm": 0, "bootstrap_mean": 0, "t_mean": 0}
    for start in range(0, datasets, 100):  # (100 datasets at a time bound the resamples' memory)
        part = data[start : start + 100]
        picks = rng.integers(0, n, size=(len(part), reps, n))
        resampled = np.take_along_axis(part[:, None, :], picks, axis=2)
        for name, statistic in (("bootstrap_iqm", iqm), ("bootstrap_mean", lambda x: x.mean(axis=-1))):
            low, high = np.percentile(statistic(resampled), [2.5, 97.5], axis=1)
            held[name] += int(((low <= 0) & (0 <= high)).sum())
        half = stats.t.ppf(0.975, n - 1) * part.std(axis=1, ddof=1) / np.sqrt(n)
        held["t_mean"] += int((np.abs(part.mean(axis=1)) <= half).sum())
    return {"seeds": n, **{name: count / datasets for name, count in held.items()}}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--datasets", type=at_least(1, most=100_000), default=2000, help="datasets per seed count (default 2000)"
    )
    parser.add_argument(
        "--reps",
        type=at_least(1, most=100_000),
        default=2000,
        help="bootstrap resamples (default 2000, the leaderboard's)",
    )
    parser.add_argument("--seed", type=at_least(0), default=0, help="the simulation's seed (default 0)")
    parser.add_argument("--json", type=Path, help="also write the table to FILE")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = [coverage(n, args.datasets, args.reps, rng) for n in SEEDS]
    print("seeds | bootstrap IQM | bootstrap mean | t-interval of the mean   (coverage of a nominal 95%)")
    for row in rows:
        print(f"{row['seeds']:5d} | {row['bootstrap_iqm']:13.1%} | {row['bootstrap_mean']:14.1%} | {row['t_mean']:.1%}")
    if args.json:
        command = "python benchmarks/interval_coverage.py " + " ".join(argv if argv is not None else sys.argv[1:])
        args.json.write_text(json.dumps({"command": command.strip(), "rows": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
