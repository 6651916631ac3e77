"""Benchmark agents against the exact solver, with an exact regret analysis.

:func:`benchmark` plays ``games`` seeded games per agent and reports, per agent,
the score statistics and the **exact regret**: at every decision the agent took,
the solver's expected final score of the best action minus that of the action
taken, ``Q(best) - Q(taken)`` (from ``Solution.action_values``), summed per game.
Because ``Q(s, a)`` is the expected value of the next position under optimal
play, the sum telescopes: its mean over games is an unbiased estimate of
``optimal_expected_score - E[agent's score]`` with far lower variance than the
raw gap of the means (the dice luck cancels). An illegal action ends the game
(the env's default), so its loss is ``Q(best)`` minus the score so far.

An agent that cannot always answer (a sandboxed submission: it raised, hung, crashed)
says so through an attribute ``game_failure``: after an action the benchmark finds
illegal, a string other than ``"illegal"`` there is the kind of failure that ended
the game (the action was not the agent's own). Such a game is counted under
``failed_games`` by kind and its loss goes to ``regret_failure``, not to the illegal
actions and not to the mistakes.
A decision losing no more than :data:`agents.players.optimal.VALUE_TOLERANCE` points
counts as optimal (loss 0, not a mistake): the solver's values are floats, and
the optimal agent's fast path agrees with them only to within that tolerance.

Games are seeded per game from ``seed`` (game ``i`` gets the ``i``-th word of
``numpy.random.SeedSequence(seed)``), so results do not depend on how many
worker processes share the games. Workers rebuild agents by name
(:func:`agents.players.registry.make_agent`) and load the solution from the solver's disk
cache.

Layering: imports the core package and agents only. ``torch`` is imported only
when a ``model:PATH`` agent is played.

Size: one measurement: its three ways of playing the games (one by one, lockstep batches,
worker processes) feed the same exact-regret tally, summary and table.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from agents.evaluation.limits import MAX_GAMES, check_count
from agents.players.optimal import VALUE_TOLERANCE
from agents.players.registry import BadActionError, as_action, check_agent, is_batch_agent, parse_agent_spec
from dice_poker_env.dice_sources import RandomDice
from dice_poker_env.engine.combinatorics import (
    KEEP_OF_ACTION,
    N_DICE,
    N_KEEP_ACTIONS,
    REROLLED_MASK,
    ROLL_DICE,
    kept_dice,
    roll_index_of_faces,
)
from dice_poker_env.engine.game import five_kind_box_full, new_batch, score_points, step_batch
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.position import secured_upper_bonus
from dice_poker_env.engine.state import ROLLS_PER_TURN
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import observe, observe_batch, observe_dict_batch
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.rules import Rules, load_rules

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from rich.console import Console

    from dice_poker_env.solver import Solution

#: z for a two-sided 95% normal interval
Z95 = 1.959963984540054


@overload
def load_solution(rules: Rules, required: Literal[True], *, progress: bool | None = None) -> Solution: ...
@overload
def load_solution(rules: Rules, required: bool = False, *, progress: bool | None = None) -> Solution | None: ...
def load_solution(rules: Rules, required: bool = False, *, progress: bool | None = None) -> Solution | None:
    """``solve(rules)`` from :mod:`dice_poker_env.solver`, or ``None`` without a solution.

    There is none when the solver is not installed, or when it refuses the
    ruleset for lack of memory (a ``MemoryError``, such as the solver's
    ``SolveTooLargeError``): a :class:`SolutionUnavailableWarning` says why and
    the caller goes on without the optimal reference (raw scores, no regret).
    ``required=True`` raises instead.
    """
    try:
        from dice_poker_env.solver import solve
    except ImportError as error:  # not installed
        if required:
            raise ImportError(f"the exact solver (dice_poker_env.solver.solve) is not available: {error}") from error
        return None
    try:
        return solve(rules, progress=progress)  # (progress: as solve's, None its default)
    except MemoryError as error:
        if required:
            raise
        warnings.warn(
            f"no exact solution of {rules.name!r} ({error or 'out of memory'}): "
            "going on without the optimal reference (raw scores, no regret)",
            SolutionUnavailableWarning,
            stacklevel=2,
        )
        return None


def cached_solution(rules: Rules) -> Solution | None:
    """The solution of ``rules`` if the solver's disk cache holds it (loaded and checked), else ``None``;
    never solves (what ``bench --no-regret`` without the optimal agent uses for the percent of optimal)."""
    try:
        from dice_poker_env.solver import cached
    except ImportError:
        return None
    return cached(rules)


class SolutionUnavailableWarning(RuntimeWarning):
    """The solver refused a ruleset (too large): results come without the optimal reference."""


def game_seeds(seed: int, games: int) -> np.ndarray:
    """The per-game env seeds of a benchmark run (independent of the worker count)."""
    return np.random.SeedSequence(int(seed)).generate_state(int(games), dtype=np.uint32).astype(np.int64)


# --------------------------------------------------------------- one agent's games
@dataclass
class _Partial:
    """Raw per-game records of some games of one agent (merged across workers)."""

    scores: list = field(default_factory=list)
    box_scores: list = field(default_factory=list)
    upper_bonus: list = field(default_factory=list)
    five_kind: list = field(default_factory=list)
    regret_keep: list = field(default_factory=list)
    regret_box: list = field(default_factory=list)
    regret_illegal: list = field(default_factory=list)
    regret_failure: list = field(default_factory=list)
    keep_decisions: int = 0
    box_decisions: int = 0
    illegal: int = 0
    #: failure kind -> games that failure ended (``game_failure``, module docstring)
    failed: Counter = field(default_factory=Counter)
    #: illegal proposals an unmasked model agent replaced by its legal fallback
    fallbacks: int = 0
    #: mistake label -> [total loss, count, kind, worst loss, worst example]
    mistakes: dict = field(default_factory=dict)

    def merge(self, other: _Partial) -> None:
        """Append ``other``'s games after these (its examples' game indices shift by the games here)."""
        shift = len(self.scores)
        for name in (
            "scores",
            "box_scores",
            "upper_bonus",
            "five_kind",
            "regret_keep",
            "regret_box",
            "regret_illegal",
            "regret_failure",
        ):
            getattr(self, name).extend(getattr(other, name))
        self.keep_decisions += other.keep_decisions
        self.box_decisions += other.box_decisions
        self.illegal += other.illegal
        self.failed.update(other.failed)
        self.fallbacks += other.fallbacks
        for key, (total, count, kind, worst, example) in other.mistakes.items():
            mine = self.mistakes.setdefault(key, [0.0, 0, kind, -1.0, None])
            mine[0] += total
            mine[1] += count
            if worst > mine[3]:
                mine[3], mine[4] = worst, {**example, "game": example["game"] + shift}


def _dice_text(dice: Sequence[int] | np.ndarray) -> str:
    return "-".join(str(int(d)) for d in dice)


def _kept_text(dice: Sequence[int] | np.ndarray, action: int) -> str:
    kept = kept_dice(dice, action)
    return _dice_text(kept) if kept else "nothing"


def box_title(name: str) -> str:
    """A box's name as people read it: ``large_straight`` -> ``large straight``."""
    return name.replace("_", " ")


def _describe(rules: Rules, dice: Sequence[int] | np.ndarray, action: int, points: int | None = None) -> str:
    """``keep 2-2``, ``score full house (25 points)`` or ``scratch yahtzee (0 points)`` (``points``: what the box
    takes, when known)."""
    if action >= N_KEEP_ACTIONS:
        box = box_title(rules.box_names[action - N_KEEP_ACTIONS])
        if points is None:
            return f"score {box}"
        return (
            f"scratch {box} (0 points)" if points == 0 else f"score {box} ({points} point{'' if points == 1 else 's'})"
        )
    return f"keep {_kept_text(dice, action)}"


def _mistake_label(
    rules: Rules, dice: Sequence[int] | np.ndarray, taken: int, best: int, points: dict[int, int] | None = None
) -> tuple[str, str]:
    """A label that groups similar mistakes across games, and its kind.

    ``points``: what the dice would write into each box (by score action); a box that takes 0 points is a
    scratch (``scratched large straight (0 points) instead of scoring yahtzee``).
    """
    points = points or {}

    def box(action: int, done: bool) -> str:
        name = box_title(rules.box_names[action - N_KEEP_ACTIONS])
        if points.get(action) == 0:
            return f"scratched {name} (0 points)" if done else f"scratching {name}"
        return f"scored {name}" if done else f"scoring {name}"

    if taken >= N_KEEP_ACTIONS:
        if best >= N_KEEP_ACTIONS:
            return f"{box(taken, True)} instead of {box(best, False)}", "box"
        return f"{box(taken, True)} instead of rerolling", "box"
    if best >= N_KEEP_ACTIONS:
        return f"rerolled instead of {box(best, False)}", "keep"
    return f"kept {_kept_text(dice, taken)} instead of {_kept_text(dice, best)}", "keep"


def _box_points(rules: Rules, observations: dict, at: np.ndarray, rolls: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """What the dice of decisions ``at`` (dict observations with a leading axis; their ``rolls``) write into the
    boxes the score ``actions`` name (the points in the box, bonuses aside); 0 where an action is a keep.
    ``actions``: one per decision, or rows of them (``(k, len(at))``: the decisions read once for all)."""
    tables = compile_rules(rules)
    flags = np.asarray(observations["filled"])[at].astype(np.int64)
    filled = (flags << np.arange(tables.n_boxes)).sum(axis=1)
    scores = np.asarray(observations["scores"])[at]
    first_roll = np.asarray(observations["rolls_left"]).reshape(-1)[at] == ROLLS_PER_TURN - 1
    upper = np.asarray(observations["upper_total"]).reshape(-1)[at]
    box = np.maximum(actions - N_KEEP_ACTIONS, 0)
    points, _, _ = score_points(
        tables, filled, upper, five_kind_box_full(tables, filled, scores), rolls, first_roll, box
    )
    return np.where(actions >= N_KEEP_ACTIONS, np.asarray(points), 0)


#: decisions per batched ``action_values`` call of the regret analysis
REGRET_BATCH = 4096
#: games played at once on the lockstep path (bounds its memory)
LOCKSTEP_GAMES = 2048


def play_games(
    rules: Rules,
    agent: Any,
    seeds: Sequence[int] | np.ndarray,
    solution: Solution | None = None,
    record: list | None = None,
    *,
    regret_batch: int = REGRET_BATCH,
    lockstep: bool | None = None,
) -> _Partial:
    """Play one game per seed with ``agent``; regret needs ``solution``.

    Two paths give the same games and the same results:

    * **lockstep** (the project's own agents: optimal, greedy and policy files, whose
      ``act_batch`` rows are independent and which keep nothing between moves): all
      games advance together on the engine's batched step, each with the dice the
      single env deals for its seed (:meth:`RandomDice.game_faces`); one
      ``act_batch`` call per step for all games;
    * **one by one** through the single env (any other agent, and ``record``).

    ``lockstep``: ``None`` chooses as above; ``True``/``False`` forces a path
    (``True`` needs an agent with ``act_batch``). The regret of the decisions is
    computed afterwards, ``regret_batch`` decisions per batched
    ``solution.action_values`` call (the values of one call per decision).

    ``record``: a list to append one entry per game to (for replays):
    ``{"score": final score, "moves": [[dice, rolls_left, action, best, loss, reward, points], ...]}``,
    ``dice`` the sorted dice as a string (``"12246"``), ``best`` the solver's best
    action and ``loss`` the points the action lost (``None`` without ``solution``),
    ``reward`` the points the step added, ``points`` those written in the box (a
    legal score action; else ``None``).
    """
    players = getattr(agent, "players", 1)
    if isinstance(players, int) and players > 1:  # refused now, not at its first move
        raise ValueError(
            f"agent {getattr(agent, 'name', type(agent).__name__)} was trained at a {players}-player table and reads "
            "its observation: play it at one (dice-poker match, the multi-player env), not in the one-player game"
        )
    fits = 15 * compile_rules(rules).turns + N_DICE <= RandomDice.BLOCK  # a game's dice within one block
    if lockstep is None:
        lockstep = record is None and fits and is_batch_agent(agent)
    if lockstep and (record is not None or not fits):
        raise ValueError("record, and games of more than 67 turns, need the one-by-one path (lockstep=False)")
    out = _Partial()
    fallbacks_before = int(getattr(agent, "fallbacks", 0))
    if lockstep:
        seeds = [int(game_seed) for game_seed in seeds]
        for start in range(0, len(seeds), LOCKSTEP_GAMES):
            _play_lockstep(rules, agent, seeds[start : start + LOCKSTEP_GAMES], solution, out, regret_batch)
    else:
        _play_one_by_one(rules, agent, seeds, solution, out, record, regret_batch)
    out.fallbacks = int(getattr(agent, "fallbacks", 0)) - fallbacks_before
    return out


def _play_one_by_one(
    rules: Rules,
    agent: Any,
    seeds: Sequence[int] | np.ndarray,
    solution: Solution | None,
    out: _Partial,
    record: list | None,
    regret_batch: int,
) -> None:
    """The games one at a time through the single env (any agent object)."""
    tables = compile_rules(rules)
    env = DicePokerEnv(rules)
    obs_mode = getattr(agent, "obs_mode", "dict")
    pending: list = []  # finished games waiting for their regret: (decisions, moves)
    waiting = 0
    for game_seed in seeds:
        game_seed = int(game_seed)
        if callable(getattr(agent, "seed", None)):
            agent.seed(game_seed ^ 0x5BD1E995)
        if callable(getattr(agent, "reset", None)):  # optional for agent objects
            agent.reset()
        obs, info = env.reset(seed=game_seed)
        assert env.state is not None  # set by reset()
        done = False
        five = 0
        failed: str | None = None
        moves: list | None = [] if record is not None else None
        decisions: list = []
        while not done:
            mask = info["action_mask"]
            agent_obs = obs if obs_mode == "dict" else observe(tables, env.state, obs_mode)
            action = as_action(agent.act(agent_obs, mask), f"agent {getattr(agent, 'name', type(agent).__name__)}")
            state = env.state
            legal = 0 <= action < len(mask) and bool(mask[action])
            failure = None if legal else getattr(agent, "game_failure", None)
            failure = failure if isinstance(failure, str) and failure != "illegal" else None
            if solution is not None:
                decisions.append((obs, action, legal, float(env.score), state.roll, state.rolls_left, failure))
            if failure is not None:
                out.failed[failure] += 1
                failed = failure
            elif not legal:
                out.illegal += 1
            elif action >= N_KEEP_ACTIONS:
                out.box_decisions += 1
                five += bool(tables.five_kind_roll[state.roll])
            else:
                out.keep_decisions += 1
            if moves is not None:
                moves.append(
                    [
                        "".join(str(int(d)) for d in ROLL_DICE[state.roll]),
                        int(state.rolls_left),
                        action,
                        None,
                        None,
                        0,
                        None,
                    ]
                )
            obs, reward, done, _, info = env.step(action)
            if moves is not None:
                moves[-1][5] = int(round(float(reward)))
                if legal and action >= N_KEEP_ACTIONS:
                    moves[-1][6] = int(env.state.scores[action - N_KEEP_ACTIONS])
        final = env.state
        out.scores.append(int(info["final_score"]))
        out.box_scores.append(final.scores.astype(np.int64))
        out.upper_bonus.append(secured_upper_bonus(tables, final.filled, final.upper_total) > 0)  # the engine's rule
        out.five_kind.append(five)
        if record is not None:
            record.append({"score": int(info["final_score"]), "moves": moves, "failure": failed})
        if solution is not None:
            pending.append((decisions, moves))
            waiting += len(decisions)
            if waiting >= regret_batch:
                _settle_games(rules, solution, out, pending, regret_batch)
                pending, waiting = [], 0
    if pending:
        _settle_games(rules, solution, out, pending, regret_batch)


def _settle_games(
    rules: Rules,
    solution: Any,  # a Solution: the caller's last call is guarded by `if pending:`, which mypy cannot tie to it
    out: _Partial,
    games: list,
    regret_batch: int,
) -> None:
    """Regret of finished one-by-one games (``[(decisions, moves), ...]``), in their order; fills the moves."""
    decisions = [d for game, _ in games for d in game]
    observations = {key: np.stack([d[0][key] for d in decisions]) for key in decisions[0][0]}
    column = lambda i, dtype: np.array([d[i] for d in decisions], dtype=dtype)  # noqa: E731
    actions = column(1, np.int64)
    best, losses = _decision_losses(
        solution, observations, actions, column(2, bool), column(3, np.float64), regret_batch
    )
    at = 0
    for game, moves in games:
        if moves is not None:
            for j, move in enumerate(moves):
                move[3], move[4] = int(best[at + j]), round(float(losses[at + j]), 4)
        at += len(game)
    _tally(
        rules,
        out,
        np.array([len(game) for game, _ in games]),
        actions,
        column(2, bool),
        best,
        losses,
        column(4, np.int64),
        column(5, np.int64),
        observations["turn"],
        np.array([d[6] is not None for d in decisions], dtype=bool),
        observations,
    )


def _decision_losses(
    solution: Solution,
    observations: dict,
    actions: np.ndarray,
    legal: np.ndarray,
    so_far: np.ndarray,
    batch: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``(best action, points lost)`` of each decision (dict observations with a leading axis), ``batch``
    decisions per ``action_values`` call. An illegal action ends the game: it loses ``Q(best)`` minus the
    points so far."""
    n = len(actions)
    best = np.empty(n, dtype=np.int64)
    losses = np.empty(n, dtype=np.float64)
    for start in range(0, n, max(1, int(batch))):
        part = slice(start, start + max(1, int(batch)))
        q = np.asarray(
            solution.action_values({key: value[part] for key, value in observations.items()}), dtype=np.float64
        )
        rows = np.arange(len(q))
        top = np.argmax(q, axis=1)
        taken = np.where(legal[part], q[rows, np.where(legal[part], actions[part], 0)], so_far[part])
        lost = q[rows, top] - taken
        lost[lost <= VALUE_TOLERANCE] = 0.0  # optimal within the solver's float tolerance: no loss
        best[part], losses[part] = top, lost
    return best, losses


def _tally(
    rules: Rules,
    out: _Partial,
    per_game: np.ndarray,
    actions: np.ndarray,
    legal: np.ndarray,
    best: np.ndarray,
    losses: np.ndarray,
    rolls: np.ndarray,
    rolls_left: np.ndarray,
    turns: np.ndarray,
    failed: np.ndarray | None = None,
    observations: dict | None = None,
) -> None:
    """Per-game regret by kind and the mistakes table from decisions in game order (``per_game`` decisions
    each), summed in that order: the same floats however the games were played. ``failed``: the decisions
    a failure of the agent ended (``game_failure``): their loss is the game's ``regret_failure``, not a
    mistake. ``observations``: the dict observations, to tell a scratch (0 points) from a score."""
    game = np.repeat(np.arange(len(per_game)), per_game)
    first_game = len(out.regret_keep)  # games tallied before these: the index of this call's first game
    first_move = np.cumsum(per_game) - per_game  # each game's first decision
    failed = np.zeros(len(actions), dtype=bool) if failed is None else failed
    kind = np.where(failed, 3, np.where(~legal, 2, np.where(actions >= N_KEEP_ACTIONS, 1, 0)))
    for code, target in enumerate((out.regret_keep, out.regret_box, out.regret_illegal, out.regret_failure)):
        chosen = kind == code
        target.extend(np.bincount(game[chosen], weights=losses[chosen], minlength=len(per_game)).tolist())
    at = np.flatnonzero((losses > 0.0) & ~failed)
    if not len(at):
        return
    taken, best, legal, rolls, loss = actions[at], best[at], legal[at], rolls[at], losses[at]
    is_box = taken >= N_KEEP_ACTIONS
    best_box = best >= N_KEEP_ACTIONS
    taken_points = best_points = np.ones(len(at), dtype=np.int64)  # no observations: no scratches told
    if observations is not None:
        taken_points, best_points = _box_points(
            rules, observations, at, rolls, np.stack([np.where(legal, taken, 0), best])
        )
    # the label is a function of this key: what was taken and what was best (a keep by its kept dice), and
    # whether each box would take 0 points; labels are built once per key, the sums done per label
    keep = np.where(is_box | ~legal, 0, taken), np.where(best_box, 0, best)
    key = np.stack(
        [
            legal,
            np.where(is_box | ~legal, taken, -1 - KEEP_OF_ACTION[rolls, keep[0]]),
            np.where(best_box, best, -1 - KEEP_OF_ACTION[rolls, keep[1]]),
            (taken_points == 0) & is_box,
            (best_points == 0) & best_box,
        ],
        axis=1,
    ).astype(np.int64)
    _, first, group = np.unique(key, axis=0, return_index=True, return_inverse=True)
    group = group.reshape(-1)

    def points(j: int) -> dict[int, int]:
        """The box points of mistake ``j``'s score actions, as :func:`_mistake_label` and :func:`_describe` read them."""
        if observations is None:
            return {}
        shown = {int(best[j]): int(best_points[j])} if best_box[j] else {}
        return {**shown, int(taken[j]): int(taken_points[j])} if legal[j] and is_box[j] else shown

    names: dict[str, int] = {}  # each label's index, in the order of its first mistake (the table's order)
    label_of_group = np.empty(len(first), dtype=np.int64)
    for j in np.sort(first).tolist():
        label, mistake_kind = (
            _mistake_label(rules, ROLL_DICE[rolls[j]], int(taken[j]), int(best[j]), points(j))
            if legal[j]
            else (f"illegal action {int(taken[j])}", "illegal")
        )
        out.mistakes.setdefault(label, [0.0, 0, mistake_kind, -1.0, None])
        label_of_group[group[j]] = names.setdefault(label, len(names))
    index = label_of_group[group]
    # the sums start from the table's own (an earlier call's) and add the losses in decision order: bincount adds
    # its weights in their order, so the floats are those of adding one mistake at a time
    before = np.array([out.mistakes[name][0] for name in names], dtype=np.float64)
    total = np.bincount(np.r_[np.arange(len(names)), index], weights=np.r_[before, loss], minlength=len(names))
    count = np.bincount(index, minlength=len(names))
    worst = np.lexsort((np.arange(len(loss)), -loss, index))  # each label's largest loss, its first on a tie
    worst = worst[np.r_[0, np.flatnonzero(np.diff(index[worst])) + 1]]
    for name, total_loss, n, j in zip(names, total.tolist(), count.tolist(), worst.tolist()):
        entry = out.mistakes[name]
        entry[0], entry[1] = total_loss, entry[1] + n
        if loss[j] > entry[3]:
            i, action, best_action, dice = int(at[j]), int(taken[j]), int(best[j]), ROLL_DICE[rolls[j]]
            shown = points(j)
            entry[3] = float(loss[j])
            entry[4] = {
                "dice": [int(d) for d in dice],
                "rolls_left": int(rolls_left[i]),
                "turn": int(turns[i]),
                "taken": _describe(rules, dice, action, shown.get(action)) if legal[j] else f"illegal action {action}",
                "best": _describe(rules, dice, best_action, shown.get(best_action)),
                "loss": round(float(loss[j]), 4),
                "taken_action": action,
                "best_action": best_action,
                "game": first_game + int(game[i]),
                "move": int(i - first_move[game[i]]),
            }


def _play_lockstep(
    rules: Rules, agent: Any, seeds: list[int], solution: Solution | None, out: _Partial, regret_batch: int
) -> None:
    """All ``seeds``' games at once on the engine's batched step (see :func:`play_games`)."""
    tables = compile_rules(rules)
    masks = action_masks(tables)
    obs_mode = getattr(agent, "obs_mode", "dict")
    n_games, n_actions = len(seeds), int(tables.n_actions)
    count = 15 * tables.turns + N_DICE  # at most 15 faces a turn (play_games checked it fits one block)
    faces = RandomDice.game_faces(seeds, count)
    state = new_batch(tables, roll_index_of_faces(faces[:, :N_DICE]))
    drawn = np.full(n_games, N_DICE, dtype=np.int64)  # faces each game has used
    playing = np.ones(n_games, dtype=bool)
    five = np.zeros(n_games, dtype=np.int64)
    log: list = []  # per step: games, dict observations, actions, legal, points so far, rolls
    while playing.any():
        games = np.flatnonzero(playing)
        now = state.take(games)
        mask = masks.of_batch(now)
        observations = observe_batch(tables, now, obs_mode)
        given = np.asarray(agent.act_batch(observations, mask))
        if given.dtype.kind not in "iu" or given.size != len(games):
            raise BadActionError(
                f"agent {getattr(agent, 'name', type(agent).__name__)}: act_batch returned {given.dtype} of shape "
                f"{given.shape} for {len(games)} games, not one action index (an int) per game"
            )
        actions = given.astype(np.int64).reshape(len(games))
        in_range = (actions >= 0) & (actions < n_actions)
        legal = in_range & (mask[np.arange(len(games)), np.where(in_range, actions, 0)] != 0)
        if solution is not None:
            log.append(
                (
                    games,
                    observations if obs_mode == "dict" else observe_dict_batch(tables, now),
                    actions,
                    legal,
                    now.total.astype(np.float64),
                    now.roll,
                )
            )
        scoring = legal & (actions >= N_KEEP_ACTIONS)
        out.illegal += int(np.count_nonzero(~legal))
        out.box_decisions += int(np.count_nonzero(scoring))
        out.keep_decisions += int(np.count_nonzero(legal & ~scoring))
        five[games[scoring]] += tables.five_kind_roll[now.roll[scoring]].astype(np.int64)
        playing[games[~legal]] = False  # an illegal action ends the game (the single env's default)
        go = np.flatnonzero(legal)
        if not len(go):
            continue
        action, moving = actions[go], games[go]
        keeping = action < N_KEEP_ACTIONS
        # the single env's dice: one face per rerolled die in position order; five for the next turn; none at the end
        rolled = np.where(keeping[:, None], REROLLED_MASK[np.where(keeping, action, 0)], 1)
        rolled[~keeping & (np.bitwise_count(now.filled[go]) + 1 >= tables.turns)] = 0
        at = np.minimum(drawn[moving][:, None] + np.maximum(np.cumsum(rolled, axis=1) - 1, 0), count - 1)
        new_state, _, over = step_batch(tables, now.take(go), action, np.take_along_axis(faces[moving], at, axis=1))
        drawn[moving] += rolled.sum(axis=1)
        for values, new in zip(state, new_state):
            values[moving] = new
        playing[moving[over]] = False
    totals = state.total
    out.scores.extend(int(t) for t in totals)
    out.box_scores.extend(row.astype(np.int64) for row in state.scores)
    out.upper_bonus.extend((secured_upper_bonus(tables, state.filled, state.upper_total) > 0).tolist())
    out.five_kind.extend(int(f) for f in five)
    if solution is None or not log:
        return
    game = np.concatenate([entry[0] for entry in log])
    order = np.argsort(game, kind="stable")  # game by game, each in move order
    observations = {key: np.concatenate([entry[1][key] for entry in log])[order] for key in log[0][1]}
    actions, legal, so_far, rolls = (np.concatenate([entry[i] for entry in log])[order] for i in (2, 3, 4, 5))
    best, losses = _decision_losses(solution, observations, actions, legal, so_far, regret_batch)
    _tally(
        rules,
        out,
        np.bincount(game, minlength=n_games),
        actions,
        legal,
        best,
        losses,
        rolls,
        observations["rolls_left"],
        observations["turn"],
        None,
        observations,
    )


def _worker(rules: Rules, agent_name: str, seeds: np.ndarray, with_regret: bool) -> _Partial:
    """Process-pool entry: rebuild the agent and the solution, then play."""
    try:  # one thread per worker process when torch is in use
        import torch  # noqa: F401  (only present when a model agent imported it)

        torch.set_num_threads(1)
    except ModuleNotFoundError:
        pass
    solution = load_solution(rules) if (with_regret or agent_name == "optimal") else None
    agent = _build(agent_name, rules, solution)
    return play_games(rules, agent, seeds, solution if with_regret else None)


def _build(agent_name: str, rules: Rules, solution: Solution | None) -> Any:
    from agents.players.registry import make_agent

    if agent_name == "optimal" and solution is None:
        raise ValueError("the optimal agent needs the exact solver (dice_poker_env.solver), which is not available")
    return make_agent(agent_name, rules, solution=solution)


def agent_names(agents: Sequence[Any]) -> list[str]:
    """The distinct name each agent of a benchmark is reported under, in order.

    A ``(name, agent)`` pair keeps its name; ``"model:PATH"`` is named after the
    file's stem (``final_model``), with as many parent folders as it takes to
    tell it from the other agents (``run_a/final_model``, ``run_b/final_model``);
    a custom agent ``FILE.py:NAME,key=value`` is named ``NAME(key=value)``, or by
    its whole spec where two would share that name; other strings are their own
    name and agent objects their ``name`` attribute.

    Raises:
        ValueError: two agents would share a name (an agent or a model given twice).
    """
    parts: list[tuple[str, ...] | None] = []  # a model's path components, or None
    names: list[str] = []
    for entry in agents:
        if isinstance(entry, tuple):
            names.append(str(entry[0]))
            parts.append(None)
        elif isinstance(entry, str) and entry.startswith("model:"):
            path = Path(os.path.abspath(entry[len("model:") :]))  # one file, one name: its stem
            parts.append((path.with_suffix("") if path.suffix in (".zip", ".npz") else path).parts[1:])
            names.append(parts[-1][-1] if parts[-1] else entry)
        else:
            custom = parse_agent_spec(entry) if isinstance(entry, str) else None
            if custom is not None:
                names.append(custom.label)
            else:
                names.append(entry if isinstance(entry, str) else str(getattr(entry, "name", type(entry).__name__)))
            parts.append(None)
    same = Counter(p for p in parts if p is not None)
    for i, entry in enumerate(agents):  # a .zip and a .npz of one stem in one folder: their file names
        stem = parts[i]
        if stem is not None and same[stem] > 1 and isinstance(entry, str):
            full = Path(os.path.abspath(entry[len("model:") :])).parts[1:]
            parts[i], names[i] = full, full[-1]
    depth = [1] * len(names)
    while True:  # lengthen the clashing models' names by one folder at a time
        counts = Counter(names)
        grow = [i for i, name in enumerate(names) if counts[name] > 1 and depth[i] < len(parts[i] or ())]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
            names[i] = "/".join((parts[i] or ())[-depth[i] :])
    counts = Counter(names)
    for i, entry in enumerate(agents):  # custom agents sharing a short name: their whole spec
        if counts[names[i]] > 1 and isinstance(entry, str) and parse_agent_spec(entry) is not None:
            names[i] = entry
    clash = sorted(name for name, count in Counter(names).items() if count > 1)
    if clash:
        raise ValueError(f"agents must have distinct names; given more than once: {', '.join(clash)}")
    return names


# -------------------------------------------------------------------- statistics
def _mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    n = len(values)
    mean = float(np.mean(values)) if n else float("nan")
    std = float(np.std(values, ddof=1)) if n > 1 else 0.0
    return mean, std, Z95 * std / math.sqrt(n) if n else float("nan")


def summarize(
    rules: Rules, part: _Partial, optimal: float | None, seconds: float, top: int = 10, with_regret: bool = True
) -> dict[str, Any]:
    """The per-agent JSON fields (documented in ``docs/training.md``)."""
    scores = np.asarray(part.scores, dtype=np.float64)
    n = len(scores)
    mean, std, ci = _mean_ci(scores)
    box_scores = np.asarray(part.box_scores, dtype=np.float64).reshape(n, -1)
    out: dict[str, Any] = {
        "games": n,
        "mean": mean,
        "ci95": ci,
        "median": float(np.median(scores)),
        "std": std,
        "min": float(scores.min()),
        "max": float(scores.max()),
        "percent_of_optimal": 100.0 * mean / optimal if optimal else None,
        "percent_of_optimal_ci95": 100.0 * ci / abs(optimal) if optimal else None,
        "gap_mean": optimal - mean if optimal is not None else None,
        "upper_bonus_rate": float(np.mean(part.upper_bonus)) if compile_rules(rules).has_upper_bonus else None,
        "five_of_a_kind_rate": float(np.mean(np.asarray(part.five_kind) > 0)),
        "five_of_a_kind_per_game": float(np.mean(part.five_kind)),
        "box_means": {name: float(box_scores[:, k].mean()) for k, name in enumerate(rules.box_names)},
        "keep_decisions_per_game": part.keep_decisions / n,
        "box_decisions_per_game": part.box_decisions / n,
        "illegal_actions": part.illegal,
        "failed_games": dict(sorted(part.failed.items())),
        "fallback_actions_per_game": part.fallbacks / n,
        "seconds": round(seconds, 3),
    }
    if optimal is None or not with_regret:
        out.update(
            regret_mean=None,
            regret_ci95=None,
            regret_std=None,
            regret_keep_mean=None,
            regret_box_mean=None,
            regret_illegal_mean=None,
            regret_failure_mean=None,
            estimated_expected_score=None,
            mistakes=[],
        )
        return out
    keep = np.asarray(part.regret_keep)
    box = np.asarray(part.regret_box)
    illegal = np.asarray(part.regret_illegal)
    failure = np.asarray(part.regret_failure) if part.regret_failure else np.zeros(len(keep))
    total = keep + box + illegal + failure
    r_mean, r_std, r_ci = _mean_ci(total)
    luck_mean, _, luck_ci = _mean_ci(scores - (optimal - total))  # what the dice gave beyond the play's worth
    out.update(
        regret_mean=r_mean,
        regret_ci95=r_ci,
        regret_std=r_std,
        regret_keep_mean=float(keep.mean()),
        regret_keep_ci95=_mean_ci(keep)[2],
        regret_box_mean=float(box.mean()),
        regret_box_ci95=_mean_ci(box)[2],
        regret_illegal_mean=float(illegal.mean()),
        regret_failure_mean=float(failure.mean()),
        estimated_expected_score=optimal - r_mean,
        estimated_percent_of_optimal=100.0 * (optimal - r_mean) / optimal if optimal else None,
        luck_mean=luck_mean,
        luck_ci95=luck_ci,
    )
    ranked = sorted(part.mistakes.items(), key=lambda item: -item[1][0])[:top]
    out["mistakes"] = [
        {
            "mistake": label,
            "kind": kind,
            "loss_per_game": total_loss / n,
            "count_per_game": count / n,
            "mean_loss": total_loss / count,
            "worst_example": example,
        }
        for label, (total_loss, count, kind, _, example) in ranked
    ]
    return out


@dataclass
class BenchmarkResult:
    """What :func:`benchmark` returns: the JSON object and each agent's raw scores."""

    data: dict[str, Any]
    scores: dict[str, np.ndarray]
    #: with ``record_games``: per agent, the game records of :func:`play_games` (agents played in this process)
    games: dict[str, list] = field(default_factory=dict)


def benchmark(
    rules: str | os.PathLike[str] | Rules,
    agents: Sequence[Any] = ("optimal", "greedy", "random"),
    *,
    games: int = 10_000,
    seed: int = 0,
    workers: int = 1,
    solution: Any = None,
    regret: bool = True,
    top_mistakes: int = 10,
    progress: bool = False,
    record_games: bool = False,
) -> BenchmarkResult:
    """Play ``games`` seeded games per agent and compare with the exact solver.

    Args:
        rules: ruleset name, rules file or :class:`Rules`.
        agents: agent names (``"optimal"``, ``"greedy"``, ``"random"``,
            ``"model:PATH"``, your own ``"FILE.py:NAME"`` or ``"MODULE:NAME"``
            with ``,key=value`` arguments; see :mod:`agents.players.registry`) or agent
            objects (anything with ``act(observation, action_mask)``); a
            pair ``(name, agent_or_name)`` renames it. Each is reported under the
            distinct name :func:`agent_names` gives it (a model: its file's stem).
            Objects always play in this process. One name or object alone
            (``"greedy"``) is one agent, as ``["greedy"]``.
        games: games per agent (the same seeds for every agent).
        seed: benchmark seed (see :func:`game_seeds`).
        workers: processes to spread each named agent's games over (the NumPy batch agents, optimal,
            greedy and policy files, play all their games at once in this process instead).
        solution: an already solved ``Solution`` (default: ``solve(rules)`` when
            the solver is installed; ``False`` or no solver: no regret and no
            optimal reference).
        regret: compute the exact regret (``action_values`` of every decision, valued in batches).
        top_mistakes: how many costliest mistakes to list per agent.
        progress: print a line per finished agent to stderr.
        record_games: keep every move of every game of the agents played in
            this process (``BenchmarkResult.games``, for replays).

    Returns:
        A :class:`BenchmarkResult`; ``.data`` is the JSON object
        ``{"rules", "rules_fingerprint", "optimal_expected_score", "optimal_std",
        "games", "seed", "agents": {name: {...}}}``.
    """
    import sys

    if isinstance(agents, (str, bytes)) or not hasattr(agents, "__len__"):
        agents = [agents]  # one agent ("greedy" was read letter by letter: two agents 'e')
    rules = load_rules(rules)
    check_count("games", games, most=MAX_GAMES)
    for what, value, least in (
        ("games", games, 1),
        ("seed", seed, 0),
        ("workers", workers, 1),
        ("top_mistakes", top_mistakes, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
    named = list(zip(agent_names(agents), (entry[1] if isinstance(entry, tuple) else entry for entry in agents)))
    for _, spec in named:  # refuse what cannot be played before any work
        if not isinstance(spec, str):
            continue
        if spec.startswith("model:"):
            from agents.players.sb3_agent import check_ruleset, read_metadata

            path = spec[len("model:") :]
            metadata = read_metadata(path)
            check_ruleset(metadata, rules, source=f"model {path}")
            if path.endswith(".npz"):
                from agents.policy.player import PolicyAgent

                PolicyAgent.load(path, rules)  # weights checked (finite, sizes) before any game
            else:
                from agents.players.sb3_agent import safe_custom_objects, trusted_by_default

                if not trusted_by_default():  # nothing from the file would run: refused now, not after the solve
                    safe_custom_objects(path, str(metadata.get("algorithm")), rules, str(metadata.get("obs_mode")))
        elif spec == "trained":
            from agents.policy.player import shipped_policy

            shipped_policy(rules)  # a missing or damaged shipped policy: refused before any work
        else:
            check_agent(spec)  # a custom agent's module is imported here, before any game
    needs_values = regret or any(spec == "optimal" for _, spec in named)
    if solution is None and not needs_values:  # no regret, no optimal agent: a cached solution or none, no solve
        solution = cached_solution(rules)
    elif solution is None:
        solution = load_solution(rules)
    elif solution is False:  # explicitly without the solver
        solution = None
    if solution is None and any(spec == "optimal" for _, spec in named):
        raise ValueError(f"the optimal agent needs the exact solution of {rules.name!r}, which is not available")
    optimal = float(solution.expected_score) if solution is not None else None
    seeds = game_seeds(seed, games)
    data: dict[str, Any] = {
        "rules": rules.name,
        "rules_options": dict(rules.options),
        "rules_fingerprint": rules.fingerprint,
        "optimal_expected_score": optimal,
        "optimal_std": float(solution.score_std) if solution is not None else None,
        "games": int(games),
        "seed": int(seed),
        "agents": {},
    }
    raw_scores: dict[str, np.ndarray] = {}
    records: dict[str, list] = {}
    with_regret = regret and solution is not None
    pool = None
    for name, agent in named:
        start = time.perf_counter()
        if isinstance(agent, str) and workers > 1 and games >= 2 * workers and not is_batch_agent(agent):
            if pool is None:
                pool = _pool(workers)
            part = _play_parallel(pool, rules, agent, seeds, workers, with_regret)
        else:
            if isinstance(agent, str):
                agent = _build(agent, rules, solution)
            record = records.setdefault(name, []) if record_games else None
            part = play_games(rules, agent, seeds, solution if with_regret else None, record)
        seconds = time.perf_counter() - start
        data["agents"][name] = summarize(rules, part, optimal, seconds, top_mistakes, with_regret=with_regret)
        raw_scores[name] = np.asarray(part.scores)
        if progress:
            print(f"bench {rules.name}: {name} done ({games} games, {seconds:.1f} s)", file=sys.stderr)
    if pool is not None:
        pool.shutdown()
    return BenchmarkResult(data=data, scores=raw_scores, games=records)


def _pool(workers: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # safe with torch and threads
    return ProcessPoolExecutor(max_workers=workers, mp_context=context)


def _play_parallel(
    pool: ProcessPoolExecutor, rules: Rules, agent_name: str, seeds: np.ndarray, workers: int, with_regret: bool
) -> _Partial:
    chunks = np.array_split(seeds, workers)
    part = _Partial()
    futures = [pool.submit(_worker, rules, agent_name, chunk, with_regret) for chunk in chunks]
    for future in futures:  # in order, so merged records follow the seeds
        part.merge(future.result())
    return part


# ----------------------------------------------------------------------- output
def render_table(data: dict[str, Any], console: Console | None = None, mistakes: int = 3) -> None:
    """Print the benchmark as rich tables (one row per agent, then top mistakes)."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # files and pipes: don't squeeze the table into 80 columns
            console = Console(width=170)
    opt = data.get("optimal_expected_score")
    title = f"{data['rules']}: {data['games']} games per agent, seed {data['seed']}"
    if opt is not None:
        title += f"; optimal expected score {opt:.4f}"
        if data.get("optimal_std") is not None:
            title += f" (std {data['optimal_std']:.2f})"
    table = Table(title=title)
    rows = data["agents"].values()
    # the regret's other parts, shown where any agent has them, so that the parts shown add up to the regret
    other = any((row.get("regret_illegal_mean") or 0) + (row.get("regret_failure_mean") or 0) > 0 for row in rows)
    for column in (
        "agent",
        "mean ± 95% CI",
        "median",
        "std",
        "% of optimal",
        "regret ± 95% CI",
        "keep regret",
        "box regret",
        *(("illegal/failed regret",) if other else ()),
        "upper bonus",
        "5-of-a-kind",
    ):
        table.add_column(column, justify="left" if column == "agent" else "right")

    def fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
        return "—" if value is None else f"{value:{spec}}{suffix}"

    for name, row in data["agents"].items():
        one = row["games"] < 2  # no spread from one game: no interval to show (not "± 0.00")
        table.add_row(
            name,
            f"{row['mean']:.2f}" + (" (1 game)" if one else f" ± {row['ci95']:.2f}"),
            fmt(row["median"], ".1f"),
            fmt(row["std"]),
            fmt(row["percent_of_optimal"], ".2f", "%"),
            "—"
            if row.get("regret_mean") is None
            else f"{row['regret_mean']:.3f}" + ("" if one else f" ± {row['regret_ci95']:.3f}"),
            fmt(row.get("regret_keep_mean"), ".3f"),
            fmt(row.get("regret_box_mean"), ".3f"),
            *(
                (
                    fmt(
                        None
                        if row.get("regret_mean") is None
                        else (row.get("regret_illegal_mean") or 0) + (row.get("regret_failure_mean") or 0),
                        ".3f",
                    ),
                )
                if other
                else ()
            ),
            fmt(None if row["upper_bonus_rate"] is None else 100 * row["upper_bonus_rate"], ".1f", "%"),
            fmt(100 * row["five_of_a_kind_rate"], ".1f", "%"),
        )
    console.print(table)
    if any((row.get("percent_of_optimal") or 0) > 100 for row in rows):
        console.print(
            "% of optimal above 100 is luck in the dice: the mean of finitely many games can exceed the optimal "
            "expectation; optimal − regret (estimated_expected_score in --json) cannot."
        )
    if mistakes and any(row.get("mistakes") for row in data["agents"].values()):
        worst = Table(title="Costliest typical mistakes (points lost per game)")
        for column in ("agent", "mistake", "loss/game", "times/game", "mean loss", "worst example"):
            worst.add_column(column)
        for name, row in data["agents"].items():
            for m in row.get("mistakes", [])[:mistakes]:
                ex = m["worst_example"] or {}
                example = f"{_dice_text(ex.get('dice', []))}, {ex.get('rolls_left')} reroll{'' if ex.get('rolls_left') == 1 else 's'} left: {ex.get('taken')} (best: {ex.get('best')})"
                worst.add_row(
                    name,
                    m["mistake"],
                    f"{m['loss_per_game']:.3f}",
                    f"{m['count_per_game']:.3f}",
                    f"{m['mean_loss']:.2f}",
                    example,
                )
        console.print(worst)
