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
statistics. The infos are the single env's, per game, as ``DummyVecEnv`` gives
them (``full_infos=False``: the ended games' keys only, a little faster).

Stable-Baselines3 is imported here only, never by the rest of the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.vector_env import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn

from dice_poker_env.engine.combinatorics import distinct_keep_mask
from dice_poker_env.envs.vector import DicePokerVectorEnv


def make_sb3_vec_env(
    env_id: str,
    n_envs: int,
    *,
    seed: int | None = None,
    distinct_keeps: bool = False,
    full_infos: bool = True,
    **kwargs: Any,
) -> DicePokerSB3VecEnv:
    """An SB3 ``VecEnv`` of ``n_envs`` batched games of a registered id (``kwargs``: env arguments).

    ``distinct_keeps``: masks show each distinct keep once; ``full_infos``: every info key of the single env
    (see :class:`DicePokerSB3VecEnv`).
    """
    venv = gym.make_vec(
        env_id,
        num_envs=n_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP,
        **kwargs,
    )
    sb3_env = DicePokerSB3VecEnv(venv, distinct_keeps=distinct_keeps, full_infos=full_infos)
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
        full_infos: the infos are the single env's, per game, as ``DummyVecEnv`` over it gives them (default):
            ``action_mask`` and ``score`` for every game (``reset_infos`` too); for a game that ended,
            its end info (``final_score``, ``scorecard``, ``illegal_action`` and ``illegal_reason``
            after an illegal action, ``terminal_observation``, ``TimeLimit.truncated``), its new
            game's in ``reset_infos``. ``False``: only the ended games' ``terminal_observation``,
            ``TimeLimit.truncated``, ``final_score`` and ``illegal_action``, other infos empty (what
            SB3's algorithms and ``VecMonitor`` read; the adapter's step is faster: docs/vector.md).

    Seeding: ``seed(s)`` (SB3's API) makes the next ``reset()`` seed the batch
    with ``s``, which fixes all N games. Per-game ``set_options`` entries become
    the batched env's ``positions`` reset option.

    ``get_attr``, ``set_attr`` and ``env_method`` take SB3's ``indices``: ``get_attr("score")`` gives each
    selected game its score and ``env_method("render")`` its text; every other attribute is a setting of the
    whole batch (read alike for each game), and setting one, or calling another method, for a strict subset
    of the games is a ``ValueError``.
    """

    def __init__(
        self, venv: VectorEnv[Any, Any, Any], *, distinct_keeps: bool = False, full_infos: bool = True
    ) -> None:
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
        self.full_infos = bool(full_infos)
        self._actions: np.ndarray | None = None
        super().__init__(base.num_envs, base.single_observation_space, base.single_action_space)

    # ------------------------------------------------------------ stepping
    def reset(self) -> VecEnvObs:
        seed = self._seeds[0]
        options = None
        if any(self._options):
            options = {"positions": [opts or None for opts in self._options]}
        obs, info = self.venv.reset(seed=seed, options=options)
        self.reset_infos = _game_infos(self._masked(info)) if self.full_infos else [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64, copy=False)

    def step_wait(self) -> VecEnvStepReturn:
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        if not self.full_infos:
            return obs, reward.astype(np.float32), dones, self._ended_keys(info, terminated, truncated, dones)
        infos = _game_infos(self._masked(info))  # the new games' for those that ended (SAME_STEP): their reset infos
        rows = np.flatnonzero(dones)
        if len(rows):
            ended = _ended_infos(info["final_info"], rows, self.base.rules.box_names)
            final_obs = info["final_obs"]
            timeouts = (truncated[rows] & ~terminated[rows]).tolist()
            for i, entry, timeout in zip(rows.tolist(), ended, timeouts):
                self.reset_infos[i] = infos[i]
                entry["terminal_observation"] = final_obs[i]
                entry["TimeLimit.truncated"] = timeout
                infos[i] = entry
        return obs, reward.astype(np.float32), dones, infos

    def _masked(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` with the masks :meth:`action_masks` gives (``distinct_keeps``: each distinct keep once)."""
        if not self.distinct_keeps:
            return info
        assert self.base.state is not None  # (after a reset or a step)
        return {**info, "action_mask": distinct_keep_mask(info["action_mask"], self.base.state.roll)}

    def _ended_keys(
        self, info: dict[str, Any], terminated: np.ndarray, truncated: np.ndarray, dones: np.ndarray
    ) -> list[dict[str, Any]]:
        """``full_infos=False``'s infos: the ended games' ``terminal_observation``, ``TimeLimit.truncated``,
        ``final_score`` and ``illegal_action``; the others empty."""
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        rows = np.flatnonzero(dones)
        if not len(rows):
            return infos
        final_obs, final_info = info["final_obs"], info["final_info"]
        final_scores = final_info["final_score"][rows].tolist()
        timeouts = (truncated[rows] & ~terminated[rows]).tolist()
        illegal = final_info["illegal_action"][rows].tolist() if "illegal_action" in final_info else None
        for j, i in enumerate(rows.tolist()):
            entry = infos[i]
            entry["terminal_observation"] = final_obs[i]
            entry["TimeLimit.truncated"] = timeouts[j]
            entry["final_score"] = final_scores[j]
            if illegal is not None and illegal[j]:
                entry["illegal_action"] = True
        return infos

    def close(self) -> None:
        self.venv.close()

    # --------------------------------------------------------- attributes
    def action_masks(self) -> np.ndarray:
        """``(N, n_actions)`` int8 masks of all games."""
        masks = self.base.action_masks()
        if self.distinct_keeps:
            assert self.base.state is not None  # action_masks() raised ResetNeeded otherwise
            masks = distinct_keep_mask(masks, self.base.state.roll)
        return masks

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self.base, attr_name)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """One value per selected game: a game's own where the batched env has one per game (``score``: an
        int each), the single env's space for ``observation_space`` / ``action_space``, else the batch's value
        (a setting shared by every game)."""
        rows = self._rows(indices)
        if attr_name in _SINGLE_SPACES:
            value = getattr(self.base, _SINGLE_SPACES[attr_name])
        elif attr_name in _PER_GAME_ATTRIBUTES:
            values = getattr(self.base, attr_name).tolist()
            return [values[i] for i in rows]
        else:
            value = getattr(self.base, attr_name)
        return [value for _ in rows]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set a setting of the batched env; it applies to all N games, so ``indices`` must select them all."""
        self._require_all(self._rows(indices), f"set_attr({attr_name!r})", "a setting")
        setattr(self.base, attr_name, value)

    # SB3 declares list[Any]; the masks come back as one (k, n_actions) array of rows, which is what
    # sb3-contrib's get_action_masks stacks (and the cheapest form to build)
    def env_method(  # type: ignore[override]
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> Sequence[Any] | np.ndarray:
        """``action_masks`` returns the masks of the selected games, ``(k, n_actions)`` (a sequence of rows);
        ``render`` each selected game's text.

        Any other method acts on the whole batch: it is called once, with ``indices`` selecting all N games
        (``None``), and its result given for each game; a strict subset is a ``ValueError``.
        """
        if method_name == "action_masks":
            masks = self.action_masks()
            if indices is None:
                return masks
            return masks[self._rows(indices)]
        rows = self._rows(indices)
        if method_name in _PER_GAME_METHODS:
            result = getattr(self.base, method_name)(*method_args, **method_kwargs)
            return [None if result is None else result[i] for i in rows]
        self._require_all(rows, f"env_method({method_name!r})", "a method")
        result = getattr(self.base, method_name)(*method_args, **method_kwargs)
        return [result for _ in rows]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]], indices: VecEnvIndices = None
    ) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]

    def _rows(self, indices: VecEnvIndices) -> list[int]:
        """The game indices ``indices`` selects (SB3's forms: ``None`` for all, an int, an iterable of ints)."""
        rows = list(self._get_indices(indices))
        for i in rows:
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.num_envs:
                raise ValueError(f"indices: game indices are 0..{self.num_envs - 1}, got {i!r}")
        return [int(i) for i in rows]

    def _require_all(self, rows: list[int], call: str, what: str) -> None:
        """``ValueError`` unless ``rows`` are all the games: ``call`` acts on the whole batch."""
        if set(rows) != set(range(self.num_envs)):
            raise ValueError(
                f"{call}: {what} of the batched env applies to all {self.num_envs} games; "
                "give indices=None (all games), not a subset"
            )


#: attributes the batched env holds per game, an ``(N,)`` array: ``get_attr`` gives each game its own
_PER_GAME_ATTRIBUTES = frozenset({"score"})
#: methods whose result is one per game (a sequence of N): ``env_method`` gives each game its own
_PER_GAME_METHODS = frozenset({"render"})
#: the batched env's attribute holding the space of one game, by the single env's name
_SINGLE_SPACES = {"observation_space": "single_observation_space", "action_space": "single_action_space"}


def _game_infos(info: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-game infos of the batched env's ``info`` for every game: ``action_mask`` (a row) and ``score``."""
    scores = info["score"].tolist()
    return [{"action_mask": mask, "score": score} for mask, score in zip(info["action_mask"], scores)]


def _ended_infos(final_info: dict[str, Any], rows: np.ndarray, names: Sequence[str]) -> list[dict[str, Any]]:
    """The single env's end infos of the games ``rows`` from the batched ``final_info``: ``action_mask``
    (all zeros), ``score``, ``final_score``, ``scorecard`` (the filled boxes) and, after an illegal action,
    ``illegal_action`` and ``illegal_reason`` (``names``: the boxes, in order)."""
    masks = final_info["action_mask"][rows]
    scores = final_info["score"][rows].tolist()
    final_scores = final_info["final_score"][rows].tolist()
    card = final_info["scorecard"]
    points = [card[name][rows].tolist() for name in names]
    filled = [card[f"_{name}"][rows].tolist() for name in names]
    infos = []
    for j in range(len(rows)):
        scorecard = {name: p[j] for name, p, f in zip(names, points, filled) if f[j]}
        infos.append(
            {"action_mask": masks[j], "score": scores[j], "final_score": final_scores[j], "scorecard": scorecard}
        )
    if "illegal_action" in final_info:
        illegal = final_info["illegal_action"][rows].tolist()
        reasons = final_info["illegal_reason"][rows].tolist()
        for entry, bad, reason in zip(infos, illegal, reasons):
            if bad:
                entry["illegal_action"] = True
                entry["illegal_reason"] = reason
    return infos
