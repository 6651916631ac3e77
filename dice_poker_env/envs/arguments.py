"""Validation of the keyword arguments every front end shares, with one wording."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np


def require_choice(name: str, value: Any, choices: Sequence[Any], *, optional: bool = False) -> None:
    """Raise ``ValueError`` naming the argument unless ``value`` is one of ``choices``."""
    if optional and value is None:
        return
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def require_finite(name: str, value: Any) -> float:
    """``value`` as a float; ``ValueError`` naming the argument unless it is a finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def require_dice_source(name: str, value: Any) -> None:
    """``TypeError`` naming the argument unless ``value`` is ``None`` or has a ``roll(rng, shape)`` method."""
    if value is not None and not callable(getattr(value, "roll", None)):
        raise TypeError(
            f"{name} must be a dice source with a roll(rng, shape) method "
            f"(e.g. dice_poker_env.ScriptedDice([...])) or None, got {value!r}"
        )


def as_action(action: Any) -> Any:
    """A NumPy integer, a 0-d integer array or a 0-d integer tensor (torch, JAX: anything with ``shape == ()``
    that converts with ``__index__``) as a Python ``int``; anything else unchanged.

    Front ends call this before judging an action, so ``np.int64(3)``, ``np.array(3)`` and
    ``torch.tensor(3)`` are action 3 while ``np.array([3])``, ``torch.tensor([3])``, ``True``,
    ``3.0``, ``torch.tensor(3.0)`` or ``None`` stay what they are and are reported as not an integer.
    """
    if isinstance(action, np.integer) or (
        isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu"
    ):
        return int(action)
    if isinstance(action, (bool, int, float, str, bytes, np.ndarray, np.generic)) or action is None:
        return action
    if tuple(getattr(action, "shape", (None,))) == () and "bool" not in str(getattr(action, "dtype", "")):
        try:
            return operator.index(action)  # a 0-d integer tensor of another library
        except TypeError:  # a float tensor: not an action
            return action
    return action
