"""The best box for every roll: a max over boxes computed on small merged tables."""

from __future__ import annotations

import numpy as np


class BoxMaxTree:
    """The max over boxes of each roll's candidate, computed on small merged tables.

    A box's candidate for a roll depends only on the roll's class for that box
    (a handful of classes: its points). Two boxes together depend only on the
    pair of classes, and few pairs occur (three upper boxes: 56 class triples,
    not 252 rolls). So the boxes are merged two at a time, always the two groups
    whose combined classes are fewest (a fixed plan per ruleset), and each merge
    takes the max of its two children on just those combined rows. Only the last
    merge is expanded to the 252 rolls: about a third of the row operations of
    one max per box over all rolls, with the same result (max is order-free).
    """

    def __init__(self, class_of_roll: list[np.ndarray]) -> None:
        groups = [(box, np.asarray(rows, dtype=np.int64)) for box, rows in enumerate(class_of_roll)]
        #: merges in evaluation order: (left node, right node, left rows, right rows)
        self.merges: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        n_leaves = len(groups)
        while len(groups) > 1:
            best: tuple[int, int, int, np.ndarray] | None = None
            for i in range(len(groups)):
                for j in range(i + 1, len(groups)):
                    code = groups[i][1] * (int(groups[j][1].max()) + 1) + groups[j][1]
                    count = int(np.count_nonzero(np.bincount(code)))
                    if best is None or count < best[0]:
                        best = (count, i, j, code)
            assert best is not None  # two or more groups: at least one pair was scored
            _, i, j, code = best
            (left, left_map), (right, right_map) = groups[i], groups[j]
            _, first_roll, node_map = np.unique(code, return_index=True, return_inverse=True)
            self.merges.append((left, right, left_map[first_roll], right_map[first_roll]))
            groups = [g for k, g in enumerate(groups) if k not in (i, j)] + [
                (n_leaves + len(self.merges) - 1, node_map.reshape(-1))
            ]
        root_map = groups[0][1]
        if self.merges:  # the last merge is evaluated straight onto the rolls
            left, right, left_rows, right_rows = self.merges[-1]
            self.merges[-1] = (left, right, left_rows[root_map], right_rows[root_map])
            self.root_map = None
        else:
            self.root_map = root_map

    def evaluate(self, leaves: list[np.ndarray | None]) -> np.ndarray:
        """``(252, m)``: per roll, the max over boxes of ``leaves[box][class of the roll]``.

        ``leaves[box]`` is the ``(n_classes, m)`` candidates of the box, or ``None``
        for a box closed to every state (no candidate). At least one box is open.
        """
        # each node's value: (array, rows) with node row u = array[rows[u]] (rows None: identity)
        values: list[tuple[np.ndarray, np.ndarray | None] | None] = [
            (leaf, None) if leaf is not None else None for leaf in leaves
        ]
        for left, right, left_rows, right_rows in self.merges:
            a, b = values[left], values[right]
            if a is None or b is None:
                kept, rows = (b, right_rows) if a is None else (a, left_rows)
                values.append(None if kept is None else (kept[0], rows if kept[1] is None else kept[1][rows]))
                continue
            out = a[0].take(left_rows if a[1] is None else a[1][left_rows], axis=0)
            np.maximum(out, b[0].take(right_rows if b[1] is None else b[1][right_rows], axis=0), out=out)
            values.append((out, None))
        root = values[-1]
        assert root is not None  # at least one box is open
        array, root_rows = root
        if self.root_map is not None:
            root_rows = self.root_map if root_rows is None else root_rows[self.root_map]
        return array if root_rows is None else array.take(root_rows, axis=0)
