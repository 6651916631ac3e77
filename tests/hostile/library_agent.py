"""Plays the library's own heuristic agent (92.7% of optimal on Yahtzee, luck-free) as its own: imports it (``mode=import``), reads its
source file to run it where the import is refused (``mode=source``), loads its compiled copy, which no import hook
sees (``mode=pyc``), or reads a trained policy's weights (``mode=policies``). Under ``solver = "forbid"`` all fail
to load."""

import glob
import importlib.machinery
import os

import numpy as np

import agents
from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, mode="import"):
        self.rules = rules
        if mode == "import":
            from agents.players.heuristic import LookaheadAgent  # noqa: F401 - the import is the point
        elif mode == "pyc":
            found = glob.glob(os.path.join(os.path.dirname(agents.__file__), "players", "__pycache__", "heuristic.*"))
            if not found:
                raise FileNotFoundError("no compiled copy of the heuristic")
            importlib.machinery.SourcelessFileLoader("stolen_heuristic", found[0]).load_module()
        elif mode == "policies":
            with open(os.path.join(os.path.dirname(agents.__file__), "policies", "yacht.npz"), "rb") as handle:
                print(f"read {len(handle.read())} bytes of a trained policy")
        else:
            path = os.path.join(os.path.dirname(agents.__file__), "players", "heuristic.py")
            with open(path) as handle:  # the source, to run under another name
                print(f"read {len(handle.read())} characters of the heuristic's source")

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
