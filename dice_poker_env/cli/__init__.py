"""The ``dice-poker`` command: one sub-command per module in this package.

Each sub-command module defines ``add_parser(subparsers)`` (registering its
arguments and ``func``); they are imported lazily so that ``--help`` stays fast
and optional dependencies are only needed by the sub-command that uses them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: sub-command name -> module under dice_poker_env.cli
SUBCOMMANDS = {
    "solve": "solve",
    "advise": "solve",
    "bench": "bench",
    "play": "play",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dice-poker",
        description="Dice-game RL environments, exact solver, benchmarks and a terminal game.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    seen = set()
    for module_name in SUBCOMMANDS.values():
        if module_name in seen:
            continue
        seen.add(module_name)
        try:
            module = importlib.import_module(f"dice_poker_env.cli.{module_name}")
        except ModuleNotFoundError as error:
            if error.name and error.name.startswith("dice_poker_env.cli"):
                continue  # sub-command not built yet
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, KeyError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"dice-poker {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
