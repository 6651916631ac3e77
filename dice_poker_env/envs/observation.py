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

Each encoder comes in two forms: for one game (:class:`~dice_poker_env.engine.state.GameState`,
one observation) and for a batch (:class:`~dice_poker_env.engine.state.BatchState`,
every value with a leading batch axis), computed by the same code.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces

from dice_poker_env.engine.combinatorics import N_DICE, ROLL_COUNTS, ROLL_DICE
from dice_poker_env.engine.game import (
    IntOrArray,
    five_kind_box_full,
    five_kind_box_state,
    legal_boxes,
    score_points,
)
from dice_poker_env.engine.state import ROLLS_PER_TURN, BatchState, GameState
from dice_poker_env.engine.tables import RuleTables

#: Version of the observation layouts (flat and dict): bumped, together with the env ids' version,
#: whenever what an observation holds or how it is scaled changes; every benchmark result records it
#: (docs/benchmark.md, "Versioning").
OBSERVATION_LAYOUT_VERSION = 1

OBS_MODES = ("dict", "flat")
#: the keys of dict observations, in order
DICT_KEYS = ("dice", "rolls_left", "filled", "scores", "upper_total", "bonus", "five_kind_box", "turn")
_ROLLS_ONE_HOT = np.eye(ROLLS_PER_TURN, dtype=np.float32)
_FIVE_ONE_HOT = np.eye(3, dtype=np.float32)
#: (252, 30): each roll's sorted dice, one-hot die by die
_DICE_ONE_HOT = np.eye(6, dtype=np.float32)[ROLL_DICE - 1].reshape(len(ROLL_DICE), N_DICE * 6)


def flat_layout(tables: RuleTables) -> dict[str, slice]:
    """Where each part of the flat observation lies: name -> slice of the vector."""
    n = tables.n_boxes
    widths = [
        ("face_counts", 6),
        ("rolls_left", ROLLS_PER_TURN),
        ("filled", n),
        ("scores", n),
        ("potential_points", n),
        ("upper_total", 1),
        ("bonus", 1),
        ("five_kind_box", 3),
        ("turn", 1),
        ("dice_one_hot", N_DICE * 6),
    ]
    layout, start = {}, 0
    for name, width in widths:
        layout[name] = slice(start, start + width)
        start += width
    return layout


#: One game's observation: the flat vector or the dict of arrays (``obs_mode``).
Observation = np.ndarray | dict[str, np.ndarray]


def flat_size(tables: RuleTables) -> int:
    """Length of the flat observation, ``45 + 3 n``."""
    return 45 + 3 * tables.n_boxes


def observation_space(tables: RuleTables, obs_mode: str) -> spaces.Space[Any]:
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


def filled_flags(tables: RuleTables, filled: int) -> np.ndarray:
    """The ``(n,)`` int8 filled flags of one game (a fresh array)."""
    return _flags_row(tables.n_boxes, filled).copy()


def filled_flags_batch(tables: RuleTables, filled: np.ndarray) -> np.ndarray:
    """The ``(B, n)`` int8 filled flags of a batch (a fresh array)."""
    if tables.n_boxes <= 16:
        return np.take(_FILLED_ROWS[tables.n_boxes], filled, axis=0)
    return ((filled[:, None] & tables.box_bit) != 0).astype(np.int8)


@functools.lru_cache(maxsize=1 << 16)
def _flags_row(n: int, filled: int) -> np.ndarray:
    """Filled flags of one game (memoized; callers copy)."""
    return np.array([(filled >> k) & 1 for k in range(n)], dtype=np.int8)


class _FlagRows(dict[int, np.ndarray]):
    """Lazily built per-n tables of filled-flag rows for batches."""

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


def observe_dict(tables: RuleTables, state: GameState) -> dict[str, np.ndarray]:
    """The dict observation of one game (fresh arrays)."""
    return {
        "dice": _DICE_ROWS[state.roll].copy(),
        "rolls_left": _INT64[state.rolls_left],
        "filled": filled_flags(tables, state.filled),
        "scores": state.scores.copy(),
        "upper_total": _one_element(state.upper_total),
        "bonus": _one_element(state.bonus),
        "five_kind_box": _INT64[five_kind_box_state(tables.one_game, state.filled, state.scores)],
        "turn": _INT64[state.filled.bit_count()],
    }


def observe_dict_batch(
    tables: RuleTables, state: BatchState, *, box_state: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The dict observations of a batch: every value a fresh array with a leading batch axis.

    (The vector env advances its state in place.) ``box_state``: the batch's
    :func:`~dice_poker_env.engine.game.five_kind_box_state` if the caller has it
    already (a fresh int64 array, handed out as is).
    """
    if box_state is None:
        box_state = five_kind_box_state(tables, state.filled, state.scores).astype(np.int64)

    def column(v: np.ndarray) -> np.ndarray:  # a copy, as a (B, 1) column
        return np.array(v, dtype=np.int64)[:, None]

    return {
        "dice": np.take(_ROLL_DICE_64, state.roll, axis=0),
        "rolls_left": np.array(state.rolls_left, dtype=np.int64),
        "filled": filled_flags_batch(tables, state.filled),
        "scores": np.array(state.scores, dtype=np.int64),
        "upper_total": column(state.upper_total),
        "bonus": column(state.bonus),
        "five_kind_box": box_state,
        "turn": np.bitwise_count(state.filled).astype(np.int64),
    }


def _potential(
    tables: RuleTables,
    filled: IntOrArray,
    upper_total: IntOrArray,
    box_full: IntOrArray,
    roll: IntOrArray,
    first_roll: IntOrArray,
) -> np.ndarray:
    """:func:`potential_points` of games given as columns (one game: scalars)."""
    boxes = np.arange(tables.n_boxes)
    points, bonus, _ = score_points(tables, filled, upper_total, box_full, roll, first_roll, boxes)
    legal = (np.asarray(legal_boxes(tables, filled, box_full, roll)) & tables.box_bit) != 0
    return np.where(legal, points + bonus, 0)


def potential_points(tables: RuleTables, state: GameState) -> np.ndarray:
    """``(n,)``: points (bonuses included) each box would pay for one game's dice now; 0 where not legal."""
    box_full = five_kind_box_full(tables.one_game, state.filled, state.scores)
    return _potential(
        tables, state.filled, state.upper_total, box_full, state.roll, state.rolls_left == ROLLS_PER_TURN - 1
    )


def potential_points_batch(tables: RuleTables, state: BatchState) -> np.ndarray:
    """``(B, n)``: :func:`potential_points` of every game of a batch."""
    box_full = five_kind_box_full(tables, state.filled, state.scores)
    first_roll = state.rolls_left == ROLLS_PER_TURN - 1
    columns = (np.asarray(v)[:, None] for v in (state.filled, state.upper_total, box_full, state.roll, first_roll))
    return _potential(tables, *columns)


def flat_scales(tables: RuleTables) -> tuple[float, float]:
    """``(scale, upper_scale)`` of the flat layout: points are divided by ``scale``
    (the largest points a box can hold), the upper total by ``upper_scale`` (the
    upper-bonus threshold, at least 63)."""
    return (
        float(max(abs(tables.max_box_score), abs(tables.min_box_score), 1)),
        float(max(abs(tables.upper_bonus_threshold), 63)),
    )


def _flat(
    tables: RuleTables,
    state: GameState | BatchState,
    flags: np.ndarray,
    potential: np.ndarray,
    box_state: IntOrArray,
    turn: IntOrArray,
) -> np.ndarray:
    """The flat layout of one game (scalars and ``(n,)`` rows) or a batch (columns and ``(B, n)`` rows)."""
    scale, upper_scale = flat_scales(tables)

    def scalar(v: IntOrArray) -> np.ndarray:  # one column
        return np.asarray(v, dtype=np.float32)[..., None]

    parts = [
        ROLL_COUNTS[state.roll] / N_DICE,
        _ROLLS_ONE_HOT[state.rolls_left],
        flags,
        state.scores / scale,
        np.clip(potential / scale, -1, 1),
        np.clip(scalar(state.upper_total) / upper_scale, -1, 1),
        np.clip(scalar(state.bonus) / scale, 0, 1),
        _FIVE_ONE_HOT[box_state],
        scalar(turn) / tables.turns,
        _DICE_ONE_HOT[state.roll],
    ]
    return np.concatenate([np.asarray(p, dtype=np.float32) for p in parts], axis=-1)


def observe_flat(tables: RuleTables, state: GameState) -> np.ndarray:
    """The flat observation of one game: ``(45 + 3 n,)`` float32."""
    box_state = five_kind_box_state(tables.one_game, state.filled, state.scores)
    flags = filled_flags(tables, state.filled)
    return _flat(tables, state, flags, potential_points(tables, state), box_state, state.filled.bit_count())


def observe_flat_batch(tables: RuleTables, state: BatchState) -> np.ndarray:
    """The flat observations of a batch: ``(B, 45 + 3 n)`` float32."""
    box_state = five_kind_box_state(tables, state.filled, state.scores)
    flags = filled_flags_batch(tables, state.filled)
    return _flat(tables, state, flags, potential_points_batch(tables, state), box_state, state.turn)


def observe(tables: RuleTables, state: GameState, obs_mode: str) -> Observation:
    """One game's observation in the chosen layout."""
    return observe_flat(tables, state) if obs_mode == "flat" else observe_dict(tables, state)


def observe_batch(tables: RuleTables, state: BatchState, obs_mode: str) -> Observation:
    """A batch's observations in the chosen layout."""
    return observe_flat_batch(tables, state) if obs_mode == "flat" else observe_dict_batch(tables, state)
