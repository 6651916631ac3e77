"""Cost of isolating submissions in ``dice-poker grade``: per worker start, per decision, and per course grade.

Three measurements, isolated (bubblewrap, :mod:`agents.course.isolation`) against
unisolated (``--unisolated``: the worker is an ordinary child process, as the grader ran
before isolation), interleaved so that both see the same machine load:

1. **start**: constructing a :class:`agents.course.sandbox.SandboxedAgent` (start the
   worker, import the project, load the submission), ``--starts`` times each;
2. **decision**: one ``act`` round trip (the observation out, the action back),
   ``--decisions`` times each, on the course's starter agent;
3. **course grade**: ``python -m agents.commands.grade examples/course/student/my_agent.py:MyAgent
   --config examples/course/instructor/grading.toml --games N`` end to end, without a failure limit (the
   starter agent sometimes keeps all five dice, an illegal action; the solver's values come
   from the cache: a first run solves). ``--baseline DIR`` also times the same command in
   another checkout, with its own course files (e.g. ``git archive`` of the commit before
   isolation, unpacked), which is "today" for the 20% rule.

Usage::

    python benchmarks/bench_grading.py [--starts 10] [--decisions 2000] [--games 2000] [--baseline DIR]
        [--grades isolated,unisolated,baseline] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
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


def course_files(checkout: Path) -> tuple[Path, Path]:
    """The starter agent and the grading config of a checkout: ``student/my_agent.py`` and
    ``instructor/grading.toml``, or, in a checkout from before the course kit split them, both at the top of
    ``examples/course/``."""
    course = checkout / "examples" / "course"
    if (course / "student").is_dir():
        return course / "student" / "my_agent.py", course / "instructor" / "grading.toml"
    return course / "my_agent.py", course / "grading.toml"


def _starts(n: int) -> dict[str, list[float]]:
    from agents.course.sandbox import Limits, SandboxedAgent
    from dice_poker_env import load_rules

    rules = load_rules("yahtzee", joker="forced")
    times: dict[str, list[float]] = {"isolated": [], "unisolated": []}
    for _ in range(n):
        for isolated in (True, False):
            start = time.perf_counter()
            agent = SandboxedAgent(f"{course_files(ROOT)[0]}:MyAgent", rules, limits=Limits(), isolated=isolated)
            times["isolated" if isolated else "unisolated"].append(time.perf_counter() - start)
            assert agent.load_error is None, agent.load_error
            agent.close()
    return times


def _decisions(n: int) -> dict[str, float]:
    from agents.course.sandbox import Limits, SandboxedAgent
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yahtzee", joker="forced")
    env = DicePokerEnv(rules)
    obs, info = env.reset(seed=1)
    agents = {
        name: SandboxedAgent(f"{course_files(ROOT)[0]}:MyAgent", rules, limits=Limits(), isolated=name == "isolated")
        for name in ("isolated", "unisolated")
    }
    times: dict[str, list[float]] = {name: [] for name in agents}
    for agent in agents.values():
        agent.reset()
    for _ in range(max(1, n // 100)):
        for name, agent in agents.items():
            start = time.perf_counter()
            for _ in range(100):
                agent.act(obs, info["action_mask"])
            times[name].append((time.perf_counter() - start) / 100)
    for agent in agents.values():
        assert agent.failure_count == 0
        agent.close()
    return {name: statistics.median(values) for name, values in times.items()}


def _grade(checkout: Path, games: int, extra: list[str], cache: Path, max_failures: int = 1_000_000) -> float:
    command = [
        sys.executable,
        "-m",
        "agents.commands.grade",
        f"{course_files(checkout)[0]}:MyAgent",
        "--config",
        str(course_files(checkout)[1]),
        "--games",
        str(games),
        "--json",
        "--max-failures",
        str(max_failures),
        *extra,
    ]
    env = dict(os.environ, PYTHONPATH=str(checkout), DICE_POKER_CACHE=str(cache))
    start = time.perf_counter()
    result = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=24 * 3600)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"grading in {checkout} failed: {result.stderr.strip().splitlines()[-1:]}")
    report = json.loads(result.stdout)
    if report["status"] not in ("ok", "failures") or report["agents"]["submission"]["games"] != games:
        raise SystemExit(f"grading in {checkout}: status {report['status']}: {report['problems']}")
    return seconds


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=at_least(1), default=10, help="worker starts of each kind (default 10)")
    parser.add_argument(
        "--decisions", type=at_least(1), default=2000, help="act round trips of each kind (default 2000)"
    )
    parser.add_argument(
        "--games",
        type=at_least(0, most=MAX_GAMES),
        default=2000,
        help="games of the course grade (default 2000; 0: skip)",
    )
    parser.add_argument("--baseline", metavar="DIR", help="another checkout to time the same grade in")
    parser.add_argument(
        "--grades",
        help="which course grades to time, in this order, comma-separated; a name may repeat, e.g."
        " isolated,baseline,baseline,isolated (default isolated,unisolated, then baseline with --baseline)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    kinds = {"isolated": (ROOT, []), "unisolated": (ROOT, ["--unisolated"])}
    if args.baseline:
        kinds["baseline"] = (Path(args.baseline).resolve(), [])
    order = args.grades.split(",") if args.grades is not None else list(kinds)
    unknown = sorted(set(order) - set(kinds))
    if unknown:  # before any timing
        parser.error(f"--grades: {', '.join(unknown)} is not one of {', '.join(kinds)} (baseline needs --baseline)")
    from agents.course.isolation import isolation_method, isolation_problem

    problem = isolation_problem()
    if problem is not None:
        raise SystemExit(f"bench_grading: {problem}")
    out: dict = {
        "machine": f"{machine_description()}, {platform.platform()}",
        "isolation": isolation_method(),
        "as_root": os.geteuid() == 0,
    }
    starts = _starts(args.starts)
    out["start_seconds"] = {name: statistics.median(values) for name, values in starts.items()}
    out["decision_ms"] = {name: value * 1000 for name, value in _decisions(args.decisions).items()}
    if args.games:
        # Each checkout has a solver cache of its own, filled first (a first run solves): two checkouts whose cache
        # formats differ would otherwise take each other's file for a damaged one and solve again in the timed runs.
        caches = Path(tempfile.mkdtemp(prefix="bench-grading-"))
        cache = {name: caches / ("baseline" if name == "baseline" else "current") for name in kinds}
        try:
            for name in dict.fromkeys(order):
                _grade(kinds[name][0], 2, kinds[name][1], cache[name])
            grades: dict[str, list[float]] = {name: [] for name in dict.fromkeys(order)}
            for name in order:
                grades[name].append(_grade(kinds[name][0], args.games, kinds[name][1], cache[name]))
        finally:
            shutil.rmtree(caches, ignore_errors=True)
        out["grade_seconds"] = grades
        out["games"] = args.games
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{out['machine']}; {out['isolation']}{' (as root: two-stage)' if out['as_root'] else ''}")
        s, d = out["start_seconds"], out["decision_ms"]
        print(
            f"worker start (median of {args.starts}): isolated {s['isolated']:.3f} s, unisolated {s['unisolated']:.3f} s"
        )
        print(f"one decision (median):       isolated {d['isolated']:.3f} ms, unisolated {d['unisolated']:.3f} ms")
        for name, seconds in out.get("grade_seconds", {}).items():
            each = ", ".join(f"{value:.1f} s" for value in seconds)
            print(f"course grade, {args.games} games, {name}: {sum(seconds) / len(seconds):.1f} s (runs: {each})")
    return out


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
