"""Masked PPO on the batched env (Schulman et al. 2017), CleanRL style.

The update of one rollout: ``n_epochs`` passes over the batch in shuffled
minibatches of ``batch_size``; clipped surrogate objective on per-minibatch
normalized advantages, squared-error value loss, an entropy bonus over the
legal actions. The loop around it (rollouts, schedules, evaluation,
checkpoints, resume) is :mod:`agents.batched`'s, shared with A2C.
"""

from __future__ import annotations

import torch

from agents.actor_critic import ActorCritic, evaluate_actions, gradient_step, normalized
from agents.rollout import Batch


def update(model: ActorCritic, optimizer: torch.optim.Optimizer, batch: Batch, config, generator: torch.Generator) -> dict[str, float]:
    """One PPO update from ``batch``; returns the last epoch's mean statistics."""
    size = batch.actions.shape[0]
    minibatch = min(int(config.batch_size), size)
    stats: dict[str, float] = {}
    for _ in range(int(config.n_epochs)):
        order = torch.randperm(size, generator=generator)
        totals = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0, "clip_fraction": 0.0}
        count = 0
        for start in range(0, size - minibatch + 1, minibatch):
            idx = order[start:start + minibatch].to(batch.actions.device)
            log_prob, entropies, values = evaluate_actions(model, batch.inputs[idx], batch.masks[idx], batch.actions[idx])
            log_ratio = log_prob - batch.log_probs[idx]
            ratio = log_ratio.exp()
            adv = normalized(batch.advantages[idx])
            clip = float(config.clip_range)
            policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
            value_loss = 0.5 * (values - batch.returns[idx]).pow(2).mean()
            entropy = entropies.mean()
            loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
            gradient_step(model, optimizer, loss, config.max_grad_norm)
            with torch.no_grad():
                totals["policy_loss"] += float(policy_loss)
                totals["value_loss"] += float(value_loss)
                totals["entropy"] += float(entropy)
                totals["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
                totals["clip_fraction"] += float(((ratio - 1).abs() > clip).float().mean())
            count += 1
        stats = {k: v / max(count, 1) for k, v in totals.items()}
    return stats
