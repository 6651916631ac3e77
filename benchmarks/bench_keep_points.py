"""``keep_points``' keep term under ``torch.compile``: the table's two layouts, side by side.

The actor's ``keep_points`` term (``agents.policy.heads.PolicyHeads.points_terms``) sums,
for every row and each of the 32 keeps, the table's expected points of the row's roll times
the row's open boxes' values: ``keeps[i, a] = sum_b table[roll_i, a, b] * v[i, b]``. The
model stores the table boxes before keeps, ``(252, n_boxes, 32)``, so that the compiled sum
over boxes runs along vectors of keeps; the first layout, keeps before boxes
``(252, 32, n_boxes)``, made it one horizontal sum of 12-13 values per keep. This script
times both, compiled, for a batch of ``--rows`` (default 1,024, the trainer's) on one torch
thread: the forward alone (the rollout's call, no gradient) and the forward with its backward
(the update's), with the ruleset's real table and rolls drawn at random. It checks that the
two give the same values (within float32 rounding) first.

Each figure is the fastest of ``--repeats`` calls, in ``--rounds`` interleaved rounds; the
report is each one's median over rounds (microseconds).

    python benchmarks/bench_keep_points.py [--rules yahtzee] [--rounds 5] [--repeats 50] [--json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from dice_poker_env.cli import machine_description  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", default="yahtzee", help="ruleset whose table is used (default yahtzee)")
    parser.add_argument("--rows", type=at_least(1), default=1024, help="batch rows (default 1,024, the trainer's)")
    parser.add_argument("--rounds", type=at_least(1), default=5, help="interleaved rounds (median reported)")
    parser.add_argument("--repeats", type=at_least(1), default=50, help="calls per figure (the fastest counts)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    import torch

    from agents.policy.inputs import keep_expected_points
    from benchmarks.bench_activation import fastest  # milliseconds of the fastest call
    from dice_poker_env.rules import load_rules

    torch.set_num_threads(1)
    table = torch.from_numpy(keep_expected_points(load_rules(args.rules)))  # (252, 32, n_boxes)
    boxes_first = table.transpose(1, 2).contiguous()  # (252, n_boxes, 32): the model's layout
    generator = torch.Generator().manual_seed(0)
    roll = torch.randint(0, table.shape[0], (args.rows,), generator=generator)
    values = torch.rand(args.rows, table.shape[2], generator=generator)
    grad = torch.rand(args.rows, table.shape[1], generator=generator)

    def keeps_last(v: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return (boxes_first[r] * v[:, :, None]).sum(dim=1)

    def boxes_last(v: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return (table[r] * v[:, None, :]).sum(dim=2)

    contenders = {
        "boxes before keeps (the model's)": torch.compile(keeps_last),
        "keeps before boxes (the first layout)": torch.compile(boxes_last),
    }
    reference = boxes_last(values, roll)
    for name, fn in contenders.items():
        gap = float((fn(values, roll) - reference).abs().max())
        if gap > 1e-4 * float(reference.abs().max()):
            raise SystemExit(f"{name}: differs from the reference sum by {gap}")

    def forward(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[[], None]:
        def call() -> None:
            with torch.no_grad():
                fn(values, roll)

        return call

    def forward_backward(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[[], None]:
        def call() -> None:
            v = values.clone().requires_grad_()
            fn(v, roll).backward(grad)

        return call

    times: dict[str, dict[str, list[float]]] = {name: {"forward": [], "forward_backward": []} for name in contenders}
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            times[name]["forward"].append(1e3 * fastest(forward(fn), args.repeats))
            times[name]["forward_backward"].append(1e3 * fastest(forward_backward(fn), args.repeats))
    median = {name: {k: statistics.median(v) for k, v in t.items()} for name, t in times.items()}
    result = {
        "rules": args.rules,
        "rows": args.rows,
        "rounds": args.rounds,
        "repeats": args.repeats,
        "microseconds": median,
        "machine": f"{machine_description()}, torch {torch.__version__}",
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{args.rules}, {args.rows} rows, one torch thread ({result['machine']}); microseconds, median of "
            f"{args.rounds} rounds of the fastest of {args.repeats} calls"
        )
        for name, m in median.items():
            print(f"  {name:40} forward {m['forward']:7.1f}   forward + backward {m['forward_backward']:7.1f}")
    return result


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
