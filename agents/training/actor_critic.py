"""The actor-critic network of the batched trainers (``agents/training/ppo.py``, ``agents/training/a2c.py``).

Two multilayer perceptrons over the env's flat observation, as in Stable-Baselines3's
``MlpPolicy`` with separate ``pi`` and ``vf`` networks: the actor gives one logit
per action (``32 + n_boxes``, the env's action space), the critic the expected
rest of the game's (scaled) score. Illegal actions get a logit of
:data:`MASKED_LOGIT`, so they are never sampled and carry no probability mass,
without the NaNs a ``-inf`` would bring into entropy terms.

The input is :class:`agents.policy.inputs.PolicyInputs`: the flat observation
followed by a few features of it (progress toward the upper bonus), computed in
NumPy on the env's observations.

The trained weights are exported as plain NumPy arrays (:meth:`ActorCritic.export`),
which :class:`agents.policy.player.PolicyAgent` plays without torch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from agents.policy.inputs import KeepBonus
from dice_poker_env.engine.combinatorics import (
    KEEP_BITS,
    N_DICE,
    N_FACES,
    N_KEEP_ACTIONS,
    N_ROLLS,
    ROLL_INDEX_OF_CODE,
    encode_counts,
)

#: the logit of an illegal action (exp underflows to exactly 0 in float32)
MASKED_LOGIT = -1e8


def tanh_formula(x: torch.Tensor) -> torch.Tensor:
    """tanh as ``1 - 2 / (exp(2x) + 1)``, computed in float32 and returned in ``x``'s dtype; clamped at +-15,
    beyond which tanh is 1 in float32 and ``exp(2x)`` would overflow."""
    return (1.0 - 2.0 / (torch.exp(2.0 * x.float().clamp(-15.0, 15.0)) + 1.0)).to(x.dtype)


class _CompiledTanh(torch.autograd.Function):
    """:func:`tanh_formula`, its gradient from the output: ``1 - y^2``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = tanh_formula(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
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

    With ``keep_head`` the actor scores the 32 keep actions by *what they keep*
    rather than by position: its last hidden layer ``h`` and the counts of each
    face among the kept dice ``k_a`` (read from the observation's sorted-dice
    one-hot and the action's keep bits) go through one more layer,
    ``logit_a = w . act(U h + V k_a + c) + d``, shared by all keeps. Two
    bitmasks keeping the same dice get the same logit, and what is learnt about
    keeping three fives carries over to every roll holding them. The box
    actions keep a linear head on ``h``.

    Args:
        in_dim: size of the inputs (:attr:`agents.policy.inputs.PolicyInputs.size`).
        n_actions: ``32 + n_boxes``.
        hidden: hidden layer sizes of each network, e.g. ``(256, 256)``.
        activation: ``"tanh"`` or ``"relu"``.
        precision: ``"float32"``, ``"bfloat16"`` or ``"auto"`` (:data:`PRECISIONS`).
        keep_head: units of the keep head's layer (0: one linear output per action).
        dice_one_hot: where the sorted dice's one-hot (5 x 6) starts in the inputs (needed with ``keep_head``).
        box_points: with a value ``c > 0``, each box action's logit also gets ``w_b * p_b``: ``p_b`` the points
            box ``b`` would score now (the observation's ``potential_points``, points / the largest box score),
            ``w_b`` a learnt weight per box starting at ``c``. A skip connection from what the observation
            shows to the box choice: from the first update on, five of a kind prefers the 50-point box to
            the 16-24 points of four of a kind, which the plain network may learn late or never.
        potential_points: where ``potential_points`` (one per box) starts in the inputs (needed with ``box_points``
            and ``keep_points``).
        keep_points: the actor also values each box's points per state, ``u(s) = W h + c`` (one value per box,
            a linear head on its last hidden layer ``h``, starting at 0), and adds to each box action's logit
            ``u_b p_b`` (the points box ``b`` would score now) and to each keep's logit ``sum_b open_b u_b E_ab``,
            ``E_ab`` the points box ``b`` would score on average after rerolling the dice that keep ``a`` does not
            keep (:func:`agents.policy.inputs.keep_expected_points`). Box and keep actions are then compared in
            the same currency: keeping a pair of twos and rerolling scores more twos on average than writing the
            pair now, which the plain network must discover from the dice alone.
        face_counts: where the face counts (6, each count / 5) start in the inputs (needed with ``keep_points``).
        filled: where the filled flags (one per box) start in the inputs (needed with ``keep_points``).
        expected_points: the ``(252, 32, n_boxes)`` table of :func:`agents.policy.inputs.keep_expected_points`
            (needed with ``keep_points``), or the two tables of :func:`agents.policy.inputs.keep_points_tables`
            with ``rerolls=2`` ``(2, 252, 32, n_boxes)``: the keeps then read the two-reroll table where two
            rerolls are left.
        rolls_left: where the rolls-left one-hot (3) starts in the inputs (needed with two tables).
        keep_bonus: with ``keep_points`` (one table), a :class:`agents.policy.inputs.KeepBonus` of the ruleset
            (option ``keep_points_bonus``): each keep's points for each open upper box then also include the
            upper bonus's points times the chance that writing the box after the reroll reaches it, as the box
            actions' points include it where writing the box reaches it now; with its ``par`` mode, instead, the
            keeps and the upper box actions get the change in the bonus's expected points under a par model.
        upper_total: where the upper total (one value, points / ``upper_scale``) is in the inputs (needed with
            ``keep_bonus``).
    """

    def __init__(
        self,
        in_dim: int,
        n_actions: int,
        hidden: Sequence[int] = (256, 256),
        activation: str = "tanh",
        precision: str = "float32",
        keep_head: int = 0,
        dice_one_hot: int | None = None,
        box_points: float = 0.0,
        potential_points: int | None = None,
        keep_points: bool = False,
        face_counts: int | None = None,
        filled: int | None = None,
        expected_points: np.ndarray | None = None,
        rolls_left: int | None = None,
        keep_bonus: KeepBonus | None = None,
        upper_total: int | None = None,
    ):
        super().__init__()
        if keep_points and keep_head:
            raise ValueError("keep_points and keep_head are two ways of scoring keeps: use one")
        if keep_points and any(v is None for v in (potential_points, face_counts, filled, expected_points)):
            raise ValueError(
                "keep_points needs the positions of potential_points, face_counts and filled in the "
                "inputs and the expected_points table"
            )
        if keep_head and dice_one_hot is None:
            raise ValueError("keep_head needs the position of the dice one-hot in the inputs (dice_one_hot)")
        if box_points and potential_points is None:
            raise ValueError("box_points needs the position of potential_points in the inputs (potential_points)")
        self.precision = resolve_precision(precision)
        self.in_dim, self.n_actions = int(in_dim), int(n_actions)
        self.hidden = [int(h) for h in hidden]
        self.activation = activation
        self.keep_head = int(keep_head)
        if self.keep_head:
            self.dice_one_hot = int(dice_one_hot)
            self.actor = nn.Sequential(mlp([self.in_dim, *self.hidden], activation), ACTIVATIONS[activation]())
            self.box_out = nn.Linear(self.hidden[-1], self.n_actions - N_KEEP_ACTIONS)
            self.keep_state = nn.Linear(self.hidden[-1], self.keep_head)
            self.keep_dice = nn.Linear(N_FACES, self.keep_head, bias=False)
            self.keep_out = nn.Linear(self.keep_head, 1)
            self.keep_act = ACTIVATIONS[activation]()
            self.register_buffer("keep_bits", torch.tensor(KEEP_BITS, dtype=torch.float32), persistent=False)
            self.critic = mlp([self.in_dim, *self.hidden, 1], activation)
            heads = [self.box_out, self.keep_out]
            _init(self.actor, None)
            for m in (self.keep_state, self.keep_dice):
                nn.init.orthogonal_(m.weight, gain=np.sqrt(2))
            nn.init.zeros_(self.keep_state.bias)
            for m in heads:  # small policy outputs (CleanRL/SB3)
                nn.init.orthogonal_(m.weight, gain=0.01)
                nn.init.zeros_(m.bias)
        elif keep_points:
            self.actor = nn.Sequential(mlp([self.in_dim, *self.hidden], activation), ACTIVATIONS[activation]())
            self.actor_out = nn.Linear(self.hidden[-1], self.n_actions)
            _init(self.actor, None)
            nn.init.orthogonal_(self.actor_out.weight, gain=0.01)
            nn.init.zeros_(self.actor_out.bias)
            self.critic = mlp([self.in_dim, *self.hidden, 1], activation)
        else:
            self.actor = mlp([self.in_dim, *self.hidden, self.n_actions], activation)
            self.critic = mlp([self.in_dim, *self.hidden, 1], activation)
            _init(self.actor, 0.01)
        _init(self.critic, 1.0)
        self.keep_points = bool(keep_points)
        if self.keep_points:
            n_boxes = self.n_actions - N_KEEP_ACTIONS
            table = np.asarray(expected_points, dtype=np.float32)
            if table.shape not in ((N_ROLLS, N_KEEP_ACTIONS, n_boxes), (2, N_ROLLS, N_KEEP_ACTIONS, n_boxes)):
                raise ValueError(
                    f"expected_points must have shape {(N_ROLLS, N_KEEP_ACTIONS, n_boxes)} or "
                    f"{(2, N_ROLLS, N_KEEP_ACTIONS, n_boxes)}, got {table.shape}"
                )
            if table.ndim == 4 and rolls_left is None:
                raise ValueError("two keep_points tables need the position of rolls_left in the inputs")
            self.rolls_left = None if table.ndim == 3 else int(rolls_left)
            self.face_counts, self.filled = int(face_counts), int(filled)
            self.potential_points = int(potential_points)
            self.points_head = nn.Linear(self.hidden[-1], n_boxes)  # u(s): starts at 0, so at first no change
            nn.init.zeros_(self.points_head.weight)
            nn.init.zeros_(self.points_head.bias)
            # stored boxes before keeps, (..., 252, n_boxes, 32): the sum over boxes then runs along vectors of
            # keeps (compiled: 3x faster than one horizontal sum of 12-13 boxes per keep, docs/training.md)
            self.register_buffer(
                "expected_points", torch.from_numpy(np.ascontiguousarray(np.swapaxes(table, -1, -2))), persistent=False
            )
            self.register_buffer(
                "roll_of_code", torch.from_numpy(ROLL_INDEX_OF_CODE.astype(np.int64)), persistent=False
            )
            self.register_buffer(
                "code_weights", torch.from_numpy(encode_counts(np.eye(N_FACES))).float(), persistent=False
            )
        self.keep_bonus = keep_bonus
        if keep_bonus is not None:
            if not self.keep_points or self.rolls_left is not None or upper_total is None:
                raise ValueError(
                    "keep_bonus needs keep_points with the one-reroll table and the position of "
                    "upper_total in the inputs"
                )
            self.upper_total = int(upper_total)
            self.bonus_tables = nn.Module()  # keep_bonus' tables as buffers (moved with the model, not saved)
            names = ("combo", "combo_chance", "count_value") + (("chance", "bits") if keep_bonus.par else ())
            for name in names:
                array = getattr(keep_bonus, name)
                self.bonus_tables.register_buffer(
                    name,
                    torch.from_numpy(array.astype(np.int64) if name == "combo" else array.astype(np.float32)),
                    persistent=False,
                )
            self.register_buffer("bonus_upper", torch.from_numpy(keep_bonus.upper.astype(np.int64)), persistent=False)
        self.box_points = float(box_points)
        if self.box_points:
            n_boxes = self.n_actions - N_KEEP_ACTIONS
            self.potential_points = int(potential_points)
            self.box_points_w = nn.Parameter(torch.full((n_boxes,), self.box_points))

    def _autocast(self, x: torch.Tensor):
        return torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.precision == "bfloat16")

    def actor_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Unmasked action logits ``(B, n_actions)`` of policy inputs ``x`` (under the model's precision's autocast
        when called through :meth:`forward`)."""
        logits = self._network_logits(x)
        if not self.box_points:
            return logits
        points = x[:, self.potential_points : self.potential_points + self.box_points_w.shape[0]].float()
        return logits.float() + nn.functional.pad(points * self.box_points_w, (N_KEEP_ACTIONS, 0))

    def _network_logits(self, x: torch.Tensor) -> torch.Tensor:
        if self.keep_points:
            h = self.actor(x)
            return self.actor_out(h).float() + self._points_logits(x, self.points_head(h).float())
        if not self.keep_head:
            return self.actor(x)
        h = self.actor(x)
        dice = x[:, self.dice_one_hot : self.dice_one_hot + N_DICE * N_FACES].reshape(-1, N_DICE, N_FACES)
        per_die = self.keep_dice(dice)  # (B, 5, E): V applied to each die's one-hot
        kept = torch.matmul(self.keep_bits.to(per_die.dtype), per_die)  # (B, 32, E): V k_a, summed over kept dice
        z = self.keep_act(self.keep_state(h)[:, None, :] + kept)
        return torch.cat([self.keep_out(z).squeeze(2), self.box_out(h)], dim=1)

    def _points_logits(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``keep_points``' terms ``(B, n_actions)`` for box values ``u`` ``(B, n_boxes)``: the keeps' expected
        points after one reroll and the boxes' points now, each box's weighted by ``u``; element-wise in float32
        (the roll's code must be exact, which a bfloat16 matrix product is not)."""
        n_boxes = u.shape[1]
        counts = (x[:, self.face_counts : self.face_counts + N_FACES].float() * N_DICE).round()
        roll = self.roll_of_code[(counts * self.code_weights).sum(dim=1).long()]
        open_value = u * (1.0 - x[:, self.filled : self.filled + n_boxes].float())
        if self.rolls_left is None:
            table = self.expected_points[roll]  # (B, n_boxes, 32)
        else:  # the two-reroll table where two rerolls are left (the one-hot's last place)
            table = self.expected_points[x[:, self.rolls_left + 2].float().round().long(), roll]
        keeps = (table * open_value[:, :, None]).sum(dim=1)  # (B, 32)
        boxes = u * x[:, self.potential_points : self.potential_points + n_boxes].float()
        if self.keep_bonus is not None:  # the upper bonus in the points, weighed by the upper boxes' values
            total = (x[:, self.upper_total].float() * self.keep_bonus.upper_scale).round()
            upper_open = 1.0 - x[:, self.filled + self.bonus_upper].float()
            u_upper = u[:, self.bonus_upper]
            bonus, box_bonus = self.keep_bonus.terms(self.bonus_tables, roll, total, upper_open)
            keeps = keeps + (bonus * u_upper[:, None, :]).sum(dim=2)
            if box_bonus is not None:
                boxes = boxes.index_add(1, self.bonus_upper, u_upper * box_bonus)
        return torch.cat([keeps, boxes], dim=1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(B, n_actions)`` and values ``(B,)`` (float32); ``mask`` is bool."""
        with self._autocast(x):
            logits, value = self.actor_logits(x), self.critic(x)
        return logits.float().masked_fill(~mask, MASKED_LOGIT), value.float().squeeze(1)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        with self._autocast(x):
            return self.critic(x).float().squeeze(1)

    def export(self) -> dict[str, np.ndarray]:
        """The actor's weights as NumPy arrays (``x @ w + b``): ``w0, b0, w1, b1, ...`` for its layers,
        and with ``keep_head`` the last of them scoring the boxes, plus ``keep_state_w``, ``keep_state_b``,
        ``keep_dice_w``, ``keep_out_w`` and ``keep_out_b``; with ``box_points`` also ``box_points_w``; with
        ``keep_points`` also ``points_w`` and ``points_b`` (the box values' head)."""

        def arr(t: torch.Tensor) -> np.ndarray:
            return t.detach().float().cpu().numpy().astype(np.float32)

        linears = [m for m in self.actor.modules() if isinstance(m, nn.Linear)]
        if self.keep_head:
            linears.append(self.box_out)
        if self.keep_points:
            linears.append(self.actor_out)
        out: dict[str, np.ndarray] = {}
        for i, m in enumerate(linears):
            out[f"w{i}"], out[f"b{i}"] = arr(m.weight).T, arr(m.bias)
        if self.keep_head:
            out["keep_state_w"], out["keep_state_b"] = arr(self.keep_state.weight).T, arr(self.keep_state.bias)
            out["keep_dice_w"] = arr(self.keep_dice.weight).T
            out["keep_out_w"], out["keep_out_b"] = arr(self.keep_out.weight).T, arr(self.keep_out.bias)
        if self.box_points:
            out["box_points_w"] = arr(self.box_points_w)
        if self.keep_points:
            out["points_w"], out["points_b"] = arr(self.points_head.weight).T, arr(self.points_head.bias)
        return out


def _init(net: nn.Module, last_gain: float | None) -> None:
    """Orthogonal initialization (CleanRL/SB3): gain sqrt(2) for hidden layers, ``last_gain`` for the output
    layer (``None``: every layer is hidden)."""
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    for m in linears:
        last = last_gain is not None and m is linears[-1]
        nn.init.orthogonal_(m.weight, gain=last_gain if last else np.sqrt(2))
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

    def __init__(self, target: Callable):
        self.target = target
        self._compiled: Callable | None = torch.compile(target)

    def __call__(self, *args, **kwargs):
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

    def __getattr__(self, name: str):
        return getattr(self.target, name)


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One action per row from masked logits (Gumbel-max: the argmax of logits plus Gumbel noise)."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device).clamp_(min=1e-12)
    return torch.argmax(logits - torch.log(-torch.log(u)), dim=1)
