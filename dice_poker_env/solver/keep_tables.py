"""Keep and roll index tables of the turn widget (:mod:`.turn`), built once at import.

Inside the widget, proper keeps (0 to 4 dice) are ordered by size, then by number
of distinct faces (most first), and rolls by number of distinct faces (most
first): the *internal order* (:data:`KEEP_ORDER`, :data:`ROLL_ORDER`). A keep with
``d`` distinct faces has ``d`` distinct one-die-smaller sub-keeps, so in this
order the ``j``-th sub-keep exists exactly for a prefix of each size block: the
best sub-keep recursion touches every (keep, distinct sub-keep) pair once, on
contiguous slices, without padding (:data:`KEEP_SUB_GROUPS`,
:data:`ROLL_SUB_GROUPS`). The keep-value recursion gathers through the
face-major tables :data:`FOUR_PLUS_ROLL_T`, :data:`FOUR_PLUS_IROLL_T` and
:data:`SMALL_PLUS_T`.
"""

from __future__ import annotations

import numpy as np

from dice_poker_env.engine.combinatorics import (
    FIRST_ROLL_PROBABILITY,
    KEEP_COUNTS,
    KEEP_PLUS_FACE,
    KEEP_SIZE,
    N_DICE,
    N_FACES,
    N_KEEPS,
    N_ROLLS,
    ROLL_OF_KEEP,
)

#: keeps are ordered by size: KEEP_START[n] .. KEEP_START[n + 1] hold the keeps of n dice
KEEP_START = np.searchsorted(KEEP_SIZE, np.arange(N_DICE + 2)).astype(np.int64)
#: number of proper keeps (0 to 4 dice): the keeps an env keep action can reach
N_PROPER_KEEPS = int(KEEP_START[N_DICE])
#: the 5-dice keep index of each roll (the inverse of ROLL_OF_KEEP on 5-dice keeps)
_FULL_KEEP_OF_ROLL = np.empty(N_ROLLS, dtype=np.int64)
_FULL_KEEP_OF_ROLL[ROLL_OF_KEEP[N_PROPER_KEEPS:N_KEEPS]] = np.arange(N_PROPER_KEEPS, N_KEEPS)


def _keep_minus_face() -> np.ndarray:
    """(462, 6): the keep with one die of face f+1 removed; a present face's when f+1 is absent.

    Row 0 (the empty keep) points at itself. Used by the "best sub-keep" recursion,
    where a repeated sub-keep is harmless (max is idempotent).
    """
    minus = np.full((N_KEEPS, N_FACES), -1, dtype=np.int64)
    for k in range(N_KEEPS):
        for f in range(N_FACES):
            grown = KEEP_PLUS_FACE[k, f]
            if grown >= 0:
                minus[grown, f] = k
    minus[0] = 0
    for k in range(1, N_KEEPS):
        present = minus[k][minus[k] >= 0]
        minus[k][minus[k] < 0] = present[0]
    return minus


def _keep_subs(keep_minus_face: np.ndarray) -> np.ndarray:
    """(462, 5): the keeps one die smaller, distinct faces first, padded with the first.

    A keep of ``n`` dice has at most ``n`` distinct faces, so its first ``min(n, 5)``
    columns list all its one-smaller sub-keeps.
    """
    subs = np.zeros((N_KEEPS, N_DICE), dtype=np.int64)
    for k in range(N_KEEPS):
        faces = [f for f in range(N_FACES) if KEEP_COUNTS[k, f] > 0]
        row = [int(keep_minus_face[k, f]) for f in faces] or [0]
        subs[k] = (row + [row[0]] * N_DICE)[:N_DICE]
    return subs


_KEEP_SUBS = _keep_subs(_keep_minus_face())

# -- the internal order ---------------------------------------------------------
_DISTINCT = (np.asarray(KEEP_COUNTS) > 0).sum(axis=1)
#: engine keep index of each internal proper keep, and the inverse
KEEP_ORDER = np.lexsort((np.arange(N_PROPER_KEEPS), -_DISTINCT[:N_PROPER_KEEPS], KEEP_SIZE[:N_PROPER_KEEPS])).astype(
    np.int64
)
KEEP_POS = np.empty(N_PROPER_KEEPS, dtype=np.int64)
KEEP_POS[KEEP_ORDER] = np.arange(N_PROPER_KEEPS)
_ROLL_DISTINCT = _DISTINCT[_FULL_KEEP_OF_ROLL]
#: engine roll index of each internal roll, and the inverse
ROLL_ORDER = np.lexsort((np.arange(N_ROLLS), -_ROLL_DISTINCT)).astype(np.int64)
ROLL_POS = np.empty(N_ROLLS, dtype=np.int64)
ROLL_POS[ROLL_ORDER] = np.arange(N_ROLLS)
#: first-roll probabilities in internal roll order
FIRST_PROB_INTERNAL = FIRST_ROLL_PROBABILITY[ROLL_ORDER]


def _plus_tables() -> list[np.ndarray]:
    """(n, 6) gather indices per keep size: internal keeps + face, internal order."""
    levels = []
    for size in range(N_DICE):
        lo, hi = int(KEEP_START[size]), int(KEEP_START[size + 1])
        engine = KEEP_ORDER[lo:hi]
        grown = KEEP_PLUS_FACE[engine].astype(np.int64)  # (n, 6) engine keeps
        if size == N_DICE - 1:
            levels.append(grown)  # 5-dice keeps: resolved to rolls below
        else:
            levels.append(KEEP_POS[grown])
    return levels


_PLUS_LEVELS = _plus_tables()
#: 4-dice internal keeps + face -> engine roll / internal roll, face-major (6, 126)
FOUR_PLUS_ROLL_T = np.ascontiguousarray(ROLL_OF_KEEP[_PLUS_LEVELS[N_DICE - 1]].astype(np.int64).T)
FOUR_PLUS_IROLL_T = np.ascontiguousarray(ROLL_POS[FOUR_PLUS_ROLL_T])
#: per keep size 0..3: internal keeps + face -> internal keep one die larger, face-major (6, n)
SMALL_PLUS_T = [np.ascontiguousarray(level.T) for level in _PLUS_LEVELS[: N_DICE - 1]]


def _sub_groups(engine_keeps: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """[(n_j, internal sub-keep indices of the first n_j keeps)] for j = 0, 1, ...

    ``engine_keeps`` (engine indices, in internal order, distinct faces non-increasing).
    """
    distinct = _DISTINCT[engine_keeps]
    groups = []
    for j in range(int(distinct.max()) if len(distinct) else 0):
        n = int((distinct > j).sum())
        groups.append((n, KEEP_POS[_KEEP_SUBS[engine_keeps[:n], j]]))
    return groups


#: per keep size 1..4: the sub-keep groups of that size block (index 0 unused: the empty keep has no sub-keeps)
KEEP_SUB_GROUPS: list[list[tuple[int, np.ndarray]]] = [[]] + [
    _sub_groups(KEEP_ORDER[int(KEEP_START[s]) : int(KEEP_START[s + 1])]) for s in range(1, N_DICE)
]
#: the sub-keep groups of the rolls (internal roll order)
ROLL_SUB_GROUPS = _sub_groups(_FULL_KEEP_OF_ROLL[ROLL_ORDER])
