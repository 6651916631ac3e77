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

``"flat"`` — one ``float32`` vector in [-1, 1] for MLP policies, in this order
(:func:`flat_layout` names the slices):
face counts / 5 (6), rolls left one-hot (3), filled flags (n), written scores /
``scale`` (n), the points (bonuses included) the current dice would get in each
box right now, joker and first-roll doubling included (0 for boxes not legal now)
/ ``scale``, clipped (n), upper total / ``upper_scale`` (1), bonus / ``scale``,
clipped (1), five-kind box state one-hot (3), turn / turns (1), then the sorted
dice one-hot, die by die (5 x 6). Size ``45 + 3 n``; ``scale`` is the largest
points a box can hold, ``upper_scale`` the upper-bonus threshold (at least 63).
The per-die one-hot is what keep actions refer to (bit ``i`` keeps die ``i`` of
the sorted dice): with only face counts a network must work out which bits hold
which face, and MaskablePPO's keep decisions were measurably worse
(docs/training.md).

Every encoder works on a one-game state (returns one observation) and on a
batched state (every value gets a leading batch axis).
"""

from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces

from dice_poker_env.engine.combinatorics import N_DICE, ROLL_COUNTS, ROLL_DICE
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
_ROLLS_ONE_HOT = np.eye(ROLLS_PER_TURN, dtype=np.float32)
_FIVE_ONE_HOT = np.eye(3, dtype=np.float32)
#: (252, 30): each roll's sorted dice, one-hot die by die
_DICE_ONE_HOT = np.eye(6, dtype=np.float32)[ROLL_DICE - 1].reshape(len(ROLL_DICE), N_DICE * 6)


def flat_layout(tables: RuleTables) -> dict[str, slice]:
    """Where each part of the flat observation lies: name -> slice of the vector."""
    n = tables.n_boxes
    widths = [("face_counts", 6), ("rolls_left", ROLLS_PER_TURN), ("filled", n), ("scores", n),
              ("potential_points", n), ("upper_total", 1), ("bonus", 1), ("five_kind_box", 3),
              ("turn", 1), ("dice_one_hot", N_DICE * 6)]
    layout, start = {}, 0
    for name, width in widths:
        layout[name] = slice(start, start + width)
        start += width
    return layout


def flat_size(tables: RuleTables) -> int:
    """Length of the flat observation, ``45 + 3 n``."""
    return 45 + 3 * tables.n_boxes


def observation_space(tables: RuleTables, obs_mode: str) -> spaces.Space:
    """The observation space of one game."""
    n = tables.n_boxes
    if obs_mode == "flat":
        return spaces.Box(-1.0, 1.0, shape=(flat_size(tables),), dtype=np.float32)
    if obs_mode != "dict":
        raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
    # every value a field can take, derived from the scores each box can hold
    # (first-roll doubling and jokers included; an open box counts 0)
    upper_lo = tables.min_upper_total
    upper_hi = max(tables.max_upper_total, 1)
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


def five_kind_box_state(tables: RuleTables, state: GameState):
    """0: open or no five-of-a-kind rule, 1: scratched, 2: holds points."""
    k = tables.five_kind_box
    if not isinstance(state.filled, np.ndarray):
        return 0 if k < 0 or not (state.filled >> k) & 1 else 1 + int(state.scores[k] > 0)
    if k < 0:
        return np.zeros(state.filled.shape, dtype=np.int64)
    return ((state.filled >> k) & 1) + five_kind_box_full(tables, state.filled, state.scores).astype(np.int64)


def _filled_flags(tables: RuleTables, filled) -> np.ndarray:
    if isinstance(filled, np.ndarray):
        if tables.n_boxes <= 16:
            return np.take(_FILLED_ROWS[tables.n_boxes], filled, axis=0)
        return ((filled[:, None] & tables.box_bit) != 0).astype(np.int8)
    return _flags_row(tables.n_boxes, filled).copy()


@functools.lru_cache(maxsize=1 << 16)
def _flags_row(n: int, filled: int) -> np.ndarray:
    """Filled flags of one game (memoized; callers copy)."""
    return np.array([(filled >> k) & 1 for k in range(n)], dtype=np.int8)


class _FlagRows(dict):
    """Lazily built per-n tables of filled-flag rows for one-game observations."""

    def __missing__(self, n: int) -> np.ndarray:
        size = min(1 << n, _ROW_LIMIT)
        rows = ((np.arange(size)[:, None] >> np.arange(n)) & 1).astype(np.int8)
        self[n] = rows
        return rows


_ROW_LIMIT = 1 << 16  # 15-box rulesets fit; larger custom rulesets build rows on the fly
_FILLED_ROWS = _FlagRows()


_ROLL_DICE_64 = ROLL_DICE.astype(np.int64)
_INT64 = [np.int64(i) for i in range(64)]  # immutable scalars, shared
_DICE_ROWS = list(_ROLL_DICE_64)  # one row array per roll: copying one is cheaper than fancy indexing
_ONE_ELEMENT: dict[int, np.ndarray] = {}


def _one_element(value: int) -> np.ndarray:
    """A fresh ``(1,)`` int64 array holding ``value`` (copied from a small memo)."""
    row = _ONE_ELEMENT.get(value)
    if row is None:
        row = _ONE_ELEMENT.setdefault(value, np.array([value], dtype=np.int64))
    return row.copy()


def observe_dict(tables: RuleTables, state: GameState, *, box_state: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Dict observation(s) of the state.

    For a batch every value is a fresh array (the vector env advances its state in
    place). ``box_state``: the batch's :func:`five_kind_box_state` if the caller
    has it already (a fresh int64 array, handed out as is).
    """
    if not isinstance(state.filled, np.ndarray):
        return {
            "dice": _DICE_ROWS[state.roll].copy(),
            "rolls_left": _INT64[state.rolls_left],
            "filled": _filled_flags(tables, state.filled),
            "scores": state.scores.copy(),
            "upper_total": _one_element(state.upper_total),
            "bonus": _one_element(state.bonus),
            "five_kind_box": _INT64[five_kind_box_state(tables, state)],
            "turn": _INT64[state.filled.bit_count()],
        }
    if box_state is None:
        box_state = five_kind_box_state(tables, state).astype(np.int64)
    column = lambda v: np.array(v, dtype=np.int64)[:, None]  # noqa: E731 - a copy, as a (B, 1) column
    return {
        "dice": np.take(_ROLL_DICE_64, state.roll, axis=0),
        "rolls_left": np.array(state.rolls_left, dtype=np.int64),
        "filled": _filled_flags(tables, state.filled),
        "scores": np.array(state.scores, dtype=np.int64),
        "upper_total": column(state.upper_total),
        "bonus": column(state.bonus),
        "five_kind_box": box_state,
        "turn": np.bitwise_count(state.filled).astype(np.int64),
    }


def potential_points(tables: RuleTables, state: GameState) -> np.ndarray:
    """Points (bonuses included) each box would pay for the current dice now; 0 where not legal."""
    box_full = five_kind_box_full(tables, state.filled, state.scores)
    column = (lambda v: np.asarray(v)[:, None]) if state.batched else (lambda v: v)
    points, bonus, _ = score_points(
        tables,
        column(state.filled),
        column(state.upper_total),
        column(box_full),
        column(state.roll),
        column(state.rolls_left == ROLLS_PER_TURN - 1),
        np.arange(tables.n_boxes),
    )
    legal = (np.asarray(legal_boxes(tables, state.filled, box_full, state.roll))[..., None] & tables.box_bit) != 0
    return np.where(legal, points + bonus, 0)


def flat_scales(tables: RuleTables) -> tuple[float, float]:
    """``(scale, upper_scale)`` of the flat layout: points are divided by ``scale``
    (the largest points a box can hold), the upper total by ``upper_scale`` (the
    upper-bonus threshold, at least 63)."""
    return (float(max(abs(tables.max_box_score), abs(tables.min_box_score), 1)),
            float(max(abs(tables.upper_bonus_threshold), 63)))


def observe_flat(tables: RuleTables, state: GameState) -> np.ndarray:
    """Flat observation(s): ``(45 + 3 n,)`` or ``(B, 45 + 3 n)`` float32."""
    scale, upper_scale = flat_scales(tables)
    scalar = lambda v: np.asarray(v, dtype=np.float32)[..., None]  # noqa: E731 - one column
    parts = [
        ROLL_COUNTS[state.roll] / N_DICE,
        _ROLLS_ONE_HOT[state.rolls_left],
        _filled_flags(tables, state.filled),
        state.scores / scale,
        np.clip(potential_points(tables, state) / scale, -1, 1),
        np.clip(scalar(state.upper_total) / upper_scale, -1, 1),
        np.clip(scalar(state.bonus) / scale, 0, 1),
        _FIVE_ONE_HOT[five_kind_box_state(tables, state)],
        scalar(popcount(state.filled)) / tables.turns,
        _DICE_ONE_HOT[state.roll],
    ]
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts], axis=-1)


def observe(tables: RuleTables, state: GameState, obs_mode: str):
    """Observation(s) in the chosen layout."""
    return observe_flat(tables, state) if obs_mode == "flat" else observe_dict(tables, state)
