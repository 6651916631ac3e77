"""The actor-critic network of the batched trainers (``agents/training/ppo.py``, ``agents/training/a2c.py``).

Two multilayer perceptrons over the env's flat observation, as in Stable-Baselines3's
``MlpPolicy`` with separate ``pi`` and ``vf`` networks: the actor gives one logit
per action (``32 + n_boxes``, the env's action space), the critic the expected
rest of the game's (scaled) score. Illegal actions get a logit of
:data:`MASKED_LOGIT`, so they are never sampled and carry no probability mass,
without the NaNs a ``-inf`` would bring into entropy terms.

The input is :class:`agents.policy.inputs.PolicyInputs`: the flat observation
followed by a few features of it (progress toward the upper bonus), computed in
NumPy on the env's observations. The heads on the actor (``box_points``,
``keep_points``) are :class:`agents.policy.heads.PolicyHeads`, written once for
this network and the NumPy player.

The trained weights are exported as plain NumPy arrays (:meth:`ActorCritic.export`),
which :class:`agents.policy.player.PolicyAgent` plays without torch.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.policy.files import check_ruleset
from agents.policy.heads import PolicyHeads, PolicyOptions
from agents.policy.inputs import PolicyInputs
from agents.policy.player import PolicyAgent
from dice_poker_env.rules import Rules

#: the logit of an illegal action (exp underflows to exactly 0 in float32)
MASKED_LOGIT = -1e8


def tanh_formula(x: torch.Tensor) -> torch.Tensor:
    """tanh as ``1 - 2 / (exp(2x) + 1)``, computed in float32 and returned in ``x``'s dtype; clamped at +-15,
    beyond which tanh is 1 in float32 and ``exp(2x)`` would overflow."""
    return (1.0 - 2.0 / (torch.exp(2.0 * x.float().clamp(-15.0, 15.0)) + 1.0)).to(x.dtype)


class _CompiledTanh(torch.autograd.Function):
    """:func:`tanh_formula`, its gradient from the output: ``1 - y^2``."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = tanh_formula(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad * (1.0 - y * y)


class Tanh(nn.Module):
    """``tanh``; under ``torch.compile`` computed as ``1 - 2 / (exp(2x) + 1)`` with the gradient ``1 - tanh^2``.

    The same function (within 2e-7 in float32), but inductor's CPU code for it is about 2.5x faster than
    its vectorized ``tanh``, and the gradient from the saved output needs no second ``exp`` (letting autograd
    differentiate the formula gained nothing). Measured on the 2-core Xeon here, 1,024 rows, 256 x 256,
    bfloat16 (``benchmarks/bench_activation.py``, ``docs/training.md``): the compiled policy forward
    4.0-5.6 ms -> 2.4-2.5 ms, a PPO minibatch's loss and backward 8.1-8.4 ms -> 6.0-6.1 ms; the tanh layers
    were half of each compiled forward (``benchmarks/profile_train.py``). Eager mode keeps ``torch.tanh``:
    ATen's own kernel is the fast one there, and the formula would lose precision near 0 in bfloat16
    arithmetic.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return _CompiledTanh.apply(x)
        return torch.tanh(x)


ACTIVATIONS = {"tanh": Tanh, "relu": nn.ReLU}
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


def check_network_fields(net_arch: Any, activation: Any) -> None:
    """A one-line ``ValueError`` naming the field for a ``net_arch`` or ``activation`` the network cannot be
    built from (``train.py`` calls it before training)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    if isinstance(net_arch, (str, bytes)) or not hasattr(net_arch, "__iter__"):
        raise ValueError(f"net_arch must be a list of layer sizes, got {net_arch!r}")
    sizes = list(net_arch)
    if not sizes or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 for n in sizes):
        raise ValueError(f"net_arch must be a non-empty list of integers >= 1, got {sizes!r}")


def mlp(sizes: Sequence[int], activation: str, layer_norm: bool = False) -> nn.Sequential:
    """Linear layers with ``activation`` between them (none after the last); with ``layer_norm`` each hidden
    layer's pre-activations are normalized per sample (LayerNorm without learnt scale and shift, which
    :class:`agents.policy.player.PolicyAgent` mirrors)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers += [*hidden_norm(b, layer_norm), ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


def hidden_norm(size: int, layer_norm: bool) -> list[nn.Module]:
    """``[LayerNorm(size)]`` without learnt parameters, or ``[]``."""
    return [nn.LayerNorm(size, elementwise_affine=False)] if layer_norm else []


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs over the policy inputs, with the policy's heads on the actor.

    The heads (``box_points``, ``keep_points``, ``keep_points_bonus``) are :class:`agents.policy.heads.PolicyHeads`,
    the same code the NumPy player runs: this module holds their learnt weights (``box_points_w``,
    ``points_head``) and their tables as buffers (``tables``: moved with the model, not saved).

    Args:
        heads: the ruleset's inputs and heads with the policy's options (:class:`~agents.policy.heads.PolicyHeads`).
        hidden: hidden layer sizes of each network, e.g. ``(256, 256)``.
        activation: ``"tanh"`` or ``"relu"``.
        precision: ``"float32"``, ``"bfloat16"`` or ``"auto"`` (:data:`PRECISIONS`).
        layer_norm: the actor's hidden layers are normalized per sample before their activation (LayerNorm
            without learnt parameters; the Q-network of :mod:`agents.training.pqn`).
    """

    def __init__(
        self,
        heads: PolicyHeads,
        hidden: Sequence[int] = (256, 256),
        activation: str = "tanh",
        precision: str = "float32",
        layer_norm: bool = False,
    ) -> None:
        super().__init__()
        check_network_fields(hidden, activation)
        self.heads = heads
        options = heads.options
        self.precision = resolve_precision(precision)
        self.in_dim, self.n_actions = heads.in_dim, heads.n_actions
        self.hidden = [int(h) for h in hidden]
        self.activation = activation
        self.layer_norm = bool(layer_norm)
        if options.keep_points:  # the last hidden layer also feeds the box values' head
            self.actor = nn.Sequential(
                mlp([self.in_dim, *self.hidden], activation, layer_norm),
                *hidden_norm(self.hidden[-1], layer_norm),
                ACTIVATIONS[activation](),
            )
            self.actor_out = nn.Linear(self.hidden[-1], self.n_actions)
            _init(self.actor, None)
            nn.init.orthogonal_(self.actor_out.weight, gain=0.01)
            nn.init.zeros_(self.actor_out.bias)
            self.critic = mlp([self.in_dim, *self.hidden, 1], activation)
        else:
            self.actor = mlp([self.in_dim, *self.hidden, self.n_actions], activation, layer_norm)
            self.critic = mlp([self.in_dim, *self.hidden, 1], activation)
            _init(self.actor, 0.01)
        _init(self.critic, 1.0)
        if options.keep_points:
            self.points_head = nn.Linear(self.hidden[-1], heads.n_boxes)  # u(s): starts at 0, so at first no change
            nn.init.zeros_(self.points_head.weight)
            nn.init.zeros_(self.points_head.bias)
        self.tables = nn.Module()
        for name, array in heads.arrays.items():
            self.tables.register_buffer(name, torch.from_numpy(np.ascontiguousarray(array)), persistent=False)
        if options.box_points:
            self.box_points_w = nn.Parameter(torch.full((heads.n_boxes,), float(options.box_points)))

    @classmethod
    def from_policy(
        cls, weights: dict[str, np.ndarray], metadata: dict, rules: Rules, precision: str = "float32"
    ) -> ActorCritic:
        """The actor of a policy file (:func:`agents.policy.files.load_policy`'s weights and metadata) as a torch
        network: the inverse of :meth:`export`, e.g. to fine-tune a shipped policy or to check that the torch
        actor and :class:`agents.policy.player.PolicyAgent` agree. A policy file holds no critic: it starts fresh.

        Args:
            weights, metadata: the policy file's contents.
            rules: the ruleset (the policy's own; checked by :class:`~agents.policy.player.PolicyAgent`).
            precision: the network's precision (``"float32"``: the NumPy player's arithmetic).
        """
        player = PolicyAgent(weights, metadata, rules)  # checks the file against the ruleset and its options
        hidden = [w.shape[1] for w, _ in player.layers[:-1]]
        model = cls(player.heads, hidden, metadata.get("activation", "tanh"), precision)
        model.load_actor(weights, metadata)
        return model

    def load_actor(
        self, weights: Mapping[str, np.ndarray], metadata: Mapping[str, Any], source: str = "policy"
    ) -> None:
        """Start this network's actor from a policy file's weights (fine-tuning; the critic is left as it is).

        The file's ruleset, options, activation and layer sizes must be this network's, except that a
        single-player policy may start a two-player one (``players: 2``): the inputs the file never saw (the
        opponent's scorecard) get zero weights, so the network first plays exactly as the file does.

        Raises:
            ValueError: (one line) the file does not fit this network.
        """
        mine = self.heads.options
        theirs = PolicyOptions.from_metadata(metadata, source)
        check_ruleset(metadata, self.heads.rules, source=source)
        if theirs.players > mine.players or dataclasses.replace(theirs, players=mine.players) != mine:
            raise ValueError(f"{source}: its options {theirs.metadata()} are not this network's {mine.metadata()}")
        if metadata.get("activation", "tanh") != self.activation:
            raise ValueError(f"{source}: activation {metadata.get('activation', 'tanh')!r}, not {self.activation!r}")
        names = self._exported_names()
        missing = sorted(set(names) - set(weights))
        if missing:
            raise ValueError(f"{source}: weights {', '.join(missing)} are missing (other layers or heads)")
        params = dict(self.named_parameters())
        file_inputs = PolicyInputs(self.heads.rules, features=theirs.features, players=theirs.players)
        with torch.no_grad():
            for name, param in names.items():
                array = np.asarray(weights[name], dtype=np.float32)
                if name == "w0" and file_inputs.size != self.in_dim and array.shape[0] == file_inputs.size:
                    wide = np.zeros((self.in_dim, array.shape[1]), dtype=np.float32)
                    own, features = file_inputs.obs_size, file_inputs.size - file_inputs.obs_size
                    wide[:own] = array[:own]  # the player's own game comes first in both layouts
                    wide[self.in_dim - features :] = array[own:]  # the features come last
                    array = wide
                array = array.T if array.ndim == 2 else array
                if array.shape != tuple(params[param].shape):
                    raise ValueError(
                        f"{source}: weight {name} has shape {array.shape[::-1]}, this network's "
                        f"{tuple(params[param].shape)[::-1]} (layer sizes differ)"
                    )
                params[param].copy_(torch.from_numpy(np.ascontiguousarray(array)))

    def _autocast(self, x: torch.Tensor) -> torch.autocast:
        return torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.precision == "bfloat16")

    def actor_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Unmasked action logits ``(B, n_actions)`` of policy inputs ``x`` (under the model's precision's autocast
        when called through :meth:`forward`)."""
        box_w = self.box_points_w if self.heads.options.box_points else None
        if not self.heads.options.keep_points:
            return self.heads.logits(self.tables, x, self.actor(x), None, box_w)
        h = self.actor(x)
        return self.heads.logits(self.tables, x, self.actor_out(h), self.points_head(h), box_w)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(B, n_actions)`` and values ``(B,)`` (float32); ``mask`` is bool."""
        with self._autocast(x):
            logits, value = self.actor_logits(x), self.critic(x)
        return logits.float().masked_fill(~mask, MASKED_LOGIT), value.float().squeeze(1)

    def value(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Values ``(B,)`` (float32) of policy inputs ``x`` (``mask``, the legal actions, is not needed here; a
        Q-network's value, the best legal action's, needs it)."""
        with self._autocast(x):
            return self.critic(x).float().squeeze(1)

    def _exported_names(self) -> dict[str, str]:
        """Policy-file weight name -> this module's parameter name (:meth:`export`, :meth:`from_policy`)."""
        linears = [name for name, m in self.actor.named_modules() if isinstance(m, nn.Linear)]
        names = [f"actor.{name}" for name in linears] + (["actor_out"] if self.heads.options.keep_points else [])
        out = {}
        for i, name in enumerate(names):
            out[f"w{i}"], out[f"b{i}"] = f"{name}.weight", f"{name}.bias"
        if self.heads.options.box_points:
            out["box_points_w"] = "box_points_w"
        if self.heads.options.keep_points:
            out["points_w"], out["points_b"] = "points_head.weight", "points_head.bias"
        return out

    def export(self) -> dict[str, np.ndarray]:
        """The actor's weights as NumPy arrays (``x @ w + b``): ``w0, b0, w1, b1, ...`` for its layers; with
        ``box_points`` also ``box_points_w``; with ``keep_points`` also ``points_w`` and ``points_b`` (the box
        values' head)."""
        params = dict(self.named_parameters())
        out: dict[str, np.ndarray] = {}
        for name, param in self._exported_names().items():
            array = params[param].detach().float().cpu().numpy().astype(np.float32)
            out[name] = array.T if array.ndim == 2 else array
        return out


def _init(net: nn.Module, last_gain: float | None) -> None:
    """Orthogonal initialization (CleanRL/SB3): gain sqrt(2) for hidden layers, ``last_gain`` for the output
    layer (``None``: every layer is hidden)."""
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    for m in linears:
        last = last_gain is not None and m is linears[-1]
        nn.init.orthogonal_(m.weight, gain=float(last_gain) if last and last_gain is not None else float(np.sqrt(2)))
        nn.init.zeros_(m.bias)


def evaluate_actions(
    model: ActorCritic, inputs: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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


class Compiled:
    """``target`` (a function or a module) under ``torch.compile``, falling back to ``target`` itself, with one
    warning, where compiling fails (e.g. no C++ compiler for the CPU backend). Attributes other than the call
    are ``target``'s (a compiled module's :meth:`ActorCritic.value` stays eager).

    Measured on the 2-core CPU here (``docs/training.md``): the compiled PPO loss and policy forward fuse the
    element-wise work around the matrix products; compiling costs 10-30 s at the first call of each.
    """

    def __init__(self, target: Callable) -> None:
        self.target = target
        self._compiled: Callable | None = torch.compile(target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._compiled is not None:
            try:
                return self._compiled(*args, **kwargs)
            except Exception as error:  # noqa: BLE001 - whatever the backend raises: play on without it
                warnings.warn(
                    f"torch.compile is not available here ({type(error).__name__}: "
                    f"{str(error).strip().splitlines()[0] if str(error).strip() else ''}); running eagerly",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self._compiled = None
        return self.target(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One action per row from masked logits (Gumbel-max: the argmax of logits plus Gumbel noise)."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device).clamp_(min=1e-12)
    return torch.argmax(logits - torch.log(-torch.log(u)), dim=1)
