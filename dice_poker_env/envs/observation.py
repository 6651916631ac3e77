"""Observation spaces and encoders shared by the single and the vector env.

Two layouts, chosen with ``obs_mode``:

``"dict"`` (default) — a :class:`gymnasium.spaces.Dict`:

==============  =====================================  =============================
key             space                                  meaning
==============  =====================================  =============================
dice            Box(1, 6, (5,), int64)                 the dice, sorted ascending
rolls_left      Discrete(3)                            rerolls left this turn
filled          MultiBinary(n)                         1 where the box is filled
scores          Box(lo, hi, (n,), int64)               points written (0 while open)
upper_total     Box(lo, hi, (1,), int64)               sum of the upper boxes
bonus           Box(0, hi, (1,), int64)                bonus points paid so far
five_kind_box   Discrete(3)                            0 open or no such rule,
                                                       1 scratched, 2 holds points
turn            Discrete(turns + 1)                    boxes filled so far
==============  =====================================  =============================

``"flat"`` — one ``float32`` vector in [-1, 1] for MLP policies, in this order:
face counts / 5 (6), rolls left one-hot (3), filled flags (n), written scores /
``scale`` (n), the points the current dice would get in each box right now,
joker and first-roll doubling included (0 for boxes not legal now) / ``scale``
(n), upper total / ``upper_scale`` (1), bonus / ``scale`` (1), five-kind box
state one-hot (3), turn / turns (1). Size ``15 + 3 n``; ``scale`` is the
largest points a box can hold.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from dice_poker_env.engine.dice import N_DICE, ROLL_COUNTS, ROLL_DICE
from dice_poker_env.engine.game import (
    ROLLS_PER_TURN,
    GameState,
    five_kind_box_full,
    legal_boxes,
    popcount,
    score_points,
)
from dice_poker_env.engine.tables import RuleTables

OBS_MODES = ("dict", "flat")


def observation_space(tables: RuleTables, obs_mode: str) -> spaces.Space:
    """The observation space of one game."""
    n = tables.n_boxes
    if obs_mode == "flat":
        return spaces.Box(-1.0, 1.0, shape=(15 + 3 * n,), dtype=np.float32)
    if obs_mode != "dict":
        raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
    upper_lo = min(0, tables.min_box_score * 6)
    upper_hi = max(int(tables.score[:, tables.is_upper].sum(axis=1).max()) * 6, 1)
    return spaces.Dict(
        {
            "dice": spaces.Box(1, 6, shape=(N_DICE,), dtype=np.int64),
            "rolls_left": spaces.Discrete(ROLLS_PER_TURN),
            "filled": spaces.MultiBinary(n),
            "scores": spaces.Box(tables.min_box_score, tables.max_box_score, shape=(n,), dtype=np.int64),
            "upper_total": spaces.Box(upper_lo, upper_hi, shape=(1,), dtype=np.int64),
            "bonus": spaces.Box(0, max(tables.max_total, 1), shape=(1,), dtype=np.int64),
            "five_kind_box": spaces.Discrete(3),
            "turn": spaces.Discrete(tables.turns + 1),
        }
    )


def five_kind_box_state(tables: RuleTables, state: GameState) -> np.ndarray:
    """0: open or no five-of-a-kind rule, 1: scratched, 2: holds points."""
    k = tables.five_kind_box
    if k < 0:
        return np.zeros(state.filled.shape, dtype=np.int64)
    filled = (state.filled >> k) & 1
    return (filled + five_kind_box_full(tables, state.filled, state.scores)).astype(np.int64)


def observe_dict(tables: RuleTables, state: GameState) -> dict[str, np.ndarray]:
    """Batched dict observations (every value has a leading batch axis)."""
    n = tables.n_boxes
    return {
        "dice": ROLL_DICE[state.roll].astype(np.int64),
        "rolls_left": state.rolls_left.astype(np.int64),
        "filled": ((state.filled[:, None] >> np.arange(n)) & 1).astype(np.int8),
        "scores": state.scores.astype(np.int64),
        "upper_total": state.upper_total[:, None].astype(np.int64),
        "bonus": state.bonus[:, None].astype(np.int64),
        "five_kind_box": five_kind_box_state(tables, state),
        "turn": popcount(state.filled),
    }


def potential_points(tables: RuleTables, state: GameState) -> np.ndarray:
    """(B, n) points (bonuses included) each legal box would pay now; 0 elsewhere."""
    n = tables.n_boxes
    batch = state.roll.shape[0]
    box_full = five_kind_box_full(tables, state.filled, state.scores)
    boxes = np.broadcast_to(np.arange(n), (batch, n))
    col = lambda a: np.asarray(a)[:, None]  # noqa: E731 - broadcast per-game values over boxes
    points, bonus, _ = score_points(
        tables,
        col(state.filled),
        col(state.upper_total),
        col(box_full),
        col(state.roll),
        col(state.rolls_left == ROLLS_PER_TURN - 1),
        boxes,
    )
    legal = (legal_boxes(tables, state.filled, box_full, state.roll)[:, None] >> np.arange(n)) & 1
    return np.where(legal == 1, points + bonus, 0)


def observe_flat(tables: RuleTables, state: GameState) -> np.ndarray:
    """Batched flat observations ``(B, 15 + 3 n)`` float32."""
    n = tables.n_boxes
    scale = float(max(abs(tables.max_box_score), abs(tables.min_box_score), 1))
    upper_scale = float(max(abs(tables.upper_bonus_threshold), 63))
    batch = state.roll.shape[0]
    five = five_kind_box_state(tables, state)
    parts = [
        ROLL_COUNTS[state.roll] / N_DICE,
        np.eye(ROLLS_PER_TURN)[state.rolls_left],
        (state.filled[:, None] >> np.arange(n)) & 1,
        state.scores / scale,
        np.clip(potential_points(tables, state) / scale, -1, 1),
        np.clip(state.upper_total / upper_scale, -1, 1)[:, None],
        np.clip(state.bonus / scale, 0, 1)[:, None],
        np.eye(3)[five],
        (popcount(state.filled) / tables.turns)[:, None],
    ]
    out = np.concatenate([np.asarray(p, dtype=np.float32).reshape(batch, -1) for p in parts], axis=1)
    return out


def observe(tables: RuleTables, state: GameState, obs_mode: str):
    """Batched observations in the chosen layout."""
    return observe_flat(tables, state) if obs_mode == "flat" else observe_dict(tables, state)
