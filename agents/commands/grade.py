"""``dice-poker grade``: grade a submitted agent for a course (:mod:`agents.course.grader`).

``dice-poker grade SUBMISSION --rules yahtzee [--games 2000] [--seed S] [--out DIR]``,
``SUBMISSION`` an agent spec (``student.py:MyAgent``) or one file (``student.py``: its agent class, found
as class grading finds it). Settings may come from a
grading config (``--config grading.toml``); options on the command line win.
``--out DIR`` is checked before the first game, as ``dice-poker bench --out``,
and the summary is printed before the report files are written.

A whole class: ``dice-poker grade SUBMISSIONS_DIR --rules yahtzee --out DIR [--jobs N]
[--rubric rubric.toml] [--class NAME]`` (or several files and specs; one file with a class option is a class of
one):
:mod:`agents.course.classroom` grades them, :mod:`agents.course.gradebook` writes the class files.

Size: the command's arguments, their checks before any work (limits and settings named as given, a submission
resolved to its agent class), which ``check`` and ``tournament`` share, and its two runs (one submission, a class).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agents.commands.arguments import nonempty
from dice_poker_env.cli.rules_arguments import parse_rules_options

if TYPE_CHECKING:
    from agents.course.sandbox import Limits

HELP = "grade a submitted agent against the optimal and greedy agents (Markdown, JSON and HTML report)"


def add_sandbox_arguments(parser: argparse.ArgumentParser, *, who: str, total: str, failures: str) -> None:
    """The sandbox's limits (:func:`add_limit_arguments`), ``--solver`` and ``--unisolated`` (``dice-poker grade``
    and ``tournament``)."""
    add_limit_arguments(parser, who=who, total=total, failures=failures)
    parser.add_argument(
        "--solver",
        choices=("allow", "flag", "forbid"),
        help=f"the library's solver and agents (optimal, heuristic, trained...) in {who}: allowed, reported, or refused (default allow)",
    )
    parser.add_argument(
        "--unisolated",
        action="store_true",
        help="run without isolation where none is available (trusted code only; the report says so)",
    )


def add_limit_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, who: str, total: str, failures: str
) -> None:
    """The sandbox's limits (``dice-poker grade``, ``tournament`` and ``evaluate --isolated``).

    Args:
        parser: the command's parser.
        who: the agent the limits are about, e.g. "the submission".
        total: ``--total-seconds``' help, ``{default}`` standing for its default.
        failures: ``--max-failures``' help, likewise.

    Every default is ``None`` (the command's config or :class:`~agents.course.sandbox.Limits` decides);
    :func:`given_limits` collects what was given.
    """
    from agents.course.sandbox import Limits

    parser.add_argument(
        "--decision-seconds", type=float, help=f"time limit per decision (default {Limits.decision_seconds:g})"
    )
    parser.add_argument("--game-seconds", type=float, help=f"time limit per game (default {Limits.game_seconds:g})")
    parser.add_argument(
        "--load-seconds", type=float, help=f"time limit to load {who} (default {Limits.load_seconds:g})"
    )
    parser.add_argument("--memory-mb", type=int, help=f"memory {who} may use, MiB (default {Limits.memory_mb})")
    parser.add_argument("--total-seconds", type=float, help=total.format(default=Limits.total_seconds))
    parser.add_argument("--max-failures", type=int, help=failures.format(default=Limits.max_failures))


def flag_of(name: str) -> str:
    """A setting's command-line flag: ``decision_seconds`` -> ``--decision-seconds``."""
    return "--" + name.replace("_", "-")


#: the limits a command line may set (:func:`add_limit_arguments`), by ``Limits`` field
LIMIT_FLAGS = {
    name: flag_of(name)
    for name in ("decision_seconds", "game_seconds", "load_seconds", "memory_mb", "total_seconds", "max_failures")
}


def given_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The sandbox limits given on the command line (:func:`add_limit_arguments`), by ``Limits`` field."""
    from agents.course.sandbox import Limits

    assert all(hasattr(Limits, name) for name in LIMIT_FLAGS)
    return {name: getattr(args, name) for name in LIMIT_FLAGS if getattr(args, name, None) is not None}


def checked_limits(settings: Mapping[str, Any], args: argparse.Namespace, config: str | None = None) -> Limits:
    """The sandbox's limits: ``settings`` (a config's, by ``Limits`` field) with the command line's flags over them.

    A value that is not a limit is named as the user gave it: ``--decision-seconds`` for a flag, the config's key
    (after ``--config FILE``) for a setting.
    """
    from agents.course.sandbox import Limits

    given = given_limits(args)
    for name, value in given.items():
        try:
            Limits(**{name: value})
        except ValueError as error:  # ("decision_seconds must be ...": the field is the message's subject)
            raise flagged(error, [name]) from None
    try:
        return Limits(**{**settings, **given})
    except ValueError as error:
        raise ValueError(f"--config {config}: {error}" if config else str(error)) from None


def setting_name(name: str, on_command_line: bool, config: str | None = None) -> str:
    """A setting as the user gave it, for a message about its value: its flag (``--games``) when given on the command
    line, ``--config FILE: games`` when it came from the config (with neither, the bare name: a default)."""
    if on_command_line:
        return flag_of(name)
    return f"--config {config}: {name}" if config else name


def checked_settings(chosen: Mapping[str, Any], args: argparse.Namespace, config: str | None = None) -> None:
    """Refuse a bad ``games`` or ``seed`` of ``chosen`` (the command line's over the config's) before any work,
    named as given (:func:`setting_name`): ``--games must be ...``, ``--config FILE: seed must be ...``."""
    from agents.evaluation.limits import MAX_GAMES, check_count

    check_count(setting_name("games", args.games is not None, config), chosen["games"], most=MAX_GAMES)
    checked_seed(chosen["seed"], args.seed is not None, config)


def checked_seed(seed: Any, on_command_line: bool, config: str | None = None) -> int:
    """``seed`` if it is an integer >= 0; else a one-line ``ValueError`` naming it as given (:func:`setting_name`)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"{setting_name('seed', on_command_line, config)} must be an integer >= 0, got {seed!r}")
    return seed


def flagged(error: ValueError, names: Sequence[str]) -> ValueError:
    """``error`` with its subject named by its flag (``games must be ...`` -> ``--games must be ...``) when the message
    starts with one of ``names`` (the parameters of a library call that a command fills from its flags only)."""
    text = str(error)
    for name in names:
        if text.startswith(f"{name} "):
            return ValueError(setting_name(name, True) + text[len(name) :])
    return error


def add_arguments(parser: argparse.ArgumentParser) -> None:

    parser.description = (
        "Benchmark a submitted agent (FILE.py:NAME or MODULE:NAME, with ,key=value constructor arguments) on "
        "fixed seeds against the optimal and greedy agents, in an isolated process (Linux, bubblewrap) with time "
        "and resource limits, "
        "and report percent of optimal (95% CI), the exact regret split into keep and box decisions, the "
        "costliest mistakes, the score distribution, every failure of the submission, and a replay of any game."
    )
    parser.add_argument(
        "submission",
        metavar="SUBMISSION",
        nargs="+",
        help="the agent: student.py:MyAgent[,key=value...] or student.py (its one agent class); a class: a folder of "
        "*.py files (or of a folder per student), or several files",
    )
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
    parser.add_argument("--out", type=nonempty, metavar="DIR", help="write DIR/report.json, report.md and report.html")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="with --out: replace a report (or a class's grades: the folders of students no longer in it go too) "
        "already in DIR",
    )
    add_sandbox_arguments(
        parser,
        who="the submission",
        total="time the submission may use in all (default {default:g}); then its games score 0",
        failures="failed games after which grading stops asking (default {default})",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")
    group = parser.add_argument_group("a class (a folder or several submissions; needs --out)")
    group.add_argument(
        "--jobs",
        type=int,
        help="submissions graded at once (default: the cores available); the time limits are wall-clock time, so "
        "a grade with time limit failures is graded again alone at the end",
    )
    group.add_argument(
        "--class",
        dest="class_name",
        metavar="NAME",
        help="the agent class in each file (default: the one class with an act method)",
    )
    group.add_argument("--rubric", metavar="FILE", help="the points: a rubric file (TOML, docs/grading.md)")
    group.add_argument(
        "--starter",
        metavar="FILE",
        action="append",
        help="code every student was given (repeatable): not counted when looking for similar submissions",
    )
    group.add_argument(
        "--similarity",
        metavar="SHARE",
        type=float,
        help="flag two submissions as similar when this share of one's code is in the other (0 to 1; default 0.8)",
    )


def own_folder(submission: str) -> bool:
    """Whether a submission's file is in a folder of its author's own, not beside classmates' agent files
    (:func:`agents.course.classroom.beside_other_agents`); a module's spec: ``True`` (no file beside it is named)."""
    from agents.course.classroom import beside_other_agents
    from agents.players.registry import parse_agent_spec

    parsed = parse_agent_spec(submission)
    return parsed is None or not parsed.is_file or not beside_other_agents(parsed.source)


def run(args: argparse.Namespace) -> int:
    from agents.commands.bench import check_out_dir, remove_empty
    from agents.course.classroom import missing_folder
    from agents.course.grade_report import summary_text
    from agents.course.grader import LIMIT_SETTINGS, REPORT_FILES, grade, protect_process, write_report
    from dice_poker_env.rules import load_rules

    protect_process()
    class_options = any(getattr(args, name) is not None for name in _CLASS_OPTIONS)
    for entry in args.submission:
        missing = missing_folder(entry)
        if missing is None and class_options and len(args.submission) == 1 and not os.path.exists(entry):
            missing = None if ":" in entry or "," in entry or entry.endswith(".py") else f"{entry}: no such folder"
        if missing is not None:  # (not a malformed spec, nor a class option without a class)
            raise ValueError(missing)
    if class_options and len(args.submission) == 1 and re.fullmatch(r".+\.py:\w+", args.submission[0]):
        # FILE.py:NAME with a class option: a class of one, whose agent class is NAME
        path, name = args.submission[0].rsplit(":", 1)
        if args.class_name not in (None, name):
            raise ValueError(f"{args.submission[0]} names the class {name}, --class {args.class_name}: give one")
        args.submission, args.class_name = [path], name
    if is_class(args.submission) or (class_options and args.submission[0].endswith(".py")):
        return run_class(args)
    if class_options:
        raise ValueError(
            "--jobs, --class, --rubric, --starter and --similarity grade a class: a folder or several submissions"
        )
    if args.overwrite and not args.out:
        raise ValueError("--overwrite goes with --out DIR")
    chosen = _chosen(args)
    limits = checked_limits({name: chosen[name] for name in LIMIT_SETTINGS}, args, args.config)
    checked_settings(chosen, args, args.config)  # before the solve and the submission
    submission = resolve_submission(args.submission[0])
    rules = load_rules(chosen["rules"], **chosen["options"])
    out = Path(args.out) if args.out else None
    if out is not None:
        from agents.course.gradebook import student_folder_problem

        problem = student_folder_problem(out, single=True)
        if problem is not None:  # (--overwrite or not: a class's grades are never mixed with one report)
            raise ValueError(problem)
    created = check_out_dir(out, args.overwrite, REPORT_FILES, "a report") if out is not None else []

    def interrupt(signum: int, frame: object) -> NoReturn:  # SIGTERM as Ctrl-C: the grade ends with a partial report
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        report = grade(
            submission,
            rules,
            games=chosen["games"],
            seed=chosen["seed"],
            limits=limits,
            progress=not args.json,
            isolated=not args.unisolated,
            solver=chosen["solver"],
            own_folder=own_folder(submission),
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


#: grading seeds below this are few enough for a submission to try them all against the dice it sees
GUESSABLE_SEEDS = 1 << 32


def warn_guessable_seed(seed: int, command: str = "grade") -> None:
    """A one-line warning on standard error when the seed of submissions' games is small enough to be found
    by trying."""
    if 0 <= seed < GUESSABLE_SEEDS:
        after = (
            "The luck-free percent and the luck flag are not fooled either way (docs/grading.md, Seeds)"
            if command == "grade"
            else "Without --seed a tournament draws a large one (docs/tournament.md)"
        )
        print(
            f"dice-poker {command}: warning: seed {seed} is small: a submission that tries seeds against the dice "
            f"it sees could find it and know every die ahead; to grade others, use a large random seed "
            f"(python -c 'import secrets; print(secrets.randbits(63))'); for your own practice it does not matter. "
            f"{after}",
            file=sys.stderr,
            flush=True,
        )


#: the options that only grade a class (with one ``FILE.py`` they make it a class of one)
_CLASS_OPTIONS = ("jobs", "class_name", "rubric", "starter", "similarity")


def is_class(submissions: Sequence[str]) -> bool:
    """A class rather than one submission: several submissions or a folder."""
    return len(submissions) > 1 or os.path.isdir(submissions[0])


def resolve_submission(submission: str) -> str:
    """One submission's agent spec, checked before anything runs: a bare ``FILE.py`` gets its agent class as
    class grading finds it; a ``FILE.py:NAME`` spec's file must exist (a ``ValueError`` naming it, as given)."""
    from agents.course.classroom import UNREADABLE_NAME, find_agent_class, missing_folder, reads_back
    from agents.players.registry import parse_agent_spec

    missing = missing_folder(submission)
    if missing is not None:
        raise ValueError(missing)
    if os.path.isdir(submission):  # (grade takes a folder as a class; check takes one submission)
        raise ValueError(f"{submission}: a folder; give one submission (FILE.py or FILE.py:NAME)")
    if submission.endswith(".py"):
        if not os.path.isfile(submission):
            raise ValueError(f"{submission}: no such file")
        problem = parse_problem(submission)
        if problem is not None:  # (no class to name: it was graded as FILE.py:Agent, a name made up)
            raise ValueError(f"{submission}: {problem}")
        name, why = find_agent_class(submission)
        if name is None:
            raise ValueError(f"{submission}: {why}")
        if not reads_back(submission, f"{submission}:{name}"):
            raise ValueError(f"{submission}: {UNREADABLE_NAME}")
        return f"{submission}:{name}"
    try:
        parsed = parse_agent_spec(submission)
    except ValueError:
        return submission  # the grader reports a malformed spec as it always has
    if parsed is not None and parsed.is_file and not os.path.isfile(parsed.source):
        raise ValueError(f"{parsed.source}: no such file")
    return submission


def parse_problem(path: str) -> str | None:
    """Why the Python file ``path`` does not parse, so that its agent class cannot be found (``SyntaxError:
    invalid syntax (line 3): ...``), or ``None`` (it parses, or cannot be read: the class search says so). The
    file is parsed, never run, its text decoded as the class search decodes it (a ``# coding: punycode`` line on a
    file of one long number had the parser decode it for minutes)."""
    import ast

    from agents.course.classroom import syntax_problem
    from agents.course.similarity import python_source

    try:
        source = python_source(path)
    except OSError:
        return None
    try:
        ast.parse(source, filename=os.path.basename(path))
    except SyntaxError as error:
        return syntax_problem(error)
    except (ValueError, RecursionError, MemoryError) as error:
        return f"it cannot be parsed here ({type(error).__name__}): name its agent class, FILE.py:NAME"
    return None


def _chosen(args: argparse.Namespace) -> dict:
    from agents.course.grader import settings

    return settings(
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


def run_class(args: argparse.Namespace) -> int:
    """Grade a class (:func:`agents.course.classroom.grade_class`) and write its files."""
    from agents.commands.bench import check_out_dir, remove_empty
    from agents.course.classroom import CLASS_FILES, find_class, grade_class, student_name
    from agents.course.grade_report import summary_text_line
    from agents.course.gradebook import class_data, class_folders, replace_class, student_folder_problem, write_class
    from agents.course.grader import LIMIT_SETTINGS
    from agents.course.rubric import load_rubric
    from agents.course.similarity import DEFAULT_SHARE
    from agents.evaluation.limits import check_count
    from dice_poker_env.rules import load_rules

    chosen = _chosen(args)
    limits = checked_limits({name: chosen[name] for name in LIMIT_SETTINGS}, args, args.config)
    checked_settings(chosen, args, args.config)  # the settings first, as in a single grade
    if not args.out:
        raise ValueError("grading a class needs --out DIR (the reports, gradebook.csv and index.html go there)")
    rubric = load_rubric(args.rubric) if args.rubric else None
    if args.similarity is not None and not 0.0 < args.similarity <= 1.0:
        raise ValueError(f"--similarity must be a share in (0, 1], got {args.similarity:g}")
    for path in args.starter or ():
        if not os.path.isfile(path):
            raise ValueError(f"--starter {path}: no such file")
    if args.jobs is not None:  # (None: every core) as grade_class would check it, before the warning below
        check_count("--jobs", args.jobs, most=1024)
    submissions, skipped = find_class(args.submission, args.class_name)
    rules = load_rules(chosen["rules"], **chosen["options"])
    out = Path(args.out)
    problem = student_folder_problem(out, single=False)
    if problem is not None:
        raise ValueError(problem)
    created = check_out_dir(out, args.overwrite, CLASS_FILES, "a class's grades")
    # --overwrite of a class: graded beside it and swapped in once complete, so that an interrupt leaves it whole
    staged = any((out / name).exists() for name in CLASS_FILES)
    gone = sorted(class_folders(out) - {s.folder for s in submissions}) if staged else []
    warn_guessable_seed(chosen["seed"])
    if gone:
        print(
            summary_text_line(
                f"dice-poker grade: warning: --overwrite: {len(gone)} student folder(s) of the class in {out} are not "
                f"in this grading and are removed once it is complete: {', '.join(gone)} (Ctrl-C keeps the class "
                "as it is)"
            ),
            file=sys.stderr,
            flush=True,
        )
    if staged:
        try:
            target = Path(tempfile.mkdtemp(prefix=f"{out.resolve().name}.regrade-", dir=out.resolve().parent))
        except OSError as error:
            raise OSError(
                f"--out {out}: cannot write beside it, where a regrade is written before it replaces the class "
                f"({error.strerror or error})"
            ) from None
    else:
        target = out

    def interrupt(signum: int, frame: object) -> NoReturn:  # SIGTERM as Ctrl-C: the grades in progress end partial
        raise KeyboardInterrupt

    def note(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr, flush=True)

    for other in skipped:  # named, not lost without a word
        note(summary_text_line(f"{other.path}: {other.why}"))
    previous = signal.signal(signal.SIGTERM, interrupt)
    result = None
    try:
        result = grade_class(
            submissions,
            rules,
            target,
            games=chosen["games"],
            seed=chosen["seed"],
            limits=limits,
            isolated=not args.unisolated,
            solver=chosen["solver"],
            jobs=args.jobs,
            rubric=rubric,
            progress=note,
            starter=args.starter or (),
            similar_share=DEFAULT_SHARE if args.similarity is None else args.similarity,
            skipped=skipped,
        )
        write_class(result, target)  # (SIGTERM as Ctrl-C here too: the staged folder goes, not left without a word)
    except BaseException:
        remove_empty(created)
        if staged:
            shutil.rmtree(target, ignore_errors=True)
        if result is not None:  # stopped while the files were written
            print(
                "dice-poker grade: stopped while writing the grades: "
                + (f"the class in {out} is as it was" if staged else f"the files in {out} are incomplete")
                + "; grade the class again with --overwrite",
                file=sys.stderr,
                flush=True,
            )
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    late: set[signal.Signals] = set()
    if staged and not result.interrupted:
        late = replace_class(target, out, gone)
    if late:  # (after the grading, during the swap: the class was complete, and is in place)
        print(f"{', '.join(sorted(s.name for s in late))} came while the class was being replaced: it is complete")
    where = target if result.interrupted else out
    gradebook, page = where / "gradebook.csv", where / "index.html"
    if args.json:
        print(json.dumps(class_data(result), sort_keys=True), flush=True)
    else:
        for pair in result.similar:
            first, second = (student_name(result, folder) for folder in (pair.first, pair.second))
            print(
                summary_text_line(
                    f"similar code: {first} and {second} ({pair.share_first:.0%} of the first is in the "
                    f"second, {pair.share_second:.0%} of the second in the first): read both (docs/grading.md)"
                ),
                flush=True,
            )
        left = [s for s in result.students if not s.graded]
        done = len(result.students) - len(left)
        if result.interrupted:
            print(
                f"INTERRUPTED after {result.seconds:.1f} s: graded {done} of {len(result.students)} submissions; "
                f"not graded or cut short: {', '.join(s.submission.student for s in left)}. Their rows hold no "
                f"grade and they have no results.json (status not_graded or interrupted); grading "
                f"the class again (--overwrite) grades everyone. "
                + (
                    f"The class in {out} is as it was: this grading's partial grades are in {target} ({gradebook}, "
                    f"{page} and a folder per student): read them, then remove the folder"
                    if staged
                    else f"Wrote {gradebook}, {page} and a folder per student"
                ),
                flush=True,
            )
        else:
            if gone:
                print(
                    summary_text_line(f"removed {len(gone)} student folder(s) of the earlier grade: {', '.join(gone)}")
                )
            print(
                f"graded {len(result.students)} submission{'s' if len(result.students) != 1 else ''} in "
                f"{result.seconds:.1f} s ({min(result.jobs, len(result.students))} at a time); "
                f"wrote {gradebook}, {page} and a folder per student",
                flush=True,
            )
            failed = [s.submission.student for s in result.students if s.status == "error"]
            if failed:  # (the grader's failure, not the students': no grade, no results.json)
                print(
                    summary_text_line(
                        f"the grader failed on {', '.join(failed)} (status error, in failure_kinds): no grade and no "
                        f"results.json; grade them again"
                    ),
                    flush=True,
                )
    return 130 if result.interrupted else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.commands.grade ...`` (the same as ``dice-poker grade ...``); bad input is a one-line error,
    status 2."""
    from agents.commands import module_main

    return module_main("grade", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
