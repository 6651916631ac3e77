"""Plays the library's own heuristic agent (94% of optimal) as its own: imports it (``mode=import``), or reads its
source file to run it where the import is refused (``mode=source``). Under ``solver = "forbid"`` both fail to load."""

import os

import numpy as np

import agents
from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, mode="import"):
        self.rules = rules
        if mode == "import":
            from agents.players.heuristic import LookaheadAgent  # noqa: F401 - the import is the point
        else:
            path = os.path.join(os.path.dirname(agents.__file__), "players", "heuristic.py")
            with open(path) as handle:  # the source, to run under another name
                print(f"read {len(handle.read())} characters of the heuristic's source")

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
