"""``dice-poker tournament``: a tournament between submitted agents (:mod:`agents.course.tournament`).

``dice-poker tournament SUBMISSION... --rules yahtzee --players 2 --games 4 --out DIR``, each
``SUBMISSION`` an agent spec (``student.py:MyAgent``); the optimal and greedy agents take part
as anchors. ``--out DIR`` is checked before the first game, as ``dice-poker grade --out``; the
standings are printed before the files are written. Ctrl-C or SIGTERM end it with partial standings, from the
matches complete so far, printed and written as usual (marked interrupted; status 130), or, before any, one
line saying nothing was written.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from agents.commands.arguments import nonempty
from agents.commands.grade import add_sandbox_arguments, checked_limits, flagged
from dice_poker_env.cli.rules_arguments import parse_rules_options

HELP = "a duplicate tournament between submitted agents and the optimal and greedy anchors (Elo with intervals)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agents.course.tournament import FORMATS, OBJECTIVES, ROUND_ROBIN_MAX_GROUPS

    parser.description = (
        "Play submitted agents (FILE.py:NAME or MODULE:NAME), each isolated as in grading, against each other and "
        "the optimal and greedy anchors at multi-player tables, in duplicate (every deal replayed with the seats "
        f"rotated, so luck cancels): a round-robin up to {ROUND_ROBIN_MAX_GROUPS} groups, else Swiss. Writes the "
        "standings (Elo ratings with 95% bootstrap intervals) and a leaderboard page with a replay of every game."
    )
    parser.add_argument(
        "submissions",
        metavar="SUBMISSION",
        nargs="+",
        help="an agent: student.py:MyAgent[,key=value], student.py (its one agent class) or a folder of them "
        "(sandboxed), or one of the library's own: random, trained, "
        "winning[,target=T|,future=reach], model:PATH (played in process)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a grading config (TOML, as dice-poker grade --config): its rules, options, limits and solver policy "
        "(its games and seed are the grading's, not the tournament's: left out); command-line options win (--rules "
        "of another game drops the config's rules options)",
    )
    parser.add_argument(
        "--class",
        dest="class_name",
        metavar="NAME",
        help="the agent class in each FILE.py and folder's file, as dice-poker grade --class (default: the one class "
        "with an act method)",
    )
    parser.add_argument("--rules", help="ruleset name or rules file (default: the config's, else yahtzee)")
    parser.add_argument(
        "--option", "-o", action="append", default=[], metavar="NAME=VALUE", help="a rules option (repeatable)"
    )
    parser.add_argument("--players", type=int, default=2, help="seats a table, 2 to 6 (default 2)")
    parser.add_argument(
        "--games", type=int, default=4, help="deals each group plays, each at every rotation of the seats (default 4)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the same seed, the same dice and schedule (default: a random 63-bit seed, printed and recorded; "
        "a small one could be guessed by a submission from its dice)",
    )
    parser.add_argument("--format", choices=FORMATS, default="auto", help="the schedule (default auto)")
    parser.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="points",
        help="what a match compares two agents by: points summed over its games (default), or wins: the games each "
        "finished first (for agents that play to win)",
    )
    parser.add_argument("--rounds", type=int, help="Swiss rounds (default ceil(log2(agents)) + 2)")
    parser.add_argument(
        "--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals (default 1000)"
    )
    parser.add_argument(
        "--out", type=nonempty, metavar="DIR", help="write standings.csv, standings.json, games.json, leaderboard.html"
    )
    parser.add_argument("--overwrite", action="store_true", help="with --out: replace a tournament already in DIR")
    add_sandbox_arguments(
        parser,
        who="a submission",
        total="time a submission may use in the whole tournament (default {default:g})",
        failures="failed games after which a submission forfeits the rest (default {default})",
    )
    parser.add_argument("--json", action="store_true", help="print the standings as JSON instead of a table")


def entrants(given: list[str], class_name: str | None = None) -> list[str]:
    """The agents of ``given``: a folder is its ``*.py`` files (or a folder per student) and a bare ``FILE.py`` its
    agent class, as ``dice-poker grade`` finds them (``class_name``: that class, as ``grade --class``; without it,
    a file without one agent class, or that does not parse, and every other file of a folder, is left out, saying
    why); other specs as they are."""
    import os

    from agents.commands.grade import parse_problem
    from agents.course.classroom import UNREADABLE_NAME, find_class, reads_back
    from agents.course.grade_report import summary_text_line

    out: list[str] = []
    for entry in given:
        if entry.endswith(("/", os.sep)) and not os.path.isdir(entry):
            raise ValueError(f"{entry}: no such folder")
        if not (os.path.isdir(entry) or entry.endswith(".py")):
            out.append(entry)
            continue
        submissions, skipped = find_class([entry], class_name)
        for left in skipped:
            print(
                summary_text_line(f"{left.path}: not entered ({left.why.removeprefix('not graded: ')})"),
                file=sys.stderr,
            )
        for submission in submissions:
            unparsed = parse_problem(submission.path) if class_name is None and submission.spec else None
            if submission.spec is None:
                why = submission.problem
            elif unparsed is not None:  # (its class would be a name made up: FILE.py:Agent)
                why = unparsed
            elif not reads_back(submission.path, submission.spec):
                why = UNREADABLE_NAME
            else:
                out.append(submission.spec)
                continue
            print(summary_text_line(f"{submission.path}: not entered ({why})"), file=sys.stderr)
    return out


def run(args: argparse.Namespace) -> int:
    from agents.commands.bench import check_out_dir, remove_empty
    from agents.commands.grade import warn_guessable_seed
    from agents.course.grader import protect_process
    from agents.course.tournament import OUTPUT_FILES, summary_text, tournament, write_outputs
    from dice_poker_env.rules import load_rules

    protect_process()
    if args.overwrite and not args.out:
        raise ValueError("--overwrite goes with --out DIR")
    course: dict[str, Any] = {}
    if args.config:  # a course's grading config: its rules and limits, never its (secret) seed or its games
        from agents.course.grader import LIMIT_SETTINGS, settings

        chosen = settings(args.config, rules=args.rules)  # (--rules of another game: not the config's options)
        course = {name: chosen[name] for name in LIMIT_SETTINGS}
        rules_name, options, solver = chosen["rules"], chosen["options"], chosen["solver"]
    else:
        rules_name, options, solver = "yahtzee", {}, "allow"
    limits = checked_limits(course, args, args.config)
    rules = load_rules(args.rules or rules_name, **{**options, **parse_rules_options(args.option)})
    solver = args.solver or solver
    out = Path(args.out) if args.out else None
    created = check_out_dir(out, args.overwrite, OUTPUT_FILES, "a tournament") if out is not None else []
    drawn = args.seed is None
    if drawn:  # the dice follow from the seed: one a submission cannot guess
        args.seed = secrets.randbits(63)

    def say_seed() -> None:  # (once the arguments have passed the tournament's checks)
        if drawn:
            print(
                f"seed {args.seed}, drawn at random (--seed {args.seed} plays this tournament again)", file=sys.stderr
            )
        else:
            warn_guessable_seed(args.seed, "tournament")

    def interrupt(
        signum: int, frame: object
    ) -> NoReturn:  # SIGTERM as Ctrl-C: the sandboxes are stopped on the way out
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        result = tournament(
            entrants(args.submissions, args.class_name),
            rules,
            players=args.players,
            games=args.games,
            seed=args.seed,
            fmt=args.format,
            rounds=args.rounds,
            limits=limits,
            isolated=not args.unisolated,
            solver=solver,
            bootstrap=args.bootstrap,
            objective=args.objective,
            progress=not args.json,
            started=say_seed,  # before the games: a run that fails later still told its seed
        )
    except ValueError as error:  # (its settings come from flags only: named so, as grade and check name theirs)
        remove_empty(created)
        raise flagged(error, ("players", "games", "seed", "rounds", "bootstrap")) from None
    except KeyboardInterrupt:  # before a match was complete: no standings
        remove_empty(created)
        print("dice-poker tournament: interrupted before any standings: nothing written", file=sys.stderr)
        return 130
    except BaseException:
        remove_empty(created)  # a failed command leaves no trace
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.json:
        print(json.dumps(result["standings"], sort_keys=True), flush=True)
        if result["interrupted"]:  # (the table's first line says it; the JSON is the standings alone)
            print(
                f"dice-poker tournament: INTERRUPTED: partial standings, from the {len(result['matches'])} match(es) "
                "complete before it",
                file=sys.stderr,
            )
    else:
        print(summary_text(result), flush=True)
    if out is not None:
        try:
            written = write_outputs(result, out)
        except OSError as error:
            print(f"dice-poker tournament: error: could not write to {out} ({error})", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # (each file is whole, but not all four are this tournament's)
            print(
                f"dice-poker tournament: stopped while writing the standings: the files in {out} are incomplete "
                "(some may be an earlier tournament's); run it again",
                file=sys.stderr,
            )
            return 130
        if not args.json:
            print("wrote " + ", ".join(str(p) for p in written) + (" (partial)" if result["interrupted"] else ""))
    return 130 if result["interrupted"] else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.commands.tournament ...``; bad input is a one-line error, status 2."""
    from agents.commands import module_main

    return module_main("tournament", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
