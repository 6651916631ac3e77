"""Agents that play the dice environments: random, greedy, optimal (solver) and trained models.

Every agent implements :class:`agents.players.base.Agent`: ``act(observation, action_mask)``
returns one legal action; ``reset()`` is called at the start of each game.

Layers, lowest first (a module imports only its own subpackage, lower ones and the core
``dice_poker_env``; ``tests/test_architecture.py`` checks it): ``policy`` (the trained policy's
file format and NumPy player), ``players``, ``evaluation``, ``training`` and ``course`` (which
never import each other), ``commands`` (the ``dice-poker`` subcommands), then ``train.py``.
"""

from agents.players.base import Agent

__all__ = ["Agent"]
