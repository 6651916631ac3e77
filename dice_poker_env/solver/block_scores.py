"""The score tables of a turn: best value of scoring each roll now, for a block of states.

Scoring a roll in a box is worth its points and bonus plus the value of the next
state. :class:`BlockScores` asks the engine once per block of a few thousand
states (through :class:`~dice_poker_env.solver.state_space.ChunkMoves`, per roll
class) and looks up the next states' values; the ``(252, m)`` turn tables of
cache-sized sub-chunks are then assembled from it: float values and best boxes
for the queries (:meth:`BlockScores.tables`), moment words for the solve
(:meth:`BlockScores.packed_tables`, see :mod:`.turn`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, cast

import numpy as np

from dice_poker_env.engine.combinatorics import N_ROLLS
from dice_poker_env.solver.state_space import ChunkMoves, GroupedUpperMoves, StateIndex, StateSpace
from dice_poker_env.solver.turn import moment_words

#: dtype of the per-turn tables: float32 halves memory traffic; values are
#: centered per state (see :class:`BlockScores`) so the rounding error stays ~1e-5
WORK_DTYPE = np.float32


class TurnTables(NamedTuple):
    """The queries' score tables of ``m`` states (:meth:`BlockScores.tables`).

    Values are in :data:`WORK_DTYPE`, relative to ``center``, engine roll order.
    Without first-roll doubling the ``first`` arrays are the ``last`` ones.
    """

    score_last: np.ndarray  #: (252, m) best value of scoring each roll after a reroll
    score_first: np.ndarray  #: (252, m) the same from the turn's first roll
    box_last: np.ndarray  #: (252, m) int8 the box reaching it (the lowest box index among equals)
    box_first: np.ndarray  #: (252, m) int8 the same from the first roll
    center: np.ndarray  #: (m,) float64 the states' offsets


class PackedTables(NamedTuple):
    """The solve's score tables of ``m`` states (:meth:`BlockScores.packed_tables`)."""

    last: np.ndarray  #: (252, m) moment words of scoring each roll after a reroll, internal roll order
    first: np.ndarray  #: (252, m) the same from the turn's first roll
    center: np.ndarray  #: (m,) float64 offset of the values
    shift: np.ndarray  #: (m,) float32 where second moments are taken, relative to ``center``


class _LowerBox(NamedTuple):
    """One box outside the upper section: its moves for the block and the values they lead to."""

    box: int
    legal: np.ndarray  #: (n_classes, pairs) bool
    reward: np.ndarray  #: (n_classes, pairs) float64 points + bonus
    becomes_full: np.ndarray  #: (n_classes, pairs) bool, whether the five-of-a-kind flag becomes set
    value_same: np.ndarray  #: (m,) float64 value of the next state when the flag stays
    variance_same: np.ndarray | None  #: (m,) its variance (None without second moments)
    value_full: np.ndarray | None  #: (m,) value of the next state when the flag becomes set (None: never)
    variance_full: np.ndarray | None  #: (m,) its variance


class _LowerTable(NamedTuple):
    """One box outside the upper section, ready for :meth:`BlockScores.tables` (values relative to ``center``)."""

    box: int
    reward: np.ndarray  #: (n_classes, pairs) points + bonus, ``-inf`` where illegal
    becomes_full: np.ndarray  #: (n_classes, pairs) bool
    pair_open: np.ndarray  #: (pairs,) whether the box is legal for some roll of the pair
    value_same: np.ndarray  #: (m,) next-state value when the flag stays
    value_full: np.ndarray | None  #: (m,) next-state value when the flag becomes set (None: never)


def _lookup(
    index: StateIndex, keys: np.ndarray, legal: np.ndarray, value: np.ndarray, variance: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(value, variance)`` of the next states ``keys`` (variance ``None`` when not given).

    A key outside the reachable set is allowed only where ``legal`` is false.
    """
    pos = index(keys)
    if pos.min(initial=0) < 0:  # allowed only for illegal moves
        if np.any(legal & (pos < 0)):
            raise RuntimeError("solver: a legal move leads to a state outside the reachable set")
        pos = np.maximum(pos, 0)
    return value[pos], (None if variance is None else variance[pos])


class BlockScores:
    """The score moves of a block of states, evaluated once; the turn tables per sub-chunk.

    The engine is called once per block (a few thousand states) for every open
    box; the ``(252, m)`` turn tables are then assembled for cache-sized sub-chunks.
    ``center`` (per state) is the least total (points + next-state value) of a
    legal score move: tables are relative to it (small float32 values, and
    ``>= 0`` as moment words need); ``shift`` (relative to ``center``) is the
    best legal next-state value, about which second moments are taken.

    Args:
        space: the state space (or its :meth:`~StateSpace.for_block` variant).
        filled, upper, full: the block's states.
        value: ``(S,)`` expected points still to come of every solved state.
        index: position of each state key in ``value``.
        variance: ``(S,)`` variance of the points still to come. Given, the block
            is built for the solve, with second moments (:meth:`packed_tables`);
            ``None``, for the queries (:meth:`tables`).
    """

    def __init__(
        self,
        space: StateSpace,
        filled: np.ndarray,
        upper: np.ndarray,
        full: np.ndarray,
        *,
        value: np.ndarray,
        index: StateIndex,
        variance: np.ndarray | None = None,
    ) -> None:
        self.space = space
        #: whether the block holds the solve's moment words (else the queries' tables)
        self.second_moments = variance is not None
        moves = space.chunk_moves(filled, upper, full)
        self.pair = moves.pair_of_state
        m = len(filled)
        dtype = WORK_DTYPE
        center = np.full(m, np.inf)
        best_next = np.full(m, -np.inf)
        self.upper_open = [b for b in moves.open_boxes if space.tables.is_upper[b]]
        upper_moves: GroupedUpperMoves | None = None
        upper_total: np.ndarray | None = None
        upper_variance: np.ndarray | None = None
        if self.upper_open:  # all upper boxes at once, per points group (see upper_moves_grouped)
            upper_moves = moves.upper_moves_grouped(self.upper_open)
            group, legal_cp, delta_cp, reward = (
                upper_moves.group,
                upper_moves.legal,
                upper_moves.delta,
                upper_moves.reward,
            )
            if delta_cp is None:  # each class its own group
                legal_g = legal_cp[:, :, self.pair]
            else:
                nb = np.arange(len(self.upper_open))[:, None]
                legal_gp = np.zeros(reward.shape[:2] + legal_cp.shape[2:], dtype=bool)  # (nb, G, pairs)
                low_delta = np.full(legal_gp.shape, np.inf)  # least added reward of a legal class of the group
                for c in range(group.shape[1]):
                    legal_gp[nb, group[:, c : c + 1]] |= legal_cp[:, c : c + 1]
                    low = low_delta[nb, group[:, c : c + 1]]
                    low_delta[nb, group[:, c : c + 1]] = np.minimum(
                        low, np.where(legal_cp[:, c : c + 1], delta_cp[:, c : c + 1], np.inf)
                    )
                legal_g = legal_gp[:, :, self.pair]
            v, upper_variance = _lookup(index, upper_moves.next_key, legal_g, value, variance)
            upper_total = reward + v  # points now + expected points after, per (box, group, state)
            lowest = upper_total if delta_cp is None else upper_total + low_delta[:, :, self.pair]
            np.min(np.where(legal_g, lowest, np.inf), axis=(0, 1), out=center)
            np.max(np.where(legal_g, v, -np.inf), axis=(0, 1), out=best_next)
        lower: list[_LowerBox] = []
        for b in moves.open_boxes:
            if space.tables.is_upper[b]:
                continue
            box_moves = moves.lower_moves(b)
            legal, reward, becomes_full = box_moves.legal, box_moves.reward, box_moves.becomes_full
            # (NumPy's stubs type `.any(axis=...)` as "bool scalar or array": on a 2-D array it is an array)
            legal_pairs = cast(np.ndarray, legal.any(axis=0))
            v_same, c_same = _lookup(index, box_moves.key_same, legal_pairs[self.pair], value, variance)
            # lowest points of a legal class, per pair, for each kind of next state
            lowest_same = np.where(legal & ~becomes_full, reward, np.inf).min(axis=0)[self.pair]
            np.minimum(center, lowest_same + v_same, out=center)
            np.maximum(best_next, np.where(lowest_same < np.inf, v_same, -np.inf), out=best_next)
            v_full: np.ndarray | None
            c_full: np.ndarray | None
            if becomes_full.any():
                any_full = (legal & becomes_full).any(axis=0)[self.pair]
                v_full, c_full = _lookup(index, box_moves.key_full, any_full, value, variance)
                lowest_full = np.where(legal & becomes_full, reward, np.inf).min(axis=0)[self.pair]
                np.minimum(center, lowest_full + v_full, out=center)
                np.maximum(best_next, np.where(lowest_full < np.inf, v_full, -np.inf), out=best_next)
            else:
                v_full = c_full = None
            lower.append(_LowerBox(b, legal, reward, becomes_full, v_same, c_same, v_full, c_full))
        center[~np.isfinite(center)] = 0.0
        best_next[~np.isfinite(best_next)] = center[~np.isfinite(best_next)]
        #: per state, the lowest total (points + next value) of a legal score move: table
        #: values are relative to it, so every legal entry is >= 0 (moment words need
        #: that; see :meth:`_build_words` for the rounding)
        self.center = center
        #: second moments are taken about the best legal next-state value instead, which
        #: lies near the state's mean: ``E[(x - c)^2] - (E[x] - c)^2`` then cancels little
        #: float32 precision; ``shift`` (float32) is that point relative to ``center``
        self.shift = (best_next - center).astype(dtype)
        if self.second_moments:
            self._build_words(moves, upper_moves, upper_total, upper_variance, lower)
            return
        if self.upper_open:
            assert upper_moves is not None and upper_total is not None  # set above for open upper boxes
            self.upper_q = self._upper_classes(upper_moves, upper_total - center).astype(dtype)
            #: (n_upper, pairs): whether each upper box is legal for some roll of the pair
            self.upper_pair_open = ((moves.pair_any[None, :] >> np.asarray(self.upper_open)[:, None]) & 1).astype(bool)
        self.lower = [
            _LowerTable(
                box=low.box,
                reward=np.where(low.legal, low.reward, -np.inf).astype(dtype),
                becomes_full=low.becomes_full,
                pair_open=cast(np.ndarray, low.legal.any(axis=0)),  # an array (see legal_pairs above)
                value_same=(low.value_same - center).astype(dtype),
                value_full=None if low.value_full is None else (low.value_full - center).astype(dtype),
            )
            for low in lower
        ]

    def _upper_classes(self, upper_moves: GroupedUpperMoves, group_values: np.ndarray) -> np.ndarray:
        """``(nb, C, m)`` per-class values of the upper boxes from ``(nb, G, m)`` group values.

        A class's value is its group's plus what the class adds (``delta``);
        ``-inf`` where the class is illegal. ``group_values`` may be overwritten.
        """
        legal_cp, delta_cp = upper_moves.legal, upper_moves.delta
        if delta_cp is None:  # each class its own group
            group_values[~legal_cp[:, :, self.pair]] = -np.inf
            return group_values
        values = _per_class(group_values, upper_moves.group)
        values += np.where(legal_cp, delta_cp, -np.inf).astype(values.dtype)[:, :, self.pair]
        return values

    def _build_words(
        self,
        moves: ChunkMoves,
        upper_moves: GroupedUpperMoves | None,
        upper_total: np.ndarray | None,
        upper_variance: np.ndarray | None,
        lower: list[_LowerBox],
    ) -> None:
        """The solve's candidates: per open box, ``(n_classes, block)`` moment words.

        Each word holds a candidate's value relative to ``center`` (``>= 0``, or
        ``-inf`` when illegal: illegal points are ``-inf`` already per pair, and the
        sum keeps them so) and its second moment about ``center + shift``:
        ``(value - shift)^2`` plus the variance of the next state. Built once per
        block, so a chunk's tables are only slices of them and the max over boxes
        (:class:`~dice_poker_env.solver.box_max.BoxMaxTree`). A legal value that
        float32 rounding leaves a hair below 0 is clipped to ``+0.0`` (a negative
        float reads as a negative word, below the illegal ones); candidates tied
        at the least value then stay exactly tied, and the larger second moment
        wins among them, as among any other exact ties.
        """
        center, shift = self.center, self.shift
        dtype = WORK_DTYPE
        #: box -> (words, (pairs,) whether the box is legal for some roll of the pair)
        self.words: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def words(value: np.ndarray, var: np.ndarray) -> np.ndarray:
            np.maximum(value, 0, out=value, where=value > -np.inf)
            second = np.subtract(value, shift)
            second *= second
            second += var
            return moment_words(value, second)

        if self.upper_open:
            # set for open upper boxes, with variances in a block built for the solve
            assert upper_moves is not None and upper_total is not None and upper_variance is not None
            value = self._upper_classes(upper_moves, (upper_total - center).astype(dtype))
            var = upper_variance.astype(dtype)
            upper_words = words(value, var if upper_moves.delta is None else _per_class(var, upper_moves.group))
            for i, b in enumerate(self.upper_open):
                self.words[b] = (upper_words[i], (moves.pair_any >> b & 1).astype(bool))
        for low in lower:
            value = np.where(low.legal, low.reward, -np.inf).astype(dtype).take(self.pair, axis=1)  # (classes, states)
            assert low.variance_same is not None  # a block built for the solve has the variances
            if low.value_full is None:
                value += (low.value_same - center).astype(dtype)
                var = low.variance_same.astype(dtype)
            else:
                assert low.variance_full is not None
                to_full = low.becomes_full.take(self.pair, axis=1)
                value += np.where(
                    to_full, (low.value_full - center).astype(dtype), (low.value_same - center).astype(dtype)
                )
                var = np.where(to_full, low.variance_full.astype(dtype), low.variance_same.astype(dtype))
            self.words[low.box] = (words(value, var), cast(np.ndarray, low.legal.any(axis=0)))
        #: (boxes in ``words``, states): whether the box is legal for some roll of the state
        self._open_states = np.array([pair_open for _, pair_open in self.words.values()]).reshape(len(self.words), -1)[
            :, self.pair
        ]

    def tables(self, sl: slice) -> TurnTables:
        """The queries' score tables of the states ``sl`` (a block built without ``variance``)."""
        if self.second_moments:
            raise RuntimeError("BlockScores.tables: this block was built for the solve; use packed_tables")
        space = self.space
        pair = self.pair[sl]
        pairs_here = np.unique(pair)
        m = len(pair)
        dtype = WORK_DTYPE
        S0 = np.full((N_ROLLS, m), -np.inf, dtype=dtype)
        S2 = np.full((N_ROLLS, m), -np.inf, dtype=dtype) if space.doubling else S0
        B0 = np.zeros((N_ROLLS, m), dtype=np.int8)
        B2 = np.zeros((N_ROLLS, m), dtype=np.int8) if space.doubling else B0
        candidates: list[tuple[int, Callable[[np.ndarray], np.ndarray]]] = []
        for i, b in enumerate(self.upper_open):
            if self.upper_pair_open[i, pairs_here].any():

                def upper_cands(of: np.ndarray, q: np.ndarray = self.upper_q[i][:, sl]) -> np.ndarray:
                    return q[of]

                candidates.append((b, upper_cands))
        for low in self.lower:
            if not low.pair_open[pairs_here].any():
                continue

            def cands(
                of: np.ndarray,
                r_pair: np.ndarray = low.reward,
                becomes_full: np.ndarray = low.becomes_full,
                v_same: np.ndarray = low.value_same[sl],
                v_full: np.ndarray | None = None if low.value_full is None else low.value_full[sl],
                cache: dict[str, np.ndarray] = {},  # noqa: B006 (a memo shared by design within this call)
            ) -> np.ndarray:
                if "q" not in cache:  # per roll class first (few rows), then rows copied per roll
                    q = r_pair.take(pair, axis=1)  # (n_classes, m)
                    if v_full is None:
                        q += v_same
                    else:
                        q += np.where(becomes_full.take(pair, axis=1), v_full, v_same)
                    cache["q"] = q
                return cache["q"].take(of, axis=0)  # (252, m)

            candidates.append((low.box, cands))
        candidates.sort(key=lambda item: item[0])  # box order: the lowest box wins ties
        for b, candidates_of in candidates:
            cls = space.box_classes[b]
            targets = [(S0, B0, cls.of_last)]
            if space.doubling:
                targets.append((S2, B2, cls.of_first))
            for S, best_box, of in targets:
                cand = candidates_of(of)
                better = np.greater(cand, S)
                best_box += better * (np.int8(b) - best_box)
                np.maximum(S, cand, out=S)
        return TurnTables(S0, S2, B0, B2, self.center[sl])

    def packed_tables(self, sl: slice) -> PackedTables:
        """The solve's score tables of the states ``sl``, as moment words for :func:`~.turn.widget_with_moments`.

        The max over boxes of the candidate words (:meth:`_build_words`); among
        boxes of equal value the one with the larger second moment wins (any of
        them is optimal).
        """
        space = self.space
        # per box: (n_classes, m) candidate words, None if closed
        leaves: list[np.ndarray | None] = [None] * space.n_boxes
        open_now = cast(np.ndarray, self._open_states[:, sl].any(axis=1))  # an array (2-D input)
        for (b, (words, _)), is_open in zip(self.words.items(), open_now):
            if is_open:
                leaves[b] = words[:, sl]
        out = [space.max_tree[first].evaluate(leaves) for first in ((False, True) if space.doubling else (False,))]
        return PackedTables(out[0], out[-1], self.center[sl], self.shift[sl])


def _per_class(group_values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``(nb, C, m)`` rows of ``(nb, G, m)`` per-group values, class ``c`` of box ``i`` reading group ``group[i, c]``."""
    nb, n_groups, m = group_values.shape
    rows = (np.arange(nb)[:, None] * n_groups + group).reshape(-1)
    return group_values.reshape(nb * n_groups, m).take(rows, axis=0).reshape(nb, -1, m)
