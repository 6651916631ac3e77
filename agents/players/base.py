"""The small interface every agent implements."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from dice_poker_env.rules import Rules


@runtime_checkable
class Agent(Protocol):
    """Plays one seat of a dice game from what the env shows.

    ``observation`` is the env's observation (``obs_mode="dict"`` unless the agent
    says otherwise) and ``action_mask`` the env's ``np.int8`` mask
    (``info["action_mask"]`` or ``env.action_masks()``). ``act`` must return a
    legal action (an ``int``).
    """

    name: str

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        """The action for ``observation``: a legal one (``action_mask[action] == 1``), as an ``int``."""
        ...

    def reset(self) -> None:
        """Called before each game: forget what the last game left."""
        ...


class BatchAgent(Protocol):
    """Plays many games of one ruleset at once from their dict observations (the optimal, winning, greedy and
    heuristic agents): ``act_batch`` returns a legal ``(B,)`` int64 action for each game."""

    rules: Rules

    def act_batch(self, observations: Mapping[str, Any], action_masks: np.ndarray) -> np.ndarray: ...
