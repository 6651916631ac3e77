"""Masked PPO on the batched env (Schulman et al. 2017), CleanRL style.

The update of one rollout: ``n_epochs`` passes over the batch in shuffled
minibatches of ``batch_size``; clipped surrogate objective on per-minibatch
normalized advantages, squared-error value loss, an entropy bonus over the
legal actions. With ``compile`` the loss of a minibatch (:func:`loss`) runs
under ``torch.compile``. The loop around it (rollouts, schedules, evaluation,
checkpoints, resume) is :mod:`agents.training.trainer`'s, shared with A2C.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from agents.training.actor_critic import ActorCritic, Compiled, evaluate_actions, gradient_step, normalized
from agents.training.rollout import Batch

if TYPE_CHECKING:
    from agents.training.config import BatchedPPO

STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")


def loss(
    model: ActorCritic,
    inputs: torch.Tensor,
    masks: torch.Tensor,
    actions: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    clip: float,
    vf_coef: float,
    ent_coef: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The PPO loss of one minibatch and its statistics (:data:`STATS`, detached, one tensor)."""
    log_prob, entropies, values = evaluate_actions(model, inputs, masks, actions)
    log_ratio = log_prob - old_log_probs
    ratio = log_ratio.exp()
    adv = normalized(advantages)
    policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
    value_loss = 0.5 * (values - returns).pow(2).mean()
    entropy = entropies.mean()
    total = policy_loss + vf_coef * value_loss - ent_coef * entropy
    with torch.no_grad():
        stats = torch.stack(
            [
                policy_loss,
                value_loss,
                entropy,
                ((ratio - 1) - log_ratio).mean(),
                ((ratio - 1).abs() > clip).float().mean(),
            ]
        )
    return total, stats


#: the compiled loss, one per process: dynamo lifts a model's parameters as graph inputs, so every model of
#: the same structure (net_arch, precision, options) shares one graph; another structure compiles once more
#: (up to dynamo's recompile limit, 8 structures a process)
_compiled_loss: Compiled | None = None


def update(
    model: ActorCritic, optimizer: torch.optim.Optimizer, batch: Batch, config: BatchedPPO, generator: torch.Generator
) -> dict[str, float]:
    """One PPO update from ``batch``; returns the last epoch's mean statistics."""
    global _compiled_loss
    loss_of: Callable[..., Any] = loss  # the loss, or the loss under Compiled
    if getattr(config, "compile", False):
        _compiled_loss = _compiled_loss or Compiled(loss)
        loss_of = _compiled_loss
    size = batch.actions.shape[0]
    minibatch = min(int(config.batch_size), size)
    coefficients = (float(config.clip_range), float(config.vf_coef), float(config.ent_coef))
    stats: dict[str, float] = {}
    for _ in range(int(config.n_epochs)):
        order = torch.randperm(size, generator=generator).to(batch.actions.device)
        # the epoch's samples shuffled once (one gather per tensor), each minibatch a slice of them
        shuffled = [
            t[order]
            for t in (batch.inputs, batch.masks, batch.actions, batch.log_probs, batch.advantages, batch.returns)
        ]
        totals = torch.zeros(len(STATS))
        count = 0
        for start in range(0, size - minibatch + 1, minibatch):
            total, minibatch_stats = loss_of(model, *(t[start : start + minibatch] for t in shuffled), *coefficients)
            gradient_step(model, optimizer, total, config.max_grad_norm)
            totals += minibatch_stats.float().cpu()
            count += 1
        stats = dict(zip(STATS, (totals / max(count, 1)).tolist()))
    return stats
