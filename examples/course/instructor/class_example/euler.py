"""Crashes: its process exits when the first roll of turn 5 totals 26 or more (one game in 62)."""

import os

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules):
        self.rules = rules

    def act(self, observation, action_mask):
        if observation["turn"] == 4 and observation["rolls_left"] == 2 and sum(observation["dice"]) >= 26:
            os._exit(1)
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
