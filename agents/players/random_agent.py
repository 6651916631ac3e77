"""The seeded uniformly random agent: :class:`dice_poker_env.players.RandomAgent`, the project's one random agent."""

from dice_poker_env.players import RandomAgent

__all__ = ["RandomAgent"]
