"""Training throughput: env steps per second of whole training (rollouts and updates), side by side.

Contenders, in one process on one torch thread, in interleaved rounds (machine
load affects both alike; the report is each one's median):

* SB3 / sb3-contrib ``MaskablePPO`` with today's default config
  (``configs/maskable_ppo_yacht.yaml``: 128 batched games, 128 steps each per
  rollout, 10 epochs of minibatches of 1,024), built by ``train.py`` itself;
* the project's batched PPO trainer (``agents/training/trainer.py`` + ``agents/training/ppo.py``)
  with its recipe config as it is (default ``configs/batched_ppo_yacht.yaml``:
  ``precision: auto``, i.e. bfloat16 on CPUs with bf16 matrix units, and
  ``compile: true``), and the same in float32 without ``torch.compile`` (what
  any CPU gets).

Both use actor and critic networks of the same size (``--net-arch``, default
256 x 256, tanh). Each round trains a fresh model for ``--updates`` rollouts
(plus one warm-up rollout not timed: it holds torch.compile's one-off 10-30 s)
and counts env steps per second of wall clock, evaluation and checkpoints off.
The ratio is new / SB3.

The contenders run their own recipes, which do not do the same work per env
step: SB3's config makes 10 passes over each rollout in minibatches of 1,024
(160 gradient steps per 16,384 env steps), the batched config 2 passes in
minibatches of 2,048 (16 gradient steps), and the two reach their scores in
different numbers of env steps (2.5M and 24M in their configs). So the ratio
compares the two recipes' steps per second, not the same update's speed; the
output records each side's passes and gradient steps (``work_per_rollout``).
``--same-update`` adds the batched trainer with SB3's ``n_epochs`` and
``batch_size`` (the same gradient work per env step; its ratio is
``ratio_same_update``).

Cost: each round trains a fresh model per contender: SB3 at about 7,000 env
steps/s, i.e. 2-3 s per rollout of 16,384 steps, the compiled trainer after its
10-30 s of ``torch.compile`` (2 vCPU Intel Xeon, idle,
``results/bench/bench_train_2026-12-02j.json``): about half a minute to a
minute per round.

    python benchmarks/bench_train.py [--rounds 3] [--updates 3] [--rules yacht] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402


def load_train() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_script", ROOT / "train.py")
    assert spec is not None and spec.loader is not None  # a .py file's path always has a spec with a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_script"] = module
    spec.loader.exec_module(module)
    return module


def config_from(train: ModuleType, path: Path, overrides: list[str]) -> Any:
    import yaml

    return train.make_config(yaml.safe_load(path.read_text()), overrides)


def time_sb3(train: ModuleType, config: Any, updates: int) -> float:
    """Env steps/s of MaskablePPO.learn over ``updates`` rollouts (after one warm-up rollout)."""
    from dice_poker_env.rules import load_rules

    rules = load_rules(config.rules, **config.rules_options)
    per_update = config.n_envs * config.n_steps
    with tempfile.TemporaryDirectory() as tmp:
        env = train.make_vec_env(config, rules, config.n_envs, config.seed, training=True)
        model = train.build_model(config, env, Path(tmp))
        model.learn(per_update, progress_bar=False)  # warm-up: first rollout and update
        start = time.perf_counter()
        model.learn(per_update * updates, progress_bar=False, reset_num_timesteps=False)
        seconds = time.perf_counter() - start
        env.close()
    return per_update * updates / seconds


def time_batched(config: Any, updates: int) -> float:
    """Env steps/s of the batched trainer over ``updates`` rollouts (after one warm-up rollout)."""
    from agents.training.trainer import Trainer
    from dice_poker_env.rules import load_rules

    rules = load_rules(config.rules, **config.rules_options)
    per_update = config.n_envs * config.n_steps
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(config, rules, tmp, log=lambda _: None)
        trainer.run(progress=False, stop_at=per_update)  # warm-up
        start = time.perf_counter()
        trainer.run(progress=False, stop_at=per_update * (updates + 1))
        seconds = time.perf_counter() - start
    return per_update * updates / seconds


def main(argv: list[str] | None = None) -> dict:
    paragraphs = __doc__.split("\n\n")
    cost = next(p for p in paragraphs if p.startswith("Cost:"))
    parser = argparse.ArgumentParser(description=f"{paragraphs[0]} {' '.join(cost.split())}")
    parser.add_argument("--rounds", type=at_least(1), default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--updates", type=at_least(1), default=3, help="timed rollouts+updates per contender and round")
    parser.add_argument("--rules", default="yacht", help="ruleset (default yacht, the default config's)")
    parser.add_argument("--net-arch", default="[256, 256]", help="hidden layers of both contenders")
    parser.add_argument("--batched-config", type=Path, default=ROOT / "configs" / "batched_ppo_yacht.yaml")
    parser.add_argument("--sb3-config", type=Path, default=ROOT / "configs" / "maskable_ppo_yacht.yaml")
    parser.add_argument(
        "--same-update",
        action="store_true",
        help="also time the batched trainer with SB3's n_epochs and batch_size (the same gradient work per env step)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    import torch

    from agents.training.actor_critic import resolve_precision

    torch.set_num_threads(1)
    train = load_train()
    common = [
        f"rules={args.rules}",
        f"net_arch={args.net_arch}",
        "eval_freq=0",
        "checkpoint_freq=0",
        "progress_bar=false",
        "bench_games=0",
    ]
    huge = ["total_timesteps=1000000000"]  # the linear schedules run far from their end
    sb3 = config_from(train, args.sb3_config, common + huge)
    batched = config_from(train, args.batched_config, common + huge)
    portable = config_from(train, args.batched_config, common + huge + ["precision=float32", "compile=false"])
    same = config_from(
        train, args.batched_config, common + huge + [f"n_epochs={sb3.n_epochs}", f"batch_size={sb3.batch_size}"]
    )
    rates: dict[str, list[float]] = {"sb3_maskable_ppo": [], "batched_ppo": [], "batched_ppo_float32_eager": []}
    if args.same_update:
        rates["batched_ppo_sb3_update"] = []
    for round_ in range(args.rounds):
        rates["sb3_maskable_ppo"].append(time_sb3(train, sb3, args.updates))
        rates["batched_ppo"].append(time_batched(batched, args.updates))
        rates["batched_ppo_float32_eager"].append(time_batched(portable, args.updates))
        if args.same_update:
            rates["batched_ppo_sb3_update"].append(time_batched(same, args.updates))
        if not args.json:
            print(
                f"round {round_ + 1}: SB3 {rates['sb3_maskable_ppo'][-1]:8,.0f} steps/s   "
                f"batched {rates['batched_ppo'][-1]:8,.0f} steps/s   "
                f"batched float32 eager {rates['batched_ppo_float32_eager'][-1]:8,.0f} steps/s"
                + (
                    f"   batched with SB3's update {rates['batched_ppo_sb3_update'][-1]:8,.0f} steps/s"
                    if args.same_update
                    else ""
                ),
                flush=True,
            )
    medians = {k: statistics.median(v) for k, v in rates.items()}
    work = {
        name: {
            "env_steps": config.n_envs * config.n_steps,
            "passes": config.n_epochs,
            "gradient_steps": config.n_epochs * minibatches(config.n_envs * config.n_steps, config.batch_size),
        }
        for name, config, minibatches in (
            ("sb3_maskable_ppo", sb3, lambda size, batch: -(-size // batch)),  # SB3 keeps the last, short one
            ("batched_ppo", batched, lambda size, batch: max(1, size // batch)),  # agents/training/ppo.py: whole ones
            ("batched_ppo_sb3_update", same, lambda size, batch: max(1, size // batch)),
        )
        if name in rates
    }
    result = {
        "rules": args.rules,
        "net_arch": json.loads(args.net_arch),
        "rounds": args.rounds,
        "updates": args.updates,
        "sb3_config": {k: getattr(sb3, k) for k in ("n_envs", "n_steps", "n_epochs", "batch_size")},
        "batched_config": {
            k: getattr(batched, k) for k in ("n_envs", "n_steps", "n_epochs", "batch_size", "precision", "compile")
        },
        "batched_precision": resolve_precision(batched.precision),
        "steps_per_second": rates,
        "median": medians,
        "ratio": medians["batched_ppo"] / medians["sb3_maskable_ppo"],
        "ratio_float32_eager": medians["batched_ppo_float32_eager"] / medians["sb3_maskable_ppo"],
        "work_per_rollout": work,
        "machine": f"{machine_description()}, torch {torch.__version__}",
        "load_average": os.getloadavg()[0],
    }
    if args.same_update:
        result["ratio_same_update"] = medians["batched_ppo_sb3_update"] / medians["sb3_maskable_ppo"]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"median: SB3 MaskablePPO {medians['sb3_maskable_ppo']:,.0f} steps/s, batched PPO "
            f"({result['batched_precision']}, compile={batched.compile}) {medians['batched_ppo']:,.0f} steps/s: "
            f"{result['ratio']:.1f}x, float32 eager {medians['batched_ppo_float32_eager']:,.0f} steps/s: "
            f"{result['ratio_float32_eager']:.1f}x  (load average {result['load_average']:.1f})"
        )
        for name, done in work.items():
            print(
                f"  {name}: {done['passes']} passes, {done['gradient_steps']} gradient steps per rollout of "
                f"{done['env_steps']:,} env steps"
            )
        if args.same_update:
            print(f"  batched with SB3's update: {result['ratio_same_update']:.1f}x (the same work per env step)")
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
