"""Gymnasium front ends over the engine."""

from dice_poker_env.envs.single import DicePokerEnv, IllegalActionError

__all__ = ["DicePokerEnv", "IllegalActionError"]
