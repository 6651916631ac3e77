"""Agents that play the dice environments: random, greedy, optimal (solver) and trained models.

Every agent implements :class:`agents.base.Agent`: ``act(observation, action_mask)``
returns one legal action; ``reset()`` is called at the start of each game.
Layering: agents import the core package (``dice_poker_env``), never the reverse.
"""

from agents.base import Agent

__all__ = ["Agent"]
