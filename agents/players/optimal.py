"""The optimal agent: plays the exact solver's best action (the baseline of every benchmark)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.rules import Rules, load_rules
from dice_poker_env.solver import Solution, solve

if TYPE_CHECKING:
    import numpy.typing as npt

    from agents.players.base import BatchAgent

#: Points within which the optimal agent's action is optimal, and below which a
#: loss counts as zero. The agent plays the solver's fast path
#: (:meth:`~dice_poker_env.solver.Solution.best_actions`, values compared in
#: float32), the exact values are float64 (``action_values``); the two differ by
#: up to about 1e-5 points, depending on the CPU's arithmetic. So the float64 value
#: of the action the agent takes is the maximum to within this tolerance, and the
#: benchmark (:mod:`agents.evaluation.benchmark`) counts a decision losing no more than it as
#: optimal (zero regret, not a mistake). The one place this tolerance is defined.
VALUE_TOLERANCE = 1e-4


def check_solution_rules(solution: Solution | None, rules: Rules) -> None:
    """A one-line ``ValueError`` when a solution handed to an agent solves other rules (or options) than the
    rules the agent plays: its values would be another game's."""
    if solution is not None and solution.rules.fingerprint != rules.fingerprint:
        raise ValueError(f"the solution given solves {solution.rules.label()}, not the rules played ({rules.label()})")


class OptimalAgent:
    """Maximizes the expected final score, from the exact solution of its ruleset.

    Args:
        rules: ruleset name, rules-file path, :class:`Rules`, or an already
            computed :class:`~dice_poker_env.solver.Solution`.
        cache: use the solver's disk cache (see :func:`dice_poker_env.solver.solve`).
        progress: show a progress bar if the ruleset must be solved.
        **options: rules options, e.g. ``joker="free"``.

    Observations are the env's ``obs_mode="dict"`` observations. ``act`` takes one
    observation; :meth:`act_batch` takes a batch (every value with a leading
    axis, as the vector env returns them) and is the fast path for evaluation.
    Play is deterministic: ties are broken by a fixed order (see
    :meth:`~dice_poker_env.solver.Solution.best_actions`). The action taken is
    optimal to within :data:`VALUE_TOLERANCE` points of the exact float64
    ``action_values``.
    """

    def __init__(
        self,
        rules: str | os.PathLike | Rules | Solution = "yahtzee",
        *,
        cache: bool = True,
        progress: bool | None = None,
        **options: Any,
    ) -> None:
        if isinstance(rules, Solution):
            self.solution = rules
        else:
            self.solution = solve(load_rules(rules, **options), cache=cache, progress=progress)
        self.rules = self.solution.rules
        self.name = f"optimal[{self.rules.name}]"

    def reset(self) -> None:
        """Nothing to forget between games (the policy is stateless)."""

    def action_values(self, observation: Mapping[str, Any]) -> np.ndarray:
        """Expected final score of every action (``-inf`` for illegal ones)."""
        return self.solution.action_values(observation)

    def act(self, observation: Mapping[str, Any], action_mask: np.ndarray | None = None) -> int:
        """The optimal legal action for one observation."""
        return int(self.act_batch(observation, None if action_mask is None else np.asarray(action_mask)[None, :])[0])

    def act_batch(self, observations: Mapping[str, Any], action_masks: np.ndarray | None = None) -> np.ndarray:
        """Optimal actions for a batch of observations (``(B,)`` int64).

        ``action_masks`` (``(B, 32 + n_boxes)``, optional) restricts the choice to
        the env's legal actions; it agrees with the solver's own legality.
        """
        situation, _ = self.solution._situation(observations, points=False)
        return self.act_situation(*situation[:5], action_masks=action_masks)

    def act_situation(
        self,
        filled: npt.ArrayLike,
        upper: npt.ArrayLike,
        full: npt.ArrayLike,
        roll: npt.ArrayLike,
        rolls_left: npt.ArrayLike,
        *,
        action_masks: np.ndarray | None = None,
    ) -> np.ndarray:
        """:meth:`act_batch` from the games' situations as the engine holds them (``(B,)`` int64).

        ``filled``, ``upper``, ``full``, ``roll``, ``rolls_left``: the arguments of
        :meth:`~dice_poker_env.solver.Solution.best_actions` (an engine
        :class:`~dice_poker_env.engine.game.GameState`'s ``filled``, ``upper_total``,
        :func:`~dice_poker_env.engine.game.five_kind_box_full`, ``roll`` and
        ``rolls_left``), for callers that step the engine themselves (the dataset
        writer, :mod:`agents.evaluation.datasets`) and need no observation decoded.
        """
        situation = (filled, upper, full, roll, rolls_left)
        actions = self.solution.best_actions(*situation)
        if action_masks is not None:
            masks = np.asarray(action_masks).reshape(len(actions), -1)
            allowed = masks.reshape(-1).take(np.arange(0, masks.size, masks.shape[1]) + actions)
            wrong = np.flatnonzero(allowed == 0)
            if len(wrong):  # the env disagrees with the solver's legality: obey the env
                q = self.solution.future_action_values(*(np.asarray(part)[wrong] for part in situation))
                q = np.where(masks[wrong] != 0, q, -np.inf)
                actions[wrong] = np.argmax(q, axis=1)
        return actions


def play_games(agent: BatchAgent, n_games: int, seed: int = 0, *, batch: int = 20000) -> np.ndarray:
    """Final scores of ``n_games`` seeded games played by ``agent``, batched over the engine.

    Uses the same engine functions and dict observations as the environments
    (:func:`~dice_poker_env.engine.game.step_batch`,
    :func:`~dice_poker_env.envs.observation.observe_dict_batch`), ``batch`` games at a time.
    Only the games still being played are kept (finished ones are dropped, in
    order), so a step costs what its live games cost.
    """
    from dice_poker_env.engine import game
    from dice_poker_env.engine.combinatorics import N_DICE, roll_index_of_sorted
    from dice_poker_env.engine.masks import action_masks
    from dice_poker_env.envs.observation import observe_dict_batch

    for what, value, least in (("n_games", n_games, 0), ("batch", batch, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
    tables = compile_rules(agent.rules)
    rng = np.random.default_rng(seed)
    finals = []
    for start in range(0, n_games, batch):
        size = min(batch, n_games - start)
        first = np.sort(rng.integers(1, 7, size=(size, N_DICE)), axis=1)
        state = game.new_batch(tables, roll_index_of_sorted(first))
        total = np.zeros(size, dtype=np.int64)
        rows = np.arange(size)  # the live games, in order
        while len(rows):
            actions = agent.act_batch(observe_dict_batch(tables, state), action_masks(tables).of_batch(state))
            faces = rng.integers(1, 7, size=(len(rows), N_DICE))
            state, reward, over = game.step_batch(tables, state, actions, faces)
            total[rows] += reward
            if over.any():
                going = ~over
                rows = rows[going]
                state = state.take(going)
        finals.append(total)
    return np.concatenate(finals) if finals else np.zeros(0, dtype=np.int64)
