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

import importlib.abc
import importlib.util
import sys

from dice_poker_env.dice_sources import DiceSource, RandomDice, ScriptedDice
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
            kwargs={"rules": ruleset},  # Custom-v0: None until the user passes rules= (a clear RulesError otherwise)
        )


class _RegisterWithGymnasium(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Registers the env ids the moment ``gymnasium.envs.registration`` is imported.

    Importing gymnasium costs about 80 ms, which a program that only solves or
    benchmarks (``dice-poker solve``) need not pay. Anyone who calls
    ``gym.make`` has imported gymnasium by then, and that import runs the
    registration; when gymnasium is already loaded, it runs at once.
    """

    _NAME = "gymnasium.envs.registration"

    def find_spec(self, name, path, target=None):
        if name != self._NAME:
            return None
        sys.meta_path.remove(self)  # let the usual finders locate the module
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _register()


if _RegisterWithGymnasium._NAME in sys.modules:
    _register()
else:
    sys.meta_path.insert(0, _RegisterWithGymnasium())

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
