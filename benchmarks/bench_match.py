"""Games per second of a head-to-head match: lockstep against the AEC env deal by deal.

Plays ``--games`` games of agent A against agent B (default ``optimal`` against itself) with
:func:`agents.evaluation.match.play_deals` (every game of a block at once on the engine's batched
step), and ``--aec-games`` of the same deals one by one through the PettingZoo AEC env
(:func:`agents.course.duplicate.play_game`, the reference the tests compare with), and checks
that the games both ways played end with the same scores. The dice are dealt inside the timing
(:func:`dice_poker_env.dice_sources.deal_faces`, a NumPy generator per seat and deal); agents are
built, and the ruleset solved or read from the cache, before it.

    python benchmarks/bench_match.py --rules yahtzee [--games 20000] [--aec-games 200] [--agents optimal optimal]
        [--json] [--out results/bench/bench_match_yahtzee.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's agents package

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.course.duplicate import deal_faces, play_game  # noqa: E402
from agents.evaluation.match import play_deals  # noqa: E402
from agents.players.registry import make_agent  # noqa: E402
from dice_poker_env.cli import machine_description  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402


def measure(rules_name: str, agents: list[str], games: int, aec_games: int, seed: int = 0) -> dict:
    rules = load_rules(rules_name)
    turns = compile_rules(rules).turns
    a, b = (make_agent(spec, rules) for spec in agents)
    start, cpu = time.perf_counter(), time.process_time()
    scores = play_deals(rules, [a, b], seed, games // 2)
    lockstep, lockstep_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    reference = np.empty((aec_games // 2, 2, 2), dtype=np.int64)
    for d in range(aec_games // 2):
        faces = deal_faces(seed, d, 2, turns)
        reference[d, 0] = play_game(rules, [a, b], faces).scores
        reference[d, 1] = play_game(rules, [b, a], faces).scores
    aec, aec_cpu = time.perf_counter() - start, time.process_time() - cpu
    same = bool(np.array_equal(reference, scores[: aec_games // 2]))
    return {
        "rules": rules.name,
        "agents": agents,
        "seed": seed,
        "lockstep_games": games,
        "lockstep_seconds": lockstep,
        "lockstep_games_per_second": games / lockstep,
        "lockstep_cpu_seconds": lockstep_cpu,
        "lockstep_games_per_cpu_second": games / lockstep_cpu,
        "aec_games": aec_games,
        "aec_seconds": aec,
        "aec_games_per_second": aec_games / aec,
        "aec_cpu_seconds": aec_cpu,
        "aec_games_per_cpu_second": aec_games / aec_cpu if aec_cpu else None,
        "speedup": (games / lockstep) / (aec_games / aec),
        "same_scores": same,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "hardware": f"{machine_description()} (shared)",
        "command": f"python benchmarks/bench_match.py --rules {rules.name} --agents {' '.join(agents)} "
        f"--games {games} --aec-games {aec_games} --seed {seed}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="yahtzee")
    parser.add_argument("--agents", nargs=2, default=["optimal", "optimal"], metavar=("A", "B"))
    parser.add_argument("--games", type=at_least(2), default=20_000, help="games in lockstep (even)")
    parser.add_argument(
        "--aec-games", type=at_least(2), default=200, help="games through the AEC env (even, at least 2)"
    )
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.games % 2 or args.aec_games % 2 or args.aec_games > args.games:
        parser.error("--games and --aec-games must be even, --aec-games at most --games")
    if args.out is not None:  # checked before the games (rerunning replaces the earlier file on purpose)
        from agents.commands.bench import check_out_file

        check_out_file(args.out, True)
    result = measure(args.rules, args.agents, args.games, args.aec_games, args.seed)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['rules']} {' vs '.join(result['agents'])}: lockstep {result['lockstep_games_per_second']:,.0f} "
            f"games/s ({args.games:,} games in {result['lockstep_seconds']:.1f} s, "
            f"{result['lockstep_games_per_cpu_second']:,.0f} a CPU second); AEC env deal by deal "
            f"{result['aec_games_per_second']:,.1f} games/s ({args.aec_games} games, "
            f"{result['aec_games_per_cpu_second'] or 0:,.1f} a CPU second); "
            f"{result['speedup']:.0f}x; same scores: {result['same_scores']}"
        )
    return 0 if result["same_scores"] else 1


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
