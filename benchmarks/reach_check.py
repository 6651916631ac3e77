"""Check the reach solver against play: Monte Carlo of its own policy, and of the expected-score policy.

    python -m benchmarks.reach_check [--games N] [--seed S] [RULES ...]      (from the repository root)

For each ruleset (default: yacht), at five targets (the 50, 75, 90, 95 and 99% quantiles of the
expected-score-optimal policy's exact final-score distribution):

* ``reach``: the table's maximum probability of a final score of at least the target;
* ``reach_policy``: the share of ``N`` games played by that target's reach policy (the ``winning``
  agent with ``target=T``, which plays ``Reach.action_probabilities``' best action) that reached the
  target, with its 95% Wilson interval: the table must lie inside it;
* ``expected_policy``: the exact tail probability of the expected-score policy (the reach table's
  distribution) and its empirical share in ``N`` games of the ``optimal`` agent: the reach
  probability must never be below that empirical share by more than its sampling error (checked at
  every target up to the maximum, not only the five).

Writes ``results/winning/reach_check_<ruleset>.json`` with the command and the machine, and prints a table.
Games are played in lockstep on the engine (``agents.players.optimal.play_games``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.evaluation.benchmark import Z95  # noqa: E402
from agents.evaluation.match import wilson  # noqa: E402
from agents.players.optimal import OptimalAgent, play_games  # noqa: E402
from agents.players.winning import WinningAgent  # noqa: E402
from dice_poker_env.cli import machine_description  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402
from dice_poker_env.solver.reach import solve_reach  # noqa: E402

QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99)


def check(name: str, games: int, seed: int, targets: list[int] | None = None) -> dict:
    rules = load_rules(name)
    reach = solve_reach(rules)
    dist = reach.distribution
    assert dist is not None
    optimal = play_games(OptimalAgent(rules), games, seed=seed)
    rows = []
    chosen = [(q, dist.quantile(q)) for q in QUANTILES] if not targets else [(None, t) for t in targets]
    for q, target in chosen:
        start = time.perf_counter()
        # play_games is annotated for an OptimalAgent but uses only .rules and .act_batch, which WinningAgent has
        scores = play_games(WinningAgent(rules, target=target, reach=reach), games, seed=seed + 1)
        hits = int(np.count_nonzero(scores >= target))
        low, high = wilson(hits / games, games)
        exact = reach.probability(target)
        policy_hits = int(np.count_nonzero(optimal >= target))
        rows.append(
            {
                "quantile": q,
                "target": int(target),
                "reach": exact,
                "reach_policy": hits / games,
                "reach_policy_ci95": [low, high],
                "reach_inside_ci": bool(low <= exact <= high),
                "expected_policy_exact": dist.at_least(target),
                "expected_policy_empirical": policy_hits / games,
                "seconds": time.perf_counter() - start,
            }
        )
    # never below the expected-score policy's empirical tail, at every target (within its sampling error)
    all_targets = np.arange(int(optimal.min()), int(optimal.max()) + 2)
    empirical = (optimal[None, :] >= all_targets[:, None]).mean(axis=1)
    table = np.array([reach.probability(int(t)) for t in all_targets])
    error = Z95 * np.sqrt(np.maximum(empirical * (1 - empirical), 1.0 / games) / games)
    shortfall = empirical - table - error
    return {
        "rules": name,
        "rules_fingerprint": rules.fingerprint,
        "games": games,
        "seed": seed,
        "targets": rows,
        "all_inside_ci": all(row["reach_inside_ci"] for row in rows),
        "targets_checked_against_expected_policy": len(all_targets),
        "reach_below_expected_policy_empirical": int(np.count_nonzero(shortfall > 0)),
        "largest_shortfall_beyond_ci": float(shortfall.max()),
        "command": "python -m benchmarks.reach_check " + " ".join(sys.argv[1:]),
        "machine": machine_description(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rules", nargs="*", default=["yacht"])
    parser.add_argument("--games", type=at_least(1), default=20_000, help="games per target (default 20000)")
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument("--targets", type=int, nargs="+", help="these targets instead of the five quantiles")
    parser.add_argument("--name", default="", help="a suffix of the JSON file's name (e.g. a follow-up's)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "winning", help="the folder of the JSON files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = False
    for name in args.rules:
        result = check(name, args.games, args.seed, args.targets)
        (args.out / f"reach_check_{name}{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
        print(f"{name}: {args.games:,} games per target")
        print(
            f"  {'target':>6}  {'reach':>9}  {'its policy (95% CI)':>28}  {'E-policy exact':>14}  {'E-policy MC':>11}"
        )
        for row in result["targets"]:
            low, high = row["reach_policy_ci95"]
            print(
                f"  {row['target']:>6}  {row['reach']:9.5f}  {row['reach_policy']:9.5f} ({low:.5f}-{high:.5f})"
                f"{'' if row['reach_inside_ci'] else ' OUT'}  {row['expected_policy_exact']:14.5f}"
                f"  {row['expected_policy_empirical']:11.5f}"
            )
        print(
            f"  the table below the expected-score policy's empirical tail beyond its CI at "
            f"{result['reach_below_expected_policy_empirical']} of {result['targets_checked_against_expected_policy']} targets"
        )
        failed |= not result["all_inside_ci"] or result["reach_below_expected_policy_empirical"] > 0
    return 1 if failed else 0


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
