"""The exact two-player solution of a ruleset: the win probability of optimal play, and policies measured against it.

>>> from dice_poker_env.solver.duel import solve_duel
>>> duel = solve_duel("examples/rules/mini_yacht.toml")     # doctest: +SKIP
>>> duel.value()                                           # doctest: +SKIP
0.5...
>>> duel.evaluate(duel.solitaire_policy(), seat=0)          # doctest: +SKIP

**The game.** Two players alternate whole turns, seat 0 first, each on a
scorecard of their own; at the end more points win. A seat's value is ``P(win) +
1/2 P(tie)``: the game is zero-sum with constant 1. Between turns, with ``X`` to
move and ``Y`` waiting, the rest of the game depends on ``(k_X, k_Y, d)``: the
players' between-turn states (solver state keys, as in the expected-score and
reach solves) and ``d``, ``X``'s points so far minus ``Y``'s. Who is seat 0
follows from the filled counts (seat 0 moves when both have filled as many
boxes, seat 1 when it has filled one fewer). ``W(k_X, k_Y, d)`` is the value for
the mover under optimal play of both.

**The recursion.** ``X``'s turn is the three-roll widget of the other solves
(:func:`~dice_poker_env.solver.turn.turn_values`): scoring ``p`` points (bonus
included) into the next state ``k_X'`` is worth ``1 - W(k_Y, k_X', -(d + p))`` to
``X``; after the last turn of both the value is 1, 1/2 or 0 as ``d + p`` is
positive, zero or negative. Per roll the best box, keeps average over the
rerolled dice, per roll the better of scoring and the best keep, twice.

**Storage.** Pairs ``(k_X, k_Y)`` are grouped in *stages* by the number of boxes
both have filled (stage ``s``: the mover has ``s // 2``, the other ``(s + 1) //
2``), every pair of reachable states of those layers (the players' states are
independent). With the rest bounds of each state (:func:`~.reach_dp.rest_bounds`,
exact: every roll and box over every policy), ``X`` has surely lost when ``d +
most_X - least_Y < 0`` and surely won when ``d + least_X - most_Y > 0``, so each
pair stores one row of ``d`` from ``least_Y - most_X - 1`` (value exactly 0) to
``most_Y - least_X + 1`` (exactly 1); a ``d`` outside reads as the row's end.
Float64, 8 bytes a cell; the only error is rounding.

**Solving.** Stages from the last back; a stage's pairs in blocks of mover
states (their moves asked of the engine once, :func:`~.reach_dp.block_moves`),
and the block's ``(pair, d)`` cells in chunks of about :data:`COLUMNS` columns of
one widget call: each box's candidates per (roll class, column) are gathered
from the next stage's rows, merged per roll by
:class:`~dice_poker_env.solver.box_max.BoxMaxTree`. No Python loop over states
or ``d``.

**Policies.** A policy is a callable ``turn_actions(my_keys, opp_keys, diffs)``
returning ``(m, 3, 252)`` env actions per ``(rolls_left, roll)`` for ``m``
(mover key, other key, ``d``) columns: the whole turn's plan at once.
:meth:`Duel.turn_actions` is the optimal two-player policy (its ties: a keep
before a box, the keep with the fewest dice as its lowest bitmask, the lowest
box); :func:`solitaire_policy` the expected-score-optimal one
(:meth:`~dice_poker_env.solver.Solution.best_actions`, which ignores the
opponent and ``d``). :meth:`Duel.evaluate` gives a seat's exact value when it
plays a given policy and the other seat plays :meth:`Duel.turn_actions`: the same
pass with each roll's action given, a linear recursion (two stages kept at a
time).

The solve is single-process. :func:`solve_duel` caches the table beside the
solutions, with their key and checks (:mod:`.cache`, kind ``duel``).

Size: the solve, the optimal policy's decisions, the policy evaluation and the
queries all read the one table through its layout (stages, rows, chunks of
columns and their candidates); split apart, each would need those internals.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dice_poker_env.engine.combinatorics import FIRST_ROLL_PROBABILITY, KEEP_ALL, N_KEEP_ACTIONS, N_ROLLS
from dice_poker_env.engine.game import ROLLS_PER_TURN, five_kind_box_full, new_batch, step_batch
from dice_poker_env.engine.state import BatchState
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.rules import Rules, load_rules
from dice_poker_env.solver import budget
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.budget import format_bytes, format_duration
from dice_poker_env.solver.keep_tables import N_PROPER_KEEPS, ROLL_POS
from dice_poker_env.solver.reach_dp import (
    _KEEP_POS_OF_ACTION,
    BlockMoves,
    _policy_actions,
    block_moves,
    rest_bounds,
)
from dice_poker_env.solver.reachability import reachable_layers, stacked_layers
from dice_poker_env.solver.solution import SolverError, SolveTooLargeError
from dice_poker_env.solver.state_space import StateIndex, StateSpace
from dice_poker_env.solver.turn import _ACTION_OF_TIE_ID, _best_of_subkeeps, keep_values, turn_values

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from dice_poker_env.solver.solution import Solution

#: ``turn_actions(my_keys, opp_keys, diffs) -> (m, 3, 252)`` int64 env actions per (rolls left, roll)
TurnPolicy = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

#: bump when the two-player table's layout or meaning changes (its cache files are then rebuilt)
DUEL_VERSION = 1
#: mover states whose moves are asked of the engine at once
BLOCK_STATES = 2048
#: CPU seconds a table cell costs to solve, for the estimate said before a solve (measured by
#: ``benchmarks/bench_duel.py``: 2.6 to 2.8 us on this project's 2 vCPU x86_64 machine, docs/winning.md)
CELL_SECONDS = 2.8e-6
#: (pair, d) columns of one turn-widget call (as the reach solve's)
COLUMNS = 256
#: the table cell an illegal move reads: ``1 - 2 = -1`` is below every value, so a max never picks it
_SENTINEL = 2.0


@dataclass
class _Chunk:
    """Columns ``(pair, d)`` of one widget call: pairs ``g0..g1`` (global) of a stage, all of one block."""

    stage: int
    moves: BlockMoves  #: the moves of the block's mover states
    g0: int
    g1: int
    im: np.ndarray  #: (pairs,) the mover's index among the block's states
    io: np.ndarray  #: (pairs,) the other player's index in its layer
    pair_of_col: np.ndarray  #: (columns,) the chunk pair of each column
    d: np.ndarray  #: (columns,) the mover's points so far minus the other's
    mover_keys: np.ndarray  #: (columns,) the mover's state key
    other_keys: np.ndarray  #: (columns,) the other player's


class Duel:
    """The exact two-player solution of one ruleset (see the module docstring).

    Attributes:
        rules: the solved rules.
        keys, layer_start: one player's reachable states (sorted per layer) and the layers' offsets.
        least, most: per state, the least and most points still to come (exact bounds).
        stage_start: ``(2 turns + 2,)`` offsets of the stages' pairs.
        lo: per pair, the ``d`` of its row's first cell; offset: ``(pairs + 1,)`` where its row starts.
        table: float64 the rows one after another, then one sentinel cell.
        n_pairs, n_cells: stored pairs and (pair, d) cells.
        seconds: wall time of the solve (or of loading it); from_cache: whether it was loaded.
    """

    def __init__(
        self,
        rules: Rules,
        *,
        memory: int | None = None,
        progress: Any = None,
        solve: bool = True,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        """Lay out and solve the table of ``rules`` (``memory``: bytes available, a ``MemoryError`` before
        allocating when it needs more; ``progress``: tqdm-like, counting pairs; ``solve=False``: the layout
        only, for :attr:`n_pairs` and :attr:`n_cells`, with an empty :attr:`table`)."""
        start = time.perf_counter()
        self.rules = rules
        self.tables = compile_rules(rules)
        self.space = StateSpace(self.tables)
        self.turns = int(self.tables.turns)
        layers = reachable_layers(self.space)
        self.keys, self.layer_start = stacked_layers(layers)
        self.n_layer = np.diff(self.layer_start)
        self.layer_of = np.repeat(np.arange(self.turns + 1), self.n_layer)
        self.index = StateIndex(self.space, self.keys)
        self.least, self.most = rest_bounds(self.space, self.keys, self.layer_start)
        pairs = sum(self._stage_pairs())
        at_least = 16 * pairs + 8 * 3 * pairs  # the layout's two arrays per pair, and rows of 3 cells or more
        if memory is not None and at_least > memory:  # before the layout allocates anything per pair
            raise MemoryError(
                f"{pairs:,} pairs of states need at least {format_bytes(at_least)}, but only "
                f"{format_bytes(memory)} is available; force it (--force, force=True)"
            )
        self._layout()
        self.n_pairs = int(self.stage_start[-1])
        self.n_cells = int(self.offset[-1])
        needed = 8 * self.n_cells + 16 * self.max_stage_cells
        if memory is not None and needed > memory:
            raise MemoryError(
                f"{self.n_cells:,} cells (pairs x point differences) need about {format_bytes(needed)}, "
                f"but only {format_bytes(memory)} is available; force it (--force, force=True)"
            )
        if solve and announce is not None:  # what the solve will cost, before it starts
            announce(
                f"{self.n_pairs:,} pairs of states, {self.n_cells:,} cells: a table of {format_bytes(8 * self.n_cells)}, "
                f"about {format_duration(CELL_SECONDS * self.n_cells)} of CPU on one core"
            )
        self.table = np.zeros(self.n_cells + 1 if solve else 0)
        if solve:
            self.table[-1] = _SENTINEL
            self._solve(progress)
        self.seconds = time.perf_counter() - start
        self.from_cache = False

    def __repr__(self) -> str:
        return f"Duel({self.rules.label()}, n_pairs={self.n_pairs}, n_cells={self.n_cells})"

    # ------------------------------------------------------------------ layout
    def _stage_layers(self, stage: Any) -> tuple[Any, Any]:
        """``(mover layer, other layer)`` of a stage (ints or arrays)."""
        return stage // 2, (stage + 1) // 2

    def _stage_pairs(self) -> list[int]:
        """The pairs of states of each stage (its mover's layer times the other's)."""
        return [int(np.prod([self.n_layer[x] for x in self._stage_layers(s)])) for s in range(2 * self.turns + 1)]

    def _layout(self) -> None:
        counts = self._stage_pairs()
        self.stage_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        lows, widths = [], []
        for s in range(2 * self.turns + 1):
            lm, lo = self._stage_layers(s)
            gm = self.layer_start[lm] + np.repeat(np.arange(self.n_layer[lm]), self.n_layer[lo])
            go = self.layer_start[lo] + np.tile(np.arange(self.n_layer[lo]), self.n_layer[lm])
            lows.append(self.least[go] - self.most[gm] - 1)
            widths.append(self.most[go] - self.least[go] + self.most[gm] - self.least[gm] + 3)
        self.lo = np.concatenate(lows).astype(np.int64)
        self.offset = np.concatenate([[0], np.cumsum(np.concatenate(widths))]).astype(np.int64)
        cells = self.offset[self.stage_start]
        self.max_stage_cells = int(np.diff(cells).max())

    def _stage_cells(self, stage: int) -> tuple[int, int]:
        return int(self.offset[self.stage_start[stage]]), int(self.offset[self.stage_start[stage + 1]])

    def _terminal_rows(self) -> np.ndarray:
        """The last stage's rows: both finished, ``d`` in ``-1, 0, 1``: lost, tied, won."""
        n = int(self.stage_start[-1] - self.stage_start[-2])
        return np.tile([0.0, 0.5, 1.0], n)

    # ------------------------------------------------------------------ the passes
    def _chunks(self, stage: int) -> Iterator[_Chunk]:
        """The stage's columns in chunks of about :data:`COLUMNS` (at least one pair), block by block."""
        lm, lo = self._stage_layers(stage)
        n_o = int(self.n_layer[lo])
        ss = int(self.stage_start[stage])
        m0 = int(self.layer_start[lm])
        for b0 in range(0, int(self.n_layer[lm]), BLOCK_STATES):
            b1 = min(int(self.n_layer[lm]), b0 + BLOCK_STATES)
            moves = block_moves(self.space, self.keys[m0 + b0 : m0 + b1], self.index, int(self.layer_start[lm + 1]))
            c, end = ss + b0 * n_o, ss + b1 * n_o
            while c < end:
                e = int(np.searchsorted(self.offset, self.offset[c] + COLUMNS, side="right")) - 1
                e = min(end, max(e, c + 1))
                local = np.arange(c, e) - ss
                widths = np.diff(self.offset[c : e + 1])
                pair_of_col = np.repeat(np.arange(e - c), widths)
                d = np.arange(len(pair_of_col)) - np.repeat(self.offset[c:e] - self.offset[c], widths)
                d += self.lo[c + pair_of_col]
                im, io = local // n_o - b0, local % n_o
                yield _Chunk(
                    stage,
                    moves,
                    c,
                    e,
                    im,
                    io,
                    pair_of_col,
                    d,
                    self.keys[m0 + b0 + im][pair_of_col],
                    self.keys[self.layer_start[lo] + io][pair_of_col],
                )
                c = e

    def _leaves(
        self,
        moves: BlockMoves,
        im: np.ndarray,
        io: np.ndarray,
        stage: Any,
        pair_of_col: np.ndarray,
        d: np.ndarray,
        table: np.ndarray,
        base: int,
    ) -> list[np.ndarray | None]:
        """Per box ``(classes, columns)`` the mover's value of scoring each roll class in it: ``1 - next``.

        Groups of columns (``im``, ``io``, ``stage``: the mover's index in ``moves``, the other's in its
        layer, the stage; ints or per-group arrays) read the next stage's rows, stored in ``table`` from
        cell ``offset - base`` on; ``table[-1]`` is the sentinel. ``None`` for boxes closed to every state.
        """
        lm = stage // 2
        next_start = self.stage_start[stage + 1]
        n_next_other = self.n_layer[lm + 1]
        next_layer = self.layer_start[lm + 1]
        sentinel = len(table) - 1
        leaves: list[np.ndarray | None] = [None] * moves.space.n_boxes
        for box, (legal, points, pos) in moves.boxes.items():
            ok = legal[:, im]
            gn = np.where(ok, next_start + io * n_next_other + pos[:, im] - next_layer, 0)
            first = np.where(ok, self.offset[gn] - base, sentinel)
            last = np.where(ok, self.offset[gn + 1] - 1 - base, sentinel)
            shift = first - self.lo[gn] - points[:, im]
            cell = shift[:, pair_of_col] - d
            np.clip(cell, first[:, pair_of_col], last[:, pair_of_col], out=cell)
            leaf = table.take(cell)
            np.subtract(1.0, leaf, out=leaf)
            leaves[box] = leaf
        return leaves

    def _solve(self, progress: Any) -> None:
        table = self.table
        a, b = self._stage_cells(2 * self.turns)
        table[a:b] = self._terminal_rows()
        if progress is not None:
            progress.reset(total=int(self.stage_start[-2]))
        for stage in range(2 * self.turns - 1, -1, -1):
            for chunk in self._chunks(stage):
                leaves = self._leaves(chunk.moves, chunk.im, chunk.io, stage, chunk.pair_of_col, chunk.d, table, 0)
                space = chunk.moves.space
                P1 = space.max_tree[False].evaluate(leaves)
                P2 = space.max_tree[True].evaluate(leaves) if space.doubling else P1
                value = np.clip(turn_values(P1, P2), 0.0, 1.0)
                self._exact_ends(value, chunk)
                table[self.offset[chunk.g0] : self.offset[chunk.g1]] = value
                if progress is not None:
                    progress.update(chunk.g1 - chunk.g0)

    def _exact_ends(self, rows: np.ndarray, chunk: _Chunk) -> None:
        """Each row's first cell is 0 and its last 1 exactly (the rest bounds); rounding leaves a hair."""
        starts = self.offset[chunk.g0 : chunk.g1 + 1] - self.offset[chunk.g0]
        rows[starts[:-1]] = 0.0
        rows[starts[1:] - 1] = 1.0

    # ------------------------------------------------------------------ queries
    def _positions(self, my_keys: Any, opp_keys: Any, diffs: Any) -> tuple[np.ndarray, ...]:
        """``(mover positions, other positions, diffs, stages)`` of columns, a :class:`SolverError` where a
        key is not a reachable state or the pair is not a between-turn position of a duel."""
        given = {"state key": my_keys, "other's state key": opp_keys, "points difference": diffs}
        for what, value in given.items():
            array = np.asarray(value)
            if array.dtype.kind == "O" and all(type(v) is int for v in array.reshape(-1)):  # beyond int64
                raise SolverError(f"a {what} is out of range (beyond 64-bit integers), got {value!r}"[:200])
            if array.dtype.kind not in "iu":  # a float would be truncated, a bool 0/1, a string fail deep down
                raise SolverError(f"a {what} must be an integer, got {value!r}"[:200])
        my, opp, d = np.broadcast_arrays(
            np.asarray(my_keys, dtype=np.int64), np.asarray(opp_keys, dtype=np.int64), np.asarray(diffs, np.int64)
        )
        my, opp, d = my.reshape(-1), opp.reshape(-1), d.reshape(-1)
        inside = (my >= 0) & (my < self.space.size) & (opp >= 0) & (opp < self.space.size)
        if not inside.all():
            raise SolverError("a state key is outside the state space")
        gm, go = self.index(my).astype(np.int64), self.index(opp).astype(np.int64)
        if np.any(gm < 0) or np.any(go < 0):
            raise SolverError("a state key is not a reachable state of these rules")
        lm, lo = self.layer_of[gm], self.layer_of[go]
        if np.any((lo - lm != 0) & (lo - lm != 1)):
            raise SolverError("not a duel position: the mover must have filled as many boxes or one fewer")
        return gm, go, d, lm + lo

    def values(self, my_keys: Any, opp_keys: Any, diffs: Any) -> np.ndarray:
        """``W``: the mover's value (``P(win) + P(tie) / 2``) under optimal play of both, per column (flat).

        Columns are (the mover's state key, the other's, the mover's points so far minus the other's),
        broadcast; a finished game (both done) is 1, 1/2 or 0 as ``diffs`` is positive, zero or negative.
        """
        gm, go, d, stage = self._positions(my_keys, opp_keys, diffs)
        lm, lo = self._stage_layers(stage)
        g = self.stage_start[stage] + (gm - self.layer_start[lm]) * self.n_layer[lo] + go - self.layer_start[lo]
        cell = np.clip(d - self.lo[g], 0, self.offset[g + 1] - self.offset[g] - 1) + self.offset[g]
        result: np.ndarray = self.table[cell]
        return result

    def value(self, diff: int = 0) -> float:
        """Seat 0's value from the start under optimal play of both (seat 0 given ``diff`` points ahead)."""
        return float(self.values(self.keys[0], self.keys[0], diff)[0])

    def turn_actions(self, my_keys: Any, opp_keys: Any, diffs: Any) -> np.ndarray:
        """The optimal two-player policy: ``(m, 3, 252)`` int64 env actions per (rolls left, roll) of the
        mover's turn, for ``m`` columns as :meth:`values` takes (not a finished mover). Ties: a keep before a
        box, the keep with the fewest dice (its lowest bitmask), the lowest box."""
        gm, go, d, stage = self._positions(my_keys, opp_keys, diffs)
        if np.any(self.layer_of[gm] >= self.turns):
            raise SolverError("the mover has no turn left")
        out = np.empty((len(gm), ROLLS_PER_TURN, N_ROLLS), dtype=np.int64)
        for c in range(0, len(gm), COLUMNS):
            sl = slice(c, c + COLUMNS)
            movers, im = np.unique(gm[sl], return_inverse=True)
            moves = block_moves(self.space, self.keys[movers], self.index, 0)
            io = go[sl] - self.layer_start[self.layer_of[go[sl]]]
            cols = np.arange(len(im))
            leaves = self._leaves(moves, im.reshape(-1), io, stage[sl], cols, d[sl], self.table, 0)
            out[sl] = _decisions(leaves, moves.space).transpose(2, 0, 1)
        return out

    def solitaire_policy(self, solution: Solution | None = None) -> TurnPolicy:
        """The expected-score-optimal policy (:func:`solitaire_policy`) of these rules (solved if not given)."""
        if solution is None:
            from dice_poker_env.solver.solution import solve

            solution = solve(self.rules, progress=False)
        return solitaire_policy(solution)

    # ------------------------------------------------------------------ policy evaluation
    def evaluate(self, policy: TurnPolicy, seat: int) -> float:
        """``seat``'s exact value (``P(win) + P(tie) / 2``) when it plays ``policy`` and the other seat plays
        the optimal two-player policy (:meth:`turn_actions`).

        ``policy(my_keys, opp_keys, diffs)`` is called for chunks of columns of every position of the seat's
        turns and must return ``(m, 3, 252)`` legal env actions (a ``ValueError`` otherwise).
        """
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        here = np.zeros(self.max_stage_cells + 1)
        after = np.zeros(self.max_stage_cells + 1)
        here[-1] = after[-1] = _SENTINEL
        after[: self._stage_cells(2 * self.turns)[1] - self._stage_cells(2 * self.turns)[0]] = self._terminal_rows()
        n_boxes = self.tables.n_boxes
        for stage in range(2 * self.turns - 1, -1, -1):
            base_here = self._stage_cells(stage)[0]
            base_next = self._stage_cells(stage + 1)[0]
            for chunk in self._chunks(stage):
                args = (chunk.moves, chunk.im, chunk.io, stage, chunk.pair_of_col, chunk.d)
                leaves = self._leaves(*args, after, base_next)
                if stage % 2 == seat:
                    given = policy(chunk.mover_keys, chunk.other_keys, chunk.d)
                    act = np.ascontiguousarray(_checked_actions(given, len(chunk.d), n_boxes).transpose(1, 2, 0))
                else:
                    act = _decisions(self._leaves(*args, self.table, 0), chunk.moves.space)
                stacked, rows_of = _stacked(leaves, chunk.moves.space)
                value = np.clip(_policy_value(stacked, _turn_rows(act, rows_of)), 0.0, 1.0)
                self._exact_ends(value, chunk)
                here[self.offset[chunk.g0] - base_here : self.offset[chunk.g1] - base_here] = value
            here, after = after, here
        v0 = float(after[0 - int(self.lo[0])])  # seat 0 moves at stage 0; d = 0 lies inside its row
        return v0 if seat == 0 else 1.0 - v0


# ---------------------------------------------------------------------- turn helpers
#: the low bits of a float64 keep value that hold its keep's tie id (:func:`_decisions`)
_TIE_BITS = 8
_TIE_MASK = np.int64((1 << _TIE_BITS) - 1)
#: per internal keep, its tie id: among keeps of equal value the earliest in internal order (fewest dice) wins
_KEEP_TIE = (N_PROPER_KEEPS - 1 - np.arange(N_PROPER_KEEPS, dtype=np.int64))[:, None]
_ROLL_TIE_BASE = (np.arange(N_ROLLS, dtype=np.int64) * N_PROPER_KEEPS)[:, None]


def _decisions(leaves: list[np.ndarray | None], space: StateSpace) -> np.ndarray:
    """``(3, 252, columns)`` the best action of every (rolls left, roll, column) from the candidates.

    Boxes in float64, the first of equals (the lowest box) winning. Keeps as tie words: a keep value
    (non-negative float64: it compares like its bits) with its low :data:`_TIE_BITS` bits replaced by
    the keep's tie id, so one max over the sub-keep lattice (:func:`~.turn._best_of_subkeeps`) gives the
    best keep and, among keeps within 2**-44 of each other, the one with the fewest dice (its lowest
    bitmask, as :func:`~.turn.turn_decisions`). A keep is chosen when it is worth at least the best box.
    So an action is at most about 1e-13 below the best one (float64 rounding is about 1e-16).
    """
    boxes = [b for b, leaf in enumerate(leaves) if leaf is not None]
    scores = []
    for first in (False, True) if space.doubling else (False,):
        rows = [space.box_classes[b].of_first if first else space.box_classes[b].of_last for b in boxes]
        candidates = (leaves[b].take(r, axis=0) for b, r in zip(boxes, rows))  # type: ignore[union-attr]
        scores.append(_first_max(candidates, N_KEEP_ACTIONS + np.asarray(boxes)))
    (last, box_last), (first_roll, box_first) = scores[0], scores[-1]
    out = np.empty((ROLLS_PER_TURN,) + last.shape, dtype=np.int64)
    out[0] = box_last
    level = last
    for rolls_left, (score, box) in ((1, (last, box_last)), (2, (first_roll, box_first))):
        keeps = keep_values(level)  # (210, columns), internal keep order; level in engine roll order
        keeps += 0.0  # no -0.0 (its bits read as a negative word)
        words = keeps.view(np.int64)
        words &= ~_TIE_MASK
        words |= _KEEP_TIE
        best_words = _best_of_subkeeps(words)[ROLL_POS]  # engine roll order
        tie = best_words & _TIE_MASK
        tie += _ROLL_TIE_BASE
        best_words &= ~_TIE_MASK
        best = best_words.view(np.float64)
        out[rolls_left] = np.where(best >= score, _ACTION_OF_TIE_ID.take(tie), box)
        level = np.maximum(score, best)
    return out


def _first_max(candidates: Iterator[np.ndarray], ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The elementwise max of arrays and the id of the first array reaching it."""
    best = next(candidates).copy()
    which = np.full(best.shape, ids[0], dtype=np.int64)
    for i, candidate in zip(ids[1:], candidates):
        better = candidate > best
        np.copyto(which, i, where=better)
        np.maximum(best, candidate, out=best)
    return best, which


#: (32, 252) per (keep action, roll) the internal keep it keeps (0 for keep-all, never legal)
_KEEP_ROWS = np.concatenate([_KEEP_POS_OF_ACTION.T, np.zeros((1, N_ROLLS), dtype=np.int64)])
_ROLL_COLUMN = np.arange(N_ROLLS)[:, None]


def _turn_rows(act: np.ndarray, rows_of: np.ndarray) -> np.ndarray:
    """``(3, 252, columns)`` the row of the stacked candidates (:func:`_stacked`) or, with rolls left, of the
    210 keep values then the candidates, that each (rolls left, roll, column)'s action ``act`` (the same
    shape, checked legal) reads: one lookup in a (action, roll) table per roll level."""
    out = np.empty(act.shape, dtype=np.int64)
    for rolls_left in range(ROLLS_PER_TURN):
        scored = rows_of[int(rolls_left == ROLLS_PER_TURN - 1)]
        keeps = np.zeros_like(_KEEP_ROWS) if rolls_left == 0 else _KEEP_ROWS
        lookup = np.concatenate([keeps, scored + (N_PROPER_KEEPS if rolls_left else 0)]).reshape(-1)
        index = act[rolls_left] * N_ROLLS
        index += _ROLL_COLUMN
        lookup.take(index, out=out[rolls_left])
    return out


def _stacked(leaves: list[np.ndarray | None], space: StateSpace) -> tuple[np.ndarray, np.ndarray]:
    """The candidates of the open boxes stacked box after box, then a row of -1 (what a closed box reads);
    and ``(2, n_boxes, 252)`` the row of each (first roll?, box, roll)."""
    parts = [leaf for leaf in leaves if leaf is not None]
    n_rows = sum(len(p) for p in parts)
    rows = np.full((2, space.n_boxes, N_ROLLS), n_rows, dtype=np.int64)
    start = 0
    for box, leaf in enumerate(leaves):
        if leaf is None:
            continue
        cls = space.box_classes[box]
        rows[0, box] = start + cls.of_last
        rows[1, box] = start + cls.of_first
        start += len(leaf)
    stacked = np.concatenate(parts + [np.full((1, parts[0].shape[1]), -1.0)])
    return stacked, rows


def _policy_value(stacked: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(columns,)`` the value of a turn played by the given actions (a linear recursion, as the reach
    solve's policy turn); a ``ValueError`` when an action scores in a box the rules do not allow."""
    n = stacked.shape[1]
    flat = rows * n
    flat += np.arange(n)
    values: np.ndarray = stacked.take(flat[0])
    for rolls_left in range(ROLLS_PER_TURN):
        if rolls_left:
            values = np.concatenate([keep_values(values), stacked]).take(flat[rolls_left])
        if values.min(initial=0.0) < 0.0:
            raise ValueError("the policy chose an illegal action (a box that cannot be scored)")
    result: np.ndarray = FIRST_ROLL_PROBABILITY @ values
    return result


def _checked_actions(actions: Any, m: int, n_boxes: int) -> np.ndarray:
    """A policy's ``(m, 3, 252)`` actions as int64, a ``ValueError`` naming what is wrong."""
    act = np.asarray(actions)
    if act.shape != (m, ROLLS_PER_TURN, N_ROLLS) or not np.issubdtype(act.dtype, np.integer):
        raise ValueError(f"a policy must return ({m}, 3, 252) integer actions, got {act.dtype} {act.shape}")
    act = act.astype(np.int64)
    box = act >= N_KEEP_ACTIONS
    if np.any((act < 0) | (act == KEEP_ALL) | (act >= N_KEEP_ACTIONS + n_boxes)) or not box[:, 0].all():
        raise ValueError(
            "the policy chose an action that is never legal (keep-all, out of range, or a keep with no roll left)"
        )
    return act


def solitaire_policy(solution: Solution) -> TurnPolicy:
    """The expected-score-optimal policy as a two-player policy (it ignores the opponent and ``d``):
    :meth:`~dice_poker_env.solver.Solution.best_actions` of every (rolls left, roll) of the mover's state."""
    space = solution.space

    def turn_actions(my_keys: np.ndarray, opp_keys: np.ndarray, diffs: np.ndarray) -> np.ndarray:
        unique, inverse = np.unique(np.asarray(my_keys, dtype=np.int64), return_inverse=True)
        filled, upper, full = space.decode(unique)
        actions: np.ndarray = _policy_actions(solution, filled, upper, full)[inverse.reshape(-1)]
        return actions

    return turn_actions


# ---------------------------------------------------------------------- playing games
def play_duels(
    rules: str | os.PathLike[str] | Rules,
    seat0: TurnPolicy,
    seat1: TurnPolicy,
    games: int,
    *,
    seed: int = 0,
) -> np.ndarray:
    """Play ``games`` two-player games by the engine, roll by roll, in lockstep: ``(games,)`` seat 0's final
    points minus seat 1's. Each policy is asked once per turn for its whole turn's plan.

    Raises:
        ValueError: a plan of another shape than ``(games, 3, 252)`` integers, or an illegal action in it
            where a game meets it (named: the seat, the game, the turn).
    """
    from dice_poker_env.engine.masks import action_masks

    rules = load_rules(rules)
    tables = compile_rules(rules)
    masks = action_masks(tables)
    space = StateSpace(tables)
    rng = np.random.default_rng(seed)
    n = int(games)
    seats = [new_batch(tables, _first_rolls(rng, n)) for _ in range(2)]
    policies = (seat0, seat1)
    rows = np.arange(n)
    for turn in range(int(tables.turns)):
        for me in (0, 1):
            mine, theirs = seats[me], seats[1 - me]
            plan = np.asarray(policies[me](_keys(space, mine), _keys(space, theirs), _total(mine) - _total(theirs)))
            if plan.shape != (n, ROLLS_PER_TURN, N_ROLLS) or plan.dtype.kind not in "iu":
                raise ValueError(
                    f"seat {me}'s policy returned a {plan.dtype} array of shape {plan.shape}, "
                    f"expected ({n}, {ROLLS_PER_TURN}, {N_ROLLS}) integer actions"
                )
            active = np.ones(n, dtype=bool)
            for _ in range(ROLLS_PER_TURN):
                idx = np.flatnonzero(active)
                if not len(idx):
                    break
                sub = BatchState(*(np.array(field[idx]) for field in mine))
                action = plan[rows[idx], sub.rolls_left, sub.roll].astype(np.int64)
                legal = masks.of_batch(sub)
                inside = (action >= 0) & (action < legal.shape[1])
                ok = inside & (legal[np.arange(len(idx)), np.where(inside, action, 0)] != 0)
                if not ok.all():
                    bad = int(np.flatnonzero(~ok)[0])
                    raise ValueError(
                        f"seat {me}'s policy chose the illegal action {int(action[bad])} in game {int(idx[bad])}, "
                        f"turn {turn + 1}, with {int(sub.rolls_left[bad])} roll(s) left"
                    )
                faces = rng.integers(1, 7, size=(len(idx), 5))
                new, _, _ = step_batch(tables, sub, action, faces)
                for field, value in zip(mine, new):
                    field[idx] = value
                active[idx[action >= N_KEEP_ACTIONS]] = False
    result: np.ndarray = _total(seats[0]) - _total(seats[1])
    return result


def _first_rolls(rng: np.random.Generator, n: int) -> np.ndarray:
    from dice_poker_env.engine.combinatorics import roll_index_of_faces

    rolls: np.ndarray = roll_index_of_faces(rng.integers(1, 7, size=(n, 5)))
    return rolls


def _keys(space: StateSpace, state: BatchState) -> np.ndarray:
    full = np.asarray(five_kind_box_full(space.tables, state.filled, state.scores), dtype=bool) & (space.n_full == 2)
    return space.key(state.filled, space.canonical_upper(state.filled, state.upper_total), full)


def _total(state: BatchState) -> np.ndarray:
    total: np.ndarray = state.scores.sum(axis=1) + state.bonus
    return total


# ---------------------------------------------------------------------- entry point
def solve_duel(
    rules: str | os.PathLike[str] | Rules,
    *,
    cache: bool = True,
    force: bool = False,
    progress: bool | None = None,
    **options: Any,
) -> Duel:
    """The exact two-player solution of a ruleset, from the disk cache or solved (then cached).

    Args:
        rules: ruleset name, rules-file path or :class:`Rules`.
        cache: read and write the disk cache (the folder, key and checks of the solutions'
            (:mod:`~dice_poker_env.solver.cache`): a file that fails a check warns and is solved again).
        force: solve even when the table is estimated not to fit in the available memory.
        progress: say on stderr that the table is being solved (default: yes).
        **options: rules options.

    Raises:
        SolveTooLargeError: the table (8 bytes per pair and point difference) would not fit in memory.
    """
    rules = load_rules(rules, **options)
    start = time.perf_counter()
    path = disk.cache_path(rules.name, rules.fingerprint, kind="duel")
    duel = disk.load_as(path, lambda *cached: _from_cache(rules, *cached), "two-player cache") if cache else None
    if duel is not None:
        duel.seconds = time.perf_counter() - start
        return duel
    if progress is not False:
        print(f"solving the two-player game of {rules.name} (every pair of states and difference)", file=sys.stderr)
    from dice_poker_env.solver.solution import _progress_bar

    bar = _progress_bar(
        rules, progress, long=True, what="the two-player table of ", unit="pair", phases=("the two-player table",)
    )
    try:
        say = None if progress is False else (lambda line: print(f"  {line}", file=sys.stderr, flush=True))
        duel = Duel(rules, memory=None if force else budget.available_memory(), progress=bar, announce=say)
    except MemoryError as error:
        raise SolveTooLargeError(f"the two-player table of {rules.name}: {error}") from error
    finally:
        if bar is not None:
            bar.close()
    if cache:
        meta = {"fingerprint": rules.fingerprint, "rules": rules.name, "duel_version": DUEL_VERSION}
        try:
            disk.save(path, {"table": duel.table[:-1]}, meta)
        except OSError as error:
            warnings.warn(f"could not write the two-player cache {path}: {error}", disk.CacheWarning, stacklevel=2)
    return duel


def _from_cache(rules: Rules, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> Duel:
    """The :class:`Duel` of a cache file's table, after checking it fits ``rules`` (a ``ValueError`` naming what
    does not). The keyed checksum already covers every byte; this is the second line of defence: the layout
    is recomputed from the rules (cheap: no solve) and the table must fill it, with probabilities in [0, 1]
    and rows from exactly 0 to exactly 1."""
    if meta.get("fingerprint") != rules.fingerprint or meta.get("duel_version") != DUEL_VERSION:
        raise ValueError("it belongs to other rules or another version")
    table = arrays.get("table")
    if set(arrays) != {"table"} or table is None or table.dtype != np.float64 or table.ndim != 1:
        raise ValueError(f"arrays {sorted((k, str(a.dtype), a.shape) for k, a in arrays.items())}")
    duel = Duel(rules, solve=False)
    if len(table) != duel.n_cells:
        raise ValueError(f"{len(table):,} cells where the rules lay out {duel.n_cells:,}")
    if not (np.all(table >= 0.0) and np.all(table <= 1.0)):
        raise ValueError("values outside [0, 1]")
    if np.any(table[duel.offset[:-1]] != 0.0) or np.any(table[duel.offset[1:] - 1] != 1.0):
        raise ValueError("rows not running from 0 to 1")
    duel.table = np.concatenate([table, [_SENTINEL]])
    duel.from_cache = True
    return duel
