"""Does not load: it imports a library the grader does not have."""

import a_library_nobody_installed  # noqa: F401
import numpy as np


class Agent:
    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[-1])
