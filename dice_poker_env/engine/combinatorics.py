"""The dice tables every ruleset shares: rolls, keeps and their chance outcomes.

Five six-sided dice shown sorted give 252 distinct *rolls* (multisets). A turn's
decision between rolls chooses a *keep*, a sub-multiset of the roll with 0 to 5
dice; there are 462 keeps. Rolling the missing dice of a keep lands on a roll
with an exact probability. These tables are built once at import (a few
milliseconds) and are what every front end looks up instead of recomputing:
the environments sample from them, the solver takes expectations over them.

Encodings used across the package:

* a roll is an index ``0..251`` into :data:`ROLL_DICE` (sorted faces);
* a keep is an index ``0..461`` into :data:`KEEP_COUNTS` (how many of each face);
* an env keep *action* is a 5-bit mask over the sorted dice of the roll: bit
  ``i`` set keeps die ``i`` (:data:`KEEP_OF_ACTION` maps (roll, bits) to a keep).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import factorial
from typing import Any

import numpy as np

N_DICE = 5
N_FACES = 6
FACES = np.arange(1, N_FACES + 1)
N_KEEP_ACTIONS = 1 << N_DICE  # 32 keep bitmasks; 31 (keep all) is never legal
KEEP_ALL = N_KEEP_ACTIONS - 1
#: ``KEEP_BITS[a, i]`` is 1 where keep action ``a`` keeps die ``i`` (of the sorted roll), ``(32, 5)`` float32
KEEP_BITS = ((np.arange(N_KEEP_ACTIONS)[:, None] >> np.arange(N_DICE)) & 1).astype(np.float32)

#: (252, 5) int8: the sorted faces of every roll, in lexicographic order.
ROLL_DICE = np.array(list(itertools.combinations_with_replacement(range(1, N_FACES + 1), N_DICE)), dtype=np.int8)
N_ROLLS = len(ROLL_DICE)

#: (252, 6) int8: ``ROLL_COUNTS[r, f - 1]`` is how many dice of roll ``r`` show face ``f``.
ROLL_COUNTS = np.stack([(ROLL_DICE == f).sum(axis=1) for f in FACES], axis=1).astype(np.int8)

#: (252,) int16: the sum of the dice of each roll.
ROLL_SUM = ROLL_DICE.sum(axis=1, dtype=np.int16)

_CODE_BASE = N_FACES + 1


def encode_counts(counts: np.ndarray) -> np.ndarray:
    """Integer code of face-count vectors (last axis of length 6), unique per multiset."""
    weights = _CODE_BASE ** np.arange(N_FACES)
    return np.asarray(counts, dtype=np.int64) @ weights


def _all_keep_counts() -> np.ndarray:
    """Every face-count vector of 0..5 dice, by size, then by counts in decreasing lexicographic order."""
    grid = np.indices((N_DICE + 1,) * N_FACES).reshape(N_FACES, -1).T  # itertools.product order
    rows = grid[grid.sum(axis=1) <= N_DICE]
    order = np.lexsort(tuple(-rows[:, f] for f in range(N_FACES - 1, -1, -1)) + (rows.sum(axis=1),))
    return rows[order].astype(np.int8)


#: (462, 6) int8: face counts of every keep, ordered by number of dice kept.
KEEP_COUNTS = _all_keep_counts()
N_KEEPS = len(KEEP_COUNTS)
#: (462,) int8: how many dice each keep holds.
KEEP_SIZE = KEEP_COUNTS.sum(axis=1).astype(np.int8)

#: code contribution of one die showing face f (index f; 0 unused).
_FACE_CODE = np.concatenate([[0], _CODE_BASE ** np.arange(N_FACES)]).astype(np.int64)
_KEEP_INDEX_OF_CODE = {int(c): i for i, c in enumerate(encode_counts(KEEP_COUNTS))}
#: (7**6,) int16: the roll index of each face-count code (:func:`encode_counts`); -1 where no roll of five dice has it
ROLL_INDEX_OF_CODE = np.full(_CODE_BASE**N_FACES, -1, dtype=np.int16)
ROLL_INDEX_OF_CODE[encode_counts(ROLL_COUNTS)] = np.arange(N_ROLLS)
_KEEP_INDEX_OF_CODE_ARRAY = np.full(_CODE_BASE**N_FACES, -1, dtype=np.int16)
_KEEP_INDEX_OF_CODE_ARRAY[encode_counts(KEEP_COUNTS)] = np.arange(N_KEEPS)

#: (462,) int16: the roll index of each full (5-dice) keep, -1 for smaller keeps.
ROLL_OF_KEEP = ROLL_INDEX_OF_CODE[encode_counts(KEEP_COUNTS)]


def keep_index(counts: np.ndarray) -> int:
    """The keep index of one face-count vector."""
    return _KEEP_INDEX_OF_CODE[int(encode_counts(counts))]


def _keep_of_action() -> np.ndarray:
    bits = (np.arange(N_KEEP_ACTIONS)[:, None] >> np.arange(N_DICE)) & 1  # (32, 5)
    kept = bits[None, :, :] * ROLL_DICE[:, None, :].astype(np.int64)  # (252, 32, 5); 0 marks a rerolled die
    code = _FACE_CODE[kept].sum(axis=2)  # code of the kept multiset
    return _KEEP_INDEX_OF_CODE_ARRAY[code]


#: (252, 32) int16: the keep reached by keeping the dice whose bits are set.
KEEP_OF_ACTION = _keep_of_action()


def _canonical_keep_actions() -> np.ndarray:
    """(252, 32) bool: the one bitmask per distinct keep that the mask shows as legal.

    Several bitmasks keep the same multiset (which of two equal dice is kept does not
    matter). All of them are legal env actions; this table marks the lowest one, so
    that agents which enumerate decisions (the solver, the greedy agent) see each
    keep once.
    """
    keeps = KEEP_OF_ACTION[:, :KEEP_ALL]
    same = keeps[:, :, None] == keeps[:, None, :]  # (252, 31, 31)
    earlier = np.tri(KEEP_ALL, k=-1, dtype=bool)  # [a, b]: b < a
    canonical = np.zeros((N_ROLLS, N_KEEP_ACTIONS), dtype=bool)
    canonical[:, :KEEP_ALL] = ~(same & earlier).any(axis=2)  # no lower bitmask keeps the same dice
    return canonical


CANONICAL_KEEP_ACTION = _canonical_keep_actions()


def distinct_keep_mask(mask: np.ndarray, roll: int | np.ndarray) -> np.ndarray:
    """A copy of action mask(s) ``mask`` with each distinct keep left once.

    ``mask`` is ``(n_actions,)`` or ``(B, n_actions)`` with ``roll`` the roll
    index (or ``(B,)`` indices). Keep bitmasks that keep equal dice are the same
    decision; only the lowest of each (:data:`CANONICAL_KEEP_ACTION`, the one the
    solver names) stays, so a policy over the mask has one action per keep.
    """
    out = np.array(mask, copy=True)
    out[..., :N_KEEP_ACTIONS] &= CANONICAL_KEEP_ACTION[roll]
    return out


def roll_index_of_counts(counts: np.ndarray) -> np.ndarray:
    """Roll indices of face-count vectors ``(..., 6)`` (five dice in all), vectorized."""
    return ROLL_INDEX_OF_CODE[encode_counts(np.rint(counts))].astype(np.int64)


def _transition_table() -> np.ndarray:
    added = ROLL_COUNTS[None, :, :] - KEEP_COUNTS[:, None, :]  # dice to roll: (462, 252, 6) int8
    k, r = np.nonzero((added >= 0).all(axis=2))
    added = added[k, r].astype(np.int64)
    fact = np.array([factorial(i) for i in range(N_DICE + 1)], dtype=np.int64)
    n = added.sum(axis=1)
    ways = fact[n] // np.prod(fact[added], axis=1)  # exact multinomial coefficients
    table = np.zeros((N_KEEPS, N_ROLLS), dtype=np.float64)
    # int64 -> float64 is exact here and the division correctly rounded, like Python's int / int
    table[k, r] = np.true_divide(ways, np.power(N_FACES, n))
    return table


#: (462, 252) float64: ``TRANSITION[k, r]`` = P(rolling the missing dice of keep k gives roll r).
TRANSITION = _transition_table()

#: (252,) float64: the distribution of a fresh roll of all five dice.
FIRST_ROLL_PROBABILITY = TRANSITION[keep_index(np.zeros(N_FACES))]


def _keep_plus_face() -> np.ndarray:
    code = encode_counts(KEEP_COUNTS)[:, None] + _FACE_CODE[None, 1:]  # one more die of face f+1
    table = _KEEP_INDEX_OF_CODE_ARRAY[np.where(KEEP_SIZE[:, None] < N_DICE, code, 0)]
    table[KEEP_SIZE == N_DICE] = -1
    return table


#: (462, 6) int16: the keep with one more die showing face f+1 (-1 for full keeps).
#: Lets the solver average keep values face by face instead of a dense matrix product.
KEEP_PLUS_FACE = _keep_plus_face()


def check_dice(dice: Any) -> np.ndarray:  # Any: user input of any type, validated here
    """Five dice as an int64 array, validated: integers (not bools, floats or text) in 1..6.

    Accepts a sequence of ints / NumPy integers or an integer array of shape ``(5,)``;
    anything else raises ``ValueError`` (nothing is truncated or converted).
    """
    if isinstance(dice, np.ndarray):
        ok = dice.shape == (N_DICE,) and dice.dtype.kind in "iu" and bool(np.all((dice >= 1) & (dice <= N_FACES)))
        shown = dice.tolist()
    elif isinstance(dice, (str, bytes)) or not hasattr(dice, "__len__") or not hasattr(dice, "__getitem__"):
        ok, shown = False, dice
    else:
        ok = len(dice) == N_DICE and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and 1 <= d <= N_FACES for d in dice
        )
        shown = list(dice) if isinstance(dice, (list, tuple)) else dice
    if not ok:
        raise ValueError(f"dice must be {N_DICE} integers in 1..{N_FACES}, got {shown!r}")
    return np.asarray(dice, dtype=np.int64)


def roll_index(dice: Any) -> int:
    """The roll index of five dice given in any order (validated by :func:`check_dice`)."""
    faces = check_dice(dice)
    return int(roll_index_of_counts(np.bincount(faces - 1, minlength=N_FACES)))


def roll_index_of_sorted(sorted_faces: np.ndarray) -> np.ndarray:
    """Roll indices of a batch of sorted dice rows ``(..., 5)``, vectorized."""
    code = _FACE_CODE[np.asarray(sorted_faces)].sum(axis=-1)
    return ROLL_INDEX_OF_CODE[code]


#: keep code (see :func:`encode_counts`) of every keep, and the positions each keep
#: bitmask rerolls: with these a single game's reroll is a few integer additions.
_KEEP_CODE = [int(c) for c in encode_counts(KEEP_COUNTS)]
_KEEP_OF_ACTION_LIST = KEEP_OF_ACTION.tolist()
_FACE_CODE_LIST = _FACE_CODE.tolist()
_ROLL_INDEX_OF_CODE_LIST = ROLL_INDEX_OF_CODE.tolist()
REROLLED_POSITIONS = [tuple(i for i in range(N_DICE) if not bits >> i & 1) for bits in range(N_KEEP_ACTIONS)]


def kept_dice(dice: Sequence[Any] | np.ndarray, action: int) -> list[Any]:  # items as given (ints, digits)
    """The dice a keep action keeps (bit ``i`` of ``action`` keeps die ``i``), in position order.

    The one reading of keep bits for display: the solver's decision list, the
    benchmark's mistake labels and the grade report all go through it.
    """
    return [d for i, d in enumerate(dice) if action >> i & 1]


def reroll_one(roll: int, keep_bits: int, faces: Sequence[int] | np.ndarray) -> int:
    """One game's roll after keeping ``keep_bits`` and rerolling the rest with ``faces``.

    ``faces`` is either one face per rerolled die, in position order, or five
    faces, one per position, of which only the rerolled positions are read (the
    convention of the batched reroll in :mod:`dice_poker_env.engine.game`).
    """
    code = _KEEP_CODE[_KEEP_OF_ACTION_LIST[roll][keep_bits]]
    rerolled = REROLLED_POSITIONS[keep_bits]
    if len(faces) != len(rerolled):
        faces = [faces[position] for position in rerolled]
    for face in faces:
        code += _FACE_CODE_LIST[face]
    return _ROLL_INDEX_OF_CODE_LIST[code]


def roll_of_faces(faces: Sequence[int] | np.ndarray) -> int:
    """Roll index of five valid faces in any order (no validation: the hot-path twin of :func:`roll_index`)."""
    code = 0
    for face in faces:
        code += _FACE_CODE_LIST[face]
    return _ROLL_INDEX_OF_CODE_LIST[code]


_ROLL_INDEX_OF_CODE_64 = ROLL_INDEX_OF_CODE.astype(np.int64)
#: code of the dice kept by each (roll, keep bits), flattened as ``roll * 32 + bits``
_KEPT_CODE = np.array(_KEEP_CODE, dtype=np.int64)[KEEP_OF_ACTION.astype(np.int64)].ravel()
#: (32, 5) int64: 1 where a keep bitmask rerolls the die at that position
REROLLED_MASK = (((np.arange(N_KEEP_ACTIONS)[:, None] >> np.arange(N_DICE)) & 1) == 0).astype(np.int64)


def reroll_batch(roll: np.ndarray, keep_bits: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Batched twin of :func:`reroll_one`: ``faces`` is ``(B, 5)``, one face per position.

    No sorting: a multiset's code is the sum of ``7 ** (face - 1)`` over its dice,
    the kept dice's part comes from a table and the rerolled dice's part from
    five column additions.
    """
    codes = np.take(_FACE_CODE, faces) * np.take(REROLLED_MASK, keep_bits, axis=0)
    code = np.take(_KEPT_CODE, roll * N_KEEP_ACTIONS + keep_bits)
    for position in range(N_DICE):
        code += codes[:, position]
    return np.take(_ROLL_INDEX_OF_CODE_64, code)


#: number of ordered sequences of five faces (``6 ** 5``)
N_SEQUENCES = N_FACES**N_DICE
#: (6**5, 5) int8: every ordered sequence of five faces; position ``i`` of sequence ``s``
#: shows ``s // 6**i % 6 + 1``, so one uniform draw of ``s`` is five fair dice
SEQUENCE_FACES = (np.arange(N_SEQUENCES)[:, None] // N_FACES ** np.arange(N_DICE) % N_FACES + 1).astype(np.int8)
#: (6**5,) int64: the roll index of each face sequence (of its faces sorted)
ROLL_OF_SEQUENCE = _ROLL_INDEX_OF_CODE_64[_FACE_CODE[SEQUENCE_FACES].sum(axis=1)]
#: sequence index of five faces: ``faces @ _SEQUENCE_WEIGHTS - _SEQUENCE_OFFSET`` (digit i is face i - 1)
_SEQUENCE_WEIGHTS = N_FACES ** np.arange(N_DICE, dtype=np.int64)
_SEQUENCE_OFFSET = int(_SEQUENCE_WEIGHTS.sum())


def roll_index_of_faces(faces: np.ndarray) -> np.ndarray:
    """Roll indices of a batch of five faces per row (``(B, 5)``, faces 1..6 in any order).

    The row read as a base-6 number is its face sequence, and every sequence has
    a roll (:data:`ROLL_OF_SEQUENCE`): one matrix-vector product and one lookup,
    no sort and no row sums. Faces are not validated (see :func:`roll_index`).
    """
    return np.take(ROLL_OF_SEQUENCE, np.asarray(faces) @ _SEQUENCE_WEIGHTS - _SEQUENCE_OFFSET)


#: Rolls of the batched draws below are coded by face counts in base 6 (a count is at
#: most 5): ``sum(6 ** (face - 1))`` over the dice, below 6**6, so codes and their
#: tables fit in uint16 (smaller tables: fewer cache misses than the base-7 codes)
_FACE_CODE6 = np.concatenate([[0], N_FACES ** np.arange(N_FACES)]).astype(np.uint16)
_ROLL_OF_CODE6 = np.full(N_FACES**N_FACES, -1, dtype=np.int64)
_ROLL_OF_CODE6[(ROLL_COUNTS.astype(np.int64) * N_FACES ** np.arange(N_FACES)).sum(axis=1)] = np.arange(N_ROLLS)
#: (252 * 32,) uint16: base-6 code of the dice kept by ``(roll, keep bits)``, at ``roll * 32 + bits``
_KEPT_CODE6 = _FACE_CODE6[(1 - REROLLED_MASK)[None, :, :] * ROLL_DICE[:, None, :]].sum(axis=2, dtype=np.uint16).ravel()
#: (32 * 6**5,) uint16, at ``keep_bits * 6**5 + s``: base-6 code of the dice that keep
#: bitmask ``keep_bits`` rerolls when the new faces are sequence ``s``
_REROLLED_CODE6 = (
    (REROLLED_MASK[:, None, :].astype(np.uint16) * _FACE_CODE6[SEQUENCE_FACES][None, :, :])
    .sum(axis=2, dtype=np.uint16)
    .ravel()
)


def reroll_sequence(roll: np.ndarray, keep_bits: np.ndarray, sequence: np.ndarray) -> np.ndarray:
    """:func:`reroll_batch` with the faces given as sequence indices (``faces = SEQUENCE_FACES[sequence]``).

    The vector env draws one sequence index per game instead of five faces; the
    code of the rerolled dice then comes from one table lookup (no ``(B, 5)``
    arrays), the kept dice's from another, and the roll from a third. Same
    result as ``reroll_batch(roll, keep_bits, SEQUENCE_FACES[sequence])``.
    """
    code = np.take(_KEPT_CODE6, roll * N_KEEP_ACTIONS + keep_bits)
    code += np.take(_REROLLED_CODE6, keep_bits * N_SEQUENCES + sequence)
    return np.take(_ROLL_OF_CODE6, code)
