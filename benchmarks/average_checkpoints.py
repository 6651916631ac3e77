"""Average the weights of a batched run's checkpoints (stochastic weight averaging) into a policy file.

    python benchmarks/average_checkpoints.py RUN_DIR OUT.npz --from 60000000 --to 80000000
    dice-poker evaluate yahtzee --agent model:OUT.npz

A diagnostic of the raw track's Yahtzee target (docs/benchmark.md): does a run's policy lose points to the
noise of a high learning rate (then the average of its checkpoints over a window plays better than any one of
them), or has it stopped learning? Takes every checkpoint ``checkpoints/model_<steps>_steps.pt`` of
``RUN_DIR`` with ``--from <= steps <= --to``, averages each weight tensor over them (float64, then the
network's own dtype) and writes the policy the NumPy ``PolicyAgent`` plays, its metadata the last checkpoint's
plus ``averaged_checkpoints`` (their step counts). Checkpoints are read as the trainer reads them (no code
runs; a changed or truncated file is a one-line error).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.commands.arguments import at_least  # noqa: E402 - after the path
from agents.commands.bench import check_out_file  # noqa: E402


def average(run_dir: Path, out: Path, first: int, last: int) -> tuple[Path, list[int]]:
    """Write the averaged policy of ``run_dir``'s checkpoints in ``[first, last]`` to ``out``."""
    from agents.policy.player import save_policy
    from agents.training.config import make_config, saved_run_config
    from agents.training.run import checkpoints
    from agents.training.trainer import Trainer, read_checkpoint
    from dice_poker_env import load_rules

    if not (run_dir / "checkpoints").is_dir():
        raise ValueError(f"{run_dir}: no checkpoints/ folder (not a batched trainer's run folder)")
    chosen = sorted(
        (steps, path) for steps, path in checkpoints(run_dir) if path.suffix == ".pt" and first <= steps <= last
    )
    if not chosen:
        raise ValueError(f"{run_dir}: no checkpoint from {first:,} to {last:,} steps")
    states, newest = [], {}
    for _, path in chosen:  # each file read once; the newest one's config and metadata describe the run
        newest = read_checkpoint(path)
        states.append(newest["model"])
    config = make_config(saved_run_config(dict(newest["config"])))
    rules = load_rules(config.rules, **config.rules_options)
    # the network of this run (built from its config), to hold the mean weights
    trainer = Trainer(config, rules, out.parent, metadata=newest["metadata"], log=lambda _: None)
    mean = {key: sum(state[key].double() for state in states) / len(states) for key in states[0]}
    trainer.model.load_state_dict({key: value.to(states[0][key].dtype) for key, value in mean.items()})
    steps = [step for step, _ in chosen]
    metadata = {**trainer.metadata, "timesteps": steps[-1], "averaged_checkpoints": steps}
    return save_policy(out, trainer.model.export(), metadata), steps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path, help="a batched trainer's run folder (with checkpoints/)")
    parser.add_argument("out", type=Path, help="the policy file to write (.npz)")
    parser.add_argument("--from", dest="first", type=at_least(0), default=0, help="first step count of the window")
    parser.add_argument("--to", dest="last", type=at_least(0), default=2**62, help="last step count of the window")
    parser.add_argument("--overwrite", action="store_true", help="let OUT replace an existing policy file")
    args = parser.parse_args(argv)
    target = args.out if args.out.suffix == ".npz" else args.out.with_name(args.out.name + ".npz")  # (as saved)
    try:
        if args.out.is_dir():  # (before the suffix: a folder named OUT would become OUT.npz beside it)
            raise ValueError(f"OUT {args.out}: is a folder; name the policy file to write (.npz)")
        check_out_file(target, args.overwrite, "OUT")  # before the checkpoints are read
        path, steps = average(args.run_dir, target, args.first, args.last)
    except (ValueError, OSError) as error:
        parser.exit(2, f"average_checkpoints.py: error: {error}\n")
    print(f"averaged {len(steps)} checkpoints ({steps[0]:,} - {steps[-1]:,} steps) -> {path}")


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
