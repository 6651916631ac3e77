"""``dice-poker evaluate``: the benchmark protocol's metrics of one agent (``docs/benchmark.md``).

Plays the ruleset's fixed evaluation set (10,000 games whose dice are fixed by the published env
seeds ``2**40 + i``) and prints the luck-free percent of optimal with its 95% interval, the mean
score with its interval, the median, the upper bonus rate, the track and what the result was
measured on (env id, observation layout version, ruleset fingerprint, library version). The logic
lives in :mod:`agents.evaluation.protocol`.
"""

from __future__ import annotations

import argparse
import json

from dice_poker_env.cli.rules_arguments import add_rules_arguments, load_rules_from

HELP = "the benchmark protocol's metrics of an agent on the fixed evaluation set (docs/benchmark.md)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Play the ruleset's fixed evaluation set (10,000 games, the same dice for every agent) and "
        "report the protocol's metrics: luck-free percent of optimal (100 x (1 - mean exact regret / "
        "optimal expected score)) with its 95% CI, mean score with its CI, median and upper bonus rate."
    )
    add_rules_arguments(parser)
    parser.add_argument(
        "--agent",
        required=True,
        metavar="SPEC",
        help="the agent: optimal, greedy, random, trained, winning[,target=T], model:PATH, FILE.py:NAME or MODULE:NAME",
    )
    parser.add_argument(
        "--games",
        type=int,
        default=None,
        help="play only the first N games of the set (default: all 10,000, as the protocol reports)",
    )
    parser.add_argument(
        "--track",
        choices=("raw", "rules", "solver"),
        help="the track the agent is submitted to (when the agent declares none; checked when it does)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the training seed of the agent, recorded in the result as a label (benchmarks/compare.py pairs "
        "seeds across rulesets by it); it changes no game",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args: argparse.Namespace) -> int:
    from agents.evaluation.protocol import EVAL_GAMES, evaluate

    games = EVAL_GAMES if args.games is None else args.games
    if not 1 <= games <= EVAL_GAMES:
        raise ValueError(f"--games must be in 1..{EVAL_GAMES} (the evaluation set's size), got {games}")
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed must be a training seed (0 or more), got {args.seed}")
    rules = load_rules_from(args)
    result = evaluate(rules, args.agent, games=games, track=args.track)
    if args.seed is not None:
        result["seed"] = args.seed
    if args.json:
        print(json.dumps(result), flush=True)
        return 0
    lines = [
        f"{result['eval_set']}: {result['agent']} ({result['track'] or 'no track declared'}), {result['games']} games"
        + ("" if args.seed is None else f", training seed {args.seed}"),
        f"luck-free percent of optimal  {result['luck_free_percent']:8.3f} ± {result['luck_free_percent_ci95']:.3f}",
        f"mean regret                   {result['regret_mean']:8.3f} ± {result['regret_ci95']:.3f}"
        f"  (keeps {result['regret_keep_mean']:.3f}, boxes {result['regret_box_mean']:.3f}"
        + (f", illegal or failed {other:.3f})" if (other := _other_regret(result)) > 1e-9 else ")"),
        f"mean score                    {result['mean']:8.2f} ± {result['mean_ci95']:.2f}"
        f"  (optimal expected {result['optimal_expected_score']:.2f})",
        f"median score                  {result['median']:8.1f}",
    ]
    if result["illegal_actions"]:  # an illegal action ends its game: the rest of the game is lost
        lines.append(f"illegal actions               {result['illegal_actions']:8d}  (each ended its game there)")
    if result["upper_bonus_rate"] is not None:
        lines.append(f"upper bonus rate              {100 * result['upper_bonus_rate']:7.2f}%")
    lines.append(
        f"{result['env_id']}, observation layout v{result['observation_layout_version']}, "
        f"ruleset {result['rules_fingerprint'][:12]}, dice_poker_env {result['library_version']}"
    )
    print("\n".join(lines))
    return 0


def _other_regret(result: dict) -> float:
    """The mean regret of illegal actions and failures: what keeps and boxes leave of the total."""
    return float(result["regret_mean"] - result["regret_keep_mean"] - result["regret_box_mean"])
