"""Speed and strength of the ``winning`` agent in lockstep two-player games.

    python -m benchmarks.bench_winning [--games N] [--match GAMES] [--future expected|reach] [--json FILE] [RULES ...]

Per ruleset (default: yacht): ``--games`` games (default 200) of self-play, for the ``winning`` agent
and for the ``optimal`` agent in the same run: decisions and games per second of play (the agents'
``act_batch``, the engine's steps and the observations), wall-clock and per CPU second. With
``--match GAMES``, also ``winning`` against ``optimal`` in GAMES duplicate games: the win rate of
``winning`` (a tie counts a half) with its 95% CI over the deals.

Both play the project's match (:mod:`agents.evaluation.match`, what ``dice-poker match`` plays): the
same deals, the same lockstep loop, the same statistics; self-play is a match of an agent against
itself. The reach table is loaded from the user's solver cache (or solved there first: yahtzee's
takes about 40 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path


def speed(rules: Any, agent: Any, n_games: int, seed: int = 0) -> dict[str, Any]:
    """``agent`` against itself in ``n_games`` duplicate two-player games: decisions and games per second."""
    from agents.evaluation.match import play_deals

    act_batch = agent.act_batch
    decisions, acting = [0], [0.0]

    def counted(observations: Any, masks: np.ndarray) -> np.ndarray:  # the agent's own act_batch, timed
        start = time.perf_counter()
        actions = act_batch(observations, masks)
        acting[0] += time.perf_counter() - start
        decisions[0] += len(masks)
        return actions

    agent.act_batch = counted  # on the instance: the agent keeps its type (a batch agent, played in lockstep)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        scores = play_deals(rules, [agent, agent], seed, (n_games + 1) // 2, lockstep=True)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        del agent.act_batch
    games = 2 * len(scores)
    return {
        "games": games,
        "decisions": decisions[0],
        "wall_seconds": wall,
        "act_seconds": acting[0],
        "cpu_seconds": cpu,
        "games_per_second": games / wall,
        "games_per_cpu_second": games / cpu,
        "decisions_per_second": decisions[0] / wall,
        "mean_score": float(scores.mean()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rules", nargs="*", default=["yacht"])
    parser.add_argument(
        "--games", type=at_least(0), default=200, help="self-play games per agent for the speed (default 200; 0: none)"
    )
    parser.add_argument(
        "--match", type=at_least(0), default=0, help="duplicate games of winning against optimal (default 0)"
    )
    parser.add_argument("--future", default="expected", choices=("reach", "expected"))
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args(argv)
    if args.match % 2:
        parser.error(f"--match must be even (each deal is played twice, the seats swapped), got {args.match}")
    from agents.commands.bench import check_out_file

    if args.json is not None:  # (its earlier results are rerun on purpose: replaced, after a check up front)
        check_out_file(Path(args.json), True, "--json")
    from agents.evaluation.match import match
    from agents.players.optimal import OptimalAgent
    from agents.players.winning import WinningAgent

    out = []
    for rules in args.rules:
        start = time.perf_counter()
        winning = WinningAgent(rules, future=args.future)
        optimal = OptimalAgent(winning.solution)
        row: dict[str, Any] = {
            "rules": winning.rules.name,
            "agent": winning.name,
            "load_seconds": time.perf_counter() - start,
        }
        if args.games:
            row["winning_speed"] = speed(winning.rules, winning, args.games, args.seed)
            row["optimal_speed"] = speed(winning.rules, optimal, args.games, args.seed)
            for who in ("winning", "optimal"):
                s = row[f"{who}_speed"]
                print(
                    f"{row['rules']}: {who:8s} {s['games']} games in lockstep, {s['wall_seconds']:.1f} s: "
                    f"{s['games_per_second']:.1f} games/s, {s['decisions_per_second']:.0f} decisions/s "
                    f"({s['cpu_seconds']:.1f} s CPU: {s['games_per_cpu_second']:.1f} games per CPU second)",
                    flush=True,
                )
        if args.match:
            spec = f"winning,future={args.future}"
            row["match"] = match(winning.rules, spec, "optimal", games=args.match, seed=args.seed)
            m = row["match"]
            low, high = m["win_rate_ci95"]
            print(
                f"{row['rules']}: {spec} vs optimal, {m['games']} duplicate games: win rate "
                f"{m['win_rate']:.4f} (95% CI {low:.4f}-{high:.4f}), W/T/L {m['wins']}/{m['ties']}/{m['losses']}, "
                f"{m['wall_seconds']:.0f} s",
                flush=True,
            )
        out.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "command": "python -m benchmarks.bench_winning " + " ".join(sys.argv[1:]),
                    "machine": {"cpus": os.cpu_count(), "load_average": list(os.getloadavg())},
                    "results": out,
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
