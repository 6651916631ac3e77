"""Gymnasium front ends over the engine."""

from dice_poker_env.envs.illegal import IllegalActionError
from dice_poker_env.envs.single import DicePokerEnv

__all__ = ["DicePokerEnv", "IllegalActionError"]
