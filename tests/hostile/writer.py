"""Writes files into the repository, $HOME and /tmp (the paths the test watches), /dev and /dev/shm (a tmpfs past
the scratch limit, were /dev writable), and its own scratch."""

import os

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, targets=""):
        self.rules = rules
        wrote = []
        for path in [
            *targets.split("|"),
            os.path.expanduser("~/hostile-home.txt"),
            "/dev/shm/hostile.txt",
            "/dev/hostile.txt",
            "/tmp/hostile-scratch.txt",
        ]:
            try:
                with open(path, "w") as handle:
                    handle.write("written by a submission")
                wrote.append(path)
            except OSError:
                pass
        print("WROTE", wrote, flush=True)

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
