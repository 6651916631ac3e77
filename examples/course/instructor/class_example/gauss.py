"""Slow: thinks too long (past the decision time limit) when a game starts with a roll of 26 or more (one game in 62)."""

import time

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules):
        self.rules = rules

    def act(self, observation, action_mask):
        if observation["turn"] == 0 and observation["rolls_left"] == 2 and sum(observation["dice"]) >= 26:
            time.sleep(10)
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
