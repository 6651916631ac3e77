"""Returns 2**100 as its action (then a float, then None)."""


class Agent:
    def __init__(self, rules):
        self.calls = 0

    def reset(self):
        self.calls += 1

    def act(self, observation, action_mask):
        return [2**100, 33.0, None][min(self.calls, 3) - 1]
