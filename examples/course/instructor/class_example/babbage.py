"""Good: keeps toward the most common face, prefers the upper box of that face, never wastes a box early."""

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules):
        self.rules = rules
        self.names = list(rules.box_names)

    def act(self, observation, action_mask):
        dice = observation["dice"]
        boxes = [int(k) for k in np.flatnonzero(action_mask[32:])]
        points = {k: score(self.rules, dice.tolist(), k) for k in boxes}
        counts = np.bincount(dice, minlength=7)
        face = max(range(1, 7), key=lambda f: (counts[f], f))
        best = max(boxes, key=lambda k: (points[k] + (5 if points[k] > 0 and k < 6 else 0), -k))
        if observation["rolls_left"] == 0 or points[best] >= 25:
            return 32 + best
        keep = sum(1 << i for i, d in enumerate(dice) if d == face)
        return keep if action_mask[keep] else 32 + best
