"""Masked advantage actor-critic (A2C; Mnih et al. 2016) on the batched env.

The update of one rollout is one gradient step over the whole batch: policy
gradient with normalized GAE advantages, squared-error value loss, an entropy
bonus over the legal actions. The rollout is synchronous over ``n_envs`` games
in one process (the "A2C" of the batched setting); the loop around it is
:mod:`agents.batched`'s, shared with PPO.
"""

from __future__ import annotations

import torch
from torch import nn

from agents.actor_critic import ActorCritic
from agents.rollout import Batch


def update(model: ActorCritic, optimizer: torch.optim.Optimizer, batch: Batch, config, generator: torch.Generator) -> dict[str, float]:
    """One A2C step from ``batch``; returns its statistics."""
    logits, values = model(batch.inputs, batch.masks)
    log_all = torch.log_softmax(logits, dim=1)
    log_prob = log_all.gather(1, batch.actions[:, None]).squeeze(1)
    adv = batch.advantages
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    policy_loss = -(adv * log_prob).mean()
    value_loss = 0.5 * (values - batch.returns).pow(2).mean()
    entropy = -(log_all.exp() * log_all).sum(dim=1).mean()
    loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
    optimizer.step()
    return {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy.item()}
