"""Multi-seed training results: collect runs, aggregate over seeds with rliable, plot learning curves.

    python -m agents.evaluation.results                       # regenerate results/ from results/runs/
    python -m agents.evaluation.results runs/a runs/b ...     # first copy these run folders' results in

A run folder (``train.py``) contributes its ``results.json`` (the final
benchmark), ``evaluations.csv`` (the learning curve) and ``config.yaml``; they
are copied to ``results/runs/<rules>/<run name>/`` (a few kB each; the
checkpoints and TensorBoard logs stay behind), so the repository keeps every
run a headline number comes from. Then, per ruleset and group (``--group``
LABEL given with the runs, else the config's ``recipe``, else the algorithm):

* ``results/training.csv`` and ``results/training.json``: seeds, mean and
  standard deviation of the final benchmark's percent of optimal, its
  interquartile mean with a 95% stratified-bootstrap confidence interval
  (rliable, Agarwal et al. 2021; the JSON also has the mean's interval, and the
  mean regret over seeds with its interval where the runs report regret), median score, the regret of
  keep and of box decisions, upper-bonus and five-of-a-kind rates beside the optimal agent's in the same
  benchmarks, training time per seed;
* ``results/learning_curves.png``: percent of optimal against training steps,
  the mean over seeds with the seeds' range shaded, one panel per ruleset.

Groups already in ``training.json`` whose runs are not under ``results/runs/``
(collected on another machine, or before the run files were kept) stay in the
table as they were: regenerating never drops a row. Each row keeps its seeds'
mean learning curve (``curve``), from which the plot is drawn; rows from before
2026-12-02's eighth session have none.

Needs the ``results`` extra (rliable; matplotlib for the plot).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.protocol import MIN_SEEDS_FOR_INTERVAL

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "results"
_KEPT = ("results.json", "evaluations.csv", "config.yaml")


def collect(run_dirs: list[Path], out: Path, group: str | None = None) -> list[Path]:
    """Copy each run's small result files to ``out/runs/<rules>/<run name>/`` (with ``group``: the label
    these runs are aggregated under, kept in a ``group`` file beside them)."""
    read = []
    for run in run_dirs:  # every run checked before any is copied
        results = run / "results.json"
        if not results.is_file():
            raise SystemExit(f"agents.evaluation.results: error: {run}: no results.json (is the run finished?)")
        data = json.loads(results.read_text())
        if data.get("percent_of_optimal") is None:
            fix = (
                f"benchmark it: python train.py --run-dir {run} --resume bench_games=2000"
                if any((run / "checkpoints").glob("model_*_steps.*"))
                else "it has no checkpoint to resume and benchmark: train it again with bench_games > 0"
            )
            raise SystemExit(
                f"agents.evaluation.results: error: {run}: its results.json has no percent of optimal (trained with "
                f"bench_games=0 or solver=off): nothing to aggregate ({fix})"
            )
        read.append((run, data))
    copied = []
    for run, data in read:
        rules = data["rules"]
        target = out / "runs" / rules / run.name
        target.mkdir(parents=True, exist_ok=True)
        for name in _KEPT:
            if (run / name).is_file():
                shutil.copy2(run / name, target / name)
        if group:
            (target / "group").write_text(group + "\n")
        copied.append(target)
    return copied


#: what the runs of one group share (a group is one recipe's seeds): the budget, the benchmark, the algorithm
#: (and every other config field they all record, but the seed, the label and :data:`HOW_IT_RAN`)
SHARED = ("total_timesteps", "bench_games", "algo")
#: config fields that say how a run ran, not what it trained or how it was measured: seeds of one recipe may differ
#: (those a resumed run may change, agents.training.run.RESUME_MAY_CHANGE, less the budgets and the label)
HOW_IT_RAN = frozenset(
    {
        "device",
        "torch_threads",
        "compile",
        "progress_bar",
        "verbose",
        "runs_dir",
        "checkpoint_freq",
        "eval_freq",
        "save_replay_buffer",
        "bench_workers",
        "bench_agents",
        "vec_env",
        "num_env_runners",
        "ray_address",
    }
)


def recipe_fields(runs: list[dict[str, Any]]) -> list[str]:
    """The config fields beyond :data:`SHARED` that the runs of a group must share: those every run's config
    records (a run of an earlier version may lack a newer field), less the seed, the label and :data:`HOW_IT_RAN`."""
    configs = [set(r["results"].get("config", {})) for r in runs]
    recorded = set.intersection(*configs) if configs else set()
    return sorted(recorded - HOW_IT_RAN - {"seed", "recipe", *SHARED})


def check_additions(run_dirs: list[Path], out: Path, group: str | None, previous: list[dict[str, Any]]) -> None:
    """Refuse, before anything is copied, runs that would make a group that is not one recipe's seeds: a seed twice
    (the same run given twice, or two runs of one seed), runs that differ in :data:`SHARED` (budget, benchmark
    games, algorithm) or another field of their recipe (:func:`recipe_fields`), two runs of one name, or a group that would replace a row of ``training.json`` whose runs
    are not under ``out/runs`` (a published row, recorded elsewhere: regenerating would drop it)."""
    fail = "agents.evaluation.results: error: "
    given: dict[tuple[str, str], Path] = {}
    added = []
    for run in run_dirs:
        try:
            results = json.loads((run / "results.json").read_text())
        except (OSError, ValueError):
            continue  # (collect says what is wrong with it)
        key = (str(results.get("rules")), run.name)
        if key in given:
            raise SystemExit(
                f"{fail}{given[key]} and {run} share the name {run.name} (runs/{key[0]}/{run.name}): rename one"
            )
        given[key] = run
        config = results.get("config", {})
        label = group or config.get("recipe") or results.get("algorithm")
        added.append(
            {"name": run.name, "rules": key[0], "group": label, "seed": config.get("seed"), "results": results}
        )
    here = load_runs(out)
    existing = [r for r in here if (r["rules"], r["name"]) not in given]  # (a run given again replaces its copy)
    present = {(r["rules"], r["group"]) for r in here}
    published = {(r["rules"], r["group"]): r for r in previous if (r["rules"], r["group"]) not in present}
    members: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for entry in existing + added:
        members[(entry["rules"], entry["group"])].append(entry)
    for entry in added:
        where = (entry["rules"], entry["group"])
        if where in published:
            raise SystemExit(
                f"{fail}{entry['name']} would join the group {where[1]!r} of {where[0]}, a row of {out / 'training.json'} "
                f"(seeds {published[where].get('seeds')}) whose runs are not under {out / 'runs'}: aggregating would "
                "replace it; give these runs a --group LABEL of their own"
            )
    for (rules, label), runs in members.items():
        if not any(r in added for r in runs):
            continue
        seeds = [r["seed"] for r in runs]
        twice = sorted({str(s) for s in seeds if seeds.count(s) > 1})
        if twice:
            names = ", ".join(r["name"] for r in runs if str(r["seed"]) in twice)
            raise SystemExit(
                f"{fail}{rules} group {label!r} would hold seed {', '.join(twice)} more than once ({names}): a group is "
                "one recipe's seeds, each once (another --group for a repeat)"
            )
        for field in (*SHARED, *recipe_fields(runs)):
            values = {
                r["name"]: (
                    r["results"].get("config", {}).get(field)
                    if field != "bench_games"
                    else r["results"].get("bench_games")
                )
                for r in runs
            }
            if len(set(map(str, values.values()))) > 1:
                shown = ", ".join(f"{name} {value}" for name, value in values.items())
                raise SystemExit(
                    f"{fail}{rules} group {label!r} would mix runs of different {field} ({shown}): a group is one "
                    "recipe's seeds at one budget; give the others a --group LABEL of their own"
                )


def _shared(results: dict[str, Any], field: str) -> Any:
    """A run's value of one of :data:`SHARED` (``bench_games`` as benchmarked, the others as configured)."""
    return results.get("bench_games") if field == "bench_games" else results.get("config", {}).get(field)


def load_runs(out: Path) -> list[dict[str, Any]]:
    """Every collected run: its results, learning curve and group label."""
    runs = []
    for results_path in sorted((out / "runs").glob("*/*/results.json")):
        results = json.loads(results_path.read_text())
        config = results.get("config", {})
        curve = []
        csv_path = results_path.with_name("evaluations.csv")
        if csv_path.is_file():
            with csv_path.open() as handle:
                curve = [
                    (int(r["timesteps"]), float(r["percent_of_optimal"]), float(r["seconds"]))
                    for r in csv.DictReader(handle)
                    if r.get("percent_of_optimal")
                ]
        label = results_path.with_name("group")
        runs.append(
            {
                "name": results_path.parent.name,
                "rules": results["rules"],
                "group": label.read_text().strip() if label.is_file() else config.get("recipe") or results["algorithm"],
                "seed": config.get("seed"),
                "results": results,
                "curve": curve,
            }
        )
    return runs


def group_seed(rules: str, group: str) -> int:
    """The bootstrap's seed of one (ruleset, group): its intervals never depend on which other groups there are."""
    return zlib.crc32(f"{rules}/{group}".encode())


def aggregate(runs: list[dict[str, Any]], reps: int = 2000) -> list[dict[str, Any]]:
    """One row per (ruleset, group): seeds, mean, std, IQM with 95% bootstrap CI (rliable, each group's
    resamples seeded by :func:`group_seed`)."""
    from rliable import library as rly
    from rliable import metrics

    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for run in runs:
        groups[(run["rules"], run["group"])].append(run)
    rows = []
    for (rules, group), members in sorted(groups.items()):
        members.sort(key=lambda r: (r["seed"] is None, r["seed"]))
        percent = np.array([m["results"]["percent_of_optimal"] for m in members], dtype=np.float64)
        scores = {group: percent[:, None] / 100.0}  # (runs, tasks=1) as fractions of optimal
        # rliable's bootstrap draws from NumPy's global generator (the random_state it passes on is not used):
        # seeded for each group, a group's intervals never depend on the groups aggregated before it
        np.random.seed(group_seed(rules, group))
        point, interval = rly.get_interval_estimates(
            scores, lambda x: np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x)]), reps=reps
        )
        enough = len(members) >= MIN_SEEDS_FOR_INTERVAL  # fewer seeds: no interval, their range says it
        regret = [m["results"].get("regret_mean") for m in members]
        regret_ci = None
        if enough and all(r is not None for r in regret):
            _, regret_interval = rly.get_interval_estimates(
                {group: np.array(regret, dtype=np.float64)[:, None]},
                lambda x: np.array([metrics.aggregate_mean(x)]),
                reps=reps,
            )
            regret_ci = [float(regret_interval[group][0][0]), float(regret_interval[group][1][0])]
        rows.append(
            {
                "rules": rules,
                "group": group,
                "seeds": [m["seed"] for m in members],
                "runs": [m["name"] for m in members],
                "bench_games": [m["results"].get("bench_games") for m in members],
                "percent_of_optimal_mean": float(percent.mean()),
                "percent_of_optimal_std": float(percent.std(ddof=1)) if len(percent) > 1 else 0.0,
                "percent_of_optimal_iqm": float(100 * point[group][0]),
                "percent_of_optimal_iqm_ci95": _percent_interval(interval, group, 0) if enough else None,
                "percent_of_optimal_mean_ci95": _percent_interval(interval, group, 1) if enough else None,
                "regret_mean": _mean_or_none(regret),
                "regret_mean_ci95": regret_ci,
                "per_seed_percent": [round(float(p), 3) for p in percent],
                "mean_score": float(np.mean([m["results"]["mean"] for m in members])),
                "median_score": float(np.mean([m["results"]["median"] for m in members])),
                "regret_keep_mean": _mean_or_none([m["results"].get("regret_keep_mean") for m in members]),
                "regret_box_mean": _mean_or_none([m["results"].get("regret_box_mean") for m in members]),
                "upper_bonus_rate": _mean_or_none([m["results"].get("upper_bonus_rate") for m in members]),
                "five_of_a_kind_rate": _mean_or_none([m["results"].get("five_of_a_kind_rate") for m in members]),
                # the optimal agent's rates in the same benchmarks (where it played), to read the two above against
                "optimal_upper_bonus_rate": _mean_or_none([_optimal(m, "upper_bonus_rate") for m in members]),
                "optimal_five_of_a_kind_rate": _mean_or_none([_optimal(m, "five_of_a_kind_rate") for m in members]),
                "timesteps": [m["results"]["timesteps"] for m in members],
                "train_minutes": [round(m["results"]["train_seconds"] / 60, 1) for m in members],
                "curve": mean_curve([m["curve"] for m in members if m["curve"]]),
            }
        )
    return rows


def mean_curve(curves: list[list[tuple[int, float, float]]]) -> dict[str, Any] | None:
    """The seeds' learning curves at the steps they share: ``timesteps`` and the ``mean``, ``min`` and ``max``
    percent of optimal over ``seeds`` curves (None without a shared step). Kept in the row, so that the plot
    can be drawn again where the runs themselves are gone."""
    steps = sorted(set.intersection(*(set(s for s, _, _ in c) for c in curves))) if curves else []
    if not steps:
        return None
    values = np.array([[dict((s, p) for s, p, _ in c)[step] for step in steps] for c in curves])
    return {
        "seeds": len(curves),
        "timesteps": steps,
        "mean": values.mean(axis=0).round(4).tolist(),
        "min": values.min(axis=0).round(4).tolist(),
        "max": values.max(axis=0).round(4).tolist(),
    }


def previous_rows(out: Path) -> list[dict[str, Any]]:
    """The rows of ``out/training.json`` (none where it does not exist yet); a one-line error where it does not
    read as a results table, rather than writing over it."""
    path = out / "training.json"
    if not path.is_file():
        return []
    try:
        rows = json.loads(path.read_text())
        if not isinstance(rows, list) or not all(isinstance(r, dict) and {"rules", "group"} <= r.keys() for r in rows):
            raise ValueError("not a list of rows with rules and group")
    except (ValueError, OSError) as error:
        raise SystemExit(
            f"agents.evaluation.results: error: {path} is not a results table ({error}); "
            "move it away to rebuild the table from the runs alone"
        ) from None
    return rows


def _optimal(run: dict[str, Any], key: str) -> float | None:
    return ((run["results"].get("agents") or {}).get("optimal") or {}).get(key)


def _mean_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Percent of optimal against steps: mean over seeds, the seeds' range shaded, a panel per ruleset (each
    row's ``curve``, :func:`mean_curve`; rows without one are left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rulesets = sorted({r["rules"] for r in rows if r.get("curve")}) or sorted({r["rules"] for r in rows})
    fig, axes = plt.subplots(1, len(rulesets), figsize=(5 * len(rulesets), 3.8), squeeze=False)
    for ax, rules in zip(axes[0], rulesets):
        for row in sorted((r for r in rows if r["rules"] == rules and r.get("curve")), key=lambda r: r["group"]):
            curve = row["curve"]
            x = np.array(curve["timesteps"]) / 1e6
            (line,) = ax.plot(x, curve["mean"], label=f"{row['group']} ({curve['seeds']} seeds)")
            ax.fill_between(x, curve["min"], curve["max"], color=line.get_color(), alpha=0.25)
        ax.set_title(rules)
        ax.set_xlabel("env steps (millions)")
        ax.set_ylabel("% of optimal expected score")
        ax.grid(alpha=0.3)
        if ax.get_lines():  # (a ruleset whose runs have no curve: an empty panel, no legend)
            ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _percent_interval(interval: dict, group: str, column: int) -> list[float]:
    """One statistic's 95% interval (in percent) from rliable's fractions."""
    return [float(100 * interval[group][0][column]), float(100 * interval[group][1][column])]


def interval_text(row: dict[str, Any], key: str = "percent_of_optimal_iqm_ci95") -> str:
    """A row's interval as a table shows it: ``95% CI low-high``, or below :data:`MIN_SEEDS_FOR_INTERVAL`
    seeds the seeds' range, saying so."""
    values = row.get("per_seed_percent") or []
    if row.get(key) is not None and len(row.get("seeds") or values) >= MIN_SEEDS_FOR_INTERVAL:
        low, high = row[key]
        return f"95% CI {low:.2f}-{high:.2f}"
    spread = f"range {min(values):.2f}-{max(values):.2f}, " if values else ""
    return f"{spread}{len(values)} seed{'s' if len(values) != 1 else ''}: too few for an interval"


def write(rows: list[dict[str, Any]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "training.json").write_text(json.dumps(rows, indent=2) + "\n")
    columns = [
        "rules",
        "group",
        "seeds",
        "percent_of_optimal_mean",
        "percent_of_optimal_std",
        "percent_of_optimal_iqm",
        "percent_of_optimal_iqm_ci95",
        "median_score",
        "regret_keep_mean",
        "regret_box_mean",
        "upper_bonus_rate",
        "optimal_upper_bonus_rate",
        "five_of_a_kind_rate",
        "optimal_five_of_a_kind_rate",
        "timesteps",
        "train_minutes",
    ]
    with (out / "training.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(
                [
                    json.dumps(row[c])
                    if isinstance(row[c], list)
                    else (f"{row[c]:.3f}" if isinstance(row[c], float) else row[c])
                    for c in columns
                ]
            )


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(prog="python -m agents.evaluation.results", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="run folders to copy into OUT/runs first")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"results folder (default {DEFAULT_OUT}, the repository's: the Results page's table; your own "
        "experiments go in a folder of their own)",
    )
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument(
        "--group",
        help="the label the given runs are aggregated under (default: their config's recipe, else the algorithm)",
    )
    args = parser.parse_args(argv)
    if args.group is not None and (not args.group.strip() or "/" in args.group or "\n" in args.group):
        parser.error(f"--group must be a non-empty one-line label without '/', got {args.group!r}")
    previous = previous_rows(args.out)  # read first: a table that does not read stops here, before any copy
    if args.runs:
        check_additions(args.runs, args.out, args.group, previous)  # before any copy
    collect(args.runs, args.out, args.group)
    runs = load_runs(args.out)
    if not runs and not previous:
        raise SystemExit(f"agents.evaluation.results: error: no runs under {args.out / 'runs'}")
    rows = aggregate(runs, reps=args.reps) if runs else []
    present = {(r["rules"], r["group"]) for r in rows}
    kept = [r for r in previous if (r["rules"], r["group"]) not in present]
    if kept:  # groups whose runs are not here (another machine's, or from before the runs were kept): as they were
        print(
            f"kept {len(kept)} group(s) of {args.out / 'training.json'} whose runs are not under "
            f"{args.out / 'runs'}, as they were"
        )
    rows = sorted(rows + kept, key=lambda r: (r["rules"], r["group"]))
    write(rows, args.out)
    plot(rows, args.out / "learning_curves.png")
    for row in rows:
        print(
            f"{row['rules']:>13} {row['group']:<22} {len(row['seeds'])} seeds: "
            f"{row['percent_of_optimal_mean']:6.2f}% ± {row['percent_of_optimal_std']:.2f} "
            f"(IQM {row['percent_of_optimal_iqm']:.2f}%, {interval_text(row)})"
        )
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
