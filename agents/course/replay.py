"""What the grade report's replay shows beyond the game records: the upper section and the values of the actions.

The game records (``report["replays"]``, one per graded game: each move's dice, action, the
solver's best action and the points lost) come from the benchmark. :func:`replay_detail` adds
``report["replay_detail"]``:

* ``upper``: which boxes are the upper section, the most each can hold, and the upper bonus
  (threshold, points, and whether it is paid when the total is reached or when the section
  is complete), so that the replay can show the upper subtotal at every move ("upper 59/63")
  and what the bonus still needs;
* ``games``: for some games (:func:`detailed_games`: the first :data:`DETAILED_GAMES` and the
  game of each listed mistake's worst example), the best distinct legal actions of every move
  with their expected final scores (the exact solver's), the move made among them. Every game
  in full would make a 2,000-game report tens of megabytes.

The values come from replaying each detailed game through the single env with its seed (the
benchmark's :func:`~agents.evaluation.benchmark.game_seeds`) and the recorded actions: the env
deals the same dice, which is checked move by move.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_OF_ACTION, N_KEEP_ACTIONS, ROLL_DICE
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.rules import Rules

#: games whose every move gets the values of its best actions, besides the games of the listed mistakes
DETAILED_GAMES = 20
#: the best distinct actions listed per move (the move made is added when it is not among them)
ALTERNATIVES = 5
#: decimals of the values in the report
DIGITS = 2


def upper_section(rules: Rules) -> dict[str, Any]:
    """The upper boxes, the most each can hold, and the upper bonus (``threshold`` ``None`` without one)."""
    tables = compile_rules(rules)
    boxes = [int(k) for k in np.flatnonzero(tables.is_upper)]
    return {
        "boxes": boxes,
        "most": [int(tables.possible_scores[k].max()) for k in boxes],
        "threshold": int(tables.upper_bonus_threshold) if tables.has_upper_bonus else None,
        "bonus": int(tables.upper_bonus_points),
        "on_complete": bool(tables.upper_bonus_on_complete),
    }


def detailed_games(replays: Sequence[dict[str, Any]], mistakes: Sequence[dict[str, Any]], first: int) -> list[int]:
    """The games to detail: the ``first`` ones and those of the mistakes' worst examples, in order."""
    chosen = set(range(min(first, len(replays))))
    for mistake in mistakes:
        game = (mistake.get("worst_example") or {}).get("game")
        if isinstance(game, int) and 0 <= game < len(replays):
            chosen.add(game)
    return sorted(chosen)


def alternatives(values: np.ndarray, mask: np.ndarray, roll: int, taken: int, so_far: float) -> list[list[Any]]:
    """The best distinct legal actions of one decision, ``[[action, value], ...]`` best first.

    Keeps that hold the same dice are one action (the one taken when it is among them, else the
    lowest bitmask); the ``ALTERNATIVES`` best are listed, then the action taken when it is not
    among them (an illegal one with the points so far: an illegal action ends the game).
    """
    legal = 0 <= taken < len(mask) and bool(mask[taken])
    taken_class = int(KEEP_OF_ACTION[roll, taken]) if legal and taken < N_KEEP_ACTIONS else None
    seen: set[int] = set()
    items: list[tuple[float, int]] = []
    for index in np.flatnonzero(mask):
        action = int(index)
        if action < N_KEEP_ACTIONS:
            keep = int(KEEP_OF_ACTION[roll, action])
            if keep in seen:
                continue
            seen.add(keep)
            if keep == taken_class:
                action = taken
        items.append((float(values[action]), action))
    items.sort(key=lambda item: (-item[0], item[1]))
    listed = [[action, round(value, DIGITS)] for value, action in items[:ALTERNATIVES]]
    if all(action != taken for action, _ in listed):
        value = float(values[taken]) if legal else so_far
        listed.append([taken, round(value, DIGITS)])
    return listed


def replay_detail(
    rules: Rules,
    solution: Any,
    seeds: Sequence[int] | np.ndarray,
    replays: Sequence[dict[str, Any]],
    mistakes: Sequence[dict[str, Any]] = (),
    first: int = DETAILED_GAMES,
) -> dict[str, Any]:
    """``report["replay_detail"]`` (module docstring) for the recorded ``replays`` of the games of ``seeds``.

    Args:
        rules: the graded rules.
        solution: their exact solution (``action_values``).
        seeds: every graded game's env seed, in order.
        replays: the recorded games (``{"score", "moves"}``), in the same order.
        mistakes: the listed mistakes (their worst examples' games are detailed).
        first: how many games from the first are detailed.

    Raises:
        ValueError: the env does not deal a recorded game's dice again (the record is not of these games).
    """
    from dice_poker_env.envs.single import DicePokerEnv

    games = detailed_games(replays, mistakes, first)
    env = DicePokerEnv(rules)
    observations: list[dict[str, Any]] = []
    situations: list[tuple[np.ndarray, int, int, float]] = []  # mask, roll, action taken, points so far
    lengths: list[int] = []
    for g in games:
        moves = replays[g]["moves"]
        obs, info = env.reset(seed=int(seeds[g]))
        for j, move in enumerate(moves):
            state = env.state
            assert state is not None  # set by reset()
            dice = "".join(str(int(d)) for d in ROLL_DICE[state.roll])
            if dice != move[0] or int(state.rolls_left) != move[1]:
                raise ValueError(f"game {g}, move {j}: the env deals {dice}, the record has {move[0]}")
            observations.append(obs)
            situations.append((info["action_mask"], int(state.roll), int(move[2]), float(env.score)))
            obs, _, done, _, info = env.step(int(move[2]))
            if done and j < len(moves) - 1:
                raise ValueError(f"game {g}: the env's game ends at move {j}, the record's goes on")
        lengths.append(len(moves))
    detail: dict[str, Any] = {"upper": upper_section(rules), "first": int(first), "games": []}
    if not observations:
        return detail
    batch = {key: np.stack([obs[key] for obs in observations]) for key in observations[0]}
    values = np.asarray(solution.action_values(batch), dtype=np.float64)
    at = 0
    for g, n in zip(games, lengths):
        listed = [alternatives(values[at + j], *situations[at + j]) for j in range(n)]
        detail["games"].append({"game": int(g), "alternatives": listed})
        at += n
    return detail
