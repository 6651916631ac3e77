"""Batched-env speed: random masked play on Yahtzee, steps per second, side by side.

Measured in one process, pinned to one CPU core, in interleaved rounds (so that
machine load affects every contender alike; the report is each one's median):

* ``DicePokerVectorEnv`` (``gymnasium.make_vec(..., vectorization_mode=
  "vector_entry_point")``, unwrapped) at N = 1, 64, 1024, 4096, 16384 games
  (dict observations, the default), and at N = 4096 with ``obs_mode="flat"``;
* the single env (``DicePokerEnv``), unwrapped (the ratios' base) and through
  ``gymnasium.make`` (with its default wrappers);
* Gymnasium's ``SyncVectorEnv`` over 64 single envs;
* the ``gym-yahtzee`` package (its ``YahtzeeSingleEnv`` driven directly, legal
  actions from ``env.pyhtzee.get_possible_actions()``; its ``gym.make`` path
  breaks under NumPy 2), when installed.

A step of a batched env counts one env step per game it advanced: a game's
``NEXT_STEP`` autoreset step (the step after it ended, which only deals its new
game, as ``reset()`` does for the single env) is not counted, so every contender
counts the same steps per game (counting the reset steps too, as this script did
until 2026-12-06, adds one step per game to the batched envs and to
``SyncVectorEnv``). Every contender plays uniformly
random legal actions. The batched harness samples them in a few array
operations from the ``(N, 32 + n)`` mask: the number of legal actions per row
(31 keeps while rerolls are left, plus the legal boxes), a uniform index among
them, and a lookup table giving the k-th legal box of a box bitmask. This is
exact uniform masked sampling, just cheaper than per-row ``rng.choice``; its
cost is included in the headline rate and also reported apart ("env only").

Then memory: RSS of the process over 10 million batched steps (N = 4096),
sampled every million.

Optionally (``--optimal 100000``) the solver's optimal agent playing that many
Yahtzee games on the batched env (``SAME_STEP`` autoreset, batched Q lookups).

    python benchmarks/bench_vector.py [--seconds 1.0] [--rounds 3] [--memory-steps 10000000]
        [--optimal 100000] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least, more_than  # noqa: E402
from dice_poker_env.cli import machine_description  # noqa: E402

ENV_ID = "DicePoker/Yahtzee-v0"
BATCH_SIZES = (1, 64, 1024, 4096, 16384)
SYNC_ENVS = 64


class MaskedSampler:
    """Uniform random legal actions for a batch of ``(N, 32 + n)`` int8 masks."""

    def __init__(self, n_boxes: int, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.n_boxes = n_boxes
        self.weights = (1 << np.arange(n_boxes)).astype(np.float32)  # exact: bitmasks < 2**24
        # nth[bits * n + k] = the k-th set bit of bits (the k-th legal box)
        bits = np.arange(1 << n_boxes)
        nth = np.zeros((1 << n_boxes, n_boxes), dtype=np.int64)
        for b in range(n_boxes):
            has = ((bits >> b) & 1) == 1
            nth[bits[has], np.bitwise_count(bits[has] & ((1 << b) - 1))] = b
        self.nth = nth.ravel()

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        keeps = masks[:, 0].astype(np.int64) * 31  # keeps 0..30 are legal together, while rerolls are left
        boxes = (masks[:, 32:].astype(np.float32) @ self.weights).astype(np.int64)
        count = keeps + np.bitwise_count(boxes)
        pick = (self.rng.random(len(masks)) * count).astype(np.int64)
        box = np.take(self.nth, boxes * self.n_boxes + np.maximum(pick - keeps, 0))
        return np.where(pick < keeps, pick, 32 + box)


def batched(num_envs: int, obs_mode: str = "dict") -> Callable[[float], float]:
    import gymnasium as gym

    import dice_poker_env  # noqa: F401 - registers the ids

    env = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point", obs_mode=obs_mode).unwrapped
    sample = MaskedSampler(env.tables.n_boxes)
    state: dict[str, Any] = {"info": env.reset(seed=0)[1], "ending": 0}
    env_time = [0.0]

    counts = {"env_steps": 0, "batched_steps": 0}

    def run(seconds: float) -> float:
        info, ending, steps, calls, env_seconds = state["info"], state["ending"], 0, 0, 0.0
        start = time.perf_counter()
        now = start
        while now - start < seconds:
            actions = sample(info["action_mask"])
            t0 = time.perf_counter()
            _, _, terminated, _, info = env.step(actions)
            now = time.perf_counter()
            env_seconds += now - t0
            steps += num_envs - ending  # the games that ended last step only start over in this one
            ending = int(np.count_nonzero(terminated))
            calls += 1
        state["info"], state["ending"] = info, ending
        counts["env_steps"], counts["batched_steps"] = steps, calls
        env_time[0] = steps / env_seconds
        return steps / (now - start)

    run.env_only = env_time  # type: ignore[attr-defined]
    run.counts = counts  # type: ignore[attr-defined]
    return run


def single(wrapped: bool = False) -> Callable[[float], float]:
    import gymnasium as gym

    import dice_poker_env  # noqa: F401

    env = gym.make(ENV_ID)
    env = env if wrapped else env.unwrapped
    rng = random.Random(0)
    state = {"info": env.reset(seed=0)[1]}

    def run(seconds: float) -> float:
        info, steps = state["info"], 0
        start = time.perf_counter()
        deadline = start + seconds
        while True:
            for _ in range(200):
                legal = info["action_mask"].nonzero()[0]
                _, _, terminated, _, info = env.step(int(legal[rng.randrange(len(legal))]))
                if terminated:
                    _, info = env.reset()
            steps += 200
            now = time.perf_counter()
            if now > deadline:
                break
        state["info"] = info
        return steps / (now - start)

    return run


def sync_vector() -> Callable[[float], float]:
    import gymnasium as gym

    import dice_poker_env  # noqa: F401

    env = gym.make_vec(ENV_ID, num_envs=SYNC_ENVS, vectorization_mode="sync")
    rng = np.random.default_rng(0)
    state: dict[str, Any] = {"info": env.reset(seed=0)[1], "ending": 0}

    def run(seconds: float) -> float:
        info, ending, steps = state["info"], state["ending"], 0
        start = time.perf_counter()
        now = start
        while now - start < seconds:
            masks = info["action_mask"]
            noise = rng.random(masks.shape) * masks
            actions = np.where(masks.any(axis=1), noise.argmax(axis=1), 0)  # ended games: ignored (next-step reset)
            _, _, terminated, _, info = env.step(actions)
            steps += SYNC_ENVS - ending  # as in batched(): a game's autoreset step is not an env step
            ending = int(np.count_nonzero(terminated))
            now = time.perf_counter()
        state["info"], state["ending"] = info, ending
        return steps / (now - start)

    return run


def gym_yahtzee() -> Callable[[float], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from gym_yahtzee.envs.yahtzee_env import YahtzeeSingleEnv
    env = YahtzeeSingleEnv()
    rng = random.Random(0)
    env.reset()

    def run(seconds: float) -> float:
        steps = 0
        start = time.perf_counter()
        deadline = start + seconds
        while True:
            for _ in range(200):
                _, _, done, _ = env.step(rng.choice(env.pyhtzee.get_possible_actions()))[:4]
                if done:
                    env.reset()
            steps += 200
            now = time.perf_counter()
            if now > deadline:
                break
        return steps / (now - start)

    return run


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory(total_steps: int, num_envs: int = 4096) -> dict[str, object]:
    """RSS (MiB) every million env steps over ``total_steps`` batched env steps."""
    import gymnasium as gym

    import dice_poker_env  # noqa: F401

    env = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point").unwrapped
    sample = MaskedSampler(env.tables.n_boxes)
    info = env.reset(seed=1)[1]
    for _ in range(50):  # warm up allocator and caches
        info = env.step(sample(info["action_mask"]))[4]
    samples = [rss_mib()]
    done, next_mark = 0, 1_000_000
    start = time.perf_counter()
    while done < total_steps:
        info = env.step(sample(info["action_mask"]))[4]
        done += num_envs
        if done >= next_mark:
            samples.append(rss_mib())
            next_mark += 1_000_000
    elapsed = time.perf_counter() - start
    return {
        "num_envs": num_envs,
        "env_steps": done,
        "seconds": elapsed,
        "rss_mib_every_million": [round(s, 1) for s in samples],
        "rss_growth_mib": round(samples[-1] - samples[0], 1),
        "rss_growth_after_first_million_mib": round(samples[-1] - samples[1], 1) if len(samples) > 1 else 0.0,
    }


def optimal(n_games: int, num_envs: int = 20_000) -> dict[str, object]:
    """Games per second of the solver's optimal agent on the batched env (``SAME_STEP``, batched Q lookups)."""
    import gymnasium as gym

    import dice_poker_env  # noqa: F401
    from agents.players.optimal import OptimalAgent

    start = time.perf_counter()
    agent = OptimalAgent("yahtzee", progress=False)
    solve_seconds = time.perf_counter() - start
    env = gym.make_vec(
        ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point", autoreset_mode="SameStep"
    ).unwrapped
    obs, info = env.reset(seed=2)
    # each game slot plays the same number of whole games: counting the first n games to end
    # would favour games that took fewer rolls
    per_slot = -(-n_games // num_envs)
    returns = np.zeros(num_envs)
    played = np.zeros(num_envs, dtype=np.int64)
    finals: list[np.ndarray] = []
    steps = 0
    start = time.perf_counter()
    while (played < per_slot).any():
        obs, reward, terminated, _, info = env.step(agent.act_batch(obs, info["action_mask"]))
        steps += 1
        returns += reward
        if terminated.any():
            counted = terminated & (played < per_slot)
            finals.append(returns[counted].copy())
            returns[terminated] = 0
            played += terminated
    elapsed = time.perf_counter() - start
    scores = np.concatenate(finals)
    games = len(scores)
    return {
        "num_envs": num_envs,
        "games": games,
        "seconds": elapsed,
        "games_per_second": games / elapsed,
        "batched_steps": steps,
        "mean_score": float(scores.mean()),
        "standard_error": float(scores.std() / np.sqrt(len(scores))),
        "solution_load_seconds": solve_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=more_than(0), default=1.0, help="seconds per contender and round")
    parser.add_argument("--rounds", type=at_least(1), default=3, help="interleaved rounds")
    parser.add_argument(
        "--memory-steps", type=at_least(0), default=10_000_000, help="env steps of the RSS check (0: skip)"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin the process to one CPU core")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--optimal", type=at_least(0), default=0, help="also play this many games with the optimal agent"
    )
    args = parser.parse_args()

    if not args.no_pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

    runners = {f"batched N={n}": batched(n) for n in BATCH_SIZES}
    runners["batched N=4096, flat obs"] = batched(4096, obs_mode="flat")
    runners["single env"] = single()
    runners["single env (gym.make)"] = single(wrapped=True)
    runners[f"SyncVectorEnv x{SYNC_ENVS} single"] = sync_vector()
    notes = []
    try:
        runners["gym-yahtzee"] = gym_yahtzee()
    except Exception as error:  # ImportError, or its old gym failing under NumPy 2
        notes.append(f"gym-yahtzee unavailable: {error!r}; pip install -e '.[bench]'")
    rates: dict[str, list[float]] = {name: [] for name in runners}
    env_only: dict[str, list[float]] = {name: [] for name in runners if name.startswith("batched")}
    for _ in range(args.rounds):
        for name, run in runners.items():
            rates[name].append(run(args.seconds))
            if name in env_only:
                env_only[name].append(run.env_only[0])  # type: ignore[attr-defined]  # set by batched()
    per_second = {name: statistics.median(r) for name, r in rates.items()}
    base = per_second["single env"]
    result: dict[str, Any] = {
        "machine": f"{machine_description()}, "
        f"pinned to {sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}",
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "steps_per_second": per_second,
        "env_only_steps_per_second": {name: statistics.median(r) for name, r in env_only.items()},
        "ratio_vs_single_env": {name: rate / base for name, rate in per_second.items()},
        "targets": {
            "batched N=4096 >= 50x single env": per_second["batched N=4096"] / base >= 50,
            "batched N=4096 >= 2,000,000 steps/s": per_second["batched N=4096"] >= 2_000_000,
        },
        "notes": notes,
    }
    if "gym-yahtzee" in per_second:
        result["ratio_vs_gym_yahtzee"] = {n: r / per_second["gym-yahtzee"] for n, r in per_second.items()}
    if args.memory_steps:
        result["memory"] = memory(args.memory_steps)
    if args.optimal:
        try:
            result["optimal_agent"] = optimal(args.optimal)
        except ImportError as error:
            notes.append(f"optimal agent unavailable: {error!r}")
    if args.json:
        print(json.dumps(result))
        return
    print(f"random masked play on Yahtzee, {args.rounds} rounds x {args.seconds}s each ({result['machine']})")
    print(f"load average at the end: {result['load_average']}")
    print(f"  {'contender':<28} {'steps/s':>12} {'env only':>12} {'x single':>9}")
    for name, rate in per_second.items():
        only = result["env_only_steps_per_second"].get(name)
        print(
            f"  {name:<28} {rate:>12,.0f} {(f'{only:,.0f}' if only else ''):>12} "
            f"{result['ratio_vs_single_env'][name]:>8.1f}x"
        )
    if "ratio_vs_gym_yahtzee" in result:
        print(f"  batched N=4096 vs gym-yahtzee: {result['ratio_vs_gym_yahtzee']['batched N=4096']:.0f}x")
    for target, met in result["targets"].items():
        print(f"  target {target}: {'met' if met else 'NOT met'}")
    for note in notes:
        print(f"  note: {note}")
    if "memory" in result:
        mem = result["memory"]
        print(
            f"memory over {mem['env_steps']:,} steps (N={mem['num_envs']}, {mem['seconds']:.1f}s): "
            f"RSS MiB per million steps {mem['rss_mib_every_million']}, growth {mem['rss_growth_mib']} MiB"
        )
    if "optimal_agent" in result:
        opt = result["optimal_agent"]
        print(
            f"optimal agent, batched (N={opt['num_envs']}): {opt['games']:,} games in {opt['seconds']:.1f}s = "
            f"{opt['games_per_second']:,.0f} games/s, mean score {opt['mean_score']:.2f} +- {opt['standard_error']:.2f}"
        )


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
