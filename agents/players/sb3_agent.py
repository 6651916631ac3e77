"""Play a trained Stable-Baselines3 / sb3-contrib model as an :class:`agents.players.base.Agent`.

A model saved with :func:`save_model` carries, inside its ``.zip``, a small
``dice_poker_env.json`` with the ruleset it was trained on (name, options and
``rules.fingerprint``), the observation layout (``obs_mode``) and the algorithm.
:meth:`SB3Agent.load` refuses to play a different ruleset with a
:class:`RulesetMismatchError` naming both, instead of silently playing a wrong
game (the action and observation sizes of two rulesets can coincide).

Unmasked models (PPO, A2C, DQN) may propose an illegal action; the agent then
plays the same legal fallback as :class:`agents.training.wrappers.LegalActionWrapper`
during training: the legal box with the most points right now.

Loading a model never runs code from its file (:func:`load_model`): the zip is
read here, every entry of its ``data`` JSON that Stable-Baselines3 would
unpickle (cloudpickle) is replaced, through SB3's ``custom_objects``, by an
object rebuilt from the ruleset and a fixed list of known classes (spaces,
policy class, activation and optimizer classes, schedules), and the weights load
with ``torch.load(weights_only=True)``. A file holding any other pickled entry
is refused with a one-line :class:`UntrustedModelError` that names the opt-in
for files you trust (``trusted=True``, ``--trust-model-files``,
``$DICE_POKER_TRUST_MODEL_FILES=1``), which loads it with SB3's own unpickling.

This module imports ``stable_baselines3`` / ``sb3_contrib`` (and so ``torch``)
only inside the functions that need them.

Size: the safe loader (every entry of a model file's ``data`` checked or rebuilt, the table's size read
from its stored space, the network's size against its weights) and the agent that plays the model read
the same file format; split apart, each would have to know the other's rules.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agents.policy.files import (
    MAX_CHECKPOINT_BYTES,
    RulesetMismatchError,
    TooLarge,
    check_ruleset,
    check_unpacked,
    load_policy,
    ruleset_metadata,
)
from agents.policy.observation import FlatObservation
from dice_poker_env.engine.combinatorics import (
    N_KEEP_ACTIONS,
    distinct_keep_mask,
    roll_index_of_sorted,
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.files import partial_path
from dice_poker_env.rules import Rules, load_rules

__all__ = [
    "ALGORITHMS",
    "RulesetMismatchError",
    "SB3Agent",
    "algorithm_class",
    "check_ruleset",
    "model_metadata",
    "read_metadata",
    "save_model",
]

#: name of the metadata member inside the model's zip file
METADATA_NAME = "dice_poker_env.json"
METADATA_FORMAT = 1

#: config name -> (module, class, uses action masks)
ALGORITHMS: dict[str, tuple[str, str, bool]] = {
    "maskable_ppo": ("sb3_contrib", "MaskablePPO", True),
    "ppo": ("stable_baselines3", "PPO", False),
    "a2c": ("stable_baselines3", "A2C", False),
    "dqn": ("stable_baselines3", "DQN", False),
}


class UntrustedModelError(ValueError):
    """A model file holds a pickled object that loading it would run as code (see :func:`load_model`)."""


#: the environment variable that, set to 1, trusts every model file (``--trust-model-files`` sets it)
TRUST_ENV = "DICE_POKER_TRUST_MODEL_FILES"
#: pickled state of the last rollout: dropped (a resumed or loaded model starts from a reset env)
_DROPPED_ENTRIES = ("_last_obs", "_last_original_obs", "_last_episode_starts", "ep_info_buffer", "ep_success_buffer")
#: classes a model's ``policy_kwargs`` may name (by their ``repr``), and nothing else
_KWARGS_CLASSES = {
    f"torch.nn.modules.activation.{name}": ("torch.nn", name)
    for name in ("Tanh", "ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid", "Mish")
} | {
    f"torch.optim.{m}.{name}": ("torch.optim", name)
    for m, name in (("adam", "Adam"), ("adamw", "AdamW"), ("sgd", "SGD"), ("rmsprop", "RMSprop"))
}


def trusted_by_default() -> bool:
    """Whether ``$DICE_POKER_TRUST_MODEL_FILES`` trusts every model file (``1``/``true``/``yes``)."""
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def _refuse(path: str | os.PathLike, what: str) -> UntrustedModelError:
    return UntrustedModelError(
        f"model {os.fspath(path)}: {what}, which loading would run as code; load it only if you trust the file: "
        f"--trust-model-files (dice-poker bench, train.py), trusted=True (Python) or {TRUST_ENV}=1"
    )


#: the plain (JSON) entries of the ``data`` Stable-Baselines3 writes (PPO, A2C, DQN, MaskablePPO)
_PLAIN_ENTRIES = frozenset(
    {
        "_current_progress_remaining", "_episode_num", "_last_original_obs", "_n_calls", "_n_updates",
        "_num_timesteps_at_start", "_stats_window_size", "_total_timesteps", "action_noise", "batch_norm_stats",
        "batch_norm_stats_target", "batch_size", "buffer_size", "clip_range_vf", "device", "ent_coef",
        "exploration_final_eps", "exploration_fraction", "exploration_initial_eps", "exploration_rate",
        "gae_lambda", "gamma", "gradient_steps", "learning_rate", "learning_starts", "max_grad_norm", "n_envs",
        "n_epochs", "n_steps", "normalize_advantage", "num_timesteps", "optimize_memory_usage", "policy_kwargs",
        "replay_buffer_kwargs", "rollout_buffer_kwargs", "sde_sample_freq", "seed", "start_time", "target_kl",
        "target_update_interval", "tau", "tensorboard_log", "use_sde", "use_sde_at_warmup", "verbose", "vf_coef",
    }
)  # fmt: skip
#: pickled entries SB3 rebuilds itself when they are ``None``
_REBUILT = ("rollout_buffer_class", "replay_buffer_class", "exploration_schedule")
#: the entries a model that only plays takes instead of the file's (whose sizes would build buffers)
_PLAYING = {
    "on_policy": {"n_envs": 1, "n_steps": 2, "batch_size": 2},  # PPO, A2C, MaskablePPO: the rollout buffer
    "dqn": {"n_envs": 1, "buffer_size": 1},  # the replay buffer
}


def safe_custom_objects(
    path: str | os.PathLike,
    algo: str,
    rules: Rules,
    obs_mode: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    playing: bool = False,
) -> dict[str, Any]:
    """SB3 ``custom_objects`` replacing every cloudpickled entry of a model file's ``data`` (nothing unpickled).

    Spaces come from the ruleset's env, the policy class from the algorithm, ``policy_kwargs`` from the
    entry's readable description (JSON values and a fixed list of activation and optimizer classes),
    schedules and other training state from ``overrides`` (else harmless defaults: a model that only plays
    needs none). Raises :class:`UntrustedModelError` for any other pickled entry.
    """
    import importlib

    import gymnasium as gym

    try:
        with zipfile.ZipFile(path) as archive:
            check_unpacked(archive, path, "a model", MAX_CHECKPOINT_BYTES)  # (SB3 reads every member whole)
            data = json.loads(archive.read("data"))
    except TooLarge:
        raise
    except (
        OSError,
        KeyError,
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        UnicodeDecodeError,
        ValueError,
        RecursionError,  # JSON nested past the parser's stack
    ) as error:
        raise ValueError(f"{path}: truncated or corrupt model file ({type(error).__name__})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: truncated or corrupt model file (its data is not a JSON object)")
    overrides = dict(overrides or {})
    env = gym.make("DicePoker/Custom-v0", rules=rules, obs_mode=obs_mode)
    spaces = {"observation_space": env.observation_space, "action_space": env.action_space}
    env.close()
    stored = data.get("observation_space")
    players = table_players(stored, rules, obs_mode) if isinstance(stored, dict) else 1
    if players > 1:  # trained at a table (SeatEnv): the multi-player observation
        from dice_poker_env.multi.observations import multi_observation_space

        spaces["observation_space"] = multi_observation_space(compile_rules(rules), players, obs_mode)
    cls = algorithm_class(algo)
    policy = cls.policy_aliases["MultiInputPolicy" if obs_mode == "dict" else "MlpPolicy"]
    custom: dict[str, Any] = {}
    if playing:  # a model that only plays: no rollout or replay buffer of the file's size is built
        custom.update(_PLAYING["dqn" if algo == "dqn" else "on_policy"])
    for key, entry in data.items():
        if key in overrides:
            custom[key] = overrides[key]
            continue
        if not (isinstance(entry, dict) and ":serialized:" in entry):
            if key in _DROPPED_ENTRIES or key in _REBUILT:
                custom[key] = None  # as their pickled form: SB3 rebuilds them
            elif key not in _PLAIN_ENTRIES:  # SB3 sets every entry on the model: no attribute of our choosing
                raise _refuse(path, f"it holds an entry SB3 does not write, {str(key)[:40]!r}")
            continue
        info = {k: v for k, v in entry.items() if k != ":serialized:"}
        if key in spaces:
            space = spaces[key]
            shape = info.get("_shape")
            if shape is not None and not (isinstance(shape, list) and all(isinstance(n, int) for n in shape)):
                raise ValueError(f"model {path}: its {key} has shape {str(shape)[:40]}, not a list of integers")
            if shape is not None and list(shape) != list(space.shape or ()):
                raise ValueError(f"model {path}: its {key} has shape {shape}, the ruleset's {list(space.shape or ())}")
            custom[key] = space
        elif key == "policy_class":
            if info.get("__module__") != policy.__module__:
                raise _refuse(path, f"its policy class comes from module {info.get('__module__')!r}")
            custom[key] = policy
        elif key == "policy_kwargs":
            kwargs: dict[str, Any] = {}
            for name, value in info.items():
                if name == ":type:":
                    continue
                match = re.fullmatch(r"<class '([\w.]+)'>", value) if isinstance(value, str) else None
                if match and match.group(1) in _KWARGS_CLASSES:
                    module, cls_name = _KWARGS_CLASSES[match.group(1)]
                    kwargs[name] = getattr(importlib.import_module(module), cls_name)
                elif isinstance(value, (int, float, bool, list, dict)) or value is None:
                    kwargs[name] = value
                else:
                    raise _refuse(path, f"its policy_kwargs hold {name}={str(value)[:60]!r}")
            custom[key] = kwargs
        elif key in _DROPPED_ENTRIES or key in _REBUILT:
            custom[key] = None  # SB3 rebuilds its default buffers and schedules on load / learn
        elif key in ("learning_rate", "lr_schedule"):
            custom[key] = 0.0  # a model that plays learns nothing; train.py --resume passes the run's own
        elif key in ("clip_range", "clip_range_vf"):
            value = re.fullmatch(r"ConstantSchedule\(val=([-+0-9.e]+)\)", str(info.get("value_schedule", "")))
            custom[key] = float(value.group(1)) if value else 0.2
        elif key == "train_freq":
            custom[key] = 1
        else:
            raise _refuse(path, f"it holds a pickled {key!r}")
    _check_network_size(path, custom.get("policy_kwargs", data.get("policy_kwargs")))  # (plain JSON or rebuilt)
    return custom


def table_players(stored: Mapping[str, Any], rules: Rules, obs_mode: str) -> int:
    """How many players the table had whose observation a model file's observation space describes
    (``stored``: the space's entry in the file's ``data``, read as text): 1 for the single env's, ``P`` for
    :class:`~dice_poker_env.multi.seat.SeatEnv`'s at a ``P``-player table (its opponent entries are ``P - 1``
    long). A layout of neither kind counts as 1, and the shape check then names the difference."""
    from dice_poker_env.multi.aec import MAX_PLAYERS
    from dice_poker_env.multi.observations import flat_players

    if obs_mode == "flat":
        shape = stored.get("_shape")
        length = shape[0] if isinstance(shape, list) and len(shape) == 1 and type(shape[0]) is int else None
        players = 1 if length is None else flat_players(length, compile_rules(rules))
    else:  # the dict space's text: its opponents' entries are P - 1 long
        found = re.search(r"'opponent_filled': MultiBinary\(\((\d{1,3}), ", str(stored.get("spaces", "")))
        players = 1 + int(found.group(1)) if found else 1
    return players if players <= MAX_PLAYERS else 1


def load_model(
    path: str | os.PathLike,
    algo: str,
    rules: Rules,
    obs_mode: str,
    *,
    trusted: bool | None = None,
    overrides: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """An SB3 model loaded without unpickling anything from its file (see the module docstring).

    Args:
        path: the model's ``.zip``.
        algo: its config algorithm (``maskable_ppo``, ``ppo``, ``a2c``, ``dqn``).
        rules: its ruleset; obs_mode: its observation layout (both from its metadata).
        trusted: load with SB3's own unpickling (runs code from the file); default ``$DICE_POKER_TRUST_MODEL_FILES``.
        overrides: ``custom_objects`` of your own (``train.py --resume``: the run's schedules).
        **kwargs: passed to ``Algorithm.load`` (``env``, ``device``, ``tensorboard_log``, ...). Without ``env``
            the model only plays: it is built with a rollout or replay buffer of two steps, not the file's sizes
            (give ``env`` to train it on: ``train.py --resume`` does).
    """
    cls = algorithm_class(algo)
    if trusted is None:
        trusted = trusted_by_default()
    if trusted:
        return cls.load(os.fspath(path), custom_objects=dict(overrides or {}) or None, **kwargs)
    custom = safe_custom_objects(path, algo, rules, obs_mode, overrides, playing="env" not in kwargs)
    import pickle

    try:
        return cls.load(os.fspath(path), custom_objects=custom, **kwargs)
    except pickle.UnpicklingError as error:  # torch's weights_only load refused an object in the weights
        found = re.search(r"GLOBAL ([\w.]+)", str(error))
        what = f" ({found.group(1)})" if found else ""
        raise ValueError(
            f"{path}: its {_refused_member(path)} holds pickled objects{what}, which the safe load refuses; load "
            f"it only if you trust the file ({TRUST_ENV}=1, train.py --trust-model-files)"
        ) from None
    except (TypeError, RuntimeError, KeyError, IndexError, AttributeError, RecursionError) as error:
        # what a damaged or hand-made file makes SB3 or torch raise: policy_kwargs the policy does not take,
        # weights that are not torch's archive, ...
        text = " ".join(str(error).split())[:200]
        raise ValueError(f"{path}: not a usable model file ({type(error).__name__}: {text})") from None


def _refused_member(path: str | os.PathLike) -> str:
    """The first ``.pth`` member of a model file that torch's weights-only load refuses (SB3 reads
    ``pytorch_variables.pth``, ``policy.pth`` and the optimizer's state alike): named in the refusal."""
    import pickle

    import torch

    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.endswith(".pth"):
                try:
                    torch.load(io.BytesIO(archive.read(name)), map_location="cpu", weights_only=True)
                except pickle.UnpicklingError:
                    return name
                except Exception:  # noqa: BLE001, S112 - another fault of that member: not the one refused
                    continue
    return "weights (a .pth member)"


def _check_network_size(path: str | os.PathLike, policy_kwargs: Any) -> None:
    """Refuse ``policy_kwargs`` whose ``net_arch`` holds more parameters than the file's weights have bytes for
    (a few bytes of JSON would otherwise build a network of gigabytes before the weights are even compared)."""
    arch = policy_kwargs.get("net_arch") if isinstance(policy_kwargs, dict) else None
    chains = list(arch.values()) if isinstance(arch, dict) else [arch] if arch is not None else []
    least = 0  # parameters at least: each layer's inputs (one, at least) times its width, and the widths between
    for chain in chains:
        if not isinstance(chain, list) or not all(isinstance(w, int) and not isinstance(w, bool) for w in chain):
            raise ValueError(f"model {path}: its net_arch {str(arch)[:60]} is not lists of layer widths")
        widths = [1, *chain]
        least += sum(a * b for a, b in zip(widths, widths[1:]))
    try:
        with zipfile.ZipFile(path) as archive:
            stored = archive.getinfo("policy.pth").file_size
    except (OSError, KeyError, zipfile.BadZipFile):
        return  # (SB3's own load reports a missing or damaged weights file)
    if 4 * least > stored:  # float32 weights
        raise ValueError(
            f"model {path}: its net_arch {str(arch)[:60]} needs at least {4 * least:,} bytes of weights; the file "
            f"holds {stored:,}"
        )


def algorithm_class(algo: str) -> type[Any]:
    """The SB3 / sb3-contrib class of a config ``algo`` name (imports it)."""
    import importlib

    try:
        module, cls, _ = ALGORITHMS[algo]
    except KeyError:
        raise ValueError(f"unknown algorithm {algo!r}: use one of {', '.join(ALGORITHMS)}") from None
    return getattr(importlib.import_module(module), cls)


def model_metadata(rules: Rules | str | os.PathLike[str], obs_mode: str, algo: str, **extra: Any) -> dict[str, Any]:
    """The metadata stored next to a model's weights.

    ``rules``: the env's :class:`Rules` (``env.rules``, with its options), or a ruleset name or rules file
    (its default options).
    """
    rules = load_rules(rules)
    return {
        "format": METADATA_FORMAT,
        "algorithm": algo,
        "masked": ALGORITHMS[algo][2] if algo in ALGORITHMS else True,  # batched trainers are masked
        **ruleset_metadata(rules),
        "obs_mode": obs_mode,
        **extra,
    }


#: members every model file saved by Stable-Baselines3 holds
SB3_MEMBERS = ("data", "policy.pth")


def save_model(
    model: Any, path: str | os.PathLike, metadata: Mapping[str, Any], extra: Mapping[str, bytes] | None = None
) -> Path:
    """``model.save(path)`` plus the metadata member (and ``extra`` members: a checkpoint's resume state,
    :mod:`agents.training.sb3_resume`); returns the ``.zip`` path.

    The file is written whole under a temporary name in the same folder, then
    renamed into place: a run killed while saving never leaves a partial model
    (or one without its metadata) under ``path``.
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path, ".partial.zip")
    try:
        model.save(partial)
        with zipfile.ZipFile(partial, "a") as archive:
            archive.writestr(METADATA_NAME, json.dumps(dict(metadata), indent=2, default=str))
            for name, data in (extra or {}).items():
                archive.writestr(name, data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The metadata of a model saved by :func:`save_model`, after checking the whole file.

    Every member's checksum is verified, so a truncated or damaged file is
    reported as such (``ValueError``) before anything loads it.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: a folder; give the model file in it (final_model.npz or final_model.zip)")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such model file")
    if path.suffix == ".pt":
        raise ValueError(
            f"{path}: a training checkpoint of the batched trainers, not a model to play; play its run's "
            "final_model.npz or best_model.npz"
        )
    if path.suffix == ".npz":  # a policy file of the batched trainers
        return load_policy(path)[1]
    damaged = f"{path}: truncated or corrupt model file"
    try:
        with zipfile.ZipFile(path) as archive:
            check_unpacked(archive, path, "a model", MAX_CHECKPOINT_BYTES)
            names = set(archive.namelist())
            missing = [name for name in SB3_MEMBERS if name not in names]
            if missing:  # a cut file can read as the zip of one of its own members
                raise ValueError(f"{damaged}: no {' or '.join(missing)} inside, as every Stable-Baselines3 model has")
            bad = archive.testzip()
            if bad is not None:
                raise ValueError(f"{damaged}: the member {bad} fails its checksum")
            if METADATA_NAME not in names:
                raise ValueError(
                    f"{path}: no {METADATA_NAME} inside; save models with agents.players.sb3_agent.save_model("
                    "model, path, model_metadata(rules, obs_mode, algo)) (train.py does) so the ruleset they were "
                    "trained on is known"
                )
            metadata = json.loads(archive.read(METADATA_NAME))
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ValueError(f"{damaged} ({error})") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{damaged}: {METADATA_NAME} is not JSON text ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{damaged}: {METADATA_NAME} is not valid JSON ({error.msg})") from None
    except RecursionError:
        raise ValueError(f"{damaged}: {METADATA_NAME} is nested too deep to read") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{damaged}: {METADATA_NAME} is not a JSON object")
    return metadata


class SB3Agent:
    """A trained SB3 / sb3-contrib model as an agent.

    Build with :meth:`load`; or wrap an in-memory model with its metadata.

    Attributes:
        obs_mode: the observation layout the model was trained on; the benchmark
            feeds it that layout.
    """

    def __init__(
        self,
        model: Any,
        metadata: Mapping[str, Any],
        rules: Rules | None = None,
        name: str = "model",
        deterministic: bool = True,
    ) -> None:
        self.model = model
        self.metadata = dict(metadata)
        self.rules = (
            load_rules(rules)
            if rules is not None
            else load_rules(self.metadata["rules"], **self.metadata.get("rules_options", {}))
        )
        check_ruleset(self.metadata, self.rules)
        self.name = name
        self.deterministic = deterministic
        for key, default in (("masked", None), ("distinct_keeps", False)):  # ("no" would read as true)
            if not isinstance(self.metadata.get(key, default), bool):
                raise ValueError(f"model metadata: {key} must be true or false, got {self.metadata.get(key)!r}")
        if self.metadata["obs_mode"] not in ("dict", "flat"):
            raise ValueError(f"model metadata: obs_mode must be dict or flat, got {self.metadata['obs_mode']!r}")
        self.obs_mode = self.metadata["obs_mode"]
        self.masked = self.metadata["masked"]
        #: the model was trained on masks showing each distinct keep once (train.py's ``distinct_keeps``)
        self.distinct_keeps = self.metadata.get("distinct_keeps", False)
        self._flat = FlatObservation(self.rules)  # reads the dice and points of flat observations
        self.fallbacks = 0  #: illegal proposals replaced by the fallback
        from dice_poker_env.multi.observations import space_players

        #: the players at the table it was trained at (1: the one-player game; more: SeatEnv's table)
        self.players = space_players(getattr(model, "observation_space", None), compile_rules(self.rules))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        rules: str | os.PathLike[str] | Rules | None = None,
        *,
        name: str = "model",
        device: str = "cpu",
        deterministic: bool = True,
        trusted: bool | None = None,
    ) -> SB3Agent:
        """Load a model saved by ``train.py`` / :func:`save_model`, running no code from the file
        (:func:`load_model`; ``trusted=True`` for a file you trust that holds other pickled objects).

        Raises:
            RulesetMismatchError: ``rules`` is not the ruleset the model was trained on
                (checked before torch is even imported).
            UntrustedModelError: the file holds a pickled object this loader does not rebuild.
        """
        metadata = read_metadata(path)
        if rules is not None:
            rules = load_rules(rules)
            check_ruleset(metadata, rules, source=f"model {os.fspath(path)}")
        try:
            own = load_rules(metadata["rules"], **(metadata.get("rules_options") or {})) if rules is None else rules
            algo, obs_mode = str(metadata["algorithm"]), str(metadata["obs_mode"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: malformed {METADATA_NAME} ({type(error).__name__}: {error})") from None
        if algo not in ALGORITHMS:
            raise ValueError(f"{path}: unknown algorithm {algo!r} in {METADATA_NAME}")
        model = load_model(path, algo, own, obs_mode, trusted=trusted, device=device)
        return cls(model, metadata, rules, name=name, deterministic=deterministic)

    def reset(self) -> None:
        """Feed-forward policies keep no state between games."""

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        mask = np.asarray(action_mask)
        if self.masked:
            policy_mask = distinct_keep_mask(mask, self._roll(observation)) if self.distinct_keeps else mask
            action, _ = self.model.predict(
                observation, action_masks=policy_mask.astype(bool), deterministic=self.deterministic
            )
        else:
            action, _ = self.model.predict(observation, deterministic=self.deterministic)
        action = int(np.asarray(action).reshape(-1)[0])
        if 0 <= action < len(mask) and mask[action]:
            return action
        self.fallbacks += 1
        return self._fallback(observation, mask)

    def _roll(self, observation: Any) -> int:
        """The roll index of an observation (dict: its sorted dice; flat: its face counts)."""
        if isinstance(observation, Mapping):
            return int(roll_index_of_sorted(np.asarray(observation["dice"], dtype=np.int64)))
        return int(self._flat.roll(self._flat, np.asarray(observation, dtype=np.float32).reshape(1, -1))[0])

    def _fallback(self, observation: Any, mask: np.ndarray) -> int:
        """The legal box with the most points now (the training wrapper's fallback)."""
        tables = compile_rules(self.rules)
        if isinstance(observation, Mapping):
            from agents.players.greedy import best_box_action, state_from_observation

            return best_box_action(tables, state_from_observation(tables, observation), mask)
        points = self._flat.potential_points(np.asarray(observation, dtype=np.float32).reshape(1, -1))[0]
        legal = mask[N_KEEP_ACTIONS:].astype(bool)
        return N_KEEP_ACTIONS + int(np.argmax(np.where(legal, points, -np.inf)))
