"""Multi-player games: a PettingZoo AEC environment and a one-seat Gymnasium view of it.

* :func:`env` / :class:`raw_env` (:mod:`~dice_poker_env.multi.aec`): the PettingZoo
  classic-game environment for 2 to 6 players;
* :class:`SeatEnv` (:mod:`~dice_poker_env.multi.seat`): one seat as a Gymnasium
  env whose other seats are played by given agents;
* :mod:`~dice_poker_env.multi.observations` (what each player sees) and
  :mod:`~dice_poker_env.multi.rewards` (``reward_mode``).

Example::

    from dice_poker_env import multi

    env = multi.env(rules="school_poker", num_players=3)
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else env.action_space(agent).sample(obs["action_mask"])
        env.step(action)
"""

from dice_poker_env.multi.aec import MAX_PLAYERS, MIN_PLAYERS, env, raw_env
from dice_poker_env.multi.observations import multi_observation_space
from dice_poker_env.multi.rewards import REWARD_MODES, default_reward_mode, final_rewards
from dice_poker_env.multi.seat import SeatEnv, as_agent

__all__ = [
    "MAX_PLAYERS",
    "MIN_PLAYERS",
    "REWARD_MODES",
    "SeatEnv",
    "as_agent",
    "default_reward_mode",
    "env",
    "final_rewards",
    "multi_observation_space",
    "raw_env",
]
