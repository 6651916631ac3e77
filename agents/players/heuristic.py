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

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.players.greedy import states_from_observations
from dice_poker_env.engine.combinatorics import FIRST_ROLL_PROBABILITY, KEEP_OF_ACTION, N_KEEP_ACTIONS, TRANSITION
from dice_poker_env.engine.state import ROLLS_PER_TURN
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import potential_points_batch
from dice_poker_env.rules import Rules, load_rules


def box_par(score: np.ndarray, rerolls: int = ROLLS_PER_TURN - 1) -> np.ndarray:
    """``(n_boxes,)``: each box's mean points when a turn is played for it alone (best keeps, ``rerolls``)."""
    best = score.astype(np.float64)
    for _ in range(rerolls):
        best = np.maximum(best, (TRANSITION @ best)[KEEP_OF_ACTION].max(axis=1))
    return FIRST_ROLL_PROBABILITY @ best


#: the decimals keep and box values are rounded to before they are compared (float64 products agree to ~1e-12)
DECIMALS = 6


class LookaheadAgent:
    """The one-turn lookahead heuristic of the module docstring (``rules`` track).

    Args:
        rules: the ruleset played (name, rules file or :class:`Rules`).
        **options: rules options (``LookaheadAgent("yahtzee", joker="free")``), as for
            :func:`~dice_poker_env.rules.load_rules`.
    """

    track = "rules"
    obs_mode = "dict"

    def __init__(self, rules: str | os.PathLike[str] | Rules = "yahtzee", **options: Any) -> None:
        self.rules = load_rules(rules, **options)
        self.tables = tables = compile_rules(self.rules)
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

        # the box values of every roll's plain points, with the bonus term (bonus open) and without
        self._table_open = self._values(self.score[None], np.ones(1, dtype=bool))[0]
        self._table_closed = self._values(self.score[None], np.zeros(1, dtype=bool))[0]
        self._transition_t = np.ascontiguousarray(TRANSITION.T, dtype=np.float64)

    def reset(self) -> None:
        """Nothing is kept between moves."""

    def _values(self, points: np.ndarray, bonus_open: np.ndarray) -> np.ndarray:
        """Box values of ``points`` (``(B, ..., n_boxes)``): points above par, plus the bonus term where
        ``bonus_open`` (``(B,)``) holds."""
        value = points - self.par
        if self.bonus_rate:
            open_ = bonus_open.reshape(bonus_open.shape + (1,) * (points.ndim - 1))
            value = value + open_ * self.upper * self.bonus_rate * (points - self.upper_par)
        return value

    def act(self, observation: Mapping[str, Any], action_mask: np.ndarray) -> int:
        """The action for one game's ``obs_mode="dict"`` observation."""
        batch = {key: np.asarray(value)[None] for key, value in observation.items()}
        return int(self.act_batch(batch, np.asarray(action_mask)[None])[0])

    def act_batch(self, observations: Mapping[str, Any], action_masks: np.ndarray) -> np.ndarray:
        """:meth:`act` for a batch of dict observations and masks: ``(B,)`` int64 actions, the same rule."""
        tables = self.tables
        state = states_from_observations(tables, observations)
        b = len(state.roll)
        masks = np.asarray(action_masks).reshape(b, -1) != 0
        legal_boxes = masks[:, N_KEEP_ACTIONS:]
        if not legal_boxes.any(axis=1).all():
            raise ValueError("no box can be scored: the game is over (call env.reset())")
        open_boxes = ((state.filled[:, None] >> np.arange(tables.n_boxes)) & 1) == 0  # (B, n)
        bonus_open = np.asarray(tables.has_upper_bonus & (state.upper_total < tables.upper_bonus_threshold))
        bonus_open = np.broadcast_to(bonus_open, (b,))
        now = self._values(potential_points_batch(tables, state).astype(np.float64), bonus_open)
        now = np.where(legal_boxes, now, -np.inf)
        box = np.argmax(now, axis=1)
        box_value = now[np.arange(b), box]
        keeps = masks[:, :N_KEEP_ACTIONS]
        # the best box value from each roll (B, 252), then back through the rerolls left
        rolls_left = np.asarray(state.rolls_left)
        reroll_ok = (rolls_left > 0) & keeps.any(axis=1)
        after_keep = np.zeros((b, TRANSITION.shape[0]))
        if reroll_ok.any():
            rows = np.flatnonzero(reroll_ok)
            table = np.where(bonus_open[rows, None, None], self._table_open, self._table_closed)  # (R, 252, n)
            values = np.where(open_boxes[rows, None, :], table, -np.inf).max(axis=2)  # (R, 252)
            for r in range(1, int(rolls_left[rows].max())):
                deeper = rolls_left[rows] > r
                if deeper.any():
                    more = (values[deeper] @ self._transition_t)[:, KEEP_OF_ACTION].max(axis=2)
                    values[deeper] = np.maximum(values[deeper], more)
            after_keep[rows] = values @ self._transition_t  # expected value after rolling the dice not kept
        # on a grid of 1e-6 points: a matrix product's last bits depend on the BLAS threads and the batch's
        # shape, and keeps of equal value must tie the same way everywhere (the lowest action wins)
        after_keep, box_value = np.round(after_keep, DECIMALS), np.round(box_value, DECIMALS)
        keep_values = np.where(keeps, after_keep[np.arange(b)[:, None], KEEP_OF_ACTION[state.roll]], -np.inf)
        keep = np.argmax(keep_values, axis=1)
        reroll = reroll_ok & (keep_values[np.arange(b), keep] > box_value)
        return np.where(reroll, keep, N_KEEP_ACTIONS + box).astype(np.int64)
