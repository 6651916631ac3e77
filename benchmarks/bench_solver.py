"""Solver speed side by side with the ``yatzy-solver`` package, and optimal-agent play speed.

Each solve is timed as a whole process from an empty cache (interpreter start,
imports, solve, output), ours and theirs alternately in the same run:

* ``dice-poker solve yahtzee --option joker=free --json``  vs  yatzy-solver ``american``
  (Verhoeff's free-joker convention, optimum 254.5896);
* ``dice-poker solve yatzy --json``  vs  yatzy-solver ``yatzy-scandinavian`` (248.4400).

The machine is shared and noisy, so each solver runs ``--repeat`` times (5 by
default), alternating, and the fastest run of each counts; all times are in the
``--json`` output. Before a ratio is reported both solvers' optimal expected scores
must match the published optimum within ``OPTIMUM_TOLERANCE`` points (they agree to
about 2e-6): a ratio of two solvers that solved different games means nothing. Our package's bytecode is compiled first (see
:func:`compile_package`).

``yatzy-solver`` ships no command-line program, so its process is
``python -c "Solver.build(Variant(name))"`` plus printing the start value; it is
skipped (reported as missing) when the package is not installed
(``pip install yatzy-solver`` or the ``bench`` extra).

Then the optimal agent's play speed on ``yahtzee``: games per second batched
(:func:`agents.players.optimal.play_games`) and one game at a time through the env.

Cost: with the defaults about two to three minutes (five runs of each solver of
about 2-5 s ours and 5-13 s theirs per ruleset, then 20,000 games; 2 vCPU Intel
Xeon, ``docs/figures.md``).

Usage::

    python benchmarks/bench_solver.py [--repeat 5] [--games 20000] [--json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path

PAIRS = [
    ("yahtzee joker=free", ["yahtzee", "--option", "joker=free"], "american", 254.589609),
    ("yatzy", ["yatzy"], "yatzy-scandinavian", 248.4399894),
]
TARGET_RATIO = 0.35
OPTIMUM_TOLERANCE = 1e-4  # points: both solvers must find the published optimum before their times compare

_THEIRS = (
    "import yatzy_solver as ys, json, sys; "
    "s = ys.Solver.build(ys.Variant(sys.argv[1])); "
    "print(json.dumps({'expected_score': s.state_value('upper 0 | filled -')}))"
)


def _run(command: list[str], env: dict[str, str]) -> tuple[float, dict, int]:
    """Wall seconds, parsed JSON stdout and peak RSS (KiB) of one process."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, json.loads(done.stdout.strip().splitlines()[-1]), peak


def _ours_command() -> list[str]:
    """The installed ``dice-poker`` program (else ``python -m dice_poker_env``)."""
    found = shutil.which("dice-poker")
    return [found] if found else [sys.executable, "-m", "dice_poker_env"]


def have_theirs() -> bool:
    try:
        import yatzy_solver  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


def compile_package() -> None:
    """Write the package's bytecode caches, as a first import (or ``pip install``) does.

    Both sides should start from compiled Python: ``yatzy_solver`` was installed
    with its bytecode, while an editable checkout run with
    ``PYTHONDONTWRITEBYTECODE`` set (as on the project's machines) would
    otherwise recompile our modules in every timed process.
    """
    import dice_poker_env

    compileall.compile_dir(os.path.dirname(dice_poker_env.__file__), quiet=1)


def check_optimum(label: str, solver: str, found: float, published: float) -> None:
    """Refuse to compare times when ``solver`` did not find ``published`` (within ``OPTIMUM_TOLERANCE``)."""
    if not abs(float(found) - published) <= OPTIMUM_TOLERANCE:
        raise SystemExit(
            f"{label}: {solver} found an optimum of {float(found):.6f}, the published one is {published:.6f}: "
            "the two solvers did not solve the same game, so their times do not compare"
        )


def bench_solve(repeat: int) -> list[dict]:
    rows = []
    theirs_available = have_theirs()
    compile_package()
    for label, ours_args, variant, published in PAIRS:
        ours_times, theirs_times = [], []
        ours_out = theirs_out = None
        for _ in range(repeat):
            cache = tempfile.mkdtemp(prefix="dice-poker-bench-")
            env = {**os.environ, "DICE_POKER_CACHE": cache}
            try:
                seconds, ours_out, _ = _run([*_ours_command(), "solve", *ours_args, "--json", "--no-progress"], env)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            ours_times.append(seconds)
            if theirs_available:
                seconds, theirs_out, _ = _run([sys.executable, "-c", _THEIRS, variant], dict(os.environ))
                theirs_times.append(seconds)
        assert ours_out is not None  # repeat >= 1 (main checks it): the loop ran, and each round sets it or raises
        check_optimum(label, "dice-poker solve", ours_out["expected_score"], published)
        if theirs_out is not None:
            check_optimum(label, f"yatzy-solver {variant}", theirs_out["expected_score"], published)
        row = {
            "ruleset": label,
            "published": published,
            "ours_seconds": min(ours_times),
            "ours_all_seconds": ours_times,
            "theirs_all_seconds": theirs_times,
            "ours_expected_score": ours_out["expected_score"],
            "ours_std": ours_out["score_std"],
            "ours_states": ours_out["states"],
            "ours_solver_seconds": ours_out["seconds"],
            "theirs_variant": variant,
            "theirs_seconds": min(theirs_times) if theirs_times else None,
            "theirs_expected_score": theirs_out["expected_score"] if theirs_out else None,
        }
        row["ratio"] = row["ours_seconds"] / row["theirs_seconds"] if row["theirs_seconds"] else None
        # the ratio of the medians: less sensitive to one lucky run on either side
        row["median_ratio"] = statistics.median(ours_times) / statistics.median(theirs_times) if theirs_times else None
        rows.append(row)
    return rows


def bench_play(games: int) -> dict:
    """Optimal agent on yahtzee: batched games/s (cold and warm turn cache) and env games/s."""
    from agents.players.optimal import OptimalAgent, play_games
    from dice_poker_env.envs.single import DicePokerEnv

    agent = OptimalAgent("yahtzee", progress=False)
    start = time.perf_counter()
    scores = play_games(agent, games, seed=1)
    cold = games / (time.perf_counter() - start)
    start = time.perf_counter()
    play_games(agent, games, seed=2)
    warm = games / (time.perf_counter() - start)
    env = DicePokerEnv(agent.rules)
    n_env = max(50, games // 100)
    start = time.perf_counter()
    for seed in range(n_env):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, done, _, info = env.step(agent.act(obs, info["action_mask"]))
    single = n_env / (time.perf_counter() - start)
    return {
        "games": games,
        "mean_score": float(scores.mean()),
        "batched_games_per_s_cold": cold,
        "batched_games_per_s_warm": warm,
        "env_games_per_s": single,
        "env_games": n_env,
    }


def main(argv: list[str] | None = None) -> int:
    paragraphs = __doc__.split("\n\n")
    cost = next(p for p in paragraphs if p.startswith("Cost:"))
    parser = argparse.ArgumentParser(description=f"{paragraphs[0]} {' '.join(cost.split())}")
    parser.add_argument(
        "--repeat", type=at_least(1), default=5, help="runs per solver, alternating (the fastest counts)"
    )
    parser.add_argument("--games", type=at_least(0), default=20000, help="games for the play benchmark (0: skip)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"solve": bench_solve(args.repeat), "target_ratio": TARGET_RATIO}
    if args.games:
        results["play"] = bench_play(args.games)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"{'ruleset':<20} {'ours s':>8} {'theirs s':>9} {'ratio':>6} {'median':>7}  {'ours optimum':>13} {'theirs optimum':>14} {'states':>9}"
    )
    for row in results["solve"]:
        theirs = f"{row['theirs_seconds']:9.2f}" if row["theirs_seconds"] else "  missing"
        ratio = f"{row['ratio']:6.2f}" if row["ratio"] else "     -"
        median = f"{row['median_ratio']:7.2f}" if row["median_ratio"] else "      -"
        theirs_opt = f"{row['theirs_expected_score']:14.6f}" if row["theirs_expected_score"] else " " * 14
        print(
            f"{row['ruleset']:<20} {row['ours_seconds']:8.2f} {theirs} {ratio} {median}  {row['ours_expected_score']:13.6f} {theirs_opt} {row['ours_states']:9d}"
        )
    print(f"target: ratio <= {TARGET_RATIO} (ratio: of the fastest runs; median: of the median runs)")
    if "play" in results:
        play = results["play"]
        print(
            f"optimal agent, yahtzee: {play['batched_games_per_s_cold']:.0f} games/s batched (cold turn cache), "
            f"{play['batched_games_per_s_warm']:.0f} warm; {play['env_games_per_s']:.0f} games/s one at a time in the env"
        )
    return 0


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
