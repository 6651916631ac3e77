"""Env wrappers for training: coping with illegal actions, one action per keep, scaling rewards.

Masked algorithms (sb3-contrib's ``MaskablePPO``) never pick an illegal action.
Unmasked ones (PPO, A2C, DQN) do, and the raw env would end the episode there
(``illegal_action="terminate"``), which wastes most early episodes. The
documented way this project lets them cope is :class:`LegalActionWrapper`:

* an illegal action is **replaced** by a legal fallback, the score action of the
  legal box with the most points right now (what :class:`agents.players.greedy.GreedyAgent`
  scores; always legal before the game ends). This is the natural reading of the
  common illegal actions: action 31 "keep all dice" and a keep with no rerolls
  left both mean "stop rolling", and scoring a filled box is corrected to the best
  open one;
* the episode goes on, so the return still equals the final score of the game
  that was actually played (the agent is judged on real games);
* optionally ``penalty`` points are subtracted from the step's reward each time,
  so the agent learns to avoid relying on the fallback (default 0);
* ``info["illegal_replaced"]`` is ``True`` on such steps and
  ``info["illegal_action_taken"]`` holds the original action.

The same fallback is applied when a trained unmasked model is played by
:class:`agents.players.sb3_agent.SB3Agent`, so evaluation and training agree.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from agents.players.greedy import best_box_action
from dice_poker_env.engine.combinatorics import distinct_keep_mask


def _dice_env(env: gym.Env) -> Any:
    """``env.unwrapped``: a dice-poker env (typed Any: its ``tables``, ``state`` and ``action_masks`` are read)."""
    return env.unwrapped


def legal_fallback(env: gym.Env, action: int, mask: np.ndarray) -> int:
    """``action`` if legal in ``mask``, else the best-box fallback of ``env``'s position."""
    action = int(action)
    if 0 <= action < len(mask) and mask[action]:
        return action
    base = _dice_env(env)
    return best_box_action(base.tables, base.state, mask)


class LegalActionWrapper(gym.Wrapper):
    """Maps an illegal action to a legal fallback (see the module docstring).

    Args:
        env: a :class:`~dice_poker_env.envs.single.DicePokerEnv` (possibly wrapped).
        penalty: points subtracted from the reward of a step whose action was replaced.
    """

    def __init__(self, env: gym.Env, penalty: float = 0.0) -> None:
        super().__init__(env)
        self.penalty = float(penalty)
        self._mask: np.ndarray | None = None
        self.replaced = 0  #: illegal actions replaced since construction

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._mask = info["action_mask"]
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        mask = self._mask if self._mask is not None else _dice_env(self.env).action_masks()
        legal = legal_fallback(self.env, int(action), mask)
        obs, reward, terminated, truncated, info = self.env.step(legal)
        self._mask = info["action_mask"]
        if legal != int(action):
            self.replaced += 1
            info["illegal_replaced"] = True
            info["illegal_action_taken"] = int(action)
            reward = float(reward) - self.penalty
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return _dice_env(self.env).action_masks()


class DistinctKeepWrapper(gym.Wrapper):
    """Masks show each distinct keep once (training and evaluating masked models).

    Keep bitmasks that keep equal dice are the same move; ``action_masks()`` and
    ``info["action_mask"]`` keep only the lowest of them
    (:func:`~dice_poker_env.engine.combinatorics.distinct_keep_mask`), so a masked policy has
    one action per keep. The env itself is unchanged (it accepts every bitmask).
    """

    def _filtered(self, info: dict) -> dict:
        if "action_mask" in info:
            info["action_mask"] = distinct_keep_mask(info["action_mask"], _dice_env(self.env).state.roll)
        return info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        return obs, self._filtered(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._filtered(info)

    def action_masks(self) -> np.ndarray:
        base = _dice_env(self.env)
        return distinct_keep_mask(base.action_masks(), base.state.roll)


class ScaleReward(gym.RewardWrapper):
    """Multiplies rewards by ``scale`` (training only; evaluation uses raw scores).

    ``info["final_score"]`` is untouched, so episode scores stay readable.
    """

    def __init__(self, env: gym.Env, scale: float) -> None:
        super().__init__(env)
        self.scale = float(scale)

    def reward(self, reward: SupportsFloat) -> float:
        return float(reward) * self.scale

    def action_masks(self) -> np.ndarray:
        return _dice_env(self.env).action_masks()
