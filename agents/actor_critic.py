"""The actor-critic network of the batched trainers (``agents/ppo.py``, ``agents/a2c.py``).

Two multilayer perceptrons over the env's flat observation, as in Stable-Baselines3's
``MlpPolicy`` with separate ``pi`` and ``vf`` networks: the actor gives one logit
per action (``32 + n_boxes``, the env's action space), the critic the expected
rest of the game's (scaled) score. Illegal actions get a logit of
:data:`MASKED_LOGIT`, so they are never sampled and carry no probability mass,
without the NaNs a ``-inf`` would bring into entropy terms.

The input is :class:`agents.policy_inputs.PolicyInputs`: the flat observation
followed by a few features of it (progress toward the upper bonus), computed in
NumPy on the env's observations.

The trained weights are exported as plain NumPy arrays (:meth:`ActorCritic.export`),
which :class:`agents.policy_agent.PolicyAgent` plays without torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn


#: the logit of an illegal action (exp underflows to exactly 0 in float32)
MASKED_LOGIT = -1e8
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
#: "bfloat16": the layers run under torch.autocast in bfloat16 (weights, losses and optimizer stay float32);
#: about 1.6x faster updates on CPUs with AMX or AVX512-BF16 (and on GPUs), slower elsewhere;
#: "auto": bfloat16 where it is faster (:func:`resolve_precision`), float32 elsewhere
PRECISIONS = ("float32", "bfloat16", "auto")


def cpu_has_bf16_units() -> bool:
    """Whether this CPU has bfloat16 matrix units (AMX-BF16 or AVX512-BF16; read from ``/proc/cpuinfo``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            flags = set(handle.read().split())
    except OSError:  # not Linux: assume none
        return False
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def resolve_precision(precision: str, device: str | torch.device = "cpu") -> str:
    """``"float32"`` or ``"bfloat16"``: ``precision`` itself, or for ``"auto"`` bfloat16 on a CUDA GPU that
    supports it or a CPU with bfloat16 matrix units, float32 elsewhere (where bfloat16 is slower)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision != "auto":
        return precision
    if torch.device(device).type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if cpu_has_bf16_units() else "float32"


def mlp(sizes: Sequence[int], activation: str) -> nn.Sequential:
    """Linear layers with ``activation`` between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(ACTIVATIONS[activation]())
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs over the policy inputs.

    Args:
        in_dim: size of the inputs (:attr:`agents.policy_inputs.PolicyInputs.size`).
        n_actions: ``32 + n_boxes``.
        hidden: hidden layer sizes of each network, e.g. ``(256, 256)``.
        activation: ``"tanh"`` or ``"relu"``.
        precision: ``"float32"``, ``"bfloat16"`` or ``"auto"`` (:data:`PRECISIONS`).
    """

    def __init__(self, in_dim: int, n_actions: int, hidden: Sequence[int] = (256, 256), activation: str = "tanh",
                 precision: str = "float32"):
        super().__init__()
        self.precision = resolve_precision(precision)
        self.in_dim, self.n_actions = int(in_dim), int(n_actions)
        self.hidden = [int(h) for h in hidden]
        self.activation = activation
        self.actor = mlp([self.in_dim, *self.hidden, self.n_actions], activation)
        self.critic = mlp([self.in_dim, *self.hidden, 1], activation)
        for net, gain in ((self.actor, 0.01), (self.critic, 1.0)):  # orthogonal init, small policy head (CleanRL/SB3)
            linears = [m for m in net if isinstance(m, nn.Linear)]
            for m in linears:
                nn.init.orthogonal_(m.weight, gain=np.sqrt(2) if m is not linears[-1] else gain)
                nn.init.zeros_(m.bias)

    def _autocast(self, x: torch.Tensor):
        return torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.precision == "bfloat16")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(B, n_actions)`` and values ``(B,)`` (float32); ``mask`` is bool."""
        with self._autocast(x):
            logits, value = self.actor(x), self.critic(x)
        return logits.float().masked_fill(~mask, MASKED_LOGIT), value.float().squeeze(1)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        with self._autocast(x):
            return self.critic(x).float().squeeze(1)

    def export(self) -> dict[str, np.ndarray]:
        """The actor's weights as NumPy arrays ``w0, b0, w1, b1, ...`` (``x @ w + b``)."""
        out: dict[str, np.ndarray] = {}
        linears = [m for m in self.actor if isinstance(m, nn.Linear)]
        for i, m in enumerate(linears):
            out[f"w{i}"] = m.weight.detach().cpu().numpy().T.astype(np.float32)
            out[f"b{i}"] = m.bias.detach().cpu().numpy().astype(np.float32)
        return out


def evaluate_actions(model: "ActorCritic", inputs: torch.Tensor, masks: torch.Tensor,
                     actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(log_prob, entropy, values)`` of ``actions`` under the current policy (the terms of
    both update rules); the entropy is over the legal actions, per sample."""
    logits, values = model(inputs, masks)
    log_all = torch.log_softmax(logits, dim=1)
    log_prob = log_all.gather(1, actions[:, None]).squeeze(1)
    return log_prob, -(log_all.exp() * log_all).sum(dim=1), values


def normalized(advantages: torch.Tensor) -> torch.Tensor:
    """Advantages scaled to zero mean and unit standard deviation (per batch or minibatch)."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


def gradient_step(model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float) -> None:
    """One optimizer step on ``loss`` with the gradients clipped to ``max_grad_norm`` (both update rules)."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One action per row from masked logits (Gumbel-max: the argmax of logits plus Gumbel noise)."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device).clamp_(min=1e-12)
    return torch.argmax(logits - torch.log(-torch.log(u)), dim=1)
