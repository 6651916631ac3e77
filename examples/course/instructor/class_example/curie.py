"""Weak: never rerolls, writes the dice where they score most right away."""

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules):
        self.rules = rules

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
