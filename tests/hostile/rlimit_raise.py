"""Raises its own soft address-space limit to the hard one (and tries infinity), then allocates 1 GiB."""

import resource

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules):
        self.rules = rules
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        for limit in ((hard, hard), (resource.RLIM_INFINITY, resource.RLIM_INFINITY)):
            try:
                resource.setrlimit(resource.RLIMIT_AS, limit)
            except (ValueError, OSError):
                pass
        print("LIMITS", (soft, hard), resource.getrlimit(resource.RLIMIT_AS), flush=True)

    def act(self, observation, action_mask):
        self.hog = np.ones(1 << 30, dtype=np.uint8)  # 1 GiB, touched
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
