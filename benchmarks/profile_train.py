"""Where the batched trainer's time goes: ``torch.profiler`` over rollouts and PPO updates of a config.

Builds the trainer of ``--config`` (default: the default config, as it is: bfloat16
where the CPU has bf16 matrix units, ``torch.compile``), warms it up (compiling),
then profiles ``--updates`` rollouts and updates on one torch thread and prints the
wall time of each phase and the costliest operators of each (self CPU time).

    python benchmarks/profile_train.py [--config configs/batched_ppo_yacht.yaml] [--updates 3] [key=value ...]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agents.commands.arguments import at_least  # noqa: E402 - after the path


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "batched_ppo_yacht.yaml")
    parser.add_argument("--updates", type=at_least(1), default=3, help="profiled rollouts and updates (default 3)")
    parser.add_argument("--rows", type=at_least(1), default=8, help="operators listed per phase (default 8)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    args = parser.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    from agents.training.trainer import Trainer
    from benchmarks.bench_train import config_from, load_train
    from dice_poker_env.rules import load_rules

    torch.set_num_threads(1)
    train = load_train()
    config = config_from(
        train,
        args.config,
        [
            "eval_freq=0",
            "checkpoint_freq=0",
            "progress_bar=false",
            "bench_games=0",
            "total_timesteps=1000000000",
            *args.overrides,
        ],
    )
    rules = load_rules(config.rules, **config.rules_options)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(config, rules, tmp, log=lambda _: None)
        per_update = config.n_envs * config.n_steps
        trainer.run(progress=False, stop_at=2 * per_update)  # warm-up: compiling happens here
        seconds = {"rollout": 0.0, "update": 0.0}
        tables = {}
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            batches = []
            for _ in range(args.updates):
                start = time.perf_counter()
                batches.append(trainer.rollout.collect(trainer.policy))
                seconds["rollout"] += time.perf_counter() - start
        tables["rollout"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in batches:
                start = time.perf_counter()
                trainer.update_rule(trainer.model, trainer.optimizer, batch, config, trainer.generator)
                seconds["update"] += time.perf_counter() - start
        tables["update"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows)
    total = sum(seconds.values())
    result = {phase: s / args.updates for phase, s in seconds.items()}
    print(
        f"per rollout of {per_update:,} steps: rollout {result['rollout']:.3f} s, update {result['update']:.3f} s "
        f"({100 * seconds['update'] / total:.0f}% of the two); {per_update / (total / args.updates):,.0f} env steps/s"
    )
    for phase, table in tables.items():
        print(f"\n{phase} (self CPU time):\n{table}")
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
