"""The small interface every agent implements."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """Plays one seat of a dice game from what the env shows.

    ``observation`` is the env's observation (``obs_mode="dict"`` unless the agent
    says otherwise) and ``action_mask`` the env's ``np.int8`` mask
    (``info["action_mask"]`` or ``env.action_masks()``). ``act`` must return a
    legal action (an ``int``).
    """

    name: str

    def act(self, observation: Any, action_mask: np.ndarray) -> int: ...

    def reset(self) -> None: ...
