"""``dice-poker solve``: solve a ruleset exactly (optimal expected score and its standard deviation).

``--target T`` adds the maximum probability of a final score of at least ``T`` (the reach table,
:mod:`dice_poker_env.solver.reach`); ``--distribution`` the expected-score-optimal policy's final-score
distribution (mean, median, quantiles; the whole table with ``--json``). ``--two-player`` solves the
two-player game exactly (:mod:`dice_poker_env.solver.duel`: small rulesets only): seat 0's value under
optimal play of both, and the expected-score-optimal (solitaire) policy's value against the optimal
two-player opponent in each seat.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from dice_poker_env.solver.reach import ScoreDistribution

#: the quantiles printed (dice_poker_env.solver.reach.QUANTILES, without importing the solver at start-up)
QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)

HELP = (
    "solve a ruleset exactly: optimal expected score and its standard deviation; also the chance of reaching a "
    "score, the score distribution, the two-player game"
)


def add_solver_arguments(parser: argparse.ArgumentParser) -> None:
    """The ruleset and the solver's cache and memory switches (shared with ``advise``)."""
    add_rules_arguments(parser)
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the solver's disk cache")
    parser.add_argument(
        "--force",
        action="store_true",
        help="solve even when the estimated memory exceeds what the machine has available",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Solve a ruleset exactly by dynamic programming (cached on disk; see DICE_POKER_CACHE)."
    add_solver_arguments(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: rules, options, expected_score, score_std, states, seconds, from_cache (and "
        "target and reach_probability with --target, distribution with --distribution, two_player with --two-player)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--target",
        type=int,
        default=None,
        metavar="T",
        help="also the maximum probability of a final score of at least T (solves the reach table; cached)",
    )
    parser.add_argument(
        "--distribution",
        action="store_true",
        help="also the final-score distribution of the expected-score-optimal policy (the table with --json)",
    )
    parser.add_argument(
        "--two-player",
        action="store_true",
        help="also the exact two-player solution (small rulesets: its table grows with the square of the states)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes, at least 1 (default: $DICE_POKER_SOLVER_WORKERS, else 2)",
    )


def run(args: argparse.Namespace) -> int:
    from dice_poker_env.solver import solve
    from dice_poker_env.solver.backward import MAX_WORKERS

    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise ValueError(f"--workers must be an integer from 1 to {MAX_WORKERS}, got {args.workers}")
    if args.target is not None:  # before any solve (it printed the solution's lines, then the error)
        from dice_poker_env.solver.reach import check_target

        check_target(args.target)
    rules = load_rules_from(args)
    start = time.perf_counter()
    solution = solve(
        rules,
        cache=not args.no_cache,
        progress=False if args.no_progress else None,
        workers=args.workers,
        force=args.force,
    )
    reach = None
    decided = _decided(rules, args.target) if args.target is not None and not args.distribution else None
    if (args.target is not None and decided is None) or args.distribution:
        from dice_poker_env.solver.reach import solve_reach

        reach = solve_reach(
            rules,
            distribution=args.distribution,
            cache=not args.no_cache,
            workers=args.workers,
            force=args.force,
            progress=False if args.no_progress else None,
        )
    duel = _two_player(rules, solution, args) if args.two_player else None
    seconds = time.perf_counter() - start
    if args.json:
        out: dict[str, Any] = {
            "rules": rules.name,
            "options": {k: v for k, v in rules.options.items()},
            "expected_score": solution.expected_score,
            "score_std": solution.score_std,
            "states": solution.n_states,
            "seconds": seconds,
            "from_cache": solution.from_cache,
        }
        if args.target is not None:
            out["target"] = args.target
            out["reach_probability"] = decided if reach is None else reach.probability(args.target)
        if args.distribution and reach is not None and reach.distribution is not None:
            out["distribution"] = _distribution_json(reach.distribution)
        if duel is not None:
            out["two_player"] = duel
        print(json.dumps(out, default=str))
        return 0
    print(rules.describe())
    expected = solution.expected_score if abs(solution.expected_score) >= 5e-7 else 0.0  # (no "-0.000000")
    print(f"expected score  {expected:.6f}")
    print(f"std deviation   {solution.score_std:.4f}")
    print(f"states          {solution.n_states:,}")
    if args.target is not None:
        chance = decided if reach is None else reach.probability(args.target)
        print(f"P(score >= {args.target})  {chance:.9g}  (maximum over all policies)")
    if args.distribution and reach is not None and reach.distribution is not None:
        dist = reach.distribution
        print("expected-score-optimal policy's final score:")
        print(
            f"  mean {dist.mean:.6f}, std {dist.std:.4f}, median {dist.median}, scores "
            f"{int(dist.scores[dist.pmf > 0].min())}..{int(dist.scores[dist.pmf > 0].max())} (those of positive probability)"
        )
        print("  quantiles " + ", ".join(f"{q:g}: {dist.quantile(q)}" for q in QUANTILES))
    if duel is not None:
        print(f"two players     seat 0 wins {duel['value']:.9f} (P(win) + P(tie)/2, optimal play of both)")
        loaded = " (loaded from cache)" if duel["from_cache"] else ""
        print(
            f"                {duel['pairs']:,} pairs of states, {duel['cells']:,} cells, {duel['seconds']:.1f} s{loaded}"
        )
        solitaire = duel["solitaire"]
        print(
            f"solitaire play  against the optimal opponent: seat 0 {solitaire['seat_0']:.9f} "
            f"(optimal {duel['value']:.9f}), seat 1 {solitaire['seat_1']:.9f} (optimal {1 - duel['value']:.9f})"
        )
    cached = solution.from_cache and (reach is None or reach.from_cache) and (duel is None or duel["from_cache"])
    note = " (loaded from cache)" if cached and duel is None else ""
    if cached and duel is not None:  # (the solitaire policy's two-player values are computed every time)
        note = " (the tables loaded from cache, the solitaire evaluation computed)"
    print(f"time            {seconds:.2f} s{note}")
    return 0


def _two_player(rules: Any, solution: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The two-player figures: seat 0's optimal value, the solitaire policy's against the optimal opponent."""
    from dice_poker_env.solver.duel import solitaire_policy, solve_duel

    duel = solve_duel(rules, cache=not args.no_cache, force=args.force, progress=False if args.no_progress else None)
    policy = solitaire_policy(solution)
    return {
        "value": duel.value(),
        "solitaire": {"seat_0": duel.evaluate(policy, 0), "seat_1": duel.evaluate(policy, 1)},
        "pairs": duel.n_pairs,
        "cells": duel.n_cells,
        "seconds": duel.seconds,
        "from_cache": duel.from_cache,
    }


def _distribution_json(dist: ScoreDistribution) -> dict[str, Any]:
    """The distribution as JSON: summary, quantiles and the table of every score of positive probability."""
    return {
        "mean": dist.mean,
        "std": dist.std,
        "median": dist.median,
        "quantiles": {f"{q:g}": dist.quantile(q) for q in QUANTILES},
        "table": dist.table(),
    }


def _decided(rules: Any, target: int) -> float | None:
    """1.0 for a target no game can miss, 0.0 for one no game can reach, ``None`` between: the reach table's answer
    from the range of final scores alone (seconds), for a table that takes half an hour on yahtzee."""
    from dice_poker_env.solver.reach import final_score_range

    least, most = final_score_range(rules)
    return 1.0 if target <= least else 0.0 if target > most else None


if __name__ == "__main__":  # pragma: no cover
    from dice_poker_env.cli import main

    sys.exit(main(["solve", *sys.argv[1:]]))
