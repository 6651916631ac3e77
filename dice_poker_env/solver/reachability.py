"""The forward pass: which between-turn states a game can reach, layer by layer.

Runs over *pairs* ``(filled, full)`` with a bitset of reachable upper totals each,
not over states (see :func:`reachable_layers`); the backward pass (:mod:`.backward`)
then solves exactly these states.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dice_poker_env.engine.game import legal_boxes, score_points
from dice_poker_env.solver.state_space import StateSpace


def reachable_layers(space: StateSpace, progress: Any = None) -> list[np.ndarray]:
    """Sorted state keys of every layer reachable from the empty scorecard.

    ``progress`` (optional, tqdm-like) is advanced by one per layer.

    The pass runs over *pairs* ``(filled, full)``, each carrying the set of its
    reachable upper totals as a bitset (bit ``upper - upper_lo``), instead of over
    states: the engine decides legality and points per pair and roll class
    (neither depends on the upper total), and a score move changes the upper total
    by the same amount for every state of a pair (:func:`score_points` returns
    ``upper_total + points`` for an upper box, ``upper_total`` otherwise), so a
    move shifts the pair's bitset and clips it to the next mask's canonical range
    (:meth:`StateSpace.canonical_upper`). That is a few word operations per pair
    and move, where a pass over states costs a few per state and move.
    """
    tables = space.tables
    n_words = -(-space.n_slots // 64)
    filled = np.zeros(1, dtype=np.int64)
    full = np.zeros(1, dtype=bool)
    bits = np.zeros((1, n_words), dtype=np.uint64)
    start = int(space.canonical_upper(np.int64(0), np.int64(0))) - space.upper_lo
    bits[0, start // 64] = np.uint64(1) << np.uint64(start % 64)
    layers = [_bitset_keys(space, filled, full, bits)]
    # legality is the same on all rolls of a class: the engine is asked on class representatives only
    reps = space.class_rolls
    for _ in range(tables.turns):
        legal = np.broadcast_to(
            np.asarray(legal_boxes(tables, filled[:, None], full[:, None], reps[None, :]), dtype=np.int64),
            (len(filled), len(reps)),
        )
        any_legal = int(np.bitwise_or.reduce(legal.reshape(-1))) if len(filled) else 0
        # pairs alike for the upper total: same bitset and same filled upper boxes (the canonical
        # range of a mask depends on its upper boxes only), so a move's shifted bitset is computed
        # once per such kind of pair and copied to the others
        alike = np.column_stack([bits.view(np.int64), filled & tables.upper_bits])
        _, one_pair, alike_id = np.unique(alike, axis=0, return_index=True, return_inverse=True)
        alike_id = alike_id.reshape(-1)
        n_alike = len(one_pair)
        pairs: list[np.ndarray] = []
        move_ids: list[np.ndarray] = []
        move_box: list[int] = []
        move_shift: list[int] = []
        move_full: list[bool] = []
        for box in range(space.n_boxes):
            if not any_legal >> box & 1:
                continue
            cls = space.box_classes[box]
            legal_c = ((legal[:, space.class_roll_pos[box]] >> box) & 1).astype(bool)  # (pairs, classes)
            points, _, delta = score_points(
                tables, filled[:, None], 0, full[:, None], cls.roll[None, :], cls.first[None, :], box
            )
            delta = np.broadcast_to(np.asarray(delta, dtype=np.int64), legal_c.shape)
            new_full = space.next_full(full[:, None], box, points)
            kind = np.broadcast_to(delta * 2 + new_full, legal_c.shape)  # upper total added, new full flag
            legal_kinds = kind[legal_c]
            if not len(legal_kinds):
                continue
            low = int(legal_kinds.min())
            present = np.zeros(int(legal_kinds.max()) - low + 1, dtype=bool)
            present[legal_kinds - low] = True
            kinds = np.flatnonzero(present) + low  # a few per box: one bitset shift each
            number = np.cumsum(present) - 1  # kind -> its number among the box's kinds
            seen = np.zeros(len(filled) * len(kinds), dtype=bool)  # (pair, kind) moves, each once
            seen[np.nonzero(legal_c)[0] * len(kinds) + number[legal_kinds - low]] = True
            pair, k = np.divmod(np.flatnonzero(seen), len(kinds))
            pairs.append(pair)
            move_ids.append(k + len(move_box))
            move_box.extend([box] * len(kinds))
            move_shift.extend(kinds >> 1)
            move_full.extend((kinds & 1).astype(bool))
        if not pairs:
            filled, full, bits = filled[:0], full[:0], bits[:0]
        else:
            pair, move = np.concatenate(pairs), np.concatenate(move_ids)
            box_of, shift_of, full_of = np.array(move_box), np.array(move_shift), np.array(move_full)
            # the distinct (move, kind of pair) combinations, each shifted once
            combo = move * n_alike + alike_id[pair]
            seen = np.zeros(len(box_of) * n_alike, dtype=bool)
            seen[combo] = True
            distinct = np.flatnonzero(seen)
            row_of = np.cumsum(seen) - 1
            source = one_pair[distinct % n_alike]
            moves_d = distinct // n_alike
            new_filled = filled[source] | (1 << box_of[moves_d])
            lo, hi = space.upper_range(new_filled)
            shifted = _shift_clip(bits[source], shift_of[moves_d], lo - space.upper_lo, hi - space.upper_lo)
            moved = shifted[row_of[combo]]
            # OR the moved bitsets into their next pair, word by word, in a dense table over pair codes
            code = (filled[pair] | (1 << box_of[move])) * 2 + full_of[move]
            merged = np.zeros((n_words, 2 * space.n_masks), dtype=np.uint64)
            for word in range(n_words):
                np.bitwise_or.at(merged[word], code, moved[:, word])
            code = np.flatnonzero(merged.any(axis=0))
            bits = np.ascontiguousarray(merged[:, code].T)
            filled, full = code >> 1, (code & 1).astype(bool)
        layers.append(_bitset_keys(space, filled, full, bits))
        if progress is not None:
            progress.update(1)
    return layers


def stacked_layers(layers: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, layer_start)`` of :func:`reachable_layers`' layers: every state key in one array, layer by layer,
    and the ``(turns + 2,)`` int64 offsets where each layer starts (the layout of every solve's tables)."""
    return np.concatenate(layers), np.concatenate([[0], np.cumsum([len(layer) for layer in layers])]).astype(np.int64)


def _low_positions(n_words: int) -> np.ndarray:
    """``(64 n + 1, n)`` uint64: row ``a`` is the bitset of the positions below ``a``."""
    bits = np.arange(64 * n_words + 1)[:, None] > np.arange(64 * n_words)[None, :]
    return np.packbits(bits, axis=1, bitorder="little").view(np.uint64)


def _below(position: np.ndarray, n_words: int, table: np.ndarray) -> np.ndarray:
    """``(rows, n_words)`` bitsets of the positions below ``position[row]`` (any integers)."""
    return table[np.clip(position, 0, 64 * n_words)]


def _set_bit(bits: np.ndarray, position: np.ndarray, where: np.ndarray) -> None:
    """Set bit ``position[i]`` (``0 <= position < 64 * n_words``) of row ``i`` where ``where[i]``."""
    flag = np.where(where, np.uint64(1) << (position % 64).astype(np.uint64), np.uint64(0))
    bits[np.arange(len(bits)), position // 64] |= flag


def _shift_clip(bits: np.ndarray, shift: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Bitsets with each row moved by ``shift[row]`` positions, then clipped to ``lo..hi``.

    Position ``s`` of a row goes to ``clip(s + shift, lo, hi)``: positions that
    would land below ``lo`` (above ``hi``) end up at ``lo`` (``hi``), as the
    canonical upper total does.
    """
    rows, n_words = bits.shape
    table = _low_positions(n_words)
    below_lo = _below(lo - shift, n_words, table)  # source positions landing below lo
    up_to_hi = _below(hi - shift + 1, n_words, table)  # ... at or below hi
    kept = bits & up_to_hi & ~below_lo
    below = (bits & below_lo).any(axis=1)
    above = (bits & ~up_to_hi).any(axis=1)
    words, offset = np.divmod(shift, 64)
    padded = np.zeros((rows, 3 * n_words + 2), dtype=np.uint64)
    padded[:, n_words + 1 : 2 * n_words + 1] = kept
    # out word w draws from source word w - words (bits shifted up by offset) and the word below it
    source = np.clip(n_words + 1 + np.arange(n_words)[None, :] - words[:, None], 1, 3 * n_words + 1)
    offset = offset.astype(np.uint64)[:, None]
    out = np.take_along_axis(padded, source, axis=1) << offset
    carry = np.take_along_axis(padded, source - 1, axis=1) >> np.minimum(np.uint64(64) - offset, np.uint64(63))
    out |= np.where(offset > 0, carry, np.uint64(0))
    _set_bit(out, lo, below)
    _set_bit(out, hi, above)
    return out


def _bitset_keys(space: StateSpace, filled: np.ndarray, full: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Sorted state keys of pairs ``(filled, full)`` and their bitsets of upper slots."""
    flags = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, : space.n_slots]
    row, slot = np.nonzero(flags)
    return np.sort(space.key(filled[row], slot + space.upper_lo, full[row]))
