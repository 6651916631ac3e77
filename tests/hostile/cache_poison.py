"""Rewrites the solver cache (every file in the grader's cache folder, and the default one) with garbage."""

import glob
import os

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, cache=""):
        self.rules = rules
        done = []
        for folder in (cache, os.path.expanduser("~/.cache/dice_poker_env"), "/root/.cache/dice_poker_env"):
            for path in glob.glob(os.path.join(folder, "*")):
                try:
                    with open(path, "r+b") as handle:
                        handle.seek(64)
                        handle.write(b"\xff" * 64)
                    done.append(path)
                except OSError:
                    pass
            try:
                with open(os.path.join(folder, "planted.bin"), "wb") as handle:
                    handle.write(b"x")
                done.append(folder)
            except OSError:
                pass
        print("POISONED", done, flush=True)

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
