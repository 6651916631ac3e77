"""Floods standard output (or error) with 20 MB in its first decision."""

import os


class Agent:
    def __init__(self, rules, stream=1):
        self.stream = int(stream)

    def act(self, observation, action_mask):
        chunk = b"x" * (1 << 20)
        for _ in range(20):
            try:
                os.write(self.stream, chunk)
            except OSError:
                break
        return 32
