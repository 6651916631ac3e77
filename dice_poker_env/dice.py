"""Where new dice come from: the env's seeded RNG, or a script of faces.

Every env draws dice through a *dice source* so that recorded games can be
replayed and tests can inject exact rolls (e.g. the Yacht seed's worked turn).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class DiceSource(Protocol):
    """Supplies faces for the dice being rolled."""

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Faces 1..6 of the given shape (``(n,)`` for n dice, ``(B, 5)`` for a batch)."""
        ...


class RandomDice:
    """Fair dice from the env's seeded generator (the default)."""

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.integers(1, 7, size=shape)

    def __repr__(self) -> str:
        return "RandomDice()"


class DiceExhaustedError(RuntimeError):
    """A :class:`ScriptedDice` ran out of faces."""


class ScriptedDice:
    """Faces taken in order from a fixed sequence (tests and replays).

    Each roll takes as many faces as dice are rolled, in the order of the rerolled
    positions (the turn's first roll takes five). Example, the Yacht seed's turn::

        ScriptedDice([1, 2, 2, 4, 6,  4, 4, 6,  1, 4, 4])
    """

    def __init__(self, faces: Iterable[int]):
        self.faces = [int(f) for f in faces]
        bad = [f for f in self.faces if not 1 <= f <= 6]
        if bad:
            raise ValueError(f"scripted dice must be faces 1..6, got {bad[0]}")
        self.position = 0

    @property
    def remaining(self) -> int:
        return len(self.faces) - self.position

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        if n > self.remaining:
            raise DiceExhaustedError(f"scripted dice exhausted: {n} faces needed, {self.remaining} left")
        out = np.array(self.faces[self.position : self.position + n], dtype=np.int64).reshape(shape)
        self.position += n
        return out

    def __repr__(self) -> str:
        return f"ScriptedDice({self.remaining} faces left)"
