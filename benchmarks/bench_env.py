"""Single-env speed: random masked play, steps per second, side by side with gym-yahtzee.

Both envs play Yahtzee with uniformly random legal actions drawn with Python's
``random`` (ours from the env's int8 mask, gym-yahtzee's from its list of legal
actions), interleaved in rounds in one process so that machine load affects both alike; the report is
the median rate of each over the rounds and their ratio.

    pip install -e ".[bench]"   # gym-yahtzee (needs the old gym package)
    python benchmarks/bench_env.py [--steps 50000] [--rounds 5] [--json]

gym-yahtzee's ``gym.make`` path breaks under NumPy 2, so its
``YahtzeeSingleEnv`` class is driven directly, legal actions from
``env.pyhtzee.get_possible_actions()``. Ours is measured both raw
(``env.unwrapped``) and through ``gymnasium.make`` (with its wrappers).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402


def ours(wrapped: bool) -> Callable[[int], float]:
    import gymnasium as gym

    import dice_poker_env  # noqa: F401 - registers the ids

    env = gym.make("DicePoker/Yahtzee-v0")
    env = env if wrapped else env.unwrapped

    def run(steps: int) -> float:
        rng = random.Random(0)
        obs, info = env.reset(seed=0)
        start = time.perf_counter()
        for _ in range(steps):
            legal = info["action_mask"].nonzero()[0]
            obs, reward, terminated, truncated, info = env.step(int(legal[rng.randrange(len(legal))]))
            if terminated:
                obs, info = env.reset()
        return steps / (time.perf_counter() - start)

    return run


def gym_yahtzee() -> Callable[[int], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from gym_yahtzee.envs.yahtzee_env import YahtzeeSingleEnv
    env = YahtzeeSingleEnv()

    def run(steps: int) -> float:
        rng = random.Random(0)
        env.reset()
        start = time.perf_counter()
        for _ in range(steps):
            actions = env.pyhtzee.get_possible_actions()
            _, _, done, _ = env.step(rng.choice(actions))[:4]
            if done:
                env.reset()
        return steps / (time.perf_counter() - start)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=at_least(1), default=50_000, help="steps per round and env")
    parser.add_argument("--rounds", type=at_least(1), default=5, help="interleaved rounds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    runners = {"dice_poker_env (raw)": ours(False), "dice_poker_env (gym.make)": ours(True)}
    try:
        runners["gym-yahtzee"] = gym_yahtzee()
    except ImportError as error:
        print(f"gym-yahtzee not installed ({error}); pip install -e '.[bench]' to compare")
    rates: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, run in runners.items():
            rates[name].append(run(args.steps))
    result: dict[str, Any] = {
        "machine": machine_description(),
        "steps_per_second": {name: statistics.median(r) for name, r in rates.items()},
    }
    if "gym-yahtzee" in rates:
        peer = result["steps_per_second"]["gym-yahtzee"]
        result["ratio_vs_gym_yahtzee"] = {
            name: rate / peer for name, rate in result["steps_per_second"].items() if name != "gym-yahtzee"
        }
    if args.json:
        print(json.dumps(result))
        return
    print(f"random masked play on Yahtzee, {args.rounds} rounds x {args.steps} steps ({result['machine']})")
    for name, rate in result["steps_per_second"].items():
        ratio = result.get("ratio_vs_gym_yahtzee", {}).get(name)
        print(f"  {name:<28} {rate:>10,.0f} steps/s" + (f"   {ratio:.2f}x gym-yahtzee" if ratio else ""))


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
