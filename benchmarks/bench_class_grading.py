"""Grading a class with one command against grading its students one by one (``dice-poker grade``).

The class is ``examples/course/instructor/class_example/`` (ten submissions: good, weak, crashing, raising,
slow, illegal, not loading), graded with ``examples/course/instructor/grading.toml`` and
``examples/course/instructor/rubric.toml`` on ``--games`` games. The contenders, each a command line run end
to end (a new Python process, as an instructor runs it):

* ``class``: ``python -m agents.commands.grade examples/course/instructor/class_example --config ... --rubric ...
  --games N --out DIR`` (the references played once, ``--jobs`` default: the cores available);
* ``class-1job``: the same with ``--jobs 1`` (the references once, the students one after another);
* ``singles``: ``python -m agents.commands.grade FILE.py:CLASS --config ... --games N --out DIR/<student>``
  for each of the ten, one after another (today's workflow, ``examples/course/README.md``).

The contenders run in interleaved rounds (``--rounds``, the order reversed every other round), so
that the machine's load affects each alike; the solver's values are cached first. Every student's
``report.json`` of the class grade is compared with the single grade's: the same games give the same
report, except where a time limit is involved (a timeout's message can differ).

Usage::

    python benchmarks/bench_class_grading.py [--games 200] [--rounds 1] [--contenders class,class-1job,singles] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.evaluation.limits import MAX_GAMES  # noqa: E402
from dice_poker_env.cli import machine_description  # noqa: E402

COURSE = ROOT / "examples" / "course" / "instructor"
CLASS = COURSE / "class_example"
CONTENDERS = ("class", "class-1job", "singles")


def _run(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agents.commands.grade", *args], cwd=ROOT, capture_output=True, text=True, timeout=86400
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"grade {' '.join(args[:1])} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds


def _settings(games: int) -> list[str]:
    return ["--config", str(COURSE / "grading.toml"), "--games", str(games)]


def contender(name: str, games: int, out: Path) -> float:
    """Seconds one contender takes, writing its reports under ``out``."""
    from agents.course.classroom import find_submissions

    if name == "singles":
        seconds = 0.0
        for submission in find_submissions([str(CLASS)]):
            assert submission.spec is not None, submission
            seconds += _run([submission.spec, *_settings(games), "--out", str(out / submission.folder)])
        return seconds
    jobs = ["--jobs", "1"] if name == "class-1job" else []
    return _run([str(CLASS), *_settings(games), "--rubric", str(COURSE / "rubric.toml"), *jobs, "--out", str(out)])


def same_reports(a: Path, b: Path) -> tuple[int, list[str]]:
    """How many students' ``report.json`` are identical in ``a`` and ``b``, and the others' names."""
    same, differ = 0, []
    for report in sorted(a.glob("*/report.json")):
        other = b / report.parent.name / "report.json"
        if other.is_file() and other.read_bytes() == report.read_bytes():
            same += 1
        else:
            differ.append(report.parent.name)
    return same, differ


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=at_least(1, most=MAX_GAMES), default=200, help="games per agent (default 200)")
    parser.add_argument("--rounds", type=at_least(1), default=1, help="interleaved rounds (default 1)")
    parser.add_argument(
        "--contenders", default=",".join(CONTENDERS), help=f"comma-separated, of {', '.join(CONTENDERS)}"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    names = args.contenders.split(",")
    unknown = sorted(set(names) - set(CONTENDERS))
    if unknown:
        parser.error(f"--contenders: {', '.join(unknown)} is not one of {', '.join(CONTENDERS)}")
    from agents.course.classroom import default_jobs
    from agents.course.isolation import isolation_method, isolation_problem

    problem = isolation_problem()
    if problem is not None:
        raise SystemExit(f"bench_class_grading: {problem}")
    out: dict = {
        "machine": f"{machine_description()} ({default_jobs()} usable), {platform.platform()}",
        "isolation": isolation_method(),
        "games": args.games,
        "seconds": {name: [] for name in names},
    }
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        _run([f"{CLASS / 'ada.py'}:MyAgent", *_settings(2)])  # the solver's values into the cache first
        for round_ in range(args.rounds):
            order = names if round_ % 2 == 0 else names[::-1]
            for name in order:
                folder = Path(tmp) / f"{name}-{round_}"
                out["seconds"][name].append(contender(name, args.games, folder))
                print(f"round {round_}: {name} {out['seconds'][name][-1]:.1f} s", file=sys.stderr, flush=True)
        if "class" in names and "singles" in names:
            same, differ = same_reports(Path(tmp) / "class-0", Path(tmp) / "singles-0")
            out["identical_reports"], out["different_reports"] = same, differ
    mean = {name: sum(v) / len(v) for name, v in out["seconds"].items()}
    out["mean_seconds"] = mean
    if "singles" in mean:
        out["ratio_to_singles"] = {name: value / mean["singles"] for name, value in mean.items()}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{out['machine']}; {out['isolation']}; {args.games} games per agent, {args.rounds} round(s)")
        for name, value in mean.items():
            runs = ", ".join(f"{s:.1f} s" for s in out["seconds"][name])
            ratio = f" ({out['ratio_to_singles'][name]:.2f} x singles)" if "singles" in mean else ""
            print(f"{name}: {value:.1f} s{ratio} (runs: {runs})")
        if "identical_reports" in out:
            print(
                f"identical reports, class vs singles: {out['identical_reports']} (different: {out['different_reports']})"
            )
    return out


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
