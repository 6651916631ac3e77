"""The reach solve: for every between-turn state and target, the maximum probability of reaching the target.

``R(s, t)`` is the largest probability, over all policies, that the points still
to come from the between-turn state ``s`` total at least ``t``. It is ``1`` for
``t`` at or below the least rest a game can score from ``s`` and ``0`` above the
most (``0`` and the ruleset's maximum for rules without negative points), and in
between it follows the recursion of the expected-score solve with a target
column instead of a value: scoring ``points`` (with bonus) in a box from ``s``
and target ``t`` leads to ``R(s', t - points)``; a turn takes, per roll, the best
box, and keeps average over the rerolled dice. The same three-roll widget
(:func:`~dice_poker_env.solver.turn.turn_values`) solves every target of a chunk
of states at once: its columns are ``(state, target)`` pairs, laid out
``(rolls, columns)``; candidates are gathered per roll class and merged per roll
by :class:`~dice_poker_env.solver.box_max.BoxMaxTree`, as in the expected-score solve.

**Storage.** Each state stores one row: the targets from its least rest
``least(s)`` (every roll adversarial, every box the worst: column 0 is always 1)
to its most rest plus one (the last column is always 0); a target outside the
row reads as the column at its end. Both bounds come from an exact min/max pass
over the same moves (:func:`rest_bounds`); the rows are laid out one after
another (:func:`row_layout`), 8 bytes a cell. Every target up to the ruleset's
maximum is stored: the table is exact (float64, rounding only), no truncation.
A chunk of states is solved with all its targets at once: its columns are the
``(state, target)`` pairs of its rows, about :data:`COLUMNS` of them.

**The expected-score policy's distribution.** Given the solved
:class:`~dice_poker_env.solver.Solution`, the same pass also computes, per state
and target, the probability that the optimal agent's policy
(:meth:`~dice_poker_env.solver.Solution.best_actions`: the expected-score-optimal
action of every roll) reaches the target: the same candidates, but each roll
takes the action that policy chooses instead of the best one. That is a linear
recursion over the same layout as the reach table (:attr:`ReachDPResult.policy`): per
state, the distribution of the rest the policy scores from it (an opponent's, for
the ``winning`` agent); the empty scorecard's row is the exact final-score
distribution of the policy.

Layers are split between forked worker processes writing into shared memory, as
in :mod:`.backward`.
"""

from __future__ import annotations

import mmap
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dice_poker_env.engine.combinatorics import (
    FIRST_ROLL_PROBABILITY,
    KEEP_ALL,
    KEEP_OF_ACTION,
    N_KEEP_ACTIONS,
    N_ROLLS,
)
from dice_poker_env.engine.game import ROLLS_PER_TURN
from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.solver.allocator import roomy_malloc
from dice_poker_env.solver.backward import end_pool, resolve_workers, worker_pool
from dice_poker_env.solver.budget import format_bytes, format_duration
from dice_poker_env.solver.keep_tables import KEEP_POS, N_PROPER_KEEPS
from dice_poker_env.solver.reachability import reachable_layers, stacked_layers
from dice_poker_env.solver.state_space import StateIndex, StateSpace
from dice_poker_env.solver.turn import keep_values, turn_values

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from dice_poker_env.solver.solution import Solution

#: states whose moves are asked of the engine at once
BLOCK_STATES = 2048
#: the fewest states of a piece of a layer given to a worker (pieces are cut by cells: rows differ in width)
MIN_PIECE_STATES = 16
#: (state, target) columns of one turn-widget call: ``(252, COLUMNS)`` float64 tables of 504 KiB (measured
#: on yacht: 256 columns 9.0 s CPU, 512 10.6 s, 1024 10.7 s, 128 9.4 s)
COLUMNS = 256
#: CPU seconds a cell costs to solve, for the estimate said before a solve: the table alone, and with the
#: expected-score policy's table (measured with one worker on this project's 2 vCPU x86_64 machine, shared
#: with two trainings: yacht 5.6 and 12.5 us, school_poker 5.9 and 13.6, benchmarks/yahtzee7.toml 5.0 and 12.6)
CELL_SECONDS = 5.5e-6
POLICY_CELL_SECONDS = 13e-6
#: the value of an illegal candidate: below every probability, so a max never picks it
_ILLEGAL = -1.0
#: (252, 31) internal keep index of each proper keep action of each roll
_KEEP_POS_OF_ACTION = np.ascontiguousarray(KEEP_POS[KEEP_OF_ACTION[:, :KEEP_ALL]])


@dataclass
class ReachDPResult:
    """Raw reach-solve output (see the module docstring for the layout).

    Attributes:
        keys: ``(S,)`` int64 state keys, sorted within each layer, layers concatenated (as the expected-score solve).
        layer_start: ``(turns + 2,)`` offsets of the layers in ``keys``.
        lo: ``(S,)`` int64 per state, the target of its first column: the least rest of the state.
        offset: ``(S + 1,)`` int64 where each state's row starts in ``prob`` (its width: the difference).
        prob: float64, the rows of every state one after another (in the order of ``keys``).
        policy: float64 in the layout of ``prob``: per state and target, the probability that the
            expected-score policy's rest from that state reaches the target; empty when not computed.
    """

    keys: np.ndarray
    layer_start: np.ndarray
    lo: np.ndarray
    offset: np.ndarray
    prob: np.ndarray
    policy: np.ndarray

    def row(self, position: int) -> np.ndarray:
        """The stored row of one state (a view): targets ``lo[position]`` and up."""
        return self.prob[int(self.offset[position]) : int(self.offset[position + 1])]

    def policy_row(self, position: int) -> np.ndarray:
        """The expected-score policy's row of one state (a view; empty when not computed)."""
        if not len(self.policy):
            return self.policy
        return self.policy[int(self.offset[position]) : int(self.offset[position + 1])]


@dataclass
class BlockMoves:
    """Score moves of a block of states, per open box: ``(legal, points, next position)``, each ``(classes, m)``.

    ``points`` are points plus bonus (integers); next positions index the solve's ``keys``.
    """

    space: StateSpace  #: the block's class system (:meth:`StateSpace.for_block`)
    boxes: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]


def block_moves(space: StateSpace, keys: np.ndarray, index: StateIndex, fill: int) -> BlockMoves:
    """The score moves of the states ``keys`` (one layer), from the engine through :class:`ChunkMoves`.

    Next positions are positions in ``keys``; ``fill`` stands in where a move is illegal.
    """
    filled, upper, full = space.decode(keys)
    block_space = space.for_block(filled)
    moves = block_space.chunk_moves(filled, upper, full)
    boxes: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for box in moves.open_boxes:
        legal, reward, key = moves.state_moves(box)
        pos = index(np.asarray(key, dtype=np.int64))
        if np.any(legal & (pos < 0)):
            raise RuntimeError("reach solver: a legal move leads to a state outside the reachable set")
        points = np.rint(np.broadcast_to(reward, legal.shape)).astype(np.int64)
        boxes[box] = (np.asarray(legal, dtype=bool), points, np.where(legal, pos, fill))
    return BlockMoves(block_space, boxes)


def rest_bounds(space: StateSpace, keys: np.ndarray, layer_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(least, most)`` points still to come from every state, over every policy and every roll (exact).

    Every roll can come up and every legal box can be chosen, so the most is the
    max over legal (roll class, box) of points + the next state's most, the least
    the min likewise; a keep changes no points.
    """
    index = StateIndex(space, keys)
    least = np.zeros(len(keys), dtype=np.int64)
    most = np.zeros(len(keys), dtype=np.int64)
    turns = len(layer_start) - 2
    for layer in range(turns - 1, -1, -1):
        lo, hi = int(layer_start[layer]), int(layer_start[layer + 1])
        for start in range(lo, hi, BLOCK_STATES):
            end = min(hi, start + BLOCK_STATES)
            moves = block_moves(space, keys[start:end], index, 0)
            best = np.full(end - start, np.iinfo(np.int64).min)
            worst = np.full(end - start, np.iinfo(np.int64).max)
            for legal, points, pos in moves.boxes.values():
                best = np.maximum(best, np.where(legal, points + most[pos], best).max(axis=0))
                worst = np.minimum(worst, np.where(legal, points + least[pos], worst).min(axis=0))
            most[start:end], least[start:end] = best, worst
    return least, most


def _shared_zeros(n: int) -> np.ndarray:
    """A zeroed float64 array in anonymous shared memory (visible to forked workers)."""
    buffer = mmap.mmap(-1, max(8 * n, 8))
    return np.frombuffer(buffer, dtype=np.float64, count=n)


#: what forked workers inherit (set just before the pool is created)
_SHARED: dict[str, Any] = {}


def _task(piece: tuple[int, int, int]) -> int:
    """A worker's piece ``(lo, hi, layer)`` of a layer (:func:`_reach_range` on :data:`_SHARED`)."""
    lo, hi, layer = piece
    _reach_range(lo, hi, layer=layer, **_SHARED)
    return hi - lo


def _reads(
    moves: BlockMoves, lo: np.ndarray, offset: np.ndarray, base: int, sentinel: int
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per open box, where its candidates read a table of rows: ``(shift, first, last)``, each ``(classes, m)``.

    A move scoring ``points`` into the state at position ``pos`` reads that state's row at ``target -
    points``, clipped to the row (its first column is 1, its last 0: the same below and above): cell
    ``clip(target + shift, first, last)`` of a table holding the rows from ``offset[...] = base`` on.
    An illegal move reads ``sentinel`` (a cell holding :data:`_ILLEGAL`).
    """
    reads = {}
    for box, (legal, points, pos) in moves.boxes.items():
        first = np.where(legal, offset[pos] - base, sentinel)
        last = np.where(legal, offset[pos + 1] - 1 - base, sentinel)
        reads[box] = (first - lo[pos] - points, first, last)
    return reads


def _candidates(
    table: np.ndarray, reads: tuple[np.ndarray, np.ndarray, np.ndarray], state_of_col: np.ndarray, target: np.ndarray
) -> np.ndarray:
    """``(classes, columns)`` a box's candidates (:func:`_reads`) for columns of (state, target)."""
    shift, first, last = (a[:, state_of_col] for a in reads)
    shift += target
    np.clip(shift, first, last, out=shift)
    out: np.ndarray = table.take(shift)
    return out


def _reach_range(
    start: int,
    stop: int,
    *,
    space: StateSpace,
    keys: np.ndarray,
    index: StateIndex,
    layer: int,
    layer_start: np.ndarray,
    lo: np.ndarray,
    offset: np.ndarray,
    prob: np.ndarray,
    policy: np.ndarray | None,
    solution: Solution | None,
) -> None:
    """Reach rows (and the policy's rows) of the states at positions ``start..stop`` of ``layer``."""
    next_first = int(layer_start[layer + 1])
    for b_start in range(start, stop, BLOCK_STATES):
        b_end = min(stop, b_start + BLOCK_STATES)
        moves = block_moves(space, keys[b_start:b_end], index, next_first)
        bspace = moves.space
        reads = _reads(moves, lo, offset, 0, len(prob) - 1)
        act = None
        if solution is not None and policy is not None:
            filled, upper, full = space.decode(keys[b_start:b_end])
            rows_of, box_order = _stacked_rows(bspace, moves)
            act = _policy_rows(_policy_actions(solution, filled, upper, full), rows_of)
        c_start = b_start
        while c_start < b_end:  # chunks of about COLUMNS columns (at least one state)
            c_end = int(np.searchsorted(offset, offset[c_start] + COLUMNS, side="right")) - 1
            c_end = min(b_end, max(c_end, c_start + 1))
            widths = np.diff(offset[c_start : c_end + 1])
            state_of_col = np.repeat(np.arange(c_start - b_start, c_end - b_start), widths)
            target = np.arange(len(state_of_col)) - np.repeat(offset[c_start:c_end] - offset[c_start], widths)
            target += lo[b_start + state_of_col]
            cols = slice(int(offset[c_start]), int(offset[c_end]))
            leaves: list[np.ndarray | None] = [None] * bspace.n_boxes
            for box in moves.boxes:
                leaves[box] = _candidates(prob, reads[box], state_of_col, target)
            P1 = bspace.max_tree[False].evaluate(leaves)
            P2 = bspace.max_tree[True].evaluate(leaves) if bspace.doubling else P1
            value = np.clip(turn_values(P1, P2), 0.0, 1.0)  # a sum of probabilities can round a hair past 1
            _exact_ends(value, offset[c_start : c_end + 1] - offset[c_start])
            prob[cols] = value
            if act is not None and policy is not None:
                stacked = np.concatenate([_candidates(policy, reads[box], state_of_col, target) for box in box_order])
                dist = np.clip(_policy_turn(stacked, act[:, :, state_of_col]), 0.0, 1.0)
                _exact_ends(dist, offset[c_start : c_end + 1] - offset[c_start])
                policy[cols] = dist
            c_start = c_end


def _exact_ends(rows: np.ndarray, starts: np.ndarray) -> None:
    """Set each row's first column to 1 and its last to 0 (exact: the state's bounds); rounding leaves a hair."""
    rows[starts[:-1]] = 1.0
    rows[starts[1:] - 1] = 0.0


def _policy_actions(solution: Solution, filled: np.ndarray, upper: np.ndarray, full: np.ndarray) -> np.ndarray:
    """``(m, 3, 252)`` the expected-score policy's action of every (rolls left, roll) of ``m`` states."""
    m = len(filled)
    per = ROLLS_PER_TURN * N_ROLLS
    rolls_left = np.repeat(np.arange(ROLLS_PER_TURN), N_ROLLS)
    roll = np.tile(np.arange(N_ROLLS), ROLLS_PER_TURN)
    actions = solution.best_actions(
        np.repeat(filled, per), np.repeat(upper, per), np.repeat(full, per), np.tile(roll, m), np.tile(rolls_left, m)
    )
    return actions.reshape(m, ROLLS_PER_TURN, N_ROLLS)


def _stacked_rows(space: StateSpace, moves: BlockMoves) -> tuple[np.ndarray, list[int]]:
    """Rows of the open boxes' candidates stacked box after box: ``(2, n_boxes, 252)`` the row of each
    (first roll?, box, roll) (0 for boxes not open), and the boxes in stacking order."""
    order = sorted(moves.boxes)
    rows = np.zeros((2, space.n_boxes, N_ROLLS), dtype=np.int64)
    start = 0
    for box in order:
        cls = space.box_classes[box]
        rows[0, box] = start + cls.of_last
        rows[1, box] = start + cls.of_first
        start += len(cls.roll)
    return rows, order


def _policy_rows(act: np.ndarray, rows_of: np.ndarray) -> np.ndarray:
    """``(3, 252, m)`` per (rolls left, roll, state) the row the policy's action reads (:func:`_policy_turn`).

    With no roll left: the row of the scored (box, roll class) in the stacked candidates; with rolls
    left, a keep's row among the 210 keep values, a score's row after them.
    """
    roll = np.arange(N_ROLLS)[:, None]
    out = np.empty((ROLLS_PER_TURN,) + act.shape[2:] + act.shape[:1], dtype=np.int64)
    for rolls_left in range(ROLLS_PER_TURN):
        a = act[:, rolls_left, :].T  # (252, m)
        scored = rows_of[int(rolls_left == ROLLS_PER_TURN - 1)][np.maximum(a - N_KEEP_ACTIONS, 0), roll]
        if rolls_left == 0:
            out[0] = scored
        else:
            keep = _KEEP_POS_OF_ACTION[roll, np.minimum(a, KEEP_ALL - 1)]
            out[rolls_left] = np.where(a < N_KEEP_ACTIONS, keep, scored + N_PROPER_KEEPS)
    return out


def _policy_turn(stacked: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(columns,)`` the probability of reaching each column's target when the turn follows the policy.

    ``stacked`` ``(rows, columns)`` holds every (box, roll class) candidate (:func:`_stacked_rows`);
    ``rows`` ``(3, 252, columns)`` what each (rolls left, roll) reads (:func:`_policy_rows`). The reach
    widget's turn with each roll's action given instead of the best one: a linear recursion.
    """
    n = stacked.shape[1]
    flat = rows * n
    flat += np.arange(n)
    values: np.ndarray = stacked.take(flat[0])
    for rolls_left in range(1, ROLLS_PER_TURN):
        source = np.concatenate([keep_values(values), stacked])
        values = source.take(flat[rolls_left])
    result: np.ndarray = FIRST_ROLL_PROBABILITY @ values
    return result


def _pieces(lo: int, hi: int, workers: int, offset: np.ndarray) -> list[tuple[int, int]]:
    """A layer's states ``lo..hi`` in pieces of about equal cells, four per worker (one without workers),
    each of :data:`MIN_PIECE_STATES` states or more (but the last)."""
    if workers <= 1 or hi - lo <= MIN_PIECE_STATES:
        return [(lo, hi)] if hi > lo else []
    n_pieces = min(4 * workers, -(-(hi - lo) // MIN_PIECE_STATES))
    marks = offset[lo] + (offset[hi] - offset[lo]) * np.arange(1, n_pieces) // n_pieces
    cuts = np.unique(np.concatenate([[lo], np.searchsorted(offset[lo:hi], marks) + lo, [hi]]))
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def row_layout(space: StateSpace, keys: np.ndarray, layer_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, offset)`` of the states' rows: targets ``least .. most + 1`` of each state (module docstring)."""
    least, most = rest_bounds(space, keys, layer_start)
    offset = np.concatenate([[0], np.cumsum(most - least + 2)]).astype(np.int64)
    return least, offset


def solve_reach_dp(
    tables: RuleTables,
    *,
    solution: Solution | None = None,
    workers: int | None = None,
    progress: Any = None,
    memory: int | None = None,
    announce: Callable[[str], None] | None = None,
) -> ReachDPResult:
    """The reach table of ``tables`` (and, given its expected-score ``solution``, that policy's distribution).

    Args:
        tables: the compiled rules.
        solution: the expected-score solution of the same rules: then the policy's reach
            probabilities from every state are computed too (:attr:`ReachDPResult.policy`).
        workers: forked processes sharing each layer (default: as the expected-score solve).
        progress: optional tqdm-like object (``reset(total=)``, ``update(n)``), counting states.
        memory: bytes available: a ``MemoryError`` before the table is allocated when it needs more
            (8 bytes a cell, twice with the policy's table); ``None``: no check.
        announce: called with one line, the table's size and the estimated CPU time, before the solve starts.
    """
    workers = resolve_workers(workers)
    with roomy_malloc():
        return _solve(tables, solution, workers, progress, memory, announce)


def estimate_line(n_states: int, n_cells: int, *, policy: bool) -> str:
    """What a reach solve will cost, said before it starts: ``"4,096 states, 618,496 cells: a table of 9 MiB
    (with the expected-score policy's), about 8.0 s of CPU"``."""
    size = format_bytes(8 * n_cells * (2 if policy else 1))
    seconds = n_cells * (POLICY_CELL_SECONDS if policy else CELL_SECONDS)
    what = " (with the expected-score policy's)" if policy else ""
    return f"{n_states:,} states, {n_cells:,} cells: a table of {size}{what}, about {format_duration(seconds)} of CPU"


def _solve(
    tables: RuleTables,
    solution: Solution | None,
    workers: int,
    progress: Any,
    memory: int | None,
    announce: Callable[[str], None] | None = None,
) -> ReachDPResult:
    space = StateSpace(tables)
    layers = reachable_layers(space)
    keys, layer_start = stacked_layers(layers)
    turns = tables.turns
    if solution is not None and not np.array_equal(solution.keys, keys):
        raise ValueError("the solution's states are not this ruleset's")
    index = StateIndex(space, keys)
    lo, offset = row_layout(space, keys, layer_start)
    needed = 8 * int(offset[-1]) * (2 if solution is not None else 1)
    if memory is not None and needed > memory:
        raise MemoryError(
            f"{int(offset[-1]):,} cells (states x targets) need about {format_bytes(needed)}, "
            f"but only {format_bytes(memory)} is available; force it (--force, force=True)"
        )
    if announce is not None:  # what the solve will cost, before it starts
        announce(estimate_line(len(keys), int(offset[-1]), policy=solution is not None))
    context = multiprocessing.get_context("fork") if workers > 1 else None
    # one cell more: the illegal moves' sentinel (:func:`_reads`)
    prob = _shared_zeros(int(offset[-1]) + 1) if context else np.zeros(int(offset[-1]) + 1)
    prob[-1] = _ILLEGAL
    n_terminal = int(layer_start[turns + 1] - layer_start[turns])
    prob[int(offset[layer_start[turns]]) : -1] = np.tile([1.0, 0.0], n_terminal)
    policy: np.ndarray | None = None
    if solution is not None:  # the same layout, sentinel and terminal rows
        policy = _shared_zeros(len(prob)) if context else np.zeros(len(prob))
        policy[-1] = _ILLEGAL
        policy[int(offset[layer_start[turns]]) : -1] = np.tile([1.0, 0.0], n_terminal)
    if progress is not None:
        progress.reset(total=int(layer_start[turns]))
    _SHARED.clear()
    _SHARED.update(
        space=space,
        keys=keys,
        index=index,
        layer_start=layer_start,
        lo=lo,
        offset=offset,
        prob=prob,
        solution=solution,
        policy=policy,
    )
    pool = worker_pool(context, workers) if context else None
    try:
        for layer in range(turns - 1, -1, -1):
            a, b = int(layer_start[layer]), int(layer_start[layer + 1])
            pieces = [(lo_, hi_, layer) for lo_, hi_ in _pieces(a, b, workers, offset)]
            if pool is not None and len(pieces) > 1:
                for done in pool.imap_unordered(_task, pieces):
                    if progress is not None:
                        progress.update(done)
            else:
                for piece in pieces:
                    done = _task(piece)
                    if progress is not None:
                        progress.update(done)
    finally:
        if pool is not None:
            end_pool(pool)
        _SHARED.clear()
    return ReachDPResult(keys, layer_start, lo, offset, prob[:-1], np.zeros(0) if policy is None else policy[:-1])
