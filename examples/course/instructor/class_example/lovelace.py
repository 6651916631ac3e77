"""Good, with a helper class (no act method): the grader finds the one agent class."""

import numpy as np

from dice_poker_env.engine import score


class Scorer:
    def __init__(self, rules):
        self.rules = rules

    def points(self, dice, boxes):
        return {int(k): score(self.rules, dice, int(k)) for k in boxes}


class Player:
    def __init__(self, rules):
        self.scorer = Scorer(rules)

    def act(self, observation, action_mask):
        dice = observation["dice"]
        points = self.scorer.points(dice.tolist(), np.flatnonzero(action_mask[32:]))
        best = max(points, key=points.get)
        if observation["rolls_left"] == 0 or points[best] >= 20:
            return 32 + best
        counts = np.bincount(dice, minlength=7)
        face = max(range(1, 7), key=lambda f: (counts[f], f))
        keep = sum(1 << i for i, d in enumerate(dice) if d == face)
        return keep if action_mask[keep] else 32 + best
