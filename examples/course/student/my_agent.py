"""Starter agent for the dice-poker assignment: edit ``MyAgent.act`` (see README.md).

Check it locally with the same sandbox and grader the course uses (README.md):

    dice-poker check my_agent.py:MyAgent --config practice.toml
    dice-poker grade my_agent.py:MyAgent --config practice.toml --games 200 --out my_report   # my_report/report.html

(or ``python -m agents.commands.check ...`` and ``python -m agents.commands.grade ...``, the same commands).
"""

import numpy as np

from dice_poker_env.engine import score

N_KEEP_ACTIONS = 32  # actions 0..31 keep dice (bit i = die i of the sorted dice); 32 + k scores box k


class MyAgent:
    """Rerolls toward the most common face, then writes the box that scores most.

    Args:
        rules: the ruleset played (filled in by the grader): ``rules.box_names`` are
            the boxes, ``score(rules, dice, box)`` what any dice score in a box.
        enough: stop rerolling once some open box would score at least this much.
    """

    def __init__(self, rules, enough=25):
        self.rules = rules
        self.enough = enough

    def reset(self):
        """Called before each game (optional)."""

    def act(self, observation, action_mask):
        """Return one legal action for ``observation`` (a dict, see the docs) and ``action_mask``."""
        dice = observation["dice"]  # sorted, e.g. array([1, 2, 2, 4, 6])
        boxes = np.flatnonzero(action_mask[N_KEEP_ACTIONS:])  # the boxes the dice may go in now
        points = {int(k): score(self.rules, dice.tolist(), int(k)) for k in boxes}
        best_box = max(points, key=points.get)
        if observation["rolls_left"] == 0 or points[best_box] >= self.enough:
            return N_KEEP_ACTIONS + best_box
        # TODO: a better keep. This one keeps the dice of the most common face (the highest on ties).
        counts = np.bincount(dice, minlength=7)
        face = max(range(1, 7), key=lambda f: (counts[f], f))
        keep = sum(1 << i for i, d in enumerate(dice) if d == face)
        if not action_mask[keep]:  # five of a kind: keeping all five dice (31) is never legal, so score
            return N_KEEP_ACTIONS + best_box
        return keep
