"""The Stable-Baselines3 adapter's step, with the single env's infos and without, side by side.

Times ``DicePokerSB3VecEnv.step`` (``step_async`` + ``step_wait``: the batched
env's step and the conversion to SB3's per-game infos) on ``--games`` Yahtzee
games (default 256), uniformly random legal actions (sampled outside the timed
call), for the two ``full_infos`` settings:

* ``full_infos=True`` (the default): every game's ``action_mask`` and ``score``,
  an ended game's ``final_score``, ``scorecard`` and illegal-action keys, as
  ``DummyVecEnv`` over the single env gives them;
* ``full_infos=False``: only the ended games' ``terminal_observation``,
  ``TimeLimit.truncated``, ``final_score`` and ``illegal_action``.

Both run in one process pinned to one core, in interleaved rounds (machine load
affects both alike); the report is each one's median time per step and their
ratio, with the batched env's own step (``venv.step``, no conversion) for
scale.

    python benchmarks/bench_sb3.py [--games 256] [--steps 2000] [--rounds 5] [--no-pin] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402

ENV_ID = "DicePoker/Yahtzee-v0"


def random_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per game."""
    return (rng.random(masks.shape) * masks).argmax(axis=1)


def adapter(games: int, full_infos: bool) -> Callable[[int], float]:
    """``run(steps)``: seconds per ``DicePokerSB3VecEnv.step`` over ``steps`` steps."""
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(ENV_ID, games, seed=0, obs_mode="flat", full_infos=full_infos)
    venv.reset()
    rng = np.random.default_rng(0)

    def run(steps: int) -> float:
        spent = 0.0
        for _ in range(steps):
            actions = random_legal(rng, venv.action_masks())
            start = time.perf_counter()
            venv.step(actions)
            spent += time.perf_counter() - start
        return spent / steps

    return run


def batched(games: int) -> Callable[[int], float]:
    """The batched env's own step (``SAME_STEP``, no conversion), for scale."""
    import gymnasium as gym

    import dice_poker_env  # noqa: F401 - registers the ids

    env = gym.make_vec(
        ENV_ID, num_envs=games, vectorization_mode="vector_entry_point", autoreset_mode="SameStep", obs_mode="flat"
    ).unwrapped
    info = env.reset(seed=0)[1]
    rng = np.random.default_rng(0)

    def run(steps: int) -> float:
        nonlocal info
        spent = 0.0
        for _ in range(steps):
            actions = random_legal(rng, info["action_mask"])
            start = time.perf_counter()
            info = env.step(actions)[4]
            spent += time.perf_counter() - start
        return spent / steps

    return run


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=at_least(1), default=256, help="games in the batch (default 256)")
    parser.add_argument("--steps", type=at_least(1), default=2000, help="timed steps per contender and round")
    parser.add_argument("--rounds", type=at_least(1), default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the process to one CPU core")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    machine = machine_description()  # (before pinning: the machine's CPUs, not the one this process keeps)
    if not args.no_pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

    runners = {
        "full_infos=True": adapter(args.games, True),
        "full_infos=False": adapter(args.games, False),
        "batched env step": batched(args.games),
    }
    for run in runners.values():  # warm up caches and the allocator
        run(50)
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, run in runners.items():
            times[name].append(run(args.steps))
    median = {name: statistics.median(t) for name, t in times.items()}
    from agents.evaluation.protocol import code_commit

    result: dict[str, Any] = {
        "games": args.games,
        "microseconds_per_step": {name: round(t * 1e6, 1) for name, t in median.items()},
        "every_round_microseconds": {name: [round(t * 1e6, 1) for t in ts] for name, ts in times.items()},
        "full_over_minimal": round(median["full_infos=True"] / median["full_infos=False"], 3),
        "command": shlex.join(["python", "benchmarks/bench_sb3.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d"),
        "git_commit": code_commit(),
        "machine": machine
        + (f", pinned to CPU {sorted(os.sched_getaffinity(0))}" if hasattr(os, "sched_getaffinity") else ""),
        "load_average": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return result
    print(
        f"DicePokerSB3VecEnv.step on {args.games} {ENV_ID} games, median of {args.rounds} rounds x {args.steps} steps"
    )
    print(f"  {result['machine']}; load average {result['load_average']}; commit {result['git_commit']}")
    for name, micro in result["microseconds_per_step"].items():
        print(f"  {name:<18} {micro:>9,.1f} us/step")
    print(f"  full infos / minimal: {result['full_over_minimal']:.3f}x")
    print(f"  command: {result['command']}")
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
