"""Where new dice come from: the env's seeded RNG, a script of faces, or a duplicate deal.

Every env draws dice through a *dice source* so that recorded games can be
replayed and tests can inject exact rolls (e.g. the Yacht worked turn of ``docs/rules.md``).
In duplicate play (the tournament, ``dice-poker match``) every seat's dice are fixed per
turn and roll by a deal (:func:`deal_faces`, :class:`DuplicateDice`), so two agents in the
same seat face the same dice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from dice_poker_env.engine.combinatorics import N_DICE
from dice_poker_env.engine.state import ROLLS_PER_TURN


@runtime_checkable
class DiceSource(Protocol):
    """Supplies faces for the dice being rolled."""

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray | list[int]:
        """Faces 1..6 of the given shape (``(n,)`` for n dice, ``(B, 5)`` for a batch).

        For a 1-D shape a list of ints is accepted too.
        """
        ...


class RandomDice:
    """Fair dice from the env's seeded generator (the default).

    Small requests are served from a block of faces drawn at once from ``rng``
    (a NumPy call costs more than the dice it draws); the block is dropped when
    the env's generator is replaced (``reset(seed=...)``), so the same seed still
    gives the same game.
    """

    BLOCK = 1024

    def __init__(self) -> None:
        self._rng: np.random.Generator | None = None
        self._block: list[int] = []
        self._next = 0

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray | list[int]:
        n = 1
        for size in shape:
            n *= size
        if n > 64:
            return rng.integers(1, 7, size=shape)
        if rng is not self._rng or self._next + n > len(self._block):
            self._rng, self._block, self._next = rng, rng.integers(1, 7, size=self.BLOCK).tolist(), 0
        faces = self._block[self._next : self._next + n]
        self._next += n
        return np.array(faces).reshape(shape) if len(shape) > 1 else faces

    @classmethod
    def game_faces(cls, seeds: Sequence[int] | np.ndarray, count: int) -> np.ndarray:
        """The first ``count`` faces this source serves a game reset with each seed, ``(len(seeds), count)`` int64.

        An env's generator after ``reset(seed=s)`` is gymnasium's ``seeding.np_random(s)``; the
        faces are its first block, served in order (a game uses at most 15 a turn, so a
        game of up to 68 turns stays within one block). For playing many seeded games at once
        exactly as the single env plays each one (the benchmark's batched path).
        """
        from gymnasium.utils import seeding

        if not 0 <= count <= cls.BLOCK:
            raise ValueError(f"count must be in 0..{cls.BLOCK} (one block of faces), got {count}")
        out = np.empty((len(seeds), count), dtype=np.int64)
        for i, seed in enumerate(seeds):
            out[i] = seeding.np_random(int(seed))[0].integers(1, 7, size=cls.BLOCK)[:count]
        return out

    def __repr__(self) -> str:
        return "RandomDice()"


class DiceExhaustedError(RuntimeError):
    """A :class:`ScriptedDice` ran out of faces."""


class ScriptedDice:
    """Faces taken in order from a fixed sequence (tests and replays).

    Each roll takes as many faces as dice are rolled, in the order of the rerolled
    positions (the turn's first roll takes five; scoring a box rolls the next
    turn's five unless the game ends). Example, the Yacht worked turn of ``docs/rules.md``::

        ScriptedDice([1, 2, 2, 4, 6,  4, 4, 6,  1, 4, 4])

    When the script runs out, :class:`DiceExhaustedError` is raised before the
    env changes anything, or, with ``then_random=True``, play continues with fair
    dice from the env's generator: a roll needing more faces than are left takes
    the last ones and fair dice for the rest, and every roll after it is fair.
    """

    def __init__(self, faces: Iterable[int], *, then_random: bool = False):
        if not isinstance(then_random, (bool, np.bool_)):  # ("no" would have read as True)
            raise TypeError(f"then_random must be True or False, got {then_random!r}")
        self.then_random = bool(then_random)
        if isinstance(faces, (str, bytes)) or not isinstance(faces, Iterable):
            raise TypeError(f"scripted dice must be a sequence of faces 1..6, got {faces!r}")
        faces = list(faces)
        bad = [f for f in faces if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or not 1 <= f <= 6]
        if bad:  # (nothing is truncated: 1.5 or True is not a face)
            raise ValueError(f"scripted dice must be integer faces 1..6, got {bad[0]!r}")
        self.faces = [int(f) for f in faces]
        self.position = 0

    @property
    def remaining(self) -> int:
        return len(self.faces) - self.position

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        if n > self.remaining:
            if not self.then_random:
                raise DiceExhaustedError(f"scripted dice exhausted: {n} faces needed, {self.remaining} left")
            # the script's last faces, then fair dice; the script is used up, so no later roll goes back to it
            # (a roll of five with three faces left drew five fair dice, and the next reroll took the three)
            last = np.array(self.faces[self.position :], dtype=np.int64)
            self.position = len(self.faces)
            return np.concatenate([last, rng.integers(1, 7, size=n - len(last))]).reshape(shape)
        out = np.array(self.faces[self.position : self.position + n], dtype=np.int64).reshape(shape)
        self.position += n
        return out

    def __repr__(self) -> str:
        return f"ScriptedDice({self.remaining} faces left)"


def deal_faces(seed: int, deal: int, seats: int, turns: int) -> np.ndarray:
    """The faces of deal ``deal``: ``(seats, turns, ROLLS_PER_TURN, 5)`` int64 in 1..6.

    A function of ``(seed, deal, seat)`` only, per seat (NumPy's ``SeedSequence``): seat ``k``'s
    faces are the same at a table of any size.
    """
    faces = np.empty((seats, turns, ROLLS_PER_TURN, N_DICE), dtype=np.int64)
    for seat in range(seats):
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(deal), seat]))
        faces[seat] = rng.integers(1, 7, size=(turns, ROLLS_PER_TURN, N_DICE))
    return faces


class DuplicateDice:
    """A dice source (:class:`dice_poker_env.dice_sources.DiceSource`) serving a deal's faces.

    Before each roll the game's driver says whose roll it is (:meth:`expect`); the roll then
    takes the first faces of ``faces[seat, turn, roll]``. A roll nobody announced is an error
    (a bug of the driver, not of an agent).
    """

    def __init__(self, faces: np.ndarray):
        self.faces = np.asarray(faces, dtype=np.int64)
        self._next: tuple[int, int, int] | None = None

    def expect(self, seat: int, turn: int, roll: int) -> None:
        """The next roll is ``seat``'s, in turn ``turn`` (0-based), roll ``roll`` of the turn (0 first)."""
        self._next = (seat, turn, roll)

    def roll(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        if self._next is None or len(shape) != 1 or not 1 <= shape[0] <= N_DICE:
            raise RuntimeError(f"duplicate dice: a roll of shape {shape} that the driver did not announce")
        seat, turn, roll = self._next
        self._next = None
        return self.faces[seat, turn, roll, : shape[0]].copy()

    def __repr__(self) -> str:
        return f"DuplicateDice({self.faces.shape[0]} seats)"
