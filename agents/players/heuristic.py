"""A hand-written heuristic that uses only the rules: a one-turn lookahead over par-adjusted box points.

The benchmark's non-learned ``rules``-track reference row (``docs/benchmark.md``). It uses the rules'
score table and the dice probabilities, never the solver:

* **par** ``E_b``: the points box ``b`` scores on average when a turn is played for that box alone
  (the best keeps for it over the turn's rerolls, from a fresh roll);
* a box written with ``p`` points is worth ``p - E_b`` (points above par), and an upper box also
  ``(p - 3 x face) x bonus / threshold`` while the upper bonus is still open (a box above three of its
  face brings the bonus nearer);
* the turn is then played exactly for these values: each keep is valued by the expected best
  box value after the remaining rerolls (dice probabilities, keeps chosen the same way), and the agent
  scores now when the best box is worth at least the best keep.

The values of the box actually written come from the env's points now (jokers and bonuses included);
the lookahead uses the plain score table.

    dice-poker evaluate yahtzee --agent agents.players.heuristic:LookaheadAgent
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.players.greedy import state_from_observation
from dice_poker_env.engine.combinatorics import FIRST_ROLL_PROBABILITY, KEEP_OF_ACTION, N_KEEP_ACTIONS, TRANSITION
from dice_poker_env.engine.state import ROLLS_PER_TURN
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import potential_points
from dice_poker_env.rules import Rules, load_rules


def box_par(score: np.ndarray, rerolls: int = ROLLS_PER_TURN - 1) -> np.ndarray:
    """``(n_boxes,)``: each box's mean points when a turn is played for it alone (best keeps, ``rerolls``)."""
    best = score.astype(np.float64)
    for _ in range(rerolls):
        best = np.maximum(best, (TRANSITION @ best)[KEEP_OF_ACTION].max(axis=1))
    return FIRST_ROLL_PROBABILITY @ best


class LookaheadAgent:
    """The one-turn lookahead heuristic of the module docstring (``rules`` track).

    Args:
        rules: the ruleset played (name, rules file or :class:`Rules`).
    """

    track = "rules"
    obs_mode = "dict"

    def __init__(self, rules: str | Rules = "yahtzee"):
        self.tables = tables = compile_rules(load_rules(rules))
        self.score = tables.score.astype(np.float64)  # (252 rolls, n_boxes): plain points
        self.par = box_par(self.score)
        self.upper = np.asarray(tables.is_upper, dtype=bool)
        # three of the box's face: 3/5 of its best upper score (five of the face)
        self.upper_par = np.where(self.upper, 0.6 * self.score.max(axis=0), 0.0)
        self.bonus_rate = (
            tables.upper_bonus_points / tables.upper_bonus_threshold
            if tables.has_upper_bonus and tables.upper_bonus_threshold > 0
            else 0.0
        )

    def reset(self) -> None:
        """Nothing is kept between moves."""

    def _values(self, points: np.ndarray, bonus_open: bool) -> np.ndarray:
        """Box values of ``points`` (any leading axes, boxes last): points above par, plus the bonus term."""
        value = points - self.par
        if bonus_open and self.bonus_rate:
            value = value + self.upper * self.bonus_rate * (points - self.upper_par)
        return value

    def act(self, observation: Mapping[str, Any], action_mask: np.ndarray) -> int:
        """The action for one game's ``obs_mode="dict"`` observation."""
        tables = self.tables
        state = state_from_observation(tables, observation)
        mask = np.asarray(action_mask).astype(bool)
        legal_boxes = mask[N_KEEP_ACTIONS:]
        open_boxes = ((state.filled >> np.arange(tables.n_boxes)) & 1) == 0
        bonus_open = tables.has_upper_bonus and state.upper_total < tables.upper_bonus_threshold
        now = self._values(potential_points(tables, state).astype(np.float64), bonus_open)
        box = int(np.argmax(np.where(legal_boxes, now, -np.inf))) if legal_boxes.any() else -1
        keeps = mask[:N_KEEP_ACTIONS]
        if state.rolls_left == 0 or not keeps.any():
            return N_KEEP_ACTIONS + box
        values = np.where(open_boxes, self._values(self.score, bonus_open), -np.inf).max(axis=1)  # (252,)
        for _ in range(state.rolls_left - 1):
            values = np.maximum(values, (TRANSITION @ values)[KEEP_OF_ACTION].max(axis=1))
        keep_values = np.where(keeps, (TRANSITION @ values)[KEEP_OF_ACTION[state.roll]], -np.inf)
        keep = int(np.argmax(keep_values))
        if box >= 0 and now[box] >= keep_values[keep]:
            return N_KEEP_ACTIONS + box
        return keep
