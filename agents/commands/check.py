"""``dice-poker check``: check a submission's interface in a few games before handing it in (:mod:`agents.course.checker`).

``dice-poker check SUBMISSION [--config practice.toml] [--games 3]``, ``SUBMISSION`` an agent
spec (``my_agent.py:MyAgent``). The games run in the same sandbox and under the same limits as
grading (from the config, as ``dice-poker grade --config``); only interface errors are reported
(cannot load, missing ``act``, wrong return type, illegal action, exception, too slow, prints to
standard output). Exit status 0 when the interface is fine, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from dice_poker_env.cli.rules_arguments import parse_rules_options

HELP = "check a submitted agent's interface in a few games, in the grading sandbox (seconds, no solver)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agents.course.checker import GAMES

    parser.description = (
        "Play a few games with a submitted agent (FILE.py:NAME or MODULE:NAME) in the same isolated process and "
        "under the same limits as grading, and report interface errors only: it cannot be loaded, has no act, "
        "returns something that is not an action or an illegal action, raises, is too slow, or prints to standard "
        "output. No regret and no solver: it takes seconds. Exit status 0 when the interface is fine, 1 otherwise."
    )
    parser.add_argument(
        "submission",
        metavar="SUBMISSION",
        help="the agent: my_agent.py:MyAgent[,key=value...], or my_agent.py (its agent class, found as grading finds it)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a grading config (TOML, e.g. practice.toml): its rules, options, seed, limits and solver policy",
    )
    parser.add_argument("--rules", help="ruleset name or rules file (default: the config's, else yahtzee)")
    parser.add_argument(
        "--option", "-o", action="append", default=[], metavar="NAME=VALUE", help="a rules option (repeatable)"
    )
    parser.add_argument("--games", type=int, default=GAMES, help=f"games to play (default {GAMES})")
    parser.add_argument("--seed", type=int, help="the games' seed (default: the config's, else 0)")
    parser.add_argument(
        "--unisolated",
        action="store_true",
        help="run the submission without isolation where none is available (trusted code only)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from agents.commands.grade import checked_limits, checked_seed, own_folder, resolve_submission, setting_name
    from agents.course.checker import MOST_GAMES, check, check_json, check_text
    from agents.course.grader import LIMIT_SETTINGS, protect_process, settings
    from agents.evaluation.limits import MAX_GAMES, check_count
    from dice_poker_env.rules import load_rules

    protect_process()
    chosen = settings(args.config, rules=args.rules, seed=args.seed, options=parse_rules_options(args.option))
    limits = checked_limits({name: chosen[name] for name in LIMIT_SETTINGS}, args, args.config)
    if not 1 <= args.games <= MOST_GAMES:  # (the check's own games; the config's are the grading's)
        raise ValueError(f"--games must be an integer from 1 to {MOST_GAMES}, got {args.games}")
    check_count(setting_name("games", False, args.config), chosen["games"], most=MAX_GAMES)
    checked_seed(chosen["seed"], args.seed is not None, args.config)
    rules = load_rules(chosen["rules"], **chosen["options"])
    submission = resolve_submission(args.submission)
    result = check(
        submission,
        rules,
        games=args.games,
        seed=chosen["seed"],
        limits=limits,
        isolated=not args.unisolated,
        solver=chosen["solver"],
        graded_games=chosen["games"],
        own_folder=own_folder(submission),
    )
    if args.json:
        print(json.dumps(check_json(result), sort_keys=True), flush=True)
    else:
        print(check_text(result), flush=True)
    return 0 if result.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.commands.check ...`` (the same as ``dice-poker check ...``); bad input is a one-line error,
    status 2."""
    from agents.commands import module_main

    return module_main("check", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
