"""The policy's tanh layers under ``torch.compile``: ``torch.tanh`` against the trainer's :class:`Tanh`, side by side.

Under ``torch.compile`` the trainer's tanh layers (``agents.training.actor_critic.Tanh``) compute
``1 - 2 / (exp(2x) + 1)`` with the gradient ``1 - y^2`` from the output. This script times,
for a batch of ``--rows`` (default 1,024, the trainer's) on one torch thread, in bfloat16
and float32 as the CPU has them:

* the activation alone on ``rows x 256`` (compiled ``torch.tanh``, compiled ``Tanh``, and
  eager ``torch.tanh``, what ATen does without compiling, also on float32 values);
* the compiled policy forward (the rollout's call) of the default config's network;
* a compiled PPO minibatch loss with its backward pass (the update's call), also with the
  formula left to autograd (a second ``exp`` in the backward), the variant that made no gain.

Each figure is the fastest of ``--repeats`` calls (robust to other work on the machine), in
``--rounds`` interleaved rounds; the report is each one's median over rounds.

    python benchmarks/bench_activation.py [--rounds 3] [--repeats 50] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402


def fastest(call: Callable[[], object], repeats: int) -> float:
    """Milliseconds of the fastest of ``repeats`` calls (after two warm-up calls)."""
    call()
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=at_least(1), default=3, help="interleaved rounds (median reported)")
    parser.add_argument(
        "--repeats", type=at_least(1), default=50, help="calls per figure and round (the fastest counts)"
    )
    parser.add_argument(
        "--rows", type=at_least(1), default=1024, help="batch rows (default 1,024, the trainer's minibatch)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    import torch
    from torch import nn

    from agents.policy.heads import PolicyHeads, PolicyOptions
    from agents.policy.inputs import PolicyInputs
    from agents.training import actor_critic, ppo
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.rules import load_rules

    torch.set_num_threads(1)
    precision = actor_critic.resolve_precision("auto")
    dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
    rules = load_rules("yacht")  # the default config's network: yacht's policy inputs and actions
    tables = compile_rules(rules)
    rows, in_dim, n_actions = args.rows, PolicyInputs(rules).size, int(tables.n_actions)

    class AutogradFormula(nn.Module):
        """The formula with its gradient left to autograd."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return actor_critic.tanh_formula(x)

    activations = {
        "torch.tanh": nn.Tanh,
        "Tanh (formula, 1 - y^2)": actor_critic.Tanh,
        "formula, autograd gradient": AutogradFormula,
    }
    generator = torch.Generator().manual_seed(0)
    h = (torch.randn(rows, 256, generator=generator) * 2).to(dtype)
    x = torch.rand(rows, in_dim, generator=generator)
    mask = torch.rand(rows, n_actions, generator=generator) > 0.3
    mask[:, 0] = True
    actions = torch.zeros(rows, dtype=torch.int64)
    old_log_probs, advantages, returns = -torch.rand(rows, generator=generator), torch.randn(rows), torch.randn(rows)

    def setup(name: str) -> dict:
        """Compiled calls of one activation: alone, in the policy forward, in the PPO loss and backward."""
        actor_critic.ACTIVATIONS["tanh"] = activations[name]
        try:
            torch.manual_seed(0)
            model = actor_critic.ActorCritic(
                PolicyHeads(rules, PolicyOptions(box_points=4.0)), (256, 256), "tanh", precision=precision
            )
        finally:
            actor_critic.ACTIVATIONS["tanh"] = actor_critic.Tanh
        alone = torch.compile(activations[name]())
        forward = torch.compile(model)
        loss = torch.compile(ppo.loss)

        def forward_call() -> None:
            with torch.no_grad():
                forward(x, mask)

        def loss_call() -> None:
            total, _ = loss(model, x, mask, actions, old_log_probs, advantages, returns, 0.2, 0.5, 0.005)
            model.zero_grad(set_to_none=True)
            total.backward()

        return {"activation": lambda: alone(h), "policy forward": forward_call, "PPO loss + backward": loss_call}

    calls = {name: setup(name) for name in activations}
    h32 = h.float()
    calls["eager torch.tanh"] = {"activation": lambda: torch.tanh(h)}
    calls["eager torch.tanh, float32"] = {"activation": lambda: torch.tanh(h32)}
    times: dict[str, dict[str, list[float]]] = {name: {what: [] for what in c} for name, c in calls.items()}
    for _ in range(args.rounds):
        for name, group in calls.items():
            for what, call in group.items():
                times[name][what].append(fastest(call, args.repeats))
    median = {name: {what: statistics.median(t) for what, t in group.items()} for name, group in times.items()}
    result = {
        "rows": rows,
        "precision": precision,
        "rounds": args.rounds,
        "repeats": args.repeats,
        "milliseconds": times,
        "median_ms": median,
        "machine": f"{machine_description()}, torch {torch.__version__}",
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{rows} rows, {precision}, fastest of {args.repeats} calls, median of {args.rounds} rounds (ms):")
        for name, group in median.items():
            print(f"  {name:30s} " + "  ".join(f"{what} {ms:7.3f}" for what, ms in group.items()))
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
