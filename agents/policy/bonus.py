"""The upper bonus as a player reckons it: the points still needed, and the par the threshold is built on.

One definition of each, used by the policy's features (:class:`agents.policy.inputs.PolicyInputs`) and its
bonus terms (:class:`agents.policy.inputs.KeepBonus`):

* **par**: three dice of its face for each upper box (:data:`PAR_COUNT`): Yahtzee's threshold, 63, is
  3 x (1 + 2 + ... + 6). As a chance per die, :data:`PAR_ONE_DIE` = 3 / 5: the par model scores each
  open upper box ``face x c`` with ``c ~ Binomial(5, 0.6)``, three of the face on average
  (:func:`par_chance`).
* **points still needed**: the threshold minus the upper total (:func:`points_needed`; negative once the
  total is above it, which matters where the bonus is settled by the last upper box).

Arithmetic of the rules, not the solver's values. NumPy only.
"""

from __future__ import annotations

from math import comb
from typing import TYPE_CHECKING

import numpy as np

from dice_poker_env.engine.combinatorics import N_DICE
from dice_poker_env.rules import Box, Rules

if TYPE_CHECKING:
    from agents.policy.observation import ArrayT

#: par: the count of its face each upper box is expected to score (the threshold 63 = 3 x (1 + ... + 6))
PAR_COUNT = 3
#: the par as the chance that one die shows the face an upper box is filled with
PAR_ONE_DIE = PAR_COUNT / N_DICE


def par_points(box: Box) -> float:
    """The points an upper box scores at par (``PAR_COUNT`` dice of its face): ``3 x face`` for a face sum,
    ``(3 - base) x face`` for a score relative to a base count (0 at par); 0 for any other box."""
    if box.section != "upper" or box.kind not in ("face_sum", "relative_face"):
        return 0.0
    return float((PAR_COUNT - (box.base if box.kind == "relative_face" else 0)) * box.face)


def points_needed(threshold: float, upper_total: ArrayT) -> ArrayT:
    """The points still needed for the upper bonus (NumPy arrays or torch tensors): ``threshold - upper_total``,
    negative once the total is above the threshold."""
    return threshold - upper_total


def face_count_distribution(p: float = PAR_ONE_DIE) -> np.ndarray:
    """``(N_DICE + 1,)``: the chance of each count of one face among the five dice, each die showing it with
    chance ``p`` (binomial)."""
    return np.array([comb(N_DICE, c) * p**c * (1 - p) ** (N_DICE - c) for c in range(N_DICE + 1)])


def par_chance(rules: Rules) -> np.ndarray:
    """``chance[mask, needed]`` (float64): the chance that the open upper boxes of ``mask`` (bit ``j``: the
    ``j``-th upper box) bring at least ``needed`` points at par, ``needed`` from 0 to the threshold.

    Raises:
        ValueError: the ruleset's upper bonus is not paid at a total of face sums (yacht has none; school
            poker's is settled by the last upper box, on relative scores).
    """
    from dice_poker_env.engine.tables import compile_rules

    tables = compile_rules(rules)
    upper = [box for box in rules.boxes if box.section == "upper"]
    if (
        not tables.has_upper_bonus
        or tables.upper_bonus_on_complete
        or not upper
        or any(box.kind != "face_sum" for box in upper)
    ):
        raise ValueError(f"the par model needs an upper bonus paid at a total of face sums; {rules.name} has none")
    threshold = int(tables.upper_bonus_threshold)
    counts = face_count_distribution()
    chance = np.zeros((1 << len(upper), threshold + 1))
    for mask in range(1 << len(upper)):
        total = np.ones(1)  # the distribution of the open boxes' points
        for j, box in enumerate(upper):
            if mask >> j & 1:
                points = np.zeros(box.face * N_DICE + 1)
                points[:: box.face] = counts
                total = np.convolve(total, points)
        at_least = np.cumsum(total[::-1])[::-1]  # at_least[n] = P(points >= n)
        reach = min(len(at_least), threshold + 1)
        chance[mask, :reach] = at_least[:reach]
    return chance
