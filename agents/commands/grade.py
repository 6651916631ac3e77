"""``dice-poker grade``: grade a submitted agent for a course (:mod:`agents.course.grader`).

``dice-poker grade SUBMISSION --rules yahtzee [--games 2000] [--seed S] [--out DIR]``,
``SUBMISSION`` an agent spec (``student.py:MyAgent``). Settings may come from a
grading config (``--config grading.toml``); options on the command line win.
``--out DIR`` is checked before the first game, as ``dice-poker bench --out``,
and the summary is printed before the report files are written.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from dice_poker_env.cli.rules_arguments import parse_rules_options

HELP = "grade a submitted agent against the optimal and greedy agents (Markdown, JSON and HTML report)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agents.course.sandbox import Limits

    parser.description = (
        "Benchmark a submitted agent (FILE.py:NAME or MODULE:NAME, with ,key=value constructor arguments) on "
        "fixed seeds against the optimal and greedy agents, in an isolated process (Linux, bubblewrap) with time "
        "and resource limits, "
        "and report percent of optimal (95% CI), the exact regret split into keep and box decisions, the "
        "costliest mistakes, the score distribution, every failure of the submission, and a replay of any game."
    )
    parser.add_argument("submission", metavar="SUBMISSION", help="the agent: student.py:MyAgent[,key=value...]")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a grading config (TOML) with any of the settings below; options given here win",
    )
    parser.add_argument("--rules", help="ruleset name or rules file (default yahtzee)")
    parser.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a rules option, e.g. joker=free (repeatable)",
    )
    parser.add_argument("--games", type=int, help="games per agent (default 2000)")
    parser.add_argument("--seed", type=int, help="grading seed: the same seed, the same games (default 0)")
    parser.add_argument("--out", metavar="DIR", help="write DIR/report.json, report.md and report.html")
    parser.add_argument("--overwrite", action="store_true", help="with --out: replace a report already in DIR")
    parser.add_argument(
        "--decision-seconds", type=float, help=f"time limit per decision (default {Limits.decision_seconds:g})"
    )
    parser.add_argument("--game-seconds", type=float, help=f"time limit per game (default {Limits.game_seconds:g})")
    parser.add_argument(
        "--load-seconds", type=float, help=f"time limit to load the submission (default {Limits.load_seconds:g})"
    )
    parser.add_argument(
        "--memory-mb", type=int, help=f"memory the submission may use, MiB (default {Limits.memory_mb})"
    )
    parser.add_argument(
        "--total-seconds",
        type=float,
        help=f"time the submission may use in all (default {Limits.total_seconds:g}); then its games score 0",
    )
    parser.add_argument(
        "--solver",
        choices=("allow", "flag", "forbid"),
        help="the library's solver in the submission: allowed, reported, or refused (default allow)",
    )
    parser.add_argument(
        "--unisolated",
        action="store_true",
        help="run the submission without isolation where none is available (trusted code only; the report says so)",
    )
    parser.add_argument(
        "--max-failures",
        type=int,
        help=f"failed games after which grading stops asking (default {Limits.max_failures})",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")


def run(args: argparse.Namespace) -> int:
    from agents.commands.bench import check_out_dir, remove_empty
    from agents.course.grade_report import summary_text
    from agents.course.grader import LIMIT_SETTINGS, REPORT_FILES, grade, protect_process, settings, write_report
    from agents.course.sandbox import Limits
    from dice_poker_env.rules import load_rules

    protect_process()
    if args.overwrite and not args.out:
        raise ValueError("--overwrite goes with --out DIR")
    chosen = settings(
        args.config,
        rules=args.rules,
        games=args.games,
        seed=args.seed,
        decision_seconds=args.decision_seconds,
        game_seconds=args.game_seconds,
        load_seconds=args.load_seconds,
        total_seconds=args.total_seconds,
        memory_mb=args.memory_mb,
        max_failures=args.max_failures,
        solver=args.solver,
        options=parse_rules_options(args.option),
    )
    limits = Limits(**{name: chosen[name] for name in LIMIT_SETTINGS})
    from agents.evaluation.limits import MAX_GAMES, check_count

    check_count("games", chosen["games"], most=MAX_GAMES)  # before the solve and the submission
    rules = load_rules(chosen["rules"], **chosen["options"])
    out = Path(args.out) if args.out else None
    created = check_out_dir(out, args.overwrite, REPORT_FILES, "a report") if out is not None else []

    def interrupt(signum, frame):  # SIGTERM as Ctrl-C: the grade ends with a partial report
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        report = grade(
            args.submission,
            rules,
            games=chosen["games"],
            seed=chosen["seed"],
            limits=limits,
            progress=not args.json,
            isolated=not args.unisolated,
            solver=chosen["solver"],
        )
    except BaseException:
        remove_empty(created)  # a failed command leaves no trace
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.json:
        print(json.dumps(report, sort_keys=True), flush=True)
    else:
        print(summary_text(report), flush=True)
    if out is not None:
        try:
            written = write_report(report, out)
        except OSError as error:
            print(
                f"dice-poker grade: error: could not write the report to {out} ({error}); the summary is printed above",
                file=sys.stderr,
            )
            return 1
        if not args.json:
            print("wrote " + ", ".join(str(p) for p in written))
    return 130 if report["interrupted"] else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.commands.grade ...`` (the same as ``dice-poker grade ...``); bad input is a one-line error,
    status 2."""
    from agents.commands import module_main

    return module_main("grade", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
