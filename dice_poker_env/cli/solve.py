"""``dice-poker solve`` (solve a ruleset exactly) and ``dice-poker advise`` (coach a position)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def _parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """``["joker=free", "turns=13"]`` -> ``{"joker": "free", "turns": "13"}`` (the rules convert types)."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--option expects NAME=VALUE, got {pair!r}")
        options[name.strip()] = value.strip()
    return options


_INT64 = (-(2**63), 2**63 - 1)


def _check_integers(flag: str, values: int | list[int] | None) -> None:
    """A ``ValueError`` (one line, exit 2) for integers the engine's int64 arrays cannot hold;
    the position validator owns the real range of each field."""
    for value in [] if values is None else values if isinstance(values, list) else [values]:
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"{flag} {value} is out of range")


def _add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rules", metavar="RULESET_OR_FILE", help="ruleset name (yacht, dice_poker, school_poker, yahtzee, yatzy) or a rules file")
    parser.add_argument(
        "--option", "-o", action="append", metavar="NAME=VALUE", help="rules option, e.g. joker=free (repeatable)"
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the solver's disk cache")
    parser.add_argument(
        "--force",
        action="store_true",
        help="solve even when the estimated memory exceeds what the machine has available",
    )


def add_parser(subparsers) -> None:
    """Register the ``solve`` and ``advise`` sub-commands."""
    solve = subparsers.add_parser(
        "solve",
        help="solve a ruleset exactly: optimal expected score and its standard deviation",
        description="Solve a ruleset exactly by dynamic programming (cached on disk; see DICE_POKER_CACHE).",
    )
    _add_rules_arguments(solve)
    solve.add_argument("--json", action="store_true", help="print one JSON object: rules, expected_score, score_std, states, seconds")
    solve.add_argument("--no-progress", action="store_true", help="no progress bar")
    solve.add_argument("--workers", type=int, default=None, help="worker processes, at least 1 (default: $DICE_POKER_SOLVER_WORKERS, else 2)")
    solve.set_defaults(func=run_solve)

    advise = subparsers.add_parser(
        "advise",
        help="every legal action of a position with its expected final score, best first",
        description="Coach a position: each legal action (distinct keeps once) with its expected final score under optimal play.",
    )
    _add_rules_arguments(advise)
    advise.add_argument("--dice", type=int, nargs=5, required=True, metavar="D", help="the five dice")
    advise.add_argument("--rolls-left", type=int, default=2, choices=(0, 1, 2), help="rerolls left this turn (default 2)")
    advise.add_argument("--scorecard", default=None, metavar="JSON", help='filled boxes, e.g. \'{"aces": 3, "yahtzee": 50}\'')
    advise.add_argument("--bonus", type=int, default=None, help="bonus points already paid (default: the secured upper bonus)")
    advise.add_argument("--json", action="store_true", help="print the list as JSON")
    advise.set_defaults(func=run_advise)


def run_solve(args: argparse.Namespace) -> int:
    from dice_poker_env.rules import load_rules
    from dice_poker_env.solver import solve

    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be a positive integer, got {args.workers}")
    rules = load_rules(args.rules, **_parse_options(args.option))
    start = time.perf_counter()
    solution = solve(rules, cache=not args.no_cache, progress=False if args.no_progress else None, workers=args.workers, force=args.force)
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


def run_advise(args: argparse.Namespace) -> int:
    from dice_poker_env.rules import load_rules
    from dice_poker_env.solver import solve

    _check_integers("--dice", args.dice)
    _check_integers("--bonus", args.bonus)
    rules = load_rules(args.rules, **_parse_options(args.option))
    scorecard = None
    if args.scorecard:
        try:
            scorecard = json.loads(args.scorecard)
        except json.JSONDecodeError as error:
            raise ValueError(f"--scorecard is not valid JSON: {error}") from None
    solution = solve(rules, cache=not args.no_cache, progress=None, force=args.force)
    situation = {"scorecard": scorecard, "dice": args.dice, "rolls_left": args.rolls_left}
    if args.bonus is not None:
        situation["bonus"] = args.bonus
    items = solution.advise(situation)
    if args.json:
        print(json.dumps(items))
        return 0
    dice = " ".join(map(str, sorted(args.dice)))
    print(f"{rules.name}: dice {dice}, {args.rolls_left} roll(s) left; expected final score under optimal play")
    width = max(len(_describe(item)) for item in items)
    for rank, item in enumerate(items, 1):
        print(f"{rank:3d}. {_describe(item):<{width}}  {item['value']:10.4f}")
    return 0


def _describe(item: dict[str, Any]) -> str:
    if item["kind"] == "keep":
        kept = " ".join(map(str, item["keep"])) if item["keep"] else "nothing"
        return f"keep {kept} (action {item['action']})"
    return f"score {item['box']} (action {item['action']})"


if __name__ == "__main__":  # pragma: no cover
    from dice_poker_env.cli import main

    sys.exit(main(["solve", *sys.argv[1:]]))
