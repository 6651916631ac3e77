"""Reads another student's submission (and lists the folders around its own)."""

import os

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, other=""):
        self.rules = rules
        found = []
        for path in (other, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.path.basename(other))):
            try:
                with open(path) as handle:
                    found.append(handle.read()[:200])
            except OSError:
                pass
        found.append(os.listdir(os.path.dirname(os.path.abspath(__file__))))
        print("READ", found, flush=True)

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
