"""The three-roll turn widget: keep values, best sub-keeps, and the float packing they use.

A turn is solved from its score tables, the ``(252, m)`` best value of scoring
each roll now (after a reroll, and from the turn's first roll where the rules
double first-roll points), for ``m`` states at once: keep values by the
recursion ``K(keep) = mean over faces f of K(keep + f)``, then per roll the better
of scoring and the best proper sub-keep, twice. Keeps and rolls are in the
widget's internal order (:mod:`.keep_tables`).

Four entry points:

* :func:`widget`: values only (the queries' keep tables);
* :func:`turn_decisions`: the optimal action of every roll (the optimal agent);
* :func:`widget_with_moments`: values and second moments at once, on *moment
  words* (the solve);
* :func:`turn_values`: values only, in internal roll order, for many columns at
  once (the reach solver, :mod:`.reach`, one column per state and target).

Two packings of a float32 into an int64 let one ``np.maximum`` pick the better
candidate and carry something with it:

* a *tie word* (:func:`_pack_words`): the float32 mapped to an order-preserving
  int32 (any sign) in the high half, a tie-break id in the low half;
* a *moment word* (:func:`moment_words`): float32 pairs ``[second moment,
  value]`` read as one little-endian int64. Values are made non-negative by the
  caller (relative to each state's lowest candidate,
  :class:`~dice_poker_env.solver.block_scores.BlockScores`), and non-negative
  float32 compare like their bit patterns, so no packing and unpacking is
  needed; the same memory read as float32 feeds the (linear) keep recursion of
  values and second moments in one pass. Illegal entries are negative
  (``-inf``), below every legal word.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_OF_ACTION, N_DICE, N_FACES, N_ROLLS
from dice_poker_env.solver.keep_tables import (
    FIRST_PROB_INTERNAL,
    FOUR_PLUS_IROLL_T,
    FOUR_PLUS_ROLL_T,
    KEEP_POS,
    KEEP_START,
    KEEP_SUB_GROUPS,
    N_PROPER_KEEPS,
    ROLL_ORDER,
    ROLL_POS,
    ROLL_SUB_GROUPS,
    SMALL_PLUS_T,
)

assert np.little_endian, "the solver's packed words assume a little-endian machine"


# -- the two recursions ----------------------------------------------------------
def _internal_keep_values(rolls: np.ndarray, four_plus_roll_t: np.ndarray) -> np.ndarray:
    """Expected value of every proper keep, in internal keep order.

    Args:
        rolls: ``(252, m)`` value of each roll, indexed through ``four_plus_roll_t``
            (:data:`~.keep_tables.FOUR_PLUS_ROLL_T` for engine roll order,
            :data:`~.keep_tables.FOUR_PLUS_IROLL_T` for internal roll order).
        four_plus_roll_t: the roll reached by each 4-dice keep plus each face.

    Returns:
        ``(210, m)``: ``K[k] = mean over faces f of K[k + f]`` (a 5-dice keep is
        its roll), in the dtype of ``rolls``.
    """
    m = rolls.shape[1]
    K = np.empty((N_PROPER_KEEPS, m), dtype=rolls.dtype)
    lo = int(KEEP_START[N_DICE - 1])
    block = K[lo:]
    np.add.reduce(rolls.take(four_plus_roll_t.ravel(), axis=0).reshape(N_FACES, -1, m), axis=0, out=block)
    block /= N_FACES  # division, not a product with an inexact 1/6: no systematic bias
    for size in range(N_DICE - 2, -1, -1):
        lo, hi = int(KEEP_START[size]), int(KEEP_START[size + 1])
        block = K[lo:hi]
        np.add.reduce(K.take(SMALL_PLUS_T[size].ravel(), axis=0).reshape(N_FACES, -1, m), axis=0, out=block)
        block /= N_FACES
    return K


def _best_of_subkeeps(B: np.ndarray) -> np.ndarray:
    """In place over keeps, then per internal roll: the best of each one's proper sub-keeps.

    ``B`` ``(210, m)`` in internal keep order, any dtype ordered by ``np.maximum``
    (float values, tie words or moment words). Returns ``(252, m)`` in internal
    roll order.
    """
    for size in range(1, N_DICE):
        lo = int(KEEP_START[size])
        for n, sub in KEEP_SUB_GROUPS[size]:
            target = B[lo : lo + n]
            np.maximum(target, B.take(sub, axis=0), out=target)
    groups = ROLL_SUB_GROUPS
    best = B.take(groups[0][1], axis=0)
    for n, sub in groups[1:]:
        target = best[:n]
        np.maximum(target, B.take(sub, axis=0), out=target)
    return best


# -- values only -------------------------------------------------------------------
class TurnKeepValues(NamedTuple):
    """What :func:`widget` returns for ``m`` states."""

    one_left: np.ndarray  #: (210, m) value of keeping each proper keep (engine order) with one reroll left
    two_left: np.ndarray  #: (210, m) the same with two rerolls left


def widget(score_last: np.ndarray) -> TurnKeepValues:
    """Solve one turn's keeps for ``m`` states at once, values only (the queries' widget).

    Args:
        score_last: ``(252, m)`` float32 best value of scoring each roll after a
            reroll (engine roll order). (The first roll's own scoring, doubled
            or not, is no keep's business: a keep always leads to a reroll.)

    Returns:
        The keep values with one and two rerolls left (:class:`TurnKeepValues`).
        The solve's widget, with the turn's value and second moments, is
        :func:`widget_with_moments`.
    """
    K1 = _internal_keep_values(score_last, FOUR_PLUS_ROLL_T)
    out1 = K1.copy()
    W1 = score_last[ROLL_ORDER]
    np.maximum(W1, _best_of_subkeeps(K1), out=W1)
    K2 = _internal_keep_values(W1, FOUR_PLUS_IROLL_T)
    return TurnKeepValues(out1[KEEP_POS], K2[KEEP_POS])


def turn_values(P1: np.ndarray, P2: np.ndarray) -> np.ndarray:
    """The value of a turn's start for ``m`` columns, values only, any float dtype (the reach solver's widget).

    Args:
        P1: ``(252, m)`` best value of scoring each roll after a reroll, internal roll order.
        P2: ``(252, m)`` the same from the turn's first roll (the same array without
            first-roll doubling). Both are left as they are.

    Returns:
        ``(m,)``: the first-roll mean of the better of scoring and the best keep, two rerolls deep.
    """
    K1 = _internal_keep_values(P1, FOUR_PLUS_IROLL_T)
    W1 = _best_of_subkeeps(K1)
    np.maximum(W1, P1, out=W1)
    K2 = _internal_keep_values(W1, FOUR_PLUS_IROLL_T)
    W2 = _best_of_subkeeps(K2)
    np.maximum(W2, P2, out=W2)
    result: np.ndarray = FIRST_PROB_INTERNAL @ W2
    return result


def keep_values(rolls: np.ndarray) -> np.ndarray:
    """``(210, m)`` keep values (internal keep order) of ``(252, m)`` roll values in *engine* roll order."""
    return _internal_keep_values(rolls, FOUR_PLUS_ROLL_T)


# -- decisions: tie words ------------------------------------------------------------
_LOW31 = np.int32(0x7FFFFFFF)


def _pack_words(value: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Tie words: float32 ``value`` as an order-preserving int32 in the high half, ``low`` (int32 >= 0) below."""
    out = np.empty(value.shape, dtype=np.int64)
    words = out.view(np.int32).reshape(*value.shape, 2)
    bits = value.view(np.int32)
    flip = np.right_shift(bits, 31)
    flip &= _LOW31
    np.bitwise_xor(bits, flip, out=words[..., 1])
    np.copyto(words[..., 0], low)
    return out


def _unpack_words(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(value, low)`` of :func:`_pack_words` words (``low`` a strided int32 view)."""
    words = packed.view(np.int32).reshape(*packed.shape, 2)
    high = np.ascontiguousarray(words[..., 1])
    flip = np.right_shift(high, 31)
    flip &= _LOW31
    high ^= flip
    return high.view(np.float32), words[..., 0]


#: tie-break id of each internal proper keep: among keeps of equal value the
#: one earliest in internal order (fewest dice first) wins
_KEEP_TIE_ID = (N_PROPER_KEEPS - 1 - np.arange(N_PROPER_KEEPS, dtype=np.int32))[:, None]


def _action_of_internal_keep() -> np.ndarray:
    """(252, 210) uint8: per engine roll, the lowest keep action (bitmask) reaching each internal keep."""
    table = np.zeros((N_ROLLS, N_PROPER_KEEPS), dtype=np.uint8)
    for a in range(30, -1, -1):  # proper keep actions 0..30; the lowest wins
        table[np.arange(N_ROLLS), KEEP_POS[KEEP_OF_ACTION[:, a]]] = a
    return table


#: flat, indexed by ``roll * 210 + (209 - tie id)``: the action of the keep a tie id names
_ACTION_OF_TIE_ID = np.ascontiguousarray(_action_of_internal_keep()[:, ::-1]).reshape(-1)
_ROLL_BASE = (np.arange(N_ROLLS, dtype=np.int32) * N_PROPER_KEEPS)[:, None]


def turn_decisions(
    score_last: np.ndarray,
    score_first: np.ndarray,
    box_last: np.ndarray,
    box_first: np.ndarray,
    n_keep_actions: int = 32,
) -> np.ndarray:
    """The optimal action of every roll of a turn, for ``m`` states at once.

    Args:
        score_last, score_first: ``(252, m)`` float32 best value of scoring each roll
            after a reroll / from the turn's first roll (as for :func:`widget`).
        box_last, box_first: ``(252, m)`` int8 the box reaching those values.
        n_keep_actions: number of keep actions (box actions follow them).

    Returns:
        ``(m, 3, 252)`` uint8: ``[state, rolls_left, roll]`` the env action
        (keep bitmask ``0..30`` or ``n_keep_actions + box``). A keep is chosen
        when its value is at least the best score's (keeps come first in action
        order); among keeps of equal value the one with the fewest dice (then the
        first in the widget's internal order) wins, as its lowest bitmask.
    """
    m = score_last.shape[1]
    out = np.empty((3, N_ROLLS, m), dtype=np.uint8)
    np.add(box_last, n_keep_actions, out=out[0], casting="unsafe")
    K1 = _internal_keep_values(score_last, FOUR_PLUS_ROLL_T)
    W1 = score_last[ROLL_ORDER]
    for level, (K, S, B) in enumerate(((K1, score_last, box_last), (None, score_first, box_first)), start=1):
        if K is None:
            K = _internal_keep_values(W1, FOUR_PLUS_IROLL_T)
        best, tie = _unpack_words(_best_of_subkeeps(_pack_words(K, _KEEP_TIE_ID)))  # internal roll order
        if level == 1:
            np.maximum(W1, best, out=W1)
        best = best[ROLL_POS]
        tie = tie[ROLL_POS]
        tie += _ROLL_BASE
        keep_action = _ACTION_OF_TIE_ID.take(tie)
        if B is box_last:
            np.copyto(out[level], out[0])
        else:
            np.add(B, n_keep_actions, out=out[level], casting="unsafe")
        np.copyto(out[level], keep_action, where=best >= S)
    return out.transpose(2, 0, 1)


# -- the solve: moment words -----------------------------------------------------------
def moment_words(value: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Moment words of float32 ``value`` (``>= 0`` or ``-inf``) and ``second`` (``>= 0``), side by side."""
    out = np.empty(value.shape + (2,), dtype=np.float32)
    out[..., 0] = second
    out[..., 1] = value
    return out.view(np.int64)[..., 0]


def _as_floats(words: np.ndarray) -> np.ndarray:
    """The ``(rows, 2 m)`` float32 view of ``(rows, m)`` moment words: second moments at even columns."""
    return words.view(np.float32)


class TurnMoments(NamedTuple):
    """What :func:`widget_with_moments` returns for ``m`` states (relative to the tables' offset)."""

    value: np.ndarray  #: (m,) float32 expected value of the turn
    second: np.ndarray  #: (m,) float32 its second moment


def widget_with_moments(P1: np.ndarray, P2: np.ndarray) -> TurnMoments:
    """The solve's turn widget on moment words (:func:`moment_words`) in internal roll order.

    ``P1`` / ``P2`` are the ``(252, m)`` tables of scoring each roll after a
    reroll / from the turn's first roll (the same array without first-roll
    doubling); they are left as they are.
    """
    K1 = _internal_keep_values(_as_floats(P1), FOUR_PLUS_IROLL_T)  # values and second moments at once
    W1 = _best_of_subkeeps(K1.view(np.int64))
    np.maximum(W1, P1, out=W1)  # one reroll left: the better of scoring and the best keep
    K2 = _internal_keep_values(_as_floats(W1), FOUR_PLUS_IROLL_T)
    W2 = _best_of_subkeeps(K2.view(np.int64))
    np.maximum(W2, P2, out=W2)
    both = FIRST_PROB_INTERNAL @ _as_floats(W2)
    return TurnMoments(both[1::2], both[0::2])
