"""Game states: one game (:class:`GameState`) or a batch of games (:class:`BatchState`).

Two explicit types with explicit conversions (:meth:`GameState.as_batch`,
:meth:`BatchState.game`, :meth:`BatchState.of_games`): the single env, the
multi-player env and positions given by people hold one game as plain ints
(NumPy's per-call overhead would dominate one game); the vector env, batched
agents and the solver hold arrays with a leading batch axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

#: rolls of the dice per turn: the first roll and two rerolls
ROLLS_PER_TURN = 3


class GameState(NamedTuple):
    """One game.

    Attributes:
        filled: bitmask of the filled boxes (bit ``k`` = box ``k``).
        scores: ``(n_boxes,)`` int64, the points written in each box (0 while open).
        upper_total: sum of the upper boxes.
        bonus: bonus points paid so far (upper bonus, five-of-a-kind bonuses).
        roll: index of the current (sorted) dice in ``ROLL_DICE``.
        rolls_left: rerolls left this turn (2 right after the turn's first roll).
    """

    filled: int
    scores: np.ndarray
    upper_total: int
    bonus: int
    roll: int
    rolls_left: int

    @property
    def total(self) -> int:
        """Final score so far: written points plus bonuses."""
        return int(self.scores.sum()) + self.bonus

    @property
    def turn(self) -> int:
        """Number of boxes filled (turns completed)."""
        return self.filled.bit_count()

    def as_batch(self) -> BatchState:
        """This game as a batch of one."""
        return BatchState.of_games([self])


class BatchState(NamedTuple):
    """``B`` games as int64 arrays with a leading batch axis (fields as :class:`GameState`'s)."""

    filled: np.ndarray
    scores: np.ndarray
    upper_total: np.ndarray
    bonus: np.ndarray
    roll: np.ndarray
    rolls_left: np.ndarray

    @property
    def size(self) -> int:
        """Number of games ``B``."""
        return len(self.filled)

    @property
    def total(self) -> np.ndarray:
        """Final score so far of every game: written points plus bonuses."""
        return self.scores.sum(axis=-1) + self.bonus

    @property
    def turn(self) -> np.ndarray:
        """Number of boxes filled in every game."""
        return np.bitwise_count(self.filled).astype(np.int64)

    def game(self, index: int) -> GameState:
        """Game ``index`` as a one-game state (a copy)."""
        return GameState(
            int(self.filled[index]),
            self.scores[index].copy(),
            int(self.upper_total[index]),
            int(self.bonus[index]),
            int(self.roll[index]),
            int(self.rolls_left[index]),
        )

    def take(self, rows: np.ndarray | Sequence[int]) -> BatchState:
        """The games ``rows`` (indices or a bool mask) as a new batch (copies)."""
        return BatchState(*(field[rows] for field in self))

    def copy(self) -> BatchState:
        """A batch of the same games owning fresh arrays."""
        return BatchState(*(np.array(field, dtype=np.int64, copy=True) for field in self))

    @staticmethod
    def of_games(games: Sequence[GameState]) -> BatchState:
        """One batch of the given one-game states, in order."""
        return BatchState(
            filled=np.array([g.filled for g in games], dtype=np.int64),
            scores=np.array([g.scores for g in games], dtype=np.int64).reshape(len(games), -1),
            upper_total=np.array([g.upper_total for g in games], dtype=np.int64),
            bonus=np.array([g.bonus for g in games], dtype=np.int64),
            roll=np.array([g.roll for g in games], dtype=np.int64),
            rolls_left=np.array([g.rolls_left for g in games], dtype=np.int64),
        )
