"""A greedy baseline: scores the box with the most points now, keeps the most common face.

The points come from the engine (:func:`dice_poker_env.envs.observation.potential_points`,
the same numbers the flat observation shows per box, bonuses, jokers and first-roll
doubling included); this module has no scoring logic of its own.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_ALL, N_KEEP_ACTIONS, roll_index
from dice_poker_env.engine.state import GameState
from dice_poker_env.engine.tables import RuleTables, compile_rules
from dice_poker_env.envs.observation import potential_points
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

    Plays from ``obs_mode="dict"`` observations.

    Args:
        rules: the ruleset (name, path or :class:`Rules`) the agent plays.
        name: the agent's name in benchmark tables.
    """

    obs_mode = "dict"

    def __init__(self, rules: str | Rules = "yacht", name: str = "greedy"):
        self.name = name
        self.rules = load_rules(rules)
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
