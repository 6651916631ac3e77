"""Build and check game positions given by people: a scorecard, dice and rolls left.

Tests, analysis, curricula, the solver's ``state_value`` and the env's
``reset(options=...)`` all set up positions this way, so the validation lives
in one place and every error names the field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import N_DICE, N_FACES, roll_index
from dice_poker_env.engine.state import ROLLS_PER_TURN, GameState
from dice_poker_env.engine.tables import RuleTables


class PositionError(ValueError):
    """A position (scorecard, dice, rolls left) is inconsistent with the rules."""


def secured_upper_bonus(tables: RuleTables, filled: Any, upper_total: Any) -> Any:
    """Upper bonus already certain for this scorecard (paid in an earlier step): an int, or an array of
    them for arrays of ``filled`` bit sets and upper totals."""
    if not tables.has_upper_bonus:
        return upper_total * 0  # 0, an int or an array like the totals
    reached = upper_total >= tables.upper_bonus_threshold
    if tables.upper_bonus_on_complete:
        reached = reached & ((filled & tables.upper_bits) == tables.upper_bits)
    return tables.upper_bonus_points * reached


def five_kind_bonus_room(tables: RuleTables, filled: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The most five-of-a-kind bonuses play can have paid by each between-turn scorecard (rows of
    ``filled`` bit sets and ``scores``): one per other filled box whose points five equal dice can leave
    there (``tables.five_kind_scores``: plain, first-roll or joker scoring), none unless the
    five-of-a-kind box holds points (bonuses are paid only then)."""
    filled = np.asarray(filled, dtype=np.int64).reshape(-1)
    scores = np.asarray(scores, dtype=np.int64).reshape(len(filled), tables.n_boxes)
    k = tables.five_kind_box
    if tables.five_kind_bonus <= 0 or k < 0:
        return np.zeros(len(filled), dtype=np.int64)
    is_filled = ((filled[:, None] >> np.arange(tables.n_boxes)) & 1) == 1
    leaves = np.stack([np.isin(scores[:, b], tables.five_kind_scores[b]) for b in range(tables.n_boxes)], axis=1)
    leaves[:, k] = False
    return np.where(is_filled[:, k] & (scores[:, k] > 0), (is_filled & leaves).sum(axis=1), 0)


def bonus_possible(tables: RuleTables, filled: np.ndarray, scores: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """Whether play can have paid each row's ``bonus`` by its scorecard: :func:`possible_bonuses` of a
    batch, as one boolean per row."""
    filled = np.asarray(filled, dtype=np.int64).reshape(-1)
    scores = np.asarray(scores, dtype=np.int64).reshape(len(filled), tables.n_boxes)
    secured = secured_upper_bonus(tables, filled, scores[:, tables.is_upper].sum(axis=1))
    extra = np.asarray(bonus, dtype=np.int64).reshape(-1) - secured
    if tables.five_kind_bonus <= 0:
        return extra == 0
    many = extra // tables.five_kind_bonus
    return (extra >= 0) & (extra % tables.five_kind_bonus == 0) & (many <= five_kind_bonus_room(tables, filled, scores))


def possible_bonuses(tables: RuleTables, filled: int, scores: np.ndarray) -> list[int]:
    """Every bonus total that play can have paid by a between-turn scorecard, ascending.

    The upper bonus is certain from the scorecard (:func:`secured_upper_bonus`).
    Five-of-a-kind bonuses are paid once per five of a kind scored while the
    five-of-a-kind box holds points, each in another box (:func:`five_kind_bonus_room`).
    """
    upper = int(scores[tables.is_upper].sum())
    secured = secured_upper_bonus(tables, filled, upper)
    most = int(five_kind_bonus_room(tables, np.array([filled]), np.asarray(scores)[None])[0])
    return [secured + m * tables.five_kind_bonus for m in range(most + 1)]


def check_bonus(tables: RuleTables, filled: int, scores: np.ndarray, bonus: Any = None) -> int:
    """The bonus paid so far of a position: ``bonus`` validated, or the secured upper bonus when ``None``.

    Raises:
        PositionError: ``bonus`` is not an integer, or no play reaches it with this
            scorecard (see :func:`possible_bonuses`).
    """
    possible = possible_bonuses(tables, filled, scores)
    if bonus is None:
        return possible[0]
    if isinstance(bonus, bool) or not isinstance(bonus, (int, np.integer)):
        raise PositionError(f"bonus: expected an integer, got {bonus!r}")
    if int(bonus) not in possible:
        shown = ", ".join(map(str, possible[:12])) + (", ..." if len(possible) > 12 else "")
        raise PositionError(
            f"bonus: {tables.rules.name} rules cannot have paid {int(bonus)} bonus points with this scorecard "
            f"(possible: {shown})"
        )
    return int(bonus)


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
        if not tables.min_box_score <= points <= tables.max_box_score or int(points) not in tables.possible_scores[k]:
            raise PositionError(
                f"scorecard: {name!r} can never hold {points} points under {rules.name} rules "
                f"(possible: {', '.join(map(str, tables.possible_scores[k]))})"
            )
        scores[k] = int(points)
        filled |= 1 << k
    if tables.sections_in_order and filled & tables.lower_bits and filled & tables.upper_bits != tables.upper_bits:
        raise PositionError(
            "scorecard: lower boxes are filled before all upper boxes, but this ruleset plays sections in order"
        )
    if filled.bit_count() >= tables.turns:
        raise PositionError(
            f"scorecard: {filled.bit_count()} boxes filled, the game ({tables.turns} turns) is already over"
        )
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
    """A one-game :class:`GameState` from a human description of a position.

    Args:
        scorecard: ``{box_name: points}`` for the filled boxes.
        dice: the five dice in any order (integers 1..6); ``random_roll`` (a roll
            index) is used when omitted or ``None``.
        rolls_left: rerolls left this turn (0..2); defaults to 2 (the turn's first roll).
        bonus: bonus points already paid; defaults to the upper bonus the
            scorecard has secured (five-of-a-kind bonuses cannot be inferred).
            Validated against the scorecard (:func:`check_bonus`).
    """
    filled, scores = parse_scorecard(tables, scorecard)
    if dice is None:
        if random_roll is None:
            raise PositionError("dice: give the five dice of the position")
        roll = int(random_roll)
    else:
        try:
            roll = roll_index(dice)
        except ValueError as error:
            raise PositionError(f"dice: expected {N_DICE} integers in 1..{N_FACES}, got {dice!r}") from error
    if rolls_left is None:
        rolls_left = ROLLS_PER_TURN - 1
    if (
        isinstance(rolls_left, bool)
        or not isinstance(rolls_left, (int, np.integer))
        or not 0 <= rolls_left < ROLLS_PER_TURN
    ):
        raise PositionError(f"rolls_left: expected an integer 0..{ROLLS_PER_TURN - 1}, got {rolls_left!r}")
    upper_total = int(scores[tables.is_upper].sum())
    bonus = check_bonus(tables, filled, scores, bonus)
    return GameState(filled, scores, upper_total, bonus, roll, int(rolls_left))


def playable_position(
    tables: RuleTables,
    scorecard: Mapping[str, Any] | None = None,
    dice: Sequence[int] | None = None,
    rolls_left: int | None = None,
    bonus: int | None = None,
) -> GameState:
    """:func:`make_position` of a position with a turn left to play (any roll where ``dice`` is omitted): what
    the solvers' advice and reach probabilities read. A scorecard with every turn played (fewer filled boxes than
    boxes under a ``turns`` option) is a :class:`PositionError`."""
    state = make_position(tables, scorecard, dice, rolls_left, bonus, random_roll=0)
    if int(tables.popcount(int(state.filled))) >= tables.turns:
        raise PositionError("the game is over: no turn is left to play")
    return state


#: the position keys of env ``reset(options=...)``; a key given as ``None`` counts as not given
POSITION_KEYS = ("scorecard", "dice", "rolls_left", "bonus")


def check_options(options: Any, where: str = "reset options") -> dict[str, Any]:
    """``options`` as a dict (``None``: empty), or a :class:`PositionError` if it is not a mapping."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise PositionError(
            f"{where}: expected a dict (e.g. {{'dice': [1, 2, 3, 4, 5]}}) or None, got {type(options).__name__}"
        )
    return dict(options)


def rolls_dice(options: Mapping[str, Any] | None) -> bool:
    """Whether a position given by these reset options needs freshly rolled dice (no ``dice``, or ``None``)."""
    return not options or options.get("dice") is None


def position_from_options(tables: RuleTables, options: Mapping[str, Any], random_roll: int) -> GameState:
    """Validate env ``reset(options=...)`` keys and build the position.

    A key given as ``None`` counts as not given (``"dice": None`` means freshly
    rolled dice, ``random_roll``).
    """
    options = check_options(options)
    unknown = sorted(set(options) - set(POSITION_KEYS))
    if unknown:
        raise PositionError(
            f"reset options: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(POSITION_KEYS))}"
        )
    if options.get("rolls_left") is not None and options.get("dice") is None:
        raise PositionError("reset options: 'rolls_left' needs 'dice' (a position mid-turn needs its dice)")
    return make_position(
        tables,
        options.get("scorecard"),
        options.get("dice"),
        options.get("rolls_left"),
        options.get("bonus"),
        random_roll=random_roll,
    )
