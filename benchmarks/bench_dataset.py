"""Dataset generation speed: optimal Yahtzee games with the solver's values, written as a Minari dataset.

Writes ``--episodes`` (default 100,000, about 3.9 million steps) games of the
optimal agent with ``--with-values`` into a temporary ``MINARI_DATASETS_PATH``
(removed afterwards), exactly as ``dice-poker dataset yahtzee --agent optimal
--episodes N --with-values`` does, and reports:

* wall time of the whole command (the target: at most 3 minutes for 100,000
  games on a 2-core machine), split into playing the games (engine, agent, solver
  values) and writing the episodes (HDF5), the exact solve reported apart (it is
  cached on disk after its first run);
* the CPU time of the process (on a loaded machine, what the command would take alone);
* the machine's load average before and after, the dataset's size on disk
  (compressed HDF5; the same episodes uncompressed took 2.67 GB), steps per second;
* the time ``load_transitions`` takes to read every decision back (wall and CPU), and the CPU time of
  Minari's ``iterate_episodes`` decoding the same episodes, side by side (``--no-read`` skips both:
  ``load_transitions`` needs about 2.5 GB of memory for 100,000 games).

    python benchmarks/bench_dataset.py [--episodes 100000] [--rules yahtzee] [--obs-mode flat] [--no-read] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.evaluation.limits import MAX_EPISODES  # noqa: E402
from dice_poker_env.cli import machine_description  # noqa: E402


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--episodes",
        type=at_least(1, most=MAX_EPISODES),
        default=100_000,
        help=f"games to write (default 100,000; at most {MAX_EPISODES:,}, the dataset command's limit)",
    )
    parser.add_argument("--rules", default="yahtzee")
    parser.add_argument("--agent", default="optimal")
    parser.add_argument("--obs-mode", default="flat", choices=("flat", "dict"))
    parser.add_argument("--no-values", action="store_true", help="without --with-values")
    parser.add_argument("--no-read", action="store_true", help="do not time load_transitions")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    root = tempfile.mkdtemp(prefix="bench-dataset-")
    os.environ["MINARI_DATASETS_PATH"] = root
    try:
        from agents.evaluation.datasets import write_dataset
        from dice_poker_env.rules import load_rules
        from dice_poker_env.solver import solve

        load_before = os.getloadavg()
        clock, cpu = time.perf_counter(), cpu_seconds()
        solve(load_rules(args.rules))  # reported apart: cached on disk after its first run
        solve_seconds = time.perf_counter() - clock
        clock, cpu = time.perf_counter(), cpu_seconds()
        path = write_dataset(
            args.rules,
            args.agent,
            args.episodes,
            with_values=not args.no_values,
            obs_mode=args.obs_mode,
            progress=not args.json,
        )
        wall, cpu = time.perf_counter() - clock, cpu_seconds() - cpu
        import minari

        dataset = minari.load_dataset(path.relative_to(root).as_posix())
        info = dataset.storage.metadata["dice_poker"]
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        read_wall = read_cpu = iterate_cpu = None
        if not args.no_read:
            from agents.evaluation.datasets import load_transitions

            clock, cpu_read = time.perf_counter(), cpu_seconds()
            steps = load_transitions(path.relative_to(root).as_posix())
            read_wall, read_cpu = time.perf_counter() - clock, cpu_seconds() - cpu_read
            assert len(steps["actions"]) == dataset.total_steps
            del steps
            cpu_read = cpu_seconds()  # the same decisions through Minari's own reader
            decoded = sum(len(episode.actions) for episode in dataset.iterate_episodes())
            iterate_cpu = cpu_seconds() - cpu_read
            assert decoded == dataset.total_steps
        result = {
            "rules": args.rules,
            "agent": args.agent,
            "episodes": dataset.total_episodes,
            "steps": dataset.total_steps,
            "with_values": not args.no_values,
            "obs_mode": args.obs_mode,
            "wall_seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1),
            "play_seconds": info["seconds"]["play"],
            "write_seconds": info["seconds"]["write"],
            "solve_seconds": round(solve_seconds, 1),
            "steps_per_second": round(dataset.total_steps / wall),
            "dataset_mb": round(size / 1e6, 1),
            "read_wall_seconds": None if read_wall is None else round(read_wall, 1),
            "read_cpu_seconds": None if read_cpu is None else round(read_cpu, 1),
            "iterate_episodes_cpu_seconds": None if iterate_cpu is None else round(iterate_cpu, 1),
            "read_speedup": None if not (read_cpu and iterate_cpu) else round(iterate_cpu / read_cpu, 2),
            "mean_score": info["mean_score"],
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "machine": machine_description(),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{result['episodes']:,} {args.agent} {args.rules} episodes ({result['steps']:,} steps"
            f"{', with values' if result['with_values'] else ''}): {result['wall_seconds']} s wall "
            f"(play {result['play_seconds']} s, write {result['write_seconds']} s), {result['cpu_seconds']} s CPU, "
            f"{result['steps_per_second']:,} steps/s, {result['dataset_mb']} MB; solve {result['solve_seconds']} s apart; "
            + (
                f"load_transitions {result['read_wall_seconds']} s wall, {result['read_cpu_seconds']} s CPU "
                f"(Minari's iterate_episodes {result['iterate_episodes_cpu_seconds']} s CPU: "
                f"{result['read_speedup']}x); "
                if read_wall is not None
                else ""
            )
            + f"load average {result['load_average_before'][0]} -> {result['load_average_after'][0]} on {result['cpus']} CPUs"
        )
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
