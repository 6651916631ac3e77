"""dice_poker_env: exact, fast RL environments for the Yahtzee family of dice games.

Quick start::

    import gymnasium as gym
    import dice_poker_env  # registers the DicePoker/* ids

    env = gym.make("DicePoker/Yahtzee-v0", joker="free")
    obs, info = env.reset(seed=0)
    action = env.action_space.sample(info["action_mask"])

Layering (imports only point downwards): ``rules`` -> ``engine`` -> ``envs`` /
``solver`` -> ``agents`` -> training and CLI. ``torch`` is never imported here.
"""

from __future__ import annotations

from dice_poker_env.dice import DiceSource, RandomDice, ScriptedDice
from dice_poker_env.engine.position import PositionError
from dice_poker_env.rules import RULESET_NAMES, Rules, RulesError, load_rules, ruleset_options

__version__ = "0.1.0"

#: Registered env ids and the ruleset each plays.
ENV_IDS = {
    "DicePoker/Yacht-v0": "yacht",
    "DicePoker/DicePoker-v0": "dice_poker",
    "DicePoker/SchoolPoker-v0": "school_poker",
    "DicePoker/Yahtzee-v0": "yahtzee",
    "DicePoker/Yatzy-v0": "yatzy",
    "DicePoker/Custom-v0": None,
}


def _register() -> None:
    from gymnasium.envs.registration import register, registry

    for env_id, ruleset in ENV_IDS.items():
        if env_id in registry:
            continue
        register(
            id=env_id,
            entry_point="dice_poker_env.envs.single:DicePokerEnv",
            vector_entry_point="dice_poker_env.envs.vector:DicePokerVectorEnv",
            kwargs={"rules": ruleset} if ruleset else {},
        )


_register()

__all__ = [
    "DiceSource",
    "ENV_IDS",
    "PositionError",
    "RULESET_NAMES",
    "RandomDice",
    "Rules",
    "RulesError",
    "ScriptedDice",
    "load_rules",
    "ruleset_options",
]
