"""dice_poker_env: exact, fast RL environments for the Yahtzee family of dice games.

Quick start::

    import dice_poker_env

    env = dice_poker_env.make("yahtzee", joker="free")  # or gymnasium.make("DicePoker/Yahtzee-v0", joker="free")
    obs, info = env.reset(seed=0)
    action = env.action_space.sample(info["action_mask"])
    solution = dice_poker_env.solve("yahtzee", joker="free")

Importing the package registers the ``DicePoker/*`` env ids with Gymnasium.
The names below are the ones a user needs first; the env classes and the solver
are imported on first use (module ``__getattr__``), so ``import dice_poker_env``
stays light.

Layering (imports only point downwards): ``rules`` -> ``engine`` -> ``envs`` /
``solver`` -> ``cli``. ``torch`` is never imported here, nor the top-level
``agents`` package or ``train.py``, which build on this one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dice_poker_env.dice_sources import DiceSource, RandomDice, ScriptedDice
from dice_poker_env.engine.position import PositionError
from dice_poker_env.registration import ENV_IDS, make, make_vec, register_envs
from dice_poker_env.rules import RULESET_NAMES, Rules, RulesError, load_rules, ruleset_options

__version__ = "0.1.0"

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (at run time they load on first use)
    from dice_poker_env import envs as envs  # (re-exported: the "as")
    from dice_poker_env import multi as multi
    from dice_poker_env import solver as solver
    from dice_poker_env.envs.illegal import IllegalActionError
    from dice_poker_env.envs.single import DicePokerEnv
    from dice_poker_env.envs.vector import DicePokerVectorEnv
    from dice_poker_env.solver import Solution, SolverError, solve

#: names imported on first use: name -> (module, attribute); attribute None: the module itself
_LAZY = {
    "solve": ("dice_poker_env.solver", "solve"),
    "Solution": ("dice_poker_env.solver", "Solution"),
    "SolverError": ("dice_poker_env.solver", "SolverError"),
    "DicePokerEnv": ("dice_poker_env.envs.single", "DicePokerEnv"),
    "IllegalActionError": ("dice_poker_env.envs.illegal", "IllegalActionError"),
    "DicePokerVectorEnv": ("dice_poker_env.envs.vector", "DicePokerVectorEnv"),
    "multi": ("dice_poker_env.multi", None),
    "solver": ("dice_poker_env.solver", None),
    "envs": ("dice_poker_env.envs", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # the next lookup is an ordinary one
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


register_envs()

__all__ = [
    "DicePokerEnv",
    "DicePokerVectorEnv",
    "DiceSource",
    "ENV_IDS",
    "IllegalActionError",
    "PositionError",
    "RULESET_NAMES",
    "RandomDice",
    "Rules",
    "RulesError",
    "ScriptedDice",
    "Solution",
    "SolverError",
    "load_rules",
    "make",
    "make_vec",
    "ruleset_options",
    "solve",
]
