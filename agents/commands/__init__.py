"""``dice-poker`` commands that need the agents: ``bench``, ``play``, ``dataset``, ``grade``, ``check``, ...

The core's command line (:mod:`dice_poker_env.cli`) finds them through the entry
point group ``dice_poker_env.commands`` in ``pyproject.toml``, so the core never
imports this package. Each module here is one command with ``HELP``,
``add_arguments(parser)`` and ``run(args)`` (except :mod:`agents.commands.arguments`,
the argparse types they and the benchmark scripts share); :func:`module_main` runs one as
``python -m agents.commands.NAME`` where the command is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence


def module_main(
    name: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None = None,
) -> int:
    """``python -m agents.commands.NAME ...``, as ``dice-poker NAME ...``: bad input is a one-line error, status 2;
    Ctrl-C is status 130."""
    parser = argparse.ArgumentParser(prog=f"python -m agents.commands.{name}")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except (ValueError, KeyError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"{name}: error: {message}", file=sys.stderr)
        return 2
