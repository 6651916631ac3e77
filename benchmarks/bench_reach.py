"""Time and memory of the reach solve (the maximum probability of reaching every target from every state).

    python -m benchmarks.bench_reach [--workers N] [--no-distribution] [--cache] [RULES ...]   (from the repository root)

Per ruleset (default: yacht): the states, the stored cells (state x target), the table's memory, the
wall and CPU time of the solve (the expected-score solve it needs for the policy's distribution is done
first and not counted), this process's peak memory (its forked workers share the table; their own
peaks are shown apart), the probability of reaching a few targets from the empty scorecard and the
expected-score policy's mean. Runs in a temporary cache and key folder, unless ``--cache``: then the
solved tables go to the user's solver cache, where ``solve_reach`` (the ``winning`` agent, ``dice-poker
solve --target``) finds them. CPU time is given because the machine may be shared: wall time then
depends on the load, CPU time less so. Each ruleset's figures also go to
``results/winning/bench_reach_<rules>_<table|table_and_distribution>_w<workers>.json`` (``--out``), with
the command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402


class LayerLines:
    """A tqdm-like progress (``reset``, ``update``) printing the states done with the wall and CPU time so far
    (CPU of this process: use ``--workers 1`` for a per-layer CPU rate)."""

    def __init__(self) -> None:
        self.total, self.done = 1, 0
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def reset(self, total: int | None = None) -> None:
        self.total, self.done = int(total or 1), 0
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def update(self, n: int = 1) -> None:
        self.done += int(n)
        print(
            f"  {self.done:,}/{self.total:,} states, {time.perf_counter() - self.wall:.0f} s wall, "
            f"{time.process_time() - self.cpu:.0f} s CPU",
            flush=True,
        )


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rules", nargs="*", default=["yacht"])
    parser.add_argument("--workers", type=at_least(1), default=None, help="worker processes (default: the solver's)")
    parser.add_argument("--no-distribution", action="store_true", help="skip the expected-score policy's distribution")
    parser.add_argument("--progress", action="store_true", help="a line per layer (or piece of one) solved")
    parser.add_argument(
        "--cache", action="store_true", help="use (and fill) the user's solver cache, not a temporary one"
    )
    parser.add_argument(
        "--out", default=os.path.join(ROOT, "results", "winning"), help="the folder of the JSON files ('' for none)"
    )
    args = parser.parse_args(argv)
    command = "python -m benchmarks.bench_reach " + " ".join(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory() as root:
        if not args.cache:
            os.environ["DICE_POKER_CACHE"] = os.path.join(root, "cache")
            os.environ["DICE_POKER_KEY_DIR"] = os.path.join(root, "key")
        import numpy as np

        from dice_poker_env.engine.tables import compile_rules
        from dice_poker_env.rules import load_rules
        from dice_poker_env.solver import solve
        from dice_poker_env.solver.reach_dp import solve_reach_dp

        load = os.getloadavg()[0]
        print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} at the start", flush=True)
        for name in args.rules:
            rules = load_rules(name)
            solution = None if args.no_distribution else solve(rules, progress=False, workers=args.workers)
            wall, cpu = time.perf_counter(), time.process_time()
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            progress = LayerLines() if args.progress else None
            dp = solve_reach_dp(compile_rules(rules), solution=solution, workers=args.workers, progress=progress)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (
                time.process_time() - cpu + (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
            )
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            worker_peak = after.ru_maxrss / 1024
            row = dp.row(0)
            reach = {t: float(row[min(max(t - int(dp.lo[0]), 0), len(row) - 1)]) for t in (150, 200, 250, 300, 400)}
            line = (
                f"{name}: {len(dp.keys):,} states, {dp.prob.size:,} cells ({dp.prob.nbytes / 2**20:.0f} MiB), "
                f"solve {wall:.1f} s wall, {cpu:.1f} s CPU, peak {peak:.0f} MiB (a worker {worker_peak:.0f} MiB); "
                + ", ".join(f"P(>= {t}) {p:.6g}" for t, p in reach.items())
            )
            if len(dp.policy):
                assert solution is not None  # the policy's rows are computed only from a solution
                tail = dp.policy_row(0)  # P(final score >= each score)
                pmf = tail[:-1] - tail[1:]
                scores = np.arange(len(pmf)) + int(dp.lo[0])
                line += f"; policy mean {float(pmf @ scores):.9f} (expected score {solution.expected_score:.9f})"
            print(line, flush=True)
            if args.out:
                from dice_poker_env.solver.backward import default_workers

                workers = args.workers or default_workers()
                kind = "table" if args.no_distribution else "table_and_distribution"
                record = {
                    "rules": name,
                    "rules_fingerprint": rules.fingerprint,
                    "solved": kind,
                    "workers": workers,
                    "states": len(dp.keys),
                    "cells": int(dp.prob.size),
                    "table_mib": dp.prob.nbytes / 2**20,
                    "wall_seconds": wall,
                    "cpu_seconds": cpu,
                    "peak_mib": peak,
                    "worker_peak_mib": worker_peak,
                    "reach_from_start": {str(t): p for t, p in reach.items()},
                    "load_average_start": load,
                    "load_average_end": os.getloadavg()[0],
                    "command": command,
                    "machine": machine_description(),
                    "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                os.makedirs(args.out, exist_ok=True)
                path = os.path.join(args.out, f"bench_reach_{name}_{kind}_w{workers}.json")
                with open(path, "w") as handle:
                    handle.write(json.dumps(record, indent=1) + "\n")
                print(f"  -> {path}", flush=True)
            if args.cache:
                from dice_poker_env.solver.reach import Reach, store

                store(Reach(rules, dp))


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main, sys.argv[1:])
