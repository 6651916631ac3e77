"""Action masks: which of the ``32 + n`` actions are legal, for one game or a batch.

The one owner of masks: the single env, the vector env, the multi-player env and
:func:`~dice_poker_env.engine.game.explain_illegal`'s callers all ask
:func:`action_masks` of their tables. Keep actions ``0..30`` are legal while
rerolls are left (every bitmask, including those that keep equal multisets);
``31`` (keep everything) never is; score action ``32 + k`` is legal when box
``k`` may take the dice (:func:`~dice_poker_env.engine.game.legal_boxes`).

Up to :data:`TABLE_MAX_BOXES` boxes a mask is a row of a table built once per
ruleset, at index ``(legal boxes << 1) | (rerolls left > 0)``; the legal boxes
come from a second table over every (filled boxes, five-of-a-kind box holds
points, roll class). ``legal_boxes`` sees a roll only through whether it is five
of a kind and its matching upper box, so the 252 rolls fall into a few classes
(7 for the shipped rulesets), and that table is built by calling the engine
once over the whole grid: a mask costs two lookups. Larger rulesets evaluate
``legal_boxes`` for each request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_ALL, N_KEEP_ACTIONS
from dice_poker_env.engine.game import five_kind_box_full, legal_boxes
from dice_poker_env.engine.state import BatchState, GameState
from dice_poker_env.engine.tables import COMPILED_CACHE_SIZE, RuleTables

#: rulesets up to this many boxes get mask tables (2 * 2**15 rows of 32 + n int8)
TABLE_MAX_BOXES = 15


@functools.lru_cache(maxsize=8)
def _mask_rows(n_boxes: int) -> np.ndarray:
    """Every mask row of ``n_boxes`` boxes, at ``(legal_box_bits << 1) | (rerolls left > 0)`` (read-only)."""
    bits = np.arange(1 << n_boxes)
    rows = np.zeros((2 << n_boxes, N_KEEP_ACTIONS + n_boxes), dtype=np.int8)
    rows[1::2, :KEEP_ALL] = 1
    rows[:, N_KEEP_ACTIONS:] = np.repeat((bits[:, None] >> np.arange(n_boxes)) & 1, 2, axis=0)
    rows.flags.writeable = False
    return rows


class ActionMasks:
    """The legal actions of one ruleset's games (build with :func:`action_masks`).

    Attributes:
        tables: the compiled rules.
        tabled: whether masks come from tables (else from the engine, per request).
        rows: with tables (``tabled``), every mask row: ``rows[index]`` is the mask
            of row index ``index`` (:meth:`index`); ``None`` otherwise.
        legal: with tables, ``rows.ravel() != 0``: whether action ``a`` is legal at
            row index ``i`` is ``legal[i * n_actions + a]``.
    """

    def __init__(self, tables: RuleTables, *, use_tables: bool | None = None):
        """``use_tables``: build the mask tables (default: up to :data:`TABLE_MAX_BOXES` boxes);
        ``False`` asks the engine for every mask (what larger rulesets do)."""
        if use_tables and tables.n_boxes > TABLE_MAX_BOXES:
            raise ValueError(f"mask tables are built up to {TABLE_MAX_BOXES} boxes, not {tables.n_boxes}")
        self.tables = tables
        self.n_actions = tables.n_actions
        self.tabled = tables.n_boxes <= TABLE_MAX_BOXES if use_tables is None else bool(use_tables)
        self.rows: np.ndarray | None = None
        self.legal: np.ndarray | None = None
        self._rows_of_legal: dict[tuple[int, bool], np.ndarray] = {}  # one-game rows without tables
        self._row_views: dict[int, np.ndarray] = {}  # one-game rows with tables, by row index
        if self.tabled:
            self.rows = _mask_rows(tables.n_boxes)
            self.legal = self.rows.ravel() != 0
            self.legal.flags.writeable = False
            self._build_legal_table()

    def _build_legal_table(self) -> None:
        """The legal boxes of every (filled boxes, five-kind box holds points, roll class), shifted left once.

        ``_legal_table[((filled << 1) | full) * n_classes + roll_class[roll]]`` is
        ``legal_boxes(...) << 1``, so that or-ing in ``rolls_left > 0`` gives a row index.
        """
        tables = self.tables
        five = np.asarray(tables.five_kind_roll, dtype=np.int64)
        upper_bit = np.asarray(tables.matching_upper_bit, dtype=np.int64)
        _, first, roll_class = np.unique(five << 40 | upper_bit, return_index=True, return_inverse=True)
        filled = np.arange(1 << tables.n_boxes, dtype=np.int64)[:, None, None]
        full = np.array([False, True])[None, :, None]
        legal = legal_boxes(tables, filled, full, first.astype(np.int64)[None, None, :])
        legal = np.broadcast_to(legal, (len(filled), 2, len(first)))
        table = (legal << 1).astype(np.uint16).ravel()  # up to 15 boxes: 2**16 row indices; small tables stay in cache
        table.flags.writeable = False
        self._roll_class = roll_class.reshape(-1).astype(np.int64)
        self._roll_class_list = self._roll_class.tolist()
        self._n_classes = len(first)
        self._legal_table = table

    # Read-only tables and memoized read-only rows, shared like the RuleTables they derive from: a deep copy of an
    # env keeps them, and a pickle holds only the tables (that is, the rules), rebuilt when loaded.
    def __deepcopy__(self, memo: dict[int, Any]) -> ActionMasks:
        return self

    def __reduce__(self) -> tuple[Callable[[RuleTables, bool], ActionMasks], tuple[RuleTables, bool]]:
        return _masks_of, (self.tables, self.tabled)

    # ------------------------------------------------------------ batches
    def index(self, state: BatchState, full: np.ndarray) -> np.ndarray:
        """The row index of every game (tabled rulesets only).

        ``full``: whether each game's five-of-a-kind box holds points
        (:func:`~dice_poker_env.engine.game.five_kind_box_full`), as 0/1 or bool.
        """
        key = (state.filled << 1) | full
        key *= self._n_classes
        key += np.take(self._roll_class, state.roll)
        index = np.take(self._legal_table, key)
        index |= state.rolls_left > 0
        return index

    def of_batch(self, state: BatchState, full: np.ndarray | None = None) -> np.ndarray:
        """Fresh ``(B, 32 + n)`` int8 masks of every game (``full`` as for :meth:`index`, if known)."""
        tables = self.tables
        if full is None:
            full = five_kind_box_full(tables, state.filled, state.scores)
        if self.tabled:
            assert self.rows is not None  # built with the tables
            return np.take(self.rows, self.index(state, full), axis=0)
        boxes = legal_boxes(tables, state.filled, full, state.roll)
        mask = np.zeros((len(state.filled), self.n_actions), dtype=np.int8)
        mask[:, :KEEP_ALL] = (state.rolls_left > 0)[:, None]
        mask[:, N_KEEP_ACTIONS:] = (boxes[:, None] & tables.box_bit) != 0
        return mask

    # ----------------------------------------------------------- one game
    def of_game(self, state: GameState) -> np.ndarray:
        """The ``(32 + n,)`` int8 mask of one game: a shared read-only row (copy it to hand it out)."""
        one = self.tables.one_game
        full = int(five_kind_box_full(one, state.filled, state.scores))
        if self.tabled:
            key = ((state.filled << 1) | full) * self._n_classes + self._roll_class_list[state.roll]
            index = int(self._legal_table[key]) | (state.rolls_left > 0)
            row = self._row_views.get(index)
            if row is None:  # (a view per row index, made once: a dict lookup is cheaper than slicing)
                assert self.rows is not None  # built with the tables
                row = self._row_views[index] = self.rows[index]
            return row
        boxes = legal_boxes(one, state.filled, full, state.roll)
        key = (boxes, state.rolls_left > 0)
        row = self._rows_of_legal.get(key)
        if row is None:
            row = np.zeros(self.n_actions, dtype=np.int8)
            row[:KEEP_ALL] = key[1]
            row[N_KEEP_ACTIONS:] = [(boxes >> k) & 1 for k in range(self.tables.n_boxes)]
            row.flags.writeable = False
            self._rows_of_legal[key] = row
        return row


@functools.lru_cache(maxsize=COMPILED_CACHE_SIZE)
def action_masks(tables: RuleTables) -> ActionMasks:
    """The :class:`ActionMasks` of a ruleset's tables (built once per tables object)."""
    return ActionMasks(tables)


def _masks_of(tables: RuleTables, tabled: bool) -> ActionMasks:
    """An unpickled :class:`ActionMasks`: the shared one of ``tables`` unless it was built with other ``use_tables``."""
    masks = action_masks(tables)
    return masks if masks.tabled == tabled else ActionMasks(tables, use_tables=tabled)
