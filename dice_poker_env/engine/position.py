"""Build and check game positions given by people: a scorecard, dice and rolls left.

Tests, analysis, curricula, the solver's ``state_value`` and the env's
``reset(options=...)`` all set up positions this way, so the validation lives
in one place and every error names the field at fault.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from dice_poker_env.engine.dice import N_DICE, N_FACES, roll_index
from dice_poker_env.engine.game import ROLLS_PER_TURN, GameState, popcount
from dice_poker_env.engine.tables import RuleTables


class PositionError(ValueError):
    """A position (scorecard, dice, rolls left) is inconsistent with the rules."""


def secured_upper_bonus(tables: RuleTables, filled: int, upper_total: int) -> int:
    """Upper bonus already certain for this scorecard (paid in an earlier step)."""
    if not tables.has_upper_bonus:
        return 0
    if tables.upper_bonus_on_complete:
        done = (filled & tables.upper_bits) == tables.upper_bits
        return tables.upper_bonus_points if done and upper_total >= tables.upper_bonus_threshold else 0
    return tables.upper_bonus_points if upper_total >= tables.upper_bonus_threshold else 0


def parse_scorecard(tables: RuleTables, scorecard: Mapping[str, Any] | None) -> tuple[int, np.ndarray]:
    """``(filled_bits, scores)`` of a ``{box_name: points}`` scorecard, validated."""
    rules = tables.rules
    scores = np.zeros(tables.n_boxes, dtype=np.int64)
    filled = 0
    if scorecard is None:
        return filled, scores
    if not isinstance(scorecard, Mapping):
        raise PositionError(f"scorecard must be a mapping {{box_name: points}}, got {type(scorecard).__name__}")
    names = rules.box_names  # a property that builds the tuple: once, not per box
    for name, points in scorecard.items():
        if name not in names:
            raise PositionError(f"scorecard: {rules.name} has no box {name!r}; boxes: {', '.join(names)}")
        if points is None:
            continue
        k = names.index(name)
        if isinstance(points, bool) or not isinstance(points, (int, np.integer)):
            raise PositionError(f"scorecard: points in {name!r} must be an integer, got {points!r}")
        if int(points) not in tables.possible_scores[k]:
            raise PositionError(
                f"scorecard: {name!r} can never hold {points} points under {rules.name} rules "
                f"(possible: {', '.join(map(str, tables.possible_scores[k]))})"
            )
        scores[k] = int(points)
        filled |= 1 << k
    if tables.sections_in_order and filled & tables.lower_bits and filled & tables.upper_bits != tables.upper_bits:
        raise PositionError("scorecard: lower boxes are filled before all upper boxes, but this ruleset plays sections in order")
    if popcount(filled) >= tables.turns:
        raise PositionError(f"scorecard: {popcount(filled)} boxes filled, the game ({tables.turns} turns) is already over")
    return filled, scores


def make_position(
    tables: RuleTables,
    scorecard: Mapping[str, Any] | None = None,
    dice: Sequence[int] | None = None,
    rolls_left: int | None = None,
    bonus: int | None = None,
    *,
    random_roll: int | None = None,
) -> GameState:
    """A one-game (scalar) :class:`GameState` from a human description of a position.

    Args:
        scorecard: ``{box_name: points}`` for the filled boxes.
        dice: the five dice in any order; ``random_roll`` (a roll index) is used when omitted.
        rolls_left: rerolls left this turn (0..2); defaults to 2 (the turn's first roll).
        bonus: bonus points already paid; defaults to the upper bonus the
            scorecard has secured (five-of-a-kind bonuses cannot be inferred).
    """
    filled, scores = parse_scorecard(tables, scorecard)
    if dice is None:
        if random_roll is None:
            raise PositionError("dice: give the five dice of the position")
        roll = int(random_roll)
    else:
        try:
            roll = roll_index(list(dice))
        except (ValueError, TypeError) as error:
            raise PositionError(f"dice: expected {N_DICE} integers in 1..{N_FACES}, got {dice!r}") from error
    if rolls_left is None:
        rolls_left = ROLLS_PER_TURN - 1
    if isinstance(rolls_left, bool) or not isinstance(rolls_left, (int, np.integer)) or not 0 <= rolls_left < ROLLS_PER_TURN:
        raise PositionError(f"rolls_left: expected an integer 0..{ROLLS_PER_TURN - 1}, got {rolls_left!r}")
    upper_total = int(scores[tables.is_upper].sum())
    if bonus is None:
        bonus = secured_upper_bonus(tables, filled, upper_total)
    elif isinstance(bonus, bool) or not isinstance(bonus, (int, np.integer)) or bonus < 0:
        raise PositionError(f"bonus: expected a non-negative integer, got {bonus!r}")
    return GameState(filled, scores, upper_total, int(bonus), roll, int(rolls_left))


def position_from_options(tables: RuleTables, options: Mapping[str, Any], random_roll: int) -> GameState:
    """Validate env ``reset(options=...)`` keys and build the position."""
    known = {"scorecard", "dice", "rolls_left", "bonus"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise PositionError(f"reset options: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(known))}")
    if "rolls_left" in options and "dice" not in options:
        raise PositionError("reset options: 'rolls_left' needs 'dice' (a position mid-turn needs its dice)")
    return make_position(
        tables,
        options.get("scorecard"),
        options.get("dice"),
        options.get("rolls_left"),
        options.get("bonus"),
        random_roll=random_roll,
    )
