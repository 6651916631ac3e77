"""The game as pure functions over a small batched state (one engine, many front ends).

A :class:`GameState` holds ``B`` independent games as arrays with a leading batch
axis; the single env keeps ``B = 1``, the vector env any ``B``, and the solver
calls :func:`legal_boxes` and :func:`score_points` over every between-turn state
at once. No function here draws random numbers: new dice come in as ``faces``
(from an RNG or a scripted source), so every transition is reproducible.

Turn structure: the dice are rolled (``rolls_left = 2``); while ``rolls_left > 0``
a keep action rerolls the dice not kept; a score action writes the dice into an
open box, pays any bonus, and (unless the game is over) the next turn's dice are
rolled.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dice_poker_env.engine.dice import (
    KEEP_ALL,
    N_DICE,
    N_KEEP_ACTIONS,
    ROLL_DICE,
    roll_index_of_sorted,
)
from dice_poker_env.engine.tables import JOKER_FORCED, JOKER_FREE, JOKER_NONE, RuleTables

ROLLS_PER_TURN = 3
_DIE_BITS = 1 << np.arange(N_DICE)


class GameState(NamedTuple):
    """``B`` games. Every field has a leading batch axis of length ``B``.

    Attributes:
        filled: int64 bitmask of filled boxes.
        scores: (B, n_boxes) int32 points written in each box (0 while open).
        upper_total: int32 sum of the upper boxes.
        bonus: int32 bonus points paid so far (upper bonus, five-of-a-kind bonuses).
        roll: int64 index of the current (sorted) dice in ``ROLL_DICE``.
        rolls_left: int64 rerolls left this turn (2 right after the turn's first roll).
    """

    filled: np.ndarray
    scores: np.ndarray
    upper_total: np.ndarray
    bonus: np.ndarray
    roll: np.ndarray
    rolls_left: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """Final score so far: written points plus bonuses."""
        return self.scores.sum(axis=1) + self.bonus

    @property
    def turn(self) -> np.ndarray:
        """Number of boxes filled (turns completed)."""
        return popcount(self.filled)


def popcount(bits: np.ndarray) -> np.ndarray:
    """Number of set bits of each element (boxes fit in 26 bits)."""
    bits = np.asarray(bits, dtype=np.int64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(bits).astype(np.int64)
    return _popcount_slow(bits)


def _popcount_slow(bits: np.ndarray) -> np.ndarray:  # NumPy < 2.0
    count = np.zeros_like(bits)
    for shift in range(32):
        count += (bits >> shift) & 1
    return count


def new_games(tables: RuleTables, roll: np.ndarray) -> GameState:
    """Fresh games whose first dice are ``roll`` (roll indices, shape ``(B,)``)."""
    roll = np.asarray(roll, dtype=np.int64)
    batch = roll.shape[0]
    zeros = np.zeros(batch, dtype=np.int64)
    return GameState(
        filled=zeros.copy(),
        scores=np.zeros((batch, tables.n_boxes), dtype=np.int32),
        upper_total=zeros.astype(np.int32),
        bonus=zeros.astype(np.int32),
        roll=roll.copy(),
        rolls_left=np.full(batch, ROLLS_PER_TURN - 1, dtype=np.int64),
    )


def reroll(roll: np.ndarray, keep_bits: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Dice after keeping the dice whose bits are set and rerolling the rest.

    ``faces`` (B, 5) gives the new face of each rerolled position; kept positions
    ignore it. Returns the new roll indices.
    """
    dice = ROLL_DICE[roll]
    kept = (np.asarray(keep_bits)[:, None] & _DIE_BITS) != 0
    new = np.where(kept, dice, faces)
    new.sort(axis=1)
    return roll_index_of_sorted(new)


def five_kind_box_full(tables: RuleTables, filled: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Whether the five-of-a-kind box is filled with points (not scratched)."""
    k = tables.five_kind_box
    if k < 0:
        return np.zeros(np.shape(filled), dtype=bool)
    return ((filled >> k) & 1).astype(bool) & (scores[..., k] > 0)


def joker_state(
    tables: RuleTables, filled: np.ndarray, box_full: np.ndarray, roll: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(joker_active, bonus_due)`` for the current dice.

    ``box_full`` says whether the five-of-a-kind box holds points (see
    :func:`five_kind_box_full`); the solver passes its own state flag here.
    """
    k = tables.five_kind_box
    if k < 0:
        false = np.zeros(np.shape(roll), dtype=bool)
        return false, false
    five = tables.five_kind_roll[roll]
    box_filled = ((filled >> k) & 1).astype(bool)
    bonus_due = five & box_full & (tables.five_kind_bonus > 0)
    if tables.joker == JOKER_NONE:
        active = np.zeros_like(five)
    else:
        active = five & (box_full if tables.joker_needs_full_box else box_filled)
    return active, bonus_due


def legal_boxes(tables: RuleTables, filled: np.ndarray, box_full: np.ndarray, roll: np.ndarray) -> np.ndarray:
    """Bitmask of the boxes the dice may be written into.

    Open boxes, restricted to the current section when sections are played in
    order, then by the forced joker: the matching upper box if open, else the open
    lower boxes, else the open upper boxes. Empty once the game is over.
    """
    filled = np.asarray(filled, dtype=np.int64)
    allowed = tables.all_bits & ~filled
    if tables.sections_in_order:
        open_upper = allowed & tables.upper_bits
        allowed = np.where(open_upper != 0, open_upper, allowed)
    if tables.joker == JOKER_FORCED:
        active, _ = joker_state(tables, filled, box_full, roll)
        upper_box = tables.matching_upper_box[roll]
        upper_bit = np.where(upper_box >= 0, np.left_shift(1, np.maximum(upper_box, 0)), 0)
        lower_open = allowed & tables.lower_bits
        forced = np.where(
            allowed & upper_bit, upper_bit, np.where(lower_open != 0, lower_open, allowed & tables.upper_bits)
        )
        allowed = np.where(active, forced, allowed)
    game_over = popcount(filled) >= tables.turns
    return np.where(game_over, 0, allowed)


def score_points(
    tables: RuleTables,
    filled: np.ndarray,
    upper_total: np.ndarray,
    box_full: np.ndarray,
    roll: np.ndarray,
    first_roll: np.ndarray,
    box: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points for writing ``roll`` into ``box`` (legality is the caller's business).

    Returns ``(box_points, bonus_points, new_upper_total)``: the points written in
    the box, the bonuses this step pays (the five-of-a-kind bonus and the upper
    bonus, each in the step it becomes certain), and the new upper total.
    """
    box = np.asarray(box, dtype=np.int64)
    filled = np.asarray(filled, dtype=np.int64)
    points = np.where(first_roll, tables.score_first_roll[roll, box], tables.score[roll, box]).astype(np.int32)
    active, bonus_due = joker_state(tables, filled, box_full, roll)
    if tables.joker != JOKER_NONE:
        lower = ~tables.is_upper[box]
        use_joker = active & lower
        if tables.joker == JOKER_FREE:
            upper_box = tables.matching_upper_box[roll]
            use_joker &= ((filled >> np.maximum(upper_box, 0)) & 1).astype(bool) & (upper_box >= 0)
        points = np.where(use_joker, tables.score_joker[roll, box], points)
    bonus = np.where(bonus_due, tables.five_kind_bonus, 0).astype(np.int32)
    upper = tables.is_upper[box]
    new_upper = (upper_total + np.where(upper, points, 0)).astype(np.int32)
    if tables.has_upper_bonus:
        threshold = tables.upper_bonus_threshold
        if tables.upper_bonus_on_complete:
            completes = upper & (((filled | (1 << box)) & tables.upper_bits) == tables.upper_bits)
            earned = completes & (new_upper >= threshold)
        else:
            earned = (upper_total < threshold) & (new_upper >= threshold)
        bonus = bonus + np.where(earned, tables.upper_bonus_points, 0).astype(np.int32)
    return points, bonus, new_upper


def action_mask(tables: RuleTables, state: GameState) -> np.ndarray:
    """(B, 32 + n_boxes) int8: 1 for every legal action.

    Keep actions ``0..30`` are legal while rerolls are left (all bitmasks, including
    those that keep equal multisets); ``31`` (keep everything) never is. Score
    action ``32 + k`` is legal when box ``k`` may take the dice.
    """
    batch = state.roll.shape[0]
    mask = np.zeros((batch, tables.n_actions), dtype=np.int8)
    mask[:, :KEEP_ALL] = (state.rolls_left > 0)[:, None]
    boxes = legal_boxes(tables, state.filled, five_kind_box_full(tables, state.filled, state.scores), state.roll)
    mask[:, N_KEEP_ACTIONS:] = (boxes[:, None] >> np.arange(tables.n_boxes)) & 1
    return mask


def is_legal(tables: RuleTables, state: GameState, action: np.ndarray) -> np.ndarray:
    """Whether each game's action is legal (vectorized over the batch)."""
    mask = action_mask(tables, state)
    action = np.asarray(action, dtype=np.int64)
    in_range = (action >= 0) & (action < tables.n_actions)
    return in_range & (mask[np.arange(len(action)), np.clip(action, 0, tables.n_actions - 1)] == 1)


def is_over(tables: RuleTables, state: GameState) -> np.ndarray:
    """Whether each game has played all its turns."""
    return popcount(state.filled) >= tables.turns


def step(
    tables: RuleTables, state: GameState, action: np.ndarray, faces: np.ndarray
) -> tuple[GameState, np.ndarray, np.ndarray]:
    """Apply one legal action per game: ``(new_state, reward, game_over)``.

    ``faces`` (B, 5) supplies fresh dice: rerolled positions for keep actions, the
    next turn's roll after a score action. Faces of finished games are ignored.
    Actions must be legal (check with :func:`is_legal`); the state is not mutated.
    """
    action = np.asarray(action, dtype=np.int64)
    keeping = action < N_KEEP_ACTIONS
    box = np.where(keeping, 0, action - N_KEEP_ACTIONS)
    box_full = five_kind_box_full(tables, state.filled, state.scores)
    points, bonus, new_upper = score_points(
        tables, state.filled, state.upper_total, box_full, state.roll, state.rolls_left == ROLLS_PER_TURN - 1, box
    )
    scoring = ~keeping
    rows = np.flatnonzero(scoring)
    scores = state.scores.copy()
    scores[rows, box[rows]] = points[rows]
    filled = np.where(scoring, state.filled | (1 << box), state.filled)
    reward = np.where(scoring, points + bonus, 0).astype(np.int32)
    over = popcount(filled) >= tables.turns
    keep_bits = np.where(keeping, action, 0)  # a new turn rerolls all five dice
    new_roll = reroll(state.roll, keep_bits, faces)
    new_state = GameState(
        filled=filled,
        scores=scores,
        upper_total=np.where(scoring, new_upper, state.upper_total).astype(np.int32),
        bonus=(state.bonus + np.where(scoring, bonus, 0)).astype(np.int32),
        roll=np.where(over, state.roll, new_roll),
        rolls_left=np.where(keeping, state.rolls_left - 1, np.where(over, 0, ROLLS_PER_TURN - 1)),
    )
    return new_state, reward, over


def explain_illegal(tables: RuleTables, state: GameState, action: int, index: int = 0) -> str | None:
    """Why ``action`` is illegal in game ``index`` of the batch, or ``None`` if it is legal."""
    names = tables.rules.box_names
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        return f"action must be an integer, got {action!r}"
    action = int(action)
    if not 0 <= action < tables.n_actions:
        return f"action {action} is out of range 0..{tables.n_actions - 1}"
    one = GameState(*(np.asarray(field)[index : index + 1] for field in state))
    if bool(is_over(tables, one)[0]):
        return "the game is over; call reset()"
    if action < N_KEEP_ACTIONS:
        if action == KEEP_ALL:
            return "action 31 keeps all five dice, which is not a roll; score a box instead"
        if int(one.rolls_left[0]) == 0:
            return f"keep action {action}: no rerolls left this turn; score a box"
        return None
    box = action - N_KEEP_ACTIONS
    name = names[box]
    filled = int(one.filled[0])
    if filled >> box & 1:
        return f"action {action} scores box {name!r}, which is already filled"
    allowed = int(action_mask(tables, one)[0, action])
    if allowed:
        return None
    if tables.sections_in_order and not tables.is_upper[box] and filled & tables.upper_bits != tables.upper_bits:
        return f"action {action} scores lower box {name!r}, but the upper boxes must all be filled first"
    legal = [names[k] for k in range(tables.n_boxes) if action_mask(tables, one)[0, N_KEEP_ACTIONS + k]]
    return f"action {action} scores box {name!r}, but the joker rule forces one of: {', '.join(legal)}"
