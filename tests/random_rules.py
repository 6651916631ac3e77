"""Random *valid* rulesets for property and fuzz tests (seeded: same seed, same rulesets).

Every feature of the rules format appears: all box kinds in either section,
negative bases and points, first-roll doubling (with ``double_extra``), jokers,
both bonus timings with thresholds anywhere in their valid range, fewer turns
than boxes, sections in order, and now and then points near the supported limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dice_poker_env import load_rules
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.rules import Rules
from dice_poker_env.rules.spec import BOX_KINDS, JOKER_MODES, POINTS_LIMIT


def _points(rng: np.random.Generator, big: bool) -> int | str:
    if rng.random() < 0.4:
        return str(rng.choice(["sum", "matching"]))
    if big:
        return int(rng.integers(-POINTS_LIMIT, POINTS_LIMIT + 1))
    return int(rng.integers(-20, 61))


def _box(rng: np.random.Generator, index: int, big: bool) -> dict[str, Any]:
    kind = str(rng.choice(sorted(BOX_KINDS)))
    box: dict[str, Any] = {"name": f"b{index}", "kind": kind}
    if rng.random() < 0.3:
        box["section"] = str(rng.choice(["upper", "lower"]))
    fields = BOX_KINDS[kind]
    if "face" in fields:
        box["face"] = int(rng.integers(1, 7))
    if "base" in fields:
        box["base"] = int(rng.integers(-3, 6)) if not big else int(rng.integers(-POINTS_LIMIT, POINTS_LIMIT + 1))
    if "n" in fields:
        box["n"] = int(rng.integers(2, 6))
    if "points" in fields and rng.random() < 0.8:
        box["points"] = _points(rng, big)
    if "extra" in fields and rng.random() < 0.4:
        box["extra"] = int(rng.integers(-10, 21))
    if "sets" in fields:
        box["sets"] = [
            sorted(int(f) for f in rng.choice(np.arange(1, 7), size=int(rng.integers(2, 6)), replace=False))
            for _ in range(int(rng.integers(1, 3)))
        ]
    if "allow_five_of_a_kind" in fields:
        box["allow_five_of_a_kind"] = bool(rng.random() < 0.5)
    if "first_roll_double" in fields:
        box["first_roll_double"] = bool(rng.random() < 0.4)
    return box


def random_spec(rng: np.random.Generator, max_boxes: int = 6, *, solvable: bool = False) -> dict[str, Any]:
    """A random rules spec that the loader accepts (see the module docstring).

    ``solvable``: no upper bonus next to points near the limit (the solver tracks
    the upper total exactly when there is a bonus, so its states grow with that
    total's range: keep such solves small).
    """
    n = int(rng.integers(1, max_boxes + 1))
    big = rng.random() < 0.1
    boxes = [_box(rng, k, big) for k in range(n)]
    if rng.random() < 0.5:  # a five-of-a-kind box, for the joker and bonus rules
        boxes[int(rng.integers(n))] = {
            "name": "five",
            "kind": "n_of_a_kind",
            "n": 5,
            "points": _points(rng, False),
            "first_roll_double": bool(rng.random() < 0.3),
        }
    spec: dict[str, Any] = {"name": f"random_{int(rng.integers(1 << 30))}", "boxes": boxes}
    if rng.random() < 0.3:
        spec["turns"] = int(rng.integers(1, n + 1))
    if rng.random() < 0.3:
        spec["sections_in_order"] = True
    if rng.random() < 0.3:
        spec["double_extra"] = True
    if any(b["name"] == "five" for b in boxes) and rng.random() < 0.8:
        bonus, joker = int(rng.integers(0, 101)), str(rng.choice(JOKER_MODES))
        needs_full_box = bool(rng.random() < 0.5) and joker != "none"  # (a condition of a joker: none, none)
        spec["five_of_a_kind"] = {"box": "five", "bonus": bonus, "joker": joker, "joker_needs_full_box": needs_full_box}
    tables = compile_rules(load_rules(spec))  # what the upper boxes can total decides the bonus
    if tables.is_upper.any() and rng.random() < 0.6 and not (solvable and big):
        lowest, highest = tables.min_upper_total, tables.max_upper_total
        timing = "on_complete" if lowest < 0 or rng.random() < 0.4 else "on_reach"
        upper = np.flatnonzero(tables.is_upper)
        if tables.turns < len(upper):  # the last upper box is never filled; the best `turns` of them at most
            timing = "on_reach" if lowest >= 0 else "none"
            tops = sorted(
                (max(int(t[:, k].max()) for t in (tables.score, tables.score_first_roll)) for k in upper), reverse=True
            )
            highest = min(highest, sum(max(points, 0) for points in tops[: tables.turns]))
        low = 1 if timing == "on_reach" else lowest
        if timing != "none" and low <= highest:
            spec["upper_bonus"] = {
                "threshold": int(rng.integers(low, highest + 1)),
                "points": int(rng.integers(0, 51)),
                "timing": timing,
            }
    return spec


def random_rules(rng: np.random.Generator, max_boxes: int = 6, *, solvable: bool = False) -> Rules:
    """:func:`random_spec`, loaded."""
    return load_rules(random_spec(rng, max_boxes, solvable=solvable))
