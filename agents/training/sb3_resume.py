"""What an SB3 checkpoint adds so that a resumed run goes on exactly as one never stopped (``vec_env: batched``).

Stable-Baselines3 saves the network, the optimizer and the step count; resumed, it resets the env (new games)
and its random generators stand where the resuming process left them, so the run drifts from the one that did
not stop. A checkpoint taken between two rollouts (:class:`agents.training.sb3` ``Checkpoint``) therefore also
holds, in two members of its zip:

* ``dice_poker_resume.json``: the batched env's games and dice generator (``DicePokerVectorEnv.snapshot``), the
  model's last observation and episode starts, torch's and NumPy's global generators (actions are sampled with
  torch's, minibatches shuffled with NumPy's), every array by the name of its entry in
* ``dice_poker_resume.npz``: the arrays, read with ``allow_pickle=False``.

Nothing in them runs code: JSON, plain arrays, a bit generator named from an allow-list; shapes and dtypes are
checked against the model before anything is restored. The per-game envs (``dummy``, ``subproc``) are Python
objects of their own and are not saved: a run resumed there starts new games (docs/training.md).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agents.policy.files import MAX_CHECKPOINT_BYTES, check_unpacked
from dice_poker_env.envs.vector import BIT_GENERATORS

JSON_NAME, ARRAYS_NAME = "dice_poker_resume.json", "dice_poker_resume.npz"
FORMAT = 1


def _batched_env(model: Any) -> Any:
    """The project's batched SB3 env under the model's wrappers (VecMonitor, reward scaling), or ``None``."""
    from dice_poker_env.integrations.sb3 import DicePokerSB3VecEnv

    env = model.get_env()
    while env is not None and not isinstance(env, DicePokerSB3VecEnv):
        env = getattr(env, "venv", None)
    return env


def _pack(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {"__array__": name}
    if isinstance(value, dict):
        return {str(key): _pack(item, arrays) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_pack(item, arrays) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def read_state(text: str, arrays: Mapping[str, Any]) -> Any:
    """The state :func:`capture` packed: its JSON ``text`` with each named array taken from ``arrays`` (an
    open ``.npz``) once, however often the JSON names it (a name repeated a thousand times would otherwise
    be a thousand copies)."""
    read: dict[str, np.ndarray] = {}

    def array(name: str) -> np.ndarray:
        if name not in read:
            read[name] = np.asarray(arrays[name])
        return read[name]

    return _unpack(json.loads(text), array)


def _unpack(value: Any, array: Callable[[str], np.ndarray]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return array(str(value["__array__"]))
        return {key: _unpack(item, array) for key, item in value.items()}
    if isinstance(value, list):
        return [_unpack(item, array) for item in value]
    return value


def capture(model: Any) -> dict[str, bytes]:
    """The members to add to a checkpoint of ``model`` (none where its env is not the batched one)."""
    import torch

    env = _batched_env(model)
    if env is None or model._last_obs is None:
        return {}
    state = {
        "format": FORMAT,
        "env": env.base.snapshot(),
        "last_obs": np.asarray(model._last_obs),
        "last_episode_starts": np.asarray(model._last_episode_starts),
        "torch_rng": torch.get_rng_state().numpy(),
        "numpy_rng": list(np.random.get_state()),
    }
    arrays: dict[str, np.ndarray] = {}
    text = json.dumps(_pack(state, arrays))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as its allow_pickle
    return {JSON_NAME: text.encode(), ARRAYS_NAME: buffer.getvalue()}


def restore(model: Any, path: str | Path) -> bool:
    """Restore what :func:`capture` saved in the checkpoint ``path`` into the freshly loaded ``model`` (its env
    built as the run's); ``False`` where the checkpoint holds none (an earlier version's, a per-game env's).

    Raises:
        ValueError: the members do not fit this model and env (one line naming what).
    """
    import torch

    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        if JSON_NAME not in names or ARRAYS_NAME not in names:
            return False
        check_unpacked(archive, path, "a checkpoint", MAX_CHECKPOINT_BYTES)  # (its arrays' .npz included)
        text = archive.read(JSON_NAME).decode()
        raw = archive.read(ARRAYS_NAME)
    env = _batched_env(model)
    if env is None:
        return False  # (resumed with another vec_env: the config check refuses that; nothing to restore into)
    with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
        state = read_state(text, npz)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path}: its resume state is not of format {FORMAT}")
    generator = state["env"].get("np_random") if isinstance(state.get("env"), dict) else None
    if not isinstance(generator, dict) or generator.get("bit_generator") not in BIT_GENERATORS:
        raise ValueError(f"{path}: its resume state names no known bit generator")
    last_obs, starts = state["last_obs"], state["last_episode_starts"]
    shape = (env.num_envs, *env.observation_space.shape)
    if not isinstance(last_obs, np.ndarray) or last_obs.shape != shape or last_obs.dtype.kind != "f":
        raise ValueError(f"{path}: its last observation is not {shape} floats")
    if not isinstance(starts, np.ndarray) or starts.shape != (env.num_envs,) or starts.dtype.kind != "b":
        raise ValueError(f"{path}: its episode starts are not {env.num_envs} booleans")
    rng = state["torch_rng"]
    if not isinstance(rng, np.ndarray) or rng.dtype != np.uint8 or rng.shape != torch.get_rng_state().shape:
        raise ValueError(f"{path}: its torch generator state is not torch's")
    kind, keys, position, has_gauss, gauss = state["numpy_rng"]
    if kind != "MT19937" or not isinstance(keys, np.ndarray) or keys.dtype != np.uint32 or keys.shape != (624,):
        raise ValueError(f"{path}: its NumPy generator state is not MT19937's")
    model.get_env().reset()  # (the wrappers' counters; the games are then replaced by the saved ones)
    env.base.restore(state["env"])  # (checks the ruleset and the batch size)
    model._last_obs, model._last_episode_starts = last_obs, starts
    torch.set_rng_state(torch.from_numpy(rng))
    np.random.set_state((kind, keys, int(position), int(has_gauss), float(gauss)))
    return True
