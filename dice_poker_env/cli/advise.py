"""``dice-poker advise``: every legal action of a position with its expected final score, best first."""

from __future__ import annotations

import argparse
import json
from typing import Any

from dice_poker_env.cli.rules_arguments import load_rules_from
from dice_poker_env.cli.solve import add_solver_arguments

HELP = "every legal action of a position with its expected final score (or chance of a target score), best first"

_INT64 = (-(2**63), 2**63 - 1)
#: ``--target``: a position whose legal actions' probabilities all lie within this of each other is decided (the
#: target is sure, or out of reach, whatever is played): its actions are ranked by expected final score, as the
#: ``winning`` agent plays such a game (``agents.players.winning.DECIDED``)
DECIDED = 1e-9


def _check_integers(flag: str, values: int | list[int] | None) -> None:
    """A ``ValueError`` (one line, exit 2) for integers the engine's int64 arrays cannot hold;
    the position validator owns the real range of each field."""
    for value in [] if values is None else values if isinstance(values, list) else [values]:
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"{flag} {value} is out of range")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Coach a position: each legal action (distinct keeps once) with its expected final score under optimal play."
    )
    add_solver_arguments(parser)
    parser.add_argument("--dice", type=int, nargs=5, required=True, metavar="D", help="the five dice")
    parser.add_argument(
        "--rolls-left", type=int, default=2, choices=(0, 1, 2), help="rerolls left this turn (default 2)"
    )
    parser.add_argument(
        "--scorecard", default=None, metavar="JSON", help='filled boxes, e.g. \'{"aces": 3, "yahtzee": 50}\''
    )
    parser.add_argument(
        "--bonus", type=int, default=None, help="bonus points already paid (default: the secured upper bonus)"
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.add_argument(
        "--target",
        type=int,
        default=None,
        metavar="T",
        help="rank by the maximum probability of a final score of at least T instead (solves the reach table); "
        "a target sure or out of reach whatever is played ranks by expected final score",
    )


def explain_unrecognized(argv: list[str], extras: list[str]) -> str | None:
    """Six dice (``--dice 1 2 3 4 5 6``): argparse takes five and calls the sixth an unrecognized argument."""
    if "--dice" not in argv:
        return None
    after = argv[argv.index("--dice") + 1 :]
    count = next((i for i, value in enumerate(after) if not value.lstrip("-").isdigit()), len(after))
    if count <= 5:
        return None
    return f"--dice takes the five dice, got {count}: {' '.join(after[:count])}"


def run(args: argparse.Namespace) -> int:
    from dice_poker_env.solver import solve

    _check_integers("--dice", args.dice)
    _check_integers("--bonus", args.bonus)
    rules = load_rules_from(args)
    scorecard = None
    if args.scorecard:
        try:
            scorecard = json.loads(args.scorecard)
        except json.JSONDecodeError as error:
            # (the usual cause: the shell ate the double quotes of {"aces": 3} typed without single quotes around it)
            raise ValueError(
                f"--scorecard is not valid JSON ({error.msg}, got {args.scorecard!r}): "
                """write box names in double quotes and the whole in single quotes, e.g. '{"aces": 3, "yahtzee": 50}'"""
            ) from None
    situation = {"scorecard": scorecard, "dice": args.dice, "rolls_left": args.rolls_left}
    if args.bonus is not None:
        situation["bonus"] = args.bonus
    _check_position(rules, situation)  # before any solve (the yahtzee reach table takes half an hour)
    if args.target is not None:
        from dice_poker_env.solver.reach import check_target

        check_target(args.target)  # (a target out of range was refused after the solve)
    if args.target is not None:
        return _advise_target(args, rules, situation)
    solution = solve(rules, cache=not args.no_cache, progress=None, force=args.force)
    return _show(args, rules.name, solution.advise(situation), "expected final score under optimal play", "value")


def _check_position(rules: Any, situation: dict[str, Any]) -> None:
    """The position as the engine reads it, with a turn left (a one-line ``ValueError`` naming what is wrong)."""
    from dice_poker_env.engine.position import playable_position
    from dice_poker_env.engine.tables import compile_rules

    playable_position(
        compile_rules(rules), situation["scorecard"], situation["dice"], situation["rolls_left"], situation.get("bonus")
    )


def _advise_target(args: argparse.Namespace, rules: Any, situation: dict[str, Any]) -> int:
    """``--target T``: each action with the maximum probability of a final score of at least T after it."""
    from dice_poker_env.solver.reach import final_score_range, solve_reach

    what = f"probability of a final score >= {args.target}"
    least, most = final_score_range(rules, situation)
    if not least < args.target <= most:  # sure, or out of reach: the reach table's answer, known without it
        from dice_poker_env.solver import solve

        solution = solve(rules, cache=not args.no_cache, progress=None, force=args.force)
        sure = args.target <= least
        items = [{**_without(item, "value"), "probability": float(sure)} for item in solution.advise(situation)]
        bound = f"below {least}" if sure else f"above {most}"
        what += f" ({'sure' if sure else 'out of reach'} whatever you play: no final score is {bound}; ranked by "
        what += "expected final score)"
        return _show(args, rules.name, items, what, "probability")
    reach = solve_reach(rules, distribution=False, cache=not args.no_cache, force=args.force)
    items = reach.advise(situation, args.target)
    chances = [item["probability"] for item in items]
    if len(items) > 1 and max(chances) - min(chances) <= DECIDED:
        # every action is as good for the target: rank them by points (the first of the tie, "keep nothing", would
        # reroll a straight it could score)
        from dice_poker_env.solver import solve

        solution = solve(rules, cache=not args.no_cache, progress=None, force=args.force)
        values = {item["action"]: item["value"] for item in solution.advise(situation)}
        items.sort(key=lambda item: -values[item["action"]])
        chance = "sure" if min(chances) >= 1 - DECIDED else "out of reach" if max(chances) <= DECIDED else "the same"
        what += f" ({chance} whatever you play: ranked by expected final score)"
    return _show(args, rules.name, items, what, "probability")


def _without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


def _show(args: argparse.Namespace, name: str, items: list[dict[str, Any]], what: str, key: str) -> int:
    """Print the ranked actions (``key``: their number), or the list as JSON with ``--json``."""
    if args.json:
        print(json.dumps(items))
        return 0
    dice = " ".join(map(str, sorted(args.dice)))
    print(f"{name}: dice {dice}, {args.rolls_left} roll(s) left; {what}")
    width = max(len(_describe(item)) for item in items)
    number = "{:10.4f}" if key == "value" else "{:12.9f}"
    for rank, item in enumerate(items, 1):
        print(f"{rank:3d}. {_describe(item):<{width}}  {number.format(item[key])}")
    return 0


def _describe(item: dict[str, Any]) -> str:
    if item["kind"] == "keep":
        kept = " ".join(map(str, item["keep"])) if item["keep"] else "nothing"
        return f"keep {kept} (action {item['action']})"
    return f"score {item['box']} (action {item['action']})"
