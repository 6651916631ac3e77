"""The game as pure functions over a small state (one engine, many front ends).

States are :class:`~dice_poker_env.engine.state.GameState` (one game: plain ints)
or :class:`~dice_poker_env.engine.state.BatchState` (``B`` games: arrays). The
rules (:func:`five_kind_box_state`, :func:`joker_state`, :func:`legal_boxes`,
:func:`score_points`) are written once for both: they take the fields of a
state and the tables, and broadcast over arrays when given
:class:`~dice_poker_env.engine.tables.RuleTables`; one game passes plain ints
and ``tables.one_game``, whose ``select``/``column``/``possibly``/``popcount`` are
the plain-Python operations. The transitions come in the two forms their callers
need: :func:`step_one` for one game (the single and multi-player envs),
:func:`advance` (in place) and :func:`step_batch` for a batch (the vector env,
batched agents). The solver calls :func:`legal_boxes` and :func:`score_points`
over every between-turn state at once. No function here draws random numbers:
new dice come in as ``faces`` (from an RNG or a scripted source), so every
transition is reproducible. Action masks are :mod:`dice_poker_env.engine.masks`'s.

Turn structure: the dice are rolled (``rolls_left = 2``); while ``rolls_left > 0``
a keep action rerolls the dice not kept; a score action writes the dice into an
open box, pays any bonus, and (unless the game is over) the next turn's dice are
rolled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import KEEP_ALL, N_KEEP_ACTIONS, reroll_batch, reroll_one
from dice_poker_env.engine.state import ROLLS_PER_TURN, BatchState, GameState
from dice_poker_env.engine.tables import JOKER_FORCED, JOKER_FREE, JOKER_NONE, OneGameTables, RuleTables

Tables = RuleTables | OneGameTables
#: An int (one game, :class:`OneGameTables`) or an int64 array (a batch, :class:`RuleTables`): the rule
#: functions below are written once for both, so their values are typed Any.
IntOrArray = Any

__all__ = [
    "ROLLS_PER_TURN",
    "BatchState",
    "GameState",
    "advance",
    "explain_illegal",
    "five_kind_box_full",
    "five_kind_box_state",
    "is_over",
    "joker_state",
    "legal_boxes",
    "new_batch",
    "new_game",
    "score_points",
    "step_batch",
    "step_one",
]


def new_game(tables: RuleTables, roll: int) -> GameState:
    """A fresh game whose first dice are ``roll``."""
    return GameState(0, np.zeros(tables.n_boxes, dtype=np.int64), 0, 0, int(roll), ROLLS_PER_TURN - 1)


def new_batch(tables: RuleTables, rolls: np.ndarray) -> BatchState:
    """Fresh games whose first dice are ``rolls`` (one roll index per game)."""
    rolls = np.asarray(rolls, dtype=np.int64)
    zeros = np.zeros(len(rolls), dtype=np.int64)
    return BatchState(
        filled=zeros.copy(),
        scores=np.zeros((len(rolls), tables.n_boxes), dtype=np.int64),
        upper_total=zeros.copy(),
        bonus=zeros.copy(),
        roll=rolls.copy(),
        rolls_left=np.full(len(rolls), ROLLS_PER_TURN - 1, dtype=np.int64),
    )


def five_kind_box_state(tables: Tables, filled: IntOrArray, scores: Any) -> IntOrArray:
    """The five-of-a-kind box: 0 open (or no such rule), 1 scratched (0 points), 2 holds points.

    ``filled`` and ``scores`` of one game (int, ``(n,)``) or of a batch (``(B,)``,
    ``(B, n)``). The one definition of "the box holds points" (the bonus and the
    jokers that need it, the observation's ``five_kind_box``, the solver's state).
    """
    filled_box = (filled & tables.five_kind_bit) != 0
    return filled_box * (1 + (tables.column(scores, tables.five_kind_column) > 0))


def five_kind_box_full(tables: Tables, filled: IntOrArray, scores: Any) -> IntOrArray:
    """Whether the five-of-a-kind box is filled with points (not scratched): :func:`five_kind_box_state` is 2."""
    return ((filled & tables.five_kind_bit) != 0) & (tables.column(scores, tables.five_kind_column) > 0)


def joker_state(
    tables: Tables, filled: IntOrArray, box_full: IntOrArray, roll: IntOrArray
) -> tuple[IntOrArray, IntOrArray]:
    """``(joker_active, bonus_due)`` for the current dice.

    ``box_full`` says whether the five-of-a-kind box holds points (see
    :func:`five_kind_box_full`); the solver passes its own state flag here.
    """
    five = tables.five_kind_roll[roll]
    if tables.five_kind_box < 0 or not tables.possibly(five):
        return five & False, five & False
    bonus_due = five & box_full & (tables.five_kind_bonus > 0)
    if tables.joker == JOKER_NONE:
        return five & False, bonus_due
    active = five & (box_full if tables.joker_needs_full_box else (filled & tables.five_kind_bit) != 0)
    return active, bonus_due


def legal_boxes(tables: Tables, filled: IntOrArray, box_full: IntOrArray, roll: IntOrArray) -> IntOrArray:
    """Bitmask of the boxes the dice may be written into.

    Open boxes, restricted to the current section when sections are played in
    order, then by the forced joker: the matching upper box if open, else the open
    lower boxes, else the open upper boxes. Empty once the game is over.
    """
    allowed = tables.all_bits & ~filled
    if tables.sections_in_order:
        open_upper = allowed & tables.upper_bits
        allowed = tables.select(open_upper != 0, open_upper, allowed)
    active = joker_state(tables, filled, box_full, roll)[0] if tables.joker == JOKER_FORCED else False
    if tables.possibly(active):
        upper_bit = tables.matching_upper_bit[roll]
        lower_open = allowed & tables.lower_bits
        forced = tables.select(
            (allowed & upper_bit) != 0,
            upper_bit,
            tables.select(lower_open != 0, lower_open, allowed & tables.upper_bits),
        )
        allowed = tables.select(active, forced, allowed)
    return tables.select(tables.popcount(filled) >= tables.turns, 0 * allowed, allowed)


def score_points(
    tables: Tables,
    filled: IntOrArray,
    upper_total: IntOrArray,
    box_full: IntOrArray,
    roll: IntOrArray,
    first_roll: IntOrArray,
    box: IntOrArray,
) -> tuple[IntOrArray, IntOrArray, IntOrArray]:
    """Points for writing ``roll`` into ``box`` (legality is the caller's business).

    Returns ``(box_points, bonus_points, new_upper_total)``: the points written in
    the box, the bonuses this step pays (the five-of-a-kind bonus and the upper
    bonus, each in the step it becomes certain), and the new upper total.
    Arguments broadcast against each other.
    """
    select = tables.select
    points = select(first_roll, tables.score_first_roll[roll, box], tables.score[roll, box])
    active, bonus_due = joker_state(tables, filled, box_full, roll)
    if tables.possibly(active):
        use_joker = active & tables.is_lower[box]
        if tables.joker == JOKER_FREE:
            use_joker = use_joker & ((filled & tables.matching_upper_bit[roll]) != 0)
        joker = select(first_roll, tables.score_joker_first_roll[roll, box], tables.score_joker[roll, box])
        points = select(use_joker, joker, points)
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


def is_over(tables: RuleTables, state: GameState | BatchState) -> IntOrArray:
    """Whether the game (each game of a batch) has played all its turns."""
    return state.turn >= tables.turns


def step_batch(
    tables: RuleTables, state: BatchState, action: np.ndarray, faces: np.ndarray
) -> tuple[BatchState, np.ndarray, np.ndarray]:
    """Apply one legal action per game: ``(new_state, reward, game_over)``; ``state`` is not changed.

    ``faces`` (``(B, 5)``) supplies fresh dice: rerolled positions for keep
    actions, the next turn's roll after a score action. Faces of finished games
    are ignored. Actions must be legal (see :mod:`dice_poker_env.engine.masks`).
    """
    action = np.asarray(action, dtype=np.int64)
    keep_bits = np.where(action < N_KEEP_ACTIONS, action, 0)  # a new turn rerolls all five
    new_roll = reroll_batch(state.roll, keep_bits, np.asarray(faces, dtype=np.int64))
    new_state = state.copy()
    reward, over = advance(tables, new_state, action, new_roll)
    return new_state, reward, over


def advance(
    tables: RuleTables, state: BatchState, action: np.ndarray, new_roll: np.ndarray, box_full: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`step_batch` in place: overwrites ``state``'s arrays, returns ``(reward, game_over)``.

    The batched transition itself (:func:`step_batch` is a copy of the state followed
    by this): the vector env keeps one state and advances it, which saves a copy of
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


def step_one(
    tables: RuleTables, state: GameState, action: int, faces: Sequence[int] | np.ndarray
) -> tuple[GameState, int, bool]:
    """Apply one legal action to one game: ``(new_state, reward, game_over)`` (the single env's hot path).

    ``faces`` supplies fresh dice: one per rerolled die (in position order) or five
    (one per position) for a keep action, five for the next turn's roll after a
    score action (ignored when the game ends). ``state`` is not changed.
    """
    if action < N_KEEP_ACTIONS:
        new_roll = reroll_one(state.roll, action, faces)
        new_state = GameState(
            state.filled, state.scores, state.upper_total, state.bonus, new_roll, state.rolls_left - 1
        )
        return new_state, 0, False
    one = tables.one_game
    box = action - N_KEEP_ACTIONS
    box_full = five_kind_box_full(one, state.filled, state.scores)
    points, bonus, new_upper = score_points(
        one, state.filled, state.upper_total, box_full, state.roll, state.rolls_left == ROLLS_PER_TURN - 1, box
    )
    scores = state.scores.copy()
    scores[box] = points
    filled = state.filled | one.box_bit[box]
    over = filled.bit_count() >= one.turns
    new_state = GameState(
        filled=filled,
        scores=scores,
        upper_total=new_upper,
        bonus=state.bonus + bonus,
        roll=state.roll if over else reroll_one(state.roll, 0, faces),
        rolls_left=0 if over else ROLLS_PER_TURN - 1,
    )
    return new_state, points + bonus, over


def explain_illegal(tables: RuleTables, state: GameState, action: object) -> str | None:
    """Why ``action`` is illegal in this game, or ``None`` if it is legal (any value is judged)."""
    names = tables.rules.box_names
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        return f"action must be an integer, got {action!r}"
    action = int(action)
    if not 0 <= action < tables.n_actions:
        return f"action {action} is out of range 0..{tables.n_actions - 1}"
    if is_over(tables, state):
        return "the game is over; call reset()"
    if action < N_KEEP_ACTIONS:
        if action == KEEP_ALL:
            return "action 31 keeps all five dice, which is not a roll; score a box instead"
        if state.rolls_left == 0:
            return f"keep action {action}: no rerolls left this turn; score a box"
        return None
    box = action - N_KEEP_ACTIONS
    name = names[box]
    filled = state.filled
    if filled >> box & 1:
        return f"action {action} scores box {name!r}, which is already filled"
    one = tables.one_game
    legal_bits = legal_boxes(one, filled, five_kind_box_full(one, filled, state.scores), state.roll)
    if legal_bits >> box & 1:
        return None
    if tables.sections_in_order and not tables.is_upper[box] and filled & tables.upper_bits != tables.upper_bits:
        return f"action {action} scores lower box {name!r}, but the upper boxes must all be filled first"
    legal = [names[k] for k in range(tables.n_boxes) if legal_bits >> k & 1]
    return f"action {action} scores box {name!r}, but the joker rule forces one of: {', '.join(legal)}"
