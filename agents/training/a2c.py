"""Masked advantage actor-critic (A2C; Mnih et al. 2016) on the batched env.

The update of one rollout is one gradient step over the whole batch: policy
gradient with normalized GAE advantages, squared-error value loss, an entropy
bonus over the legal actions. The rollout is synchronous over ``n_envs`` games
in one process (the "A2C" of the batched setting); the loop around it is
:mod:`agents.training.trainer`'s, shared with PPO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from agents.training.actor_critic import ActorCritic, evaluate_actions, gradient_step, normalized
from agents.training.rollout import Batch

if TYPE_CHECKING:
    from agents.training.config import BatchedPPO


def update(
    model: ActorCritic, optimizer: torch.optim.Optimizer, batch: Batch, config: BatchedPPO, generator: torch.Generator
) -> dict[str, float]:
    """One A2C step from ``batch``; returns its statistics."""
    log_prob, entropies, values = evaluate_actions(model, batch.inputs, batch.masks, batch.actions)
    adv = normalized(batch.advantages)
    policy_loss = -(adv * log_prob).mean()
    value_loss = 0.5 * (values - batch.returns).pow(2).mean()
    entropy = entropies.mean()
    loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
    gradient_step(model, optimizer, loss, config.max_grad_norm)
    return {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy.item()}
