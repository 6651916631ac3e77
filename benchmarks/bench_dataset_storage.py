"""Dataset storage choices: size, write and read time of the same episodes under each HDF5 setting.

Plays one block of ``--episodes`` (default 2,000) optimal games with the solver's
values (``--rules yahtzee``, flat observations) and writes them with the dataset
writer (:class:`agents.evaluation.datasets._EpisodeWriter`) under each setting:

* ``uncompressed``: contiguous datasets, HDF5's earliest format (dataset format 1, the writer until format 2);
* ``deflate-1``, ``deflate-5`` (the writer's default), ``deflate-9``: one deflated chunk a dataset;
* ``deflate-5, no header hint``: without ``H5Pset_dset_no_attrs_hint`` (HDF5 builds where it is not reachable);
* ``deflate-5, 1 thread``: compression on the writing thread;
* ``lzf``: h5py's LZF filter instead of deflate (readable only where h5py is: not by other HDF5 tools).

Reports bytes an episode (and the 100,000-episode equivalent), write CPU and wall
milliseconds an episode, and ``load_transitions``' reader's CPU milliseconds an
episode, and checks that every setting reads back bit for bit what the
uncompressed one does.

    python benchmarks/bench_dataset_storage.py [--episodes 2000] [--rules yahtzee] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from benchmarks.bench_dataset import cpu_seconds  # noqa: E402 - after the path (its preamble is this one's)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=at_least(1), default=2_000)
    parser.add_argument("--rules", default="yahtzee")
    parser.add_argument("--json", action="store_true", help="print one JSON list")
    args = parser.parse_args(argv)

    import h5py

    from agents.evaluation import datasets
    from agents.evaluation.benchmark import game_seeds, load_solution
    from dice_poker_env.rules import load_rules

    class Lzf(datasets._EpisodeWriter):
        """The writer with h5py's LZF filter, through HDF5's filter pipeline (no direct chunk write)."""

        def _dataset(self, group: Any, name: str, data: np.ndarray, chunk: bytes | None = None) -> None:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            if self._hint is not None:
                self._hint(dcpl.id)
            if data.size:
                dcpl.set_chunk(data.shape)
                if datasets._shuffled(data.dtype):
                    dcpl.set_shuffle()
                dcpl.set_filter(h5py.h5z.FILTER_LZF, h5py.h5z.FLAG_OPTIONAL)
            space = h5py.h5s.create_simple(data.shape)
            dataset = h5py.h5d.create(group, name.encode(), self._type(data.dtype), space, dcpl=dcpl)
            if data.size:
                dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)

    rules = load_rules(args.rules)
    solution = load_solution(rules, required=True)
    policy = datasets.make_policy(datasets.parse_agent("optimal"), rules, solution)
    block = datasets.play_block(rules, policy, game_seeds(0, args.episodes), solution=solution)
    episodes = [block.episode(e) for e in range(len(block))]
    n = len(episodes)

    class Ids:
        episode_indices = np.arange(n)

    settings = [
        ("uncompressed", lambda p: datasets._EpisodeWriter(p, compress=False)),
        ("deflate-1", lambda p: datasets._EpisodeWriter(p, level=1)),
        ("deflate-5 (default)", lambda p: datasets._EpisodeWriter(p)),
        ("deflate-9", lambda p: datasets._EpisodeWriter(p, level=9)),
        ("deflate-5, no header hint", lambda p: datasets._EpisodeWriter(p, minimal_headers=False)),
        ("deflate-5, 1 thread", lambda p: datasets._EpisodeWriter(p, workers=1)),
        ("lzf", lambda p: Lzf(p)),
    ]
    results: list[dict] = []
    reference: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-dataset-storage-") as root:
        for name, make in settings:
            path = Path(root) / f"{len(results)}.hdf5"
            clock, cpu = time.perf_counter(), cpu_seconds()
            writer = make(path)
            writer.write_many(episodes)
            writer.close()
            wall, cpu = time.perf_counter() - clock, cpu_seconds() - cpu
            read_cpu = cpu_seconds()
            steps = datasets._read_hdf5(path, Ids)
            read_cpu = cpu_seconds() - read_cpu
            reference = reference or steps
            same = all(steps[k].dtype == v.dtype and steps[k].tobytes() == v.tobytes() for k, v in reference.items())
            size = path.stat().st_size
            results.append(
                {
                    "setting": name,
                    "bytes_per_episode": round(size / n),
                    "mb_per_100k_episodes": round(size / n * 1e5 / 1e6),
                    "write_cpu_ms_per_episode": round(cpu / n * 1e3, 3),
                    "write_wall_ms_per_episode": round(wall / n * 1e3, 3),
                    "read_cpu_ms_per_episode": round(read_cpu / n * 1e3, 3),
                    "bit_identical": same,
                }
            )
            path.unlink()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{n:,} optimal {args.rules} episodes with values ({sum(len(e['actions']) for e in episodes):,} steps)")
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print("| setting | bytes an episode | MB for 100,000 | write CPU ms/ep | write wall ms/ep | read CPU ms/ep |")
        print("|---|---|---|---|---|---|")
        for r in results:
            print(
                f"| {r['setting']} | {r['bytes_per_episode']:,} | {r['mb_per_100k_episodes']:,} | "
                f"{r['write_cpu_ms_per_episode']} | {r['write_wall_ms_per_episode']} | {r['read_cpu_ms_per_episode']} |"
                + ("" if r["bit_identical"] else " NOT IDENTICAL")
            )
    if not all(r["bit_identical"] for r in results):
        raise SystemExit("a setting did not read back what the uncompressed writer wrote")
    return results


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
