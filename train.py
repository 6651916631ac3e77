"""Train an RL agent on a dice game, then benchmark it against the exact solver.

    python train.py                                   # batched PPO on yacht (configs/batched_ppo_yacht.yaml)
    python train.py --config configs/batched_pqn_yacht.yaml   # masked PQN (agents/training/pqn.py)
    python train.py --config configs/maskable_ppo_yacht.yaml  # SB3's MaskablePPO (the previous default)
    python train.py --config configs/smoke.yaml --run-dir /tmp/smoke total_timesteps=4096 seed=3
    python train.py --run-dir runs/my_run --resume    # continue from the run's latest checkpoint
    python train.py --run-dir runs/my_run --overwrite # start runs/my_run again from scratch
    python train.py --sweep configs/sweeps/yacht_algorithms.yaml  # many runs on Ray Tune (agents/training/sweep.py)
    python train.py --help                            # every config field with its documentation, by algorithm

The entry point only: parse, build, run, report. The config (defaults <- YAML file <- ``key=value`` overrides,
one typed section per algorithm family) is :mod:`agents.training.config`; the checks before a run, the run
folder, the trainers' construction and the final benchmark are :mod:`agents.training.run`; Stable-Baselines3's
envs, model and callbacks :mod:`agents.training.sb3`; the batched torch trainers :mod:`agents.training.trainer` (one file
per update rule: :mod:`agents.training.ppo`, :mod:`agents.training.a2c`, :mod:`agents.training.pqn`); behaviour cloning
:mod:`agents.training.bc`; RLlib's PPO :mod:`agents.training.rllib_ppo`. Every family evaluates through
:mod:`agents.training.evaluator` and ends with the same benchmark.

Nothing is written to the run folder before every check has passed: the config (file and overrides, every field
the run will need: the benchmark's agents and game counts, the dataset), the ruleset, the run folder (a fresh run
refuses a non-empty one unless ``--overwrite``), the checkpoint of a ``--resume``, the model, and the exact
solve. Bad input is a one-line ``train.py: error: ...`` with exit code 2.

Layering: this script is the top layer; it imports ``agents`` and the core package, never the other way round.
``torch`` comes with the ``train`` extra.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from agents.training.config import (  # noqa: F401 - make_config, field_docs, Config: the config API of train.py
    ALIASES,
    BATCHED_ALGORITHMS,
    BC,
    IMITATION_ALGORITHMS,
    RLLIB_ALGORITHMS,
    SB3,
    SECTIONS,
    UNUSED,
    Batched,
    Common,
    Config,
    all_fields,
    as_dict,
    field_docs,
    help_text,
    make_config,
    saved_run_config,
)
from agents.training.run import (
    UsageError,
    batched_trainer,
    check_bench_agents,
    check_run_dir,
    clear_run,
    default_run_dir,
    exact_solution,
    find_checkpoint,
    finish,
    imitation_trainer,
    interrupted,
    load_config_rules,
    read_config_file,
    rllib_trainer,
    run_config_of,
)
from agents.training.sb3 import build_model, make_vec_env, sb3_learn, sb3_model  # noqa: F401 - benchmarks use them

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "batched_ppo_yacht.yaml"


def default_config(overrides: list[str]) -> Path | None:
    """The config file of a run given none: with ``algo=X`` on the command line, X's own shipped recipe
    (``configs/X_yacht.yaml``; ``None`` where X has none: its section's defaults), else :data:`DEFAULT_CONFIG`."""
    import yaml

    algos = [value.strip() for key, _, value in (o.partition("=") for o in overrides) if key.strip() == "algo"]
    if not algos:
        return DEFAULT_CONFIG
    try:  # a YAML value, as make_config reads it: algo="sb3_ppo" (a sweep's quoted override) is sb3_ppo
        algo = str(yaml.safe_load(algos[-1]))
    except yaml.YAMLError:
        algo = algos[-1]
    algo = ALIASES.get(algo, algo)
    shipped = DEFAULT_CONFIG.parent / f"{algo}_yacht.yaml"
    return shipped if algo in SECTIONS and shipped.is_file() else None


def fail(message: str) -> NoReturn:
    """A usage error: one line on stderr, exit code 2, nothing written."""
    print(f"train.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, Common]:
    """The command line and the config it names (a one-line error and exit code 2 for bad input)."""
    try:
        return _parse_args(argv)
    except UsageError as error:
        fail(str(error))


def _parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, Common]:
    epilog = (
        "config fields (override with key=value; a dotted key reaches into a mapping: rules_options.joker=free;\n"
        "the algo selects the section: a field of another section is an error):\n\n" + help_text()
    )
    parser = argparse.ArgumentParser(
        description="Train an agent on a dice game and benchmark it against the exact solver.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        type=Path,
        help=f"YAML config (default: {DEFAULT_CONFIG.relative_to(Path.cwd()) if DEFAULT_CONFIG.is_relative_to(Path.cwd()) else DEFAULT_CONFIG}; "
        "with algo=X among the overrides, X's own recipe, configs/X_yacht.yaml)",
    )
    parser.add_argument("--run-dir", type=Path, help="run folder (default: RUNS_DIR/RULES__ALGO__sSEED__TIME)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="CHECKPOINT",
        help="continue from a checkpoint (.pt or .zip; in its own run folder unless --run-dir names another), or "
        "(no value) the run folder's latest checkpoint",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start a fresh run in an existing run folder, replacing its artifacts "
        "(refused otherwise; only once every check has passed)",
    )
    parser.add_argument(
        "--trust-model-files",
        action="store_true",
        help="--resume: load SB3 checkpoints holding pickled objects, and DQN replay buffers (pickle files), which "
        "run code when loaded; only for files you trust",
    )
    parser.add_argument(
        "--sweep",
        metavar="FILE",
        help="run a Ray Tune sweep of the configurations in FILE instead (train.py --sweep FILE --help: its options)",
    )
    parser.add_argument(
        "overrides", nargs="*", metavar="key=value", help="config overrides, e.g. total_timesteps=200000"
    )
    args = parser.parse_intermixed_args(argv)  # overrides before and after the options
    if args.trust_model_files:  # read by agents.players.sb3_agent.load_model
        from agents.players.sb3_agent import TRUST_ENV

        os.environ[TRUST_ENV] = "1"
    if args.resume and "=" in args.resume and not args.resume.endswith(".zip"):
        args.overrides.insert(0, args.resume)  # "--resume key=value": a bare --resume then an override
        args.resume = "latest"
    if args.resume and args.resume != "latest" and args.run_dir is None:
        checkpoint = Path(args.resume)
        if checkpoint.parent.name == "checkpoints" and (checkpoint.parent.parent / "config.yaml").is_file():
            args.run_dir = checkpoint.parent.parent  # the checkpoint's own run goes on
    if args.resume and args.overwrite:
        fail("--resume continues a run and --overwrite replaces it: give one of them")
    if args.resume == "latest" and args.run_dir is None:
        fail("--resume without a checkpoint needs --run-dir (the run to continue)")

    config_path = args.config
    if config_path is None and args.resume == "latest":
        config_path = args.run_dir / "config.yaml"  # resuming: the run's own config
        if not config_path.is_file():
            fail(f"--resume: {config_path} is missing; give the run's config with --config")
    elif config_path is None and args.resume:  # the config of the run the checkpoint comes from
        config_path = run_config_of(Path(args.resume), args.run_dir)
    if config_path is None:
        config_path = default_config(args.overrides)
    args.base = read_config_file(config_path) if config_path is not None else {}
    if args.resume and args.config is None:  # the run's own config.yaml (of any version of train.py)
        args.base = saved_run_config(args.base)
    try:
        config = make_config(args.base, args.overrides, base_file=config_path)
    except ValueError as error:  # (a value of the command line names its override, not the file)
        where = config_path if config_path is not None else "the algorithm's defaults"
        fail(str(error) if str(error).startswith(("override ", "command line:")) else f"{where}: {error}")
    args.config = config_path
    return args, config


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse, build, run, report (``train.py``'s command line; the results of the run, or of the sweep)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(arg == "--sweep" or arg.startswith("--sweep=") for arg in argv):
        return {"trials": sweep(argv)}
    try:
        return run(*parse_args(argv))
    except UsageError as error:
        fail(str(error))


def run(args: argparse.Namespace, config: Common) -> dict[str, Any]:
    """One training run of ``config`` (``args``: the command line's run folder, ``--resume``, ``--overwrite``)."""

    # 1. every check before anything is written: ruleset, run folder, checkpoint, solve, envs and model
    rules = load_config_rules(config)
    check_bench_agents(config, rules)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = args.run_dir or default_run_dir(config.runs_dir, rules, config.algo, config.seed, stamp)
    check_run_dir(run_dir, resume=bool(args.resume), overwrite=args.overwrite)
    if args.resume and config.algo in IMITATION_ALGORITHMS:
        fail(f"--resume: {config.algo} runs keep no checkpoints (a pass over the dataset is short); start a new run")
    if args.resume and config.algo in RLLIB_ALGORITHMS:
        fail(
            f"--resume: {config.algo} runs keep RLlib checkpoints (Algorithm.from_checkpoint), which train.py does "
            "not continue; start a new run"
        )
    resume_from = find_checkpoint(args, run_dir, config, rules) if args.resume else None

    import torch
    import yaml

    torch.manual_seed(config.seed)
    torch.set_num_threads(config.torch_threads)
    # one of three trainer classes, told apart by config.algo below (only RLlib's has results_extra)
    trainer: Any = None
    model: Any = None  # (SB3's)
    if config.algo in BATCHED_ALGORITHMS:  # built (network, init_policy, checkpoint) before the solve, which is long
        trainer = batched_trainer(config, rules, run_dir, None, resume_from)
    solution = exact_solution(config, rules)
    optimal = float(solution.expected_score) if solution is not None else None
    if config.algo in BATCHED_ALGORITHMS:
        trainer.optimal = optimal
    elif config.algo in IMITATION_ALGORITHMS:
        assert isinstance(config, BC)
        trainer = imitation_trainer(config, rules, run_dir, optimal)
    elif config.algo in RLLIB_ALGORITHMS:
        trainer = rllib_trainer(config, rules, run_dir, optimal)
    else:
        assert isinstance(config, SB3)
        env, model, metadata = sb3_model(config, rules, run_dir, resume_from)

    # 2. the run folder (an earlier run's artifacts go only now, with --overwrite)
    if args.overwrite and run_dir.is_dir():
        clear_run(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(as_dict(config), sort_keys=False))
    except OSError as error:  # (the folder changed since check_run_dir's probe, a disk full, ...)
        fail(f"run folder {run_dir}: cannot write there ({error.strerror or error})")
    print(f"run folder: {run_dir}\n{rules.describe()}")
    print(f"optimal expected score: {optimal:.4f}" if optimal is not None else "no exact solution: no % of optimal")
    if resume_from is not None:
        steps = (trainer if config.algo in BATCHED_ALGORITHMS else model).num_timesteps
        print(f"resumed from {resume_from} at {steps:,} timesteps")
        total, before = getattr(config, "total_timesteps", None), getattr(args, "previous_total", None)
        if config.lr_schedule == "linear" and total is not None and before is not None and total != before:
            rate = float(config.learning_rate)
            print(
                f"lr_schedule=linear: the learning rate now decays to 0 at total_timesteps={total:,}, not the run's "
                f"{before:,}: at {steps:,} steps it goes from {rate * max(1 - steps / before, 0):.3g} to "
                f"{rate * max(1 - steps / total, 0):.3g}"
            )

    if isinstance(config, Batched):  # what the budget becomes: whole rollouts
        rollout = int(config.n_envs) * int(config.n_steps)
        total = int(config.total_timesteps)
        if total % rollout:
            print(
                f"total_timesteps={total:,} trains whole rollouts of n_envs x n_steps = {rollout:,} steps: "
                f"{trainer.planned_timesteps:,} steps"
            )
        batch = getattr(config, "batch_size", None)
        if batch is not None and "batch_size" not in UNUSED.get(config.algo, ()) and int(batch) > rollout:
            print(f"batch_size={int(batch):,} is more than a rollout's {rollout:,} samples: each update takes them all")

    # 3. train (an interruption, Ctrl-C or SIGTERM, says where the run stopped and how it goes on)
    try:
        if config.algo in (*BATCHED_ALGORITHMS, *IMITATION_ALGORITHMS, *RLLIB_ALGORITHMS):
            final_path = trainer.run(progress=config.progress_bar)
            timesteps, train_seconds = trainer.num_timesteps, trainer.train_seconds
        else:
            assert isinstance(config, SB3)
            final_path, timesteps, train_seconds = sb3_learn(
                config,
                rules,
                run_dir,
                optimal,
                env,
                model,
                metadata,
                resume_from=resume_from,
            )
        print(f"trained {timesteps:,} timesteps in {train_seconds:.0f} s -> {final_path}")
        extra = trainer.results_extra if config.algo in RLLIB_ALGORITHMS else None
        return finish(config, rules, run_dir, solution, optimal, final_path, timesteps, train_seconds, extra=extra)
    except KeyboardInterrupt:
        steps = getattr(trainer if trainer is not None else model, "num_timesteps", 0)
        print(interrupted(run_dir, int(steps), config.algo), file=sys.stderr, flush=True)
        raise


def sweep(argv: list[str]) -> list[dict[str, Any]]:
    """``--sweep FILE``: many runs of this script on Ray Tune (agents/training/sweep.py; the ``ray`` extra)."""
    from agents.training.sweep import main as sweep_main  # imports Ray only once the sweep file and folder are checked

    return sweep_main(
        argv,
        fields=all_fields(),
        train_script=Path(__file__),
        default_config=default_config,
        fail=fail,
        default_runs=Config().runs_dir,
    )


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is so that it says where it stopped, as Ctrl-C does."""


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise Terminated


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    try:
        main()
    except Terminated:  # then killed by SIGTERM itself, as before (exit status 143; -15 to a parent process)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    except KeyboardInterrupt:
        sys.exit(130)
