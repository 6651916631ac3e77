"""Adapters to third-party RL libraries (each imports its library only inside its own module).

* :mod:`dice_poker_env.integrations.sb3`: a Stable-Baselines3 ``VecEnv`` over the
  batched :class:`~dice_poker_env.envs.vector.DicePokerVectorEnv` (needs the
  ``train`` extra).
"""
