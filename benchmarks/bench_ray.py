"""The overhead of going through Ray: a sweep against the same runs in sequence, RLlib against the own trainer.

Two measurements, each with ordinary commands of the repository (the figures in
docs/scale-out.md come from this script):

1. **Sweep overhead**: ``--trials`` small training runs (``configs/smoke_batched.yaml``
   at ``--steps`` steps, seeds 0, 1, ...) run one after another with plain
   ``python train.py``, then the same runs as one ``python train.py --sweep`` on
   Ray Tune embedded on this machine (``--num-cpus``). Reported: the wall-clock of
   each and the sweep's per-trial overhead against the sequence; with
   ``--num-cpus 2`` or more the sweep also runs trials in parallel.
2. **RLlib throughput**: env steps per second of training (``timesteps /
   train_seconds`` of the run's ``results.json``; Ray's start and the final
   benchmark are not in it) of ``algo: rllib_ppo`` with each ``vec_env``
   (``dummy``: gymnasium's vectorisation of single games, ``batched``: the
   project's NumPy batched env as RLlib's vector env) and ``num_env_runners``
   (0: sampling in the training process, 1: one env runner process), against
   ``algo: batched_ppo`` with the same games, rollout length, epochs,
   minibatches and network.

    python benchmarks/bench_ray.py [--trials 4] [--steps 4096] [--num-cpus 2] [--rl-steps 8192] [--json]

Every run writes to a temporary folder, removed at the end. Needs the ``ray`` and
``rllib`` extras.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's agents, not an installed copy

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke_batched.yaml"


def train(args: list[str | Path | int], env: dict[str, str]) -> float:
    """Wall-clock seconds of one ``python train.py`` command (which must succeed)."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *map(str, args)], capture_output=True, text=True, cwd=ROOT, env=env
    )
    if out.returncode != 0:
        raise SystemExit(
            f"bench_ray: train.py {' '.join(map(str, args))} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}"
        )
    return time.perf_counter() - started


def sweep_overhead(work: Path, env: dict[str, str], trials: int, steps: int, num_cpus: int) -> dict:
    import yaml

    tiny = {
        "total_timesteps": steps,
        "eval_freq": steps,
        "eval_episodes": 20,
        "checkpoint_freq": 0,
        "bench_games": 20,
        "bench_agents": ["optimal"],
        "progress_bar": False,
    }
    sequence = 0.0
    for seed in range(trials):
        sequence += train(
            [
                "--config",
                SMOKE,
                "--run-dir",
                work / f"seq{seed}",
                *[f"{k}={json.dumps(v)}" for k, v in tiny.items()],
                f"seed={seed}",
            ],
            env,
        )
    sweep_file = work / "sweep.yaml"
    sweep_file.write_text(
        yaml.safe_dump(
            {
                "configurations": {"ppo": {"config": str(SMOKE)}},
                "set": tiny,
                "seeds": list(range(trials)),
                "resources": {"cpu": 1},
            }
        )
    )
    swept = train(["--sweep", sweep_file, "--sweep-dir", work / "sweep", "--num-cpus", num_cpus], env)
    return {
        "trials": trials,
        "steps_per_trial": steps,
        "num_cpus": num_cpus,
        "sequence_seconds": round(sequence, 1),
        "sweep_seconds": round(swept, 1),
        "overhead_seconds_per_trial": round((swept - sequence) / trials, 1),
    }


def throughput(work: Path, env: dict[str, str], steps: int) -> list[dict]:
    common = [
        "n_envs=64",
        "n_steps=64",
        "batch_size=512",
        "n_epochs=2",
        "net_arch=[64, 64]",
        f"total_timesteps={steps}",
        "eval_freq=0",
        "checkpoint_freq=0",
        "bench_games=0",
        "progress_bar=false",
        "torch_threads=1",
    ]
    contenders = [("batched_ppo", ["algo=batched_ppo"])]
    for vec_env in ("dummy", "batched"):
        for runners in (0, 1):
            contenders.append(
                (
                    f"rllib_ppo vec_env={vec_env} num_env_runners={runners}",
                    ["algo=rllib_ppo", f"vec_env={vec_env}", f"num_env_runners={runners}"],
                )
            )
    rows: list[dict[str, Any]] = []
    for name, overrides in contenders:
        run_dir = work / name.replace(" ", "_").replace("=", "-")
        try:
            wall = train(["--config", SMOKE, "--run-dir", run_dir, *common, *overrides], env)
        except SystemExit as error:  # one contender's failure is reported, the others are still measured
            rows.append({"contender": name, "error": str(error).splitlines()[0][:300]})
            print(f"{name}: failed", file=sys.stderr, flush=True)
            continue
        results = json.loads((run_dir / "results.json").read_text())
        rows.append(
            {
                "contender": name,
                "timesteps": results["timesteps"],
                "train_seconds": results["train_seconds"],
                "steps_per_second": round(results["timesteps"] / max(results["train_seconds"], 1e-9)),
                "wall_seconds": round(wall, 1),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--trials", type=at_least(1), default=4, help="runs in the sweep and in the sequence (default 4)"
    )
    parser.add_argument(
        "--steps", type=at_least(1), default=4096, help="training steps of each of those runs (default 4096)"
    )
    parser.add_argument("--num-cpus", type=at_least(1), default=2, help="CPUs of the embedded Ray (default 2)")
    parser.add_argument("--rl-steps", type=at_least(1), default=8192, help="training steps of each throughput run")
    parser.add_argument("--skip-sweep", action="store_true", help="measure the RLlib throughput only")
    parser.add_argument("--skip-rllib", action="store_true", help="measure the sweep overhead only")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bray"))  # short: Ray's socket paths must fit in 107 characters
    env = {
        **os.environ,
        "RAY_TMPDIR": str(work / "r"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    env.pop("RAY_ADDRESS", None)
    (work / "r").mkdir()
    report: dict[str, Any] = {
        "machine": machine_description(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        if not args.skip_sweep:
            report["sweep"] = sweep_overhead(work, env, args.trials, args.steps, args.num_cpus)
            print(json.dumps(report["sweep"]), file=sys.stderr, flush=True)
        if not args.skip_rllib:
            report["throughput"] = throughput(work, env, args.rl_steps)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['machine']}; load average {report['load_average_at_start']} -> {report['load_average_at_end']}")
        if "sweep" in report:
            s = report["sweep"]
            print(
                f"{s['trials']} runs of {s['steps_per_trial']} steps: in sequence {s['sequence_seconds']} s, "
                f"as a sweep on {s['num_cpus']} CPUs {s['sweep_seconds']} s "
                f"({s['overhead_seconds_per_trial']:+} s per trial)"
            )
        for row in report.get("throughput", []):
            if "error" in row:
                print(f"{row['contender']:<40} failed: {row['error']}")
                continue
            print(
                f"{row['contender']:<40} {row['steps_per_second']:>8,} steps/s  "
                f"({row['timesteps']:,} steps in {row['train_seconds']} s; {row['wall_seconds']} s wall)"
            )
    return report


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
