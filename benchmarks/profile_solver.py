"""Where a solve spends its time: CPU seconds per phase of one single-process solve.

Wraps the solver's phases (forward reachability pass, engine calls per block of
states, turn score tables, turn widget with its keep-value recursion and best
sub-keep recursion) with CPU-time counters and prints seconds and microseconds
per state. One process (``workers=1``) so the counters see all the work; CPU
time rather than wall time, so a busy machine distorts the split less.

Usage::

    python benchmarks/profile_solver.py [RULESET] [--option KEY=VALUE ...] [--chunk 512]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli.rules_arguments import parse_rules_options  # noqa: E402 - after the path
from dice_poker_env.engine.tables import compile_rules  # noqa: E402 - after the path
from dice_poker_env.rules import load_rules  # noqa: E402 - after the path
from dice_poker_env.solver import backward, turn  # noqa: E402 - after the path
from dice_poker_env.solver.block_scores import BlockScores  # noqa: E402 - after the path

#: (object, attribute, label): the phases, outermost first; each function is
#: replaced where its caller looks it up (the module that imports it by name)
PHASES = [
    (backward, "reachable_layers", "forward pass (reachability)"),
    (BlockScores, "__init__", "engine calls and value lookups per block"),
    (BlockScores, "packed_tables", "turn score tables"),
    (backward, "widget_with_moments", "turn widget"),
    (turn, "_internal_keep_values", "  of which keep-value recursion"),
    (turn, "_best_of_subkeeps", "  of which best sub-keep recursion"),
]


def _counted(function: Callable[..., Any], label: str, seconds: collections.Counter[str]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[label] += time.process_time() - start  # type: ignore[assignment]  # a Counter of float seconds

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rules", nargs="?", default="yahtzee")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--chunk", type=at_least(1), default=256, help="states per widget chunk (the solver default)")
    args = parser.parse_args()
    try:
        rules = load_rules(args.rules, **parse_rules_options(args.option))
    except ValueError as error:  # a malformed or unknown option, an unknown ruleset (RulesError)
        parser.error(str(error))
    seconds: collections.Counter[str] = collections.Counter()
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in PHASES]
    for owner, name, label in PHASES:
        setattr(owner, name, _counted(getattr(owner, name), label, seconds))
    try:
        start = time.process_time()
        result = backward.solve_dp(compile_rules(rules), workers=1, chunk=args.chunk)
        total = time.process_time() - start
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)
    states = len(result.keys)
    print(f"{rules.name} {dict(rules.options)}: {states:,} states, {total:.2f} s CPU in one process")
    for _, _, label in PHASES:
        print(f"  {label:<45} {seconds[label]:6.2f} s  {seconds[label] / states * 1e6:5.2f} us/state")


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
