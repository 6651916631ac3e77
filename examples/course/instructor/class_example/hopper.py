"""Illegal: keeps all five dice (never a legal action) on the sixth turn of every game."""

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules):
        self.rules = rules

    def act(self, observation, action_mask):
        if observation["turn"] == 5 and observation["rolls_left"] > 0:
            return 31
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
