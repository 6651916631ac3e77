"""Masked PQN on the batched env: parallel Q-learning without a replay buffer or a target network.

Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning" (CleanRL's ``pqn.py`` is the model of this
file). Q-learning made stable by two things instead of a replay buffer and a target network: the ``n_envs`` games
played in parallel decorrelate the samples of a rollout, and LayerNorm in the Q-network keeps the bootstrapped
targets from diverging. Selected with ``algo: batched_pqn`` (``configs/batched_pqn_yacht.yaml``); everything but
the lines below is shared with batched PPO and A2C (:class:`agents.training.trainer.Trainer`):

- the network is the actor of :class:`agents.training.actor_critic.ActorCritic` (its ``box_points`` and ``keep_points``
  heads included) read as ``Q(s, a)`` for every action, with ``layer_norm`` on, and no critic
  (:class:`QNetwork`); its weights export to the same policy file, which the NumPy
  :class:`~agents.policy.player.PolicyAgent` plays greedily (the legal action of highest Q), so evaluation,
  benchmark and results are the other trainers' own;
- the rollout is :class:`agents.training.rollout.Rollout` with an epsilon-greedy choice over the legal actions
  (:func:`behaviour`; epsilon decays linearly from ``start_e`` to ``end_e`` over the first
  ``exploration_fraction`` of training; with a ``temperature`` the choices that are not random draw from
  ``softmax(Q / temperature)`` over the legal actions, which tries near-ties often and bad actions rarely).
  The rollout's "value" of a state is ``max_a Q(s, a)`` over its legal actions, so its GAE returns
  (advantages + values) are exactly the Q(lambda) targets of the paper:
  ``G_t = r_t + gamma * ((1 - lambda) * max_a Q(s_{t+1}, a) + lambda * G_{t+1})``, cut at a game's end;
- the update (:func:`update`): ``n_epochs`` passes over the rollout in shuffled minibatches of ``batch_size``,
  each one gradient step on ``0.5 * (Q(s_t, a_t) - G_t)^2``;
- with ``dueling: true`` (Wang et al. 2016) ``Q(s, a) = V(s) + A(s, a) - mean of A(s, .) over the legal actions``:
  the actor is ``A``, and a separate MLP with LayerNorm is ``V``, so the actor learns only how the actions of a
  state differ, not what the state is worth. The policy file holds ``A``, whose best legal action is ``Q``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from agents.training.actor_critic import MASKED_LOGIT, ActorCritic, Compiled, _init, gradient_step, mlp, sample
from agents.training.rollout import Batch, Choose

if TYPE_CHECKING:
    from agents.training.config import BatchedPQN

STATS = ("q_loss", "q_taken", "target")


class QNetwork(ActorCritic):
    """The actor of :class:`ActorCritic` read as Q-values (one per action); no critic, or with ``dueling`` the
    critic as the state's value ``V(s)`` and the actor as the advantages ``A(s, a)``."""

    def __init__(self, *args: Any, dueling: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dueling = bool(dueling)
        del self.critic  # a state's value is its best legal action's
        if self.dueling:  # V(s): an MLP of the actor's sizes with LayerNorm, its last layer at the critic's gain
            self.critic = mlp([self.in_dim, *self.hidden, 1], self.activation, layer_norm=True)
            _init(self.critic, 1.0)

    def q_values(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Unmasked ``Q(s, a)`` ``(B, n_actions)`` (float32) of policy inputs ``x`` with legal actions ``mask``."""
        with self._autocast(x):
            q = self.actor_logits(x)
            v = self.critic(x) if self.dueling else None
        q = q.float()
        if v is None:
            return q
        legal = mask.float()
        mean = (q * legal).sum(dim=1, keepdim=True) / legal.sum(dim=1, keepdim=True).clamp(min=1.0)
        return v.float() + q - mean

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked Q-values ``(B, n_actions)`` and ``max_a Q(s, a)`` over the legal actions ``(B,)`` (float32)."""
        q = self.q_values(x, mask).masked_fill(~mask, MASKED_LOGIT)
        return q, q.max(dim=1).values

    def value(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``max_a Q(s, a)`` over the legal actions ``mask``."""
        if mask is None:
            raise ValueError("a Q-network's value needs the legal actions")
        return self(x, mask)[1]


NETWORK = QNetwork  #: the network agents.training.trainer.Trainer builds for this algorithm


def network_options(config: BatchedPQN) -> dict[str, bool]:
    """The network's options from the config (recorded in the policy file's metadata)."""
    return {"layer_norm": bool(config.layer_norm), "dueling": bool(config.dueling)}


def epsilon(config: BatchedPQN, progress: float) -> float:
    """Epsilon at ``progress`` (the fraction of ``total_timesteps`` done): linear from ``start_e`` to ``end_e``
    over the first ``exploration_fraction``, then ``end_e``."""
    span = max(float(config.exploration_fraction), 1e-12)
    return float(config.start_e + (config.end_e - config.start_e) * min(progress / span, 1.0))


def behaviour(config: BatchedPQN, progress: float) -> Choose:
    """The rollout's choice at ``progress``: with probability epsilon a uniformly random legal action (the masked
    logits of the illegal ones are :data:`MASKED_LOGIT`), else the legal action of highest Q, or with a
    ``temperature`` a legal action drawn with probability ``softmax(Q / temperature)``."""
    eps = epsilon(config, progress)
    temperature = float(config.temperature)

    def choose(q: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        legal = q > MASKED_LOGIT / 2
        random = sample(torch.where(legal, 0.0, MASKED_LOGIT), generator)
        explore = torch.rand(q.shape[0], generator=generator, device=q.device) < eps
        best = sample(torch.where(legal, q / temperature, MASKED_LOGIT), generator) if temperature else q.argmax(1)
        return torch.where(explore, random, best)

    return choose


def loss(
    model: QNetwork, inputs: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The squared TD(lambda) error of one minibatch and its statistics (:data:`STATS`, detached)."""
    taken = model.q_values(inputs, masks).gather(1, actions[:, None]).squeeze(1)
    total = 0.5 * (taken - targets).pow(2).mean()
    with torch.no_grad():
        stats = torch.stack([total, taken.mean(), targets.mean()])
    return total, stats


_compiled_loss: Compiled | None = None  #: the compiled loss, one per process (as agents.training.ppo's)


def update(
    model: QNetwork, optimizer: torch.optim.Optimizer, batch: Batch, config: BatchedPQN, generator: torch.Generator
) -> dict[str, float]:
    """One PQN update from ``batch`` (its ``returns`` are the Q(lambda) targets); the last epoch's mean statistics."""
    global _compiled_loss
    loss_of = loss
    if config.compile:
        _compiled_loss = _compiled_loss or Compiled(loss)
        loss_of = _compiled_loss
    size = batch.actions.shape[0]
    minibatch = min(int(config.batch_size), size)
    stats: dict[str, float] = {}
    for _ in range(int(config.n_epochs)):
        order = torch.randperm(size, generator=generator).to(batch.actions.device)
        shuffled = [t[order] for t in (batch.inputs, batch.masks, batch.actions, batch.returns)]
        totals, count = torch.zeros(len(STATS)), 0
        for start in range(0, size - minibatch + 1, minibatch):
            total, minibatch_stats = loss_of(model, *(t[start : start + minibatch] for t in shuffled))
            gradient_step(model, optimizer, total, config.max_grad_norm)
            totals += minibatch_stats.float().cpu()
            count += 1
        stats = dict(zip(STATS, (totals / max(count, 1)).tolist()))
    return stats
