"""Playing to win: the maximum probability of reaching a final score, its policy, and the final-score distribution.

>>> from dice_poker_env.solver.reach import solve_reach
>>> reach = solve_reach("yacht")                       # doctest: +SKIP
>>> round(reach.probability(200), 6)                   # doctest: +SKIP
0.239565
>>> reach.distribution.mean                            # doctest: +SKIP
169.77388905...

:func:`solve_reach` computes (or loads from the disk cache) the reach table of
a ruleset (:mod:`.reach_dp`): for every between-turn state and every target, the
largest probability any policy has of finishing with at least that final score;
and the exact final-score distribution of the expected-score-optimal policy (the
optimal agent's). :class:`Reach` answers the queries: the probability of a
target from a scorecard, and the probability each action of a turn keeps, which
is the policy that achieves the maximum (:meth:`Reach.best_action`).
See ``docs/winning.md``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_OF_ACTION, N_KEEP_ACTIONS, N_ROLLS
from dice_poker_env.engine.game import ROLLS_PER_TURN, five_kind_box_full, legal_boxes, score_points
from dice_poker_env.engine.position import playable_position
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.rules import Rules, load_rules
from dice_poker_env.solver import budget
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.reach_dp import ReachDPResult, solve_reach_dp
from dice_poker_env.solver.solution import (
    SolverError,
    SolveTooLargeError,
    action_items,
    check_cached_states,
    solve,
)
from dice_poker_env.solver.state_space import StateIndex, StateSpace
from dice_poker_env.solver.turn import widget

#: bump when the reach table's layout or meaning changes (its cache files are then rebuilt)
REACH_VERSION = 2
#: the quantiles ``dice-poker solve --distribution`` prints
QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
#: the arrays of a cached reach table and their dtypes
_ARRAYS = {
    "keys": np.dtype(np.int64),
    "layer_start": np.dtype(np.int64),
    "lo": np.dtype(np.int64),
    "offset": np.dtype(np.int64),
    "prob": np.dtype(np.float64),
    "policy": np.dtype(np.float64),
}


class ScoreDistribution:
    """A final-score distribution: ``pmf[i]`` is the probability of the score ``lowest + i``.

    Attributes:
        lowest: the least score the table covers.
        pmf: float64 probabilities (non-negative, summing to 1 up to rounding).
    """

    def __init__(self, lowest: int, pmf: np.ndarray) -> None:
        self.lowest = int(lowest)
        self.pmf = np.maximum(np.asarray(pmf, dtype=np.float64), 0.0)
        self.scores = np.arange(len(self.pmf), dtype=np.int64) + self.lowest

    def __repr__(self) -> str:
        possible = np.flatnonzero(self.pmf > 0)
        scores = f"{self.scores[possible[0]]}..{self.scores[possible[-1]]}" if len(possible) else "none"
        return f"ScoreDistribution(mean={self.mean:.6f}, std={self.std:.4f}, scores={scores})"

    @classmethod
    def from_reach(cls, lowest: int, at_least: np.ndarray) -> ScoreDistribution:
        """The distribution of ``P(score >= lowest + j) = at_least[j]`` (``at_least[-1]`` is 0)."""
        return cls(lowest, at_least[:-1] - at_least[1:])

    @property
    def mean(self) -> float:
        """The expected score."""
        return float(self.pmf @ self.scores)

    @property
    def std(self) -> float:
        """The standard deviation of the score."""
        centred = self.scores - self.mean
        return float(np.sqrt(self.pmf @ (centred * centred)))

    @property
    def median(self) -> int:
        """The least score ``x`` with ``P(score <= x) >= 1/2``."""
        return self.quantile(0.5)

    def quantile(self, q: float) -> int:
        """The least score ``x`` with ``P(score <= x) >= q`` (``0 <= q <= 1``; 0 and 1 give the lowest and the
        highest score of positive probability, however small)."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"a quantile must be in [0, 1], got {q}")
        possible = np.flatnonzero(self.pmf > 0)
        if q in (0.0, 1.0) and len(possible):
            return int(self.scores[possible[0 if q == 0.0 else -1]])
        cdf = np.cumsum(self.pmf)
        i = int(np.searchsorted(cdf, q * cdf[-1] * (1 - 1e-12)))
        return int(self.scores[min(i, len(self.scores) - 1)])

    def at_least(self, target: int) -> float:
        """``P(score >= target)`` of an integer ``target`` (a :class:`SolverError` otherwise, as for
        :meth:`Reach.probability`: ``169.5`` would be read as 169)."""
        return float(self.pmf[max(0, check_target(target) - self.lowest) :].sum())

    def table(self) -> list[dict[str, float]]:
        """``[{"score", "probability", "at_least"}]`` for every score of positive probability."""
        at_least = np.cumsum(self.pmf[::-1])[::-1]
        return [
            {"score": int(self.scores[i]), "probability": float(self.pmf[i]), "at_least": float(at_least[i])}
            for i in np.flatnonzero(self.pmf > 0)
        ]


class _PositionReader:
    """Positions of a ruleset's between-turn states (``keys``, in the layout of the solve) read from a user's
    position: what :class:`Reach` and :func:`final_score_range` share."""

    def __init__(self, rules: Rules, keys: np.ndarray, space: StateSpace | None = None) -> None:
        self.rules = rules
        self.space = StateSpace(compile_rules(rules)) if space is None else space
        self.tables = self.space.tables
        self.keys = keys
        self.index = StateIndex(self.space, keys)

    def _positions(self, filled: np.ndarray, upper: np.ndarray, full: np.ndarray) -> np.ndarray:
        """Positions of (non-canonical) states, a :class:`SolverError` where no game reaches one."""
        canonical = self.space.canonical_upper(filled, upper)
        pos = self.index(self.space.key(filled, canonical, full & (self.space.n_full == 2)))
        if np.any(pos < 0):
            raise SolverError("position is not reachable under these rules (check the scorecard)")
        return pos

    def _state(self, situation: Mapping[str, Any], *, turn: bool) -> tuple[int, int, bool, int, int, int]:
        """``(filled, upper, full, roll, rolls_left, points so far)`` of a position, validated by the engine."""
        known = {"scorecard", "dice", "rolls_left", "bonus"}
        if isinstance(situation, Mapping) and "filled" in situation and "scores" in situation:
            situation = self._position_of_observation(situation)  # an env observation (obs_mode="dict")
        if not isinstance(situation, Mapping):
            raise SolverError(f"a position is a dict with keys among {sorted(known)}, got {type(situation).__name__}")
        unknown = sorted(map(str, set(situation) - known))
        if unknown:
            raise SolverError(f"a position is a dict with keys among {sorted(known)}; unknown key(s): {unknown}")
        if turn and "dice" not in situation:
            raise SolverError("a position inside a turn needs its 'dice'")
        state = playable_position(
            self.tables,
            situation.get("scorecard"),
            situation.get("dice") if turn else None,
            situation.get("rolls_left") if turn else None,
            situation.get("bonus"),
        )
        filled, scores = int(state.filled), np.asarray(state.scores)
        full = bool(self.space.n_full == 2 and five_kind_box_full(self.tables.one_game, filled, scores))
        so_far = int(scores.sum()) + int(state.bonus)
        return filled, int(state.upper_total), full, int(state.roll), int(state.rolls_left), so_far

    def _position_of_observation(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """The position of a single env's dict observation (or a seat's of the multi-player env)."""
        filled = np.asarray(observation["filled"]).reshape(-1)
        scores = np.asarray(observation["scores"]).reshape(-1)
        if filled.shape != (self.rules.n_boxes,) or scores.shape != filled.shape:
            raise SolverError(f"observation: 'filled' and 'scores' must have {self.rules.n_boxes} entries each")
        scorecard = {name: int(scores[k]) for k, name in enumerate(self.rules.box_names) if filled[k]}
        bonus = np.asarray(observation.get("bonus", 0)).reshape(-1)
        return {
            "scorecard": scorecard,
            "dice": [int(d) for d in np.asarray(observation["dice"]).reshape(-1)],
            "rolls_left": int(np.asarray(observation["rolls_left"]).reshape(-1)[0]),
            "bonus": int(bonus[0]) if len(bonus) else 0,
        }


class Reach(_PositionReader):
    """The reach table of one ruleset: maximum probabilities of reaching final scores (see the module docstring).

    Every probability is of a *final* score: the points on the scorecard (written
    points plus the bonuses paid or secured) plus the rest of the game.

    Attributes:
        rules: the solved rules.
        distribution: the final-score distribution of the expected-score-optimal policy
            (:class:`ScoreDistribution`), ``None`` when it was not computed.
        policy_prob: that policy's table in the layout of ``prob`` (empty when not computed):
            per state and target, the probability that its rest from the state reaches the target
            (:meth:`policy_probabilities`, :meth:`rest_distribution`).
        max_score: the highest final score a game can reach.
        n_states: between-turn states; n_cells: stored (state, target) probabilities.
        seconds: wall time of the solve (or of loading it); from_cache: whether it was loaded.
    """

    def __init__(self, rules: Rules, dp: ReachDPResult, *, seconds: float = 0.0, from_cache: bool = False) -> None:
        super().__init__(rules, dp.keys)
        self.layer_start, self.lo, self.offset, self.prob = dp.layer_start, dp.lo, dp.offset, dp.prob
        self.width = np.diff(self.offset)
        self.policy_prob = dp.policy
        self.distribution = ScoreDistribution.from_reach(int(self.lo[0]), dp.policy_row(0)) if len(dp.policy) else None
        self.max_score = int(self.lo[0] + self.width[0] - 2)
        self.n_states = len(self.keys)
        self.n_cells = len(self.prob)
        self.seconds = float(seconds)
        self.from_cache = from_cache

    def __repr__(self) -> str:
        return f"Reach({self.rules.label()}, n_states={self.n_states}, n_cells={self.n_cells})"

    # ----------------------------------------------------------- lookups
    def state_probabilities(self, positions: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """``R(state, target)`` of states (positions in :attr:`keys`) and targets for the rest of the game
        (broadcasting): 1 at or below the least rest, 0 above the most."""
        positions = np.asarray(positions, dtype=np.int64)
        column = np.clip(np.asarray(targets, dtype=np.int64) - self.lo[positions], 0, self.width[positions] - 1)
        result: np.ndarray = self.prob[self.offset[positions] + column]
        return result

    def policy_probabilities(self, positions: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Like :meth:`state_probabilities`, for the expected-score-optimal policy: the probability that
        its rest from each state reaches each target (a :class:`SolverError` when it was not computed)."""
        if not len(self.policy_prob):
            raise SolverError("this reach table was solved without the expected-score policy (distribution=False)")
        positions = np.asarray(positions, dtype=np.int64)
        column = np.clip(np.asarray(targets, dtype=np.int64) - self.lo[positions], 0, self.width[positions] - 1)
        result: np.ndarray = self.policy_prob[self.offset[positions] + column]
        return result

    def rest_distribution(
        self, scorecard: Mapping[str, Any] | None = None, bonus: int | None = None
    ) -> ScoreDistribution:
        """The final-score distribution of the expected-score-optimal policy from a between-turn scorecard
        (the points already on it included): an opponent's, as the ``winning`` agent assumes it."""
        filled, upper, full, _, _, so_far = self._state({"scorecard": scorecard, "bonus": bonus}, turn=False)
        pos = int(self._positions(np.array([filled]), np.array([upper]), np.array([full]))[0])
        targets = np.arange(int(self.lo[pos]), int(self.lo[pos] + self.width[pos]))
        return ScoreDistribution.from_reach(
            int(self.lo[pos]) + so_far, self.policy_probabilities(np.full(len(targets), pos), targets)
        )

    # ----------------------------------------------------------- queries
    def probability(self, target: int, scorecard: Mapping[str, Any] | None = None, bonus: int | None = None) -> float:
        """The maximum probability of a final score of at least ``target`` from a between-turn scorecard
        (default: the empty one); ``bonus`` as for :meth:`Solution.state_value`."""
        target = check_target(target)
        filled, upper, full, _, _, so_far = self._state({"scorecard": scorecard, "bonus": bonus}, turn=False)
        pos = self._positions(np.array([filled]), np.array([upper]), np.array([full]))
        return float(self.state_probabilities(pos, np.array([target - so_far]))[0])

    def action_probabilities(self, situation: Mapping[str, Any], target: int) -> np.ndarray:
        """Per env action, the maximum probability of a final score of at least ``target`` after it.

        ``situation`` is ``{"scorecard": {...}, "dice": [...], "rolls_left": r, "bonus": b}`` (validated
        like ``env.reset(options=...)``). Returns ``(32 + n_boxes,)`` indexed like the env's actions,
        ``-inf`` where illegal (keep-all, 31, always). The best of them is the turn's reach
        probability; :meth:`best_action` plays it.
        """
        target = check_target(target)
        filled, upper, full, roll, rolls_left, so_far = self._state(situation, turn=True)
        rest = target - so_far
        q = np.full(N_KEEP_ACTIONS + self.tables.n_boxes, -np.inf)
        score_last = self._score_values(filled, upper, full, rest, first=False)
        now = (
            self._score_values(filled, upper, full, rest, first=True)
            if rolls_left == ROLLS_PER_TURN - 1
            else score_last
        )
        legal = now[roll] > -np.inf
        q[N_KEEP_ACTIONS:][legal] = now[roll][legal]
        if rolls_left > 0:
            one_left, two_left = widget(score_last.max(axis=1, keepdims=True))
            keeps = (two_left if rolls_left == 2 else one_left)[:, 0]
            q[: N_KEEP_ACTIONS - 1] = keeps[KEEP_OF_ACTION[roll, : N_KEEP_ACTIONS - 1]]
        return q

    def _score_values(self, filled: int, upper: int, full: bool, rest: int, *, first: bool) -> np.ndarray:
        """``(252, n_boxes)`` reach probability of scoring each roll in each box (``-inf`` illegal), from the engine."""
        tables = self.tables
        rolls = np.arange(N_ROLLS)[:, None]
        boxes = np.arange(tables.n_boxes)[None, :]
        legal_bits = np.broadcast_to(np.asarray(legal_boxes(tables, filled, full, rolls), dtype=np.int64), rolls.shape)
        legal = ((legal_bits >> boxes) & 1) == 1
        points, bonus, new_upper = score_points(tables, filled, upper, full, rolls, first, boxes)
        new_filled = filled | (1 << boxes)
        new_full = self.space.next_full(full, boxes, points)
        shape = legal.shape
        key = self.space.key(new_filled, self.space.canonical_upper(new_filled, new_upper), new_full)
        pos = self.index(np.broadcast_to(key, shape))
        left = np.broadcast_to(rest - np.asarray(points + bonus, dtype=np.int64), shape)
        value = np.where(legal, self.state_probabilities(np.maximum(pos, 0), left), -np.inf)
        if np.any(legal & (pos < 0)):  # pragma: no cover - the forward pass finds every reachable state
            raise SolverError("reach table: a legal move leads to a state outside the table")
        return value

    def best_action(self, situation: Mapping[str, Any], target: int) -> int:
        """The action maximizing the probability of a final score of at least ``target`` (the first among equals)."""
        return int(np.argmax(self.action_probabilities(situation, target)))

    def advise(self, situation: Mapping[str, Any], target: int) -> list[dict[str, Any]]:
        """Every distinct legal action, most likely to reach ``target`` first: ``{"action", "kind", "keep" or
        "box", "probability"}`` (keeps of the same dice once, the lowest bitmask)."""
        q = self.action_probabilities(situation, target)
        return action_items(self.rules.box_names, self._state(situation, turn=True)[3], q, "probability")

    # ----------------------------------------------------------- storage
    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "keys": self.keys,
            "layer_start": self.layer_start,
            "lo": self.lo,
            "offset": self.offset,
            "prob": self.prob,
            "policy": self.policy_prob,
        }


def check_target(target: Any) -> int:
    """A target score: an integer of at most 2**62 in size (a :class:`SolverError` otherwise; checked before a solve by
    those that take a target from a user)."""
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
        raise SolverError(f"the target must be an integer score, got {target!r}")
    if abs(int(target)) > 2**62:  # beyond every score, and beyond the int64 arithmetic of the lookups
        raise SolverError(f"the target {target} is out of range")
    return int(target)


def final_score_range(
    rules: str | os.PathLike[str] | Rules, situation: Mapping[str, Any] | None = None, **options: Any
) -> tuple[int, int]:
    """The least and the most final score a game can still end with from a position, whatever is played and
    whatever the dice (exact between turns; inside a turn, its turn's start's: the dice may narrow it further).

    A target at or below the least is sure and one above the most out of reach, whatever is played: what the
    reach table says of them (its rows cover exactly this range), known without solving it (a few seconds for
    Yahtzee's bounds, :func:`~dice_poker_env.solver.reach_dp.rest_bounds`, against half an hour for its table).

    Args:
        rules: ruleset name, rules-file path or :class:`Rules`.
        situation: ``{"scorecard", "bonus"}`` and, inside a turn, ``"dice"`` and ``"rolls_left"`` (as
            :meth:`Reach.advise` reads it); default: a new game.
        **options: rules options.
    """
    from dice_poker_env.solver.reach_dp import rest_bounds
    from dice_poker_env.solver.reachability import reachable_layers, stacked_layers

    rules = load_rules(rules, **options)
    situation = {} if situation is None else situation
    space = StateSpace(compile_rules(rules))
    keys, layer_start = stacked_layers(reachable_layers(space))
    reader = _PositionReader(rules, keys, space)  # (the rules compiled once)
    turn = isinstance(situation, Mapping) and "dice" in situation
    filled, upper, full, _, _, so_far = reader._state(situation, turn=turn)
    pos = int(reader._positions(np.array([filled]), np.array([upper]), np.array([full]))[0])
    least, most = rest_bounds(reader.space, reader.keys, layer_start)
    return so_far + int(least[pos]), so_far + int(most[pos])


def solve_reach(
    rules: str | os.PathLike[str] | Rules = "yahtzee",
    *,
    distribution: bool = True,
    cache: bool = True,
    workers: int | None = None,
    force: bool = False,
    progress: bool | None = None,
    **options: Any,
) -> Reach:
    """The reach table of a ruleset, from the disk cache or solved (then cached).

    Args:
        rules: ruleset name, rules-file path or :class:`Rules`.
        distribution: also compute the expected-score-optimal policy's final-score distribution
            (needs the expected-score solution, :func:`~dice_poker_env.solver.solve`, itself cached).
            A cached table without it is solved again when it is asked for.
        cache: read and write the disk cache (the same folder, key and checks as the solutions':
            :mod:`~dice_poker_env.solver.cache`; a file that fails a check warns and is rebuilt).
        workers: worker processes (default as :func:`~dice_poker_env.solver.solve`).
        force: solve even when the table is estimated not to fit in the available memory.
        progress: say on stderr that a table is being solved (default: yes).
        **options: rules options.

    Raises:
        SolveTooLargeError: the table (8 bytes per state and target) would not fit in memory.
    """
    rules = load_rules(rules, **options)
    tables = compile_rules(rules)
    start = time.perf_counter()
    path = disk.cache_path(rules.name, rules.fingerprint, kind="reach")
    build = lambda *cached: _from_cache(rules, *cached, seconds=time.perf_counter() - start)  # noqa: E731
    cached = disk.load_as(path, build, "reach cache") if cache else None
    if cached is not None and (cached.distribution is not None or not distribution):
        return cached
    solution = solve(rules, cache=cache, workers=workers, force=force, progress=progress) if distribution else None
    if progress is not False:
        print(f"solving the reach table of {rules.name} (every state and target)", file=sys.stderr, flush=True)
    from dice_poker_env.solver.solution import _progress_bar

    bar = _progress_bar(rules, progress, long=True, what="the reach table of ", phases=("the reach table",))
    say = None if progress is False else (lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    try:
        dp = solve_reach_dp(
            tables,
            solution=solution,
            workers=workers,
            memory=None if force else _available(),
            progress=bar,
            announce=say,
        )
    except MemoryError as error:
        raise SolveTooLargeError(f"the reach table of {rules.name}: {error}") from error
    finally:
        if bar is not None:
            bar.close()
    reach = Reach(rules, dp, seconds=time.perf_counter() - start)
    if cache:
        store(reach)
    return reach


def store(reach: Reach) -> None:
    """Write a reach table to the disk cache (where :func:`solve_reach` looks; a warning when it cannot)."""
    rules = reach.rules
    path = disk.cache_path(rules.name, rules.fingerprint, kind="reach")
    meta = {"fingerprint": rules.fingerprint, "rules": rules.name, "reach_version": REACH_VERSION}
    try:
        disk.save(path, reach.to_arrays(), meta)
    except OSError as error:
        warnings.warn(f"could not write the reach cache {path}: {error}", disk.CacheWarning, stacklevel=3)


def _available() -> int | None:
    return budget.available_memory()


def _from_cache(rules: Rules, arrays: dict[str, np.ndarray], meta: dict[str, Any], *, seconds: float) -> Reach:
    """The :class:`Reach` of a cache file's arrays, after checking they fit ``rules`` (a ``ValueError`` naming
    what does not): the keyed checksum already covers every byte; this is the second line of defence."""
    tables = compile_rules(rules)
    if meta.get("fingerprint") != rules.fingerprint or meta.get("reach_version") != REACH_VERSION:
        raise ValueError("it belongs to other rules or another version")
    if set(arrays) != set(_ARRAYS) or any(arrays[k].dtype != d or arrays[k].ndim != 1 for k, d in _ARRAYS.items()):
        raise ValueError(f"arrays {sorted((k, str(a.dtype), a.shape) for k, a in arrays.items())}")
    keys, layer_start, lo, offset, prob, policy = (arrays[k] for k in _ARRAYS)
    n = len(keys)
    if n == 0 or lo.shape != (n,) or offset.shape != (n + 1,) or layer_start.shape != (tables.turns + 2,):
        raise ValueError("array shapes do not match")
    check_cached_states(tables, keys, layer_start)
    if offset[0] != 0 or np.any(np.diff(offset) < 2) or offset[-1] != len(prob):
        raise ValueError("rows do not partition the table")
    if not (np.all(prob >= 0.0) and np.all(prob <= 1.0)) or np.any(prob[offset[:-1]] != 1.0):
        raise ValueError("probabilities outside [0, 1] or rows not starting at 1")
    if np.any(prob[offset[1:] - 1] != 0.0):
        raise ValueError("rows not ending at 0")
    if len(policy) not in (0, len(prob)) or not (np.all(policy >= 0.0) and np.all(policy <= 1.0)):
        raise ValueError("the policy's table does not fit")
    if len(policy) and (np.any(policy[offset[:-1]] != 1.0) or np.any(policy[offset[1:] - 1] != 0.0)):
        raise ValueError("the policy's rows do not start at 1 and end at 0")
    dp = ReachDPResult(keys, layer_start, lo, offset, prob, policy)
    return Reach(rules, dp, seconds=seconds, from_cache=True)
