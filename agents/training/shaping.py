"""Potential-based reward shaping toward the upper bonus (option ``bonus_shaping`` of the batched trainers).

Ng, Harada and Russell (1999): adding ``F = gamma * phi(s') - phi(s)`` to every reward, with
``phi = 0`` at the end of a game, leaves the optimal policy unchanged (with ``gamma = 1`` the
shaping terms of a game sum to ``-phi(first state)``, whatever the agent does). What it changes
is when the agent hears about a consequence: here the upper bonus, paid in the step the upper
total reaches the threshold, often ten turns after the decisions that decide it.

:class:`BonusPotential` is ``phi(s) = bonus points x P(the open upper boxes still bring the points
needed)``, with each open face box ``f`` scoring ``f x c``, ``c ~ Binomial(5, 0.6)``: three of the
face on average, the "par" the threshold is built on (63 = 3 x (1 + ... + 6)). That makes the chance
of the bonus from the first turn 52% (optimal play gets it in 68% of games, the agents here in
55-59%). Arithmetic a player can do from the rules, not the solver's values; it is 0 once the bonus
is paid. The potential is a guess, and a guess only changes how fast the critic learns, never
which policy is best.

The agent still sees only the env's observations, masks and rewards: the potential is computed
from the observation, and the benchmark and every evaluation score the env's own rewards.
"""

from __future__ import annotations

import numpy as np

from dice_poker_env.engine.combinatorics import N_DICE
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import flat_layout, flat_scales
from dice_poker_env.rules import Rules

#: the chance that each die shows the face an upper box is filled with: three of five on average, the par
PAR_ONE_DIE = 0.6


def face_count_distribution(p: float = PAR_ONE_DIE) -> np.ndarray:
    """``(N_DICE + 1,)``: the chance of each count of one face among the five dice, each die showing it
    with chance ``p`` (binomial)."""
    from math import comb

    return np.array([comb(N_DICE, c) * p**c * (1 - p) ** (N_DICE - c) for c in range(N_DICE + 1)])


class BonusPotential:
    """``phi(obs)``: the upper bonus's points times the chance that the open upper boxes still reach it.

    Args:
        rules: a ruleset whose upper bonus is paid when the upper boxes total at least a threshold, the
            upper boxes each scoring the sum of one face (yahtzee, yatzy, dice_poker).

    Raises:
        ValueError: for a ruleset without such a bonus (yacht: none; school_poker: paid on completion
            of relative scores).
    """

    def __init__(self, rules: Rules):
        tables = compile_rules(rules)
        upper = [(k, box.face) for k, box in enumerate(rules.boxes) if box.section == "upper"]
        if (
            not tables.has_upper_bonus
            or tables.upper_bonus_on_complete
            or not upper
            or any(rules.boxes[k].kind != "face_sum" for k, _ in upper)
        ):
            raise ValueError(f"bonus_shaping needs an upper bonus paid at a total of face sums; {rules.name} has none")
        layout = flat_layout(tables)
        _, upper_scale = flat_scales(tables)
        self.threshold = int(tables.upper_bonus_threshold)
        self.points = float(tables.upper_bonus_points)
        self._filled = np.array([layout["filled"].start + k for k, _ in upper])
        self._upper_total, self._upper_scale = layout["upper_total"].start, upper_scale
        self._bits = 1 << np.arange(len(upper))
        # chance[mask, needed]: the open boxes of ``mask`` (bit j: the j-th upper box) total >= needed
        counts = face_count_distribution()
        chance = np.zeros((1 << len(upper), self.threshold + 1))
        for mask in range(1 << len(upper)):
            total = np.ones(1)  # the distribution of the open boxes' points
            for j, (_, face) in enumerate(upper):
                if mask >> j & 1:
                    points = np.zeros(face * N_DICE + 1)
                    points[::face] = counts
                    total = np.convolve(total, points)
            at_least = np.cumsum(total[::-1])[::-1]  # at_least[n] = P(points >= n)
            reach = min(len(at_least), self.threshold + 1)
            chance[mask, :reach] = at_least[:reach]
        self.chance = chance

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """``(B,)`` float32 potentials of ``(B, obs_size)`` flat observations (0 where the bonus is paid)."""
        obs = np.asarray(obs, dtype=np.float32)
        total = np.rint(obs[:, self._upper_total] * self._upper_scale).astype(np.int64)
        needed = np.clip(self.threshold - total, 0, self.threshold)
        mask = (np.rint(1.0 - obs[:, self._filled]).astype(np.int64) * self._bits).sum(axis=1)
        return np.where(needed > 0, self.points * self.chance[mask, needed], 0.0).astype(np.float32)
