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

This module imports ``stable_baselines3`` / ``sb3_contrib`` (and so ``torch``)
only inside the functions that need them.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import (
    N_DICE,
    N_KEEP_ACTIONS,
    distinct_keep_mask,
    roll_index_of_counts,
    roll_index_of_sorted,
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import flat_layout
from dice_poker_env.rules import Rules, load_rules

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


class RulesetMismatchError(ValueError):
    """A model is asked to play a ruleset other than the one it was trained on."""


def algorithm_class(algo: str):
    """The SB3 / sb3-contrib class of a config ``algo`` name (imports it)."""
    import importlib

    try:
        module, cls, _ = ALGORITHMS[algo]
    except KeyError:
        raise ValueError(f"unknown algorithm {algo!r}: use one of {', '.join(ALGORITHMS)}") from None
    return getattr(importlib.import_module(module), cls)


def model_metadata(rules: Rules, obs_mode: str, algo: str, **extra: Any) -> dict[str, Any]:
    """The metadata stored next to a model's weights."""
    return {
        "format": METADATA_FORMAT,
        "algorithm": algo,
        "masked": ALGORITHMS[algo][2] if algo in ALGORITHMS else True,  # batched trainers are masked
        "rules": rules.name,
        "rules_options": dict(rules.options),
        "rules_source": rules.source,
        "rules_fingerprint": rules.fingerprint,
        "box_names": list(rules.box_names),
        "n_actions": N_KEEP_ACTIONS + rules.n_boxes,
        "obs_mode": obs_mode,
        **extra,
    }


#: members every model file saved by Stable-Baselines3 holds
SB3_MEMBERS = ("data", "policy.pth")


def save_model(model: Any, path: str | os.PathLike, metadata: Mapping[str, Any]) -> Path:
    """``model.save(path)`` plus the metadata member; returns the ``.zip`` path.

    The file is written whole under a temporary name in the same folder, then
    renamed into place: a run killed while saving never leaves a partial model
    (or one without its metadata) under ``path``.
    """
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}.partial.zip")
    try:
        model.save(partial)
        with zipfile.ZipFile(partial, "a") as archive:
            archive.writestr(METADATA_NAME, json.dumps(dict(metadata), indent=2, default=str))
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
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such model file")
    if path.suffix == ".npz":  # a policy file of the batched trainers
        from agents.policy.player import load_policy

        return load_policy(path)[1]
    damaged = f"{path}: truncated or corrupt model file"
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            missing = [name for name in SB3_MEMBERS if name not in names]
            if missing:  # a cut file can read as the zip of one of its own members
                raise ValueError(f"{damaged}: no {' or '.join(missing)} inside, as every Stable-Baselines3 model has")
            bad = archive.testzip()
            if bad is not None:
                raise ValueError(f"{damaged}: the member {bad} fails its checksum")
            if METADATA_NAME not in names:
                raise ValueError(
                    f"{path}: no {METADATA_NAME} inside; save models with agents.players.sb3_agent.save_model "
                    "(train.py does) so the ruleset they were trained on is known"
                )
            metadata = json.loads(archive.read(METADATA_NAME))
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ValueError(f"{damaged} ({error})") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{damaged}: {METADATA_NAME} is not JSON text ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{damaged}: {METADATA_NAME} is not valid JSON ({error.msg})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{damaged}: {METADATA_NAME} is not a JSON object")
    return metadata


def check_ruleset(metadata: Mapping[str, Any], rules: Rules, source: str = "the model") -> None:
    """Raise :class:`RulesetMismatchError` unless ``rules`` is the model's ruleset."""
    if metadata.get("rules_fingerprint") == rules.fingerprint:
        return

    def text(name: str, options: Mapping[str, Any]) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in options.items())
        return f"{name!r}" + (f" (options {opts})" if opts else "")

    trained = metadata.get("rules", "?")
    raise RulesetMismatchError(
        f"{source} was trained on ruleset {text(trained, metadata.get('rules_options') or {})} "
        f"[fingerprint {metadata.get('rules_fingerprint')}] and cannot play ruleset "
        f"{text(rules.name, rules.options)} [fingerprint {rules.fingerprint}]: the games differ. "
        f"Benchmark it on {trained!r} with the same options, or train a model for {rules.name!r}."
    )


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
    ):
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
        self.obs_mode = self.metadata["obs_mode"]
        self.masked = bool(self.metadata["masked"])
        #: the model was trained on masks showing each distinct keep once (train.py's ``distinct_keeps``)
        self.distinct_keeps = bool(self.metadata.get("distinct_keeps", False))
        self._flat_layout = flat_layout(compile_rules(self.rules))  # where flat observations keep the dice and points
        self.fallbacks = 0  #: illegal proposals replaced by the fallback

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        rules: str | Rules | None = None,
        *,
        name: str = "model",
        device: str = "cpu",
        deterministic: bool = True,
    ) -> SB3Agent:
        """Load a model saved by ``train.py`` / :func:`save_model`.

        Raises:
            RulesetMismatchError: ``rules`` is not the ruleset the model was trained on
                (checked before torch is even imported).
        """
        metadata = read_metadata(path)
        if rules is not None:
            rules = load_rules(rules)
            check_ruleset(metadata, rules, source=f"model {os.fspath(path)}")
        model = algorithm_class(metadata["algorithm"]).load(os.fspath(path), device=device)
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
        counts = np.asarray(observation, dtype=np.float64)[self._flat_layout["face_counts"]] * N_DICE
        return int(roll_index_of_counts(counts))

    def _fallback(self, observation: Any, mask: np.ndarray) -> int:
        """The legal box with the most points now (the training wrapper's fallback)."""
        tables = compile_rules(self.rules)
        if isinstance(observation, Mapping):
            from agents.players.greedy import best_box_action, state_from_observation

            return best_box_action(tables, state_from_observation(tables, observation), mask)
        points = np.asarray(observation, dtype=np.float64)[self._flat_layout["potential_points"]]
        legal = mask[N_KEEP_ACTIONS:].astype(bool)
        return N_KEEP_ACTIONS + int(np.argmax(np.where(legal, points, -np.inf)))
