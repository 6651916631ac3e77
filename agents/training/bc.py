"""Behaviour cloning from a Minari dataset: the imitation of the solver (CleanRL style, one file).

``train.py`` runs it for ``algo: bc``: a policy network of the batched
trainers' shape (:class:`agents.training.actor_critic.ActorCritic`'s actor over
:class:`agents.policy.inputs.PolicyInputs`) learns to pick the action a
dataset's agent took (written by ``dice-poker dataset``, usually the optimal
agent), by cross-entropy over the legal actions. Trained on the solver's own
decisions, it is the reference line of what a policy network of that size can
represent of the optimal policy, so it is labelled :data:`LABEL` ("imitation of
the solver") wherever it is reported; it is not reinforcement learning.

Read top to bottom:

1. :func:`load_data`: the dataset's decisions as tensors (policy inputs, legal
   masks, actions), after checking that it was written for the run's ruleset
   (same fingerprint) with flat observations;
2. :meth:`BCTrainer.run`: ``bc_epochs`` passes in shuffled minibatches of
   ``batch_size``, Adam, gradient clipping; after each pass the policy plays
   ``eval_episodes`` fixed games (``evaluations.csv``, ``best_model.npz``, the
   batched trainers' evaluation); at the end ``final_model.npz``, a policy file
   that :class:`agents.policy.player.PolicyAgent` plays in NumPy like any other.

With ``distinct_keeps`` the policy sees each distinct keep once (the lowest
bitmask keeping those dice, the one the solver names) and actions that keep the
same dice count as that one.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from agents.players.sb3_agent import model_metadata
from agents.policy.heads import PolicyHeads, PolicyOptions
from agents.policy.inputs import PolicyInputs
from agents.policy.observation import FlatObservation
from agents.policy.player import PolicyAgent, save_policy
from agents.training.actor_critic import MASKED_LOGIT, ActorCritic
from agents.training.evaluator import Evaluation, evaluate_trainer
from dice_poker_env.engine.combinatorics import (
    CANONICAL_KEEP_ACTION,
    KEEP_ALL,
    KEEP_OF_ACTION,
    N_KEEP_ACTIONS,
    N_ROLLS,
    distinct_keep_mask,
)
from dice_poker_env.rules import Rules

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

#: how the behaviour-cloning baseline is named wherever it is reported (of the optimal agent's dataset)
LABEL = "imitation of the solver"


def imitation_label(agent: str | None) -> str:
    """What a behaviour-cloning run imitates, from its dataset's agent: :data:`LABEL` for the optimal agent's
    games, ``imitation of the greedy agent`` for another's, ``imitation`` when it is not known."""
    if agent == "optimal":
        return LABEL
    return f"imitation of the {agent} agent" if agent else "imitation"


@functools.lru_cache(maxsize=1)
def _canonical_table() -> np.ndarray:
    """(252, 32) int64: for each roll and keep bitmask, the lowest bitmask keeping the same dice (others: themselves)."""
    table = np.tile(np.arange(N_KEEP_ACTIONS, dtype=np.int64), (N_ROLLS, 1))
    for roll in range(N_ROLLS):
        for bits in range(KEEP_ALL):
            same = np.flatnonzero(
                (KEEP_OF_ACTION[roll, :KEEP_ALL] == KEEP_OF_ACTION[roll, bits]) & CANONICAL_KEEP_ACTION[roll, :KEEP_ALL]
            )
            table[roll, bits] = same[0]
    return table


def canonical_actions(actions: np.ndarray, rolls: np.ndarray) -> np.ndarray:
    """Keep actions replaced by the lowest bitmask that keeps the same dice (score actions unchanged)."""
    table = _canonical_table()
    actions = np.asarray(actions, dtype=np.int64)
    keep = actions < N_KEEP_ACTIONS
    return np.where(keep, table[rolls, np.where(keep, actions, 0)], actions)


@dataclass
class Data:
    """A dataset's decisions, ready for training."""

    inputs: torch.Tensor  #: (N, in_dim) float32 policy inputs
    masks: torch.Tensor  #: (N, n_actions) bool legal actions (as the policy sees them)
    actions: torch.Tensor  #: (N,) int64 the dataset's actions
    info: dict  #: the dataset's ``dice_poker`` metadata
    episodes: int  #: episodes in the dataset


def load_data(dataset_id: str, rules: Rules, *, features: bool, distinct_keeps: bool) -> Data:
    """The decisions of dataset ``dataset_id`` as tensors.

    Raises:
        ValueError: no such dataset, another ruleset or options (fingerprint), dict observations.
    """
    from agents.evaluation.datasets import DatasetError, dataset_info, load_transitions, open_dataset

    hint = f"; write it first, e.g. dice-poker dataset {rules.name} --agent optimal --episodes 100000"
    dataset = open_dataset(dataset_id, hint)
    info = dataset_info(dataset)
    if info["rules_fingerprint"] != rules.fingerprint:
        raise DatasetError(
            f"dataset {dataset_id!r} holds games of {info['rules']} {info['rules_options']}, "
            f"not of {rules.name} {dict(rules.options)} (the rules differ)"
        )
    if info["obs_mode"] != "flat":
        raise DatasetError(
            f"dataset {dataset_id!r} stores {info['obs_mode']} observations; bc needs flat ones "
            "(write it with --obs-mode flat)"
        )
    data = load_transitions(dataset_id)
    obs, actions, masks = data["observations"], data["actions"], data["action_mask"]
    flat = FlatObservation(rules)
    rolls = flat.roll(flat, obs)
    if distinct_keeps:
        actions = canonical_actions(actions, rolls)
        masks = distinct_keep_mask(masks, rolls)
    policy_inputs = PolicyInputs(rules, features=features)
    inputs = (
        np.concatenate([policy_inputs(obs[i : i + 65536]) for i in range(0, len(obs), 65536)])
        if len(obs)
        else np.zeros((0, policy_inputs.size), dtype=np.float32)
    )
    return Data(
        torch.from_numpy(inputs),
        torch.from_numpy(masks != 0),
        torch.from_numpy(actions.astype(np.int64)),
        info,
        dataset.total_episodes,
    )


class BCTrainer:
    """One behaviour-cloning run (see the module docstring); the interface of :class:`agents.training.trainer.Trainer`.

    Args:
        config: the ``bc`` config section, :class:`agents.training.config.BC` (``dataset``, ``bc_epochs``, ``batch_size``,
            ``learning_rate``, ``lr_schedule``, ``max_grad_norm``, ``net_arch``,
            ``activation``, ``features``, ``distinct_keeps``, ``eval_freq``,
            ``eval_episodes``, ``seed``, ``device``).
        rules: the ruleset (the dataset's).
        run_dir: the run folder.
        optimal: the solver's optimal expected score (percent of optimal in logs), or None.
        metadata: recorded in every policy file (config, command).
        log: where progress lines go.
    """

    def __init__(
        self,
        config: Any,
        rules: Rules,
        run_dir: str | os.PathLike,
        *,
        optimal: float | None = None,
        metadata: dict[str, Any] | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.config, self.rules, self.run_dir = config, rules, Path(run_dir)
        self.optimal, self.log = optimal, log
        self.device = torch.device(config.device)
        torch.manual_seed(config.seed)
        self.data = load_data(config.dataset, rules, features=config.features, distinct_keeps=config.distinct_keeps)
        if len(self.data.actions) == 0:
            raise ValueError(f"dataset {config.dataset!r} holds no steps")
        heads = PolicyHeads(rules, PolicyOptions(features=bool(config.features)))
        self.model = ActorCritic(heads, config.net_arch, config.activation).to(self.device)  # the critic is unused
        self.optimizer = torch.optim.Adam(self.model.actor.parameters(), lr=config.learning_rate, eps=1e-5)
        self.generator = torch.Generator().manual_seed(config.seed + 1)  # minibatch order
        info = self.data.info
        self.metadata = {
            **model_metadata(rules, "flat", "bc", seed=config.seed),
            **(metadata or {}),
            "algorithm": "bc",
            "label": imitation_label(info["agent"]),
            "obs_mode": "flat",
            "masked": True,
            "dataset": config.dataset,
            "dataset_agent": info["agent"],
            "dataset_episodes": self.data.episodes,
            "dataset_steps": int(len(self.data.actions)),
            "distinct_keeps": bool(config.distinct_keeps),
            "features": bool(config.features),
            "activation": config.activation,
            "net_arch": list(config.net_arch),
        }
        self.samples = 0  #: dataset decisions trained on (epochs times the dataset's steps)
        self.evaluation = Evaluation(self.run_dir, optimal, log)  #: evaluations.csv and the best mean so far
        self.train_seconds = 0.0

    @property
    def num_timesteps(self) -> int:
        """Dataset steps trained on (the x axis of ``evaluations.csv``)."""
        return self.samples

    def agent(self) -> PolicyAgent:
        """The current policy as the NumPy agent that benchmarks and shipped policies use."""
        return PolicyAgent(self.model.export(), {**self.metadata}, self.rules, name="bc")

    def save_policy(self, path: str | os.PathLike) -> Path:
        return save_policy(path, self.model.export(), {**self.metadata, "timesteps": self.num_timesteps})

    def evaluate(self, writer: SummaryWriter | None = None) -> float:
        """The evaluation of every trainer family (:func:`agents.training.evaluator.evaluate_trainer`)."""
        return evaluate_trainer(self, writer)

    def run(self, progress: bool = True) -> Path:
        """Train ``bc_epochs`` passes over the dataset; returns the final policy file (``final_model.npz``).

        One line an epoch (loss, agreement with the dataset's actions) is logged
        whatever ``progress`` says (the batched trainers' progress-bar switch).
        """
        from torch.utils.tensorboard import SummaryWriter

        c = self.config
        data = self.data
        size = len(data.actions)
        batch = min(int(c.batch_size), size)
        writer = SummaryWriter(str(self.run_dir / "tb" / "run"))
        writer.add_text(
            "config",
            f"bc ({imitation_label(data.info['agent'])}) from {c.dataset}: {size:,} decisions of {data.episodes:,} games "
            f"by the {data.info['agent']} agent",
        )
        self.log(
            f"bc ({imitation_label(data.info['agent'])}): {size:,} decisions of {data.episodes:,} {data.info['agent']} games "
            f"from {c.dataset}, {c.bc_epochs} epochs"
        )
        started = time.perf_counter()
        inputs, masks, actions = (t.to(self.device) for t in (data.inputs, data.masks, data.actions))
        for epoch in range(int(c.bc_epochs)):
            lr = c.learning_rate * (1.0 - epoch / c.bc_epochs if c.lr_schedule == "linear" else 1.0)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            order = torch.randperm(size, generator=self.generator).to(self.device)
            loss_sum, correct = 0.0, 0
            for start in range(0, size, batch):
                idx = order[start : start + batch]
                logits = self.model.actor(inputs[idx]).masked_fill(~masks[idx], MASKED_LOGIT)
                loss = F.cross_entropy(logits, actions[idx])
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.model.actor.parameters(), c.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    loss_sum += float(loss) * len(idx)
                    correct += int((logits.argmax(dim=1) == actions[idx]).sum())
            self.samples += size
            self.train_seconds = time.perf_counter() - started
            accuracy = correct / size
            writer.add_scalar("train/loss", loss_sum / size, self.samples)
            writer.add_scalar("train/accuracy", accuracy, self.samples)
            writer.add_scalar("train/learning_rate", lr, self.samples)
            self.log(
                f"[bc] epoch {epoch + 1}/{c.bc_epochs}: loss {loss_sum / size:.4f}, "
                f"agreement with the dataset's actions {100 * accuracy:.2f}% ({self.train_seconds:.0f} s)"
            )
            if c.eval_freq > 0:
                self.evaluate(writer)
        writer.close()
        return self.save_policy(self.run_dir / "final_model.npz")
