"""The policy written once: its options and the heads on top of the network, for NumPy arrays and torch tensors.

The actor is a multilayer perceptron over the policy's inputs (:class:`agents.policy.inputs.PolicyInputs`)
whose last layer gives one logit per action; :class:`PolicyHeads` adds what the options ask for:

* ``box_points`` (a number ``c > 0``): each box action's logit also gets ``w_b p_b``, ``p_b`` the points box
  ``b`` would score now (the observation's ``potential_points``), ``w_b`` a learnt weight per box starting
  at ``c``: five of a kind prefers the 50-point box from the first update on.
* ``keep_points``: a second linear head on the last hidden layer values each box's points in this state,
  ``u(s)`` (one value per box, starting at 0); each box action's logit gets ``u_b p_b`` and each keep's
  ``sum_b open_b u_b E_ab``, ``E_ab`` the points box ``b`` scores on average after the dice not kept are
  rolled (:func:`agents.policy.inputs.keep_expected_points`): keeps and boxes in one currency.
* ``keep_points_bonus`` (with ``keep_points``; ``true`` or ``par``): the upper bonus in those points
  (:class:`agents.policy.inputs.KeepBonus`).

The same :meth:`PolicyHeads.logits` serves the torch network (:class:`agents.training.actor_critic.ActorCritic`,
which holds the tables as buffers) and the NumPy player (:class:`agents.policy.player.PolicyAgent`): the
framework is picked by the arrays' type, torch is never imported here. The game quantities come from one
decoder of the flat observation (:class:`agents.policy.observation.FlatObservation`).

Adding a head: a field of :class:`PolicyOptions` (validated there, recorded in the policy file by
:meth:`PolicyOptions.metadata`), its terms in :meth:`PolicyHeads.logits` (and its weights in the network's
``export``), and its test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.policy.inputs import KeepBonus, PolicyInputs, keep_expected_points
from agents.policy.observation import FlatObservation, as_float
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.rules import Rules

if TYPE_CHECKING:
    from agents.policy.observation import ArrayT

#: options of earlier versions that measured worse and were removed (docs/experiments.md), with the value
#: that means "off": a policy file recording that value plays as before, any other is refused
RETIRED = {"keep_head": 0, "keep_points_rerolls": 1}


@dataclass(frozen=True)
class PolicyOptions:
    """What the policy's inputs and heads hold beyond a plain network (see the module docstring).

    Args:
        features: the inputs carry the upper-bonus features (:class:`agents.policy.inputs.PolicyInputs`).
        box_points: the box logits' learnt points weight starts at this (0: off).
        keep_points: the box values' head and the keeps' expected points.
        keep_points_bonus: ``False``, ``True`` or ``"par"``: the upper bonus in the points (needs ``keep_points``).
        players: the table the policy reads: 1, the single env's flat observation; 2, the two-player table's
            (:func:`~dice_poker_env.multi.observations.multi_observation_space`, ``"flat"``: its own game, then
            the opponent's scorecard), as self-play training (:mod:`agents.training.selfplay`) gives it.

    Raises:
        ValueError: an option out of range (one line naming it).
    """

    features: bool = True
    box_points: float = 0.0
    keep_points: bool = False
    keep_points_bonus: bool | str = False
    players: int = 1

    def __post_init__(self) -> None:
        box = self.box_points
        if isinstance(box, bool) or not isinstance(box, (int, float)) or not (math.isfinite(box) and box >= 0):
            raise ValueError(f"box_points must be a non-negative number (0 = off), got {box!r}")
        if not (self.keep_points_bonus is False or self.keep_points_bonus is True or self.keep_points_bonus == "par"):
            raise ValueError(f"keep_points_bonus must be true or par, got {self.keep_points_bonus!r}")
        if self.keep_points_bonus and not self.keep_points:
            raise ValueError("keep_points_bonus needs keep_points")
        if isinstance(self.players, bool) or self.players not in (1, 2):
            raise ValueError(f"players must be 1 or 2 (the table the policy reads), got {self.players!r}")

    @classmethod
    def from_config(cls, config: Any) -> PolicyOptions:
        """The options of a training config: its fields of the same names (absent: off)."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls) if hasattr(config, f.name)})

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any], source: str = "policy") -> PolicyOptions:
        """The options a policy file's metadata records (absent: off); a retired option recorded at any value
        but its "off" is a one-line error naming it."""
        for name, off in RETIRED.items():
            if metadata.get(name, off) != off:
                raise ValueError(
                    f"{source}: {name}={metadata[name]!r} was retired (it measured worse, docs/experiments.md); "
                    f"this version plays only policies without it"
                )
        try:
            return cls(
                features=bool(metadata.get("features", False)),
                box_points=float(metadata.get("box_points", 0.0) or 0.0),
                keep_points=bool(metadata.get("keep_points", False)),
                keep_points_bonus=metadata.get("keep_points_bonus", False) or False,
                players=metadata.get("players", 1),
            )
        except (TypeError, ValueError) as error:
            raise ValueError(f"{source}: {error}") from None

    def metadata(self) -> dict[str, Any]:
        """What a policy file records of the options (read back by :meth:`from_metadata`)."""
        return {
            "features": bool(self.features),
            "box_points": float(self.box_points),
            "keep_points": bool(self.keep_points),
            **({"keep_points_bonus": self.keep_points_bonus} if self.keep_points_bonus else {}),
            **({"players": self.players} if self.players != 1 else {}),
        }


class PolicyHeads:
    """The policy's inputs and heads for one ruleset and :class:`PolicyOptions`, over NumPy or torch arrays.

    Attributes:
        rules, options: what it was built for.
        obs: the flat observation's decoder.
        inputs: the policy's inputs (NumPy; the network's input size is ``inputs.size``).
        n_actions, n_boxes: the ruleset's action and box counts.
        arrays: the heads' tables by name (NumPy); :attr:`tables` holds them as attributes, the ``t`` of
            :meth:`logits` for NumPy (a torch network registers them as buffers of a module instead).
        keep_bonus: the :class:`KeepBonus` of ``keep_points_bonus`` (or None).
    """

    def __init__(self, rules: Rules, options: PolicyOptions | None = None) -> None:
        self.rules = rules
        self.options = options if options is not None else PolicyOptions()
        tables = compile_rules(rules)
        self.n_actions, self.n_boxes = int(tables.n_actions), int(tables.n_boxes)
        self.obs = FlatObservation(rules)
        self.inputs = PolicyInputs(rules, features=self.options.features, players=self.options.players)
        self.keep_bonus = (
            KeepBonus(rules, par=self.options.keep_points_bonus == "par") if self.options.keep_points_bonus else None
        )
        arrays: dict[str, np.ndarray] = {}
        if self.options.keep_points:
            arrays.update(self.obs.arrays())
            # stored boxes before keeps, (252, n_boxes, 32): the sum over boxes then runs along vectors of keeps
            # (compiled: 3x faster than one horizontal sum of 12-13 boxes per keep, docs/training.md)
            arrays["expected_points"] = np.ascontiguousarray(np.swapaxes(keep_expected_points(rules), 1, 2))
        if self.keep_bonus is not None:
            arrays.update(self.keep_bonus.arrays())
        self.arrays = arrays
        self.tables = SimpleNamespace(**arrays)

    @property
    def in_dim(self) -> int:
        """The network's input size."""
        return self.inputs.size

    def logits(self, t: Any, x: ArrayT, out: ArrayT, u: Any = None, box_w: Any = None) -> ArrayT:
        """The actor's logits ``(B, n_actions)``: the network's outputs plus the heads' terms (float32).

        Args:
            t: the tables (:attr:`tables` for NumPy, a module with them as buffers for torch).
            x: the policy inputs ``(B, in_dim)``.
            out: the network's last layer ``(B, n_actions)``; returned as it is without ``box_points`` and
                ``keep_points``.
            u: with ``keep_points``, the box values ``(B, n_boxes)``.
            box_w: with ``box_points``, the learnt weights ``(n_boxes,)``.
        """
        if not (self.options.keep_points or self.options.box_points):
            return out
        out = as_float(out)
        keeps, boxes = out[:, :N_KEEP_ACTIONS], out[:, N_KEEP_ACTIONS:]
        if self.options.keep_points:
            keep_terms, box_terms = self.points_terms(t, x, as_float(u))
            keeps, boxes = keeps + keep_terms, boxes + box_terms
        if self.options.box_points:
            boxes = boxes + self.obs.potential_points(x) * box_w
        return _concat([keeps, boxes])

    def points_terms(self, t: Any, x: ArrayT, u: ArrayT) -> tuple[ArrayT, ArrayT]:
        """``keep_points``' terms for box values ``u`` ``(B, n_boxes)``: ``(keeps (B, 32), boxes (B, n_boxes))``,
        the keeps' expected points after one reroll and the boxes' points now, each box's weighted by ``u``
        (with ``keep_points_bonus``, the upper bonus in them). Element-wise in float32."""
        roll = self.obs.roll(t, x)
        open_boxes = self.obs.open_boxes(x)
        keeps = _sum_over_boxes(t.expected_points[roll], u * open_boxes)
        boxes = u * self.obs.potential_points(x)
        if self.keep_bonus is not None:  # the upper bonus in the points, weighed by the upper boxes' values
            u_upper = u[:, t.upper]
            bonus, box_bonus = self.keep_bonus.terms(t, roll, self.obs.upper_total(x), open_boxes[:, t.upper])
            keeps = keeps + (bonus * u_upper[:, None, :]).sum(-1)
            if box_bonus is not None:
                boxes = _add_columns(boxes, t.upper, u_upper * box_bonus)
        return keeps, boxes


def _sum_over_boxes(table: ArrayT, weights: ArrayT) -> ArrayT:
    """``sum_b table[:, b, :] * weights[:, b]``: ``(B, n_boxes, K)`` and ``(B, n_boxes)`` -> ``(B, K)``.
    NumPy: one einsum; torch: element-wise products and a sum along vectors of keeps (what compiles fastest,
    and stays float32 under bfloat16 autocast)."""
    if isinstance(table, np.ndarray):
        return np.einsum("bnk,bn->bk", table, weights)
    return (table * weights[:, :, None]).sum(dim=1)


def _add_columns(values: ArrayT, columns: ArrayT, added: ArrayT) -> ArrayT:
    """``values`` with ``added`` ``(B, len(columns))`` added to its (distinct) ``columns`` (a new array)."""
    if isinstance(values, np.ndarray):
        values = values.copy()
        values[:, columns] += added
        return values
    return values.index_add(1, columns, added)


def _concat(parts: list[ArrayT]) -> ArrayT:
    """The arrays side by side (last axis), NumPy or torch."""
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts, axis=1)
    import torch

    return torch.cat(parts, dim=1)
