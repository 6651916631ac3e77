"""The ``dice-poker`` command: one sub-command per module in this package.

Each sub-command module defines ``add_parser(subparsers)`` (registering its
arguments and ``func``); they are imported lazily so that ``--help`` stays fast
and optional dependencies are only needed by the sub-command that uses them.
"""

from __future__ import annotations

import argparse
import importlib
import os
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
    """Run one sub-command; returns the exit status.

    Errors the user can fix (``ValueError``, ``KeyError``, ``OSError``) print one
    line and return 2. When the reader of the output goes away
    (``dice-poker advise ... | head -3``), the command stops quietly with status 1,
    as Python's documentation recommends for ``BrokenPipeError``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe fails here, inside the try, not at exit
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except (ValueError, KeyError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"dice-poker {args.command}: error: {message}", file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point stdout at the null device: the interpreter's final flush must not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (e.g. a StringIO in tests)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
