"""Your agent's result in the protocol's statistics, beside the baselines: one command for a paper's table.

Evaluate each training seed's agent on the fixed evaluation set with ``dice-poker evaluate ... --json``, one
file per seed and ruleset, then aggregate them as the leaderboard aggregates the baselines (docs/benchmark.md)::

    for s in 0 1 2 3 4 5 6 7 8 9; do
      dice-poker evaluate yahtzee --agent model:runs/mine-s$s/final_model.npz --seed $s --json > mine/yahtzee-s$s.json
    done
    python benchmarks/compare.py "my agent" --budget 10M mine/*.json

It prints, per ruleset and across them, the interquartile mean (IQM) of the seeds' luck-free percents with its
95% stratified-bootstrap interval, and against every baseline at the same budget (``results/benchmark/runs.json``)
the baseline's IQM on the same rulesets and rliable's probability that a run of yours beats a run of it, with
its interval; then every run (file, seed, percent, the agent file's SHA-256) and what the runs were measured on
(env id, observation layout, ruleset fingerprint, library version, the evaluating code's commit). ``--json``
prints the same as one JSON object; ``--plot FILE.png`` also draws the performance profiles of yours and of the
baselines at the budget.

Every file must come from the protocol: all 10,000 games of its ruleset's evaluation set, the ruleset as the
library defines it today (its fingerprint), one track for all files, no seed or agent file twice. The ``seed``
of ``dice-poker evaluate --seed N`` pairs seeds across rulesets (every file has one, or none: then the files of
a ruleset count in the order given). Fewer seeds than the protocol asks for (10 at 1M and 10M, 5 at 100M) are
aggregated all the same, with a line that says so.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.commands.bench import check_out_file  # noqa: E402
from agents.evaluation.protocol import MIN_SEEDS_FOR_INTERVAL  # noqa: E402
from benchmarks import leaderboard  # noqa: E402 - the leaderboard's own statistics: both give the same numbers
from benchmarks.run_baselines import SUITES  # noqa: E402 - the seeds each baseline suite is run with

#: the protocol's budgets (``offline``: trained from a dataset, no env steps, like behaviour cloning)
BUDGETS = {"1M": 1_000_000, "10M": 10_000_000, "100M": 100_000_000, "offline": 0}
#: the fewest training seeds the protocol asks for at each budget
MIN_SEEDS = {1_000_000: 10, 10_000_000: 10, 100_000_000: 5, 0: 5}


#: what each result records of the code, the env and the agent it measured (printed with the seeds' percents)
PROVENANCE = (
    "agent",
    "agent_sha256",
    "env_id",
    "observation_layout_version",
    "rules_fingerprint",
    "library_version",
    "git_commit",
    "isolated",  # the agent's code ran in a process of its own (dice-poker evaluate --isolated)
    "hardware",  # the CPU that played (a float policy's actions can differ between CPU models)
)


#: what a result was measured on that two results must share to be compared (docs/benchmark.md, Versioning;
#: the ruleset fingerprint is checked against today's rules and the baselines' on its own)
MEASURED_ON = ("env_id", "observation_layout_version", "library_version")


#: what a baseline row must share with your results to be compared with them (its env's version is in its id)
COMPARED_ON = ("env_id", "observation_layout_version", "rules_fingerprint")


class SubmissionError(ValueError):
    """A result file the protocol cannot aggregate (one line naming the file and the reason)."""


def read_result(path: Path, track: str | None) -> dict[str, Any]:
    """One ``dice-poker evaluate --json`` result, checked against the protocol and today's rulesets."""
    from agents.evaluation.protocol import EVAL_GAMES, TRACKS, TRAIN_SEED_LIMIT, eval_set_id
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.rules import RULESET_NAMES, load_rules

    try:
        result = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SubmissionError(f"{path}: not a readable JSON file ({error})") from None
    needed = ("rules", "eval_set", "games", "luck_free_percent", "rules_fingerprint", "median", *MEASURED_ON)
    if not isinstance(result, dict) or any(key not in result for key in needed):
        raise SubmissionError(f"{path}: not the output of `dice-poker evaluate --json` (it needs {', '.join(needed)})")
    kinds: dict[str, type | tuple[type, ...]] = {
        "rules": str,
        "eval_set": str,
        "rules_fingerprint": str,
        "env_id": str,
        "library_version": str,
        "median": (int, float),
        "mean": (int, float, type(None)),
        "luck_free_percent_ci95": (int, float, type(None)),
        "track": (str, type(None)),
        "agent": (str, type(None)),
        "agent_sha256": (str, type(None)),
        "observation_layout_version": int,
        "games": int,
        "timesteps": (int, type(None)),
        "hardware": (str, type(None)),
    }
    for key, kind in kinds.items():
        value = result.get(key)
        if (key in result or key in needed) and (isinstance(value, bool) or not isinstance(value, kind)):
            raise SubmissionError(f"{path}: {key} must be {_kind_name(kind)}, got {str(value)[:60]!r}")
    if not isinstance(result.get("isolated", False), bool):
        raise SubmissionError(f"{path}: isolated must be true or false, got {str(result['isolated'])[:60]!r}")
    imports = result.get("solver_imports")
    if imports is not None and (not isinstance(imports, list) or not all(isinstance(m, str) for m in imports)):
        raise SubmissionError(
            f"{path}: solver_imports must be a list of module names or null, got {str(imports)[:60]!r}"
        )
    failed = result.get("failed_games", {})
    if not isinstance(failed, dict) or not all(
        isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0 for k, n in failed.items()
    ):
        raise SubmissionError(f"{path}: failed_games must map failure kinds to game counts, got {str(failed)[:60]!r}")
    if result["eval_set"].split("/")[1:2] and result["eval_set"].split("/")[1].startswith("custom:"):
        raise SubmissionError(
            f"{path}: played {result['eval_set']}, a rules file's evaluation set: the protocol and its baselines are "
            f"the five shipped rulesets ({', '.join(RULESET_NAMES)}) with their default options"
        )
    if result["rules"] not in RULESET_NAMES:
        raise SubmissionError(
            f"{path}: rules must be one of the shipped rulesets ({', '.join(RULESET_NAMES)}), got {result['rules']!r}"
        )
    if result.get("track") is not None and result["track"] not in TRACKS:
        raise SubmissionError(f"{path}: track must be one of {', '.join(TRACKS)}, got {result['track']!r}")
    rules = load_rules(result["rules"])
    if result["games"] != EVAL_GAMES or result["eval_set"] != eval_set_id(rules):
        raise SubmissionError(
            f"{path}: played {result['games']} games of {result['eval_set']}; the protocol uses all {EVAL_GAMES:,} "
            f"of {eval_set_id(rules)}"
        )
    if result["rules_fingerprint"] != rules.fingerprint:
        options = result.get("rules_options") or {}
        raise SubmissionError(
            f"{path}: evaluated on other rules than the baselines' {rules.name} (fingerprint "
            f"{result['rules_fingerprint']}, options {options}; today's {rules.fingerprint})"
        )
    if track is not None and result.get("track") is not None and TRACKS.index(result["track"]) > TRACKS.index(track):
        raise SubmissionError(  # a track admits the stricter ones before it (raw, rules, solver), as evaluate does
            f"{path}: the agent declares the {result['track']} track, not {track} (it may enter a more permissive one)"
        )
    percent = result["luck_free_percent"]
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not -1e9 < percent <= 100:
        # below 0 is possible: an agent losing more than the optimal expected score (random on school_poker)
        raise SubmissionError(f"{path}: luck_free_percent must be a number of at most 100, got {percent!r}")
    seed = result.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < TRAIN_SEED_LIMIT):
        raise SubmissionError(f"{path}: seed must be a training seed in [0, 2**32), got {str(seed)[:60]!r}")
    for key in ("median", "mean", "luck_free_percent_ci95"):  # (their types were checked above)
        value = result.get(key)
        if value is not None and not (math.isfinite(value) and (key != "luck_free_percent_ci95" or value >= 0)):
            what = "a finite number of at least 0" if key == "luck_free_percent_ci95" else "a finite number"
            raise SubmissionError(f"{path}: {key} must be {what}, got {value!r}")
    tables = compile_rules(rules)  # a score no game of these rules can end with
    for key in ("median", "mean"):
        value = result.get(key)
        if value is not None and not tables.min_total <= value <= tables.max_total:
            raise SubmissionError(
                f"{path}: {key} must lie within the bounds of a final score of {rules.name} ({tables.min_total} to "
                f"{tables.max_total}), got {value:g}"
            )
    digest = result.get("agent_sha256")
    if digest is not None and not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise SubmissionError(f"{path}: agent_sha256 must be a SHA-256 digest (64 hex digits), got {digest[:70]!r}")
    return result


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names[k] for k in kinds if not (k is int and float in kinds)))


def submission_rows(paths: list[Path], name: str, budget: int, track: str | None) -> list[dict[str, Any]]:
    """The results as rows of the leaderboard's shape (suite ``name``), one per file."""
    results = [(path, read_result(path, track)) for path in paths]
    tracks = {result["track"] for _, result in results if result.get("track") is not None}
    if len(tracks) > 1 and track is None:
        raise SubmissionError(
            f"the files declare several tracks ({', '.join(sorted(tracks))}): compare one at a time, or enter them "
            "all in the most permissive one with --track"
        )
    chosen = track or (tracks.pop() if tracks else None)
    if chosen is None:
        raise SubmissionError("no file declares a track: say which with --track raw|rules|solver")
    seeded = [path.name for path, result in results if result.get("seed") is not None]
    if seeded and len(seeded) < len(results):
        raise SubmissionError(
            f"{len(seeded)} of the {len(results)} files have a seed (such as {seeded[0]}): give every file one "
            "(dice-poker evaluate --seed N) or none (the files of a ruleset then count in the order given)"
        )
    rows: list[dict[str, Any]] = []
    count: dict[str, int] = {}
    seen: dict[tuple[str, Any], Path] = {}
    played: dict[str, Path] = {}
    outcomes: dict[tuple[Any, ...], Path] = {}
    for key in MEASURED_ON:  # (env ids: one per ruleset)
        for ruleset in {result["rules"] for _, result in results}:
            values = {str(result[key]) for _, result in results if key != "env_id" or result["rules"] == ruleset}
            if len(values) > 1:
                raise SubmissionError(
                    f"the files were measured on several {key}s ({', '.join(sorted(values))}): compare one at a time"
                )
    over = [  # (the offline track's budget is its dataset, not env steps: not checked)
        (path, result["timesteps"]) for path, result in results if budget and (result.get("timesteps") or 0) > budget
    ]
    if over:  # the budget is an upper bound on the steps trained (a policy file records its own)
        path, steps = over[0]
        raise SubmissionError(f"{path}: its policy trained {steps:,} steps, past the budget of {budget:,}")
    for path, result in results:
        ruleset = result["rules"]
        seed = result.get("seed", count.get(ruleset, 0))
        count[ruleset] = count.get(ruleset, 0) + 1
        if (ruleset, seed) in seen:
            raise SubmissionError(
                f"{path}: a second result for {ruleset} seed {seed} (the first: {seen[ruleset, seed]})"
            )
        seen[ruleset, seed] = path
        digest = result.get("agent_sha256")
        if digest is not None and f"{ruleset}/{digest}" in played:
            raise SubmissionError(
                f"{path}: the same agent as {played[f'{ruleset}/{digest}']} (agent_sha256 {digest[:12]}...: its "
                "file, class and arguments): one seed counted twice; an agent class that loads each seed's weights "
                "takes them as an argument (NAME,weights=PATH), which the digest covers"
            )
        if digest is not None:
            played[f"{ruleset}/{digest}"] = path
        outcome = (ruleset, result["luck_free_percent"], result.get("mean"), result["median"])
        if outcome in outcomes:  # (agents without a file: modules, built-ins)
            raise SubmissionError(
                f"{path}: the same games, move for move, as {outcomes[outcome]} (identical luck-free percent and "
                "scores): one agent counted twice"
            )
        outcomes[outcome] = path
        rows.append(
            {
                "suite": name,
                "track": chosen,
                "algorithm": name,
                "budget": budget,
                "ruleset": ruleset,
                "seed": seed,
                "luck_free_percent": float(result["luck_free_percent"]),
                "luck_free_percent_ci95": result.get("luck_free_percent_ci95"),
                "median": float(result["median"]),
                "file": str(path),
                "failed_games": result.get("failed_games") or {},
                "solver_imports": result.get("solver_imports"),
                **{key: result.get(key) for key in PROVENANCE},
            }
        )
    return rows


def compare(rows: list[dict[str, Any]], baselines: list[dict[str, Any]], reps: int) -> dict[str, Any]:
    """The submission's aggregates, its runs and, against each baseline suite at its budget, the IQMs on the
    shared rulesets and the probability of improvement (``None`` where either side has fewer than two seeds)."""
    name, budget = rows[0]["suite"], rows[0]["budget"]
    rulesets = [r for r in leaderboard.RULESETS if any(row["ruleset"] == r for row in rows)]
    aggregate = leaderboard.aggregate(rows, reps)
    notes = []
    if len(rulesets) > 1:
        across = leaderboard.suite_matrix(rows, rulesets).size
        if across < len(rows):
            notes.append(
                f"across rulesets: {across} of your {len(rows)} runs, the seeds every ruleset has"
                + ("" if across else " (none: no seed is in every ruleset, so no row across them)")
            )
    for row in rows:  # what a maintainer checks before accepting a run
        file = Path(row["file"]).name
        if row["failed_games"]:
            kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(row["failed_games"].items()))
            notes.append(f"{file}: the agent's failures ended {sum(row['failed_games'].values())} games ({kinds})")
        if str(row.get("git_commit") or "").endswith("-dirty"):
            notes.append(f"{file}: measured by code that differs from its commit ({row['git_commit']})")
        if row["solver_imports"] and row["track"] != "solver":
            notes.append(
                f"{file}: on the {row['track'] or 'undeclared'} track, the agent imported the library's "
                f"{', '.join(row['solver_imports'])}: check what it uses them for"
            )
    versus = []
    suites = sorted({row["suite"] for row in baselines if row["budget"] == budget and row["suite"] != name})
    measured = {(row["ruleset"], *(row.get(key) for key in COMPARED_ON)) for row in rows}
    for suite in suites:
        recorded = [row for row in baselines if row["suite"] == suite and row["ruleset"] in rulesets]
        theirs = [row for row in recorded if (row["ruleset"], *(row.get(key) for key in COMPARED_ON)) in measured]
        if len(theirs) < len(recorded):
            notes.append(
                f"{suite}: {len(recorded) - len(theirs)} of its {len(recorded)} runs on your rulesets were measured on "
                "another env id, observation layout or ruleset than yours (another version: docs/benchmark.md, "
                "Versioning); they are not compared"
            )
        shared = [r for r in rulesets if any(row["ruleset"] == r for row in theirs)]
        if not shared:
            continue
        mine, other = leaderboard.suite_matrix(rows, shared), leaderboard.suite_matrix(theirs, shared)
        if not mine.size or not other.size:
            notes.append(f"{suite}: no seed in every one of {', '.join(shared)} on one side; not compared")
            continue
        fewest = min(sum(row["ruleset"] == r for row in theirs) for r in shared)
        entry: dict[str, Any] = {
            "suite": suite,
            "track": theirs[0]["track"],
            "rulesets": shared,
            "runs": [int(mine.size), int(other.size)],
            "iqm": [leaderboard.iqm_ci(mine, reps)[0], leaderboard.iqm_ci(other, reps)[0]],
            "p_better": None,
            "p_better_ci95": None,
            "complete": fewest >= MIN_SEEDS[budget],
            # short of the seeds its suite is run with (benchmarks/run_baselines.py), where it is one the driver
            # knows: a suite with all of them but fewer than the protocol asks (the knowledge ablation's 5 at 10M)
            # is short by design, not running
            "running": suite not in SUITES
            or any(sum(row["ruleset"] == r for row in theirs) < len(SUITES[suite].seeds) for r in shared),
        }
        if min(len(mine), len(other)) >= MIN_SEEDS_FOR_INTERVAL:  # (fewer: see leaderboard.iqm_ci)
            p, low, high = leaderboard.probability_of_improvement(mine, other, reps)
            entry.update(p_better=p, p_better_ci95=[low, high])
        versus.append(entry)
    runs = [
        {
            key: row[key]
            for key in (
                "file",
                "ruleset",
                "seed",
                "luck_free_percent",
                "luck_free_percent_ci95",
                "failed_games",
                "solver_imports",
                *PROVENANCE,
            )
        }
        for row in rows
    ]
    return {
        "name": name,
        "track": rows[0]["track"],
        "budget": budget,
        "eval_set": "dice-poker-eval-v1",
        "aggregate": aggregate,
        "versus": versus,
        "runs": runs,
        "notes": notes,
    }


def mark_of(entry: dict[str, Any]) -> str:
    """A baseline's mark in the comparison: ``*`` short of the protocol's seeds and still running, ``+`` short of
    them by its suite's design (every run recorded), none with the protocol's seeds."""
    if entry["complete"]:
        return ""
    return "*" if entry.get("running", True) else "+"


def report_md(report: dict[str, Any]) -> str:
    """The comparison as Markdown tables (what a paper's appendix can paste)."""
    budget = leaderboard.fmt_budget(report["budget"])
    lines = [
        f"{report['name']} ({report['track']} track, {budget}) on the evaluation sets {report['eval_set']}: "
        "IQM of the seeds' luck-free percents [95% stratified-bootstrap CI]",
        "",
        "| ruleset | seeds | IQM | 95% CI | mean | min - max |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["aggregate"]:
        lines.append(
            f"| {row['ruleset']} | {row['runs']} | {row['iqm']:.2f} | {leaderboard.ci_md(row['iqm_ci95_low'], row['iqm_ci95_high'])} | "
            f"{row['mean']:.2f} | {row['min']:.2f} - {row['max']:.2f} |"
        )
    if report["versus"]:
        marks = {
            "*": "the suite is still running",
            "+": "short by the suite's design, every run of it recorded",
        }
        used = {mark_of(entry) for entry in report["versus"]} - {""}
        legend = "; ".join(f"{mark} {marks[mark]}" for mark in marks if mark in used)
        lines += [
            "",
            f"Against the baselines at {budget}, on the rulesets both have"
            + (f" (fewer seeds than the protocol asks: {legend})" if legend else "")
            + ":",
            "",
            "| baseline | track | rulesets | runs (yours, theirs) | IQM (yours, theirs) | P(yours > theirs) | 95% CI |",
            "|---|---|---|---|---|---|---|",
        ]
        for entry in report["versus"]:
            p = "-" if entry["p_better"] is None else f"{entry['p_better']:.2f}"
            ci = "-" if entry["p_better_ci95"] is None else "{:.2f} - {:.2f}".format(*entry["p_better_ci95"])
            star = mark_of(entry)
            other = "" if entry["track"] == report["track"] else " (another track)"
            lines.append(
                f"| {entry['suite']}{star} | {entry['track']}{other} | {', '.join(entry['rulesets'])} | "
                f"{entry['runs'][0]}, {entry['runs'][1]} | {entry['iqm'][0]:.2f}, {entry['iqm'][1]:.2f} | {p} | {ci} |"
            )
        if any(entry["track"] != report["track"] for entry in report["versus"]):
            lines += [
                "",
                f"A baseline of another track than yours ({report['track']}) used other knowledge (docs/benchmark.md, "
                "Tracks): a claim compares within one track.",
            ]
    else:
        lines += ["", f"No baseline at {budget} shares a ruleset with these results."]
    lines += [
        "",
        "Every run (report them all):",
        "",
        "| file | ruleset | seed | luck-free % | isolated | agent_sha256 |",
        "|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        ci = run["luck_free_percent_ci95"]
        percent = f"{run['luck_free_percent']:.2f}" + ("" if ci is None else f" ± {ci:.2f}")
        digest = run["agent_sha256"] or "-"
        isolated = {True: "yes", False: "no"}.get(run["isolated"], "-")
        lines.append(
            f"| {Path(run['file']).name} | {run['ruleset']} | {run['seed']} | {percent} | {isolated} | {digest} |"
        )
    lines += ["", "Measured with:"]
    for key in PROVENANCE[2:]:
        if key == "isolated":  # (a column of the runs' table)
            continue
        values = sorted({str(run[key]) for run in report["runs"]})
        lines.append(f"* {key}: {', '.join(values)}")
    lines += [f"* note: {note}" for note in report["notes"]]
    return "\n".join(lines)


#: the most bootstrap resamples (2,000 is the default; rliable keeps them all in memory)
MAX_REPS = 100_000
#: the image files --plot writes
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def plot(rows: list[dict[str, Any]], baselines: list[dict[str, Any]], path: Path) -> Path:
    """Performance profiles of the submission and of every baseline at its budget, on the submission's rulesets
    (each baseline on those it has), into ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    name, budget = rows[0]["suite"], rows[0]["budget"]
    rulesets = {row["ruleset"] for row in rows}
    suites: dict[str, list[dict[str, Any]]] = {name: rows}
    for row in baselines:
        if row["budget"] == budget and row["ruleset"] in rulesets:
            suites.setdefault(row["suite"], []).append(row)

    def style(suite: str) -> dict[str, Any]:  # yours stands out; the baselines take matplotlib's colours
        return {"linewidth": 2.5, "color": "black"} if suite == name else {"linewidth": 1.2}

    fig, ax = plt.subplots(figsize=(7, 4.5))
    title = f"Performance profiles at {leaderboard.fmt_budget(budget)} ({', '.join(sorted(rulesets))})"
    leaderboard.profile_panel(ax, suites, title, style)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", help="your agent's name in the tables")
    parser.add_argument(
        "files", nargs="+", type=Path, help="`dice-poker evaluate --json` outputs, one per seed and ruleset"
    )
    parser.add_argument("--budget", required=True, choices=list(BUDGETS), help="the env steps each seed trained")
    parser.add_argument("--track", choices=("raw", "rules", "solver"), help="the track (when the files declare none)")
    parser.add_argument(
        "--runs",
        type=Path,
        default=leaderboard.RESULTS / "runs.json",
        help="the baselines' rows (default results/benchmark/runs.json)",
    )
    parser.add_argument(
        "--reps", type=at_least(1), default=2000, help=f"bootstrap resamples (default 2000, at most {MAX_REPS:,})"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument(
        "--plot", type=Path, metavar="FILE.png", help="also draw the performance profiles beside the baselines'"
    )
    parser.add_argument("--overwrite", action="store_true", help="let --plot replace an existing file")
    args = parser.parse_args(argv)
    if args.reps > MAX_REPS:
        parser.error(f"--reps of {args.reps:,} is beyond the limit of {MAX_REPS:,} (memory: resamples x seeds)")
    if args.plot is not None:
        if args.plot.suffix.lower() not in PLOT_SUFFIXES:
            parser.error(f"--plot {args.plot}: name a {', '.join(PLOT_SUFFIXES)} file")
        try:
            check_out_file(args.plot, args.overwrite, "--plot")  # before the bootstrap, not after it
        except OSError as error:
            parser.error(str(error))
    import importlib.util

    if importlib.util.find_spec("rliable") is None:
        parser.error("rliable is not installed (the aggregates are rliable's): pip install -e '.[results]'")
    budget = BUDGETS[args.budget]
    try:
        rows = submission_rows(args.files, args.name, budget, args.track)
    except SubmissionError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    try:
        recorded = json.loads(args.runs.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        parser.error(f"--runs {args.runs}: {error}")
    needed = ("suite", "ruleset", "budget", "seed", "luck_free_percent")
    if not isinstance(recorded, list) or not all(isinstance(r, dict) and set(needed) <= set(r) for r in recorded):
        parser.error(f"--runs {args.runs}: not the benchmark's runs.json (a list of rows with {', '.join(needed)})")
    if args.name in {row["suite"] for row in recorded}:
        parser.error(f"{args.name!r} is a recorded suite's name: give yours another")
    baselines = [row for row in recorded if not leaderboard.is_probe(row["suite"])]
    for ruleset in sorted({row["ruleset"] for row in rows}):
        seeds = sum(row["ruleset"] == ruleset for row in rows)
        if seeds < MIN_SEEDS[budget]:
            print(
                f"note: {seeds} seed{'s' * (seeds != 1)} on {ruleset}; the protocol asks for at least "
                f"{MIN_SEEDS[budget]} at {args.budget}",
                file=sys.stderr,
            )
    report = compare(rows, baselines, args.reps)
    print(json.dumps(report, indent=1) if args.json else report_md(report))
    if args.plot is not None:
        print(f"wrote {plot(rows, baselines, args.plot)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
