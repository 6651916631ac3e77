"""The players: the Agent interface, random, greedy, optimal, SB3 models and make_agent by name."""
