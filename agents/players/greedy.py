"""A greedy baseline: scores the box with the most points now, keeps the most common face.

The points come from the engine (:func:`dice_poker_env.envs.observation.potential_points`,
the same numbers the flat observation shows per box, bonuses, jokers and first-roll
doubling included); this module has no scoring logic of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_ALL, N_DICE, N_KEEP_ACTIONS, roll_index, roll_index_of_faces
from dice_poker_env.engine.state import BatchState, GameState
from dice_poker_env.engine.tables import RuleTables, compile_rules
from dice_poker_env.envs.observation import potential_points, potential_points_batch
from dice_poker_env.rules import Rules, load_rules


def state_from_observation(tables: RuleTables, observation: Mapping[str, Any]) -> GameState:
    """The one-game engine state behind a ``obs_mode="dict"`` observation."""
    n = tables.n_boxes
    filled_flags = np.asarray(observation["filled"], dtype=np.int64).reshape(n)
    return GameState(
        filled=int((filled_flags << np.arange(n)).sum()),
        scores=np.asarray(observation["scores"], dtype=np.int64).reshape(n),
        upper_total=int(np.asarray(observation["upper_total"]).reshape(-1)[0]),
        bonus=int(np.asarray(observation["bonus"]).reshape(-1)[0]),
        roll=roll_index(np.asarray(observation["dice"]).reshape(-1)),
        rolls_left=int(np.asarray(observation["rolls_left"]).reshape(-1)[0]),
    )


def states_from_observations(tables: RuleTables, observations: Mapping[str, Any]) -> BatchState:
    """The batched engine state (``B`` games) behind a batch of ``obs_mode="dict"`` observations."""
    n = tables.n_boxes
    flags = np.asarray(observations["filled"], dtype=np.int64).reshape(-1, n)
    return BatchState(
        filled=(flags << np.arange(n)).sum(axis=1),
        scores=np.asarray(observations["scores"], dtype=np.int64).reshape(-1, n),
        upper_total=np.asarray(observations["upper_total"], dtype=np.int64).reshape(-1),
        bonus=np.asarray(observations["bonus"], dtype=np.int64).reshape(-1),
        roll=roll_index_of_faces(np.asarray(observations["dice"], dtype=np.int64).reshape(-1, N_DICE)),
        rolls_left=np.asarray(observations["rolls_left"], dtype=np.int64).reshape(-1),
    )


def best_box_action(tables: RuleTables, state: GameState, action_mask: np.ndarray) -> int:
    """The score action of the legal box with the most points now (ties: first box).

    Points include any bonus the step would pay. Raises ``ValueError`` when no box
    is legal (the game is over).
    """
    legal = np.asarray(action_mask)[N_KEEP_ACTIONS:].astype(bool)
    if not legal.any():
        raise ValueError("no box can be scored: the game is over (call env.reset())")
    points = potential_points(tables, state).astype(np.float64)
    return N_KEEP_ACTIONS + int(np.argmax(np.where(legal, points, -np.inf)))


class GreedyAgent:
    """Greedy play with a one-line keep rule (a baseline, far from optimal).

    Decision rule, in order:

    1. No rerolls left: score the legal box with the most points now
       (:func:`best_box_action`; ties go to the first box in scorecard order).
    2. The dice already give some legal box its highest possible points from any
       roll (e.g. a straight, a five of a kind, a doubled first-roll pattern):
       score that box now.
    3. Otherwise keep every die showing the most common face (ties: the higher
       face) and reroll the others; if that would keep all five dice, score as in 1.

    Plays from ``obs_mode="dict"`` observations; :meth:`act_batch` plays a batch
    (every value with a leading axis, as the vector env returns them) by the same
    rule, in a fixed number of array operations.

    Args:
        rules: the ruleset (name, path or :class:`Rules`) the agent plays.
        name: the agent's name in benchmark tables.
        **options: rules options (``GreedyAgent("yahtzee", joker="free")``), as for
            :func:`~dice_poker_env.rules.load_rules`.
    """

    obs_mode = "dict"

    def __init__(self, rules: str | os.PathLike[str] | Rules = "yacht", name: str = "greedy", **options: Any) -> None:
        self.name = name
        self.rules = load_rules(rules, **options)
        self.tables = compile_rules(self.rules)
        #: per box, the most points any roll scores there (joker and doubling included)
        self._box_max = np.array([int(p.max()) for p in self.tables.possible_scores])

    def reset(self) -> None:
        """Stateless between decisions."""

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        if not isinstance(observation, Mapping):
            raise TypeError("GreedyAgent plays from obs_mode='dict' observations")
        mask = np.asarray(action_mask)
        state = state_from_observation(self.tables, observation)
        score_now = best_box_action(self.tables, state, mask)
        if state.rolls_left == 0 or not mask[:KEEP_ALL].any():
            return score_now
        points = potential_points(self.tables, state)
        legal = mask[N_KEEP_ACTIONS:].astype(bool)
        if (legal & (points >= self._box_max) & (self._box_max > 0)).any():
            made = np.flatnonzero(legal & (points >= self._box_max) & (self._box_max > 0))
            return N_KEEP_ACTIONS + int(made[np.argmax(points[made])])
        dice = np.asarray(observation["dice"]).reshape(-1)
        counts = np.bincount(dice, minlength=7)
        face = int(np.flatnonzero(counts == counts.max()).max())
        keep = int(((dice == face).astype(np.int64) << np.arange(len(dice))).sum())
        if keep == KEEP_ALL or not mask[keep]:
            return score_now
        return keep

    def act_batch(self, observations: Mapping[str, Any], action_masks: np.ndarray) -> np.ndarray:
        """:meth:`act` for a batch of dict observations and masks: ``(B,)`` int64 actions, the same rule.

        Raises ``ValueError`` when some game has no legal box (it is over).
        """
        if not isinstance(observations, Mapping):
            raise TypeError("GreedyAgent plays from obs_mode='dict' observations")
        state = states_from_observations(self.tables, observations)
        masks = np.asarray(action_masks).reshape(len(state.roll), -1) != 0
        legal = masks[:, N_KEEP_ACTIONS:]
        if not legal.any(axis=1).all():
            raise ValueError("no box can be scored: the game is over (call env.reset())")
        points = potential_points_batch(self.tables, state)
        score_now = N_KEEP_ACTIONS + np.argmax(np.where(legal, points, -np.inf), axis=1)  # ties: first box
        made = legal & (points >= self._box_max) & (self._box_max > 0)
        score_made = N_KEEP_ACTIONS + np.argmax(np.where(made, points, -np.inf), axis=1)
        dice = np.asarray(observations["dice"], dtype=np.int64).reshape(-1, N_DICE)
        counts = (dice[:, :, None] == np.arange(1, 7)).sum(axis=1)  # (B, 6) dice per face
        face = 6 - np.argmax(counts[:, ::-1], axis=1)  # the most common face, ties: the higher
        keep = ((dice == face[:, None]).astype(np.int64) << np.arange(N_DICE)).sum(axis=1)
        keep_ok = (keep != KEEP_ALL) & masks[np.arange(len(keep)), keep]
        rerolls = (state.rolls_left > 0) & masks[:, :KEEP_ALL].any(axis=1)
        actions = np.where(made.any(axis=1), score_made, np.where(keep_ok, keep, score_now))
        return np.where(rerolls, actions, score_now).astype(np.int64)
