"""Players the core package itself provides: uniformly random legal play.

:class:`RandomAgent` is the one random agent of the project: the default
opponent of :class:`~dice_poker_env.multi.seat.SeatEnv`, the stand-in the
terminal game seats for a player that fails, and the benchmark's baseline floor
(``agents.players.random_agent`` re-exports it). Other agents (greedy, optimal, trained
models) live in the ``agents`` package, above this one.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RandomAgent:
    """Uniform over the legal actions of the mask (the baseline floor).

    Keep actions that keep equal multisets are separate legal actions, so this is
    uniform over *actions*, not over distinct decisions, exactly like
    ``env.action_space.sample(mask)``.

    Args:
        seed: seed of the agent's own ``numpy`` generator (``None``: fresh entropy).
        name: the agent's name in benchmark tables.
    """

    obs_mode = "dict"

    def __init__(self, seed: int | None = None, name: str = "random"):
        self.name = name
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        """Re-seed the generator (the benchmark seeds every game, so results do not
        depend on how games are spread over worker processes)."""
        self.rng = np.random.default_rng(seed)

    def reset(self) -> None:
        """Nothing to forget between games."""

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        legal = np.flatnonzero(np.asarray(action_mask))
        if legal.size == 0:
            raise ValueError("no legal action: the game is over (call env.reset())")
        return int(legal[self.rng.integers(legal.size)])

    def act_batch(self, observations: Any, action_masks: np.ndarray) -> np.ndarray:
        """A uniformly random legal action per row of ``action_masks`` (``(B,)`` int64).

        The same distribution as :meth:`act`, drawn differently (one uniform number
        per action, the legal action with the largest wins), so a batch costs a
        few array operations.
        """
        masks = np.asarray(action_masks)
        masks = masks.reshape(-1, masks.shape[-1]) != 0
        if not masks.any(axis=1).all():
            raise ValueError("no legal action: the game is over (call env.reset())")
        return np.argmax(np.where(masks, self.rng.random(masks.shape), -1.0), axis=1).astype(np.int64)
