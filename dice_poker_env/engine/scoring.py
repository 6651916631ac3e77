"""Scoring primitives: what one box scores for a batch of dice.

Each function takes face counts ``counts`` of shape ``(..., 6)`` and a
:class:`~dice_poker_env.rules.spec.Box` and returns ``(match, points)``: whether
the dice form the box's pattern and the points the box would get if they do.
These are evaluated once per ruleset over the 252 rolls to build the score
tables (:mod:`dice_poker_env.engine.tables`); nothing on a hot path calls them.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from dice_poker_env.rules.spec import Box

FACE_VALUES = np.arange(1, 7)


def _dice_sum(counts: np.ndarray) -> np.ndarray:
    return (counts * FACE_VALUES).sum(axis=-1)


def _best_face_with(counts: np.ndarray, at_least: int) -> np.ndarray:
    """Highest face with at least ``at_least`` dice, 0 where there is none."""
    has = counts >= at_least
    return np.where(has, FACE_VALUES, 0).max(axis=-1)


def _points(box: Box, counts: np.ndarray, matching_sum: np.ndarray) -> np.ndarray:
    if box.points == "sum":
        return _dice_sum(counts)
    if box.points == "matching":
        return matching_sum
    return np.full(counts.shape[:-1], int(box.points))


def pattern(box: Box, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(match, matching_sum)`` of ``box`` for every row of ``counts``.

    ``matching_sum`` is the sum of the dice forming the combination, choosing the
    best combination where several fit (the ``points = "matching"`` value).
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = _dice_sum(counts)
    if box.kind in ("face_sum", "relative_face"):
        c = counts[..., box.face - 1]
        return np.ones(c.shape, dtype=bool), c * box.face
    if box.kind == "chance":
        return np.ones(total.shape, dtype=bool), total
    if box.kind == "n_of_a_kind":
        face = _best_face_with(counts, box.n)
        # NumPy's stubs type an array comparison as "bool scalar or array"; with rows of counts it is an array
        return cast(np.ndarray, face > 0), box.n * face
    if box.kind == "two_pairs":
        pair_faces = np.where(counts >= 2, FACE_VALUES, 0)
        top_two = np.sort(pair_faces, axis=-1)[..., -2:]
        match = cast(np.ndarray, (top_two > 0).all(axis=-1))  # an array, as above
        return match, np.where(match, 2 * top_two.sum(axis=-1), 0)
    if box.kind == "full_house":
        ordered = np.sort(counts, axis=-1)
        match = (ordered[..., -1] == 3) & (ordered[..., -2] == 2)
        if box.allow_five_of_a_kind:
            match |= ordered[..., -1] == 5
        return match, total
    if box.kind == "straight":
        match = np.zeros(total.shape, dtype=bool)
        best = np.zeros(total.shape, dtype=np.int64)
        for faces in box.sets:
            idx = np.array(faces) - 1
            hit = (counts[..., idx] >= 1).all(axis=-1)
            match |= hit
            best = np.where(hit, np.maximum(best, sum(faces)), best)
        return match, best
    raise ValueError(f"unknown box kind {box.kind!r}")


def box_score(box: Box, counts: np.ndarray) -> np.ndarray:
    """Points written in ``box`` for these dice (0 when the pattern is not formed)."""
    counts = np.asarray(counts, dtype=np.int64)
    if box.kind == "face_sum":
        return counts[..., box.face - 1] * box.face
    if box.kind == "relative_face":
        return (counts[..., box.face - 1] - box.base) * box.face
    match, matching_sum = pattern(box, counts)
    if box.kind == "chance":
        return matching_sum
    return np.where(match, _points(box, counts, matching_sum) + box.extra, 0)


def _doubled(box: Box, points: np.ndarray, match: np.ndarray, double_extra: bool) -> np.ndarray:
    """``points`` doubled where the box's first-roll doubling applies (``match`` and points above 0)."""
    doubled = 2 * points if double_extra else 2 * (points - box.extra) + box.extra
    return np.where(match & (points > 0), doubled, points)


def first_roll_score(box: Box, counts: np.ndarray, double_extra: bool) -> np.ndarray:
    """Points when the box is scored from the turn's first roll (doubling rule)."""
    plain = box_score(box, counts)
    if not box.first_roll_double:
        return plain
    match, _ = pattern(box, counts)
    return _doubled(box, plain, match, double_extra)


def joker_first_roll_score(box: Box, counts: np.ndarray, double_extra: bool) -> np.ndarray:
    """Points for five of a kind placed in ``box`` as a joker from the turn's first roll: the joker's points
    (:func:`joker_score`), doubled as the pattern's own points are, since the joker scores as if it matched."""
    joker = joker_score(box, counts)
    if not box.first_roll_double:
        return joker
    return _doubled(box, joker, np.ones(joker.shape, dtype=bool), double_extra)


def joker_score(box: Box, counts: np.ndarray) -> np.ndarray:
    """Points for five of a kind placed in ``box`` as a joker: scored as if the pattern matched.

    Fixed-value boxes (full house, straights) get their full value, ``"sum"`` boxes
    the dice sum; upper boxes score normally (0 unless it is the matching face).
    """
    counts = np.asarray(counts, dtype=np.int64)
    if box.section == "upper" or box.kind in ("face_sum", "relative_face", "chance"):
        return box_score(box, counts)
    _, matching_sum = pattern(box, counts)
    if box.kind == "straight" and box.points == "matching":
        matching_sum = np.full(matching_sum.shape, max(sum(s) for s in box.sets))
    elif box.kind == "two_pairs" and box.points == "matching":
        matching_sum = 4 * _best_face_with(counts, 4)
    return _points(box, counts, matching_sum) + box.extra
