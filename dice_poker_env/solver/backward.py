"""The solve: the forward pass, then the backward pass over layers, shared between forked workers.

Only states reachable from the empty scorecard are built (the forward pass of
:mod:`.reachability`, layer by layer: layer ``t`` holds the states with ``t``
boxes filled). The backward pass solves each layer from the last one up: per
block of states the score tables (:mod:`.block_scores`: points + bonus + value
of the next state, for every roll), then per chunk the three-roll turn
(:func:`~dice_poker_env.solver.turn.widget_with_moments`), which gives each
state's expected rest of the game and, under the same (mean-optimal) policy, its
second moment: the exact standard deviation of the final score.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from multiprocessing.pool import Pool
from typing import Any

import numpy as np
import numpy.typing as npt

from dice_poker_env.engine.tables import RuleTables
from dice_poker_env.solver.allocator import roomy_malloc
from dice_poker_env.solver.block_scores import BlockScores
from dice_poker_env.solver.reachability import reachable_layers, stacked_layers
from dice_poker_env.solver.state_space import StateIndex, StateSpace
from dice_poker_env.solver.turn import widget_with_moments


@dataclass
class DPResult:
    """Raw solver output: state keys and their expected future points and second moments."""

    keys: np.ndarray  # (S,) int64 sorted within each layer, layers concatenated
    layer_start: np.ndarray  # (turns + 2,) offsets of the layers in keys
    value: np.ndarray  # (S,) float64 expected points still to come
    value2: np.ndarray  # (S,) float64 expected square of the points still to come
    space: StateSpace | None = None  # the state space solved (None when loaded from the cache)


#: the most worker processes a solve forks (each shares a layer; beyond the cores they only cost memory)
MAX_WORKERS = 256


def default_workers() -> int:
    """Worker processes for a solve: ``$DICE_POKER_SOLVER_WORKERS`` (unset or blank: not given), else 2 (1 on a
    one-core machine); a ``ValueError`` unless the variable is an integer from 1 to :data:`MAX_WORKERS`."""
    env = os.environ.get("DICE_POKER_SOLVER_WORKERS")
    if env is None or not env.strip():
        return max(1, min(2, os.cpu_count() or 1))
    try:
        workers = int(env.strip())
    except ValueError:
        raise ValueError(f"DICE_POKER_SOLVER_WORKERS must be a positive integer, got {env!r}") from None
    if not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"DICE_POKER_SOLVER_WORKERS must be an integer from 1 to {MAX_WORKERS}, got {env!r}")
    return workers


def solve_dp(tables: RuleTables, *, chunk: int = 256, progress: Any = None, workers: int | None = None) -> DPResult:
    """Run the forward (reachability) and backward (values) passes for ``tables``.

    Args:
        chunk: states per turn-table batch (sized to stay in the CPU cache).
        progress: optional tqdm-like object (``update(n)``, ``reset(total=)``): it
            counts the layers of the forward pass, then the states of the backward pass.
        workers: processes sharing each layer (default :func:`default_workers`);
            they are forked and write into shared memory, so this needs ``fork``
            (Linux, macOS); elsewhere the solve runs in this process.
    """
    workers = resolve_workers(workers)
    with roomy_malloc():
        return _solve_dp(tables, chunk=chunk, progress=progress, workers=workers)


def resolve_workers(workers: int | None) -> int:
    """The worker processes a solve forks: ``workers`` (default :func:`default_workers`), at least 1, 1 where
    ``fork`` is missing; more than :data:`MAX_WORKERS` is a ``ValueError`` (the reach solve's too)."""
    workers = default_workers() if workers is None else max(1, int(workers))
    if workers > MAX_WORKERS:
        raise ValueError(f"workers: {workers:,} is more than the {MAX_WORKERS} processes a solve may fork")
    if workers > 1 and "fork" not in multiprocessing.get_all_start_methods():
        workers = 1
    return workers


#: what forked workers inherit (set just before the pool is created)
_SHARED: dict[str, Any] = {}


def _backward_task(bounds: tuple[int, int]) -> int:
    """A worker's piece of a layer (:func:`_solve_range` on :data:`_SHARED`); returns its number of states."""
    _solve_range(*bounds, **_SHARED)
    return bounds[1] - bounds[0]


def _solve_range(
    lo: int,
    hi: int,
    *,
    space: StateSpace,
    keys: np.ndarray,
    index: StateIndex,
    value: np.ndarray,
    variance: np.ndarray,
    chunk: int,
    block: int = 4096,
) -> None:
    """Backward step for the states at positions ``lo..hi`` (one layer): fills value and variance.

    The engine is consulted once per block of ``block`` states (:class:`BlockScores`),
    the turn widget runs on cache-sized sub-chunks of ``chunk`` states. Values are
    ``center + turn value``, variances taken about ``center + shift`` (see
    :class:`BlockScores`).
    """
    for b_start in range(lo, hi, block):
        b_end = min(hi, b_start + block)
        filled, upper, full = space.decode(keys[b_start:b_end])
        scores = BlockScores(space.for_block(filled), filled, upper, full, value=value, index=index, variance=variance)
        for start in range(b_start, b_end, chunk):
            end = min(b_end, start + chunk)
            packed = scores.packed_tables(slice(start - b_start, end - b_start))
            turn = widget_with_moments(packed.last, packed.first)
            value[start:end] = packed.center + turn.value
            about = turn.value - packed.shift
            variance[start:end] = np.maximum(turn.second - about * about, 0.0)


def _default_sigterm() -> None:
    """Pool worker start: SIGTERM back to its default action (end the process), then unblocked.

    A forked worker inherits the parent's Python handlers. Where the caller turns SIGTERM into an exception
    (``dice-poker dataset`` does, to clean up like Ctrl-C), ``Pool.terminate()`` would raise it inside a worker
    blocked on the task queue's lock instead of ending it, and the solve could hang in ``terminate``.
    :func:`worker_pool` forks with SIGTERM blocked, so one sent before this point waits and ends the worker here.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _end_with_parent()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _end_with_parent() -> None:
    """Linux: this process gets SIGTERM when its parent dies (``timeout``, a scheduler or ``kill`` ending the
    solve), so a worker ends quietly with it instead of printing a BrokenPipeError traceback when it answers a
    parent that is gone, or living on. Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        pass
    parent = multiprocessing.parent_process()
    if (
        parent is not None and os.getppid() != parent.pid
    ):  # the parent died before the call: end now, as the signal would have
        os._exit(0)


def worker_pool(context: BaseContext, workers: int) -> Pool:
    """The solver's pool of ``workers`` processes from ``context``; end it with :func:`end_pool`."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:  # workers (and the pool's thread that starts new ones) begin with SIGTERM blocked
        return context.Pool(workers, initializer=_default_sigterm)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def end_pool(pool: Pool, grace: float = 2.0) -> None:
    """Terminate ``pool`` and wait for its workers; one still alive after ``grace`` seconds is killed.

    ``Pool.terminate()`` sends each worker SIGTERM and then waits for it without a limit. A worker that
    receives it before its initializer has run still has the parent's Python handler, and where that
    handler has been replaced by the default before Python runs it, the signal is dropped: the worker
    lives on, blocked on the task queue's lock, and ``terminate()`` never returns. :func:`worker_pool`
    closes that window (workers fork with SIGTERM blocked); as a backstop for any other way a worker
    outlives SIGTERM, ``terminate()`` runs in a helper thread, and a worker it is still waiting for
    after ``grace`` seconds gets SIGKILL, which cannot be caught or lost. (By then ``terminate()`` holds the queue's lock and has stopped the
    thread that would start new workers, so killing one can neither leave the lock taken nor be undone.)
    """
    ender = threading.Thread(target=pool.terminate, name="end-solver-pool", daemon=True)
    ender.start()
    ender.join(grace)
    if ender.is_alive():
        for process in getattr(pool, "_pool", ()):
            if process.exitcode is None:
                process.kill()
        ender.join()
    pool.join()


def _shared_zeros(n: int, dtype: npt.DTypeLike = np.float64) -> np.ndarray:
    """A zeroed array in anonymous shared memory (visible to forked workers)."""
    size = np.dtype(dtype).itemsize
    buffer = mmap.mmap(-1, max(size * n, size))
    return np.frombuffer(buffer, dtype=dtype, count=n)


def _pieces(lo: int, hi: int, chunk: int, workers: int) -> list[tuple[int, int]]:
    """Split a layer into a few pieces per worker, each a multiple of ``chunk`` states."""
    n = hi - lo
    per = max(chunk, -(-n // (4 * workers) // chunk) * chunk)
    return [(start, min(hi, start + per)) for start in range(lo, hi, per)]


def _solve_dp(tables: RuleTables, *, chunk: int, progress: Any, workers: int) -> DPResult:
    space = StateSpace(tables)
    if progress is not None:
        progress.reset(total=tables.turns)
    layers = reachable_layers(space, progress)
    context = multiprocessing.get_context("fork") if workers > 1 else None
    keys, layer_start = stacked_layers(layers)
    index = StateIndex(space, keys)
    value = _shared_zeros(len(keys)) if context else np.zeros(len(keys))
    variance = _shared_zeros(len(keys)) if context else np.zeros(len(keys))
    if progress is not None:
        progress.reset(total=int(layer_start[tables.turns]))
    shared: dict[str, Any] = dict(space=space, keys=keys, index=index, value=value, variance=variance, chunk=chunk)
    _SHARED.clear()
    _SHARED.update(shared)
    pool = worker_pool(context, workers) if context else None
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
            end_pool(pool)
        _SHARED.clear()
    value, variance = np.array(value), np.array(variance)  # private copies (the shared maps are released)
    return DPResult(keys=keys, layer_start=layer_start, value=value, value2=variance + value * value, space=space)
