"""The game as pure functions over a small batched state (one engine, many front ends).

A :class:`GameState` holds either one game (plain ints and a ``(n_boxes,)``
score row: the single env, where NumPy's per-call overhead would dominate) or
``B`` games as arrays with a leading batch axis (the vector env). Every function
here is written once for both: array-valued inputs broadcast, scalar inputs take
the cheap branch of :func:`select`. The solver calls :func:`legal_boxes` and
:func:`score_points` over every between-turn state at once. No function here draws random numbers: new dice come in as ``faces``
(from an RNG or a scripted source), so every transition is reproducible.

Turn structure: the dice are rolled (``rolls_left = 2``); while ``rolls_left > 0``
a keep action rerolls the dice not kept; a score action writes the dice into an
open box, pays any bonus, and (unless the game is over) the next turn's dice are
rolled.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dice_poker_env.engine.combinatorics import (
    KEEP_ALL,
    N_KEEP_ACTIONS,
    reroll_batch,
    reroll_one,
)
from dice_poker_env.engine.tables import JOKER_FORCED, JOKER_FREE, JOKER_NONE, RuleTables

ROLLS_PER_TURN = 3


class GameState(NamedTuple):
    """One game (ints) or ``B`` games (arrays with a leading batch axis).

    Attributes:
        filled: bitmask of filled boxes (bit ``k`` = box ``k``).
        scores: points written in each box (0 while open), ``(n,)`` or ``(B, n)``.
        upper_total: sum of the upper boxes.
        bonus: bonus points paid so far (upper bonus, five-of-a-kind bonuses).
        roll: index of the current (sorted) dice in ``ROLL_DICE``.
        rolls_left: rerolls left this turn (2 right after the turn's first roll).
    """

    filled: Any
    scores: np.ndarray
    upper_total: Any
    bonus: Any
    roll: Any
    rolls_left: Any

    @property
    def batched(self) -> bool:
        return isinstance(self.filled, np.ndarray)

    @property
    def total(self):
        """Final score so far: written points plus bonuses."""
        if self.batched:
            return self.scores.sum(axis=-1) + self.bonus
        return int(self.scores.sum()) + self.bonus

    @property
    def turn(self):
        """Number of boxes filled (turns completed)."""
        return popcount(self.filled)

    def game(self, index: int) -> "GameState":
        """Game ``index`` of a batched state, as a one-game state."""
        return GameState(
            int(self.filled[index]),
            self.scores[index].copy(),
            int(self.upper_total[index]),
            int(self.bonus[index]),
            int(self.roll[index]),
            int(self.rolls_left[index]),
        )


def select(cond, if_true, if_false):
    """``np.where`` for arrays, a plain conditional for scalars (ten times cheaper)."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, if_true, if_false)
    return if_true if cond else if_false


def possibly(cond) -> bool:
    """Whether ``cond`` holds anywhere: lets rare rules (jokers) skip work when they cannot apply."""
    return bool(cond.any()) if isinstance(cond, np.ndarray) else bool(cond)


def popcount(bits):
    """Number of set bits (boxes fit in 26 bits), for an int or an integer array."""
    if isinstance(bits, np.ndarray):
        return np.bitwise_count(bits.astype(np.int64)).astype(np.int64)
    return int(bits).bit_count()


def bit(bits, k):
    """Whether bit ``k`` of ``bits`` is set (broadcasts over arrays)."""
    return ((bits >> k) & 1) == 1


def new_games(tables: RuleTables, roll) -> GameState:
    """Fresh games whose first dice are ``roll`` (an int, or an array for a batch)."""
    if not isinstance(roll, np.ndarray):
        return GameState(0, np.zeros(tables.n_boxes, dtype=np.int64), 0, 0, int(roll), ROLLS_PER_TURN - 1)
    roll = roll.astype(np.int64)
    batch = roll.shape[0]
    zeros = np.zeros(batch, dtype=np.int64)
    return GameState(
        filled=zeros.copy(),
        scores=np.zeros((batch, tables.n_boxes), dtype=np.int64),
        upper_total=zeros.copy(),
        bonus=zeros.copy(),
        roll=roll.copy(),
        rolls_left=np.full(batch, ROLLS_PER_TURN - 1, dtype=np.int64),
    )


def reroll(roll, keep_bits, faces: np.ndarray):
    """Dice after keeping the dice whose bits are set and rerolling the rest.

    ``faces`` (``(5,)`` or ``(B, 5)``) gives the new face of each rerolled
    position; kept positions ignore it. Returns the new roll index (indices).
    """
    if not isinstance(roll, np.ndarray):
        return reroll_one(roll, keep_bits, faces)
    return reroll_batch(roll, np.asarray(keep_bits, dtype=np.int64), np.asarray(faces, dtype=np.int64))


def five_kind_box_full(tables: RuleTables, filled, scores: np.ndarray):
    """Whether the five-of-a-kind box is filled with points (not scratched)."""
    k = tables.five_kind_box
    if not isinstance(filled, np.ndarray):
        return k >= 0 and (filled >> k) & 1 == 1 and scores[k] > 0
    if k < 0:
        return np.zeros(filled.shape, dtype=bool)
    return bit(filled, k) & (scores[..., k] > 0)


def joker_state(tables: RuleTables, filled, box_full, roll):
    """``(joker_active, bonus_due)`` for the current dice.

    ``box_full`` says whether the five-of-a-kind box holds points (see
    :func:`five_kind_box_full`); the solver passes its own state flag here.
    """
    k = tables.five_kind_box
    five = tables.five_kind_roll[roll]
    if k < 0 or not isinstance(five, np.ndarray) and not five:
        return five & False, five & False
    bonus_due = five & box_full & (tables.five_kind_bonus > 0)
    if tables.joker == JOKER_NONE:
        return five & False, bonus_due
    active = five & (box_full if tables.joker_needs_full_box else bit(filled, k))
    return active, bonus_due


def legal_boxes(tables: RuleTables, filled, box_full, roll):
    """Bitmask of the boxes the dice may be written into.

    Open boxes, restricted to the current section when sections are played in
    order, then by the forced joker: the matching upper box if open, else the open
    lower boxes, else the open upper boxes. Empty once the game is over.
    """
    allowed = tables.all_bits & ~filled
    if tables.sections_in_order:
        open_upper = allowed & tables.upper_bits
        allowed = select(open_upper != 0, open_upper, allowed)
    active = joker_state(tables, filled, box_full, roll)[0] if tables.joker == JOKER_FORCED else False
    if possibly(active):
        upper_bit = tables.matching_upper_bit[roll]
        lower_open = allowed & tables.lower_bits
        forced = select(
            (allowed & upper_bit) != 0,
            upper_bit,
            select(lower_open != 0, lower_open, allowed & tables.upper_bits),
        )
        allowed = select(active, forced, allowed)
    return select(popcount(filled) >= tables.turns, 0 * allowed, allowed)


def score_points(tables: RuleTables, filled, upper_total, box_full, roll, first_roll, box):
    """Points for writing ``roll`` into ``box`` (legality is the caller's business).

    Returns ``(box_points, bonus_points, new_upper_total)``: the points written in
    the box, the bonuses this step pays (the five-of-a-kind bonus and the upper
    bonus, each in the step it becomes certain), and the new upper total.
    Arguments broadcast against each other.
    """
    points = select(first_roll, tables.score_first_roll[roll, box], tables.score[roll, box])
    active, bonus_due = joker_state(tables, filled, box_full, roll)
    if possibly(active):
        use_joker = active & tables.is_lower[box]
        if tables.joker == JOKER_FREE:
            use_joker = use_joker & ((filled & tables.matching_upper_bit[roll]) != 0)
        points = select(use_joker, tables.score_joker[roll, box], points)
    bonus = select(bonus_due, tables.five_kind_bonus, 0)
    upper = tables.is_upper[box]
    new_upper = upper_total + select(upper, points, 0)
    if tables.has_upper_bonus:
        threshold = tables.upper_bonus_threshold
        if tables.upper_bonus_on_complete:
            completes = upper & (((filled | tables.box_bit[box]) & tables.upper_bits) == tables.upper_bits)
            earned = completes & (new_upper >= threshold)
        else:
            earned = (upper_total < threshold) & (new_upper >= threshold)
        bonus = bonus + select(earned, tables.upper_bonus_points, 0)
    return points, bonus, new_upper


def action_mask(tables: RuleTables, state: GameState, *, copy: bool = True) -> np.ndarray:
    """int8 mask of legal actions, ``(32 + n,)`` or ``(B, 32 + n)``.

    Keep actions ``0..30`` are legal while rerolls are left (all bitmasks, including
    those that keep equal multisets); ``31`` (keep everything) never is. Score
    action ``32 + k`` is legal when box ``k`` may take the dice. For one game the
    rows are memoized; ``copy=False`` returns the shared row, which callers must
    not modify.
    """
    boxes = legal_boxes(tables, state.filled, five_kind_box_full(tables, state.filled, state.scores), state.roll)
    if not isinstance(boxes, np.ndarray):
        key = (boxes, state.rolls_left > 0)
        row = tables.mask_rows.get(key)
        if row is None:
            row = np.zeros(tables.n_actions, dtype=np.int8)
            row[:KEEP_ALL] = key[1]
            row[N_KEEP_ACTIONS:] = [(boxes >> k) & 1 for k in range(tables.n_boxes)]
            row.flags.writeable = False
            tables.mask_rows[key] = row
        return row.copy() if copy else row
    mask = np.zeros(state.filled.shape + (tables.n_actions,), dtype=np.int8)
    mask[:, :KEEP_ALL] = (state.rolls_left > 0)[:, None]
    mask[:, N_KEEP_ACTIONS:] = (boxes[:, None] & np.asarray(tables.box_bit)) != 0
    return mask


def is_over(tables: RuleTables, state: GameState):
    """Whether the game (each game) has played all its turns."""
    return popcount(state.filled) >= tables.turns


def is_legal(tables: RuleTables, state: GameState, action) -> np.ndarray:
    """Whether each game's action is legal (vectorized over the batch)."""
    mask = np.atleast_2d(action_mask(tables, state))
    action = np.atleast_1d(np.asarray(action, dtype=np.int64))
    in_range = (action >= 0) & (action < tables.n_actions)
    legal = in_range & (mask[np.arange(len(action)), np.clip(action, 0, tables.n_actions - 1)] == 1)
    return legal if state.batched else bool(legal[0])


def step(tables: RuleTables, state: GameState, action, faces):
    """Apply one legal action per game: ``(new_state, reward, game_over)``.

    ``faces`` (``(5,)`` or ``(B, 5)``) supplies fresh dice: rerolled positions for
    keep actions, the next turn's roll after a score action. Faces of finished
    games are ignored. Actions must be legal (check with :func:`is_legal`); the
    input state is not mutated.
    """
    if not isinstance(state.filled, np.ndarray):
        return step_one(tables, state, int(action), faces)
    new_roll = reroll(state.roll, np.where(action < N_KEEP_ACTIONS, action, 0), faces)  # a new turn rerolls all five
    new_state = GameState(
        filled=state.filled.copy(),
        scores=state.scores.copy(),
        upper_total=state.upper_total.copy(),
        bonus=state.bonus.copy(),
        roll=np.array(state.roll, dtype=np.int64),
        rolls_left=np.array(state.rolls_left, dtype=np.int64),
    )
    reward, over = advance(tables, new_state, action, new_roll)
    return new_state, reward, over


def advance(
    tables: RuleTables, state: GameState, action: np.ndarray, new_roll: np.ndarray, box_full: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`step` of a batch in place: overwrites ``state``'s arrays, returns ``(reward, game_over)``.

    The batched transition itself (:func:`step` is a copy of the state followed by
    this): the vector env keeps one state and advances it, which saves a copy of
    every field per step. ``new_roll`` is each game's roll if its dice are rolled
    this step: the dice after its keep for a keep action, the next turn's first
    roll after a score action (ignored for games that are over). ``box_full``:
    :func:`five_kind_box_full` of ``state`` (0/1 or bool), if the caller has it.
    Only the games that write a box are scored. ``roll`` and ``rolls_left`` must
    be int64 arrays.
    """
    filled, scores, upper_total, bonus, roll, rolls_left = state
    rows = np.flatnonzero(action >= N_KEEP_ACTIONS)  # only the games that write a box are scored
    box = action[rows] - N_KEEP_ACTIONS
    filled_rows = filled[rows]
    if box_full is None:  # over the whole batch: cheaper than gathering the score rows
        box_full = five_kind_box_full(tables, filled, scores)
    points, bonus_rows, new_upper = score_points(
        tables,
        filled_rows,
        upper_total[rows],
        np.take(box_full, rows) != 0,
        roll[rows],
        rolls_left[rows] == ROLLS_PER_TURN - 1,
        box,
    )
    if scores.flags.c_contiguous:  # scores[rows, box] = points through a flat view (cheaper than 2-D indexing)
        scores.reshape(-1)[rows * scores.shape[1] + box] = points
    else:
        scores[rows, box] = points
    filled[rows] = filled_rows | tables.box_bit[box]
    upper_total[rows] = new_upper
    bonus[rows] += bonus_rows
    reward = np.zeros(len(action), dtype=np.int64)
    reward[rows] = points + bonus_rows
    over = np.bitwise_count(filled) >= tables.turns
    roll[...] = np.where(over, roll, new_roll)
    rolls_left -= 1  # keep actions; the scoring games start a new turn (or end)
    rolls_left[rows] = np.where(over[rows], 0, ROLLS_PER_TURN - 1)
    return reward, over


def step_one(tables: RuleTables, state: GameState, action: int, faces) -> tuple[GameState, int, bool]:
    """:func:`step` for one game (int action, int state fields): the single env's hot path."""
    if action < N_KEEP_ACTIONS:
        new_roll = reroll(state.roll, action, faces)
        new_state = GameState(state.filled, state.scores, state.upper_total, state.bonus, new_roll, state.rolls_left - 1)
        return new_state, 0, False
    box = action - N_KEEP_ACTIONS
    box_full = five_kind_box_full(tables, state.filled, state.scores)
    points, bonus, new_upper = score_points(
        tables, state.filled, state.upper_total, box_full, state.roll, state.rolls_left == ROLLS_PER_TURN - 1, box
    )
    scores = state.scores.copy()
    scores[box] = points
    filled = state.filled | tables.box_bit[box]
    over = popcount(filled) >= tables.turns
    new_state = GameState(
        filled=filled,
        scores=scores,
        upper_total=new_upper,
        bonus=state.bonus + bonus,
        roll=state.roll if over else reroll(state.roll, 0, faces),
        rolls_left=0 if over else ROLLS_PER_TURN - 1,
    )
    return new_state, points + bonus, over


def explain_illegal(tables: RuleTables, state: GameState, action: int, index: int = 0) -> str | None:
    """Why ``action`` is illegal in game ``index`` of the batch, or ``None`` if it is legal."""
    names = tables.rules.box_names
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        return f"action must be an integer, got {action!r}"
    action = int(action)
    if not 0 <= action < tables.n_actions:
        return f"action {action} is out of range 0..{tables.n_actions - 1}"
    one = state.game(index) if state.batched else state
    if is_over(tables, one):
        return "the game is over; call reset()"
    if action < N_KEEP_ACTIONS:
        if action == KEEP_ALL:
            return "action 31 keeps all five dice, which is not a roll; score a box instead"
        if one.rolls_left == 0:
            return f"keep action {action}: no rerolls left this turn; score a box"
        return None
    box = action - N_KEEP_ACTIONS
    name = names[box]
    filled = one.filled
    if filled >> box & 1:
        return f"action {action} scores box {name!r}, which is already filled"
    mask = action_mask(tables, one)
    allowed = int(mask[action])
    if allowed:
        return None
    if tables.sections_in_order and not tables.is_upper[box] and filled & tables.upper_bits != tables.upper_bits:
        return f"action {action} scores lower box {name!r}, but the upper boxes must all be filled first"
    legal = [names[k] for k in range(tables.n_boxes) if mask[N_KEEP_ACTIONS + k]]
    return f"action {action} scores box {name!r}, but the joker rule forces one of: {', '.join(legal)}"
