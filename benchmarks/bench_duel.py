"""Time and memory of the exact two-player solution, from 5 boxes up, and the values of ``mini_yacht``.

    python -m benchmarks.bench_duel [--boxes 5 6 7 8] [--evaluate-up-to 8] [--layout-up-to 12] [--out FILE]
    taskset -c 1 python -m benchmarks.bench_duel ...          (one core, as docs/winning.md measured it)

The rulesets: ``examples/rules/mini_yacht.toml`` (six of Yacht's boxes, no bonuses) for 6 boxes; fewer
boxes drop its boxes from the front of :data:`DROP`, more add Yacht's other boxes in the order of
:data:`ADD`. Each size is solved in a fresh process (its peak memory is its own): the pairs of states,
the stored cells (pair x point difference), the table's memory, the solve's wall and CPU time and the
process's peak resident memory; up to ``--evaluate-up-to`` boxes also seat 0's optimal value and the
expected-score-optimal (solitaire) policy's value against the optimal opponent in each seat, with the
evaluation's time. Beyond the solved sizes, up to ``--layout-up-to`` boxes, the exact cell count (the
layout needs no solve) and the solve time it implies at the largest solved size's CPU time per cell.

Writes ``--out`` (default ``results/winning/duel_mini_yacht.json``): the command, the machine, the
mini_yacht values and every row. ``--policy MODULE:FACTORY`` adds the value of another policy in each
seat against the optimal opponent (``FACTORY(rules)`` returns a ``turn_actions(my_keys, opp_keys,
diffs)`` callable) for the sizes evaluated; ``--policy winning`` is the ``winning`` agent's
(:func:`winning_policy`).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path

ROOT = Path(__file__).resolve().parents[1]
MINI_YACHT = ROOT / "examples" / "rules" / "mini_yacht.toml"
#: boxes removed, first first, below six boxes
DROP = ("fives", "sixes", "full_house", "big_straight")
#: Yacht's boxes added, first first, above six boxes
ADD = ("four_of_a_kind", "little_straight", "fours", "threes", "twos", "ones")
#: the sizes there are: every ruleset from ``6 - len(DROP)`` to ``6 + len(ADD)`` boxes
SIZE = at_least(6 - len(DROP), most=6 + len(ADD))


def ruleset(n_boxes: int) -> Any:
    """The ``n_boxes``-box ruleset: mini_yacht itself for 6, else a mapping built from it and Yacht."""
    from dice_poker_env.rules import load_rules, read_rules_file

    if n_boxes == 6:
        return load_rules(MINI_YACHT)
    spec = read_rules_file(MINI_YACHT)
    boxes = list(spec["boxes"])
    if n_boxes < 6:
        drop = set(DROP[: 6 - n_boxes])
        boxes = [b for b in boxes if b["name"] not in drop]
    else:
        yacht = load_rules("yacht").raw_spec["boxes"]
        wanted = {b["name"] for b in boxes} | set(ADD[: n_boxes - 6])
        boxes = [dict(b) for b in yacht if b["name"] in wanted]  # in Yacht's scorecard order
    if len(boxes) != n_boxes:
        raise ValueError(f"no {n_boxes}-box variant (5 to 12)")
    return load_rules({"name": f"mini_yacht_{n_boxes}", "boxes": boxes})


def winning_policy(rules: Any) -> Any:
    """The ``winning`` agent's two-player policy (``agents.players.winning.WinningAgent.turn_actions``)."""
    from agents.players.winning import WinningAgent
    from dice_poker_env.solver import solve
    from dice_poker_env.solver.reach import solve_reach

    reach, solution = solve_reach(rules, progress=False), solve(rules, progress=False)
    return WinningAgent(rules, reach=reach, solution=solution).turn_actions


def one(n_boxes: int, evaluate: bool, policy: str | None) -> dict[str, Any]:
    """Solve one size in this process: a row of the table."""
    from dice_poker_env.solver import solve
    from dice_poker_env.solver.duel import Duel, solitaire_policy

    rules = ruleset(n_boxes)
    solution = solve(rules, progress=False, cache=False, workers=1) if evaluate else None
    say(f"{n_boxes} boxes: solving the duel")
    wall, cpu = time.perf_counter(), time.process_time()
    duel = Duel(rules)
    row: dict[str, Any] = {
        "boxes": n_boxes,
        "rules": rules.name,
        "box_names": list(rules.box_names),
        "states": len(duel.keys),
        "pairs": duel.n_pairs,
        "cells": duel.n_cells,
        "table_mib": duel.table.nbytes / 2**20,
        "solve_wall_s": time.perf_counter() - wall,
        "solve_cpu_s": time.process_time() - cpu,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "value_seat_0": duel.value(),
    }
    row["cpu_us_per_cell"] = 1e6 * row["solve_cpu_s"] / duel.n_cells
    if evaluate:
        assert solution is not None
        say(f"{n_boxes} boxes: evaluating the solitaire policy in both seats")
        wall, cpu = time.perf_counter(), time.process_time()
        solitaire = solitaire_policy(solution)
        row["solitaire"] = {"seat_0": duel.evaluate(solitaire, 0), "seat_1": duel.evaluate(solitaire, 1)}
        row["evaluate_wall_s"] = time.perf_counter() - wall
        row["evaluate_cpu_s"] = time.process_time() - cpu
        if policy:
            module, _, attr = ("benchmarks.bench_duel:winning_policy" if policy == "winning" else policy).partition(":")
            factory = getattr(importlib.import_module(module), attr)
            say(
                f"{n_boxes} boxes: building the {policy} policy" + (" (its reach table)" if policy == "winning" else "")
            )
            given = factory(rules)
            say(f"{n_boxes} boxes: evaluating the {policy} policy in both seats")
            row["policy"] = {"name": policy, "seat_0": duel.evaluate(given, 0), "seat_1": duel.evaluate(given, 1)}
        row["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def say(line: str) -> None:
    """A progress line on standard error (a child's: its parent passes it on; standard output holds the row)."""
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def layout(n_boxes: int) -> dict[str, Any]:
    """The exact size of one ruleset's table, without solving it."""
    from dice_poker_env.solver.duel import Duel

    duel = Duel(ruleset(n_boxes), solve=False)
    return {"boxes": n_boxes, "states": len(duel.keys), "pairs": duel.n_pairs, "cells": duel.n_cells}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=SIZE, nargs="+", default=[5, 6, 7, 8], help="sizes to solve (5 to 12)")
    parser.add_argument("--evaluate-up-to", type=int, default=8, help="evaluate the solitaire policy up to here")
    parser.add_argument(
        "--layout-up-to",
        type=at_least(0, most=6 + len(ADD)),
        default=12,
        help="table sizes (no solve) up to here (12 at most)",
    )
    parser.add_argument(
        "--policy", default=None, help="another policy to evaluate: winning (the winning agent's), or MODULE:FACTORY"
    )
    parser.add_argument("--out", default=str(ROOT / "results" / "winning" / "duel_mini_yacht.json"))
    parser.add_argument("--one", type=SIZE, default=None, help=argparse.SUPPRESS)  # a child: one size
    parser.add_argument("--evaluate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.one, args.evaluate, args.policy)))
        return
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    pinned = f"taskset -c {','.join(map(str, affinity))} " if affinity and len(affinity) < (os.cpu_count() or 1) else ""
    command = pinned + "python -m benchmarks.bench_duel " + " ".join(sys.argv[1:] if argv is None else argv)
    machine = {
        "cpus": os.cpu_count(),
        "affinity": affinity,
        "load_average_at_start": os.getloadavg()[0],
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    print(f"machine: {machine['cpus']} CPUs, pinned to {affinity}, load average {machine['load_average_at_start']:.1f}")
    rows = []
    header = f"{'boxes':>5} {'pairs':>9} {'cells':>13} {'table':>9} {'wall':>8} {'CPU':>8} {'us/cell':>8} {'peak':>9}"
    print(header + "  value (seat 0); solitaire seat 0 / seat 1")
    for n in args.boxes:
        child = [sys.executable, "-m", "benchmarks.bench_duel", "--one", str(n)]
        if n <= args.evaluate_up_to:
            child.append("--evaluate")
        if args.policy:
            child += ["--policy", args.policy]
        done = subprocess.run(child, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True)  # (its progress: stderr)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        line = (
            f"{n:>5} {row['pairs']:>9,} {row['cells']:>13,} {row['table_mib']:>7.1f}Mi {row['solve_wall_s']:>7.1f}s "
            f"{row['solve_cpu_s']:>7.1f}s {row['cpu_us_per_cell']:>8.1f} {row['peak_rss_mib']:>7.0f}Mi  "
            f"{row['value_seat_0']:.9f}"
        )
        if "solitaire" in row:
            line += f"; {row['solitaire']['seat_0']:.9f} / {row['solitaire']['seat_1']:.9f}"
            line += f" (evaluation {row['evaluate_cpu_s']:.0f} s CPU)"
        print(line, flush=True)
    solved = max(args.boxes, default=0)
    per_cell = next((r["cpu_us_per_cell"] for r in rows if r["boxes"] == solved), None)
    sizes = []
    for n in range(solved + 1, args.layout_up_to + 1):
        size = layout(n)
        if per_cell is not None:
            size["estimated_solve_cpu_s"] = size["cells"] * per_cell * 1e-6
        size["table_mib"] = 8 * size["cells"] / 2**20
        sizes.append(size)
        print(
            f"{n:>5} {size['pairs']:>9,} {size['cells']:>13,} {size['table_mib']:>7.0f}Mi  not solved: about "
            f"{size.get('estimated_solve_cpu_s', float('nan')):,.0f} s CPU at {per_cell:.1f} us a cell",
            flush=True,
        )
    mini = next((r for r in rows if r["boxes"] == 6), None)
    result: dict[str, Any] = {
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "rules_file": str(MINI_YACHT.relative_to(ROOT)),
        "value_definition": "P(win) + P(tie)/2 of seat 0 (seat 0 moves first); seat 1's is 1 minus it",
        "solved": rows,
        "layout_only": sizes,
    }
    if mini is not None:
        result["mini_yacht"] = {
            "value_seat_0": mini["value_seat_0"],
            "value_seat_1": 1.0 - mini["value_seat_0"],
            "solitaire_vs_optimal": mini.get("solitaire"),
            "solitaire_gap_pp": None
            if "solitaire" not in mini
            else {
                "seat_0": 100 * (mini["value_seat_0"] - mini["solitaire"]["seat_0"]),
                "seat_1": 100 * (1.0 - mini["value_seat_0"] - mini["solitaire"]["seat_1"]),
            },
            "policy_vs_optimal": mini.get("policy"),
        }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main, sys.argv[1:])
