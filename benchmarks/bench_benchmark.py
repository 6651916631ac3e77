"""Speed of ``dice-poker bench`` itself: the lockstep path against the one-by-one path, side by side.

``agents.evaluation.benchmark.play_games`` plays the project's NumPy batch agents (optimal,
greedy, policy files) all at once in lockstep on the engine's batched step, each
game with the dice the single env deals for its seed; any other agent plays game
by game through the single env. Both give the same games and the same results
(``tests/test_bench.py``). This script times both paths on the same seeds, regret
analysis included, for each agent, in one process on one thread, and checks that
they played the same games (the same score and the same regret in every game)
before it reports a ratio. Each path starts from an empty turn cache of the
solution (as a ``dice-poker bench`` process does): the lockstep path, timed
second, would otherwise look up the turn tables the one-by-one path had just
solved for the same games.

Cost: at the default 2,000 games the one-by-one path takes 18-20 s per agent on
yacht and 16-38 s on yahtzee, lockstep about a second
(``results/bench/bench_benchmark_*.json``: 2 vCPU Intel Xeon beside two
trainings), so one to two minutes per ruleset.

Agents: ``optimal``, ``greedy`` and ``trained`` (the policy shipped for the
ruleset), or ``--agents``.

Usage::

    python benchmarks/bench_benchmark.py [--rules yacht] [--games 2000] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402


def _first_difference(one: Any, other: Any) -> tuple[int, str] | None:
    """``(game index, what differs)`` of the first game two paths' results disagree on, else ``None``.

    Scores must be equal; each game's regret (keep, box, illegal and failure
    parts) equal within 1e-6 points (the same floats, summed in the same order,
    by :func:`agents.evaluation.benchmark.play_games`'s contract).
    """
    if len(one.scores) != len(other.scores):
        return min(len(one.scores), len(other.scores)), f"{len(one.scores)} games against {len(other.scores)}"
    for i, (a, b) in enumerate(zip(one.scores, other.scores)):
        if a != b:
            return i, f"score {a} one by one, {b} in lockstep"
    for kind in ("regret_keep", "regret_box", "regret_illegal", "regret_failure"):
        a, b = getattr(one, kind), getattr(other, kind)
        if len(a) != len(b):
            return min(len(a), len(b)), f"{kind}: {len(a)} games against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if abs(x - y) > 1e-6:
                return i, f"{kind} {x:.6f} one by one, {y:.6f} in lockstep"
    return None


def main(argv: list[str] | None = None) -> dict:
    paragraphs = __doc__.split("\n\n")
    cost = next(p for p in paragraphs if p.startswith("Cost:"))
    parser = argparse.ArgumentParser(description=f"{paragraphs[0]} {' '.join(cost.split())}")
    parser.add_argument("--rules", default="yacht", help="ruleset (default yacht)")
    parser.add_argument("--games", type=at_least(1), default=2000, help="games per agent and path (default 2000)")
    parser.add_argument("--agents", nargs="+", default=["optimal", "greedy", "trained"], help="named agents")
    parser.add_argument("--seed", type=at_least(0), default=0, help="benchmark seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--out", type=Path, help="also write the JSON here (results/bench/bench_benchmark_RULES.json: docs/figures.md)"
    )
    args = parser.parse_args(argv)
    if args.out is not None:  # checked before the games (rerunning replaces the earlier file on purpose)
        from agents.commands.bench import check_out_file

        check_out_file(args.out, True)

    from agents.evaluation.benchmark import game_seeds, load_solution, play_games
    from agents.players.registry import make_agent
    from dice_poker_env.rules import load_rules

    rules = load_rules(args.rules)
    solution = load_solution(rules, required=True)
    seeds = game_seeds(args.seed, args.games)
    rows = {}
    for name in args.agents:
        agent = make_agent(name, rules, solution=solution)
        seconds, means = {}, {}
        games = {}
        for path, lockstep in (("one_by_one", False), ("lockstep", True)):
            solution._clear_turn_cache()  # each path solves the turns it visits, as a fresh process would
            start = time.perf_counter()
            part = play_games(rules, agent, seeds, solution, lockstep=lockstep)
            seconds[path] = time.perf_counter() - start
            means[path] = sum(part.scores) / len(part.scores)
            games[path] = part
        disagree = _first_difference(games["one_by_one"], games["lockstep"])
        if disagree is not None:
            raise SystemExit(f"{name}: the two paths disagree in game {disagree[0]} ({disagree[1]}): a bug")
        rows[name] = {
            **{f"{path}_seconds": round(s, 3) for path, s in seconds.items()},
            "ratio": round(seconds["one_by_one"] / seconds["lockstep"], 1),
            "mean_score": means["lockstep"],
        }
        if not args.json:
            print(
                f"{name:>10}: one by one {seconds['one_by_one']:7.2f} s   lockstep {seconds['lockstep']:6.2f} s   "
                f"{rows[name]['ratio']:6.1f}x   (mean score {means['lockstep']:.2f} both)",
                flush=True,
            )
    from agents.evaluation.protocol import code_commit

    result = {
        "rules": rules.name,
        "games": args.games,
        "seed": args.seed,
        "agents": rows,
        "turn_cache": "emptied before each path",
        "command": shlex.join(["python", "benchmarks/bench_benchmark.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d"),
        "git_commit": code_commit(),
        "machine": machine_description(),
        "load_average": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
    }
    if args.out is not None:
        from dice_poker_env.files import write_whole

        write_whole(args.out, json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
