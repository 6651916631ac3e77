"""A fork bomb, bounded (300 processes at most, each gone in 30 s): the process limit must stop it far earlier."""

import os
import sys

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, marker="hostile-bomb"):
        self.rules = rules
        made = 0
        for _ in range(300):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(30)", marker])
            made += 1
        print("FORKED", made, flush=True)

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
