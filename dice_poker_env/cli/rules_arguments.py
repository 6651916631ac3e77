"""The ruleset arguments every ``dice-poker`` command shares: one parser for rules options.

``RULESET_OR_FILE`` plus repeatable ``--option NAME=VALUE`` (``-o``). The values
stay text: the ruleset converts each to its option's type (``turns=13`` becomes
the integer 13, ``upper_bonus_strict=true`` the boolean), and refuses unknown
options and values with an error naming them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from dice_poker_env.rules import Rules

RULESET_HELP = "ruleset name (yacht, dice_poker, school_poker, yahtzee, yatzy) or a rules file"


def add_rules_arguments(parser: argparse.ArgumentParser, optional: str | None = None) -> None:
    """Add ``RULESET_OR_FILE`` (``args.rules``) and ``--option/-o NAME=VALUE`` (``args.option``); ``optional``: the
    ruleset may be left out (``args.rules`` is then ``None``), this text saying what that does."""
    if optional is None:
        parser.add_argument("rules", metavar="RULESET_OR_FILE", help=RULESET_HELP)
    else:
        parser.add_argument("rules", nargs="?", metavar="RULESET_OR_FILE", help=f"{RULESET_HELP} ({optional})")
    parser.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a rules option, e.g. joker=free (repeatable)",
    )


def parse_rules_options(pairs: list[str] | None) -> dict[str, str]:
    """``["joker=free", "turns=13"]`` -> ``{"joker": "free", "turns": "13"}``.

    Raises:
        ValueError: an item is not ``NAME=VALUE``, or an option is given twice with two values (which one was
            meant?); twice with the same value is the same option.
    """
    options: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--option expects NAME=VALUE, got {pair!r}")
        if name in options and options[name] != value.strip():
            raise ValueError(f"--option {name} is given twice: {name}={options[name]} and {name}={value.strip()}")
        options[name] = value.strip()
    return options


def load_rules_from(args: argparse.Namespace) -> Rules:
    """The ruleset of ``args.rules`` with the options of ``args.option``.

    Raises:
        ValueError: a malformed option (see :func:`parse_rules_options`), or a
            :class:`~dice_poker_env.rules.RulesError` (unknown ruleset, option or value).
    """
    from dice_poker_env.rules import load_rules

    return load_rules(args.rules, **parse_rules_options(args.option))
