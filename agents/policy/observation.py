"""The game quantities read back from the flat observation: one decoder for NumPy arrays and torch tensors.

The env writes each quantity into the flat vector scaled (``dice_poker_env.envs.observation``: face counts
/ 5, points / the largest box score, the upper total / its scale, one-hots); :class:`FlatObservation`
reads them back, for the policy's features and heads in NumPy (the player, the rollouts) and in torch
(the network), so that the positions and scales are written down once.

The decoder also reads the policy's inputs (the flat observation followed by its features): the
observation comes first. No torch import: a torch tensor's own methods do the work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dice_poker_env.engine.combinatorics import N_DICE, N_FACES, ROLL_INDEX_OF_CODE, encode_counts
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.observation import flat_layout, flat_scales, flat_size
from dice_poker_env.rules import Rules

if TYPE_CHECKING:
    import torch

#: a NumPy array or a torch tensor: the decoder's code is written once for both, and returns the kind it is given
ArrayT = TypeVar("ArrayT", np.ndarray, "torch.Tensor")


def as_index(x: ArrayT) -> ArrayT:
    """Integer indices of a NumPy array or a torch tensor of whole numbers."""
    return np.rint(x).astype(np.int64) if isinstance(x, np.ndarray) else x.round().long()


def as_float(x: ArrayT) -> ArrayT:
    """``x`` as float32 (a NumPy array or a torch tensor, e.g. one computed under bfloat16 autocast)."""
    return x.astype(np.float32, copy=False) if isinstance(x, np.ndarray) else x.float()


class FlatObservation:
    """Where the flat observation of a ruleset keeps each game quantity, and how to read it back.

    Every method takes ``x`` ``(B, >= size)``: observations or policy inputs, as a NumPy array or a torch
    tensor, and returns the same kind. The roll's index needs two tables, passed as ``t`` (this object for
    NumPy, or a torch module holding :meth:`arrays` as buffers).

    Attributes:
        size: the flat observation's length.
        n_boxes: the ruleset's boxes.
        layout: name -> slice of the flat vector (``dice_poker_env.envs.observation.flat_layout``).
        score_scale, upper_scale: the points' and the upper total's scales.
    """

    def __init__(self, rules: Rules) -> None:
        tables = compile_rules(rules)
        self.size = flat_size(tables)
        self.n_boxes = tables.n_boxes
        self.layout = flat_layout(tables)
        self.score_scale, self.upper_scale = flat_scales(tables)
        self.roll_of_code = ROLL_INDEX_OF_CODE.astype(np.int64)
        self.code_weights = encode_counts(np.eye(N_FACES)).astype(np.float32)

    def arrays(self) -> dict[str, np.ndarray]:
        """The tables :meth:`roll` reads, by name (for torch buffers)."""
        return {"roll_of_code": self.roll_of_code, "code_weights": self.code_weights}

    def face_counts(self, x: ArrayT) -> ArrayT:
        """``(B, 6)`` float: how many dice show each face (whole numbers)."""
        return (as_float(x[:, self.layout["face_counts"]]) * N_DICE).round()

    def roll(self, t: Any, x: ArrayT) -> ArrayT:
        """``(B,)`` int64: the index of the sorted roll (0..251); ``t`` holds ``roll_of_code`` and
        ``code_weights``. Element-wise in float32: the code must be exact, which a bfloat16 matrix product is not."""
        return t.roll_of_code[as_index((self.face_counts(x) * t.code_weights).sum(-1))]

    def filled(self, x: ArrayT) -> ArrayT:
        """``(B, n_boxes)`` float: 1 where the box is filled."""
        return as_float(x[:, self.layout["filled"]])

    def open_boxes(self, x: ArrayT) -> ArrayT:
        """``(B, n_boxes)`` float: 1 where the box is open."""
        return 1.0 - self.filled(x)

    def scores(self, x: ArrayT) -> ArrayT:
        """``(B, n_boxes)`` float: the points written in each box (0 where open)."""
        return as_float(x[:, self.layout["scores"]]) * self.score_scale

    def potential_points(self, x: ArrayT) -> ArrayT:
        """``(B, n_boxes)`` float: the points each box would score now, in the observation's units (points /
        ``score_scale``, as the env shows them)."""
        return as_float(x[:, self.layout["potential_points"]])

    def upper_total(self, x: ArrayT) -> ArrayT:
        """``(B,)`` float: the upper section's total in points (whole numbers; clipped at ``upper_scale``)."""
        return (as_float(x[:, self.layout["upper_total"].start]) * self.upper_scale).round()
