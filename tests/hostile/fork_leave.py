"""Forks a daemon (double fork, new session) that outlives the worker, marked on its command line."""

import os
import sys

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, marker="hostile-marker"):
        self.rules = rules
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", marker])
            os._exit(0)
        os.wait()

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
