"""``dice-poker rules``: what a ruleset is, box by box, checked as the games and the solver will read it.

Without a ruleset, the shipped ones, a line each. With one (a name or a rules file, and ``-o`` options), the
file is read, built and compiled as the env and the solver do it (every option value's upper bonus checked too:
a file with an error is the same one-line error naming the field, status 2) and shown: each box with what it
scores and its range of points, the upper bonus, five of a kind and the joker, the options with their values,
the fingerprint that solver caches and results record, and what solving it exactly would cost (nothing is
solved). ``--json`` prints the same as one object.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from dice_poker_env.cli.rules_arguments import add_rules_arguments, parse_rules_options

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from dice_poker_env.rules import Box, Rules

HELP = "show a ruleset box by box (what each scores, bonus, joker, options) after checking it; the shipped ones"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check a ruleset as the env and the solver read it and show it box by box; without one, list the shipped "
        "rulesets."
    )
    add_rules_arguments(parser, optional="default: list the shipped ones")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def box_text(box: Box) -> str:
    """What a box scores, in words (``the sum of the 3s``; ``a full house: 25 points``)."""
    if box.kind == "face_sum":
        return f"the sum of the {box.face}s"
    if box.kind == "relative_face":
        return f"(the number of {box.face}s - {box.base}) x {box.face}, below 0 with fewer than {box.base}"
    if box.kind == "chance":
        what = "any dice: the sum of all five"
    else:
        pattern = {
            "n_of_a_kind": "a pair" if box.n == 2 else "five of a kind" if box.n == 5 else f"{box.n} of a kind",
            "two_pairs": "two pairs",
            "full_house": "a full house" + (" (five of a kind counts)" if box.allow_five_of_a_kind else ""),
            "straight": "a straight, " + " or ".join("".join(map(str, faces)) for faces in box.sets),
        }[box.kind]
        points = (
            f"{box.points} points"
            if isinstance(box.points, int)
            else "the sum of all five dice"
            if box.points == "sum"
            else "the sum of the dice that form it"
        )
        what = f"{pattern}: {points}" + (f" + {box.extra}" if box.extra else "")
    return what + (", doubled when scored from the turn's first roll" if box.first_roll_double else "")


def describe(rules: Rules) -> dict[str, Any]:
    """The ruleset as :func:`run` shows it (``--json``), compiled first: a problem is a ``RulesError``."""
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.rules import ruleset_options
    from dice_poker_env.solver.budget import estimate

    tables = compile_rules(rules)
    boxes = []
    for k, box in enumerate(rules.boxes):
        possible = tables.possible_scores[k]
        boxes.append(
            {
                "name": box.name,
                "section": box.section,
                "kind": box.kind,
                "scores": box_text(box),
                "min": int(possible.min()),
                "max": int(possible.max()),
            }
        )
    bonus = rules.upper_bonus
    five = rules.five_of_a_kind
    declared = ruleset_options(rules)
    cost = estimate(tables)
    return {
        "rules": rules.name,
        "title": rules.title,
        "source": rules.source,
        "fingerprint": rules.fingerprint,
        "turns": rules.turns,
        "sections_in_order": rules.sections_in_order,
        "double_extra": rules.double_extra,
        "result": rules.result,
        "boxes": boxes,
        "upper_bonus": None
        if bonus is None
        else {"threshold": bonus.threshold, "points": bonus.points, "timing": bonus.timing},
        "five_of_a_kind": None
        if five is None
        else {
            "box": five.box,
            "bonus": five.bonus,
            "joker": five.joker,
            "joker_needs_full_box": five.joker_needs_full_box,
        },
        "options": {
            name: {"value": rules.options.get(name, option["default"]), **option} for name, option in declared.items()
        },
        "solve_estimate": {"states": cost.states, "memory_bytes": cost.memory_bytes, "seconds": cost.seconds},
        "solve_estimate_text": cost.describe(),
    }


def text(described: dict[str, Any]) -> str:
    """The terminal's view of :func:`describe`."""
    d = described
    lines = [
        f"{d['title']} ({d['rules']}), from {d['source']}: {len(d['boxes'])} boxes, {d['turns']} turns, "
        f"fingerprint {d['fingerprint']}",
        "",
    ]
    width = max(len(box["name"]) for box in d["boxes"])
    for box in d["boxes"]:
        lines.append(
            f"  {box['name']:<{width}}  {box['section']:<5}  {box['min']:>4}..{box['max']:<4}  {box['scores']}"
        )
    lines.append("")
    if d["turns"] < len(d["boxes"]):
        lines.append(f"a game is {d['turns']} turns: {len(d['boxes']) - d['turns']} box(es) stay open")
    if d["sections_in_order"]:
        lines.append("the upper boxes must all be filled before any lower box")
    if d["double_extra"]:
        lines.append("first-roll doubling doubles a box's extra points too")
    if d["result"] == "relative":
        lines.append("at a table, a player's result is their total minus the table's mean (result = relative)")
    bonus = d["upper_bonus"]
    if bonus is not None:
        when = "as soon as it is reached" if bonus["timing"] == "on_reach" else "when the last upper box is filled"
        lines.append(f"upper bonus: +{bonus['points']} if the upper boxes total {bonus['threshold']} or more, {when}")
    five = d["five_of_a_kind"]
    if five is not None:
        each = f"each further five of a kind scores +{five['bonus']}" if five["bonus"] else "no further bonus"
        joker = f"joker: {five['joker']}" + (
            " (only while that box holds its points)" if five["joker_needs_full_box"] else ""
        )
        lines.append(f"five of a kind is box {five['box']!r}: {each}; {joker}")
    for name, option in d["options"].items():
        values = ", ".join(map(str, option["values"]))
        lines.append(
            f"option {name} = {option['value']!r} (of {values}; default {option['default']!r}): {option['doc']}"
        )
    lines.append(f"solving it exactly: {d['solve_estimate_text']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from dice_poker_env.rules import RULESET_NAMES, load_rules

    if args.rules is None:
        if args.option:
            raise ValueError("--option needs a ruleset: dice-poker rules RULESET_OR_FILE -o NAME=VALUE")
        shipped = {name: load_rules(name) for name in RULESET_NAMES}
        if args.json:
            print(json.dumps({name: rules.describe() for name, rules in shipped.items()}))
        else:
            print("\n".join(rules.describe() for rules in shipped.values()))
            print("dice-poker rules NAME (or a rules file, docs/rules-format.md) shows one box by box")
        return 0
    described = describe(load_rules(args.rules, **parse_rules_options(args.option)))
    print(json.dumps(described) if args.json else text(described))
    return 0
