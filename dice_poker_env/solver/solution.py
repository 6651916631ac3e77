"""The solved game: optimal values of states and actions, and the ``solve`` entry point.

Size: every query of :class:`Solution` takes env observations
(one game or a batch) and checks them as strictly as ``env.reset(options=...)``
checks a position; that validation (a third of the module) sits next to the
queries that decode the observations it checks.
"""

from __future__ import annotations

import mmap
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from dice_poker_env.engine.combinatorics import (
    KEEP_ALL,
    KEEP_OF_ACTION,
    N_DICE,
    N_FACES,
    N_KEEP_ACTIONS,
    N_ROLLS,
    ROLL_DICE,
    kept_dice,
    roll_index_of_faces,
)
from dice_poker_env.engine.game import (
    ROLLS_PER_TURN,
    five_kind_box_full,
    five_kind_box_state,
    legal_boxes,
    score_points,
)
from dice_poker_env.engine.position import (
    POSITION_KEYS,
    PositionError,
    bonus_possible,
    make_position,
    secured_upper_bonus,
)
from dice_poker_env.engine.tables import RuleTables, compile_rules
from dice_poker_env.rules import Rules, load_rules
from dice_poker_env.solver import budget
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.allocator import roomy_malloc
from dice_poker_env.solver.backward import MAX_WORKERS, DPResult, default_workers, solve_dp
from dice_poker_env.solver.block_scores import BlockScores, TurnTables
from dice_poker_env.solver.keep_tables import KEEP_START
from dice_poker_env.solver.state_space import StateIndex, StateSpace
from dice_poker_env.solver.turn import turn_decisions, widget

#: keeps an env keep action can reach (0..4 dice); the turn cache stores only these
_N_PROPER_KEEPS = int(KEEP_START[N_DICE])
#: (252, 31) the proper keep of each keep action (0..30) of each roll
_KEEP_OF_ACTION_PROPER = np.ascontiguousarray(KEEP_OF_ACTION[:, :KEEP_ALL], dtype=np.int64)


def _huge_zeros(shape: tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
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


#: ``(filled, upper, full, roll, rolls_left, points so far)`` of a batch of situations, as arrays (the
#: points are ``None`` where not asked for)
Situation = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


class SolverError(ValueError):
    """A query the solution cannot answer (finished game, unreachable or malformed position)."""


class SolveTooLargeError(SolverError, MemoryError):
    """A solve would need more memory than the machine has (estimated before allocating).

    Both a :class:`SolverError` (so a ``ValueError``) and a ``MemoryError``; the
    message gives the estimate (:func:`~dice_poker_env.solver.budget.estimate`).
    ``solve(..., force=True)`` (``dice-poker solve --force``) tries anyway.
    """


#: keys of an env dict observation the solver reads (``turn`` is checked when present)
_OBSERVATION_KEYS = ("dice", "rolls_left", "filled", "scores", "upper_total", "bonus", "five_kind_box")


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

    def __init__(
        self,
        rules: Rules,
        dp: DPResult,
        *,
        seconds: float = 0.0,
        from_cache: bool = False,
        turn_cache_size: int = 131072,
    ):
        self.rules = rules
        self.tables = compile_rules(rules)
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
        # the engine's possible points of each box (tables.possible_scores), as a flat
        # lookup: _possible_points[_possible_row[k] + points - min_box_score]
        span = self.tables.max_box_score - self.tables.min_box_score + 1
        table = np.zeros((self.tables.n_boxes, span), dtype=bool)
        for k, values in enumerate(self.tables.possible_scores):
            table[k, np.asarray(values, dtype=np.int64) - self.tables.min_box_score] = True
        self._possible_points = table.reshape(-1)
        self._possible_row = np.arange(self.tables.n_boxes, dtype=np.int64) * span
        self._possible_sets = tuple(frozenset(int(v) for v in values) for values in self.tables.possible_scores)
        self._upper_boxes = [int(k) for k in np.flatnonzero(self.tables.is_upper)]
        self._upper_weights = self.tables.is_upper.astype(np.int64)

    def __repr__(self) -> str:
        return (
            f"Solution({self.rules.label()}, expected_score={self.expected_score:.6f}, "
            f"score_std={self.score_std:.4f}, n_states={self.n_states})"
        )

    # ------------------------------------------------------------ positions
    def _positions(self, filled: npt.ArrayLike, upper: npt.ArrayLike, full: npt.ArrayLike) -> np.ndarray:
        """Positions in the value arrays of (non-canonical) between-turn states."""
        filled = np.asarray(filled, dtype=np.int64)
        if np.any((filled < 0) | (filled > self.tables.all_bits)):
            raise SolverError(
                f"filled: box bitmasks must be in 0..{self.tables.all_bits} ({self.tables.n_boxes} boxes)"
            )
        if np.any(self.tables.popcount(filled) >= self.tables.turns):
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
        scorecard, pass them here). Both are validated like ``env.reset(options=...)``
        (:func:`~dice_poker_env.engine.position.make_position`, which raises
        :class:`~dice_poker_env.engine.position.PositionError`); a finished game
        (every turn played) is rejected the same way.
        """
        state = make_position(self.tables, scorecard, None, None, bonus, random_roll=0)
        filled, scores = int(state.filled), np.asarray(state.scores)
        full = self._box_full(filled, scores)
        done = int(scores.sum()) + int(state.bonus)
        return done + float(self.value[self._positions(filled, int(state.upper_total), full)])

    def _box_full(self, filled: int, scores: np.ndarray) -> bool:
        """The state's five-of-a-kind flag: the engine's rule, where the state space tracks it."""
        return bool(self.space.n_full == 2 and five_kind_box_full(self.tables.one_game, filled, scores))

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

    def _fill_chunk(self, part: np.ndarray, tables: TurnTables) -> None:
        """Solve the turns of the positions ``part`` from their score tables and store them."""
        S0, S2, B0, B2, center = tables
        K1, K2 = widget(S0)
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

    def best_actions(
        self,
        filled: npt.ArrayLike,
        upper: npt.ArrayLike,
        full: npt.ArrayLike,
        roll: npt.ArrayLike,
        rolls_left: npt.ArrayLike,
    ) -> np.ndarray:
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
        _check_turn(roll, rolls_left)
        full = np.atleast_1d(np.asarray(full, dtype=bool)) & (self.space.n_full == 2)
        pos = self._positions(filled, upper, full)
        slots = self._decision_slots(pos)
        at = (slots * ROLLS_PER_TURN + rolls_left) * N_ROLLS + roll
        return self._act.reshape(-1).take(at).astype(np.int64)

    # ------------------------------------------------------------ queries
    def future_action_values(
        self,
        filled: npt.ArrayLike,
        upper: npt.ArrayLike,
        full: npt.ArrayLike,
        roll: npt.ArrayLike,
        rolls_left: npt.ArrayLike,
    ) -> np.ndarray:
        """Expected points still to come after each action, batched; ``-inf`` where illegal.

        Args:
            filled: filled-box bitmask of each game's between-turn state, shape ``(B,)``.
            upper: upper total of each game, shape ``(B,)``.
            full: whether each game's five-of-a-kind box holds points, shape ``(B,)``.
            roll: roll index of the current dice.
            rolls_left: rerolls left (0..2).

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
        _check_turn(roll, rolls_left)
        pos = self._positions(filled, upper, full)
        batch = len(filled)
        q = np.full((batch, N_KEEP_ACTIONS + n), -np.inf)
        # score actions: points + bonus now, plus the value of the next state
        boxes = np.arange(n)[None, :]

        def col(a: np.ndarray) -> np.ndarray:
            return a[:, None]

        legal = (np.asarray(legal_boxes(tables, col(filled), col(full), col(roll))) >> boxes) & 1
        points, bonus, new_upper = score_points(
            tables, col(filled), col(upper), col(full), col(roll), col(rolls_left == ROLLS_PER_TURN - 1), boxes
        )
        new_filled = col(filled) | (1 << boxes)
        new_full = self.space.next_full(col(full), boxes, points)
        done = tables.popcount(new_filled) >= tables.turns
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
        assert points is not None  # _situation gives the points so far unless points=False
        q = self.future_action_values(filled, upper, full, roll, rolls_left) + points[:, None]
        return q if batched else q[0]

    def best_action(self, observation: Mapping[str, Any]) -> int | np.ndarray:
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
        return action_items(self.rules.box_names, int(situation[3][0]), q, "value")

    def _situation(self, observation: Mapping[str, Any], *, points: bool = True) -> tuple[Situation, bool]:
        """``((filled, upper, full, roll, rolls_left, points_so_far), batched)`` as arrays.

        ``points=False`` skips the points so far (``None``) and the check of the
        bonus: :meth:`best_actions` needs neither. Every input is validated
        (:meth:`_decode_observation` for env observations,
        :func:`~dice_poker_env.engine.position.make_position` for scorecards).
        """
        if not isinstance(observation, Mapping):
            raise SolverError(
                "observation must be a dict: an env observation (obs_mode='dict') or "
                "{'scorecard': ..., 'dice': ..., 'rolls_left': ...}"
            )
        if "filled" in observation:
            return self._decode_observation(observation, points)
        known = set(POSITION_KEYS)
        if not set(observation) <= known or "dice" not in observation:
            raise SolverError(
                "observation: expected an env dict observation (keys dice, rolls_left, filled, scores, "
                f"upper_total, bonus, five_kind_box) or keys {sorted(known)} with 'dice'; got {sorted(observation)}"
            )
        state = make_position(
            self.tables,
            observation.get("scorecard"),
            observation.get("dice"),
            observation.get("rolls_left"),
            observation.get("bonus"),
        )
        filled = np.atleast_1d(np.asarray(state.filled, dtype=np.int64))
        scores = np.asarray(state.scores).reshape(1, -1)
        full = np.array([self._box_full(int(filled[0]), scores[0])])
        so_far = np.atleast_1d(np.asarray(scores.sum() + np.asarray(state.bonus).sum(), dtype=np.float64))
        return (
            filled,
            np.atleast_1d(np.asarray(state.upper_total, dtype=np.int64)),
            full,
            np.atleast_1d(np.asarray(state.roll, dtype=np.int64)),
            np.atleast_1d(np.asarray(state.rolls_left, dtype=np.int64)),
            so_far,
        ), False

    def _decode_observation(self, observation: Mapping[str, Any], points: bool) -> tuple[Situation, bool]:
        """Decode and validate an env dict observation (one game, or a batch with a leading axis).

        With ``points`` (every public query) it is checked as strictly as
        ``env.reset(options=...)`` checks a position: the engine's position rules
        (dice 1..6, rolls left 0..2, points each box can hold, sections in order,
        game not over, the bonus) through
        :func:`~dice_poker_env.engine.position.make_position`, which raises its
        :class:`~dice_poker_env.engine.position.PositionError`; and the fields an
        observation derives from the scorecard (open boxes hold 0, ``upper_total``,
        ``five_kind_box``, ``turn``) against it, with a :class:`SolverError`.
        The checks are vectorized (the bonus by the engine's batched
        :func:`~dice_poker_env.engine.position.bonus_possible`): only rows that fail
        one reach the engine one by one, for its message.

        Without ``points`` (the optimal agent's fast path, which reads neither the
        scores nor the bonus) the fields the decision reads are checked: shapes,
        integers, dice, rolls left, filled flags, ``five_kind_box``, game not
        over; the state must be reachable (:meth:`_positions`).

        Decoding takes one float matrix product for the filled boxes (exact:
        flags are 0/1 and the sum stays below 2**24) and one product and lookup
        for the roll (:func:`~dice_poker_env.engine.combinatorics.roll_index_of_faces`).
        """
        tables = self.tables
        n = tables.n_boxes
        missing = [key for key in _OBSERVATION_KEYS if key not in observation]
        if missing:
            raise SolverError(f"observation: an env dict observation needs the key(s) {', '.join(missing)}")
        flags = _integers(observation, "filled", allow_bool=True)
        if flags.ndim not in (1, 2) or flags.shape[-1] != n:
            raise SolverError(
                f"observation['filled']: expected shape ({n},) or (batch, {n}) ({self.rules.name} has {n} boxes: "
                f"an observation of other rules?), got {flags.shape}"
            )
        batched = flags.ndim == 2
        if not batched:
            return self._decode_one(observation, flags.tolist(), points), False
        size = flags.shape[0]
        dice = _rows(observation, "dice", size, N_DICE, batched)
        rolls_left = _column(observation, "rolls_left", size)
        five = _column(observation, "five_kind_box", size)
        upper = _column(observation, "upper_total", size)

        def where(i: object) -> str:
            return f"observation[{i}]" if batched else "observation"

        if size and (flags.min() < 0 or flags.max() > 1):
            i = int(np.flatnonzero(((flags < 0) | (flags > 1)).any(axis=1))[0])
            raise SolverError(f"{where(i)}: 'filled' flags must be 0 or 1, got {flags[i].tolist()}")
        bit_values = (1 << np.arange(n)).astype(np.float32 if n <= 24 else np.float64)
        filled = (flags @ bit_values).astype(np.int64)
        scores: np.ndarray | None
        bonus: np.ndarray | None
        if not points:
            scores = bonus = None
            over = (
                tables.popcount(filled) >= tables.turns
                if size and tables.popcount(filled).max() >= tables.turns
                else None
            )
            broken, bonus_rows = (
                _either(_outside(dice, 1, N_FACES), _outside(rolls_left, 0, ROLLS_PER_TURN - 1), over),
                None,
            )
        else:
            scores = _rows(observation, "scores", size, n, batched)
            bonus = _column(observation, "bonus", size)
            upper_of = scores @ self._upper_weights  # the upper total the scorecard gives
            broken, bonus_rows = self._broken_rows(filled, dice, rolls_left, scores, bonus, upper_of)
        engine_rows = _either(broken, bonus_rows)
        for row in np.flatnonzero(engine_rows) if engine_rows is not None else ():
            self._engine_check(row, flags, dice, rolls_left, scores, bonus, where, batched)
            if (
                broken is not None and broken[row]
            ):  # the engine accepted what the rules above reject: refuse all the same
                raise SolverError(f"{where(row)}: not a position of these rules")
        # the fields derived from the scorecard
        derived: list[tuple[str, np.ndarray, np.ndarray | None]] = [("five_kind_box", five, None)]
        if points:
            assert scores is not None  # read above with the points
            if size and np.any((scores != 0) > flags):
                i = int(np.flatnonzero(((scores != 0) > flags).any(axis=1))[0])
                k = int(np.flatnonzero((scores[i] != 0) > flags[i])[0])
                raise SolverError(
                    f"{where(i)}: box {tables.rules.box_names[k]!r} is open but 'scores' holds {scores[i, k]} points there"
                )
            derived = [("upper_total", upper, upper_of), ("five_kind_box", five, self._five_kind_code(filled, scores))]
        if "turn" in observation:
            derived.append(("turn", _column(observation, "turn", size), tables.popcount(filled)))
        for key, given, expected in derived:
            if expected is None:  # without the scores: the code must agree with the filled flag
                k = tables.five_kind_box
                box_filled = (filled >> k) & 1 if k >= 0 else np.zeros(size, dtype=np.int64)
                bad = np.flatnonzero(
                    (given < 0) | (given > 2) | ((given > 0) != (box_filled == 1)) | ((given == 2) & (k < 0))
                )
                if len(bad):
                    raise SolverError(
                        f"{where(bad[0])}: 'five_kind_box' is {given[bad[0]]}, which does not fit the filled boxes"
                    )
                continue
            bad = np.flatnonzero(given != expected)
            if len(bad):
                i = bad[0]
                raise SolverError(f"{where(i)}: {key!r} is {given[i]}, but the scorecard gives {expected[i]}")
        roll = roll_index_of_faces(dice)
        so_far = None
        if points:
            assert scores is not None and bonus is not None  # read above with the points
            so_far = scores.sum(axis=1) + bonus.astype(np.float64)
        return (filled, upper, five == 2, roll, rolls_left, so_far), batched

    def _decode_one(self, observation: Mapping[str, Any], flags: list[int], points: bool) -> Situation:
        """One game's observation (see :meth:`_decode_observation`), checked in plain Python:
        with ``points`` the engine's :func:`make_position` sees the position itself."""
        tables = self.tables
        if any(f != 0 and f != 1 for f in flags):
            raise SolverError(f"observation: 'filled' flags must be 0 or 1, got {flags}")
        dice = _rows(observation, "dice", 1, N_DICE, False)[0].tolist()
        rolls_left, five, upper = (
            int(_column(observation, key, 1)[0]) for key in ("rolls_left", "five_kind_box", "upper_total")
        )
        filled = sum(1 << k for k, f in enumerate(flags) if f)
        so_far = None
        if points:
            scores = _rows(observation, "scores", 1, tables.n_boxes, False)[0].tolist()
            bonus = int(_column(observation, "bonus", 1)[0])
            names = tables.rules.box_names
            for k, f in enumerate(flags):
                if not f and scores[k]:
                    raise SolverError(
                        f"observation: box {names[k]!r} is open but 'scores' holds {scores[k]} points there"
                    )
            upper_of = sum(scores[k] for k in self._upper_boxes)
            possible = self._possible_sets
            fine = (
                all(1 <= d <= N_FACES for d in dice)
                and 0 <= rolls_left < ROLLS_PER_TURN
                and all(score in possible[k] for k, score in enumerate(scores))  # open boxes hold 0: possible
                and filled.bit_count() < tables.turns
                and not (
                    tables.sections_in_order
                    and filled & tables.lower_bits
                    and filled & tables.upper_bits != tables.upper_bits
                )
            )
            if not fine or bonus != secured_upper_bonus(
                tables, filled, upper_of
            ):  # the engine decides (it owns the bonus rule)
                make_position(tables, {names[k]: scores[k] for k, f in enumerate(flags) if f}, dice, rolls_left, bonus)
                if not fine:  # the engine accepted what the rules above reject: refuse all the same
                    raise SolverError("observation: not a position of these rules")
            code = int(five_kind_box_state(tables.one_game, filled, np.asarray(scores)))
            derived = [("upper_total", upper, upper_of), ("five_kind_box", five, code)]
            so_far = np.array([sum(scores) + bonus], dtype=np.float64)
        else:
            if (
                not all(1 <= d <= N_FACES for d in dice)
                or not 0 <= rolls_left < ROLLS_PER_TURN
                or filled.bit_count() >= tables.turns
            ):
                make_position(tables, None, dice, rolls_left, None)  # the engine names the field
                raise SolverError(f"observation: the game is over ({filled.bit_count()} boxes filled)")
            k = tables.five_kind_box
            box_filled = k >= 0 and filled >> k & 1
            if five not in (0, 1, 2) or (five > 0) != bool(box_filled):
                raise SolverError(f"observation: 'five_kind_box' is {five}, which does not fit the filled boxes")
            derived = []
        if "turn" in observation:
            derived.append(("turn", int(_column(observation, "turn", 1)[0]), filled.bit_count()))
        for key, given, expected in derived:
            if given != expected:
                raise SolverError(f"observation: {key!r} is {given}, but the scorecard gives {expected}")

        def column(v: npt.ArrayLike) -> np.ndarray:
            return np.array([v], dtype=np.int64)

        return (
            column(filled),
            column(upper),
            np.array([five == 2]),
            column(roll_index_of_faces(np.array(dice))),
            column(rolls_left),
            so_far,
        )

    def _broken_rows(
        self,
        filled: np.ndarray,
        dice: np.ndarray,
        rolls_left: np.ndarray,
        scores: np.ndarray,
        bonus: np.ndarray,
        upper_of: np.ndarray,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The rows the engine must see: ``(rows that break a position rule, rows whose bonus is
        not the secured upper bonus)``, ``None`` for none (global reductions first: cheap when all is well)."""
        tables = self.tables
        lo, hi = tables.min_box_score, tables.max_box_score
        broken = _either(
            _outside(dice, 1, N_FACES), _outside(rolls_left, 0, ROLLS_PER_TURN - 1), _outside(bonus, 0, None)
        )
        outside = _outside(scores, lo, hi)
        if outside is not None:
            return _either(broken, outside), None
        possible = self._possible_points.take(scores + (self._possible_row - lo))  # open boxes hold 0: always possible
        if not possible.all():
            broken = _either(broken, ~cast(np.ndarray, possible.all(axis=1)))  # 2-D: an array
        count = tables.popcount(filled)
        if len(count) and count.max() >= tables.turns:
            broken = _either(broken, count >= tables.turns)
        if tables.sections_in_order:
            early = ((filled & tables.lower_bits) != 0) & ((filled & tables.upper_bits) != tables.upper_bits)
            if early.any():
                broken = _either(broken, early)
        if broken is not None:
            return broken, None
        # the engine owns the bonus rule: its batched test passes the rows with more than the secured upper
        # bonus (five-of-a-kind bonuses); a row it refuses goes to the engine's make_position for the message
        other = bonus != secured_upper_bonus(tables, filled, upper_of)
        if other.any():
            rows = np.flatnonzero(other)
            other[rows[bonus_possible(tables, filled[rows], scores[rows], bonus[rows])]] = False
        return None, (other if other.any() else None)

    def _engine_check(
        self,
        i: int | np.integer[Any],
        flags: np.ndarray,
        dice: np.ndarray,
        rolls_left: np.ndarray,
        scores: np.ndarray | None,
        bonus: np.ndarray | None,
        where: Callable[[Any], str],
        batched: bool,
    ) -> None:
        """Row ``i`` through the engine's :func:`make_position` (its ``PositionError``, naming the row)."""
        names = self.tables.rules.box_names
        card = {names[k]: int(scores[i, k]) for k in np.flatnonzero(flags[i])} if scores is not None else None
        try:
            make_position(
                self.tables,
                card,
                [int(d) for d in dice[i]],
                int(rolls_left[i]),
                None if bonus is None else int(bonus[i]),
            )
        except PositionError as error:
            raise PositionError(f"{where(i)}: {error}" if batched else str(error)) from None

    def _five_kind_code(self, filled: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The observation's ``five_kind_box`` code of each row: 0 open or no such box, 1 scratched, 2 holds points."""
        return five_kind_box_state(self.tables, filled, scores)

    # -------------------------------------------------------------- storage
    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"keys": self.keys, "layer_start": self.layer_start, "value": self.value, "value2": self.value2}


def action_items(box_names: list[str] | tuple[str, ...], roll: int, q: np.ndarray, key: str) -> list[dict[str, Any]]:
    """The distinct legal actions of a roll, best first: ``{"action", "kind": "keep"|"score", "keep": [dice kept]
    or "box": name, key: q[action]}`` for the finite entries of ``q`` (env action order); keeps that hold
    the same dice are listed once (the lowest bitmask)."""
    seen = set()
    items: list[dict[str, Any]] = []
    for index in np.flatnonzero(np.isfinite(q)):
        a = int(index)
        if a < N_KEEP_ACTIONS:
            keep = int(KEEP_OF_ACTION[roll, a])
            if keep in seen:
                continue
            seen.add(keep)
            dice = [int(d) for d in kept_dice(ROLL_DICE[roll], a)]
            items.append({"action": a, "kind": "keep", "keep": dice, key: float(q[a])})
        else:
            items.append({"action": a, "kind": "score", "box": box_names[a - N_KEEP_ACTIONS], key: float(q[a])})
    items.sort(key=lambda item: -item[key])
    return items


def _check_turn(roll: np.ndarray, rolls_left: np.ndarray) -> None:
    """Roll indices 0..251 and rolls left 0..2, or a :class:`SolverError`."""
    if np.any((rolls_left < 0) | (rolls_left >= ROLLS_PER_TURN)):
        raise SolverError(f"rolls_left must be 0..{ROLLS_PER_TURN - 1}")
    if np.any((roll < 0) | (roll >= N_ROLLS)):
        raise SolverError(f"roll: roll indices must be 0..{N_ROLLS - 1}")


def _outside(values: np.ndarray, low: int, high: int | None) -> np.ndarray | None:
    """Per row, whether any of ``values`` (``(B,)`` or ``(B, k)``) is outside ``low..high``;
    ``None`` when none is (decided by two reductions)."""
    if not values.size or (values.min() >= low and (high is None or values.max() <= high)):
        return None
    bad = (values < low) | ((values > high) if high is not None else False)
    # (NumPy's stubs type a comparison or .any(axis=...) as "bool scalar or array": here they are arrays)
    return cast(np.ndarray, bad.any(axis=1) if bad.ndim == 2 else bad)


def _either(*rows: np.ndarray | None) -> np.ndarray | None:
    """The rows flagged in any of ``rows`` (``None`` entries flag none); ``None`` when none is given."""
    given = [r for r in rows if r is not None]
    return np.logical_or.reduce(given) if given else None


def _has_bool(value: Any) -> bool:
    """Whether a (nested) list or tuple holds a bool (``np.asarray`` would turn it into 0 or 1)."""
    return any(isinstance(x, (bool, np.bool_)) or (isinstance(x, (list, tuple)) and _has_bool(x)) for x in value)


def _integers(observation: Mapping[str, Any], key: str, *, allow_bool: bool = False) -> np.ndarray:
    """``observation[key]`` as an int64 array; a :class:`SolverError` unless it holds integers."""
    value = observation[key]
    if not allow_bool and isinstance(value, (list, tuple)) and _has_bool(value):
        raise SolverError(f"observation[{key!r}]: expected integers, got booleans in {value!r}")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as error:  # ragged lists
        raise SolverError(f"observation[{key!r}]: expected an array of integers ({error})") from None
    kind = array.dtype.kind
    if kind == "i":
        return array  # any width: compared as is, widened where summed
    if kind == "b" and allow_bool:
        return array.view(np.int8)
    if kind == "u":
        if array.size and array.dtype.itemsize == 8 and int(array.max()) > np.iinfo(np.int64).max:
            raise SolverError(f"observation[{key!r}]: {int(array.max())} is out of range")
        return array.astype(np.int64)
    text = repr(value)
    raise SolverError(f"observation[{key!r}]: expected integers, got {array.dtype} {text[:80]}")


def _rows(observation: Mapping[str, Any], key: str, size: int, width: int, batched: bool) -> np.ndarray:
    """``observation[key]``, one row of ``width`` integers per game, as ``(size, width)``."""
    array = _integers(observation, key)
    expected = (size, width) if batched else (width,)
    if array.shape != expected:
        raise SolverError(f"observation[{key!r}]: expected shape {expected}, got {array.shape}")
    return array.reshape(size, width)


def _column(observation: Mapping[str, Any], key: str, size: int) -> np.ndarray:
    """``observation[key]``, one integer per game (shape ``()``, ``(1,)``, ``(B,)`` or ``(B, 1)``), as ``(size,)``."""
    array = _integers(observation, key)
    if array.size != size or array.ndim > 2 or (array.ndim == 2 and array.shape[1] != 1):
        raise SolverError(f"observation[{key!r}]: expected one integer per game ({size}), got shape {array.shape}")
    return array.reshape(size)


#: a solve estimated longer than this many seconds says so before it starts, and shows its progress
LONG_SOLVE_SECONDS = 10.0
#: seconds between two progress lines of a long solve when stderr is not a terminal (or without tqdm)
PROGRESS_LINE_SECONDS = 15.0


class _ProgressLines:
    """A tqdm-like progress (``reset(total=)``, ``update(n)``, ``close()``) printing a line on stderr at most
    every :data:`PROGRESS_LINE_SECONDS`: for logs, pipes and machines without tqdm."""

    PHASES = ("finding the reachable states", "valuing the states")

    def __init__(self, rules: Rules, phases: tuple[str, ...] | None = None):
        self.name, self.phase, self.total, self.done = rules.name, -1, 1, 0
        self.phases = phases or self.PHASES
        self.start = self.last = time.perf_counter()

    def reset(self, total: int | None = None) -> None:
        self.phase, self.total, self.done = self.phase + 1, max(int(total or 1), 1), 0

    def update(self, n: int = 1) -> None:
        self.done += int(n)
        now = time.perf_counter()
        if now - self.last >= PROGRESS_LINE_SECONDS:
            self.last = now
            what = self.phases[min(max(self.phase, 0), len(self.phases) - 1)]
            print(
                f"solving {self.name}: {what}, {100.0 * self.done / self.total:.0f}% ({now - self.start:.0f} s)",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        pass


def _progress_bar(
    rules: Rules,
    enabled: bool | None,
    long: bool = False,
    *,
    what: str = "",
    unit: str = "state",
    phases: tuple[str, ...] | None = None,
) -> Any:  # tqdm (untyped), lines or None
    """A tqdm bar on a terminal, else progress lines for a long solve; ``None`` when there is no progress to
    show (``enabled`` False, or None for a short solve off a terminal). ``what`` names the table (``"the reach
    table of "``), ``unit`` what is counted, ``phases`` the phases' names in the lines."""
    if enabled is None:
        enabled = sys.stderr.isatty() or long
    if not enabled:
        return None
    if sys.stderr.isatty():
        try:
            from tqdm.auto import tqdm
        except ModuleNotFoundError:  # optional dependency
            pass
        else:
            return tqdm(
                total=1, desc=f"solving {what}{rules.name}", unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True
            )
    return _ProgressLines(rules, phases) if long else None


def _resolve_workers(workers: int | None) -> int:
    """The worker processes of a solve: ``workers``, else ``$DICE_POKER_SOLVER_WORKERS``, else
    :func:`~dice_poker_env.solver.backward.default_workers`; a :class:`SolverError` unless an integer from 1 to
    :data:`~dice_poker_env.solver.backward.MAX_WORKERS`."""
    if workers is None:
        try:
            return default_workers()  # (the one reader of $DICE_POKER_SOLVER_WORKERS)
        except ValueError as error:
            raise SolverError(str(error)) from None
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or not 1 <= workers <= MAX_WORKERS:
        raise SolverError(f"workers must be an integer from 1 to {MAX_WORKERS}, got {workers!r}")
    return int(workers)


def solve(
    rules: str | os.PathLike[str] | Rules = "yahtzee",
    *,
    cache: bool = True,
    progress: bool | None = None,
    workers: int | None = None,
    force: bool = False,
    **options: Any,
) -> Solution:
    """Solve a ruleset exactly (or load its solution from the disk cache).

    Before solving, the memory and time the solve needs are estimated from the
    rules alone (:func:`~dice_poker_env.solver.budget.estimate`); if the memory
    exceeds what the machine has available, nothing is allocated and
    :class:`SolveTooLargeError` (a ``MemoryError``) is raised with the estimate.

    Args:
        rules: ruleset name, rules-file path or :class:`Rules`.
        cache: read and write the disk cache (:mod:`dice_poker_env.solver.cache`:
            ``$DICE_POKER_CACHE``, default ``~/.cache/dice_poker_env``). A cache
            file that fails any check is reported with a
            :class:`~dice_poker_env.solver.CacheWarning` and rebuilt.
        progress: show the progress on stderr: a tqdm bar on a terminal, else (for a solve estimated longer
            than :data:`LONG_SOLVE_SECONDS`) a line every :data:`PROGRESS_LINE_SECONDS`; default: on a
            terminal, and for every long solve. A long solve always prints its estimate (states, memory,
            time) on stderr before it starts.
        workers: processes sharing the work, a positive integer (default
            ``$DICE_POKER_SOLVER_WORKERS``, else 2).
        force: solve even when the estimate exceeds the available memory.
        **options: rules options, e.g. ``joker="free"``.

    Returns:
        The :class:`Solution`.

    Raises:
        SolveTooLargeError: the solve would not fit in memory (and ``force`` is false),
            or it ran out of memory.
        SolverError: ``workers`` (or ``$DICE_POKER_SOLVER_WORKERS``) is not a positive integer.
    """
    rules = load_rules(rules, **options)
    tables = compile_rules(rules)  # (a RulesError for rules only the tables show inconsistent)
    workers = _resolve_workers(workers)
    start = time.perf_counter()
    path = disk.cache_path(rules.name, rules.fingerprint)
    if cache:
        build = lambda *cached: _from_cache(rules, *cached, seconds=time.perf_counter() - start)  # noqa: E731
        solution = disk.load_as(path, build, "solver cache")
        if solution is not None:
            return solution
    estimate = budget.estimate(tables, workers)
    available = budget.available_memory()
    if not force and available is not None and estimate.memory_bytes > available:
        raise SolveTooLargeError(
            f"solving {estimate.describe()}, but only {budget.format_bytes(available)} is available; "
            "use fewer boxes, or force it (solve(..., force=True), dice-poker solve --force)"
        )
    long = estimate.seconds > LONG_SOLVE_SECONDS
    if long:  # speak before a long silence
        print(
            f"solving {estimate.describe()} (an estimate; the solution is then "
            f"{'cached' if cache else 'not cached: cache=False'})",
            file=sys.stderr,
            flush=True,
        )
    bar = _progress_bar(rules, progress, long)
    try:
        dp = solve_dp(tables, progress=bar, workers=workers)
    except MemoryError as error:
        raise SolveTooLargeError(
            f"solving {estimate.describe()} ran out of memory ({str(error) or 'MemoryError'})"
        ) from error
    finally:
        if bar is not None:
            bar.close()
    solution = Solution(rules, dp, seconds=time.perf_counter() - start)
    if cache:
        meta = {
            "fingerprint": rules.fingerprint,
            "rules": rules.name,
            "options": {k: str(v) for k, v in rules.options.items()},
            "expected_score": solution.expected_score,
            "solve_seconds": solution.seconds,
        }
        try:
            disk.save(path, solution.to_arrays(), meta)
        except OSError as error:
            warnings.warn(f"could not write the solver cache {path}: {error}", disk.CacheWarning, stacklevel=2)
    return solution


def cached(rules: str | os.PathLike[str] | Rules = "yahtzee", **options: Any) -> Solution | None:
    """The solution of ``rules`` from the disk cache, or ``None`` if it holds none (or an unusable file,
    reported with a :class:`~dice_poker_env.solver.CacheWarning`); never solves."""
    rules = load_rules(rules, **options)
    start = time.perf_counter()
    path = disk.cache_path(rules.name, rules.fingerprint)
    build = lambda *cached: _from_cache(rules, *cached, seconds=time.perf_counter() - start)  # noqa: E731
    return disk.load_as(path, build, "solver cache", then="not used")


#: the arrays of a cached solution and their dtypes
_CACHED_ARRAYS = {
    "keys": np.dtype(np.int64),
    "layer_start": np.dtype(np.int64),
    "value": np.dtype(np.float64),
    "value2": np.dtype(np.float64),
}


def check_cached_states(tables: RuleTables, keys: np.ndarray, layer_start: np.ndarray) -> None:
    """A ``ValueError`` unless a cache file's ``keys`` (non-empty, one dimension) and ``layer_start`` are the
    sorted states of their layers: layers that partition the keys, keys inside the state space whose filled
    boxes match their layer, sorted within each layer."""
    if (
        layer_start.shape != (tables.turns + 2,)
        or layer_start[0] != 0
        or layer_start[-1] != len(keys)
        or np.any(np.diff(layer_start) < 0)
    ):
        raise ValueError("layers do not partition the states")
    n_masks, n_slots, n_full = budget.space_shape(tables)
    if keys.min() < 0 or keys.max() >= n_masks * n_slots * n_full:
        raise ValueError("state keys outside the state space")
    layer = np.repeat(np.arange(tables.turns + 1), np.diff(layer_start))
    if np.any(tables.popcount(keys // (n_slots * n_full)) != layer) or np.any(
        (np.diff(keys) <= 0) & (np.diff(layer) == 0)
    ):
        raise ValueError("state keys are not the sorted states of their layers")


def _from_cache(rules: Rules, arrays: dict[str, np.ndarray], meta: dict[str, Any], *, seconds: float) -> Solution:
    """The :class:`Solution` of a cache file's arrays, after checking they fit ``rules``.

    The file's checksum already covers every byte; this is the second line of
    defence (a ``ValueError`` naming what does not fit): the fingerprint, the
    arrays' names, dtypes and shapes, layers that partition sorted keys whose
    filled boxes match the layer, keys inside the state space, finite values.
    """
    tables = compile_rules(rules)
    if meta.get("fingerprint") != rules.fingerprint:
        raise ValueError("it belongs to other rules")
    if set(arrays) != set(_CACHED_ARRAYS) or any(arrays[k].dtype != d for k, d in _CACHED_ARRAYS.items()):
        raise ValueError(f"arrays {sorted((k, str(a.dtype)) for k, a in arrays.items())}")
    keys, layer_start, value, value2 = (arrays[k] for k in ("keys", "layer_start", "value", "value2"))
    n_states = len(keys)
    if keys.ndim != 1 or n_states == 0 or value.shape != keys.shape or value2.shape != keys.shape:
        raise ValueError("array shapes do not match")
    check_cached_states(tables, keys, layer_start)
    if not (np.all(np.isfinite(value)) and np.all(np.isfinite(value2))):
        raise ValueError("values are not finite")
    dp = DPResult(keys, layer_start, value, value2)
    return Solution(rules, dp, seconds=seconds, from_cache=True)
