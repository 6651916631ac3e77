"""Regenerate the benchmark's tables, plots and ``docs/leaderboard.md`` from ``results/benchmark/``.

    python benchmarks/leaderboard.py                # from results/benchmark/ alone
    python benchmarks/leaderboard.py --reference    # first (re)evaluate the non-learned rows (random, greedy,
                                                    # optimal, the shipped policies) into reference.json

Reads ``runs.json`` (one row per training run, benchmarks/run_baselines.py), ``reference.json`` (agents
evaluated without training) and the learning curves ``curves/<suite>/<ruleset>/s<seed>.csv`` (copied
from the run folders under ``runs-benchmark/`` when they are there). Writes:

* ``aggregate.csv`` / ``aggregate.json``: per suite and ruleset, and per suite across its rulesets, the
  interquartile mean (IQM) of the seeds' luck-free percents with a 95% stratified-bootstrap interval
  (rliable; strata: rulesets; the bootstrap is seeded, so the same rows give the same intervals), the
  mean, the seeds' min and max and the number of runs;
* ``probability_of_improvement.json``: rliable's probability of improvement between suites of the same
  track and budget;
* ``docs/img/benchmark/performance_profiles.png`` (one panel per budget; luck-free percent: the mean over
  rulesets of each one's fraction of runs above tau) and ``docs/img/benchmark/sample_efficiency.png``
  (periodic evaluations' percent of optimal against steps, mean over seeds; one panel per ruleset), when
  matplotlib is there: beside the page (``--out``), which shows them;
* ``running/<suite>/<ruleset>/s<seed>.csv``: the periodic evaluations so far of the runs still training;
* ``docs/leaderboard.md``, with the two-player track: every head-to-head match saved in
  ``results/winning/match_*.json`` (``benchmarks/run_matches.py``, ``dice-poker match``).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import sys
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.evaluation.protocol import EVAL_GAMES, MIN_SEEDS_FOR_INTERVAL  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: the checkout whose results, runs and pages are read and written: $BENCH_ROOT (run_baselines.py's, where a snapshot's
#: code runs for another checkout) or this one
ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parents[1]).resolve()
RESULTS = ROOT / "results" / "benchmark"
RULESETS = ("yahtzee", "yacht", "yatzy", "dice_poker", "school_poker")
#: a suite named so is recipe development on the development seeds (run_baselines.py's probes), not a baseline
PROBE_PREFIX = "probe_"


def is_probe(suite: str) -> bool:
    """Whether ``suite`` is a probe: shown apart from the baselines, never in their comparisons."""
    return suite.startswith(PROBE_PREFIX)


#: the slowest last (random plays game by game through the single env)
REFERENCE_AGENTS = ("greedy", "agents.players.heuristic:LookaheadAgent", "trained", "optimal", "random")

#: published Yahtzee results, each with where its figure and its setting were read
PUBLISHED = [
    {
        "who": "Pape 2025 (RL agent, arXiv:2601.00007)",
        "figure": "median 241.78 over 100,000 games; upper bonus in 24.9% of games; Yahtzee in 34.1%",
        "statistic": "median",
        "inputs / prior knowledge / budget": "A2C (best of REINFORCE, A2C, PPO), self-play, a multi-headed network "
        "with a shared trunk; feature and action encodings ablated (track depends on the encoding: see the "
        "paper); a fixed training budget stated in the paper",
        "converted": "no sound conversion of a median to a percent of the optimal mean; "
        "the optimal median on the evaluation set is 248 (the paper's 'within 5.0%' compares its median "
        "with the optimal mean 254.59)",
        "source": "the paper's abstract, arxiv.org/abs/2601.00007",
    },
    {
        "who": "Yahtzotron 2021 (RL agent, github.com/dionhaefner/yahtzotron)",
        "figure": "average score around 240 (Yahtzee and Yatzy), 'about 5% below perfect play'",
        "statistic": "mean (rounded)",
        "inputs / prior knowledge / budget": "A2C self-play, 4 players a game; input: rolls left, dice counts, "
        "own scorecard; first 20,000 games imitating a greedy agent built on a table of each keep's expected "
        "box points (rules knowledge: the `rules` track), then 100,000 games (about 15.6M decisions)",
        "converted": "about 94.3% of optimal (240 / 254.59; the mean score over the optimal expected score "
        "estimates the luck-free percent)",
        "source": "the project's README and training code (yahtzotron/cli.py, training.py, agent.py)",
    },
    {
        "who": "Glenn 2006 (hand-written heuristic)",
        "figure": "244.87",
        "statistic": "score as cited in issue 28 (a mean, if so: 96.18% of 254.59)",
        "inputs / prior knowledge / budget": "hand-written strategy (rules knowledge), no training",
        "converted": "96.18% of the optimal expected score if 244.87 is a mean",
        "source": "issue 28",
    },
]


#: what a head-to-head match's JSON holds (``dice-poker match --json``); other files in results/winning/ are skipped
MATCH_KEYS = ("rules", "agents", "win_rate", "win_rate_ci95", "win_rate_seat", "games", "mean_score", "command")


def load_matches(folder: Path) -> list[dict]:
    """The head-to-head matches saved in ``folder`` (``match_<rules>_<A>_vs_<B>.json``), by ruleset then agents."""
    matches = []
    for path in sorted(folder.glob("match_*_vs_*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and all(key in data for key in MATCH_KEYS):
            matches.append(data)
        else:
            print(f"leaderboard: {path.name} is not a dice-poker match result: skipped", file=sys.stderr)
    return sorted(matches, key=lambda m: (RULESETS.index(m["rules"]) if m["rules"] in RULESETS else 99, m["agents"]))


def two_player_md(matches: list[dict]) -> list[str]:
    """The two-player track's section of the leaderboard (empty without matches)."""
    if not matches:
        return []
    lines = [
        "",
        "## Two-player track: head to head",
        "",
        'Duplicate two-player games (`dice-poker match`, docs/winning.md "Head to head"): every deal is played',
        "twice with the seats swapped, both seats on the same dice; A's win rate is (wins + ties/2) / games with",
        "a 95% normal interval over the deals (a deal's two games are one observation). From",
        "`results/winning/match_*.json` (`python benchmarks/run_matches.py`); each file holds its command.",
        "",
        "| ruleset | A | B | A's win rate | 95% CI | games | A first / second | mean scores A, B | command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in matches:
        low, high = m["win_rate_ci95"]
        first, second = m["win_rate_seat"]
        score_a, score_b = m["mean_score"]
        lines.append(
            f"| {m['rules']} | {m['agents'][0]} | {m['agents'][1]} | {100 * m['win_rate']:.2f}% | "
            f"{100 * low:.2f} - {100 * high:.2f} | {m['games']:,} | {100 * first:.1f}% / {100 * second:.1f}% | "
            f"{score_a:.2f}, {score_b:.2f} | `{m['command']}` |"
        )
    return lines


def load_rows() -> list[dict]:
    """Every recorded baseline run (``results/benchmark/runs.json``; none before the first)."""
    path = RESULTS / "runs.json"
    return json.loads(path.read_text()) if path.exists() else []


def collect_curves() -> int:
    """Copy each recorded run's ``evaluations.csv`` from ``runs-benchmark/`` into ``results/benchmark/curves/``,
    and the curve so far of each run still training into ``results/benchmark/running/`` (a snapshot that the
    next regeneration replaces; not in the plots; left as it is where this checkout has no ``runs-benchmark/``)."""
    copied = 0
    recorded = set()
    for row in load_rows():
        recorded.add((row["suite"], row["ruleset"], f"s{row['seed']}"))
        source = ROOT / "runs-benchmark" / row["suite"] / row["ruleset"] / f"s{row['seed']}" / "evaluations.csv"
        target = RESULTS / "curves" / row["suite"] / row["ruleset"] / f"s{row['seed']}.csv"
        if source.exists() and (not target.exists() or source.stat().st_mtime > target.stat().st_mtime):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied += 1
    if not (ROOT / "runs-benchmark").is_dir():  # a checkout without the runs: the snapshot stays as committed
        return copied
    shutil.rmtree(RESULTS / "running", ignore_errors=True)
    for source in sorted((ROOT / "runs-benchmark").glob("*/*/s*/evaluations.csv")):
        suite, ruleset, seed = source.parts[-4:-1]
        if (suite, ruleset, seed) not in recorded:
            target = RESULTS / "running" / suite / ruleset / f"{seed}.csv"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return copied


def iqm_ci(matrix: np.ndarray, reps: int) -> tuple[float, float | None, float | None]:
    """IQM of a ``(runs, tasks)`` matrix and its 95% stratified-bootstrap interval (rliable); no interval
    (``None``) from fewer than :data:`MIN_SEEDS_FOR_INTERVAL` runs per task, whose bootstrap interval would
    hold the truth far less often than 95% (a single run has nothing to resample at all)."""
    from rliable import library as rly
    from rliable import metrics

    if len(matrix) < MIN_SEEDS_FOR_INTERVAL:
        return float(metrics.aggregate_iqm(matrix)), None, None
    np.random.seed(0)  # rliable draws from NumPy's global generator: the same rows give the same interval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point, interval = rly.get_interval_estimates({"x": matrix}, metrics.aggregate_iqm, reps=reps)
    low, high = np.asarray(interval["x"]).ravel()
    return float(point["x"]), float(low), float(high)


def suite_matrix(rows: list[dict], rulesets: list[str]) -> np.ndarray:
    """``(seeds, rulesets)`` luck-free percents over the training seeds every one of ``rulesets`` has: the
    stratified bootstrap needs as many runs per task, and a ruleset further along contributes the same
    seeds as the others, never its lowest or highest few."""
    by: dict[str, dict[int, float]] = defaultdict(dict)
    for row in rows:
        by[row["ruleset"]][row["seed"]] = row["luck_free_percent"]
    seeds = sorted(set.intersection(*(set(by[r]) for r in rulesets)))
    return np.array([[by[r][s] for r in rulesets] for s in seeds], dtype=np.float64).reshape(len(seeds), len(rulesets))


def aggregate(rows: list[dict], reps: int) -> list[dict]:
    """One row per suite and ruleset: the IQM over its seeds with a bootstrap 95% interval (``reps`` resamples),
    the mean, the extremes, the median score, the runs, with the suite's track, algorithm and budget."""
    groups = defaultdict(list)
    for row in rows:
        groups[row["suite"]].append(row)
    out = []
    for suite, runs in sorted(groups.items()):
        first = runs[0]
        rulesets = [r for r in RULESETS if any(x["ruleset"] == r for x in runs)]
        base = {
            "suite": suite,
            "track": first["track"],
            "algorithm": first["algorithm"],
            "budget": first["budget"],
            "probe": is_probe(suite),
        }
        for ruleset in rulesets:
            values = np.array([x["luck_free_percent"] for x in runs if x["ruleset"] == ruleset])
            point, low, high = iqm_ci(values[:, None], reps)
            medians = [x["median"] for x in runs if x["ruleset"] == ruleset]
            out.append(
                {
                    **base,
                    "ruleset": ruleset,
                    "runs": len(values),
                    "iqm": point,
                    "iqm_ci95_low": low,
                    "iqm_ci95_high": high,
                    "mean": float(values.mean()),
                    "min": float(values.min()),
                    "max": float(values.max()),
                    "median_score_of_seeds": float(np.median(medians)),
                }
            )
        matrix = suite_matrix(runs, rulesets)
        if len(rulesets) > 1 and len(matrix):
            point, low, high = iqm_ci(matrix, reps)
            out.append(
                {
                    **base,
                    "ruleset": "all (" + ", ".join(rulesets) + ")",
                    "runs": int(matrix.size),
                    "iqm": point,
                    "iqm_ci95_low": low,
                    "iqm_ci95_high": high,
                    "mean": float(matrix.mean()),
                    "min": float(matrix.min()),
                    "max": float(matrix.max()),
                    "median_score_of_seeds": None,
                }
            )
    return out


def improvements(rows: list[dict], reps: int) -> list[dict]:
    """rliable's probability of improvement of suite X over Y (same track and budget, shared rulesets)."""
    groups = defaultdict(list)
    for row in rows:
        groups[row["suite"]].append(row)
    out = []
    names = sorted(groups)
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            a, b = groups[x][0], groups[y][0]
            if (a["track"], a["budget"]) != (b["track"], b["budget"]):
                continue
            shared = [
                r
                for r in RULESETS
                if any(z["ruleset"] == r for z in groups[x]) and any(z["ruleset"] == r for z in groups[y])
            ]
            if not shared:
                continue
            mx, my = suite_matrix(groups[x], shared), suite_matrix(groups[y], shared)
            if min(len(mx), len(my)) < MIN_SEEDS_FOR_INTERVAL:  # a suite still short of seeds: no comparison yet
                continue
            if same_runs(groups[x], groups[y]):  # one recipe under two names (an ablation step that is a suite)
                continue
            p, low, high = probability_of_improvement(mx, my, reps)
            out.append({"x": x, "y": y, "rulesets": shared, "p_x_better": p, "ci95": [low, high]})
    return out


def same_runs(x: list[dict], y: list[dict]) -> bool:
    """Whether two suites' runs on the seeds and rulesets they share gave the same results, to the last bit:
    one recipe under two names, whose probability of improvement would only compare seed counts."""
    a = {(r["ruleset"], r["seed"]): r["luck_free_percent"] for r in x}
    b = {(r["ruleset"], r["seed"]): r["luck_free_percent"] for r in y}
    shared = set(a) & set(b)
    return bool(shared) and all(a[key] == b[key] for key in shared)


def probability_of_improvement(mx: np.ndarray, my: np.ndarray, reps: int) -> tuple[float, float, float]:
    """rliable's probability that a run of X beats a run of Y, averaged over the tasks (the columns of the
    ``(runs, tasks)`` matrices ``mx`` and ``my``), with its 95% stratified-bootstrap interval (seeded)."""
    from rliable import library as rly
    from rliable import metrics

    np.random.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point, interval = rly.get_interval_estimates({"p": (mx, my)}, metrics.probability_of_improvement, reps=reps)
    low, high = np.asarray(interval["p"]).ravel()
    return float(point["p"]), float(low), float(high)


def reference_command(ruleset: str, agent: str, games: int) -> str:
    """The command that gives a reference row (``dice-poker evaluate``'s JSON is the row)."""
    return (
        f"dice-poker evaluate {ruleset} --agent {agent}"
        + ("" if games == EVAL_GAMES else f" --games {games}")
        + " --json"
    )


def reference(games: int, path: Path) -> list[dict]:
    """Evaluate the non-learned agents (and the shipped policies) on every ruleset's evaluation set into
    ``path`` (JSON list), row by row, each with its ``command``; rows already there (same ruleset, agent,
    games) are kept. A kept row recorded without its command is evaluated again: where the luck-free percent
    comes out the same (to 9 significant digits) it gains its command and this machine's ``hardware`` (the
    row reproduced), else it is reported and left as it was."""
    from agents.evaluation.protocol import evaluate

    rows = json.loads(path.read_text()) if path.exists() else []
    done = {(r["rules"], r["agent"], r["games"]): r for r in rows}
    for agent in REFERENCE_AGENTS:
        for ruleset in RULESETS:
            row = done.get((ruleset, agent, games))
            if row is not None and "command" in row:
                continue
            try:
                result = evaluate(ruleset, agent, games=games)
            except ValueError as error:  # e.g. no shipped policy for a ruleset
                print(f"leaderboard: {ruleset} {agent}: skipped ({error})", file=sys.stderr)
                continue
            command = reference_command(ruleset, agent, games)
            if row is None:
                rows.append({**result, "command": command})
            elif math.isclose(result["luck_free_percent"], row["luck_free_percent"], rel_tol=1e-9, abs_tol=1e-9):
                # (the same play: the regret's floats, summed from the solver's values, may differ in their last
                # digits where the solution was solved on another CPU)
                row.update(command=command, hardware=result["hardware"])
                row.setdefault("agent_sha256", None)
                row["agent_sha256"] = row["agent_sha256"] or result["agent_sha256"]
            else:
                print(
                    f"leaderboard: {ruleset} {agent}: gives {result['luck_free_percent']!r} here, not the recorded "
                    f"{row['luck_free_percent']!r} (to 9 digits); left as it was",
                    file=sys.stderr,
                )
                continue
            path.write_text(json.dumps(rows, indent=1) + "\n")
            print(f"leaderboard: {ruleset} {agent}: {result['luck_free_percent']:.2f}%", file=sys.stderr, flush=True)
    return rows


def performance_profile(runs: list[dict], taus: np.ndarray) -> np.ndarray:
    """rliable's performance profile: per ruleset the fraction of its runs whose luck-free percent is above
    each tau, averaged over the rulesets (a ruleset further along in its seeds does not weigh more)."""
    per_ruleset: dict[str, list[float]] = defaultdict(list)
    for x in runs:
        per_ruleset[x["ruleset"]].append(x["luck_free_percent"])
    return np.mean([(np.array(v)[None, :] > taus[:, None]).mean(axis=1) for v in per_ruleset.values()], axis=0)


def plots(rows: list[dict], folder: Path) -> list[Path]:
    """Draw the performance profiles and the sample-efficiency curves into ``folder``; the files written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        print("leaderboard: no plots (matplotlib is not installed)", file=sys.stderr)
        return []

    def save(fig: Figure, path: Path, dpi: int) -> Path:
        fig.tight_layout()
        fig.savefig(path, dpi=dpi, bbox_inches="tight")  # with the legends below the panels
        plt.close(fig)
        return path

    written = []
    groups = defaultdict(list)
    for row in rows:
        groups[row["suite"]].append(row)
    curves = sorted(
        path
        for path in ((RESULTS / "curves").glob("*/*/s*.csv") if (RESULTS / "curves").exists() else [])
        if not is_probe(path.parts[-3]) and groups.get(path.parts[-3], [{}])[0].get("budget") != 0
    )
    # a suite's colour is its recipe's (the same at every budget), its line style its budget, in every plot
    families = sorted({family(suite) for suite in set(groups) | {path.parts[-3] for path in curves}})
    palette = plt.get_cmap("tab20" if len(families) > 10 else "tab10")  # an integer picks one colour

    def style(suite: str) -> dict:
        budget = int(groups[suite][0].get("budget") or 0) if suite in groups else 0
        return {
            "color": palette(families.index(family(suite)) % palette.N),
            "linestyle": BUDGET_STYLES.get(budget, "-"),
        }

    if groups:
        budgets = sorted({runs[0]["budget"] for runs in groups.values()}, key=lambda b: (b == 0, b))
        columns = min(2, len(budgets))
        rows_of_panels = -(-len(budgets) // columns)
        fig, axes = plt.subplots(rows_of_panels, columns, figsize=(6 * columns, 5.2 * rows_of_panels), squeeze=False)
        for ax in list(axes.ravel())[len(budgets) :]:
            ax.axis("off")
        for ax, budget in zip(axes.ravel(), budgets):
            chosen = {suite: runs for suite, runs in sorted(groups.items()) if runs[0]["budget"] == budget}
            profile_panel(ax, chosen, f"{fmt_budget(budget)} env steps" if budget else "trained on a dataset", style)
        fig.suptitle("Performance profiles")
        written.append(save(fig, folder / "performance_profiles.png", dpi=110))
    if curves:
        by = defaultdict(list)
        for path in curves:
            with path.open() as handle:
                data = list(csv.DictReader(handle))
            if data:
                steps = np.array([float(d["timesteps"]) for d in data])
                value = np.array([float(d["percent_of_optimal"]) for d in data])
                by[(path.parts[-3], path.parts[-2])].append((steps, value))
        rulesets = sorted({r for _, r in by}, key=lambda r: RULESETS.index(r) if r in RULESETS else 99)
        columns = min(3, len(rulesets) + 1)
        rows_of_panels = -(-(len(rulesets) + 1) // columns)  # one panel more: the legend
        fig, axes = plt.subplots(rows_of_panels, columns, figsize=(4.2 * columns, 3.4 * rows_of_panels), squeeze=False)
        panels = list(axes.ravel())
        legend: dict[str, object] = {}
        for ax, ruleset in zip(panels, rulesets):
            for (suite, r), series in sorted(by.items()):
                if r != ruleset:
                    continue
                n = min(len(s) for s, _ in series)
                mean = np.mean([v[:n] for _, v in series], axis=0)
                (line,) = ax.plot(series[0][0][:n], mean, **style(suite))
                legend.setdefault(suite, line)
            ax.set_title(ruleset)
            ax.set_xscale("log")
            ax.set_xlabel("env steps")
            ax.set_ylabel("% of optimal (periodic evaluation)")
        for ax in panels[len(rulesets) :]:
            ax.axis("off")
        panels[len(rulesets)].legend(
            list(legend.values()),
            list(legend),
            loc="center",
            fontsize=8,
            title="mean over the seeds' curves",
            title_fontsize=8,
        )
        written.append(save(fig, folder / "sample_efficiency.png", dpi=110))
    return written


def profile_panel(ax: Axes, suites: dict[str, list[dict]], title: str, style: Callable[[str], dict]) -> None:
    """One panel of performance profiles (matplotlib ``ax``): each suite's curve, labelled with its runs and
    rulesets and drawn in ``style(suite)``; the x axis from 5 points below the lowest run; the legend below."""
    taus = np.linspace(0, 100, 1001)  # 0.1-point steps: the 100M runs lie within a few points
    for suite, runs in suites.items():
        label = f"{suite} ({len(runs)} runs, {len({x['ruleset'] for x in runs})} rulesets)"
        ax.plot(taus, performance_profile(runs, taus), label=label, **style(suite))
    low = min(x["luck_free_percent"] for runs in suites.values() for x in runs)
    ax.set_xlim(max(0.0, low - 5), 100)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("luck-free percent of optimal (tau)")
    ax.set_ylabel("fraction of runs > tau (mean over rulesets)")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)


#: line styles of the budgets in the plots (a recipe keeps its colour at every budget)
BUDGET_STYLES = {1_000_000: ":", 10_000_000: "--", 100_000_000: "-"}


def family(suite: str) -> str:
    """A suite's recipe: its name without the budget (``raw_ppo_10m`` -> ``raw_ppo``)."""
    for suffix in ("_100m_yahtzee", "_100m", "_10m", "_1m"):
        if suite.endswith(suffix):
            return suite[: -len(suffix)]
    return suite


def fmt_budget(budget: int) -> str:
    return "dataset" if not budget else f"{budget // 1_000_000}M"


#: per-run fields that split the regret and count the two long-horizon goals (``run_baselines.py``)
POINTS_FIELDS = ("regret_keep_mean", "regret_box_mean", "upper_bonus_rate", "five_of_a_kind_rate")


def points_md(rows: list[dict], refs: list[dict]) -> list[str]:
    """'Where the points go': per suite and ruleset, the seeds' mean regret of keep and of box decisions
    (points per game) and their rates of the upper bonus and of five of a kind, beside the same figures of
    the agents without training."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    unsplit: Counter[str] = Counter()  # runs recorded before the split's fields, by suite
    for r in rows:
        if all(r.get(key) is not None for key in POINTS_FIELDS if key != "upper_bonus_rate"):  # yacht: no bonus
            groups[(r["ruleset"], r["budget"], r["suite"])].append(r)
        else:
            unsplit[r["suite"]] += 1
    if not groups:
        return []

    def rate(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    lines = [
        "",
        "## Where the points go",
        "",
        "Regret per game (points below the optimal expected score, luck removed) split into keep decisions and",
        "box decisions, and the share of games with the upper bonus and with five of a kind (mean over the",
        "recorded seeds; the agents without training below each ruleset's runs). A keep regret far above the box",
        "regret says the agent loses its points choosing dice, not boxes.",
        *(
            [
                "Runs recorded before these fields, whose policy files were not kept, are not in it ("
                + ", ".join(f"{suite}: {count}" for suite, count in sorted(unsplit.items()))
                + "): `python benchmarks/run_baselines.py --backfill --retrain` trains them again, checks that "
                "each reproduces its recorded percent and fills them in.",
            ]
            if unsplit
            else []
        ),
        "",
        "| ruleset | agent | runs | keep regret | box regret | upper bonus | five of a kind |",
        "|---|---|---|---|---|---|---|",
    ]
    by_ruleset: dict[str, list[str]] = defaultdict(list)
    for (ruleset, _budget, suite), runs in sorted(groups.items()):
        means = {
            key: None if any(r.get(key) is None for r in runs) else float(np.mean([r[key] for r in runs]))
            for key in POINTS_FIELDS
        }
        by_ruleset[ruleset].append(
            f"| {ruleset} | {suite} | {len(runs)} | {means['regret_keep_mean']:.2f} | "
            f"{means['regret_box_mean']:.2f} | {rate(means['upper_bonus_rate'])} | "
            f"{rate(means['five_of_a_kind_rate'])} |"
        )
    for ruleset in sorted(by_ruleset, key=lambda name: RULESETS.index(name) if name in RULESETS else 99):
        lines += by_ruleset[ruleset]
        for r in refs:
            if r["rules"] == ruleset and r["agent"] != "random" and r.get("regret_keep_mean") is not None:
                lines.append(
                    f"| {ruleset} | {r['agent']} | - | {r['regret_keep_mean']:.2f} | {r['regret_box_mean']:.2f} | "
                    f"{rate(r.get('upper_bonus_rate'))} | {rate(r.get('five_of_a_kind_rate'))} |"
                )
    return lines


def full_set(refs: list[dict]) -> list[dict]:
    """The reference rows played on the whole evaluation set: rows of fewer games (``--reference --games N``, a
    quick check) stay in ``reference.json`` but are kept off the pages, where they would stand beside the full
    set's rows of the same agent, with other numbers and nothing to tell them apart (said on stderr)."""
    partial = [row for row in refs if row.get("games") != EVAL_GAMES]
    if partial:
        print(
            f"leaderboard: {len(partial)} reference row{'s' * (len(partial) != 1)} of fewer than {EVAL_GAMES:,} games "
            "(--reference --games) kept off the page",
            file=sys.stderr,
        )
    return [row for row in refs if row.get("games") == EVAL_GAMES]


def ci_md(low: float | None, high: float | None) -> str:
    """An interval for a table, ``-`` where there is none (fewer runs than ``MIN_SEEDS_FOR_INTERVAL``)."""
    return "-" if low is None or high is None else f"{low:.2f} - {high:.2f}"


def leaderboard_md(
    agg: list[dict],
    rows: list[dict],
    refs: list[dict],
    poi: list[dict],
    matches: list[dict] | None = None,
    figures: list[str] | None = None,
) -> str:
    """The leaderboard page; ``figures``: the plots' paths relative to the page, shown after the first table."""
    lines = [
        "# Leaderboard",
        "",
        "Generated by `python benchmarks/leaderboard.py` from `results/benchmark/` (do not edit by hand);",
        "the protocol is [benchmark.md](benchmark.md). Metric: the luck-free percent of optimal on the ruleset's",
        "fixed evaluation set (10,000 games). The runs trained on shared 2-vCPU machines, some on a borrowed",
        "16-vCPU one (each row's `hardware` in `results/benchmark/runs.csv`, with its command). The same",
        "command redraws the plots below. Your own agent's numbers beside these: `benchmarks/compare.py`",
        "([reporting a result](benchmark.md#reporting-a-result)).",
        "",
        "## Trained agents: IQM over seeds (95% stratified-bootstrap CI)",
        "",
    ]

    def table(rows: list[dict]) -> list[str]:
        out = [
            "| track | suite | algorithm | budget | ruleset | runs | IQM | 95% CI | mean | min - max |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for a in sorted(rows, key=lambda a: (a["track"], a["budget"], a["suite"], a["ruleset"])):
            out.append(
                f"| {a['track']} | {a['suite']} | {a['algorithm']} | {fmt_budget(a['budget'])} | {a['ruleset']} | "
                f"{a['runs']} | {a['iqm']:.2f} | {ci_md(a['iqm_ci95_low'], a['iqm_ci95_high'])} | "
                f"{a['mean']:.2f} | {a['min']:.2f} - {a['max']:.2f} |"
            )
        return out

    probes = [a for a in agg if a.get("probe")]
    agg = [a for a in agg if not a.get("probe")]
    if agg:
        lines += table(agg)
        lines += [
            "",
            "Fewer runs than the protocol asks for (10 seeds at 1M and 10M, 5 at 100M) means the suite is still",
            "running, or runs fewer seeds by design (the knowledge ablation, raw PPO at 100M beyond Yahtzee):",
            "`python benchmarks/run_baselines.py --list` shows each suite's runs and what is left. Across rulesets, only the",
            "seeds every ruleset has are used (the stratified bootstrap needs as many runs per ruleset). Fewer",
            f"than {MIN_SEEDS_FOR_INTERVAL} runs per ruleset have no interval (-), only their range: a 95% bootstrap "
            "interval of 2, 3",
            "or 4 seeds holds the true value in about 51%, 74% and 87% of cases (`python",
            "benchmarks/interval_coverage.py`). The intervals are over training seeds on this evaluation set:",
            "its own luck (each run's `luck_free_percent_ci95` in runs.csv, 0.02 to 0.4 points, the less the",
            "better the agent) is common to every seed and not in them.",
        ]
    else:
        lines.append("No run recorded yet.")
    captions = {
        "performance_profiles.png": "Performance profiles: for each luck-free percent tau, the fraction of a "
        "suite's runs above it (mean over rulesets), one panel per budget.",
        "sample_efficiency.png": "Sample efficiency: the periodic evaluations' percent of optimal (mean score "
        "over the optimal expected score in 500-2,000 games of each run's own, not the evaluation set) against "
        "env steps, the mean over the seeds recorded.",
    }
    for figure in figures or []:
        caption = captions.get(Path(figure).name, Path(figure).stem.replace("_", " "))
        lines += ["", f"![{caption.split(':')[0]}]({figure})", "", caption]
    if probes:
        lines += [
            "",
            "## Recipe development probes (not baselines)",
            "",
            "A baseline's recipe with one change, trained on the development seeds (0 and 1), never on the",
            "baselines' seeds: what was tried toward a target (benchmark-target.md), kept out of the comparisons",
            "above, the probability of improvement and the plots.",
            "",
            *table(probes),
        ]
    if poi:
        lines += [
            "",
            "## Probability of improvement (rliable)",
            "",
            f"Between suites with at least {MIN_SEEDS_FOR_INTERVAL} seeds on each shared ruleset whose runs differ "
            "(an ablation step",
            "identical to a suite is left out).",
            "",
            "| X | Y | rulesets | P(X > Y) | 95% CI |",
            "|---|---|---|---|---|",
        ]
        for p in poi:
            lines.append(
                f"| {p['x']} | {p['y']} | {', '.join(p['rulesets'])} | {p['p_x_better']:.2f} | "
                f"{p['ci95'][0]:.2f} - {p['ci95'][1]:.2f} |"
            )
    if refs:
        lines += [
            "",
            "## Agents without training (the same evaluation set)",
            "",
            "`random` plays a uniformly random legal action; `greedy` scores the box with the most points now and",
            "otherwise keeps the most common face (rules track); `agents.players.heuristic:LookaheadAgent` is a",
            "hand-written one-turn lookahead over points above each box's par (rules only, untuned; its module",
            "docstring has the rule); `trained` is the policy shipped with the package (rules track: its",
            "network sees rules-derived inputs, docs/training.md); `optimal` is the exact solver. The luck-free",
            "percent goes below 0 where an agent loses more than the optimal expected score (school_poker's six",
            "upper boxes score relative to three of their face, negative below, so random play scores below 0).",
            "",
            "| ruleset | agent | track | luck-free % | 95% CI | mean ± CI | median | upper bonus |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in refs:
            bonus = "-" if r["upper_bonus_rate"] is None else f"{100 * r['upper_bonus_rate']:.1f}%"
            lines.append(
                f"| {r['rules']} | {r['agent']} | {r['track']} | {r['luck_free_percent']:.2f} | "
                f"± {r['luck_free_percent_ci95']:.2f} | {r['mean']:.2f} ± {r['mean_ci95']:.2f} | "
                f"{r['median']:g} | {bonus} |"
            )
    lines += points_md(rows, refs)
    lines += two_player_md(matches or [])
    lines += [
        "",
        "## Published Yahtzee results",
        "",
        "Each with what it measures and where it was read. A mean converts to a percent of the optimal expected",
        "score (254.59): the expected score is the optimal expected score less the expected regret, so the mean",
        "score over 254.59 estimates the luck-free percent; a median does not convert (the optimal median is 248).",
        "",
        "| who | figure | statistic | inputs / prior knowledge / budget | converted | source |",
        "|---|---|---|---|---|---|",
    ]
    for p in PUBLISHED:
        lines.append(
            f"| {p['who']} | {p['figure']} | {p['statistic']} | {p['inputs / prior knowledge / budget']} | "
            f"{p['converted']} | {p['source']} |"
        )
    if rows:
        lines += [
            "",
            "## Every run",
            "",
            "| suite | ruleset | seed | steps | luck-free % | mean | median | upper bonus | wall s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sorted(rows, key=lambda r: (r["suite"], r["ruleset"], r["seed"])):
            bonus = "-" if r.get("upper_bonus_rate") is None else f"{100 * r['upper_bonus_rate']:.1f}%"
            lines.append(
                f"| {r['suite']} | {r['ruleset']} | {r['seed']} | {r['steps']:,} | {r['luck_free_percent']:.2f} | "
                f"{r['mean']:.2f} | {r['median']:g} | {bonus} | {r['wall_seconds']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", action="store_true", help="first evaluate the non-learned reference rows")
    parser.add_argument(
        "--games",
        type=at_least(1, most=EVAL_GAMES),
        help=f"with --reference: games of the reference rows (default and most {EVAL_GAMES}: the evaluation set; "
        "rows of fewer games are a check, kept in reference.json but off the page)",
    )
    parser.add_argument("--reps", type=at_least(1), default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "leaderboard.md", help="the leaderboard page")
    args = parser.parse_args(argv)
    if args.games is not None and not args.reference:
        parser.error("--games goes with --reference (the games of the reference rows)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.reference:
        reference(EVAL_GAMES if args.games is None else args.games, RESULTS / "reference.json")
    collect_curves()
    rows = load_rows()
    refs = full_set(
        json.loads((RESULTS / "reference.json").read_text()) if (RESULTS / "reference.json").exists() else []
    )
    order = {agent: k for k, agent in enumerate(("random", "greedy", REFERENCE_AGENTS[1], "trained", "optimal"))}
    refs.sort(key=lambda r: (RULESETS.index(r["rules"]) if r["rules"] in RULESETS else 99, order.get(r["agent"], 99)))
    agg = aggregate(rows, args.reps)
    baselines = [row for row in rows if not is_probe(row["suite"])]
    poi = improvements(baselines, args.reps)
    (RESULTS / "aggregate.json").write_text(json.dumps(agg, indent=1) + "\n")
    (RESULTS / "probability_of_improvement.json").write_text(json.dumps(poi, indent=1) + "\n")
    if agg:
        with (RESULTS / "aggregate.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(agg[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(agg)
    figures = args.out.parent / "img" / "benchmark"
    figures.mkdir(parents=True, exist_ok=True)
    written = plots(baselines, figures)
    matches = load_matches(ROOT / "results" / "winning")
    shown = [path.relative_to(args.out.parent).as_posix() for path in written]
    args.out.write_text(leaderboard_md(agg, rows, refs, poi, matches, shown))
    print("wrote " + ", ".join(str(p) for p in [RESULTS / "aggregate.json", *written, args.out]))
    return 0


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
