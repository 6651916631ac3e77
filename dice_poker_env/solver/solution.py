"""The solved game: optimal values of states and actions, and the ``solve`` entry point."""

from __future__ import annotations

import mmap
import os
import sys
import time
import warnings
from typing import Any, Mapping

import numpy as np

from dice_poker_env.engine.dice import (
    KEEP_ALL,
    KEEP_OF_ACTION,
    N_DICE,
    N_KEEP_ACTIONS,
    N_ROLLS,
    ROLL_DICE,
    roll_index_of_faces,
)
from dice_poker_env.engine.game import (
    ROLLS_PER_TURN,
    legal_boxes,
    popcount,
    score_points,
)
from dice_poker_env.engine.position import (
    make_position,
    parse_scorecard,
    secured_upper_bonus,
)
from dice_poker_env.rules import Rules, load_rules
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.allocator import roomy_malloc
from dice_poker_env.solver.backward import DPResult, solve_dp
from dice_poker_env.solver.block_scores import BlockScores
from dice_poker_env.solver.keep_tables import KEEP_START
from dice_poker_env.solver.state_space import StateIndex, StateSpace
from dice_poker_env.solver.turn import turn_decisions, widget

#: keeps an env keep action can reach (0..4 dice); the turn cache stores only these
_N_PROPER_KEEPS = int(KEEP_START[N_DICE])
#: (252, 31) the proper keep of each keep action (0..30) of each roll
_KEEP_OF_ACTION_PROPER = np.ascontiguousarray(KEEP_OF_ACTION[:, :KEEP_ALL], dtype=np.int64)


def _huge_zeros(shape: tuple, dtype) -> np.ndarray:
    """A zeroed array in anonymous memory backed by transparent huge pages where the OS allows.

    The turn cache is filled in random order a few KiB per state; with 4 KiB pages
    every new state pays a page fault (the larger part of filling it).
    """
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    nbytes = max(count * dtype.itemsize, 1)
    try:
        buffer = mmap.mmap(-1, nbytes)
    except (OSError, ValueError):
        return np.zeros(shape, dtype=dtype)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            buffer.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


class SolverError(ValueError):
    """A query the solution cannot answer (finished game, unreachable or malformed position)."""


class Solution:
    """Optimal play of one ruleset (maximizing the expected final score).

    Every value is an expected *final* score: the points already on the
    scorecard (written points plus the bonuses already paid or secured) plus the
    optimal expected rest of the game.

    Attributes:
        rules: the solved :class:`~dice_poker_env.rules.Rules`.
        expected_score: optimal expected final score from the empty scorecard.
        score_std: standard deviation of the final score under that optimal policy.
        n_states: number of reachable between-turn states (terminal ones included).
        seconds: wall time of the solve (or of loading it from the cache).
        from_cache: whether the solution was loaded from the disk cache.

    Queries inside a turn solve that state's turn on first use and keep the
    result in a cache of ``turn_cache_size`` states (emptied when full): action
    values keep the keep and score tables (about 3 KiB a state, 6 KiB with
    first-roll doubling), best actions only the optimal action of every (rolls
    left, roll) (756 bytes a state).
    """

    def __init__(self, rules: Rules, dp: DPResult, *, seconds: float = 0.0, from_cache: bool = False, turn_cache_size: int = 131072):
        self.rules = rules
        self.tables = rules.tables
        self.space = dp.space if dp.space is not None else StateSpace(self.tables)
        self.keys = dp.keys
        self.layer_start = dp.layer_start
        self.value = dp.value
        self.value2 = dp.value2
        self.index = StateIndex(self.space, self.keys)
        self.expected_score = float(self.value[0])
        self.score_std = float(np.sqrt(max(self.value2[0] - self.value[0] ** 2, 0.0)))
        self.n_states = int(len(self.keys))
        self.seconds = float(seconds)
        self.from_cache = from_cache
        self._turn_cache_size = int(turn_cache_size)
        self._clear_turn_cache()

    def __repr__(self) -> str:
        return (
            f"Solution({self.rules.name!r}, expected_score={self.expected_score:.6f}, "
            f"score_std={self.score_std:.4f}, n_states={self.n_states})"
        )

    # ------------------------------------------------------------ positions
    def _positions(self, filled, upper, full) -> np.ndarray:
        """Positions in the value arrays of (non-canonical) between-turn states."""
        filled = np.asarray(filled, dtype=np.int64)
        if np.any(popcount(filled) >= self.tables.turns):
            raise SolverError("the game is over: no turn is left to play")
        canonical = self.space.canonical_upper(filled, upper)
        pos = self.index(self.space.key(filled, canonical, full))
        if np.any(pos < 0):
            raise SolverError("position is not reachable under these rules (check the scorecard)")
        return pos

    def state_value(self, scorecard: Mapping[str, Any] | None = None, bonus: int | None = None) -> float:
        """Expected final score of a between-turn scorecard ``{box_name: points}``.

        ``bonus`` is the bonus already paid (default: the upper bonus the
        scorecard has secured; five-of-a-kind bonuses cannot be inferred from a
        scorecard, pass them here). At the end of a game this is the final score.
        """
        filled, scores = parse_scorecard(self.tables, scorecard) if scorecard else (0, np.zeros(self.tables.n_boxes, np.int32))
        upper = int(scores[self.tables.is_upper].sum())
        full = self._box_full(filled, scores)
        paid = secured_upper_bonus(self.tables, filled, upper) if bonus is None else int(bonus)
        done = int(scores.sum()) + paid
        return done + float(self.value[self._positions(filled, upper, full)])

    def _box_full(self, filled: int, scores: np.ndarray) -> bool:
        k = self.space.five_box
        return bool(self.space.n_full == 2 and filled >> k & 1 and scores[k] > 0)

    # --------------------------------------------------------- turn tables
    def _clear_turn_cache(self) -> None:
        """Forget the per-state turn tables (see :meth:`_turn_slots`)."""
        self._slot = np.full(self.n_states, -1, dtype=np.int64)
        #: [slot, rolls-left level, keep]: keep values minus the state's value
        self._keep = np.zeros((0, 2, _N_PROPER_KEEPS), dtype=np.float32)
        #: [slot, level, roll]: best score-now value minus the state's value, and its box
        levels = 2 if self.space.doubling else 1  # without first-roll doubling both levels score alike
        self._score = np.zeros((0, levels, N_ROLLS), dtype=np.float32)
        self._box = np.zeros((0, levels, N_ROLLS), dtype=np.int8)
        self._used = 0
        #: the fast path's cache: [slot, rolls_left, roll] the optimal action (see :meth:`best_actions`)
        self._act_slot = np.full(self.n_states, -1, dtype=np.int64)
        self._act = np.zeros((0, ROLLS_PER_TURN, N_ROLLS), dtype=np.uint8)
        self._act_used = 0

    def _turn_slots(self, positions: np.ndarray) -> np.ndarray:
        """Cache slots holding the turn tables of these states (solving the missing turns).

        Level 0 holds the keep values with one reroll left and the best score of
        each roll after a reroll; level 1 the keep values with two rerolls left and
        the best score from the turn's first roll. The cache is emptied when full.
        """
        positions = np.asarray(positions, dtype=np.int64)
        missing = np.unique(positions[self._slot[positions] < 0])
        if len(missing):
            if self._used + len(missing) > self._turn_cache_size:
                self._clear_turn_cache()
                missing = np.unique(positions)  # everything is missing now
            self._grow(self._used + len(missing))
            with roomy_malloc():
                self._fill_turn_cache(missing)
        return self._slot[positions]

    def _decision_slots(self, positions: np.ndarray) -> np.ndarray:
        """Slots of the decision cache holding the optimal action of every (rolls left, roll) of these states.

        Only the actions are kept (756 bytes a state): filling it skips storing the
        keep and score values. Emptied when ``turn_cache_size`` states are held.
        """
        positions = np.asarray(positions, dtype=np.int64)
        slots = self._act_slot.take(positions)
        if slots.min(initial=0) >= 0:
            return slots
        missing = np.unique(positions[slots < 0])
        if self._act_used + len(missing) > self._turn_cache_size:
            self._act_slot[:] = -1
            self._act_used = 0
            missing = np.unique(positions)
        if self._act_used + len(missing) > self._act.shape[0]:
            size = max(self._turn_cache_size, self._act_used + len(missing))
            new = _huge_zeros((size, ROLLS_PER_TURN, N_ROLLS), np.uint8)
            new[: self._act_used] = self._act[: self._act_used]
            self._act = new
        with roomy_malloc():
            for block_start in range(0, len(missing), 4096):
                block = missing[block_start : block_start + 4096]
                filled, upper, full = self.space.decode(self.keys[block])
                scores = BlockScores(self.space, filled, upper, full, value=self.value, index=self.index)
                for start in range(0, len(block), 512):
                    S0, S2, B0, B2, _ = scores.tables(slice(start, start + 512))
                    n = S0.shape[1]
                    self._act[self._act_used : self._act_used + n] = turn_decisions(S0, S2, B0, B2, N_KEEP_ACTIONS)
                    self._act_slot[block[start : start + n]] = np.arange(self._act_used, self._act_used + n)
                    self._act_used += n
        return self._act_slot.take(positions)

    def turn_keep_values(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keep values (expected future points) of states, one row per position.

        Returns ``(K1, K2)``, each ``(len(positions), 210)`` float64: the value of
        keeping each 0..4-dice keep and rerolling the rest with one (``K1``) or two
        (``K2``) rolls left this turn.
        """
        positions = np.asarray(positions, dtype=np.int64)
        slots = self._turn_slots(positions)
        base = self.value[positions][:, None]
        return self._keep[slots, 0] + base, self._keep[slots, 1] + base

    def _fill_turn_cache(self, missing: np.ndarray) -> None:
        """Solve the turns of ``missing`` positions and store their tables."""
        for block_start in range(0, len(missing), 4096):  # the engine once per block,
            block = missing[block_start : block_start + 4096]
            filled, upper, full = self.space.decode(self.keys[block])
            scores = BlockScores(self.space, filled, upper, full, value=self.value, index=self.index)
            for start in range(0, len(block), 512):  # the widget per cache-sized chunk
                self._fill_chunk(block[start : start + 512], scores.tables(slice(start, start + 512)))

    def _fill_chunk(self, part: np.ndarray, tables) -> None:
        """Solve the turns of the positions ``part`` from their score tables and store them."""
        S0, S2, B0, B2, center = tables
        _, K1, K2 = widget(S0, S2)
        base = (self.value[part] - center).astype(np.float32)  # tables are relative to center
        slots = slice(self._used, self._used + len(part))
        self._keep[slots, 0] = (K1[:_N_PROPER_KEEPS] - base).T
        self._keep[slots, 1] = (K2[:_N_PROPER_KEEPS] - base).T
        self._score[slots, 0] = (S0 - base).T
        if self.space.doubling:
            self._score[slots, 1] = (S2 - base).T
        self._box[slots, 0] = B0.T
        if self.space.doubling:
            self._box[slots, 1] = B2.T
        self._slot[part] = np.arange(self._used, self._used + len(part))
        self._used += len(part)

    def _grow(self, need: int) -> None:
        have = self._keep.shape[0]
        if need <= have:
            return
        size = max(self._turn_cache_size, need)  # np.zeros maps pages lazily: untouched slots cost no memory
        for name in ("_keep", "_score", "_box"):
            old = getattr(self, name)
            new = _huge_zeros((size,) + old.shape[1:], old.dtype)
            new[:have] = old
            setattr(self, name, new)

    def best_actions(self, filled, upper, full, roll, rolls_left) -> np.ndarray:
        """Optimal actions of a batch of situations (fast path: one lookup per situation).

        Same arguments as :meth:`future_action_values`. Each visited between-turn
        state's turn is solved once into a table of the optimal action of every
        (rolls left, roll) (:func:`~dice_poker_env.solver.turn.turn_decisions`, 756
        bytes a state), so a decision is a single gather. A keep wins ties with
        the best box (keeps come first in action order), the lowest box index
        wins among boxes, and among keeps of equal value the one with the fewest
        dice (as its lowest bitmask); values are compared in float32, so two
        actions within ~1e-5 points of each other may be ordered differently than
        by the exact float64 ``action_values``.
        """
        filled = np.atleast_1d(np.asarray(filled, dtype=np.int64))
        roll = np.atleast_1d(np.asarray(roll, dtype=np.int64))
        rolls_left = np.atleast_1d(np.asarray(rolls_left, dtype=np.int64))
        if np.any((rolls_left < 0) | (rolls_left >= ROLLS_PER_TURN)):
            raise SolverError(f"rolls_left must be 0..{ROLLS_PER_TURN - 1}")
        full = np.atleast_1d(np.asarray(full, dtype=bool)) & (self.space.n_full == 2)
        pos = self._positions(filled, upper, full)
        slots = self._decision_slots(pos)
        at = (slots * ROLLS_PER_TURN + rolls_left) * N_ROLLS + roll
        return self._act.reshape(-1).take(at).astype(np.int64)

    # ------------------------------------------------------------ queries
    def future_action_values(self, filled, upper, full, roll, rolls_left) -> np.ndarray:
        """Expected points still to come after each action, batched; ``-inf`` where illegal.

        Args:
            filled, upper, full: between-turn state of each game (filled-box bitmask,
                upper total, five-of-a-kind box holds points), shape ``(B,)``.
            roll: roll index of the current dice; rolls_left: rerolls left (0..2).

        Returns:
            ``(B, 32 + n_boxes)`` float64 indexed like the env's actions.
        """
        tables = self.tables
        n = tables.n_boxes
        filled = np.atleast_1d(np.asarray(filled, dtype=np.int64))
        upper = np.atleast_1d(np.asarray(upper, dtype=np.int64))
        full = np.atleast_1d(np.asarray(full, dtype=bool)) & (self.space.n_full == 2)
        roll = np.atleast_1d(np.asarray(roll, dtype=np.int64))
        rolls_left = np.atleast_1d(np.asarray(rolls_left, dtype=np.int64))
        if np.any((rolls_left < 0) | (rolls_left >= ROLLS_PER_TURN)):
            raise SolverError(f"rolls_left must be 0..{ROLLS_PER_TURN - 1}")
        pos = self._positions(filled, upper, full)
        batch = len(filled)
        q = np.full((batch, N_KEEP_ACTIONS + n), -np.inf)
        # score actions: points + bonus now, plus the value of the next state
        boxes = np.arange(n)[None, :]
        col = lambda a: a[:, None]  # noqa: E731
        legal = (np.asarray(legal_boxes(tables, col(filled), col(full), col(roll))) >> boxes) & 1
        points, bonus, new_upper = score_points(
            tables, col(filled), col(upper), col(full), col(roll), col(rolls_left == ROLLS_PER_TURN - 1), boxes
        )
        new_filled = col(filled) | (1 << boxes)
        new_full = self.space.next_full(col(full), boxes, points)
        done = popcount(new_filled) >= tables.turns
        next_key = self.space.key(new_filled, self.space.canonical_upper(new_filled, new_upper), new_full)
        next_pos = self.index(np.where(legal == 1, next_key, self.keys[0]))
        after = np.where(done, 0.0, self.value[np.maximum(next_pos, 0)])
        q[:, N_KEEP_ACTIONS:] = np.where(legal == 1, points + bonus + after, -np.inf)
        # keep actions: value of the keep with the rolls left
        keeping = np.flatnonzero(rolls_left > 0)
        if len(keeping):
            K1, K2 = self.turn_keep_values(pos[keeping])
            K = np.where((rolls_left[keeping] == 2)[:, None], K2, K1)
            keep_of = KEEP_OF_ACTION[roll[keeping], :KEEP_ALL].astype(np.int64)
            q[keeping, :KEEP_ALL] = np.take_along_axis(K, keep_of, axis=1)
        return q

    def action_values(self, observation: Mapping[str, Any]) -> np.ndarray:
        """Expected final score of every action in a situation; ``-inf`` for illegal ones.

        ``observation`` is an env observation (``obs_mode="dict"``, one game or a
        batch with a leading axis) or ``{"scorecard": {...}, "dice": [...],
        "rolls_left": r, "bonus": b}`` (``rolls_left`` defaults to 2, ``bonus``
        to the secured upper bonus). Returns ``(32 + n_boxes,)`` (or ``(B, 32 +
        n_boxes)`` for a batch) indexed like the env's action space; equivalent
        keep bitmasks get the same value, keep-all (31) is always ``-inf``.
        """
        situation, batched = self._situation(observation)
        filled, upper, full, roll, rolls_left, points = situation
        q = self.future_action_values(filled, upper, full, roll, rolls_left) + points[:, None]
        return q if batched else q[0]

    def best_action(self, observation: Mapping[str, Any]):
        """The optimal action (an ``int``; an array for a batch of observations).

        Uses the fast path :meth:`best_actions`; ``argmax(action_values(...))``
        agrees except between actions within ~1e-5 points of each other.
        """
        situation, batched = self._situation(observation)
        actions = self.best_actions(*situation[:5])
        return actions if batched else int(actions[0])

    def advise(self, observation: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every distinct legal action of one situation, best first.

        Each item: ``{"action": int, "kind": "keep"|"score", "keep": [dice kept]
        or "box": name, "value": expected final score}``. Keeps that hold the same
        dice are listed once (the lowest bitmask).
        """
        q = self.action_values(observation)
        if q.ndim != 1:
            raise SolverError("advise takes one situation, not a batch")
        situation, _ = self._situation(observation)
        roll = int(situation[3][0])
        seen = set()
        items = []
        for a in np.flatnonzero(np.isfinite(q)):
            a = int(a)
            if a < N_KEEP_ACTIONS:
                keep = int(KEEP_OF_ACTION[roll, a])
                if keep in seen:
                    continue
                seen.add(keep)
                dice = [int(d) for i, d in enumerate(ROLL_DICE[roll]) if a >> i & 1]
                items.append({"action": a, "kind": "keep", "keep": dice, "value": float(q[a])})
            else:
                box = a - N_KEEP_ACTIONS
                items.append({"action": a, "kind": "score", "box": self.rules.box_names[box], "value": float(q[a])})
        items.sort(key=lambda item: -item["value"])
        return items

    def _situation(self, observation: Mapping[str, Any], *, points: bool = True):
        """``((filled, upper, full, roll, rolls_left, points_so_far), batched)`` as arrays.

        ``points=False`` skips the points so far (``None``): :meth:`best_actions`
        does not need them. Env observations are decoded with one float matrix
        product for the filled boxes (exact: flags are 0/1 and the sum stays
        below 2**24) and one product and lookup for the roll
        (:func:`~dice_poker_env.engine.dice.roll_index_of_faces`, order-free).
        """
        if not isinstance(observation, Mapping):
            raise SolverError(
                "observation must be a dict: an env observation (obs_mode='dict') or "
                "{'scorecard': ..., 'dice': ..., 'rolls_left': ...}"
            )
        if "dice" in observation and "filled" in observation:
            n = self.tables.n_boxes
            flags = np.asarray(observation["filled"])
            batched = flags.ndim == 2
            bit_values = (1 << np.arange(n)).astype(np.float32 if n <= 24 else np.float64)
            filled = (flags.reshape(-1, n) @ bit_values).astype(np.int64)
            roll = roll_index_of_faces(np.asarray(observation["dice"], dtype=np.int64).reshape(-1, N_DICE))
            upper = np.asarray(observation["upper_total"], dtype=np.int64).reshape(-1)
            full = np.asarray(observation["five_kind_box"], dtype=np.int64).reshape(-1) == 2
            rolls_left = np.asarray(observation["rolls_left"], dtype=np.int64).reshape(-1)
            so_far = None
            if points:
                scores = np.asarray(observation["scores"], dtype=np.int64).reshape(-1, n)
                bonus = np.asarray(observation["bonus"], dtype=np.int64).reshape(-1)
                so_far = (scores.sum(axis=1) + bonus).astype(np.float64)
            return (filled, upper, full, roll, rolls_left, so_far), batched
        known = {"scorecard", "dice", "rolls_left", "bonus"}
        if not set(observation) <= known or "dice" not in observation:
            raise SolverError(
                "observation: expected an env dict observation (keys dice, rolls_left, filled, scores, "
                f"upper_total, bonus, five_kind_box) or keys {sorted(known)} with 'dice'; got {sorted(observation)}"
            )
        state = make_position(
            self.tables, observation.get("scorecard"), observation.get("dice"), observation.get("rolls_left"), observation.get("bonus")
        )
        filled = np.atleast_1d(np.asarray(state.filled, dtype=np.int64))
        scores = np.asarray(state.scores).reshape(1, -1)
        full = np.array([self._box_full(int(filled[0]), scores[0])])
        points = np.atleast_1d(np.asarray(scores.sum() + np.asarray(state.bonus).sum(), dtype=np.float64))
        return (
            filled,
            np.atleast_1d(np.asarray(state.upper_total, dtype=np.int64)),
            full,
            np.atleast_1d(np.asarray(state.roll, dtype=np.int64)),
            np.atleast_1d(np.asarray(state.rolls_left, dtype=np.int64)),
            points,
        ), False

    # -------------------------------------------------------------- storage
    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"keys": self.keys, "layer_start": self.layer_start, "value": self.value, "value2": self.value2}


def _progress_bar(rules: Rules, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ModuleNotFoundError:  # optional dependency
        return None
    return tqdm(total=1, desc=f"solving {rules.name}", unit="state", file=sys.stderr, leave=False, dynamic_ncols=True)


def solve(
    rules: str | os.PathLike | Rules = "yahtzee",
    *,
    cache: bool = True,
    progress: bool | None = None,
    workers: int | None = None,
    **options: Any,
) -> Solution:
    """Solve a ruleset exactly (or load its solution from the disk cache).

    Args:
        rules: ruleset name, rules-file path or :class:`Rules`.
        cache: read and write the disk cache (:mod:`dice_poker_env.solver.cache`:
            ``$DICE_POKER_CACHE``, default ``~/.cache/dice_poker_env``).
        progress: show a tqdm progress bar on stderr (default: when stderr is a terminal).
        workers: processes sharing the work (default ``$DICE_POKER_SOLVER_WORKERS``, else 2).
        **options: rules options, e.g. ``joker="free"``.

    Returns:
        The :class:`Solution`.
    """
    rules = load_rules(rules, **options)
    start = time.perf_counter()
    path = disk.cache_path(rules.name, rules.fingerprint)
    if cache:
        loaded = disk.load(path)
        if loaded is not None:
            arrays, meta = loaded
            if meta.get("fingerprint") == rules.fingerprint:
                dp = DPResult(arrays["keys"], arrays["layer_start"], arrays["value"], arrays["value2"])
                return Solution(rules, dp, seconds=time.perf_counter() - start, from_cache=True)
            warnings.warn(f"solver cache {path} belongs to other rules; solving again", disk.CacheWarning, stacklevel=2)
    bar = _progress_bar(rules, progress)
    try:
        dp = solve_dp(rules.tables, progress=bar, workers=workers)
    finally:
        if bar is not None:
            bar.close()
    solution = Solution(rules, dp, seconds=time.perf_counter() - start)
    if cache:
        try:
            disk.save(path, solution.to_arrays(), {"fingerprint": rules.fingerprint, "rules": rules.name, "options": {k: str(v) for k, v in rules.options.items()}, "expected_score": solution.expected_score, "solve_seconds": solution.seconds})
        except OSError as error:
            warnings.warn(f"could not write the solver cache {path}: {error}", disk.CacheWarning, stacklevel=2)
    return solution
