"""Play a policy trained by the batched trainers, in NumPy (no torch needed).

A policy file (``.npz``) holds the actor network's weights (``w0, b0, w1, b1,
...``: ``x @ w + b`` with the activation between layers) and a JSON metadata
entry: the ruleset it was trained on (name, options, fingerprint), the
activation, whether the policy inputs carry the upper-bonus features, whether
the policy saw each distinct keep once, and how it was made (config, command).
The optimizer and the critic are not in it (they live in the run's
checkpoints), so a file is small (about 0.4 MB for 256 x 256 layers).

:class:`PolicyAgent` plays the most probable legal action. It refuses a
ruleset other than its own (:class:`~agents.players.sb3_agent.RulesetMismatchError`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agents.players.sb3_agent import check_ruleset
from agents.policy.inputs import KeepBonus, PolicyInputs, keep_points_tables
from dice_poker_env.engine.combinatorics import (
    KEEP_BITS,
    N_DICE,
    N_FACES,
    N_KEEP_ACTIONS,
    distinct_keep_mask,
    roll_index_of_counts,
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import flat_layout
from dice_poker_env.rules import Rules, load_rules

#: file format version of policy files
POLICY_FORMAT = 1
#: the policies shipped with the package: ``<ruleset>.npz``, trained on the ruleset's default options
SHIPPED_DIR = Path(__file__).resolve().parent.parent / "policies"
_ACTIVATIONS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


def save_policy(path: str | os.PathLike, weights: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> Path:
    """Write a policy file (``.npz``) atomically: a temporary file renamed into place."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {**metadata, "policy_format": POLICY_FORMAT}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, metadata=np.array(json.dumps(meta, default=str)), **weights)
    os.replace(tmp, path)
    return path


def load_policy(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The weights (name -> array, as :meth:`agents.training.actor_critic.ActorCritic.export` writes them) and the
    metadata of a policy file (clear errors otherwise)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    try:
        with np.load(path, allow_pickle=False) as data:
            metadata = json.loads(str(data["metadata"]))
            weights = {name: data[name].astype(np.float32) for name in data.files if name != "metadata"}
    except (OSError, ValueError, KeyError, EOFError) as error:
        raise ValueError(f"{path}: not a readable policy file ({error})") from None
    if "w0" not in weights or metadata.get("policy_format") != POLICY_FORMAT:
        raise ValueError(f"{path}: not a policy file of format {POLICY_FORMAT}")
    return weights, metadata


def _layers(weights: Mapping[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    layers = []
    while f"w{len(layers)}" in weights:
        i = len(layers)
        layers.append((np.asarray(weights[f"w{i}"], np.float32), np.asarray(weights[f"b{i}"], np.float32)))
    return layers


class PolicyAgent:
    """A trained policy network as an :class:`agents.players.base.Agent` (flat observations).

    Args:
        weights: the actor's weights (:meth:`agents.training.actor_critic.ActorCritic.export`).
        metadata: the policy file's metadata (ruleset, activation, features, ...).
        rules: the ruleset to play (checked against the metadata); default the policy's own.
        name: the agent's name in benchmarks.
    """

    obs_mode = "flat"

    def __init__(
        self,
        weights: Mapping[str, np.ndarray],
        metadata: Mapping[str, Any],
        rules: Rules | None = None,
        name: str = "model",
    ):
        self.metadata = dict(metadata)
        self.rules = (
            load_rules(rules)
            if rules is not None
            else load_rules(self.metadata["rules"], **self.metadata.get("rules_options", {}))
        )
        check_ruleset(self.metadata, self.rules)
        self.name = name
        self.layers = _layers(weights)
        self.activation = _ACTIVATIONS[self.metadata.get("activation", "tanh")]
        self.inputs = PolicyInputs(self.rules, features=bool(self.metadata.get("features", False)))
        self.distinct_keeps = bool(self.metadata.get("distinct_keeps", False))
        tables = compile_rules(self.rules)
        layout = flat_layout(tables)
        self._face_counts, self._dice = layout["face_counts"], layout["dice_one_hot"]
        self.keep_head = int(self.metadata.get("keep_head", 0))
        n_out = tables.n_actions - (N_KEEP_ACTIONS if self.keep_head else 0)
        if not self.layers or self.layers[0][0].shape[0] != self.inputs.size or self.layers[-1][0].shape[1] != n_out:
            sizes = f"{self.layers[0][0].shape[0]} -> {self.layers[-1][0].shape[1]}" if self.layers else "no layers"
            raise ValueError(
                f"policy {name}: layer sizes {sizes} do not fit {self.rules.name} "
                f"({self.inputs.size} inputs, {tables.n_actions} actions)"
            )
        if self.keep_head:
            try:
                self._keep = {
                    k: np.asarray(weights[k], np.float32)
                    for k in ("keep_state_w", "keep_state_b", "keep_dice_w", "keep_out_w", "keep_out_b")
                }
            except KeyError as missing:
                raise ValueError(
                    f"policy {name}: keep_head={self.keep_head} but no {missing.args[0]} weights"
                ) from None
        self._points = layout["potential_points"]
        self._box_points = weights.get("box_points_w") if self.metadata.get("box_points") else None
        if self.metadata.get("box_points") and (
            self._box_points is None or self._box_points.shape != (tables.n_actions - N_KEEP_ACTIONS,)
        ):
            raise ValueError(f"policy {name}: box_points is on but its box_points_w weights are missing or misshapen")
        self._filled = layout["filled"]
        self._box_values = None  # keep_points: the box values' head (W, c) and the keeps' expected points
        if self.metadata.get("keep_points"):
            n_boxes = tables.n_actions - N_KEEP_ACTIONS
            w, b = weights.get("points_w"), weights.get("points_b")
            if w is None or b is None or w.shape != (self.layers[-1][0].shape[0], n_boxes) or b.shape != (n_boxes,):
                raise ValueError(
                    f"policy {name}: keep_points is on but its points_w/points_b weights are missing or misshapen"
                )
            self._box_values = (np.asarray(w, np.float32), np.asarray(b, np.float32))
            rerolls = self.metadata.get("keep_points_rerolls", 1)
            if rerolls not in (1, 2):
                raise ValueError(f"policy {name}: keep_points_rerolls must be 1 or 2, got {rerolls!r}")
            self._expected_points = keep_points_tables(self.rules, rerolls)
            self._rolls_left = layout["rolls_left"].start
        self._keep_bonus = None  # keep_points_bonus: the upper bonus each keep may bring
        if self.metadata.get("keep_points_bonus"):
            if self.metadata["keep_points_bonus"] not in (True, "par"):
                raise ValueError(
                    f"policy {name}: keep_points_bonus must be true or par, got {self.metadata['keep_points_bonus']!r}"
                )
            if self._box_values is None or self._expected_points.ndim != 3:
                raise ValueError(f"policy {name}: keep_points_bonus needs keep_points with one reroll")
            self._keep_bonus = KeepBonus(self.rules, par=self.metadata.get("keep_points_bonus") == "par")
            self._upper_total = layout["upper_total"].start

    @classmethod
    def load(cls, path: str | os.PathLike, rules: str | Rules | None = None, *, name: str = "model") -> PolicyAgent:
        """Load a policy file; ``rules`` (optional) must be the ruleset it was trained on."""
        weights, metadata = load_policy(path)
        if rules is not None:
            rules = load_rules(rules)
            check_ruleset(metadata, rules, source=f"policy {os.fspath(path)}")
        return cls(weights, metadata, rules, name=name)

    def reset(self) -> None:
        """Feed-forward policies keep no state between games."""

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """Unmasked action logits ``(B, n_actions)`` of flat observations ``(B, D)``."""
        obs = np.asarray(observations, dtype=np.float32).reshape(-1, self.inputs.obs_size)
        x = self.inputs(obs)
        h = x
        for w, b in self.layers[:-1]:
            h = self.activation(h @ w + b)
        w, b = self.layers[-1]
        logits = np.concatenate([self._keep_logits(x, h), h @ w + b], axis=1) if self.keep_head else h @ w + b
        points = obs[:, self._points]
        if self._box_values is not None:  # as ActorCritic._points_logits
            u = h @ self._box_values[0] + self._box_values[1]
            rolls = roll_index_of_counts(obs[:, self._face_counts] * N_DICE)
            table = (
                self._expected_points[rolls]
                if self._expected_points.ndim == 3
                # two: by rerolls left
                else self._expected_points[np.rint(obs[:, self._rolls_left + 2]).astype(np.int64), rolls]
            )
            logits[:, :N_KEEP_ACTIONS] += np.einsum("bkn,bn->bk", table, u * (1.0 - obs[:, self._filled]))
            if self._keep_bonus is not None:
                kb = self._keep_bonus
                total = np.rint(obs[:, self._upper_total] * kb.upper_scale)
                upper_open = 1.0 - obs[:, self._filled.start + kb.upper]
                bonus, box_bonus = kb.terms(kb, rolls, total, upper_open)
                if box_bonus is not None:
                    logits[:, N_KEEP_ACTIONS + kb.upper] += u[:, kb.upper] * box_bonus
                logits[:, :N_KEEP_ACTIONS] += np.einsum("bku,bu->bk", bonus, u[:, kb.upper])
            logits[:, N_KEEP_ACTIONS:] += u * points
        if self._box_points is not None:
            logits[:, N_KEEP_ACTIONS:] += points * self._box_points
        return logits

    def _keep_logits(self, x: np.ndarray, h: np.ndarray) -> np.ndarray:
        """The keep head's logits ``(B, 32)`` (``keep_head``), from the inputs and the last hidden layer."""
        k = self._keep
        dice = x[:, self._dice].reshape(-1, N_DICE, N_FACES)
        kept = KEEP_BITS @ (dice @ k["keep_dice_w"])  # (B, 32, E)
        z = self.activation((h @ k["keep_state_w"] + k["keep_state_b"])[:, None, :] + kept)
        return (z @ k["keep_out_w"])[:, :, 0] + k["keep_out_b"]

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """The most probable legal action of each flat observation, ``(B,)`` int64."""
        obs = np.asarray(observations, dtype=np.float32).reshape(-1, self.inputs.obs_size)
        masks = np.asarray(action_masks).reshape(len(obs), -1)
        if self.distinct_keeps:
            rolls = roll_index_of_counts(obs[:, self._face_counts] * N_DICE)
            masks = distinct_keep_mask(masks, rolls)
        return np.argmax(np.where(masks != 0, self.logits(obs), -np.inf), axis=1).astype(np.int64)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The most probable legal action of one flat observation."""
        return int(self.act_batch(observation, np.asarray(action_mask)[None, :])[0])


def shipped_policy(rules: str | Rules, name: str = "trained") -> PolicyAgent:
    """The policy shipped with the package for ``rules`` (default options only).

    Raises:
        ValueError: no policy is shipped for this ruleset or these options.
    """
    rules = load_rules(rules)
    path = SHIPPED_DIR / f"{rules.name}.npz"
    available = sorted(p.stem for p in SHIPPED_DIR.glob("*.npz"))
    if not path.is_file():
        raise ValueError(
            f"no trained policy is shipped for ruleset {rules.name!r} "
            f"(shipped: {', '.join(available) or 'none'}); train one with train.py"
        )
    weights, metadata = load_policy(path)
    if metadata.get("rules_fingerprint") != rules.fingerprint:
        raise ValueError(
            f"the shipped policy for {rules.name!r} plays its default options "
            f"{metadata.get('rules_options')}, not {dict(rules.options)}; train one for these options"
        )
    return PolicyAgent(weights, metadata, rules, name=name)
