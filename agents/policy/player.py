"""Play a policy trained by the batched trainers, in NumPy (no torch needed).

A policy file (:mod:`agents.policy.files`) holds the actor network's weights and its metadata: the
ruleset, the policy's options (:class:`agents.policy.heads.PolicyOptions`), the activation, and how it
was made. The optimizer and the critic are not in it (they live in the run's checkpoints), so a file is
small (about 0.4 MB for 256 x 256 layers).

:class:`PolicyAgent` runs the network's layers in NumPy and the policy's heads through the same code as
the torch network (:class:`agents.policy.heads.PolicyHeads`), and plays the most probable legal action.
It refuses a ruleset other than its own (:class:`~agents.policy.files.RulesetMismatchError`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agents.policy.files import POLICY_FORMAT, check_ruleset, load_policy, save_policy
from agents.policy.heads import PolicyHeads, PolicyOptions
from dice_poker_env.engine.combinatorics import distinct_keep_mask
from dice_poker_env.rules import Rules, load_rules

__all__ = ["POLICY_FORMAT", "SHIPPED_DIR", "PolicyAgent", "load_policy", "save_policy", "shipped_policy"]

#: the policies shipped with the package: ``<ruleset>.npz``, trained on the ruleset's default options
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "policies"
_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0)}


def _layers(weights: Mapping[str, np.ndarray], name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(w_i, b_i)`` layers, each checked to take the previous layer's outputs (a one-line error if not)."""
    layers: list[tuple[np.ndarray, np.ndarray]] = []
    while f"w{len(layers)}" in weights:
        i = len(layers)
        w, b = np.asarray(weights[f"w{i}"], np.float32), weights.get(f"b{i}")
        if b is None:
            raise ValueError(f"policy {name}: layer {i} has weights w{i} but no bias b{i}")
        b = np.asarray(b, np.float32)
        if w.ndim != 2 or b.shape != (w.shape[1],):
            raise ValueError(f"policy {name}: layer {i}'s w{i} {w.shape} and b{i} {b.shape} are not a layer's shapes")
        if layers and w.shape[0] != layers[-1][0].shape[1]:
            raise ValueError(
                f"policy {name}: layer {i} takes {w.shape[0]} inputs, layer {i - 1} gives {layers[-1][0].shape[1]}"
            )
        layers.append((w, b))
    return layers


class PolicyAgent:
    """A trained policy network as an :class:`agents.players.base.Agent` (flat observations).

    Args:
        weights: the actor's weights (:meth:`agents.training.actor_critic.ActorCritic.export`).
        metadata: the policy file's metadata (ruleset, activation, options, ...).
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
    ) -> None:
        self.metadata = dict(metadata)
        self.rules = (
            load_rules(rules)
            if rules is not None
            else load_rules(self.metadata["rules"], **self.metadata.get("rules_options", {}))
        )
        check_ruleset(self.metadata, self.rules)
        self.name = name
        self.heads = PolicyHeads(self.rules, PolicyOptions.from_metadata(self.metadata, source=f"policy {name}"))
        self.inputs = self.heads.inputs
        self.layers = _layers(weights, name)
        activation = self.metadata.get("activation", "tanh")
        if not isinstance(activation, str) or activation not in _ACTIVATIONS:
            raise ValueError(f"policy {name}: activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}")
        self.activation = _ACTIVATIONS[activation]
        self.layer_norm = bool(self.metadata.get("layer_norm", False))  # as agents.training.actor_critic.hidden_norm
        self.distinct_keeps = bool(self.metadata.get("distinct_keeps", False))
        self.players = self.heads.options.players
        if self.players > 1:  # what a multi-player table reads to hand it the table's flat vector
            from gymnasium import spaces

            self.observation_space = spaces.Box(-1.0, 1.0, shape=(self.inputs.obs_size,), dtype=np.float32)
        n_actions, n_boxes = self.heads.n_actions, self.heads.n_boxes
        if (
            not self.layers
            or self.layers[0][0].shape[0] != self.inputs.size
            or self.layers[-1][0].shape[1] != n_actions
        ):
            sizes = f"{self.layers[0][0].shape[0]} -> {self.layers[-1][0].shape[1]}" if self.layers else "no layers"
            raise ValueError(
                f"policy {name}: layer sizes {sizes} do not fit {self.rules.name} "
                f"({self.inputs.size} inputs, {n_actions} actions)"
            )
        options = self.heads.options
        self._box_points = weights.get("box_points_w") if options.box_points else None
        if options.box_points and (self._box_points is None or self._box_points.shape != (n_boxes,)):
            raise ValueError(f"policy {name}: box_points is on but its box_points_w weights are missing or misshapen")
        self._box_values = None  # keep_points: the box values' head (W, c)
        if options.keep_points:
            w, b = weights.get("points_w"), weights.get("points_b")
            if w is None or b is None or w.shape != (self.layers[-1][0].shape[0], n_boxes) or b.shape != (n_boxes,):
                raise ValueError(
                    f"policy {name}: keep_points is on but its points_w/points_b weights are missing or misshapen"
                )
            self._box_values = (np.asarray(w, np.float32), np.asarray(b, np.float32))

    @classmethod
    def load(
        cls, path: str | os.PathLike, rules: str | os.PathLike[str] | Rules | None = None, *, name: str = "model"
    ) -> PolicyAgent:
        """Load a policy file; ``rules`` (optional) must be the ruleset it was trained on."""
        weights, metadata = load_policy(path)
        if rules is not None:
            rules = load_rules(rules)
            check_ruleset(metadata, rules, source=f"policy {os.fspath(path)}")
        return cls(weights, metadata, rules, name=name)

    def reset(self) -> None:
        """Feed-forward policies keep no state between games."""

    def _observations(self, observations: Any) -> np.ndarray:
        """Flat observations as ``(B, D)`` float32; a one-line error where ``D`` is not the table's the policy reads."""
        if isinstance(observations, Mapping):
            raise TypeError(
                f"policy {self.name} reads flat observations (obs_mode='flat'), got a dict observation "
                f"(keys {', '.join(sorted(map(str, observations))[:4])}, ...): make the env with obs_mode='flat'"
            )
        try:
            obs = np.asarray(observations, dtype=np.float32)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"policy {self.name} reads flat observations (numbers), got {type(observations).__name__}: {error}"
            ) from None
        size = self.inputs.obs_size
        if obs.ndim == 0 or obs.shape[-1] != size:
            table = "a two-player table's" if self.players > 1 else "the single-player env's"
            where = (
                "play it at a two-player table (dice-poker match, the multi-player env)"
                if self.players > 1
                else "it reads one game, not a multi-player table's vector"
            )
            raise ValueError(
                f"policy {self.name} reads {table} flat observation ({size} values), got shape {obs.shape}: {where}"
            )
        return obs.reshape(-1, size)

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """Unmasked action logits ``(B, n_actions)`` of flat observations ``(B, D)``."""
        x = self.inputs(self._observations(observations))
        h = x
        for w, b in self.layers[:-1]:
            h = h @ w + b
            if self.layer_norm:
                h = (h - h.mean(axis=1, keepdims=True)) / np.sqrt(h.var(axis=1, keepdims=True) + 1e-5)
            h = self.activation(h)
        w, b = self.layers[-1]
        u = h @ self._box_values[0] + self._box_values[1] if self._box_values is not None else None
        return self.heads.logits(self.heads.tables, x, h @ w + b, u, self._box_points)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """The most probable legal action of each flat observation, ``(B,)`` int64."""
        obs = self._observations(observations)
        masks = np.asarray(action_masks).reshape(len(obs), -1)
        if self.distinct_keeps:
            masks = distinct_keep_mask(masks, self.heads.obs.roll(self.heads.obs, obs))
        return np.argmax(np.where(masks != 0, self.logits(obs), -np.inf), axis=1).astype(np.int64)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The most probable legal action of one flat observation."""
        return int(self.act_batch(observation, np.asarray(action_mask)[None, :])[0])


def shipped_policy(rules: str | os.PathLike[str] | Rules, name: str = "trained") -> PolicyAgent:
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
        if metadata.get("rules_options") != dict(rules.options):
            why = f"plays its default options {metadata.get('rules_options')}, not {dict(rules.options)}"
        else:
            why = f"plays the shipped rules, and {rules.source or 'these rules'} change them (another fingerprint)"
        raise ValueError(f"the shipped policy for {rules.name!r} {why}; train one for these rules")
    return PolicyAgent(weights, metadata, rules, name=name)
