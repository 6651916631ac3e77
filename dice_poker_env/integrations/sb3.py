"""Stable-Baselines3 ``VecEnv`` over the NumPy-batched env (MaskablePPO included).

Instead of ``SubprocVecEnv([make_env] * N)`` (N processes, one game each)::

    from sb3_contrib import MaskablePPO
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("DicePoker/Yahtzee-v0", n_envs=256, seed=0, obs_mode="flat")
    model = MaskablePPO("MlpPolicy", venv, seed=0).learn(1_000_000)

All N games live in one :class:`~dice_poker_env.envs.vector.DicePokerVectorEnv`
in this process, stepped together (``SAME_STEP`` autoreset, the convention SB3
expects: an ended game's last observation is ``infos[i]["terminal_observation"]``
and the returned observation already starts the next game). sb3-contrib gets
the masks with ``env_method("action_masks")``, answered from the batch's
``(N, n_actions)`` mask in one call. Wrap in ``VecMonitor`` for episode
statistics (``infos[i]["final_score"]`` also carries each ended game's score).

Stable-Baselines3 is imported here only, never by the rest of the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.vector_env import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn

from dice_poker_env.engine.combinatorics import distinct_keep_mask
from dice_poker_env.envs.vector import DicePokerVectorEnv


def make_sb3_vec_env(
    env_id: str, n_envs: int, *, seed: int | None = None, distinct_keeps: bool = False, **kwargs: Any
) -> DicePokerSB3VecEnv:
    """An SB3 ``VecEnv`` of ``n_envs`` batched games of a registered id (``kwargs``: env arguments).

    ``distinct_keeps``: masks show each distinct keep once (see :class:`DicePokerSB3VecEnv`).
    """
    venv = gym.make_vec(
        env_id,
        num_envs=n_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP,
        **kwargs,
    )
    sb3_env = DicePokerSB3VecEnv(venv, distinct_keeps=distinct_keeps)
    if seed is not None:
        sb3_env.seed(seed)
    return sb3_env


class DicePokerSB3VecEnv(VecEnv):
    """Stable-Baselines3's ``VecEnv`` interface over a :class:`DicePokerVectorEnv`.

    Args:
        venv: the batched env, made with ``autoreset_mode=SAME_STEP``.
        distinct_keeps: ``action_masks()`` shows each distinct keep once (the lowest
            of the bitmasks keeping the same dice, :func:`~dice_poker_env.engine.combinatorics.distinct_keep_mask`).
            The env still accepts the others (they are the same move); a masked
            policy then has one action per keep, which measurably helps MaskablePPO
            (docs/training.md). Models trained so record it (``train.py``) and
            :class:`agents.players.sb3_agent.SB3Agent` applies the same mask when playing.

    Seeding: ``seed(s)`` (SB3's API) makes the next ``reset()`` seed the batch
    with ``s``, which fixes all N games. Per-game ``set_options`` entries become
    the batched env's ``positions`` reset option.
    """

    def __init__(self, venv: DicePokerVectorEnv, *, distinct_keeps: bool = False):
        base = venv.unwrapped
        if not isinstance(base, DicePokerVectorEnv):
            raise TypeError(f"expected a DicePokerVectorEnv, got {type(base).__name__}")
        if base.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                "Stable-Baselines3 needs SAME_STEP autoreset; make the env with autoreset_mode=AutoresetMode.SAME_STEP"
            )
        self.venv = venv
        self.base = base
        self.distinct_keeps = bool(distinct_keeps)
        self._actions: np.ndarray | None = None
        super().__init__(base.num_envs, base.single_observation_space, base.single_action_space)

    # ------------------------------------------------------------ stepping
    def reset(self) -> VecEnvObs:
        seed = self._seeds[0]
        options = None
        if any(self._options):
            options = {"positions": [opts or None for opts in self._options]}
        obs, info = self.venv.reset(seed=seed, options=options)
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64, copy=False)

    def step_wait(self) -> VecEnvStepReturn:
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        rows = np.flatnonzero(dones)
        if len(rows):
            final_obs = info["final_obs"]
            final_info = info["final_info"]
            final_score = final_info.get("final_score")
            illegal = final_info.get("illegal_action")
            for i in rows:
                entry = infos[i]
                entry["terminal_observation"] = final_obs[i]
                entry["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                if final_score is not None:
                    entry["final_score"] = int(final_score[i])
                if illegal is not None and illegal[i]:
                    entry["illegal_action"] = True
        return obs, reward.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    # --------------------------------------------------------- attributes
    def action_masks(self) -> np.ndarray:
        """``(N, n_actions)`` int8 masks of all games."""
        masks = self.base.action_masks()
        if self.distinct_keeps:
            masks = distinct_keep_mask(masks, self.base.state.roll)
        return masks

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self.base, attr_name)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self.base, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self.base, attr_name, value)

    def env_method(
        self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs
    ) -> Sequence[Any]:
        """``action_masks`` returns the masks of the selected games, ``(k, n_actions)`` (a sequence of rows).

        Any other method is called once on the batched env and its result given for each selected game.
        """
        if method_name == "action_masks":
            masks = self.action_masks()
            if indices is None:
                return masks
            return masks[list(self._get_indices(indices))]
        result = getattr(self.base, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]
