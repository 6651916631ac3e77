"""Weak: a random legal action (seeded per game by the grader's seed() call)."""

import numpy as np


class RandomPlayer:
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask):
        return int(self.rng.choice(np.flatnonzero(action_mask)))
