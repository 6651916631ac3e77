"""``dice-poker bench``: benchmark agents against the exact solver.

The logic lives in :mod:`agents.evaluation.benchmark`; this module only parses arguments
and prints. ``torch`` is imported only when ``--model`` is given.

``--out DIR`` is checked before the first game (it must be a writable folder
without earlier results, unless ``--overwrite``), and the results are printed
before they are written, so a failed write never loses them. The table needs rich (the ``cli`` extra),
checked before the first game too; ``--json`` does not.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agents.commands.arguments import nonempty
from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from

if TYPE_CHECKING:
    from agents.evaluation.benchmark import BenchmarkResult

HELP = "benchmark agents against the exact solver (scores, percent of optimal, exact regret)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Play N seeded games per agent and report mean (95% CI), median, std, percent of the "
        "optimal expected score, upper-bonus and five-of-a-kind rates, mean score per box, and "
        "the exact regret (solver value lost per game, split into keep decisions and box "
        "choices) with the costliest typical mistakes."
    )
    add_rules_arguments(parser)
    parser.add_argument(
        "--agents",
        nargs="+",
        default=["optimal", "greedy", "random"],
        help="agents to play: optimal, greedy, random, model:PATH (default: optimal greedy random)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="PATH",
        help="also play a trained SB3/sb3-contrib model saved by train.py (as agent 'model'; repeatable)",
    )
    parser.add_argument(
        "--trust-model-files",
        action="store_true",
        help="load model zips that hold pickled objects (which run code when loaded); only for files you trust",
    )
    parser.add_argument("--games", type=int, default=10_000, help="games per agent (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="benchmark seed (default 0)")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes to spread games over (default 1); optimal, greedy and policy files "
        "play all their games at once in one process",
    )
    parser.add_argument("--no-regret", action="store_true", help="skip the regret analysis (faster)")
    parser.add_argument("--top-mistakes", type=int, default=10, help="costliest mistakes listed per agent")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument(
        "--out", type=nonempty, metavar="DIR", help="write DIR/results.json and DIR/score_distribution.png"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="with --out: replace the results already in DIR (refused otherwise)"
    )


#: the files ``--out DIR`` writes
OUT_FILES = ("results.json", "score_distribution.png")


def check_out_dir(out: Path, overwrite: bool, files: tuple[str, ...] = OUT_FILES, what: str = "results") -> list[Path]:
    """Make sure ``--out`` can take the results before any game is played.

    Creates the folder, writes and removes a probe file in it, and refuses to
    replace earlier ``files`` (``what`` the message calls them) unless ``overwrite``.

    Returns:
        The folders it created, deepest first (removed again if the benchmark fails).

    Raises:
        OSError: the folder cannot be created or written, or holds results already.
    """
    from dice_poker_env.files import cannot_write

    if out.exists() and not out.is_dir():
        raise OSError(f"--out {out}: exists and is not a folder")
    if not overwrite:
        old = [name for name in files if (out / name).exists()]
        if old:
            raise OSError(
                f"--out {out}: holds {what} already ({', '.join(old)}); choose another folder or pass --overwrite"
            )
    created = [folder for folder in (out, *out.parents) if not folder.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        remove_empty(created)
        raise OSError(f"--out {out}: cannot write there ({error.strerror or error})") from None
    problem = cannot_write(out)
    if problem is not None:
        remove_empty(created)
        raise OSError(f"--out {out}: cannot write there ({problem})")
    return created


def check_out_file(path: Path, overwrite: bool, option: str = "--out") -> None:
    """Make sure ``option``'s file can be written before any work: a file (not a folder) in an existing,
    writable folder (a probe file is written and removed), not replacing an earlier one unless ``overwrite``.

    Raises:
        OSError: one line naming the option and the problem.
    """
    from dice_poker_env.files import cannot_write

    if path.is_dir():
        raise OSError(f"{option} {path}: is a folder; name a file")
    if not path.parent.is_dir():
        raise OSError(f"{option} {path}: the folder {path.parent} does not exist")
    if path.exists() and not overwrite:
        raise OSError(f"{option} {path}: exists; choose another name or pass --overwrite")
    problem = cannot_write(path.parent)
    if problem is not None:
        raise OSError(f"{option} {path}: cannot write there ({problem})")


def write_file(path: Path, data: str | bytes, option: str = "--out") -> None:
    """``data`` into ``path`` whole or not at all (:func:`dice_poker_env.files.write_whole`); a failure is one
    line naming ``option``."""
    from dice_poker_env.files import write_whole

    try:
        write_whole(path, data)
    except OSError as error:
        raise OSError(f"{option} {path}: cannot write ({error.strerror or error})") from None


def remove_empty(folders: list[Path]) -> None:
    """Remove the folders this command created (deepest first) while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def write_results(result: BenchmarkResult, out: Path) -> list[Path]:
    """``results.json`` (written whole, then renamed into place) and the plot, when matplotlib is there."""
    from dice_poker_env.files import write_whole

    path = write_whole(out / "results.json", json.dumps(result.data, indent=2) + "\n")
    written = [path]
    try:
        from agents.evaluation.plots import plot_score_distributions
    except ModuleNotFoundError as error:  # matplotlib is optional
        print(f"dice-poker bench: no plot ({error.name} is not installed)", file=sys.stderr)
        return written
    written.append(Path(plot_score_distributions(result, out / "score_distribution.png")))
    return written


def run(args: argparse.Namespace) -> int:
    from agents.evaluation.benchmark import benchmark, render_table
    from agents.evaluation.limits import MAX_GAMES, check_count

    if args.games < 1:
        raise ValueError("--games must be at least 1")
    check_count("--games", args.games, most=MAX_GAMES)
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.top_mistakes < 0:
        raise ValueError(f"--top-mistakes must be >= 0, got {args.top_mistakes}")
    if args.overwrite and not args.out:
        raise ValueError("--overwrite goes with --out DIR")
    if not args.json and importlib.util.find_spec("rich") is None:  # the table is printed after every game
        raise ValueError("the table needs rich, which is not installed: pip install 'dice-poker-env[cli]' (or --json)")
    if args.trust_model_files:  # read by agents.players.sb3_agent here and in the worker processes
        from agents.players.sb3_agent import TRUST_ENV

        os.environ[TRUST_ENV] = "1"
    rules = load_rules_from(args)
    agents = list(args.agents)
    models = list(args.model)
    for i, path in enumerate(models):
        if not os.path.exists(path):
            raise OSError(f"--model {path}: no such file")
        agents.append(("model" if len(models) == 1 else f"model{i + 1}", f"model:{path}"))
    out = Path(args.out) if args.out else None
    created = check_out_dir(out, args.overwrite) if out is not None else []
    try:
        result = benchmark(
            rules,
            agents,
            games=args.games,
            seed=args.seed,
            workers=args.workers,
            regret=not args.no_regret,
            top_mistakes=args.top_mistakes,
            progress=not args.json,
        )
    except BaseException:
        remove_empty(created)  # a failed command leaves no trace
        raise
    data = result.data
    if args.json:  # the results reach stdout first, whatever happens to the files
        print(json.dumps(data), flush=True)
    else:
        render_table(data)
    if out is not None:
        try:
            written = write_results(result, out)
        except OSError as error:
            print(
                f"dice-poker bench: error: could not write the results to {out} ({error}); they are printed above",
                file=sys.stderr,
            )
            return 1
        if not args.json:
            print("wrote " + ", ".join(str(p) for p in written))
    return 0
