"""``dice-poker dataset``: write a Minari dataset of an agent's games, with the solver's action values.

    dice-poker dataset yacht --agent optimal --episodes 10000 --with-values
    dice-poker dataset yahtzee --option joker=free --agent optimal:eps=0.2 --episodes 50000 --seed 1
    dice-poker dataset yacht --agent model:runs/x/final_model.npz --episodes 1000 --id me/yacht/ppo-v0

The logic lives in :mod:`agents.evaluation.datasets`; this module parses arguments and
prints. Every check (agent, counts, dataset id, datasets folder, model, solve)
comes before the first game; bad input is one line on stderr with exit code 2,
and an existing dataset is replaced only with ``--overwrite`` and only once the
new one is complete. Needs the ``datasets`` extra (Minari and h5py).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import TYPE_CHECKING

from agents.commands.arguments import nonempty
from dice_poker_env.cli.rules_arguments import add_rules_arguments, parse_rules_options

if TYPE_CHECKING:
    from pathlib import Path

PROG = "dice-poker dataset"


HELP = "write a Minari dataset of an agent's games, with the solver's value of every action"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's arguments (``dice-poker`` adds them to its ``dataset`` sub-command)."""
    add_rules_arguments(parser)
    parser.add_argument(
        "--agent",
        required=True,
        metavar="AGENT",
        help="optimal, greedy, random, trained or model:PATH (.npz or SB3 .zip), optionally "
        "with :eps=E for a uniformly random legal action with probability E (e.g. optimal:eps=0.2)",
    )
    parser.add_argument("--episodes", required=True, type=int, metavar="N", help="games to play and store")
    parser.add_argument(
        "--with-values",
        action="store_true",
        help="also store the solver's expected final score of every action at every step",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the games (default 0)")
    parser.add_argument(
        "--id",
        dest="dataset_id",
        type=nonempty,
        metavar="ID",
        help="Minari dataset id (default dice_poker/<ruleset>/<agent>-v0; with --obs-mode dict <agent>-dict-v0)",
    )
    parser.add_argument(
        "--obs-mode",
        choices=("flat", "dict"),
        default="flat",
        help="observation layout stored (default flat, the env's vector)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing dataset of this id (once the new one is complete)"
    )
    parser.add_argument(
        "--block",
        type=int,
        default=None,
        metavar="GAMES",
        help="games played at once (default 8192; lower it to use less memory)",
    )
    parser.add_argument(
        "--author",
        action="append",
        type=nonempty,
        metavar="NAME",
        help="Minari's author field, shown by minari show (repeatable)",
    )
    parser.add_argument(
        "--author-email", action="append", type=nonempty, metavar="EMAIL", help="Minari's author_email (repeatable)"
    )
    parser.add_argument(
        "--code-permalink",
        type=nonempty,
        metavar="URL",
        help="Minari's code_permalink: a link to the code that generated the dataset",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the dataset; print where and what. Returns the exit status (2: bad input)."""
    from agents.evaluation.limits import MAX_EPISODES, check_count

    try:
        check_count("--episodes", args.episodes, most=MAX_EPISODES)
    except ValueError as error:
        return _fail(str(error))
    try:
        from agents.evaluation.datasets import BLOCK, DatasetError, dataset_info, open_dataset, write_dataset
    except ImportError as error:  # (Minari raises a plain ImportError for h5py)
        return _fail(f"{_not_installed(error)}: pip install 'dice-poker-env[datasets]'")
    try:
        options = parse_rules_options(args.option)
    except ValueError as error:
        return _fail(str(error))
    started = time.perf_counter()
    interrupt = _Interrupt()  # a terminated command cleans up like Ctrl-C
    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        path = write_dataset(
            args.rules,
            args.agent,
            args.episodes,
            dataset_id=args.dataset_id,
            seed=args.seed,
            obs_mode=args.obs_mode,
            with_values=args.with_values,
            overwrite=args.overwrite,
            block=BLOCK if args.block is None else args.block,
            progress=not args.quiet,
            author=args.author,
            author_email=args.author_email,
            code_permalink=args.code_permalink,
            stop=interrupt.seen,
            **options,
        )
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was written", file=sys.stderr)
        return 130
    except ImportError as error:  # (Minari raises a plain ImportError for h5py)
        return _fail(f"{_not_installed(error)}: pip install 'dice-poker-env[datasets]'")
    except (DatasetError, ValueError, KeyError, OSError) as error:
        return _fail(str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error))
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    dataset = open_dataset(_dataset_id(path))
    info = dataset_info(dataset)
    line = (
        f"wrote {dataset.id}: {dataset.total_episodes:,} episodes, {dataset.total_steps:,} steps "
        f"in {time.perf_counter() - started:.1f} s; mean score {info['mean_score']:.2f}"
    )
    if info["percent_of_optimal"] is not None:
        line += (
            f" ({info['percent_of_optimal']:.2f}% of the optimal expected score {info['optimal_expected_score']:.4f})"
        )
    if info["mean_regret"] is not None:
        line += f"; mean regret {info['mean_regret']:.4f} points a game"
    print(line)
    print(f"  {path}")
    return 0


class _Interrupt:
    """The handler of SIGINT and SIGTERM: raises ``KeyboardInterrupt`` and remembers the signal.

    Python swallows an exception raised while a ``__del__`` or weakref callback
    runs (h5py's objects have them), so the raise alone can be lost and the
    command would go on to write the dataset; ``write_dataset`` also asks
    :meth:`seen` after every block and before the dataset goes into place.
    """

    def __init__(self) -> None:
        self.signals = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.signals += 1
        raise KeyboardInterrupt

    def seen(self) -> bool:
        return self.signals > 0


def _dataset_id(path: Path) -> str:
    from minari.storage import get_dataset_path

    return path.relative_to(get_dataset_path().absolute()).as_posix()


def _not_installed(error: ImportError) -> str:
    """What an import failure says is missing, in a few words."""
    return f"{error.name} is not installed" if error.name else " ".join(str(error).split()).split(". ")[0]


def _fail(message: str) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """``dice-poker dataset`` as a program of its own."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
