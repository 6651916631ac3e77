"""Between-turn states of one ruleset: their encoding, roll classes, and the score moves of a chunk.

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

All points, bonuses and legality come from the engine
(:func:`~dice_poker_env.engine.game.score_points`,
:func:`~dice_poker_env.engine.game.legal_boxes`), called on arrays of
(state, roll class, box) by :class:`ChunkMoves`. A *roll class* of a box groups
the rolls on which the engine's answer for that box can only differ through its
points: five-of-a-kind rolls are singletons (joker and bonus), the others are
grouped by the box's points (with the first-roll variant when the rules double).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from dice_poker_env.engine.combinatorics import N_ROLLS
from dice_poker_env.engine.game import legal_boxes, score_points
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.solver.box_max import BoxMaxTree
from dice_poker_env.solver.keep_tables import ROLL_ORDER


class States(NamedTuple):
    """Between-turn states, one entry per state (arrays of equal shape)."""

    filled: np.ndarray  #: int64 bitmask of filled boxes
    upper: np.ndarray  #: int64 upper total (canonical where it comes from a key)
    full: np.ndarray  #: bool, whether the five-of-a-kind box holds points


@dataclass
class BoxClasses:
    """Roll classes of one box: representative (roll, first_roll) per class and the class of each roll."""

    roll: np.ndarray  # (n_classes,) representative roll
    first: np.ndarray  # (n_classes,) representative first-roll flag
    of_last: np.ndarray  # (252,) class of each roll scored after a reroll
    of_first: np.ndarray  # (252,) class of each roll scored from the first roll


def box_classes(tables: RuleTables, box: int, *, doubling: bool, specials: bool = True) -> BoxClasses:
    """Group the (roll, first_roll) items of ``box`` into classes the engine treats alike.

    Rolls are grouped by the box's points; five-of-a-kind rolls are singletons
    when the rules have a joker or a five-of-a-kind bonus (the engine's only
    special cases for them), unless ``specials`` is false: then they join their
    points class, which is right for states whose five-of-a-kind box is still
    open (no joker is active and no bonus is due there).
    """
    reps: dict[tuple[str, int] | tuple[str, int, bool], int] = {}
    rep_roll: list[int] = []
    rep_first: list[bool] = []
    of = {False: np.empty(N_ROLLS, dtype=np.int64), True: np.empty(N_ROLLS, dtype=np.int64)}
    # five-of-a-kind rolls only behave specially through a joker or a five-of-a-kind bonus
    special = (
        tables.five_kind_roll
        if specials and (tables.joker != 0 or tables.five_kind_bonus > 0)
        else np.zeros(N_ROLLS, dtype=bool)
    )
    for first in (False, True) if doubling else (False,):
        table = tables.score_first_roll if first else tables.score
        for r in range(N_ROLLS):
            key: tuple[str, int] | tuple[str, int, bool]
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
    """Between-turn states of one ruleset: their keys, canonical upper totals and roll classes.

    A state key is ``(filled * n_slots + (upper - upper_lo)) * n_full + full``
    (``n_full`` is 1 where the rules need no five-of-a-kind flag); the dense
    index over the reachable keys is :class:`StateIndex`.
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

    def _set_classes(self, *, specials: bool) -> None:
        n = self.n_boxes
        self.box_classes = [box_classes(self.tables, b, doubling=self.doubling, specials=specials) for b in range(n)]
        #: every roll that represents a class of some box, and where each box's representatives are in it
        self.class_rolls = np.unique(np.concatenate([c.roll for c in self.box_classes]), return_index=True)[0]
        self.class_roll_pos = [np.searchsorted(self.class_rolls, c.roll) for c in self.box_classes]
        #: per box: the points group of each roll class (classes of equal points after
        #: which an upper box leads to the same next state) and a class of each group
        self.point_groups = [self._point_groups(b) for b in range(n)]
        self._internal: dict[tuple[int, bool], np.ndarray] = {}
        #: the max over boxes per roll (internal roll order), after a reroll and from the first roll
        self.max_tree = {
            first: BoxMaxTree([self.internal_classes(b, first=first) for b in range(n)])
            for first in ((False, True) if self.doubling else (False,))
        }

    def for_block(self, filled: np.ndarray) -> StateSpace:
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

    def internal_classes(self, box: int, *, first: bool) -> np.ndarray:
        """The class of each roll of ``box``, rolls in the widget's internal order."""
        key = (box, first)
        if key not in self._internal:
            cls = self.box_classes[box]
            self._internal[key] = (cls.of_first if first else cls.of_last)[ROLL_ORDER]
        return self._internal[key]

    # -- encoding
    def upper_range(self, filled: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``: the canonical upper totals of masks ``filled`` are ``lo..hi``
        (just 0 once the total no longer matters; see the module docstring)."""
        filled = np.asarray(filled, dtype=np.int64)
        if not self.has_bonus:
            zero = np.zeros(filled.shape, dtype=np.int64)
            return zero, zero
        done = self.upper_done[filled]
        return np.where(done, 0, self.upper_min[filled]), np.where(done, 0, self.upper_max[filled])

    def canonical_upper(self, filled: npt.ArrayLike, upper: npt.ArrayLike) -> np.ndarray:
        """The canonical upper total of states (see the module docstring)."""
        return np.clip(np.asarray(upper, dtype=np.int64), *self.upper_range(filled))

    def next_full(self, full: npt.ArrayLike, box: npt.ArrayLike, points: npt.ArrayLike) -> np.ndarray:
        """Whether the five-of-a-kind box holds points after ``points`` are written in
        ``box`` (broadcasting; always false where the rules need no such flag)."""
        return np.asarray(full) | ((np.asarray(box) == self.five_box) & (np.asarray(points) > 0) & (self.n_full == 2))

    def key(self, filled: npt.ArrayLike, upper_canonical: npt.ArrayLike, full: npt.ArrayLike) -> np.ndarray:
        """State keys of canonical states."""
        filled = np.asarray(filled, dtype=np.int64)
        slot = np.asarray(upper_canonical, dtype=np.int64) - self.upper_lo
        full = np.asarray(full, dtype=np.int64) if self.n_full == 2 else 0
        return (filled * self.n_slots + slot) * self.n_full + full

    def decode(self, keys: np.ndarray) -> States:
        """The states of state keys."""
        keys = np.asarray(keys, dtype=np.int64)
        full = (keys % self.n_full).astype(bool)
        rest = keys // self.n_full
        return States(rest // self.n_slots, rest % self.n_slots + self.upper_lo, full)

    # -- transitions
    def chunk_moves(self, filled: np.ndarray, upper: np.ndarray, full: np.ndarray) -> ChunkMoves:
        """Everything about the score actions of a chunk of states that does not depend on values."""
        return ChunkMoves(self, filled, upper, full)


class UpperMoves(NamedTuple):
    """The moves of one upper box for a chunk of ``m`` states, per roll class: each ``(n_classes, m)``."""

    legal: np.ndarray  #: bool, whether the class may be written in the box
    reward: np.ndarray  #: float64 points + bonus
    next_key: np.ndarray  #: int64 key of the next state


class GroupedUpperMoves(NamedTuple):
    """The moves of several upper boxes (:meth:`ChunkMoves.upper_moves_grouped`).

    The class axis is padded with class 0, the group axis with group 0.
    """

    group: np.ndarray  #: (nb, C) the points group of each class
    legal: np.ndarray  #: (nb, C, pairs) bool, legality of each class
    delta: (
        np.ndarray | None
    )  #: (nb, C, pairs) what each class adds to its group's reward; None: every class is its own group
    reward: np.ndarray  #: (nb, G, m) float64 points + bonus of each group
    next_key: np.ndarray  #: (nb, G, m) int64 key of the next state of each group


class LowerMoves(NamedTuple):
    """The moves of one box outside the upper section for a chunk of ``m`` states."""

    legal: np.ndarray  #: (n_classes, pairs) bool, whether the class may be written in the box
    reward: np.ndarray  #: (n_classes, pairs) float64 points + bonus
    becomes_full: np.ndarray  #: (n_classes, pairs) bool, whether the five-of-a-kind flag becomes set
    key_same: np.ndarray  #: (m,) int64 next state when the flag stays as it is
    key_full: np.ndarray  #: (m,) int64 next state when the flag becomes set


class ChunkMoves:
    """Score moves of a chunk of ``m`` states, box by box.

    Upper boxes (which change the upper total and may pay the upper bonus) are
    evaluated per (points group, state) and per (roll class, pair) (see
    :meth:`upper_moves_grouped`). Every other box gives the same points and
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

    def upper_moves(self, box: int) -> UpperMoves:
        """The moves of an upper box per roll class (:meth:`upper_moves_grouped` expanded)."""
        grouped = self.upper_moves_grouped([box])
        n = len(self.space.box_classes[box].roll)
        g = grouped.group[0, :n]
        added = 0.0 if grouped.delta is None else grouped.delta[0, :n][:, self.pair_of_state]
        return UpperMoves(
            grouped.legal[0, :n][:, self.pair_of_state], grouped.reward[0, g] + added, grouped.next_key[0, g]
        )

    def upper_moves_grouped(self, boxes: list[int]) -> GroupedUpperMoves:
        """The moves of several upper boxes, per points group and state, and per class and pair.

        Writing a roll in an upper box leads to a next state that depends on the
        roll only through the points written (upper boxes take no joker points),
        and the upper bonus depends on the upper total only through them. So the
        engine is asked per (box, points group, state) for the reward and next
        state, and per (box, roll class, pair) for what the class adds to its
        group's reward (a five-of-a-kind bonus): the difference of two engine
        rewards at the same upper total, in which the upper bonus cancels.

        Returns per class and pair the legality and what the class adds to its
        group's reward, per group and state the reward and the next state.
        """
        space = self.space
        classes = [space.box_classes[b] for b in boxes]
        groups = [space.point_groups[b] for b in boxes]
        width = max(len(c.roll) for c in classes)
        n_groups = max(len(rep) for _, rep in groups)

        def pad(a: np.ndarray, n: int) -> np.ndarray:
            return np.concatenate([a, np.repeat(a[:1], n - len(a))])

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
        return GroupedUpperMoves(group, legal, delta, reward, keys)

    def _class_deltas(
        self,
        boxes: Sequence[int],
        rolls: np.ndarray,
        firsts: np.ndarray,
        group: np.ndarray,
        rep: np.ndarray,
        shape: tuple[int, ...],
    ) -> np.ndarray:
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
            space.tables,
            *pair_args,
            rolls[nb, rep_of_class][..., None],
            firsts[nb, rep_of_class][..., None],
            box[..., None],
        )
        return np.broadcast_to(np.asarray(points + bonus - rep_points - rep_bonus, dtype=np.float64), shape)

    def state_moves(self, box: int) -> tuple[np.ndarray, np.ndarray | float, np.ndarray]:
        """``(legal, reward, next_key)`` of writing box ``box`` per (roll class, state) of the chunk, whatever the
        box's section (upper: :meth:`upper_moves`; others: :meth:`lower_moves` taken per state); ``reward``
        broadcasts to ``legal``'s shape."""
        if self.space.tables.is_upper[box]:
            up = self.upper_moves(box)
            return up.legal, up.reward, up.next_key
        low = self.lower_moves(box)
        pair = self.pair_of_state
        key = np.where(low.becomes_full[:, pair], low.key_full[None, :], low.key_same[None, :])
        return low.legal[:, pair], low.reward[:, pair], key

    def lower_moves(self, box: int) -> LowerMoves:
        """The moves of a box outside the upper section, per roll class and pair."""
        space = self.space
        cls = space.box_classes[box]
        legal = ((self.pair_legal[:, cls.roll] >> box) & 1).astype(bool).T
        first_state = np.zeros(len(self.pair_filled), dtype=np.int64)
        first_state[self.pair_of_state[::-1]] = np.arange(len(self.filled))[::-1]
        points, bonus, _ = score_points(
            space.tables,
            self.pair_filled[None, :],
            self.upper[first_state][None, :],
            self.pair_full[None, :],
            cls.roll[:, None],
            cls.first[:, None],
            box,
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
        return LowerMoves(legal, reward, becomes_full, key_same, key_full)


class StateIndex:
    """Dense lookup ``key -> position of the state in a solve's arrays`` (``-1``: not a reachable state)."""

    def __init__(self, space: StateSpace, keys: np.ndarray):
        self.table = np.full(space.size, -1, dtype=np.int32)
        self.table[keys] = np.arange(len(keys), dtype=np.int32)

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        return self.table[keys]
