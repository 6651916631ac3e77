"""A ruleset is data: boxes built from scoring primitives, bonuses and switches.

:class:`Rules` is a frozen description of one game (the shipped rulesets are TOML
files in ``rules/data``; users write their own in the same format, see
``docs/rules-format.md``). It holds no tables and imports nothing above it:
:func:`dice_poker_env.engine.tables.compile_rules` turns it into the NumPy tables
every front end uses (and checks what needs them, such as an upper-bonus
threshold the upper boxes can reach), so this module is only about reading,
validating and naming a ruleset.

Size: one format's reader (the Rules type, every field's check with its one-line error, the options and
their patches, each value checked as the file loads), kept whole so that every rule of the format is read in
one place.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

#: Box kinds and the fields each accepts (beyond ``name``, ``kind``, ``section``).
BOX_KINDS: dict[str, set[str]] = {
    "face_sum": {"face"},  # f * c[f]
    "relative_face": {"face", "base"},  # (c[f] - base) * f, any count, may be negative
    "n_of_a_kind": {"n", "points", "extra", "first_roll_double"},
    "two_pairs": {"points", "extra", "first_roll_double"},
    "full_house": {"points", "extra", "first_roll_double", "allow_five_of_a_kind"},
    "straight": {"sets", "points", "extra", "first_roll_double"},
    "chance": {"first_roll_double"},
}
#: ``points`` may be a fixed integer or one of these words.
POINTS_WORDS = ("sum", "matching")
SECTIONS = ("upper", "lower")
JOKER_MODES = ("none", "forced", "free")
BONUS_TIMINGS = ("on_reach", "on_complete")
RESULT_MODES = ("highest", "relative")
#: the optional tables of a ruleset's top level (its other fields are read one by one)
TOP_LEVEL_TABLES = ("upper_bonus", "five_of_a_kind", "options")
#: Every points-like integer of a ruleset (fixed points, ``extra``, ``base``, bonus
#: points) lies in ``-POINTS_LIMIT..POINTS_LIMIT`` (the upper-bonus threshold, a
#: total, lies within what the upper boxes can total). With at most 26 boxes no
#: box holds more than ``6 * (POINTS_LIMIT + 5)`` points in magnitude and no game
#: total exceeds about ``2 * 10**8``: far inside int32, float64 holds every total
#: exactly, and the solver's float32 per-turn tables keep their usual relative
#: precision (see docs/rules-format.md, "Supported range").
POINTS_LIMIT = 1_000_000


class RulesError(ValueError):
    """A rules file or object is malformed; the message names the source and the field."""


@dataclass(frozen=True)
class Box:
    """One scorecard box: a scoring primitive plus its parameters.

    Attributes:
        name: snake_case name, as in ``rules.box_names``.
        kind: one of :data:`BOX_KINDS`.
        section: ``"upper"`` or ``"lower"`` (upper bonus and joker placement use it).
        face: the face of ``face_sum`` / ``relative_face`` boxes.
        base: ``relative_face`` subtracts this many dice before multiplying by the face.
        n: how many equal dice ``n_of_a_kind`` needs.
        points: fixed points (int), ``"sum"`` (all five dice) or ``"matching"``
            (the dice forming the combination, best choice).
        extra: points added when the pattern matches (never doubled unless the
            rules say ``double_extra``).
        sets: face sets for ``straight``; the box matches if the dice contain any.
        allow_five_of_a_kind: whether five equal dice count as a full house.
        first_roll_double: whether the box doubles when scored from the turn's first roll.
    """

    name: str
    kind: str
    section: str
    face: int = 0
    base: int = 0
    n: int = 0
    points: int | str = "sum"
    extra: int = 0
    sets: tuple[tuple[int, ...], ...] = ()
    allow_five_of_a_kind: bool = False
    first_roll_double: bool = False


@dataclass(frozen=True)
class UpperBonus:
    """Points paid when the upper boxes total at least ``threshold``.

    ``timing="on_reach"`` pays in the step where the total reaches the threshold
    (only valid when upper boxes never score negative); ``"on_complete"`` pays in
    the step that fills the last upper box.
    """

    threshold: int
    points: int
    timing: str = "on_reach"


@dataclass(frozen=True)
class FiveOfAKind:
    """Extra bonus and joker for repeated five of a kind.

    Attributes:
        box: the box that records five of a kind (e.g. ``"yahtzee"``).
        bonus: points paid for each further five of a kind while ``box`` holds its
            full value (0: no bonus).
        joker: ``"none"``, ``"forced"`` (matching upper box if open, else any open lower
            box at full value, else any open upper box) or ``"free"`` (any open box;
            fixed-value lower boxes score full only if the matching upper box is filled).
        joker_needs_full_box: the joker applies only while ``box`` holds its full value
            (dice_poker); otherwise as soon as ``box`` is filled (yahtzee).
    """

    box: str
    bonus: int = 0
    joker: str = "none"
    joker_needs_full_box: bool = False


@dataclass(frozen=True)
class Option:
    """A documented switch of a ruleset; each value patches fields of the rules."""

    name: str
    default: Any
    doc: str
    values: Mapping[Any, Mapping[str, Any]]


@dataclass(frozen=True, eq=False)
class Rules:
    """A complete, validated ruleset. Build with :func:`dice_poker_env.load_rules`."""

    name: str
    title: str
    boxes: tuple[Box, ...]
    turns: int
    upper_bonus: UpperBonus | None = None
    five_of_a_kind: FiveOfAKind | None = None
    sections_in_order: bool = False
    double_extra: bool = False
    result: str = "highest"
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<dict>"
    spec: Mapping[str, Any] = field(default_factory=dict, repr=False)
    raw_spec: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def box_names(self) -> tuple[str, ...]:
        """Box names in scorecard order (the order of score actions)."""
        return tuple(b.name for b in self.boxes)

    @property
    def n_boxes(self) -> int:
        return len(self.boxes)

    def box_index(self, box: int | str) -> int:
        """Index of a box given by name or index, with a clear error otherwise."""
        if isinstance(box, str):
            try:
                return self.box_names.index(box)
            except ValueError:
                raise KeyError(f"{self.name} has no box {box!r}; boxes: {', '.join(self.box_names)}") from None
        if isinstance(box, bool) or not isinstance(box, (int, np.integer)):
            raise TypeError(f"a box is a name or an integer index, got {box!r}")
        index = int(box)
        if not 0 <= index < self.n_boxes:
            raise IndexError(f"box index {index} out of range 0..{self.n_boxes - 1} for {self.name}")
        return index

    @cached_property
    def fingerprint(self) -> str:
        """A hash of everything that changes play (the solver's cache key)."""
        play = {k: v for k, v in self.spec.items() if k not in ("title", "description")}
        if self.five_of_a_kind and self.five_of_a_kind.joker != "none" and any(b.first_roll_double for b in self.boxes):
            # a joker from the first roll is doubled since 2026-12 (it was not): such rulesets' solutions cached before
            # then must not be found under the same key. Every other ruleset keeps its fingerprint.
            play["joker_first_roll_doubled"] = True
        payload = json.dumps(play, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rules) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any], str, dict[str, Any]]]:
        # Pickle as the spec: the ruleset is rebuilt from it on the other side.
        return (_rules_from_spec, (dict(self.raw_spec), self.source, dict(self.options)))

    def label(self) -> str:
        """The ruleset's name with its options, as the solver's objects show it in their ``repr``:
        ``'yahtzee', joker='free'`` (two solutions of one ruleset under other options look different)."""
        return ", ".join([repr(self.name), *(f"{k}={v!r}" for k, v in self.options.items())])

    def describe(self) -> str:
        """A short human-readable summary (used by ``--help`` texts and the README)."""
        parts = [f"{self.title} ({self.name}): {self.n_boxes} boxes, {self.turns} turns"]
        if self.upper_bonus:
            parts.append(f"upper bonus +{self.upper_bonus.points} at {self.upper_bonus.threshold}")
        if self.five_of_a_kind and self.five_of_a_kind.joker != "none":
            parts.append(f"joker {self.five_of_a_kind.joker}")
        if self.options:
            parts.append("options " + ", ".join(f"{k}={v!r}" for k, v in self.options.items()))
        return "; ".join(parts)


def _rules_from_spec(raw_spec: dict[str, Any], source: str, options: dict[str, Any]) -> Rules:
    return build_rules(raw_spec, source=source, chosen_options=options)


# --------------------------------------------------------------------------- parsing


class _Reader:
    """Reads fields of one table of the spec, naming source and field path in errors."""

    def __init__(self, data: Any, source: str, path: str):
        if not isinstance(data, Mapping):
            raise RulesError(f"{source}: {path or 'the rules'} must be a table/mapping, got {type(data).__name__}")
        self.data, self.source, self.path = data, source, path
        self.used: set[str] = set()

    def where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, expected: str, got: Any = None) -> RulesError:
        tail = f", got {got!r}" if got is not None else ""
        return RulesError(f"{self.source}: field '{self.where(key)}': expected {expected}{tail}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., *, expected: str | None = None) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is ...:
                close = difflib.get_close_matches(key, [k for k in self.data if isinstance(k, str)], n=1, cutoff=0.75)
                typo = f" (is '{self.where(close[0])}' a misspelling of it?)" if close else ""
                raise RulesError(f"{self.source}: missing required field '{self.where(key)}'{typo}")
            return default
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(key, expected or " or ".join(k.__name__ for k in kinds), value)
        if not isinstance(value, kinds):
            raise self.fail(key, expected or " or ".join(k.__name__ for k in kinds), value)
        return value

    def points(self, key: str, default: Any = ..., *, low: int = -POINTS_LIMIT) -> int:
        """An integer points field, within ``low..POINTS_LIMIT`` (the supported range)."""
        value: int = self.get(key, int, default)
        if not low <= value <= POINTS_LIMIT:
            raise self.fail(key, f"an integer in {low}..{POINTS_LIMIT} (the supported range)", value)
        return value

    def choice(self, key: str, choices: Sequence[str], default: Any = ...) -> str:
        value: str = self.get(key, str, default, expected=f"one of {', '.join(choices)}")
        if value not in choices:
            raise self.fail(key, f"one of {', '.join(choices)}", value)
        return value

    def finish(self, *, known: Sequence[str] = ()) -> None:
        """Refuse a field no ``get`` read; ``known`` adds fields this table may hold that were not read here."""
        accepted = self.used | set(known)
        unknown = sorted(set(self.data) - accepted, key=str)
        if unknown:
            close = difflib.get_close_matches(str(unknown[0]), sorted(accepted), n=1, cutoff=0.75)
            typo = f"; is it a misspelling of '{self.where(close[0])}'?" if close else ""
            raise RulesError(
                f"{self.source}: unknown field '{self.where(unknown[0])}' (known: {', '.join(sorted(accepted))}){typo}"
            )


def _parse_box(data: Any, source: str, index: int) -> Box:
    r = _Reader(data, source, f"boxes[{index}]")
    name = r.get("name", str)
    if not name.isidentifier() or name != name.lower():
        raise r.fail("name", "a snake_case identifier", name)
    kind = r.choice("kind", tuple(BOX_KINDS))
    default_section = "upper" if kind in ("face_sum", "relative_face") else "lower"
    section = r.choice("section", SECTIONS, default_section)
    allowed = BOX_KINDS[kind]
    fields: dict[str, Any] = {}
    if "face" in allowed:
        fields["face"] = r.get("face", int)
        if not 1 <= fields["face"] <= 6:
            raise r.fail("face", "an integer 1..6", fields["face"])
    if "base" in allowed:
        fields["base"] = r.points("base", 0)
    if "n" in allowed:
        fields["n"] = r.get("n", int)
        if not 2 <= fields["n"] <= 5:
            raise r.fail("n", "an integer 2..5", fields["n"])
    if "points" in allowed:
        points = r.get("points", (int, str), "sum", expected="an integer or one of 'sum', 'matching'")
        if isinstance(points, str) and points not in POINTS_WORDS:
            raise r.fail("points", "an integer or one of 'sum', 'matching'", points)
        if isinstance(points, int):
            points = r.points("points")
        fields["points"] = points
    if "extra" in allowed:
        fields["extra"] = r.points("extra", 0)
    if "sets" in allowed:
        sets = r.get("sets", list, expected="a list of face lists, e.g. [[1,2,3,4,5]]")
        if not sets or not all(
            isinstance(s, list)
            and s
            and all(isinstance(f, int) and not isinstance(f, bool) and 1 <= f <= 6 for f in s)
            and len(set(s)) == len(s) <= 5
            for s in sets
        ):
            raise r.fail("sets", "a non-empty list of lists of distinct faces 1..6", sets)
        fields["sets"] = tuple(tuple(sorted(s)) for s in sets)
    if "allow_five_of_a_kind" in allowed:
        fields["allow_five_of_a_kind"] = r.get("allow_five_of_a_kind", bool, False)
    if "first_roll_double" in allowed:
        fields["first_roll_double"] = r.get("first_roll_double", bool, False)
    r.finish()
    return Box(name=name, kind=kind, section=section, **fields)


def _set_path(spec: dict[str, Any], dotted: str, value: Any, source: str, option: str) -> None:
    """Apply an option's patch ``"a.b.c" = value`` (list items by box name)."""
    node: Any = spec
    keys = dotted.split(".")
    for depth, key in enumerate(keys[:-1]):
        if isinstance(node, list):
            named = all(isinstance(item, Mapping) and "name" in item for item in node)
            matches = [item for item in node if isinstance(item, Mapping) and item.get("name") == key]
            if not named:
                where = ".".join(keys[:depth])
                raise RulesError(
                    f"{source}: option '{option}' patches '{dotted}', but '{where}' is a list "
                    "(only the items of the boxes list are patched, by box name)"
                )
            if not matches:
                raise RulesError(f"{source}: option '{option}' patches '{dotted}', but there is no box '{key}'")
            node = matches[0]
        else:
            if key not in node:
                node[key] = {}
            elif not isinstance(node[key], (dict, list)):
                where = ".".join(keys[: depth + 1])
                raise RulesError(f"{source}: option '{option}' patches '{dotted}', but '{where}' is not a table")
            node = node[key]
    if not isinstance(node, dict):
        where = ".".join(keys[:-1])
        raise RulesError(
            f"{source}: option '{option}' patches '{dotted}', but '{where}' is a list "
            "(a patch sets a field of a table or of a box)"
        )
    node[keys[-1]] = value


def _parse_options(spec: dict[str, Any], source: str) -> dict[str, Option]:
    options: dict[str, Option] = {}
    raw = spec.get("options", {})
    if not isinstance(raw, Mapping):
        raise RulesError(f"{source}: field 'options': expected a table of options")
    for name, body in raw.items():
        r = _Reader(body, source, f"options.{name}")
        default = r.get("default", (bool, int, str))
        doc = r.get("doc", str, "")
        values = r.get("values", Mapping, expected="a table mapping each value to its field patches")
        parsed: dict[Any, Mapping[str, Any]] = {}
        for key, patch in values.items():
            if not isinstance(patch, Mapping):
                raise r.fail(f"values.{key}", "a table of 'field.path' = value patches", patch)
            parsed[_option_key(key, default)] = dict(patch)
        if default not in parsed:
            raise r.fail("default", f"one of the listed values {list(parsed)}", default)
        r.finish()
        options[name] = Option(name=name, default=default, doc=doc, values=parsed)
    return options


def _option_key(key: Any, default: Any) -> Any:
    """TOML table keys are strings; convert them back to the type of the default."""
    if isinstance(default, bool) and isinstance(key, str):
        if key.lower() in ("true", "false"):
            return key.lower() == "true"
    if isinstance(default, int) and not isinstance(default, bool) and isinstance(key, str):
        try:
            return int(key)
        except ValueError:
            return key
    return key


def resolve_options(
    spec: Mapping[str, Any], source: str, chosen: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply the chosen option values (defaults for the rest) to a copy of the spec.

    Returns the patched spec (without its ``options`` table) and the full option
    assignment. Unknown options and values raise :class:`RulesError` listing the
    valid ones.
    """
    patched = copy.deepcopy(dict(spec))
    options = _parse_options(patched, source)
    unknown = sorted(set(chosen) - set(options))
    if unknown:
        known = ", ".join(f"{o.name} ({', '.join(map(repr, o.values))})" for o in options.values()) or "none"
        raise RulesError(
            f"{source}: unknown rules option {unknown[0]!r}; options of this ruleset: {known} (an env's or agent's "
            "keyword it does not take is read as a rules option: check the keyword)"
        )
    assignment: dict[str, Any] = {}
    for option in options.values():
        value = chosen.get(option.name, option.default)
        value = _option_key(value, option.default) if isinstance(value, str) else value
        if value not in option.values:
            raise RulesError(f"{source}: option {option.name!r} must be one of {list(option.values)}, got {value!r}")
        assignment[option.name] = value
        for dotted, patch in option.values[value].items():
            _set_path(patched, dotted, patch, source, option.name)
    patched.pop("options", None)
    return patched, assignment


def build_rules(
    spec: Mapping[str, Any],
    *,
    source: str = "<dict>",
    chosen_options: Mapping[str, Any] | None = None,
) -> Rules:
    """Validate a rules spec (the parsed TOML/YAML mapping) and build :class:`Rules`.

    ``chosen_options`` switches the options the spec declares; the others keep
    their defaults. What needs the score tables (an upper-bonus threshold that
    the upper boxes can total) is checked when the rules are compiled, by
    :func:`dice_poker_env.engine.tables.compile_rules`, which every env, the
    solver and every agent call on construction.
    """
    if not isinstance(spec, Mapping):
        raise RulesError(f"{source}: the rules must be a table/mapping, got {type(spec).__name__}")
    resolved, assignment = resolve_options(spec, source, chosen_options or {})
    try:  # the rules chosen first: an error of the file itself is not one option value's
        rules = _build(spec, resolved, source, assignment)
    except RulesError as error:
        chosen = {k: v for k, v in assignment.items() if (chosen_options or {}).get(k) is not None}
        if not chosen:
            raise
        _build(spec, *_defaults(spec, source))  # a file broken with its defaults too: that error, naming no option
        detail = str(error).removeprefix(f"{source}: ")
        raise RulesError(
            f"{source}: with option {', '.join(f'{k} = {v!r}' for k, v in chosen.items())}: {detail}"
        ) from None
    for name, value in _other_option_values(spec, source, assignment):  # each value's patches, before it is chosen
        try:
            variant, variant_assignment = resolve_options(spec, source, {**assignment, name: value})
            _build(spec, variant, source, variant_assignment)
        except RulesError as error:
            detail = str(error).removeprefix(f"{source}: ")
            raise RulesError(f"{source}: option {name!r} = {value!r}: {detail}") from None
    return rules


def _defaults(spec: Mapping[str, Any], source: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """``_build``'s arguments after ``spec`` for the rules with every option at its default."""
    resolved, assignment = resolve_options(spec, source, {})
    return resolved, source, assignment


def option_variants(rules: Rules) -> list[tuple[str, Any, Rules]]:
    """``(option, value, rules with it)`` for every value of every option of ``rules`` other than the one it has.

    :func:`build_rules` checks every value's patches as the rules load; the checks that need the score tables
    (:func:`dice_poker_env.engine.tables.compile_rules`) run on these variants.
    """
    spec, source = rules.raw_spec, rules.source
    variants = []
    for name, value in _other_option_values(spec, source, rules.options):
        # built as build_rules builds the chosen rules, without checking every other value again for each
        resolved, assignment = resolve_options(spec, source, {**rules.options, name: value})
        variants.append((name, value, _build(spec, resolved, source, assignment)))
    return variants


def changed_options(rules: Rules) -> dict[str, Any]:
    """The options of ``rules`` whose value is not the ruleset's default."""
    defaults = {o.name: o.default for o in _parse_options(copy.deepcopy(dict(rules.raw_spec)), rules.source).values()}
    return {name: value for name, value in rules.options.items() if defaults.get(name) != value}


def _other_option_values(spec: Mapping[str, Any], source: str, assignment: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Every ``(option, value)`` of the spec other than the one ``assignment`` chose."""
    options = _parse_options(copy.deepcopy(dict(spec)), source)
    return [(o.name, v) for o in options.values() for v in o.values if v != assignment.get(o.name)]


def _build(spec: Mapping[str, Any], resolved: dict[str, Any], source: str, assignment: dict[str, Any]) -> Rules:
    """:func:`build_rules` of ``spec`` with its options applied (``resolved``; ``assignment`` records them)."""
    r = _Reader(resolved, source, "")
    name = r.get("name", str)
    title = r.get("title", str, name)
    description = r.get("description", str, "")
    raw_boxes = r.get("boxes", list, expected="a list of box tables")
    if not raw_boxes:
        raise r.fail("boxes", "at least one box", raw_boxes)
    if len(raw_boxes) > 26:
        raise r.fail("boxes", "at most 26 boxes", len(raw_boxes))
    boxes = tuple(_parse_box(b, source, i) for i, b in enumerate(raw_boxes))
    names = [b.name for b in boxes]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise RulesError(f"{source}: field 'boxes': box name {duplicate!r} appears twice")
    turns = r.get("turns", int, len(boxes))
    if not 1 <= turns <= len(boxes):
        raise r.fail("turns", f"an integer 1..{len(boxes)} (number of boxes)", turns)
    sections_in_order = r.get("sections_in_order", bool, False)
    double_extra = r.get("double_extra", bool, False)
    result = r.choice("result", RESULT_MODES, "highest")

    upper_bonus = None
    if "upper_bonus" in resolved:
        u = _Reader(r.get("upper_bonus", Mapping), source, "upper_bonus")
        upper_bonus = UpperBonus(
            threshold=u.get("threshold", int),  # a total: checked against what the upper boxes total below
            points=u.points("points", low=0),
            timing=u.choice("timing", BONUS_TIMINGS, "on_reach"),
        )
        u.finish()
        upper = [b for b in boxes if b.section == "upper"]
        if not upper:
            raise RulesError(f"{source}: field 'upper_bonus': the rules have no upper boxes")

    five = None
    if "five_of_a_kind" in resolved:
        f = _Reader(r.get("five_of_a_kind", Mapping), source, "five_of_a_kind")
        five = FiveOfAKind(
            box=f.get("box", str),
            bonus=f.points("bonus", 0, low=0),
            joker=f.choice("joker", JOKER_MODES, "none"),
            joker_needs_full_box=f.get("joker_needs_full_box", bool, False),
        )
        f.finish()
        if five.joker_needs_full_box and five.joker == "none":  # (it was ignored: a rule that does nothing)
            raise RulesError(
                f"{source}: field 'five_of_a_kind.joker_needs_full_box': a condition of the joker, but the rules "
                "have no joker (joker = 'none'): drop it, or set joker to 'forced' or 'free'"
            )
        if five.box not in names:
            raise f.fail("box", f"the name of a box ({', '.join(names)})", five.box)
        target = boxes[names.index(five.box)]
        if not (target.kind == "n_of_a_kind" and target.n == 5):
            raise f.fail("box", "a box of kind n_of_a_kind with n = 5", five.box)
    r.finish(known=TOP_LEVEL_TABLES)  # (read above only where present; the options are applied before)
    rules = Rules(
        name=name,
        title=title,
        boxes=boxes,
        turns=turns,
        upper_bonus=upper_bonus,
        five_of_a_kind=five,
        sections_in_order=sections_in_order,
        double_extra=double_extra,
        result=result,
        description=description,
        options=assignment,
        source=source,
        spec=resolved,
        raw_spec=copy.deepcopy(dict(spec)),
    )
    return rules
