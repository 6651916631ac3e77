"""The Gymnasium env ids of the package, their registration, and ``make`` helpers.

:func:`register_envs` runs when ``dice_poker_env`` is imported (the way
Gymnasium's documentation registers third-party envs), so after
``import dice_poker_env`` every id below works with ``gymnasium.make`` and
``gymnasium.make_vec``; ``gymnasium.make("dice_poker_env:DicePoker/Yacht-v0")``
imports the package itself first.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import gymnasium as gym
    from gymnasium.vector import VectorEnv

    from dice_poker_env.rules import Rules

#: Registered env ids and the ruleset each plays (``Custom-v0``: the ``rules=`` keyword).
ENV_IDS = {
    "DicePoker/Yacht-v0": "yacht",
    "DicePoker/DicePoker-v0": "dice_poker",
    "DicePoker/SchoolPoker-v0": "school_poker",
    "DicePoker/Yahtzee-v0": "yahtzee",
    "DicePoker/Yatzy-v0": "yatzy",
    "DicePoker/Custom-v0": None,
}
CUSTOM_ID = "DicePoker/Custom-v0"


def register_envs() -> None:
    """Register every id of :data:`ENV_IDS` with Gymnasium (ids already registered are left alone)."""
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


def env_id_for(rules: str | os.PathLike[str] | Rules) -> tuple[str, dict[str, Any]]:
    """The registered id that plays ``rules`` and the keywords it still needs.

    A shipped ruleset's name gives its own id; a rules file or a
    :class:`~dice_poker_env.rules.Rules` object gives ``Custom-v0`` with ``rules=``.
    """
    for env_id, ruleset in ENV_IDS.items():
        if ruleset is not None and isinstance(rules, str) and rules == ruleset:
            return env_id, {}
    return CUSTOM_ID, {"rules": rules}


def make(rules: str | os.PathLike[str] | Rules = "yacht", **kwargs: Any) -> gym.Env[Any, Any]:
    """``gymnasium.make`` of the env that plays ``rules``: ``make("yahtzee", joker="free")``.

    Keyword arguments go to :class:`~dice_poker_env.envs.single.DicePokerEnv`
    (rules options, ``obs_mode``, ``render_mode``, ...) and to ``gymnasium.make``
    (``max_episode_steps``, ``disable_env_checker``, ...).
    """
    import gymnasium

    env_id, needed = env_id_for(rules)
    return gymnasium.make(env_id, **needed, **kwargs)


def make_vec(
    rules: str | os.PathLike[str] | Rules = "yacht", num_envs: int = 1, **kwargs: Any
) -> VectorEnv[Any, Any, Any]:
    """The NumPy-batched vector env of ``num_envs`` games of ``rules`` (``gymnasium.make_vec``
    with ``vectorization_mode="vector_entry_point"``)."""
    import gymnasium

    env_id, needed = env_id_for(rules)
    kwargs.setdefault("vectorization_mode", "vector_entry_point")
    return gymnasium.make_vec(env_id, num_envs=num_envs, **needed, **kwargs)
