"""``dice-poker bench``: benchmark agents against the exact solver.

The logic lives in :mod:`agents.benchmark`; this module only parses arguments
and prints. ``torch`` is imported only when ``--model`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    lowered = value.lower()
    if lowered in ("true", "false"):
        return key, lowered == "true"
    return key, value


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="benchmark agents against the exact solver (scores, percent of optimal, exact regret)",
        description=(
            "Play N seeded games per agent and report mean (95%% CI), median, std, percent of the "
            "optimal expected score, upper-bonus and five-of-a-kind rates, mean score per box, and "
            "the exact regret (solver value lost per game, split into keep decisions and box "
            "choices) with the costliest typical mistakes."
        ),
    )
    parser.add_argument("rules", metavar="RULESET", help="ruleset name (yacht, dice_poker, school_poker, yahtzee, yatzy) or rules file")
    parser.add_argument("--option", action="append", type=_option, default=[], metavar="KEY=VALUE",
                        help="a rules option, e.g. --option joker=free (repeatable)")
    parser.add_argument("--agents", nargs="+", default=["optimal", "greedy", "random"],
                        help="agents to play: optimal, greedy, random, model:PATH (default: optimal greedy random)")
    parser.add_argument("--model", action="append", default=[], metavar="PATH",
                        help="also play a trained SB3/sb3-contrib model saved by train.py (as agent 'model'; repeatable)")
    parser.add_argument("--games", type=int, default=10_000, help="games per agent (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="benchmark seed (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="processes to spread games over (default 1)")
    parser.add_argument("--no-regret", action="store_true", help="skip the regret analysis (faster)")
    parser.add_argument("--top-mistakes", type=int, default=10, help="costliest mistakes listed per agent")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--out", metavar="DIR", help="write DIR/results.json and DIR/score_distribution.png")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agents.benchmark import benchmark, render_table
    from dice_poker_env.rules import load_rules

    if args.games < 1:
        raise ValueError("--games must be at least 1")
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    rules = load_rules(args.rules, **dict(args.option))
    agents = list(args.agents)
    models = list(args.model)
    for i, path in enumerate(models):
        if not os.path.exists(path):
            raise OSError(f"--model {path}: no such file")
        agents.append(("model" if len(models) == 1 else f"model{i + 1}", f"model:{path}"))
    result = benchmark(
        rules,
        agents,
        games=args.games,
        seed=args.seed,
        workers=args.workers,
        regret=not args.no_regret,
        top_mistakes=args.top_mistakes,
        progress=not args.json,
    )
    data = result.data
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
        try:
            from agents.plots import plot_score_distributions

            plot_score_distributions(result, out / "score_distribution.png")
        except ModuleNotFoundError as error:  # matplotlib is optional
            print(f"dice-poker bench: no plot ({error.name} is not installed)", file=sys.stderr)
    if args.json:
        print(json.dumps(data))
    else:
        render_table(data)
        if args.out:
            print(f"wrote {Path(args.out) / 'results.json'}")
    return 0
