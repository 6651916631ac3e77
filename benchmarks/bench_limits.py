"""The solver's memory and time against its estimate, on the shipped rulesets and on larger ones.

    python benchmarks/bench_limits.py [--quick] [--json FILE]      (from the repository root)

Each row is solved in a fresh process (``solve(rules, cache=False)``, one worker unless the row says two)
and measured there: the peak resident memory of that process (``ru_maxrss``; with two workers the
parent's, the workers sharing its arrays) and its wall and CPU seconds, beside what
:func:`dice_poker_env.solver.budget.estimate` said before solving. The larger rulesets add ``k`` boxes to a
shipped one, copies of its own boxes under new names: yacht's from its first box on, yahtzee's alternately an
upper box and a lower one (each copied box keeps its kind; an upper copy counts toward the upper bonus).
``--quick`` keeps the rows that solve in seconds. On a loaded machine the CPU seconds are the figure to read.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's dice_poker_env, not an installed copy

from dice_poker_env.cli import machine_description  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402
from dice_poker_env.solver import budget  # noqa: E402

#: (ruleset, extra boxes, workers); ``quick`` rows solve in seconds
ROWS = (
    ("yacht", 0, 1, True),
    ("yahtzee", 0, 1, True),
    ("yatzy", 0, 1, True),
    ("dice_poker", 0, 1, True),
    ("yacht", 4, 1, True),
    ("yacht", 6, 1, False),
    ("yahtzee", 3, 1, False),
    ("yacht", 8, 1, False),
    ("yahtzee", 4, 2, False),
    ("yacht", 9, 2, False),
)


def bigger(name: str, extra: int) -> dict[str, Any]:
    """The spec of ruleset ``name`` with ``extra`` copied boxes (module docstring)."""
    spec: dict[str, Any] = dict(copy.deepcopy(load_rules(name).raw_spec))
    spec.pop("options", None)
    if extra == 0:
        return spec
    boxes = spec["boxes"]
    upper = [b for b in boxes if b["kind"] == "face_sum"]
    lower = [b for b in boxes if b["kind"] != "face_sum"]
    order = [b for pair in zip(upper, lower) for b in pair] if spec.get("upper_bonus") else list(boxes)
    for k in range(extra):
        box = copy.deepcopy(order[k % len(order)])
        box["name"] = f"{box['name']}_{k + 2}"
        boxes.append(box)
    spec["name"] = f"{name}_plus_{extra}"
    spec.pop("title", None)
    spec.pop("description", None)
    return spec


def _child(spec_json: str, workers: int) -> None:
    """In the measured process: solve, then print its own peak memory and seconds as JSON."""
    from dice_poker_env.solver import solve

    rules = load_rules(json.loads(spec_json))
    start, cpu = time.perf_counter(), time.process_time()
    solution = solve(rules, cache=False, progress=False, workers=workers)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += children.ru_utime + children.ru_stime  # the workers' share
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"states": solution.n_states, "wall_s": wall, "cpu_s": cpu, "peak_mib": peak_mib}))


def measure(name: str, extra: int, workers: int) -> dict[str, Any]:
    spec = bigger(name, extra)
    tables = compile_rules(load_rules(spec))
    guess = budget.estimate(tables, workers=workers)
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec), str(workers)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "ruleset": name if extra == 0 else f"{name} + {extra} boxes",
        "boxes": tables.n_boxes,
        "workers": workers,
        **got,
        "estimate_mib": guess.memory_bytes / 2**20,
        "estimate_s": guess.seconds,
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the rows that solve in seconds")
    parser.add_argument("--json", type=Path, help="also write the rows, the command and the machine here")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return []
    rows = []
    print("ruleset                      boxes  workers     states    peak  estimate     wall      CPU  estimate")
    for name, extra, workers, quick in ROWS:
        if args.quick and not quick:
            continue
        row = measure(name, extra, workers)
        rows.append(row)
        print(
            f"{row['ruleset']:<28} {row['boxes']:>5}  {workers:>7} {row['states']:>10,} {row['peak_mib']:>5.0f}Mi "
            f"{row['estimate_mib']:>7.0f}Mi {row['wall_s']:>7.1f}s {row['cpu_s']:>7.1f}s {row['estimate_s']:>8.1f}s",
            flush=True,
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "command": "python benchmarks/bench_limits.py " + " ".join(sys.argv[1:]),
                    "machine": f"{machine_description()}, load average {os.getloadavg()[0]:.1f}",
                    "rows": rows,
                },
                indent=1,
            )
            + "\n"
        )
    return rows


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
