"""Speed and strength of the ``winning`` agent in lockstep two-player games.

    python -m benchmarks.bench_winning [--games N] [--match GAMES] [--future expected|reach] [--json FILE] [RULES ...]

Per ruleset (default: yacht): ``--games`` games (default 200) of self-play in lockstep, every game of
the batch advancing one decision per step (the engine's batch functions, :func:`play_lockstep`), for
the ``winning`` agent and for the ``optimal`` agent in the same run: decisions and games per second of
play (the agents' ``act_batch``, the engine's steps and the observations). With ``--match GAMES``, also
``winning`` against ``optimal`` in GAMES duplicate games (game pairs with the seats swapped on the same
dice): the win rate of ``winning`` (a tie counts a half) with its 95% CI over game pairs. The reach table
is loaded from the user's solver cache (or solved there first: yahtzee's takes about 40 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np


def play_lockstep(tables: Any, agents: list[Any], seats: np.ndarray, seed: int = 0) -> dict[str, Any]:
    """Play ``len(seats)`` multi-player games in lockstep; ``seats[g, s]`` the index in ``agents`` of seat ``s``.

    The dice come per (game pair, seat): games ``2k`` and ``2k + 1`` give seat ``s`` the same
    stream of faces (the first roll of each turn and the faces of each reroll), so with the
    seats swapped between them they are a duplicate pair. Returns the final totals ``(games,
    seats)``, the decisions each agent took and the seconds each spent in ``act_batch``.
    """
    from dice_poker_env.engine import game
    from dice_poker_env.engine.combinatorics import N_DICE, roll_index_of_sorted
    from dice_poker_env.engine.masks import action_masks
    from dice_poker_env.engine.state import BatchState
    from dice_poker_env.envs.observation import filled_flags_batch, observe_dict_batch

    n_games, n_seats = seats.shape
    rng = np.random.default_rng(seed)
    pairs = (n_games + 1) // 2
    faces = rng.integers(1, 7, size=(pairs, n_seats, tables.turns + 1, 3, N_DICE))
    faces = np.repeat(faces, 2, axis=0)[:n_games]  # (games, seats, turn, roll number, die)
    masks = action_masks(tables)
    states = [game.new_batch(tables, roll_index_of_sorted(np.sort(faces[:, s, 0, 0], axis=1))) for s in range(n_seats)]
    current = np.zeros(n_games, dtype=np.int64)
    over = np.zeros(n_games, dtype=bool)
    seconds = np.zeros(len(agents))
    decisions = np.zeros(len(agents), dtype=np.int64)
    while not over.all():
        for s in range(n_seats):
            rows_s = np.flatnonzero((current == s) & ~over)
            for a, agent in enumerate(agents):
                rows = rows_s[seats[rows_s, s] == a]
                if not len(rows):
                    continue
                me = states[s].take(rows)
                obs = observe_dict_batch(tables, me)
                others = [states[(s + k) % n_seats].take(rows) for k in range(1, n_seats)]
                obs["opponent_filled"] = np.stack([filled_flags_batch(tables, o.filled) for o in others], axis=1)
                obs["opponent_scores"] = np.stack([o.scores for o in others], axis=1)
                obs["opponent_upper_total"] = np.stack([o.upper_total for o in others], axis=1)
                obs["opponent_bonus"] = np.stack([o.bonus for o in others], axis=1)
                obs["opponent_total"] = np.stack([o.total for o in others], axis=1)
                mask = masks.of_batch(me)
                start = time.perf_counter()
                actions = np.asarray(agent.act_batch(obs, mask), dtype=np.int64)
                seconds[a] += time.perf_counter() - start
                decisions[a] += len(rows)
                if np.any(mask[np.arange(len(rows)), actions] == 0):
                    raise RuntimeError(f"agent {a} played an illegal action")
                turn = np.bitwise_count(me.filled)
                scoring = actions >= 32
                roll_number = np.where(scoring, 0, 3 - me.rolls_left)
                turn_of = np.minimum(np.where(scoring, turn + 1, turn), tables.turns)
                f = faces[rows, s, turn_of, roll_number]
                new, _, done = game.step_batch(tables, me, actions, f)
                for field, value in zip(states[s], new):
                    field[rows] = value
                current[rows] = np.where(scoring, (s + 1) % n_seats, s)
                over[rows] = done & (s == n_seats - 1)
    totals = np.stack([BatchState.total.fget(st) for st in states], axis=1)
    return {"totals": totals, "decisions": decisions, "seconds": seconds}


def win_shares(totals: np.ndarray, seat: np.ndarray) -> np.ndarray:
    """Per game, the win share of the player in seat ``seat[g]`` (1 alone on top, 1/k tied with k, else 0)."""
    mine = totals[np.arange(len(totals)), seat]
    best = totals.max(axis=1)
    tied = (totals == best[:, None]).sum(axis=1)
    return np.where(mine == best, 1.0 / tied, 0.0)


def match(tables: Any, agent: Any, opponent: Any, n_games: int, seed: int = 0, batch: int = 2000) -> dict[str, Any]:
    """``agent`` against ``opponent`` in ``n_games`` duplicate two-player games: its win rate and 95% CI.

    Games are played ``batch`` at a time, batch ``i`` on the dice of seed ``(seed, i)``.
    """
    n_games += n_games % 2
    batch += batch % 2
    seats = np.tile(np.array([[0, 1], [1, 0]]), (n_games // 2, 1))
    start = time.perf_counter()
    totals = []
    for i, first in enumerate(range(0, n_games, batch)):
        part = seats[first : first + batch]
        totals.append(
            play_lockstep(tables, [agent, opponent], part, int(np.random.SeedSequence([seed, i]).generate_state(1)[0]))[
                "totals"
            ]
        )
    result = {"totals": np.concatenate(totals)}
    share = win_shares(result["totals"], np.argmin(seats, axis=1))  # the seat agent 0 plays
    pair = share.reshape(-1, 2).mean(axis=1)
    half = 1.96 * pair.std(ddof=1) / np.sqrt(len(pair))
    mine = result["totals"][np.arange(n_games), np.argmin(seats, axis=1)]
    theirs = result["totals"][np.arange(n_games), np.argmax(seats, axis=1)]
    return {
        "games": n_games,
        "win_rate": float(share.mean()),
        "ci95": [float(share.mean() - half), float(share.mean() + half)],
        "wins": int((mine > theirs).sum()),
        "ties": int((mine == theirs).sum()),
        "losses": int((mine < theirs).sum()),
        "mean_score": float(mine.mean()),
        "opponent_mean_score": float(theirs.mean()),
        "seed": seed,
        "wall_seconds": time.perf_counter() - start,
    }


def speed(tables: Any, agent: Any, n_games: int, seed: int = 0) -> dict[str, Any]:
    """Self-play of ``agent`` in ``n_games`` lockstep two-player games: decisions and games per second."""
    start, cpu = time.perf_counter(), time.process_time()
    result = play_lockstep(tables, [agent], np.zeros((n_games, 2), dtype=np.int64), seed)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "games": n_games,
        "decisions": int(result["decisions"][0]),
        "wall_seconds": wall,
        "act_seconds": float(result["seconds"][0]),
        "cpu_seconds": cpu,
        "games_per_second": n_games / wall,
        "games_per_cpu_second": n_games / cpu,
        "decisions_per_second": int(result["decisions"][0]) / wall,
        "mean_score": float(result["totals"].mean()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rules", nargs="*", default=["yacht"])
    parser.add_argument("--games", type=int, default=200, help="self-play games per agent for the speed (default 200)")
    parser.add_argument("--match", type=int, default=0, help="duplicate games of winning against optimal (default 0)")
    parser.add_argument("--future", default="expected", choices=("reach", "expected"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args(argv)
    from agents.players.optimal import OptimalAgent
    from agents.players.winning import WinningAgent
    from dice_poker_env.engine.tables import compile_rules

    out = []
    for rules in args.rules:
        start = time.perf_counter()
        winning = WinningAgent(rules, future=args.future)
        optimal = OptimalAgent(winning.solution)
        tables = compile_rules(winning.rules)
        row: dict[str, Any] = {
            "rules": winning.rules.name,
            "agent": winning.name,
            "load_seconds": time.perf_counter() - start,
        }
        if args.games:
            row["winning_speed"] = speed(tables, winning, args.games, args.seed)
            row["optimal_speed"] = speed(tables, optimal, args.games, args.seed)
            for who in ("winning", "optimal"):
                s = row[f"{who}_speed"]
                print(
                    f"{row['rules']}: {who:8s} {s['games']} games in lockstep, {s['wall_seconds']:.1f} s: "
                    f"{s['games_per_second']:.1f} games/s, {s['decisions_per_second']:.0f} decisions/s "
                    f"({s['cpu_seconds']:.1f} s CPU: {s['games_per_cpu_second']:.1f} games per CPU second)",
                    flush=True,
                )
        if args.match:
            row["match"] = match(tables, winning, optimal, args.match, args.seed)
            m = row["match"]
            print(
                f"{row['rules']}: {winning.name} vs optimal, {m['games']} duplicate games: win rate "
                f"{m['win_rate']:.4f} (95% CI {m['ci95'][0]:.4f}-{m['ci95'][1]:.4f}), "
                f"W/T/L {m['wins']}/{m['ties']}/{m['losses']}, {m['wall_seconds']:.0f} s",
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
    main()
