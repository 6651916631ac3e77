"""The ``dice-poker`` command: the core's commands plus those other packages plug in.

A command is a module (or any object) with three names:

``HELP``
    one line, listed by ``dice-poker --help``;
``add_arguments(parser)``
    adds the command's arguments to its ``argparse`` parser (and may set the
    parser's ``description``, ``epilog`` and ``formatter_class``);
``run(args) -> int``
    runs it and returns the exit status.

and may have a fourth, ``explain_unrecognized(argv, extras) -> str | None``: the
reason for arguments its parser did not take (``advise --dice`` given six dice),
said instead of argparse's "unrecognized arguments".

The core's own commands (``solve``, ``advise``) need nothing beyond the core.
Commands that need more (``bench`` and ``play`` need the top-level ``agents``
package) live in the package that provides it and are found through the entry
point group ``dice_poker_env.commands``, the way pytest finds its plugins::

    [project.entry-points."dice_poker_env.commands"]
    bench = "agents.commands.bench"

So the core never imports such a package itself: the dependency runs one way.
Only the command being run is imported (``dice-poker --help`` imports them all,
for their one-line descriptions); a command that cannot be imported is listed
as unavailable, with the reason, and running it is a one-line error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any

#: the entry point group other packages register commands in
ENTRY_POINT_GROUP = "dice_poker_env.commands"

#: the core's own commands: name -> module
BUILTIN_COMMANDS = {
    "solve": "dice_poker_env.cli.solve",
    "advise": "dice_poker_env.cli.advise",
    "rules": "dice_poker_env.cli.rules",
}


@dataclass(frozen=True)
class CommandSource:
    """Where a command comes from, before it is imported.

    Attributes:
        name: the command's name on the command line.
        target: what provides it, ``"module"`` or ``"module:attribute"``.
        distribution: the installed distribution that registered it (``None`` for the core's own).
    """

    name: str
    target: str
    distribution: str | None = None


class CommandUnavailable(Exception):
    """A command that cannot be imported, or does not have ``HELP``, ``add_arguments`` and ``run``."""


def plugin_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP`."""
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def command_sources() -> dict[str, CommandSource]:
    """Every command by name: the core's own, then the plugged-in ones in the order found.

    A plugin never replaces a core command, and the first plugin of a name wins.
    """
    sources = {name: CommandSource(name, target) for name, target in BUILTIN_COMMANDS.items()}
    for entry_point in plugin_entry_points():
        if entry_point.name not in sources:
            dist = getattr(entry_point, "dist", None)
            sources[entry_point.name] = CommandSource(entry_point.name, entry_point.value, dist.name if dist else None)
    return sources


def load_command(source: CommandSource) -> Any:
    """Import a command.

    Raises:
        CommandUnavailable: it cannot be imported or lacks ``HELP``, ``add_arguments`` or ``run``.
    """
    module_name, _, attribute = source.target.partition(":")
    try:
        command: Any = importlib.import_module(module_name.strip())
        for part in filter(None, attribute.strip().split(".")):
            command = getattr(command, part)
    except Exception as error:  # noqa: BLE001 - whatever a plugin's import raises, the others still work
        raise CommandUnavailable(_import_failure(source, error)) from error
    missing = [name for name in ("HELP", "add_arguments", "run") if not hasattr(command, name)]
    if missing:
        raise CommandUnavailable(f"{source.target} is not a dice-poker command (it has no {', '.join(missing)})")
    return command


def _import_failure(source: CommandSource, error: Exception) -> str:
    """Why a command cannot be imported, and what to do when its top-level package is shadowed."""
    reason = f"cannot import {source.target} ({type(error).__name__}: {error})"
    if source.distribution is None or not isinstance(error, ImportError):
        return reason
    top = source.target.split(":")[0].split(".")[0].strip()
    owners = sorted(set(importlib.metadata.packages_distributions().get(top, [])))
    others = [o for o in owners if _normalize(o) != _normalize(source.distribution)]
    if others:
        reason += (
            f"; the top-level package {top!r} is also installed by {', '.join(others)}, and the two overwrite each "
            f"other: install {source.distribution} in a virtual environment of its own"
        )
    return reason


def _normalize(distribution: str) -> str:
    return distribution.lower().replace("_", "-").replace(".", "-")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``dice-poker`` parser with every command, or with the command ``only`` alone.

    A command that cannot be imported is listed with the reason (:func:`main` refuses to run it).
    """
    parser = argparse.ArgumentParser(
        prog="dice-poker",
        description="Dice-game RL environments, exact solver, benchmarks and a terminal game.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, source in command_sources().items():
        if only is not None and name != only:
            continue
        try:
            command = load_command(source)
        except CommandUnavailable as error:
            sub.add_parser(name, help=f"(unavailable: {error})".replace("%", "%%"))
            continue
        # argparse %-formats a help string (never a description): a plain "95%" in a HELP must not break --help
        command_parser = sub.add_parser(name, help=command.HELP.replace("%", "%%"), description=command.HELP)
        command.add_arguments(command_parser)
        command_parser.set_defaults(func=command.run, _command=command, _parser=command_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status.

    Errors the user can fix (``ValueError``, ``KeyError``, ``OSError``) print one
    line and return 2; so does a command that cannot be imported. When the reader
    of the output goes away (``dice-poker advise ... | head -3``), the command
    stops quietly with status 1, as Python's documentation recommends for
    ``BrokenPipeError``.
    """
    argv = sys.argv[1:] if argv is None else [str(arg) for arg in argv]
    sources = command_sources()
    wanted = argv[0] if argv and argv[0] in sources else None
    if wanted is not None:  # import only this command
        try:
            load_command(sources[wanted])
        except CommandUnavailable as error:
            print(f"dice-poker {wanted}: error: {error}", file=sys.stderr)
            return 2
    args, extras = build_parser(only=wanted).parse_known_args(argv)
    if extras:  # refused by the command's parser (its usage, its name), not the top level's "dice-poker COMMAND ..."
        explain = getattr(args._command, "explain_unrecognized", None)
        reason = explain(argv, extras) if explain is not None else None
        args._parser.error(reason or f"unrecognized arguments: {' '.join(extras)}")
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(args.command, warnings.showwarning)
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
    except MemoryError as error:  # a last line of defence: counts are checked against limits up front
        print(f"dice-poker {args.command}: error: out of memory ({error or type(error).__name__})", file=sys.stderr)
        return 2


def _one_line_warning(command: str, fallback: Any) -> Any:
    """``warnings.showwarning`` printing this package's own warnings (the solver cache's, the benchmark's)
    as one line, ``dice-poker COMMAND: warning: ...``; other warnings as Python shows them."""

    def show(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
        if category.__module__.split(".")[0] in ("dice_poker_env", "agents"):
            text = " ".join(str(message).split())
            print(f"dice-poker {command}: warning: {text}", file=file or sys.stderr)
        else:
            fallback(message, category, filename, lineno, file, line)

    return show


def _silence_stdout() -> None:
    """Point stdout at the null device: the interpreter's final flush must not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (e.g. a StringIO in tests)
        pass


def run_script(main: Any, *args: Any, prog: str | None = None) -> None:
    """Run a script's ``main(*args)`` and exit with its status, as the commands do: an error the user can fix
    (``ValueError``, ``KeyError``, ``OSError``: an unknown ruleset, a missing file) prints one line,
    ``PROG: error: ...``, and exits with 2; Ctrl-C exits with 130; a closed output pipe with 1. The scripts
    in ``benchmarks/`` end with it."""
    prog = prog or os.path.basename(sys.argv[0])
    try:
        status = main(*args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(1)
    except (ValueError, KeyError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"{prog}: error: {message}", file=sys.stderr)
        sys.exit(2)
    except MemoryError as error:
        print(f"{prog}: error: out of memory ({error or type(error).__name__})", file=sys.stderr)
        sys.exit(2)
    sys.exit(status if isinstance(status, int) and not isinstance(status, bool) else 0)


#: the vector extensions a machine's description names: float kernels (and so float results) differ with them
VECTOR_EXTENSIONS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "neon", "asimd", "sve")


def machine_description(cpuinfo: str = "/proc/cpuinfo") -> str:
    """This machine, for a measurement's record: CPU model, vector extensions and usable CPUs, e.g.
    ``"Intel(R) Xeon(R) Processor (avx2, avx512f, avx512_bf16, amx_bf16), 2 CPUs"``. Float results can differ
    between CPU models (their kernels differ), so a figure names the model, not only ``x86_64``; where
    ``/proc/cpuinfo`` is unreadable (not Linux), the platform's own name."""
    import platform

    model, flags = "", set[str]()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "cpu model", "hardware") and not model:
                    model = value.strip()
                elif key in ("flags", "features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    model = model or platform.processor() or platform.machine() or "unknown CPU"
    extensions = ", ".join(name for name in VECTOR_EXTENSIONS if name in flags)
    cpus = usable_cpus()
    return f"{model} ({extensions}), {cpus} CPUs" if extensions else f"{model}, {cpus} CPUs"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's share), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
