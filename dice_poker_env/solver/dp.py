"""Exact dynamic programming over between-turn states (the solver's core).

A *between-turn state* is what the rest of a game depends on when a turn begins:

* ``filled`` — the bitmask of filled boxes (it also fixes the section and the turn);
* ``upper`` — the upper total, *canonicalized*: once the open upper boxes can no
  longer change whether the upper bonus is paid (it is already certain, or out of
  reach), every value is equivalent, so the total is clipped to
  ``[T - max_rest - 1, T - min_rest]`` (``T`` the threshold, ``max_rest`` /
  ``min_rest`` the most / least the open upper boxes can still add). This keeps
  the exact subtotal where it matters (``school_poker``'s ``on_complete`` bonus
  with negative boxes) and collapses it where it does not. With no upper bonus,
  or all upper boxes filled, it is 0;
* ``full`` — whether the five-of-a-kind box holds points (joker and bonus rules).

Only states reachable from the empty scorecard are built (the forward pass of
:mod:`.reachability`, layer by layer: layer ``t`` holds the states with ``t``
boxes filled). The backward
pass solves each state's turn as the three-roll *widget*: the value of scoring
each of the 252 rolls now (best legal box: points + bonus + value of the next
state), then twice: keep values by the recursion ``K(keep) = mean over faces f
of K(keep + f)`` and, per roll, the best of scoring and the best proper keep.
A second-moment table under the same (mean-optimal) policy gives the exact
standard deviation of the final score.

All points, bonuses and legality come from the engine
(:func:`~dice_poker_env.engine.game.score_points`,
:func:`~dice_poker_env.engine.game.legal_boxes`), called on arrays of
(state, roll class, box). A *roll class* of a box groups the rolls on which the
engine's answer for that box can only differ through its points: five-of-a-kind
rolls are singletons (joker and bonus), the others are grouped by the box's
points (with the first-roll variant when the rules double).
"""

from __future__ import annotations

import copy
import ctypes
import ctypes.util
import mmap
import multiprocessing
import os
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from dice_poker_env.engine.dice import (
    FIRST_ROLL_PROBABILITY,
    KEEP_COUNTS,
    KEEP_PLUS_FACE,
    KEEP_SIZE,
    N_DICE,
    N_FACES,
    N_KEEPS,
    N_ROLLS,
    ROLL_OF_KEEP,
)
from dice_poker_env.engine.game import legal_boxes, score_points
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.solver.box_max import BoxMaxTree
from dice_poker_env.solver.reachability import reachable_layers


# ---------------------------------------------------------------- allocator
def _mallopt():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return None


_MALLOPT = _mallopt()
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


@contextmanager
def roomy_malloc():
    """Keep freed memory for reuse while solving (glibc only; a no-op elsewhere).

    The turn tables are a few hundred KiB each and are allocated and freed many
    thousand times; by default glibc serves them with fresh ``mmap`` pages, so
    every chunk pays page faults (about half the solve time). Inside this
    context they come from the heap and are recycled, with up to 512 MiB of free
    heap kept. On leaving, the free heap kept shrinks to 64 MiB but blocks up to
    32 MiB stay on the heap: setting any threshold switches glibc's own dynamic
    mmap threshold off for good, and its initial 128 KiB would make every later
    array of the process above that size a fresh ``mmap`` (a 2 MiB copy measured
    15x slower, 1.1 ms against 73 us). 32 MiB / 64 MiB is where glibc's dynamic
    rule goes by itself once large blocks have been freed.
    """
    if _MALLOPT is None:
        yield
        return
    _MALLOPT(_M_MMAP_THRESHOLD, 32 << 20)
    _MALLOPT(_M_TRIM_THRESHOLD, 512 << 20)
    _MALLOPT(_M_TOP_PAD, 64 << 20)
    try:
        yield
    finally:
        _MALLOPT(_M_TOP_PAD, 128 << 10)
        _MALLOPT(_M_TRIM_THRESHOLD, 64 << 20)


# ---------------------------------------------------------------- keep tables
#: keeps are ordered by size: KEEP_START[n] .. KEEP_START[n + 1] hold the keeps of n dice
KEEP_START = np.searchsorted(KEEP_SIZE, np.arange(N_DICE + 2)).astype(np.int64)
_FULL = slice(int(KEEP_START[N_DICE]), N_KEEPS)
#: the roll of each 5-dice keep, in keep order
ROLL_OF_FULL_KEEP = ROLL_OF_KEEP[_FULL].astype(np.int64)
#: inverse: the 5-dice keep index of each roll
FULL_KEEP_OF_ROLL = np.empty(N_ROLLS, dtype=np.int64)
FULL_KEEP_OF_ROLL[ROLL_OF_FULL_KEEP] = np.arange(KEEP_START[N_DICE], N_KEEPS)


def _keep_minus_face() -> np.ndarray:
    """(462, 6): the keep with one die of face f+1 removed; a present face's when f+1 is absent.

    Row 0 (the empty keep) points at itself. Used by the "best sub-keep" recursion,
    where a repeated sub-keep is harmless (max is idempotent).
    """
    minus = np.full((N_KEEPS, N_FACES), -1, dtype=np.int64)
    for k in range(N_KEEPS):
        for f in range(N_FACES):
            grown = KEEP_PLUS_FACE[k, f]
            if grown >= 0:
                minus[grown, f] = k
    minus[0] = 0
    for k in range(1, N_KEEPS):
        present = minus[k][minus[k] >= 0]
        minus[k][minus[k] < 0] = present[0]
    return minus


KEEP_MINUS_FACE = _keep_minus_face()


def _keep_subs() -> np.ndarray:
    """(462, 5): the keeps one die smaller, distinct faces first, padded with the first.

    A keep of ``n`` dice has at most ``n`` distinct faces, so its first ``min(n, 5)``
    columns list all its one-smaller sub-keeps.
    """
    subs = np.zeros((N_KEEPS, N_DICE), dtype=np.int64)
    for k in range(N_KEEPS):
        faces = [f for f in range(N_FACES) if KEEP_COUNTS[k, f] > 0]
        row = [int(KEEP_MINUS_FACE[k, f]) for f in faces] or [0]
        subs[k] = (row + [row[0]] * N_DICE)[:N_DICE]
    return subs


KEEP_SUBS = _keep_subs()


#: number of proper keeps (0 to 4 dice): the keeps an env keep action can reach
N_PROPER_KEEPS = int(KEEP_START[N_DICE])


def keep_values(rolls: np.ndarray) -> np.ndarray:
    """Expected value of every proper keep (0 to 4 dice), given the value of every roll.

    Args:
        rolls: ``(252, m)`` value of each roll (for ``m`` independent columns).

    Returns:
        ``(210, m)``: ``K[k] = E[value of the roll reached by rolling the missing dice]``,
        computed as ``K(keep) = mean over faces of K(keep + face)`` (a 5-dice keep
        is its roll). Engine keep and roll order (the widget itself works in the
        internal order of :func:`_internal_keep_values`).
    """
    return _internal_keep_values(rolls, _FOUR_PLUS_ROLL_T)[KEEP_POS]


# -- the widget's internal order ------------------------------------------------
# Inside the widget, proper keeps are ordered by size, then by number of distinct
# faces (most first), and rolls by number of distinct faces (most first). A keep
# with d distinct faces has d distinct one-die-smaller sub-keeps, so in this order
# the j-th sub-keep exists exactly for a prefix of each size block: the best
# sub-keep recursion touches every (keep, distinct sub-keep) pair once, on
# contiguous slices, without padding.
def _n_distinct(counts: np.ndarray) -> np.ndarray:
    return (np.asarray(counts) > 0).sum(axis=1)


_DISTINCT = _n_distinct(KEEP_COUNTS)
#: engine keep index of each internal proper keep, and the inverse
KEEP_ORDER = np.lexsort((np.arange(N_PROPER_KEEPS), -_DISTINCT[:N_PROPER_KEEPS], KEEP_SIZE[:N_PROPER_KEEPS])).astype(np.int64)
KEEP_POS = np.empty(N_PROPER_KEEPS, dtype=np.int64)
KEEP_POS[KEEP_ORDER] = np.arange(N_PROPER_KEEPS)
_ROLL_DISTINCT = _DISTINCT[FULL_KEEP_OF_ROLL]
#: engine roll index of each internal roll, and the inverse
ROLL_ORDER = np.lexsort((np.arange(N_ROLLS), -_ROLL_DISTINCT)).astype(np.int64)
ROLL_POS = np.empty(N_ROLLS, dtype=np.int64)
ROLL_POS[ROLL_ORDER] = np.arange(N_ROLLS)
#: first-roll probabilities in internal roll order
_FIRST_PROB_INTERNAL = FIRST_ROLL_PROBABILITY[ROLL_ORDER]


def _plus_tables():
    """(6, n) gather indices per keep size: face-major, internal order."""
    levels = []
    for size in range(N_DICE):
        lo, hi = int(KEEP_START[size]), int(KEEP_START[size + 1])
        engine = KEEP_ORDER[lo:hi]
        grown = KEEP_PLUS_FACE[engine].astype(np.int64)  # (n, 6) engine keeps
        if size == N_DICE - 1:
            levels.append(grown)  # 5-dice keeps: resolved to rolls by the caller
        else:
            levels.append(KEEP_POS[grown])
    return levels


_PLUS_LEVELS = _plus_tables()
#: 4-dice internal keeps + face -> engine roll / internal roll, face-major (6, 126)
_FOUR_PLUS_ROLL_T = np.ascontiguousarray(ROLL_OF_KEEP[_PLUS_LEVELS[N_DICE - 1]].astype(np.int64).T)
_FOUR_PLUS_IROLL_T = np.ascontiguousarray(ROLL_POS[_FOUR_PLUS_ROLL_T])
_SMALL_PLUS_T = [np.ascontiguousarray(level.T) for level in _PLUS_LEVELS[: N_DICE - 1]]


def _sub_groups(engine_keeps: np.ndarray):
    """[(n_j, internal sub-keep indices of the first n_j keeps)] for j = 0, 1, ...

    ``engine_keeps`` (engine indices, in internal order, distinct faces non-increasing).
    """
    distinct = _DISTINCT[engine_keeps]
    groups = []
    for j in range(int(distinct.max()) if len(distinct) else 0):
        n = int((distinct > j).sum())
        groups.append((n, KEEP_POS[KEEP_SUBS[engine_keeps[:n], j]]))
    return groups


#: per keep size 1..4: the sub-keep groups of that size block; then the rolls'
_KEEP_SUB_GROUPS = [None] + [_sub_groups(KEEP_ORDER[int(KEEP_START[s]) : int(KEEP_START[s + 1])]) for s in range(1, N_DICE)]
_ROLL_SUB_GROUPS = _sub_groups(FULL_KEEP_OF_ROLL[ROLL_ORDER])


def _internal_keep_values(rolls: np.ndarray, four_plus_roll_t: np.ndarray) -> np.ndarray:
    """:func:`keep_values` in internal keep order; ``rolls`` indexed through ``four_plus_roll_t``."""
    m = rolls.shape[1]
    K = np.empty((N_PROPER_KEEPS, m), dtype=rolls.dtype)
    lo = int(KEEP_START[N_DICE - 1])
    block = K[lo:]
    np.add.reduce(rolls.take(four_plus_roll_t.ravel(), axis=0).reshape(N_FACES, -1, m), axis=0, out=block)
    block /= N_FACES  # division, not a product with an inexact 1/6: no systematic bias
    for size in range(N_DICE - 2, -1, -1):
        lo, hi = int(KEEP_START[size]), int(KEEP_START[size + 1])
        block = K[lo:hi]
        np.add.reduce(K.take(_SMALL_PLUS_T[size].ravel(), axis=0).reshape(N_FACES, -1, m), axis=0, out=block)
        block /= N_FACES
    return K


def _best_of_subkeeps(B: np.ndarray) -> np.ndarray:
    """In place over keeps, then per internal roll: the best of each one's proper sub-keeps.

    ``B`` ``(210, m)`` in internal keep order, any dtype ordered by ``np.maximum``
    (float values, or int64 words of a float32 value and its second moment). Returns ``(252, m)``
    in internal roll order.
    """
    for size in range(1, N_DICE):
        lo = int(KEEP_START[size])
        for n, sub in _KEEP_SUB_GROUPS[size]:
            target = B[lo : lo + n]
            np.maximum(target, B.take(sub, axis=0), out=target)
    groups = _ROLL_SUB_GROUPS
    best = B.take(groups[0][1], axis=0)
    for n, sub in groups[1:]:
        target = best[:n]
        np.maximum(target, B.take(sub, axis=0), out=target)
    return best


# -- a float32 value with an int32 below it in one int64 word --------------------
# The high 32 bits hold the float32 value mapped to an order-preserving int32 (any
# sign), the low 32 bits a tie-break id: one np.maximum picks the better keep and
# names it (:func:`turn_decisions`).
_LOW31 = np.int32(0x7FFFFFFF)


def _pack_words(value: np.ndarray, low: np.ndarray) -> np.ndarray:
    """int64 words: float32 ``value`` as an order-preserving int32 in the high half, ``low`` (int32) below."""
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


def widget(score_last: np.ndarray, score_first: np.ndarray, *, keep_tables: bool = True):
    """Solve one turn for ``m`` states at once (values only: the agent's and queries' widget).

    Args:
        score_last: ``(252, m)`` float32 best value of scoring each roll after a reroll.
        score_first: ``(252, m)`` the same from the turn's first roll (first-roll doubling).
        keep_tables: return the keep values.

    Returns:
        ``(value, K1, K2)``: ``(m,)`` expected value of the turn start and the
        ``(210, m)`` values of the proper keeps (engine keep order) with one and
        with two rolls left (``K1[k]`` = value of keeping ``k`` and rerolling when
        one reroll is left; ``None`` without ``keep_tables``).

    Internally keeps and rolls are in the order of :data:`KEEP_ORDER` /
    :data:`ROLL_ORDER`. The solve's widget, with second moments, is
    :func:`_widget_second_internal`.
    """
    K1 = _internal_keep_values(score_last, _FOUR_PLUS_ROLL_T)
    out1 = K1.copy() if keep_tables else None
    W1 = score_last[ROLL_ORDER]
    np.maximum(W1, _best_of_subkeeps(K1), out=W1)
    K2 = _internal_keep_values(W1, _FOUR_PLUS_IROLL_T)
    out2 = K2.copy() if keep_tables else None
    W2 = score_first[ROLL_ORDER]
    np.maximum(W2, _best_of_subkeeps(K2), out=W2)
    value = _FIRST_PROB_INTERNAL @ W2
    if not keep_tables:
        return value, None, None
    return value, out1[KEEP_POS], out2[KEEP_POS]


def _pack_id(value: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Value with a tie-break id (int32 >= 0) below it."""
    return _pack_words(value, ids)


_unpack_id = _unpack_words


#: tie-break word of each internal proper keep: among keeps of equal value the
#: one earliest in internal order (fewest dice first) wins
_KEEP_TIE_ID = (N_PROPER_KEEPS - 1 - np.arange(N_PROPER_KEEPS, dtype=np.int32))[:, None]


def _action_of_internal_keep() -> np.ndarray:
    """(252, 210) uint8: per engine roll, the lowest keep action (bitmask) reaching each internal keep."""
    from dice_poker_env.engine.dice import KEEP_OF_ACTION

    table = np.zeros((N_ROLLS, N_PROPER_KEEPS), dtype=np.uint8)
    for a in range(30, -1, -1):  # proper keep actions 0..30; the lowest wins
        table[np.arange(N_ROLLS), KEEP_POS[KEEP_OF_ACTION[:, a]]] = a
    return table


_ACTION_OF_INTERNAL_KEEP = _action_of_internal_keep()
#: flat, indexed by ``roll * 210 + (209 - tie id)``: the action of the keep a tie word names
_ACTION_OF_TIE_ID = np.ascontiguousarray(_ACTION_OF_INTERNAL_KEEP[:, ::-1]).reshape(-1)
_ROLL_BASE = (np.arange(N_ROLLS, dtype=np.int32) * N_PROPER_KEEPS)[:, None]


def turn_decisions(score_last: np.ndarray, score_first: np.ndarray, box_last: np.ndarray, box_first: np.ndarray, n_keep_actions: int = 32) -> np.ndarray:
    """The optimal action of every roll of a turn, for ``m`` states at once.

    Args:
        score_last, score_first: ``(252, m)`` float32 best value of scoring each roll
            after a reroll / from the turn's first roll (as for :func:`widget`).
        box_last, box_first: ``(252, m)`` int8 the box reaching those values.

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
    K1 = _internal_keep_values(score_last, _FOUR_PLUS_ROLL_T)
    W1 = score_last[ROLL_ORDER]
    for level, (K, S, B) in enumerate(((K1, score_last, box_last), (None, score_first, box_first)), start=1):
        if K is None:
            K = _internal_keep_values(W1, _FOUR_PLUS_IROLL_T)
        best, tie = _unpack_id(_best_of_subkeeps(_pack_id(K, _KEEP_TIE_ID)))  # internal roll order
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


# -- the solve's words: float32 value and second moment side by side ----------
# A solve table is float32 pairs ``[second moment, value]`` in memory, read as
# one little-endian int64 word per entry: the value is the high half. Table
# values are made non-negative (relative to each state's lowest candidate, see
# :class:`BlockScores`), and non-negative float32 compare like their bit
# patterns, so one int64 ``np.maximum`` picks the better action and carries its
# second moment, with no packing and unpacking; the same memory read as float32
# feeds the (linear) keep recursion of values and second moments in one pass.
# Illegal entries are negative (``-inf``), below every legal word.
assert np.little_endian, "the solver's packed words assume a little-endian machine"


def _pairs(value: np.ndarray, second: np.ndarray) -> np.ndarray:
    """int64 words of ``value`` (>= 0 or -inf) and ``second`` (>= 0), float32 side by side."""
    out = np.empty(value.shape + (2,), dtype=np.float32)
    out[..., 0] = second
    out[..., 1] = value
    return out.view(np.int64)[..., 0]


def _as_floats(words: np.ndarray) -> np.ndarray:
    """The ``(rows, 2 m)`` float32 view of ``(rows, m)`` words: second moments at even columns."""
    return words.view(np.float32)


def _widget_second_internal(P1: np.ndarray, P2: np.ndarray):
    """The solve's turn widget on words (:func:`_pairs`) in internal roll order.

    ``P1`` / ``P2`` are the ``(252, m)`` tables of scoring each roll after a
    reroll / from the turn's first roll (the same array without first-roll
    doubling); they are left as they are. Returns the ``(m,)`` expected value
    and second moment of the turn (relative to the tables' offset).
    """
    K1 = _internal_keep_values(_as_floats(P1), _FOUR_PLUS_IROLL_T)  # values and second moments at once
    W1 = _best_of_subkeeps(K1.view(np.int64))
    np.maximum(W1, P1, out=W1)  # one reroll left: the better of scoring and the best keep
    K2 = _internal_keep_values(_as_floats(W1), _FOUR_PLUS_IROLL_T)
    W2 = _best_of_subkeeps(K2.view(np.int64))
    np.maximum(W2, P2, out=W2)
    both = _FIRST_PROB_INTERNAL @ _as_floats(W2)
    return both[1::2], both[0::2]


# ---------------------------------------------------------------- state space
@dataclass
class BoxClasses:
    """Roll classes of one box: representative (roll, first_roll) per class and the class of each roll."""

    roll: np.ndarray  # (n_classes,) representative roll
    first: np.ndarray  # (n_classes,) representative first-roll flag
    of_last: np.ndarray  # (252,) class of each roll scored after a reroll
    of_first: np.ndarray  # (252,) class of each roll scored from the first roll


def box_classes(tables: RuleTables, box: int, doubling: bool, specials: bool = True) -> BoxClasses:
    """Group the (roll, first_roll) items of ``box`` into classes the engine treats alike.

    Rolls are grouped by the box's points; five-of-a-kind rolls are singletons
    when the rules have a joker or a five-of-a-kind bonus (the engine's only
    special cases for them), unless ``specials`` is false: then they join their
    points class, which is right for states whose five-of-a-kind box is still
    open (no joker is active and no bonus is due there).
    """
    reps: dict[tuple, int] = {}
    rep_roll: list[int] = []
    rep_first: list[bool] = []
    of = {False: np.empty(N_ROLLS, dtype=np.int64), True: np.empty(N_ROLLS, dtype=np.int64)}
    # five-of-a-kind rolls only behave specially through a joker or a five-of-a-kind bonus
    special = tables.five_kind_roll if specials and (tables.joker != 0 or tables.five_kind_bonus > 0) else np.zeros(N_ROLLS, dtype=bool)
    for first in (False, True) if doubling else (False,):
        table = tables.score_first_roll if first else tables.score
        for r in range(N_ROLLS):
            if special[r]:
                key = ("five", r, first)
            else:
                key = ("points", int(table[r, box]))
            if key not in reps:
                reps[key] = len(rep_roll)
                rep_roll.append(r)
                rep_first.append(first)
            of[first][r] = reps[key]
    if not doubling:
        of[True] = of[False]
    return BoxClasses(np.array(rep_roll, dtype=np.int64), np.array(rep_first, dtype=bool), of[False], of[True])


class StateSpace:
    """Encoding of between-turn states of one ruleset, and the dense index over them.

    A state key is ``(filled * n_slots + (upper - upper_lo)) * n_full + full``.
    """

    def __init__(self, tables: RuleTables):
        self.tables = tables
        n = tables.n_boxes
        self.n_boxes = n
        self.n_masks = 1 << n
        self.doubling = not np.array_equal(tables.score_first_roll, tables.score)
        self.has_bonus = bool(tables.has_upper_bonus)
        self.threshold = int(tables.upper_bonus_threshold)
        masks = np.arange(self.n_masks, dtype=np.int64)
        max_rest = np.zeros(self.n_masks, dtype=np.int64)
        min_rest = np.zeros(self.n_masks, dtype=np.int64)
        for k in np.flatnonzero(tables.is_upper):
            open_k = ((masks >> k) & 1) == 0
            max_rest += np.where(open_k, int(tables.possible_scores[k].max()), 0)
            min_rest += np.where(open_k, int(tables.possible_scores[k].min()), 0)
        self.upper_done = (masks & tables.upper_bits) == tables.upper_bits
        if self.has_bonus:
            self.upper_min = self.threshold - max_rest - 1
            self.upper_max = self.threshold - min_rest
            lo = min(0, int(self.upper_min.min()))
            hi = max(0, int(self.upper_max.max()))
        else:
            lo = hi = 0
        self.upper_lo = lo
        self.n_slots = hi - lo + 1
        self.five_box = int(tables.five_kind_box)
        # the flag only matters when a joker or a five-of-a-kind bonus exists
        self.n_full = 2 if self.five_box >= 0 and (tables.joker != 0 or tables.five_kind_bonus > 0) else 1
        self.size = self.n_masks * self.n_slots * self.n_full
        self._set_classes(specials=True)
        #: the same space with five-of-a-kind rolls in their points classes (fewer classes),
        #: for blocks of states whose five-of-a-kind box is still open; None without specials
        self.plain: StateSpace | None = None
        if self.n_full == 2:  # the rules have five-of-a-kind cases
            self.plain = copy.copy(self)
            self.plain._set_classes(specials=False)

    def _set_classes(self, specials: bool) -> None:
        n = self.n_boxes
        self.box_classes = [box_classes(self.tables, b, self.doubling, specials) for b in range(n)]
        #: every roll that represents a class of some box, and where each box's representatives are in it
        self.class_rolls = np.unique(np.concatenate([c.roll for c in self.box_classes]), return_index=True)[0]
        self.class_roll_pos = [np.searchsorted(self.class_rolls, c.roll) for c in self.box_classes]
        #: per box: the points group of each roll class (classes of equal points after
        #: which an upper box leads to the same next state) and a class of each group
        self.point_groups = [self._point_groups(b) for b in range(n)]
        self._internal = {}
        #: the max over boxes per roll (internal roll order), after a reroll and from the first roll
        self.max_tree = {first: BoxMaxTree([self.internal_classes(b, first) for b in range(n)]) for first in ((False, True) if self.doubling else (False,))}

    def for_block(self, filled: np.ndarray) -> "StateSpace":
        """The class system for a block of states: :attr:`plain` when no state has its
        five-of-a-kind box filled (the engine's five-of-a-kind cases cannot arise), else this."""
        if self.plain is not None and not ((filled >> self.five_box) & 1).any():
            return self.plain
        return self

    def _point_groups(self, box: int) -> tuple[np.ndarray, np.ndarray]:
        cls = self.box_classes[box]
        points = np.where(cls.first, self.tables.score_first_roll[cls.roll, box], self.tables.score[cls.roll, box])
        _, rep, group_of = np.unique(points, return_index=True, return_inverse=True)
        if len(rep) == len(points):  # one class per points value: the groups are the classes
            return np.arange(len(points)), np.arange(len(points))
        return group_of.reshape(-1), rep

    def internal_classes(self, box: int, first: bool) -> np.ndarray:
        """The class of each roll of ``box``, rolls in the widget's internal order."""
        key = (box, first)
        if key not in self._internal:
            cls = self.box_classes[box]
            self._internal[key] = (cls.of_first if first else cls.of_last)[ROLL_ORDER]
        return self._internal[key]

    # -- encoding
    def upper_range(self, filled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``: the canonical upper totals of masks ``filled`` are ``lo..hi``
        (just 0 once the total no longer matters; see the module docstring)."""
        filled = np.asarray(filled, dtype=np.int64)
        if not self.has_bonus:
            zero = np.zeros(filled.shape, dtype=np.int64)
            return zero, zero
        done = self.upper_done[filled]
        return np.where(done, 0, self.upper_min[filled]), np.where(done, 0, self.upper_max[filled])

    def canonical_upper(self, filled: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """The canonical upper total of states (see the module docstring)."""
        return np.clip(np.asarray(upper, dtype=np.int64), *self.upper_range(filled))

    def next_full(self, full, box, points) -> np.ndarray:
        """Whether the five-of-a-kind box holds points after ``points`` are written in
        ``box`` (broadcasting; always false where the rules need no such flag)."""
        return np.asarray(full) | ((np.asarray(box) == self.five_box) & (np.asarray(points) > 0) & (self.n_full == 2))

    def key(self, filled, upper_canonical, full) -> np.ndarray:
        """State keys of canonical states."""
        filled = np.asarray(filled, dtype=np.int64)
        slot = np.asarray(upper_canonical, dtype=np.int64) - self.upper_lo
        full = np.asarray(full, dtype=np.int64) if self.n_full == 2 else 0
        return (filled * self.n_slots + slot) * self.n_full + full

    def decode(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(filled, upper, full)`` of state keys."""
        keys = np.asarray(keys, dtype=np.int64)
        full = (keys % self.n_full).astype(bool)
        rest = keys // self.n_full
        return rest // self.n_slots, rest % self.n_slots + self.upper_lo, full

    # -- transitions
    def chunk_moves(self, filled: np.ndarray, upper: np.ndarray, full: np.ndarray) -> "ChunkMoves":
        """Everything about the score actions of a chunk of states that does not depend on values."""
        return ChunkMoves(self, filled, upper, full)


class ChunkMoves:
    """Score moves of a chunk of ``m`` states, box by box.

    Upper boxes (which change the upper total and may pay the upper bonus) are
    evaluated per (roll class, state). Every other box gives the same points and
    bonus to all states that share ``(filled, full)`` (a *pair*), and leaves the
    upper total alone, so it is evaluated per (roll class, pair): the next state
    then only depends on whether the five-of-a-kind box becomes full.
    """

    def __init__(self, space: StateSpace, filled: np.ndarray, upper: np.ndarray, full: np.ndarray):
        tables = space.tables
        self.space = space
        self.filled, self.upper, self.full = filled, upper, full
        pair_code = filled * 2 + full
        codes, inverse = np.unique(pair_code, return_inverse=True)
        self.pair_of_state = inverse.reshape(-1)
        self.pair_filled = codes // 2
        self.pair_full = (codes % 2).astype(bool)
        legal = legal_boxes(tables, self.pair_filled[:, None], self.pair_full[:, None], np.arange(N_ROLLS)[None, :])
        self.pair_legal = np.broadcast_to(np.asarray(legal, dtype=np.int64), (len(codes), N_ROLLS))
        #: (pairs,) the boxes legal for some roll of each pair (bitmask)
        self.pair_any = np.bitwise_or.reduce(np.asarray(legal, dtype=np.int64).reshape(len(codes), -1), axis=1)
        any_pair = int(np.bitwise_or.reduce(self.pair_any)) if len(codes) else 0
        self.open_boxes = [b for b in range(space.n_boxes) if any_pair >> b & 1]

    def upper_moves(self, box: int):
        """``(legal, reward, next_key)``, each ``(n_classes, m)``, for an upper box (per class)."""
        group, legal, delta, reward, keys = self.upper_moves_grouped([box])
        n = len(self.space.box_classes[box].roll)
        g = group[0, :n]
        added = 0.0 if delta is None else delta[0, :n][:, self.pair_of_state]
        return legal[0, :n][:, self.pair_of_state], reward[0, g] + added, keys[0, g]

    def upper_moves_grouped(self, boxes: list[int]):
        """The moves of several upper boxes, per points group and state, and per class and pair.

        Writing a roll in an upper box leads to a next state that depends on the
        roll only through the points written (upper boxes take no joker points),
        and the upper bonus depends on the upper total only through them. So the
        engine is asked per (box, points group, state) for the reward and next
        state, and per (box, roll class, pair) for what the class adds to its
        group's reward (a five-of-a-kind bonus): the difference of two engine
        rewards at the same upper total, in which the upper bonus cancels.

        Returns ``(group, legal, delta, reward, next_key)``: ``(nb, C)`` the group of
        each class (the class axis padded with class 0), ``(nb, C, pairs)`` legality
        and added reward of each class, ``(nb, G, m)`` reward and next state of each
        group (the group axis padded with group 0).
        """
        space = self.space
        classes = [space.box_classes[b] for b in boxes]
        groups = [space.point_groups[b] for b in boxes]
        width = max(len(c.roll) for c in classes)
        n_groups = max(len(rep) for _, rep in groups)
        pad = lambda a, n: np.concatenate([a, np.repeat(a[:1], n - len(a))])  # noqa: E731
        rolls = np.stack([pad(c.roll, width) for c in classes])  # (nb, C)
        firsts = np.stack([pad(c.first, width) for c in classes])
        group = np.stack([pad(g, width) for g, _ in groups])  # (nb, C)
        rep = np.stack([pad(r, n_groups) for _, r in groups])  # (nb, G) a class of each group
        nb = np.arange(len(boxes))[:, None]
        box = np.asarray(boxes, dtype=np.int64)[:, None]
        legal = ((self.pair_legal.T[rolls] >> box[..., None]) & 1).astype(bool)  # (nb, C, pairs)
        if n_groups == width and all(len(r) == len(c.roll) for (_, r), c in zip(groups, classes)):
            delta = None  # every class is its own group: nothing to add
        else:
            delta = self._class_deltas(boxes, rolls, firsts, group, rep, legal.shape)
        # per (group, state): reward and next state
        g_rolls, g_firsts = rolls[nb, rep], firsts[nb, rep]  # (nb, G)
        points, bonus, new_upper = score_points(
            space.tables, self.filled, self.upper, self.full, g_rolls[..., None], g_firsts[..., None], box[..., None]
        )
        new_filled = self.filled | (1 << box[..., None])  # (nb, 1, m)
        new_full = space.next_full(self.full, box[..., None], points)
        shape = (len(boxes), n_groups, len(self.filled))
        keys = np.broadcast_to(space.key(new_filled, space.canonical_upper(new_filled, new_upper), new_full), shape)
        reward = np.broadcast_to(np.asarray(points + bonus, dtype=np.float64), shape)
        return group, legal, delta, reward, keys

    def _class_deltas(self, boxes, rolls, firsts, group, rep, shape):
        """``(nb, C, pairs)`` what each class adds to its group's reward, per pair."""
        space = self.space
        nb = np.arange(len(boxes))[:, None]
        box = np.asarray(boxes, dtype=np.int64)[:, None]
        # per (class, pair): what the class adds to the reward of its group's class
        first_state = np.zeros(len(self.pair_filled), dtype=np.int64)
        first_state[self.pair_of_state[::-1]] = np.arange(len(self.filled))[::-1]
        pair_args = (self.pair_filled, self.upper[first_state], self.pair_full)
        points, bonus, _ = score_points(space.tables, *pair_args, rolls[..., None], firsts[..., None], box[..., None])
        rep_of_class = rep[nb, group]  # (nb, C) the representative class of each class's group
        rep_points, rep_bonus, _ = score_points(
            space.tables, *pair_args, rolls[nb, rep_of_class][..., None], firsts[nb, rep_of_class][..., None], box[..., None]
        )
        return np.broadcast_to(np.asarray(points + bonus - rep_points - rep_bonus, dtype=np.float64), shape)

    def lower_moves(self, box: int):
        """``(legal, reward, becomes_full, key_same, key_full)`` for a non-upper box.

        ``legal``, ``reward`` and ``becomes_full`` are ``(n_classes, n_pairs)``;
        ``key_same`` / ``key_full`` are ``(m,)``: the next state of each state when the
        five-of-a-kind flag stays / becomes set.
        """
        space = self.space
        cls = space.box_classes[box]
        legal = ((self.pair_legal[:, cls.roll] >> box) & 1).astype(bool).T
        first_state = np.zeros(len(self.pair_filled), dtype=np.int64)
        first_state[self.pair_of_state[::-1]] = np.arange(len(self.filled))[::-1]
        points, bonus, _ = score_points(
            space.tables, self.pair_filled[None, :], self.upper[first_state][None, :], self.pair_full[None, :],
            cls.roll[:, None], cls.first[:, None], box,
        )
        reward = np.broadcast_to(np.asarray(points + bonus, dtype=np.float64), legal.shape)
        if box == space.five_box and space.n_full == 2:
            becomes_full = np.broadcast_to(np.asarray(points > 0), legal.shape) & ~self.pair_full[None, :]
        else:
            becomes_full = np.zeros(legal.shape, dtype=bool)
        new_filled = self.filled | (1 << box)
        next_upper = space.canonical_upper(new_filled, self.upper)
        key_same = space.key(new_filled, next_upper, self.full)
        key_full = space.key(new_filled, next_upper, True) if space.n_full == 2 else key_same
        return legal, reward, becomes_full, key_same, key_full


@dataclass
class DPResult:
    """Raw solver output: state keys and their expected future points and second moments."""

    keys: np.ndarray  # (S,) int64 sorted within each layer, layers concatenated
    layer_start: np.ndarray  # (turns + 2,) offsets of the layers in keys
    value: np.ndarray  # (S,) float64 expected points still to come
    value2: np.ndarray  # (S,) float64 expected square of the points still to come
    space: StateSpace | None = None  # the state space solved (None when loaded from the cache)


class StateIndex:
    """Dense lookup ``key -> position in DPResult arrays`` (``-1``: not a reachable state)."""

    def __init__(self, space: StateSpace, keys: np.ndarray):
        self.table = np.full(space.size, -1, dtype=np.int32)
        self.table[keys] = np.arange(len(keys), dtype=np.int32)

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        return self.table[keys]


def _lookup(index: StateIndex, keys: np.ndarray, legal: np.ndarray, value: np.ndarray, value2, second: bool):
    pos = index(keys)
    if pos.min(initial=0) < 0:  # allowed only for illegal moves
        if np.any(legal & (pos < 0)):
            raise RuntimeError("solver: a legal move leads to a state outside the reachable set")
        pos = np.maximum(pos, 0)
    return value[pos], (value2[pos] if second else None)


#: dtype of the per-turn tables: float32 halves memory traffic; values are
#: centered per state (see :class:`BlockScores`) so the rounding error stays ~1e-5
WORK_DTYPE = np.float32


class BlockScores:
    """The score moves of a block of states, evaluated once; :meth:`tables` per sub-chunk.

    The engine is called once per block (a few thousand states) for every open
    box; the ``(252, m)`` turn tables are then assembled for cache-sized sub-chunks.
    ``center`` (per state) is the least total (points + next-state value) of a
    legal score move: tables are relative to it (small float32 values, and
    ``>= 0`` as the solve's words need); ``shift`` (relative to ``center``) is the
    best legal next-state value, about which second moments are taken.
    """

    def __init__(self, space: StateSpace, filled, upper, full, value, variance, index: StateIndex, second: bool):
        self.space = space
        self.second = second
        moves = space.chunk_moves(filled, upper, full)
        self.pair = moves.pair_of_state
        m = len(filled)
        dtype = WORK_DTYPE
        center = np.full(m, np.inf)
        best_next = np.full(m, -np.inf)
        self.upper_open = [b for b in moves.open_boxes if space.tables.is_upper[b]]
        self.lower = []
        upper_moves = upper_total = upper_c = None
        if self.upper_open:  # all upper boxes at once, per points group (see upper_moves_grouped)
            group, legal_cp, delta_cp, reward, keys = moves.upper_moves_grouped(self.upper_open)
            if delta_cp is None:  # each class its own group
                legal_g = legal_cp[:, :, self.pair]
            else:
                nb = np.arange(len(self.upper_open))[:, None]
                legal_gp = np.zeros(reward.shape[:2] + legal_cp.shape[2:], dtype=bool)  # (nb, G, pairs)
                low_delta = np.full(legal_gp.shape, np.inf)  # least added reward of a legal class of the group
                for c in range(group.shape[1]):
                    legal_gp[nb, group[:, c : c + 1]] |= legal_cp[:, c : c + 1]
                    low = low_delta[nb, group[:, c : c + 1]]
                    low_delta[nb, group[:, c : c + 1]] = np.minimum(low, np.where(legal_cp[:, c : c + 1], delta_cp[:, c : c + 1], np.inf))
                legal_g = legal_gp[:, :, self.pair]
            v, c = _lookup(index, keys, legal_g, value, variance, second)
            upper_total = reward + v  # points now + expected points after, per (box, group, state)
            lowest = upper_total if delta_cp is None else upper_total + low_delta[:, :, self.pair]
            np.min(np.where(legal_g, lowest, np.inf), axis=(0, 1), out=center)
            np.max(np.where(legal_g, v, -np.inf), axis=(0, 1), out=best_next)
            upper_c = c
            upper_moves = (group, legal_cp, delta_cp)
        lower_raw = []
        for b in moves.open_boxes:
            if space.tables.is_upper[b]:
                continue
            legal, reward, becomes_full, key_same, key_full = moves.lower_moves(b)
            v_same, c_same = _lookup(index, key_same, legal.any(axis=0)[self.pair], value, variance, second)
            # lowest points of a legal class, per pair, for each kind of next state
            lowest_same = np.where(legal & ~becomes_full, reward, np.inf).min(axis=0)[self.pair]
            np.minimum(center, lowest_same + v_same, out=center)
            np.maximum(best_next, np.where(lowest_same < np.inf, v_same, -np.inf), out=best_next)
            if becomes_full.any():
                any_full = (legal & becomes_full).any(axis=0)[self.pair]
                v_full, c_full = _lookup(index, key_full, any_full, value, variance, second)
                lowest_full = np.where(legal & becomes_full, reward, np.inf).min(axis=0)[self.pair]
                np.minimum(center, lowest_full + v_full, out=center)
                np.maximum(best_next, np.where(lowest_full < np.inf, v_full, -np.inf), out=best_next)
            else:
                v_full = c_full = None
            lower_raw.append((b, legal, reward, becomes_full, v_same, c_same, v_full, c_full))
        center[~np.isfinite(center)] = 0.0
        best_next[~np.isfinite(best_next)] = center[~np.isfinite(best_next)]
        #: per state, the lowest total (points + next value) of a legal score move: table
        #: values are relative to it, so every legal entry is >= 0 (the words of
        #: :func:`_pairs` need that; see :meth:`_build_words` for the rounding)
        self.center = center
        #: second moments are taken about the best legal next-state value instead, which
        #: lies near the state's mean: ``E[(x - c)^2] - (E[x] - c)^2`` then cancels little
        #: float32 precision; ``shift`` (float32) is that point relative to ``center``
        self.shift = (best_next - center).astype(dtype)
        if second:
            self._build_words(moves, upper_moves, upper_total, upper_c, lower_raw)
            return
        if self.upper_open:
            self.upper_q = self._upper_classes(upper_moves, upper_total - center).astype(dtype)
            #: (n_upper, pairs): whether each upper box is legal for some roll of the pair
            self.upper_pair_open = ((moves.pair_any[None, :] >> np.asarray(self.upper_open)[:, None]) & 1).astype(bool)
        for b, legal, reward, becomes_full, v_same, c_same, v_full, c_full in lower_raw:
            r_pair = np.where(legal, reward, -np.inf).astype(dtype)
            v_same = (v_same - center).astype(dtype)
            if v_full is not None:
                v_full = (v_full - center).astype(dtype)
            self.lower.append((b, r_pair, becomes_full, legal.any(axis=0), v_same, None, v_full, None))

    def _upper_classes(self, upper_moves, group_values: np.ndarray) -> np.ndarray:
        """``(nb, C, m)`` per-class values of the upper boxes from ``(nb, G, m)`` group values.

        A class's value is its group's plus what the class adds (``delta``);
        ``-inf`` where the class is illegal. ``group_values`` may be overwritten.
        """
        group, legal_cp, delta_cp = upper_moves
        if delta_cp is None:  # each class its own group
            group_values[~legal_cp[:, :, self.pair]] = -np.inf
            return group_values
        values = _per_class(group_values, group)
        values += np.where(legal_cp, delta_cp, -np.inf).astype(values.dtype)[:, :, self.pair]
        return values

    def _build_words(self, moves, upper_moves, upper_total, upper_var, lower_raw) -> None:
        """The solve's candidates: per open box, ``(n_classes, block)`` words (:func:`_pairs`).

        Each word holds a candidate's value relative to ``center`` (``>= 0``, or
        ``-inf`` when illegal: illegal points are ``-inf`` already per pair, and the
        sum keeps them so) and its second moment about ``center + shift``:
        ``(value - shift)^2`` plus the variance of the next state. Built once per
        block, so a chunk's tables are only slices of them and the max over boxes
        (:class:`BoxMaxTree`). A legal value that float32 rounding leaves a hair
        below 0 is clipped to ``+0.0`` (a negative float reads as a negative word,
        below the illegal ones); candidates tied at the least value then stay
        exactly tied, and the larger second moment wins among them, as among any
        other exact ties.
        """
        center, shift = self.center, self.shift
        dtype = WORK_DTYPE
        #: box -> (words, (pairs,) whether the box is legal for some roll of the pair)
        self.words: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def words(value, var):
            np.maximum(value, 0, out=value, where=value > -np.inf)
            out = np.empty(value.shape + (2,), dtype=dtype)
            out[..., 1] = value
            second = np.subtract(value, shift, out=value)
            second *= second
            np.add(second, var, out=out[..., 0])
            return out.view(np.int64)[..., 0]

        if self.upper_open:
            group, _, delta_cp = upper_moves
            value = self._upper_classes(upper_moves, (upper_total - center).astype(dtype))
            var = upper_var.astype(dtype)
            upper_words = words(value, var if delta_cp is None else _per_class(var, group))
            for i, b in enumerate(self.upper_open):
                self.words[b] = (upper_words[i], (moves.pair_any >> b & 1).astype(bool))
        for b, legal, reward, becomes_full, v_same, c_same, v_full, c_full in lower_raw:
            value = np.where(legal, reward, -np.inf).astype(dtype).take(self.pair, axis=1)  # (classes, states)
            if v_full is None:
                value += (v_same - center).astype(dtype)
                var = c_same.astype(dtype)
            else:
                to_full = becomes_full.take(self.pair, axis=1)
                value += np.where(to_full, (v_full - center).astype(dtype), (v_same - center).astype(dtype))
                var = np.where(to_full, c_full.astype(dtype), c_same.astype(dtype))
            self.words[b] = (words(value, var), legal.any(axis=0))
        #: (boxes in ``words``, states): whether the box is legal for some roll of the state
        self._open_states = np.array([pair_open for _, pair_open in self.words.values()]).reshape(len(self.words), -1)[:, self.pair]

    def tables(self, sl: slice, boxes: bool = False):
        """Best value of scoring each roll now, for the states ``sl`` of a block built without second moments.

        Returns ``(S_last, S_first, B_last, B_first, center)``: ``(252, m)`` tables
        in :data:`WORK_DTYPE` of ``value - center`` after scoring each roll after a
        reroll / from the turn's first roll (engine roll order; the same array
        twice without first-roll doubling), with ``boxes`` the ``(252, m)`` int8
        best box of each roll (the lowest box index among equals; else ``None``),
        and the ``(m,)`` float64 ``center``. (The solve, with second moments, uses
        :meth:`_tables_packed`.)
        """
        space = self.space
        pair = self.pair[sl]
        pairs_here = np.unique(pair)
        m = len(pair)
        dtype = WORK_DTYPE
        S0 = np.full((N_ROLLS, m), -np.inf, dtype=dtype)
        S2 = np.full((N_ROLLS, m), -np.inf, dtype=dtype) if space.doubling else S0
        B0 = B2 = None
        if boxes:
            B0 = np.zeros((N_ROLLS, m), dtype=np.int8)
            B2 = np.zeros((N_ROLLS, m), dtype=np.int8) if space.doubling else B0
        candidates = []
        for i, b in enumerate(self.upper_open):
            if self.upper_pair_open[i, pairs_here].any():
                candidates.append((b, lambda of, q=self.upper_q[i][:, sl]: q[of]))
        for b, r_pair, becomes_full, pair_open, v_same, _, v_full, _ in self.lower:
            if not pair_open[pairs_here].any():
                continue

            def cands(of, r_pair=r_pair, becomes_full=becomes_full, v_same=v_same[sl], v_full=None if v_full is None else v_full[sl], cache={}):
                if "q" not in cache:  # per roll class first (few rows), then rows copied per roll
                    q = r_pair.take(pair, axis=1)  # (n_classes, m)
                    if v_full is None:
                        q += v_same
                    else:
                        q += np.where(becomes_full.take(pair, axis=1), v_full, v_same)
                    cache["q"] = q
                return cache["q"].take(of, axis=0)  # (252, m)

            candidates.append((b, cands))
        candidates.sort(key=lambda item: item[0])  # box order: the lowest box wins ties
        for b, cands in candidates:
            cls = space.box_classes[b]
            targets = [(S0, B0, cls.of_last)]
            if space.doubling:
                targets.append((S2, B2, cls.of_first))
            for S, best_box, of in targets:
                cand = cands(of)
                if best_box is not None:
                    better = np.greater(cand, S)
                    best_box += better * (np.int8(b) - best_box)
                np.maximum(S, cand, out=S)
        return S0, S2, B0, B2, self.center[sl]

    def _tables_packed(self, sl: slice):
        """The tables with second moments, as words for :func:`_widget_second_internal`.

        The max over boxes of the candidate words (:meth:`_build_words`); among
        boxes of equal value the one with the larger second moment wins (any of
        them is optimal). Returns ``(last, first, center, shift)``: ``(252, m)``
        words in internal roll order after a reroll / from the first roll (the
        same array without first-roll doubling), and the states' offsets.
        """
        space = self.space
        leaves: list = [None] * space.n_boxes  # per box: (n_classes, m) candidate words, None if closed
        for (b, (words, _)), is_open in zip(self.words.items(), self._open_states[:, sl].any(axis=1)):
            if is_open:
                leaves[b] = words[:, sl]
        out = [space.max_tree[first].evaluate(leaves) for first in ((False, True) if space.doubling else (False,))]
        return out[0], out[-1], self.center[sl], self.shift[sl]


def _per_class(group_values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``(nb, C, m)`` rows of ``(nb, G, m)`` per-group values, class ``c`` of box ``i`` reading group ``group[i, c]``."""
    nb, n_groups, m = group_values.shape
    rows = (np.arange(nb)[:, None] * n_groups + group).reshape(-1)
    return group_values.reshape(nb * n_groups, m).take(rows, axis=0).reshape(nb, -1, m)


def default_workers() -> int:
    """Worker processes for a solve: ``$DICE_POKER_SOLVER_WORKERS``, else 2 (1 on a one-core machine)."""
    env = os.environ.get("DICE_POKER_SOLVER_WORKERS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"DICE_POKER_SOLVER_WORKERS must be a positive integer, got {env!r}") from None
    return max(1, min(2, os.cpu_count() or 1))


def solve_dp(tables: RuleTables, *, chunk: int = 256, progress=None, workers: int | None = None) -> DPResult:
    """Run the forward (reachability) and backward (values) passes for ``tables``.

    Args:
        chunk: states per turn-table batch (sized to stay in the CPU cache).
        progress: optional tqdm-like object (``update(n)``, ``reset(total=)``): it
            counts the layers of the forward pass, then the states of the backward pass.
        workers: processes sharing each layer (default :func:`default_workers`);
            they are forked and write into shared memory, so this needs ``fork``
            (Linux, macOS); elsewhere the solve runs in this process.
    """
    workers = default_workers() if workers is None else max(1, int(workers))
    if workers > 1 and "fork" not in multiprocessing.get_all_start_methods():
        workers = 1
    with roomy_malloc():
        return _solve_dp(tables, chunk, progress, workers)


#: what forked workers inherit (set just before the pool is created)
_SHARED: dict = {}


def _backward_task(bounds: tuple[int, int]) -> int:
    _solve_range(*bounds, **_SHARED)
    return bounds[1] - bounds[0]


def _solve_range(lo: int, hi: int, *, space, keys, index, value, variance, chunk, block=4096) -> None:
    """Backward step for the states at positions ``lo..hi`` (one layer): fills value and variance.

    The engine is consulted once per block of ``block`` states (:class:`BlockScores`),
    the turn widget runs on cache-sized sub-chunks of ``chunk`` states.
    """
    for b_start in range(lo, hi, block):
        b_end = min(hi, b_start + block)
        filled, upper, full = space.decode(keys[b_start:b_end])
        scores = BlockScores(space.for_block(filled), filled, upper, full, value, variance, index, True)
        for start in range(b_start, b_end, chunk):
            end = min(b_end, start + chunk)
            last, first, center, shift = scores._tables_packed(slice(start - b_start, end - b_start))
            v, v2 = _widget_second_internal(last, first)
            value[start:end] = center + v
            about = v - shift
            variance[start:end] = np.maximum(v2 - about * about, 0.0)


def _shared_zeros(n: int, dtype=np.float64) -> np.ndarray:
    """A zeroed array in anonymous shared memory (visible to forked workers)."""
    size = np.dtype(dtype).itemsize
    buffer = mmap.mmap(-1, max(size * n, size))
    return np.frombuffer(buffer, dtype=dtype, count=n)


def _pieces(lo: int, hi: int, chunk: int, workers: int) -> list[tuple[int, int]]:
    """Split a layer into a few pieces per worker, each a multiple of ``chunk`` states."""
    n = hi - lo
    per = max(chunk, -(-n // (4 * workers) // chunk) * chunk)
    return [(start, min(hi, start + per)) for start in range(lo, hi, per)]


def _solve_dp(tables: RuleTables, chunk: int, progress, workers: int) -> DPResult:
    space = StateSpace(tables)
    if progress is not None:
        progress.reset(total=tables.turns)
    layers = reachable_layers(space, progress)
    context = multiprocessing.get_context("fork") if workers > 1 else None
    keys = np.concatenate(layers)
    layer_start = np.concatenate([[0], np.cumsum([len(layer) for layer in layers])]).astype(np.int64)
    index = StateIndex(space, keys)
    value = _shared_zeros(len(keys)) if context else np.zeros(len(keys))
    variance = _shared_zeros(len(keys)) if context else np.zeros(len(keys))
    if progress is not None:
        progress.reset(total=int(layer_start[tables.turns]))
    shared = dict(space=space, keys=keys, index=index, value=value, variance=variance, chunk=chunk)
    _SHARED.clear()
    _SHARED.update(shared)
    pool = context.Pool(workers) if context else None
    try:
        for t in range(tables.turns - 1, -1, -1):
            lo, hi = int(layer_start[t]), int(layer_start[t + 1])
            pieces = _pieces(lo, hi, chunk, workers)
            if pool is not None and len(pieces) > 1:
                for done in pool.imap_unordered(_backward_task, pieces):
                    if progress is not None:
                        progress.update(done)
            else:
                for piece in pieces:
                    _solve_range(*piece, **shared)
                    if progress is not None:
                        progress.update(piece[1] - piece[0])
    finally:
        if pool is not None:
            pool.terminate()
        _SHARED.clear()
    value, variance = np.array(value), np.array(variance)  # private copies (the shared maps are released)
    return DPResult(keys=keys, layer_start=layer_start, value=value, value2=variance + value * value, space=space)
