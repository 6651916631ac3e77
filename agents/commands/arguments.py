"""Argument types for ``argparse`` that check a number's range as they parse it.

``parser.add_argument("--games", type=at_least(1))`` refuses ``--games 0`` while parsing, with
argparse's one-line usage error and status 2 (``error: argument --games: must be at least 1, got 0``),
before any work starts; a valid value comes back exactly as ``type=int`` would return it. Used by the
scripts in ``benchmarks/``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def at_least(minimum: int, *, most: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: the option's text as an ``int`` of at least ``minimum`` (and at most ``most``).

    Args:
        minimum: the smallest value accepted.
        most: the largest value accepted (``None``: no upper limit).

    Returns:
        A function of the option's text that returns ``int(text)``, or raises
        ``argparse.ArgumentTypeError`` (one line naming the bound and the value) for a text that is not
        an integer or a value out of range.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most}, got {value}")
        return value

    return parse


def more_than(bound: float) -> Callable[[str], float]:
    """An argparse ``type``: the option's text as a finite ``float`` greater than ``bound``.

    Args:
        bound: the value must exceed it (``more_than(0)``: a positive number).

    Returns:
        A function of the option's text that returns ``float(text)``, or raises
        ``argparse.ArgumentTypeError`` (one line) for a text that is not a number, for ``nan`` and
        ``inf``, and for a value of ``bound`` or less.
    """

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if value <= bound:
            raise argparse.ArgumentTypeError(f"must be more than {bound:g}, got {value:g}")
        return value

    return parse


def nonempty(text: str) -> str:
    """An argparse ``type``: the option's text, refused when empty (``--out ""`` once meant "no output",
    silently)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text
