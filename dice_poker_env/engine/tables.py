"""Compile a :class:`~dice_poker_env.rules.spec.Rules` into lookup tables.

Everything the game logic needs about a ruleset becomes an array indexed by roll
and box, or a bitmask over boxes, so that play, vectorized play and the solver
are lookups plus a handful of integer operations (no per-dice Python on hot paths).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, cast

import numpy as np

from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, N_ROLLS, ROLL_COUNTS, roll_index
from dice_poker_env.engine.scoring import box_score, first_roll_score, joker_first_roll_score, joker_score
from dice_poker_env.rules.spec import Rules, RulesError, changed_options, option_variants

JOKER_NONE, JOKER_FORCED, JOKER_FREE = 0, 1, 2
_JOKER_CODES = {"none": JOKER_NONE, "forced": JOKER_FORCED, "free": JOKER_FREE}


@dataclass(frozen=True, eq=False)
class RuleConstants:
    """The numbers and switches of one ruleset, shared by both table types below.

    Box sets are bitmasks: bit ``k`` stands for box ``k`` of ``rules.box_names``.
    """

    rules: Rules
    n_boxes: int
    n_actions: int
    turns: int
    upper_bits: int
    lower_bits: int
    all_bits: int
    #: index of the five-of-a-kind box (-1 when the rules have no such rule).
    five_kind_box: int
    #: its bit (0 when there is none), and a column safe to index (the box, else 0).
    five_kind_bit: int
    five_kind_column: int
    five_kind_bonus: int
    joker: int
    joker_needs_full_box: bool
    sections_in_order: bool
    has_upper_bonus: bool
    upper_bonus_threshold: int
    upper_bonus_points: int
    upper_bonus_on_complete: bool


@dataclass(frozen=True, eq=False)
class RuleTables(RuleConstants):
    """Precomputed tables of one ruleset: read-only NumPy arrays and ints.

    The rule functions of :mod:`dice_poker_env.engine.game` are written once for
    both table types: given these tables they broadcast over arrays (batches of
    games, the solver's state grids); given :attr:`one_game` they take plain ints.
    The operations whose cheapest form differs (:meth:`select`, :meth:`column`,
    :meth:`possibly`, :meth:`popcount`) are methods of the table type, so no rule
    function looks at the type of its arguments.
    """

    #: (252, n) points per roll and box, outside any joker situation.
    score: np.ndarray
    #: (252, n) the same when scored from the turn's first roll (doubling rules).
    score_first_roll: np.ndarray
    #: (252, n) points for a five of a kind placed as a joker.
    score_joker: np.ndarray
    #: (252, n) the same from the turn's first roll (doubling rules).
    score_joker_first_roll: np.ndarray
    #: (n,) bool: box is in the upper section.
    is_upper: np.ndarray
    #: (n,) bool: box is in the lower section.
    is_lower: np.ndarray
    #: (252,) bool: the roll is five of a kind.
    five_kind_roll: np.ndarray
    #: (252,) int: for five-of-a-kind rolls, the upper box of that face (-1 otherwise).
    matching_upper_box: np.ndarray
    #: (252,) int: bitmask of that upper box (0 where there is none).
    matching_upper_bit: np.ndarray
    #: (n,) int: ``1 << k`` for each box ``k``.
    box_bit: np.ndarray
    #: per box, the sorted distinct points it can ever hold (validates scorecards).
    possible_scores: tuple[np.ndarray, ...]
    #: lowest and highest points a box can hold, and the final-score bounds.
    min_box_score: int
    max_box_score: int
    min_total: int
    max_total: int
    #: least and most the upper total can be at any point of a game (each upper box
    #: open, i.e. 0, or holding any of its possible scores)
    min_upper_total: int
    max_upper_total: int
    #: per box, the sorted distinct points five of a kind can leave in it (plain,
    #: first roll or joker): where a five-of-a-kind bonus may have been paid
    five_kind_scores: tuple[np.ndarray, ...]

    # np.where itself (no wrapper on the hot path); cast: its stubs' first overload is the one-argument form
    select = staticmethod(cast("Callable[[Any, Any, Any], Any]", np.where))

    @staticmethod
    def column(values: np.ndarray, k: int) -> Any:  # an array per game (the batch) or an int (one game)
        """Box ``k``'s entry of per-box values (``(n,)`` or ``(B, n)`` scores): ``values[..., k]``."""
        return values[..., k]

    @staticmethod
    def possibly(cond: Any) -> bool:
        """Whether ``cond`` holds for any game: lets rare rules (jokers) skip work when they cannot apply."""
        return bool(np.any(cond))

    @staticmethod
    def popcount(bits: Any) -> Any:  # int bitmask(s) -> int64 array; OneGameTables: int -> int
        """Number of set bits (filled boxes) of each bitmask."""
        return np.bitwise_count(np.asarray(bits, dtype=np.int64)).astype(np.int64)

    @cached_property
    def one_game(self) -> OneGameTables:
        """These tables for one game at a time (:class:`OneGameTables`, built on first use)."""
        return OneGameTables.of(self)

    # The tables are read-only and shared (compile_rules hands every env of a ruleset the same object): a deep copy
    # of an env (the documented way to snapshot a game) keeps them, and a pickle holds only the rules, compiled
    # again (or found in the cache) when loaded. Copying them cost tens of milliseconds and megabytes per env.
    def __deepcopy__(self, memo: dict[int, Any]) -> RuleTables:
        return self

    def __reduce__(self) -> tuple[Callable[[Rules], RuleTables], tuple[Rules]]:
        return compile_rules, (self.rules,)


@dataclass(frozen=True, eq=False)
class OneGameTables(RuleConstants):
    """:class:`RuleTables` for one game: Python lists per roll or box, dicts per (roll, box).

    The same lookups under the same names and indexing (``t.score[roll, box]``,
    ``t.is_upper[box]``) with plain-int results, and the operations of
    :class:`RuleTables` in their plain-Python form: for one game with int
    arguments this is several times faster than NumPy scalars (the single env's
    hot path). Made by :attr:`RuleTables.one_game`.
    """

    score: dict[tuple[int, int], int]
    score_first_roll: dict[tuple[int, int], int]
    score_joker: dict[tuple[int, int], int]
    score_joker_first_roll: dict[tuple[int, int], int]
    is_upper: list[bool]
    is_lower: list[bool]
    five_kind_roll: list[bool]
    matching_upper_bit: list[int]
    box_bit: list[int]

    @staticmethod
    def select(cond: Any, if_true: Any, if_false: Any) -> Any:
        return if_true if cond else if_false

    @staticmethod
    def column(values: np.ndarray, k: int) -> int:
        return int(values[k])

    @staticmethod
    def possibly(cond: Any) -> bool:
        return bool(cond)

    @staticmethod
    def popcount(bits: int) -> int:
        return bits.bit_count()

    @classmethod
    def of(cls, tables: RuleTables) -> OneGameTables:
        """The one-game form of ``tables``."""

        def by_roll_and_box(table: np.ndarray) -> dict[tuple[int, int], int]:
            return {(r, b): int(v) for (r, b), v in np.ndenumerate(table)}

        constants = {f.name: getattr(tables, f.name) for f in fields(RuleConstants)}
        return cls(
            **constants,
            score=by_roll_and_box(tables.score),
            score_first_roll=by_roll_and_box(tables.score_first_roll),
            score_joker=by_roll_and_box(tables.score_joker),
            score_joker_first_roll=by_roll_and_box(tables.score_joker_first_roll),
            is_upper=[bool(v) for v in tables.is_upper],
            is_lower=[bool(v) for v in tables.is_lower],
            five_kind_roll=[bool(v) for v in tables.five_kind_roll],
            matching_upper_bit=[int(v) for v in tables.matching_upper_bit],
            box_bit=[int(v) for v in tables.box_bit],
        )


#: compiled tables by :func:`_cache_key`, least recently used first
_COMPILED: OrderedDict[tuple[str, ...], RuleTables] = OrderedDict()
_COMPILED_LOCK = threading.Lock()
#: rulesets whose tables are kept (a few hundred KiB each)
COMPILED_CACHE_SIZE = 64


def _cache_key(rules: Rules) -> tuple[str, ...]:
    """What the tables of ``rules`` depend on: its fingerprint (everything that changes play),
    plus the fields outside it that ``tables.rules`` shows (title, description, source)."""
    return (rules.fingerprint, rules.title, rules.description, rules.source)


def compile_rules(rules: Rules) -> RuleTables:
    """The tables of ``rules``, built on first use and then shared.

    Compiling takes a few milliseconds; the result is cached per ruleset
    fingerprint (two loads of the same ruleset share one :class:`RuleTables`),
    for the last :data:`COMPILED_CACHE_SIZE` rulesets.

    Raises:
        RulesError: the rules are inconsistent in a way only the score tables show
            (:func:`check_upper_bonus`), or one of the values of their options is (named, as
            :func:`~dice_poker_env.rules.build_rules` names the option values it checks on load).
    """
    if not isinstance(rules, Rules):
        raise TypeError(f"compile_rules needs a Rules object (dice_poker_env.load_rules), got {rules!r}")
    key = _cache_key(rules)
    with _COMPILED_LOCK:
        tables = _COMPILED.get(key)
        if tables is not None:
            _COMPILED.move_to_end(key)
            return tables
    tables = _build_tables(rules)
    _check_with_options(tables)
    with _COMPILED_LOCK:
        tables = _COMPILED.setdefault(key, tables)
        while len(_COMPILED) > COMPILED_CACHE_SIZE:
            _COMPILED.popitem(last=False)
    return tables


def score(rules: Rules | RuleTables, dice: Sequence[int], box: int | str, *, first_roll: bool = False) -> int:
    """Points ``box`` (name or index) gets for these five dice, outside any joker situation.

    ``first_roll=True`` scores them as the turn's first roll (first-roll doubling).
    Example: ``score(load_rules("yahtzee"), [3, 3, 3, 5, 5], "full_house")`` is 25.

    Raises:
        ValueError: the dice are not five integers 1..6.
        KeyError, IndexError, TypeError: no such box.
    """
    tables = rules if isinstance(rules, RuleTables) else compile_rules(rules)
    table = tables.score_first_roll if first_roll else tables.score
    return int(table[roll_index(dice), tables.rules.box_index(box)])


def _check_with_options(tables: RuleTables) -> None:
    """:func:`check_upper_bonus` of these rules, naming the options that changed them from the ruleset's
    defaults, then of every other value of their options (a value nobody chose yet is checked now, as the
    rules' loading checks what needs no tables)."""
    rules = tables.rules
    prefix = f"{rules.source}: "
    try:
        check_upper_bonus(tables)
    except RulesError as error:
        changed = changed_options(rules)
        if not changed:
            raise
        chosen = ", ".join(f"{name} = {value!r}" for name, value in changed.items())
        raise RulesError(f"{prefix}with option {chosen}: {str(error).removeprefix(prefix)}") from None
    checked = {_upper_bonus_inputs(rules)}
    for name, value, variant in option_variants(rules):
        if _upper_bonus_inputs(variant) in checked:  # (the joker variants of yahtzee: nothing to build)
            continue
        checked.add(_upper_bonus_inputs(variant))
        try:
            check_upper_bonus(_build_tables(variant))
        except RulesError as error:
            raise RulesError(f"{prefix}option {name!r} = {value!r}: {str(error).removeprefix(prefix)}") from None


def _upper_bonus_inputs(rules: Rules) -> tuple[Any, ...]:
    """What :func:`check_upper_bonus` reads of ``rules``: rules equal in these pass or fail it alike."""
    five = rules.five_of_a_kind
    upper = tuple(b for b in rules.boxes if b.section == "upper")
    return (rules.upper_bonus, rules.turns, upper, rules.double_extra, bool(five and five.joker != "none"))


def check_upper_bonus(tables: RuleTables) -> None:
    """The upper-bonus checks that need what the upper boxes can score (the compiled tables).

    ``on_reach`` pays when the upper total first reaches the threshold, so it needs
    upper boxes that never score negative (a reached total is final) and a
    threshold of at least 1 (0 or less would be met before any play, and such a
    bonus could never be paid in a step). ``on_complete`` pays when the last upper
    box is filled. Either way the threshold must be a total the upper boxes can
    reach: above it the bonus is never paid, below the least total always.

    Raises:
        RulesError: naming the rules' source and the field.
    """
    rules = tables.rules
    bonus = rules.upper_bonus
    if bonus is None:
        return
    lowest, highest = tables.min_upper_total, tables.max_upper_total
    field_path = f"{rules.source}: field 'upper_bonus"
    n_upper = int(tables.is_upper.sum())
    if rules.turns < n_upper:  # a game fills only `turns` boxes: the best upper boxes, at most
        if bonus.timing == "on_complete":
            raise RulesError(
                f"{field_path}.timing': an on_complete bonus is paid when the last upper box is filled, and "
                f"turns = {rules.turns} fill at most {rules.turns} of the {n_upper} upper boxes"
            )
        best = sorted(
            (
                max(int(t[:, k].max()) for t in (tables.score, tables.score_first_roll, tables.score_joker_first_roll))
                for k in np.flatnonzero(tables.is_upper)
            ),
            reverse=True,
        )
        highest = min(highest, sum(max(points, 0) for points in best[: rules.turns]))
    if bonus.timing == "on_reach":
        if lowest < 0:
            raise RulesError(
                f"{field_path}.timing': expected 'on_complete' (upper boxes can score negative, "
                "so a reached total is not final), got 'on_reach'"
            )
        low, why = 1, f"an on_reach bonus needs a threshold the upper total (0..{highest}) reaches during play"
    else:
        low, why = lowest, f"the upper boxes total {lowest}..{highest}"
    if not low <= bonus.threshold <= highest:
        raise RulesError(
            f"{field_path}.threshold': expected an integer in {low}..{highest} ({why}), got {bonus.threshold}"
        )


def _build_tables(rules: Rules) -> RuleTables:
    """Evaluate the scoring primitives of every box over the 252 rolls (see :func:`compile_rules`)."""
    counts = ROLL_COUNTS.astype(np.int64)
    score = np.stack([box_score(b, counts) for b in rules.boxes], axis=1).astype(np.int64)
    first = np.stack([first_roll_score(b, counts, rules.double_extra) for b in rules.boxes], axis=1).astype(np.int64)
    joker = np.stack([joker_score(b, counts) for b in rules.boxes], axis=1).astype(np.int64)
    joker_first = np.stack([joker_first_roll_score(b, counts, rules.double_extra) for b in rules.boxes], axis=1).astype(
        np.int64
    )
    is_upper = np.array([b.section == "upper" for b in rules.boxes])
    bits = 1 << np.arange(rules.n_boxes)
    upper_bits = int(bits[is_upper].sum())
    all_bits = int(bits.sum())

    five_kind_roll = counts.max(axis=1) == 5
    matching_upper = np.full(N_ROLLS, -1, dtype=np.int64)
    for k, box in enumerate(rules.boxes):
        if box.section == "upper" and box.kind in ("face_sum", "relative_face"):
            face_rolls = five_kind_roll & (counts[:, box.face - 1] == 5)
            matching_upper[face_rolls & (matching_upper < 0)] = k

    five = rules.five_of_a_kind
    bonus = rules.upper_bonus
    reachable = [score, first] + ([joker, joker_first] if five and five.joker != "none" else [])
    # (return_index: numpy's plain unique imports numpy.ma on first use, 30 ms of every solve)
    possible = tuple(
        np.unique(np.concatenate([t[:, k] for t in reachable] + [[0]]), return_index=True)[0]
        for k in range(rules.n_boxes)
    )
    min_box = int(min(p.min() for p in possible))
    max_box = int(max(p.max() for p in possible))
    max_total = (
        sum(int(p.max()) for p in possible) + (bonus.points if bonus else 0) + (five.bonus * rules.turns if five else 0)
    )
    min_total = sum(min(int(p.min()), 0) for p in possible)
    upper_possible = [p for p, upper in zip(possible, is_upper) if upper]
    five_rows = [t[five_kind_roll] for t in reachable]
    five_scores = tuple(np.unique(np.concatenate([t[:, k] for t in five_rows])) for k in range(rules.n_boxes))
    return RuleTables(
        rules=rules,
        n_boxes=rules.n_boxes,
        n_actions=N_KEEP_ACTIONS + rules.n_boxes,
        turns=rules.turns,
        score=score,
        score_first_roll=first,
        score_joker=joker,
        score_joker_first_roll=joker_first,
        is_upper=is_upper,
        is_lower=~is_upper,
        upper_bits=upper_bits,
        lower_bits=all_bits & ~upper_bits,
        all_bits=all_bits,
        five_kind_roll=five_kind_roll,
        matching_upper_box=matching_upper,
        matching_upper_bit=np.where(matching_upper >= 0, 1 << np.maximum(matching_upper, 0), 0),
        box_bit=(1 << np.arange(rules.n_boxes)).astype(np.int64),
        five_kind_box=rules.box_index(five.box) if five else -1,
        five_kind_bit=1 << rules.box_index(five.box) if five else 0,
        five_kind_column=rules.box_index(five.box) if five else 0,
        five_kind_bonus=five.bonus if five else 0,
        joker=_JOKER_CODES[five.joker] if five else JOKER_NONE,
        joker_needs_full_box=five.joker_needs_full_box if five else False,
        sections_in_order=rules.sections_in_order,
        has_upper_bonus=bonus is not None,
        upper_bonus_threshold=bonus.threshold if bonus else 0,
        upper_bonus_points=bonus.points if bonus else 0,
        upper_bonus_on_complete=bool(bonus and bonus.timing == "on_complete"),
        possible_scores=possible,
        min_box_score=min_box,
        max_box_score=max_box,
        min_total=min_total,
        max_total=max_total,
        min_upper_total=sum(int(p.min()) for p in upper_possible),  # possible scores include 0 (open)
        max_upper_total=sum(int(p.max()) for p in upper_possible),
        five_kind_scores=five_scores,
    )
