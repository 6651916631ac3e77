"""Stops itself (SIGSTOP) in its first decision."""

import os
import signal


class Agent:
    def act(self, observation, action_mask):
        os.kill(os.getpid(), signal.SIGSTOP)
        return 32
