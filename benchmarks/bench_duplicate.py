"""How many games separate two agents 1 point a game apart: duplicate against ordinary games.

Two real agents, the greedy agent and a slightly worse variant of it (:class:`LowTieGreedy`:
when two faces are equally common it keeps the lower one, not the higher), play ``--deals``
deals at a 2-seat table of the tournament (:func:`agents.course.duplicate.play_game`), each
deal at both rotations of the seats. From the same games:

* **ordinary games**: at each table the two agents play on independent dice (each seat has
  its own dice stream), so the score difference of one game, greedy minus variant, is what a
  tournament without duplicate would see; its per-game standard deviation is ``sd_plain``;
* **duplicate**: a deal's difference is the mean over its two tables of greedy's score minus
  the variant's, each agent having played both seats' dice; its standard deviation is
  ``sd_dup`` (per deal, i.e. per 2 games).

To tell apart two agents whose true means differ by ``delta = 1`` point a game, with a
two-sided 5% test and 80% power, the number of independent differences needed is
``((1.96 + 0.84) * sd / delta) ** 2``: games for ordinary play, deals (x 2 games) for duplicate.
Also printed: the measured mean difference with its 95% interval both ways.

    python benchmarks/bench_duplicate.py [--rules yahtzee] [--deals 2000] [--seed 0] [--variant low_ties] [--json]

``--variant low_ties_last_reroll`` plays the closer variant that keeps the lower face only when
one reroll is left.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents package

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.course.duplicate import deal_faces, play_game  # noqa: E402
from agents.players.greedy import GreedyAgent  # noqa: E402
from dice_poker_env.engine.combinatorics import KEEP_ALL  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

Z_TEST, Z_POWER = 1.959964, 0.841621  # two-sided 5%, 80% power


class LowTieGreedy(GreedyAgent):
    """The greedy agent, except that among equally common faces it keeps the lowest (greedy keeps the highest).

    ``last_reroll_only``: only when one reroll is left (a closer variant).
    """

    def __init__(self, rules: Any, name: str = "greedy_low_ties", last_reroll_only: bool = False):
        super().__init__(rules, name)
        self.last_reroll_only = last_reroll_only

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        action = super().act(observation, action_mask)
        if action >= KEEP_ALL or (self.last_reroll_only and int(observation["rolls_left"]) != 1):
            return action
        dice = np.asarray(observation["dice"]).reshape(-1)
        counts = np.bincount(dice, minlength=7)
        face = int(np.flatnonzero(counts == counts.max()).min())
        keep = int(((dice == face).astype(np.int64) << np.arange(len(dice))).sum())
        return keep if keep != KEEP_ALL and action_mask[keep] else action


def games_needed(sd: float, delta: float = 1.0) -> int:
    """Independent differences needed to detect a mean difference of ``delta`` (module docstring)."""
    return math.ceil(((Z_TEST + Z_POWER) * sd / delta) ** 2)


#: the variants of the greedy agent (``--variant``)
VARIANTS = {"low_ties": {}, "low_ties_last_reroll": {"last_reroll_only": True}}


def measure(rules_name: str, deals: int, seed: int, variant: str = "low_ties") -> dict[str, Any]:
    """Play the deals and return the statistics (module docstring)."""
    rules = load_rules(rules_name)
    turns = compile_rules(rules).turns
    a, b = GreedyAgent(rules), LowTieGreedy(rules, name=f"greedy_{variant}", **VARIANTS[variant])
    plain, dup = [], []
    start = time.perf_counter()
    for deal in range(deals):
        faces = deal_faces(seed, deal, 2, turns)
        first = play_game(rules, [a, b], faces).scores  # greedy on seat 0's dice, the variant on seat 1's
        second = play_game(rules, [b, a], faces).scores  # the seats swapped: the same dice, the other agent
        plain += [first[0] - first[1], second[1] - second[0]]
        dup.append(((first[0] + second[1]) - (first[1] + second[0])) / 2)
    seconds = time.perf_counter() - start
    plain_a, dup_a = np.asarray(plain, dtype=np.float64), np.asarray(dup, dtype=np.float64)
    sd_plain, sd_dup = float(plain_a.std(ddof=1)), float(dup_a.std(ddof=1))
    return {
        "rules": rules.name,
        "variant": b.name,
        "deals": deals,
        "games": 2 * deals,
        "seed": seed,
        "seconds": round(seconds, 1),
        "mean_difference": float(dup_a.mean()),
        "ci95_plain": Z_TEST * sd_plain / math.sqrt(len(plain_a)),
        "ci95_duplicate": Z_TEST * sd_dup / math.sqrt(len(dup_a)),
        "sd_plain_per_game": sd_plain,
        "sd_duplicate_per_deal": sd_dup,
        "games_needed_plain": games_needed(sd_plain),
        "games_needed_duplicate": 2 * games_needed(sd_dup),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", default="yahtzee")
    parser.add_argument(
        "--deals", type=at_least(2), default=2000, help="deals to play (at least 2: a standard deviation)"
    )
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--variant", choices=VARIANTS, default="low_ties")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.rules, args.deals, args.seed, args.variant)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"{result['rules']}: {result['games']} games ({result['deals']} deals x 2 rotations) in {result['seconds']} s\n"
        f"greedy - {result['variant']}: {result['mean_difference']:.2f} points a game "
        f"(95% CI ± {result['ci95_duplicate']:.2f} duplicate, ± {result['ci95_plain']:.2f} from ordinary games)\n"
        f"sd of a game's difference, ordinary games: {result['sd_plain_per_game']:.2f}\n"
        f"sd of a deal's difference (mean of its 2 games), duplicate: {result['sd_duplicate_per_deal']:.2f}\n"
        f"games to separate agents 1 point a game apart (5% two-sided, 80% power): "
        f"{result['games_needed_plain']} ordinary, {result['games_needed_duplicate']} duplicate"
    )


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
