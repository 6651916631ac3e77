"""The exploratory loop behind the batched PPO recipe (docs/training.md, "How the recipe was found").

A bare loop over the trainers' own pieces (:class:`agents.training.rollout.Rollout`,
:func:`agents.training.ppo.update`, :func:`agents.training.a2c.update`, :class:`agents.training.actor_critic.ActorCritic`)
with no evaluation, checkpoints or logging, so that a variant costs nothing but its
training. Every 262,144 steps it prints the steps, seconds, steps per second (and
the rollout's alone), the mean final score of the games finished since the last
line (the *sampled* policy: lower than the greedy evaluation of ``train.py``),
the entropy and the approximate KL of the last update.

    python benchmarks/explore_recipe.py total=10e6 n_epochs=2 batch_size=1024 n_steps=16 ent=0.005 lr=2e-3

Arguments are ``key=value``: rules, n_envs (1024), n_steps (32), batch_size (4096),
n_epochs (4), vf (0.5), ent (0.001), lr (3e-4, decayed linearly to 0), total (2e6),
lam (0.8), hidden (256,256), act (tanh), features (1), algo (ppo|a2c), scale (0.02).
"""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.policy.heads import PolicyHeads, PolicyOptions  # noqa: E402
from agents.training import a2c, ppo  # noqa: E402
from agents.training.actor_critic import ActorCritic  # noqa: E402
from agents.training.rollout import Rollout  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

#: the ``key=value`` arguments this loop reads
KEYS: tuple[str, ...] = (
    "rules",
    "n_envs",
    "n_steps",
    "batch_size",
    "n_epochs",
    "vf",
    "ent",
    "lr",
    "total",
    "lam",
    "hidden",
    "act",
)
KEYS += ("features", "algo", "scale")


def main(argv: list[str]) -> None:
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return
    bad = [a for a in argv if "=" not in a or a.split("=", 1)[0] not in KEYS]
    if bad:  # (a typo would otherwise start the default run)
        raise ValueError(f"unknown argument {bad[0]!r}: arguments are key=value with a key of {', '.join(KEYS)}")
    torch.set_num_threads(1)
    args = dict(a.split("=", 1) for a in argv)
    rules = load_rules(args.get("rules", "yacht"))
    c = types.SimpleNamespace(
        n_envs=int(args.get("n_envs", 1024)),
        n_steps=int(args.get("n_steps", 32)),
        batch_size=int(args.get("batch_size", 4096)),
        n_epochs=int(args.get("n_epochs", 4)),
        clip_range=0.2,
        vf_coef=float(args.get("vf", 0.5)),
        ent_coef=float(args.get("ent", 0.001)),
        max_grad_norm=0.5,
        lr=float(args.get("lr", 3e-4)),
        total=int(float(args.get("total", 2e6))),
        lam=float(args.get("lam", 0.8)),
        hidden=[int(h) for h in args.get("hidden", "256,256").split(",")],
        act=args.get("act", "tanh"),
        features=args.get("features", "1") == "1",
        algo=args.get("algo", "ppo"),
        scale=float(args.get("scale", 0.02)),
    )
    torch.manual_seed(0)
    rollout = Rollout(rules, c.n_envs, c.n_steps, 0, reward_scale=c.scale, gae_lambda=c.lam, features=c.features)
    model = ActorCritic(PolicyHeads(rules, PolicyOptions(features=c.features)), c.hidden, c.act)
    optimizer = torch.optim.Adam(model.parameters(), lr=c.lr, eps=1e-5)
    generator = torch.Generator().manual_seed(0)
    update = {"ppo": ppo.update, "a2c": a2c.update}[c.algo]
    start, rollout_seconds, update_seconds, last = time.time(), 0.0, 0.0, 0
    while rollout.steps < c.total:
        for group in optimizer.param_groups:
            group["lr"] = c.lr * (1 - rollout.steps / c.total)
        t = time.time()
        batch = rollout.collect(model)
        rollout_seconds += time.time() - t
        t = time.time()
        stats = update(model, optimizer, batch, c, generator)  # type: ignore[arg-type]  # c: the fields update reads
        update_seconds += time.time() - t
        if rollout.steps - last >= 262_144 or rollout.steps >= c.total:
            last = rollout.steps
            scores = rollout.take_scores()
            elapsed = time.time() - start
            print(
                f"{rollout.steps:>9} {elapsed:6.0f}s  sps {rollout.steps / elapsed:7.0f} "
                f"(roll {rollout.steps / rollout_seconds:7.0f}, upd {update_seconds:.0f}s) mean {scores.mean():7.2f} "
                f"n={len(scores)} ent {stats['entropy']:.3f} kl {stats.get('approx_kl', 0):.4f}",
                flush=True,
            )


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main, sys.argv[1:])
