"""``dice-poker match``: two agents head to head in duplicate two-player games (:mod:`agents.evaluation.match`).

``dice-poker match yahtzee --agents optimal greedy --games 20000 --json``: every deal is played twice,
the seats swapped, and agent A's win rate is reported with its 95% interval over the deals.
``--games auto --target-ci 0.01`` plays until the interval's half-width is at most one point.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.commands.arguments import nonempty
from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from

HELP = "two agents head to head in duplicate two-player games: A's win rate with a 95% CI"

#: seconds between two progress lines when standard error is not a terminal
PROGRESS_LINE_SECONDS = 15.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Play agent A against agent B in duplicate two-player games: each deal (the dice of every seat, turn "
        "and roll) is played twice, A first then B first, so the luck of the dice cancels. Reports A's win "
        "rate ((wins + ties/2) / games) with a 95% interval over the deals, the win rate in each seat and "
        "the mean scores."
    )
    add_rules_arguments(parser)
    parser.add_argument(
        "--agents",
        nargs=2,
        required=True,
        metavar=("A", "B"),
        help="the two agents: optimal, greedy, random, trained, winning[,target=T|,future=reach], model:PATH, "
        "FILE.py:NAME or MODULE:NAME",
    )
    parser.add_argument(
        "--games",
        default="2000",
        help="games to play, an even number (two per deal), or 'auto' with --target-ci (default 2000)",
    )
    parser.add_argument(
        "--target-ci",
        type=float,
        metavar="W",
        help="with --games auto: play until the 95%% half-width is at most W (a fraction: 0.01 = one point)",
    )
    parser.add_argument(
        "--max-games", type=int, help="with --games auto: play at most this many games (default 1,000,000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the deals' seed: the same seed, the same dice (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--out", type=nonempty, metavar="FILE", help="also write the JSON object to FILE (a new file)")
    parser.add_argument("--overwrite", action="store_true", help="let --out replace an existing file")
    parser.add_argument("--quiet", action="store_true", help="no progress on standard error")


def _games(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--games must be an even number of games or 'auto', got {text!r}") from None


class _Progress:
    """A tqdm bar on a terminal, else a line at most every :data:`PROGRESS_LINE_SECONDS` on standard error."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.bar = total, 0, None
        self.enabled = enabled
        self.start = self.last = time.perf_counter()
        if enabled and sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm
            except ModuleNotFoundError:  # optional dependency
                pass
            else:
                self.bar = tqdm(
                    total=total, desc="match", unit="game", file=sys.stderr, leave=False, dynamic_ncols=True
                )

    def __call__(self, games: int) -> None:
        self.done += games
        if self.bar is not None:
            if self.done > self.bar.total:  # (auto: the total grows)
                self.bar.total = self.done
            self.bar.update(games)
            return
        now = time.perf_counter()
        if self.enabled and now - self.last >= PROGRESS_LINE_SECONDS:
            self.last = now
            print(f"match: {self.done:,} games ({now - self.start:.0f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(args: argparse.Namespace) -> int:
    from agents.commands.bench import check_out_file, write_file
    from agents.evaluation.match import AUTO_MAX_GAMES, AUTO_PILOT_GAMES, match, render

    games = _games(args.games)
    if games == "auto" and args.target_ci is None:
        raise ValueError("--games auto needs --target-ci W (the 95% half-width to reach, e.g. 0.01)")
    if games != "auto" and (args.target_ci is not None or args.max_games is not None):
        raise ValueError("--target-ci and --max-games go with --games auto")
    if args.target_ci is not None and not 0 < args.target_ci < 0.5:
        raise ValueError(f"--target-ci must be a half-width in (0, 0.5) (0.01 is one point), got {args.target_ci:g}")
    if args.max_games is not None and args.max_games < 4:
        raise ValueError(f"--max-games must be at least 4 (two deals, for a spread), got {args.max_games}")
    out = Path(args.out) if args.out is not None else None
    if out is not None:
        check_out_file(out, args.overwrite)  # before the games, not after them
    rules = load_rules_from(args)
    a, b = args.agents
    max_games = AUTO_MAX_GAMES if args.max_games is None else args.max_games
    total = games if isinstance(games, int) else min(AUTO_PILOT_GAMES, max(max_games, 0))
    progress = _Progress(total, not args.quiet)

    def announce(line: str) -> None:
        if not args.quiet:
            print(f"match {rules.name}: {a} vs {b}: {line}", file=sys.stderr, flush=True)

    try:
        result: dict[str, Any] = match(
            rules,
            a,
            b,
            games=games,
            seed=args.seed,
            target_ci=args.target_ci,
            max_games=max_games,
            progress=progress,
            announce=announce,
        )
    finally:
        progress.close()
    result["command"] = "dice-poker match " + " ".join(shlex.quote(arg) for arg in _argv(args))
    print(json.dumps(result) if args.json else render(result), flush=True)  # (shown even if --out fails)
    if out is not None:
        write_file(out, json.dumps(result, indent=1) + "\n")
    return 0


def _argv(args: argparse.Namespace) -> list[str]:
    """The command's arguments, rebuilt from ``args`` (what the JSON records as its ``command``)."""
    argv = [args.rules, *(f"--option={o}" for o in args.option), "--agents", *args.agents, "--games", str(args.games)]
    if args.target_ci is not None:
        argv += ["--target-ci", f"{args.target_ci:g}"]
    if args.max_games is not None:
        argv += ["--max-games", str(args.max_games)]
    argv += ["--seed", str(args.seed)]
    if args.json:
        argv.append("--json")
    if args.out:
        argv += ["--out", args.out]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.commands.match ...``; bad input is a one-line error, status 2."""
    from agents.commands import module_main

    return module_main("match", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
