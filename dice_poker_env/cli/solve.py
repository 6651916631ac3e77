"""``dice-poker solve``: solve a ruleset exactly (optimal expected score and its standard deviation)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from

HELP = "solve a ruleset exactly: optimal expected score and its standard deviation"


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
        "--json", action="store_true", help="print one JSON object: rules, expected_score, score_std, states, seconds"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes, at least 1 (default: $DICE_POKER_SOLVER_WORKERS, else 2)",
    )


def run(args: argparse.Namespace) -> int:
    from dice_poker_env.solver import solve

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be a positive integer, got {args.workers}")
    rules = load_rules_from(args)
    start = time.perf_counter()
    solution = solve(
        rules,
        cache=not args.no_cache,
        progress=False if args.no_progress else None,
        workers=args.workers,
        force=args.force,
    )
    seconds = time.perf_counter() - start
    if args.json:
        print(
            json.dumps(
                {
                    "rules": rules.name,
                    "options": {k: v for k, v in rules.options.items()},
                    "expected_score": solution.expected_score,
                    "score_std": solution.score_std,
                    "states": solution.n_states,
                    "seconds": seconds,
                    "from_cache": solution.from_cache,
                },
                default=str,
            )
        )
        return 0
    print(rules.describe())
    print(f"expected score  {solution.expected_score:.6f}")
    print(f"std deviation   {solution.score_std:.4f}")
    print(f"states          {solution.n_states:,}")
    print(f"time            {seconds:.2f} s" + (" (loaded from cache)" if solution.from_cache else ""))
    return 0


if __name__ == "__main__":  # pragma: no cover
    from dice_poker_env.cli import main

    sys.exit(main(["solve", *sys.argv[1:]]))
