"""Train an RL agent on a dice game, then benchmark it against the exact solver.

    python train.py                                   # batched PPO on yacht (configs/batched_ppo_yacht.yaml)
    python train.py --config configs/maskable_ppo_yacht.yaml  # SB3's MaskablePPO (the previous default)
    python train.py --config configs/ppo_yacht.yaml   # another config
    python train.py --config configs/smoke.yaml --run-dir /tmp/smoke total_timesteps=4096 seed=3
    python train.py --run-dir runs/my_run --resume    # continue from the run's latest checkpoint
    python train.py --run-dir runs/my_run --overwrite # start runs/my_run again from scratch
    python train.py --sweep configs/sweeps/yacht_algorithms.yaml  # many runs on Ray Tune (agents/training/sweep.py)
    python train.py --help                            # every config field with its documentation

Read top to bottom (CleanRL style): a typed :class:`Config` (every field documented),
loaded by OmegaConf as defaults <- YAML file <- ``key=value`` overrides; then the envs, the model,
the callbacks (periodic evaluation in mean score and percent of the optimal expected
score, checkpoints), training, the final model, and the benchmark of the trained
agent against the solver, the greedy and the random agent.

Two families of algorithms: the project's batched torch trainers (``batched_ppo``,
``batched_a2c``: :mod:`agents.training.trainer` with one file per update rule, on the NumPy
batched env) and Stable-Baselines3's (``maskable_ppo``, ``ppo``, ``a2c``, ``dqn``).
Both write the same run folder and end with the same benchmark, as does ``bc``
(:mod:`agents.training.bc`: behaviour cloning from a Minari dataset of the solver's games,
reported as "imitation of the solver", not RL).

A run folder holds ``config.yaml`` (the resolved config), ``tb/`` (TensorBoard),
``checkpoints/``, ``final_model.zip`` (SB3; ``final_model.npz``, a NumPy policy file,
for the batched trainers), ``evaluations.csv``, ``learning_curve.png``,
``score_distribution.png`` and ``results.json`` (the trained agent's benchmark
fields at the top level plus ``algorithm``, ``rules`` and ``timesteps``; every
agent under ``agents``).

Nothing is written to the run folder before every check has passed: the config
(file and overrides), the ruleset, the run folder (a fresh run refuses a non-empty
one unless ``--overwrite``), the checkpoint of a ``--resume`` (complete, same
ruleset, algorithm, observation layout and network), the model, and the exact
solve. Bad input is a one-line ``train.py: error: ...`` with exit code 2.

Layering: this script is the top layer (training); it imports ``agents`` and the
core package, never the other way round. ``torch`` comes with the ``train`` extra.

Size: an allowance for now: train.py is being rewritten into a thin entry point (issue 27,
item 3); this line goes with that rewrite.
"""

from __future__ import annotations

import argparse
import copy
import csv
import dataclasses
import difflib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "batched_ppo_yacht.yaml"
#: the project's torch trainers on the batched env (agents/training/trainer.py); the others are SB3's
BATCHED_ALGORITHMS = ("batched_ppo", "batched_a2c")
#: behaviour cloning from a Minari dataset (agents/training/bc.py): imitation of the solver, not RL
IMITATION_ALGORITHMS = ("bc",)
#: RLlib's PPO on Ray, sampling spread over env runner processes (agents/training/rllib_ppo.py; the rllib extra)
RLLIB_ALGORITHMS = ("rllib_ppo",)


# ----------------------------------------------------------------------------- config
def setting(default: Any, doc: str) -> Any:
    """A config field with its default and its documentation (``python train.py --help`` shows it)."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


@dataclass
class Config:
    """Every setting of a training run (YAML keys and ``key=value`` overrides use these names).

    The types are checked and converted by OmegaConf (a structured config); each
    field's documentation is its ``doc`` metadata.
    """

    # --- what to train on
    recipe: str = setting(
        "",
        "A label for this recipe: multi-seed results (python -m agents.evaluation.results) group runs by it (default: the algo).",
    )
    rules: str = setting(
        "yacht", "Ruleset name (yacht, dice_poker, school_poker, yahtzee, yatzy) or a rules file path."
    )
    rules_options: dict[str, Any] = setting({}, "Rules options, e.g. {joker: free} for yahtzee.")
    obs_mode: str = setting(
        "flat",
        'Observation layout: "flat" (normalized vector with per-box points, MlpPolicy) or "dict" (MultiInputPolicy).',
    )

    # --- algorithm
    algo: str = setting(
        "maskable_ppo",
        "batched_ppo or batched_a2c (the project's torch trainers on the batched "
        "env, masked; agents/training/ppo.py, agents/training/a2c.py), or SB3's: maskable_ppo "
        "(sb3-contrib, uses action masks), ppo, a2c or dqn (unmasked: illegal "
        "actions are replaced); or bc (behaviour cloning from a dataset: "
        "imitation of the solver, agents/training/bc.py); or rllib_ppo (RLlib's PPO with "
        "action masking, sampling spread over num_env_runners processes, "
        "agents/training/rllib_ppo.py).",
    )
    total_timesteps: int = setting(600_000, "Environment steps to train for (a yacht game is about 30 steps).")
    learning_rate: float = setting(3e-4, "Optimizer learning rate.")
    lr_schedule: str = setting("constant", '"constant" or "linear" (decays to 0 at total_timesteps).')
    gamma: float = setting(1.0, "Discount factor; 1.0 because the undiscounted return is the final score.")
    n_steps: int = setting(256, "Steps per env per rollout (PPO, A2C).")
    batch_size: int = setting(512, "Minibatch size (PPO, DQN).")
    n_epochs: int = setting(5, "Optimization epochs per rollout (PPO).")
    gae_lambda: float = setting(0.95, "GAE lambda (PPO, A2C).")
    clip_range: float = setting(0.2, "PPO clip range.")
    ent_coef: float = setting(0.01, "Entropy bonus coefficient (PPO, A2C).")
    vf_coef: float = setting(0.5, "Value loss coefficient (PPO, A2C).")
    max_grad_norm: float = setting(0.5, "Gradient clipping (all algorithms).")
    buffer_size: int = setting(200_000, "Replay buffer size (DQN).")
    learning_starts: int = setting(10_000, "Steps before DQN starts learning.")
    train_freq: int = setting(4, "DQN: gradient step every this many env steps.")
    target_update_interval: int = setting(5_000, "DQN: env steps between target network updates.")
    exploration_fraction: float = setting(0.2, "DQN: fraction of training over which epsilon decays.")
    exploration_final_eps: float = setting(0.02, "DQN: final epsilon.")
    dataset: str = setting(
        "", "bc: the Minari dataset id to imitate, written by `dice-poker dataset` (e.g. dice_poker/yacht/optimal-v0)."
    )
    bc_epochs: int = setting(10, "bc: passes over the dataset (a policy evaluation after each when eval_freq > 0).")
    net_arch: list[int] = setting([256, 256], "Hidden layer sizes of the policy and value networks.")
    activation: str = setting("tanh", "Hidden activation: tanh or relu.")
    algo_kwargs: dict[str, Any] = setting({}, "Extra keyword arguments passed to the algorithm's constructor as is.")
    reward_scale: float = setting(
        0.02, "Training rewards are multiplied by this (evaluation always reports raw scores)."
    )
    illegal_penalty: float = setting(
        0.0, "Unmasked algorithms: points subtracted when an illegal action is replaced by the fallback."
    )
    distinct_keeps: bool = setting(
        False, "Masked algorithms: masks show each distinct keep once (bitmasks keeping equal dice are one move)."
    )
    features: bool = setting(
        True, "Batched algorithms: the policy also sees progress toward the upper bonus (agents/policy/inputs.py)."
    )
    precision: str = setting(
        "float32",
        'Batched algorithms: "float32", "bfloat16" (autocast; faster on CPUs '
        'with AMX/AVX512-BF16 and on GPUs) or "auto" (bfloat16 where it is faster).',
    )
    keep_head: int = setting(
        0,
        "Batched algorithms: units of the actor's keep head, which scores each keep by the "
        "dice it keeps (0: one linear output per action; agents/training/actor_critic.py).",
    )
    compile: bool = setting(
        False,
        "Batched PPO: run the policy's forward pass and the PPO loss under torch.compile "
        "(needs a C++ compiler on CPU; falls back to eager with a warning; 10-30 s to "
        "compile at the start).",
    )
    box_points: float = setting(
        0.0,
        "Batched algorithms: each box's logit also gets a learnt weight (starting at "
        "this value) times the points the box would score now, from the observation "
        "(0: off; agents/training/actor_critic.py).",
    )
    keep_points: bool = setting(
        False,
        "Batched algorithms: the actor values each open box's points per state and "
        "adds them to the box logits (points now) and the keep logits (expected "
        "points after one reroll, from the rules' tables; agents/training/actor_critic.py).",
    )
    keep_points_rerolls: int = setting(
        1,
        "With keep_points: 1 = the keeps' expected points after one reroll; 2 = "
        "where two rerolls are left, after two (the second keep each box's own "
        "best; agents/policy/inputs.py).",
    )
    keep_points_bonus: bool | str = setting(
        False,
        "With keep_points: true = each keep's points for an open upper box "
        "also include the upper bonus times the chance that writing the "
        "box after the reroll reaches it (as a box's points do when "
        "writing it reaches it now); par = instead, for keeps and upper "
        "boxes, the change in the bonus's expected points under a par "
        "model (agents/policy/inputs.py, KeepBonus).",
    )
    bonus_shaping: float = setting(
        0.0,
        "Batched algorithms: weight of potential-based reward shaping toward the "
        "upper bonus (0: off; 1: the bonus's points times a par-based chance of "
        "reaching it; leaves the best policy unchanged; agents/training/shaping.py).",
    )

    # --- envs and hardware
    n_envs: int = setting(8, "Parallel training envs.")
    vec_env: str = setting(
        "dummy",
        'Vector env: "dummy" (DummyVecEnv, one process), "subproc" (SubprocVecEnv) or '
        '"batched" (the project\'s NumPy batched env). rllib_ppo: how each env runner '
        'steps its games: "dummy" (gymnasium\'s SyncVectorEnv of single games), "subproc" '
        '(AsyncVectorEnv) or "batched" (the NumPy batched env as RLlib\'s vector env).',
    )
    num_env_runners: int = setting(
        0,
        "rllib_ppo: RLlib env runner processes sampling in parallel, n_envs / "
        "num_env_runners games each (0: sample in the training process).",
    )
    ray_address: str = setting(
        "",
        'rllib_ppo: the Ray cluster the env runners run on ("auto" or HOST:PORT; empty: '
        "a Ray started on this machine for the run).",
    )
    device: str = setting("cpu", "Torch device.")
    torch_threads: int = setting(1, "torch.set_num_threads (small MLPs are fastest on one thread).")
    seed: int = setting(0, "Seeds torch, NumPy, the envs and the evaluation/benchmark games.")

    # --- evaluation, checkpoints, benchmark
    eval_freq: int = setting(50_000, "Evaluate every this many timesteps (0: never).")
    eval_episodes: int = setting(200, "Games per periodic evaluation.")
    checkpoint_freq: int = setting(100_000, "Save a checkpoint every this many timesteps (0: never).")
    save_replay_buffer: bool = setting(
        False, "DQN: also save the replay buffer with checkpoints (exact resume, large files)."
    )
    bench_games: int = setting(2_000, "Games per agent in the final benchmark (0: skip it).")
    bench_agents: list[str] = setting(["optimal", "greedy", "random"], "Agents benchmarked beside the trained one.")
    bench_workers: int = setting(1, "Processes for the final benchmark.")
    solver: str = setting(
        "auto",
        "Exact solve of the ruleset (the yardstick: % of optimal, regret, the optimal "
        'agent): "auto" (solve; if the solver refuses the ruleset as too large, train on '
        'and evaluate in raw scores), "on" (a refused solve is an error) or "off" (no '
        "solve: raw scores only).",
    )
    progress_bar: bool = setting(True, "Show SB3's progress bar.")
    verbose: int = setting(0, "SB3 verbosity (0 quiet, 1 info).")
    runs_dir: str = setting("runs", "Parent folder of run folders when --run-dir is not given.")


def field_docs(cls: type = Config) -> dict[str, str]:
    """The documentation of each config field."""
    return {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)}


def make_config(base: dict[str, Any] | None = None, overrides: list[str] | None = None) -> Config:
    """Defaults <- ``base`` mapping (a YAML file) <- ``key=value`` overrides, then the range checks.

    OmegaConf types the config (``OmegaConf.structured(Config)``): each value is
    converted to its field's type or refused, ``key=value`` overrides are parsed
    by OmegaConf's dotlist grammar (YAML values: ``net_arch=[64, 64]``,
    ``rules_options={joker: free}``; dotted keys reach into a mapping:
    ``rules_options.joker=free``), and a value replaces the one before it whole.

    Raises:
        ValueError: one line naming the field (or override) and the problem.
    """
    import yaml
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    config = OmegaConf.structured(Config)
    for key, value in (base or {}).items():
        _set_field(config, key, value, "config file")
    for text in overrides or []:
        key, sep, rest = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"override {text!r}: expected key=value")
        try:
            value = OmegaConf.select(OmegaConf.from_dotlist([text]), key) if rest.strip() else ""
        except yaml.YAMLError as error:
            raise ValueError(f"override {text}: not valid YAML ({yaml_problem(error)})") from None
        except OmegaConfBaseException as error:  # the dotlist grammar, an interpolation that does not resolve
            raise ValueError(f"override {text}: {one_line(error)}") from None
        _set_field(config, key, value, f"override {text}")
    try:
        result = OmegaConf.to_object(config)
    except OmegaConfBaseException as error:  # e.g. ${...} in a value that does not resolve
        raise ValueError(one_line(error)) from None
    _validate(result)
    return result


def _set_field(config, key: Any, value: Any, source: str) -> None:
    """Set field ``key`` (a dotted path reaches into a mapping) of the OmegaConf ``config`` to ``value``."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    fields = {f.name: f for f in dataclasses.fields(Config)}
    name = str(key).split(".")[0]
    if not isinstance(key, str) or name not in fields:
        source = "command line" if source.startswith("override") else source
        close = difflib.get_close_matches(str(key), fields, n=3, cutoff=0.6)
        raise ValueError(
            f"{source}: unknown config field {str(key)!r}" + (f" (did you mean {', '.join(close)}?)" if close else "")
        )
    if key == "solver" and isinstance(value, bool):
        value = "on" if value else "off"  # YAML 1.1 reads on/off (yes/no, true/false) as booleans
    try:
        OmegaConf.update(config, key, value, merge=False)
    except OmegaConfBaseException as error:
        got = "nothing" if value is None else repr(value)
        inner = str(error.full_key)
        detail = f" ({inner} is {error.value!r})" if inner not in ("", key) else ""
        prefix = f"{source}: " if source.startswith("override") else ""
        raise ValueError(f"{prefix}config field {key!r} expects {fields[name].type}, got {got}{detail}") from None


def yaml_problem(error: Exception) -> str:
    """A YAML parse error on one line: what is wrong, and where."""
    problem = getattr(error, "problem", None) or (str(error).splitlines() or ["unreadable"])[0]
    mark = getattr(error, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else problem


#: numeric fields and the values they take: (lowest, highest, lowest allowed itself)
NUMERIC_RANGES: dict[str, tuple[float, float, bool]] = {
    **{
        name: (1, math.inf, True)
        for name in (
            "total_timesteps",
            "n_envs",
            "n_steps",
            "batch_size",
            "n_epochs",
            "buffer_size",
            "train_freq",
            "target_update_interval",
            "torch_threads",
            "eval_episodes",
            "bench_workers",
            "bc_epochs",
        )
    },
    **{
        name: (0, math.inf, True)
        for name in (
            "learning_starts",
            "seed",
            "eval_freq",
            "checkpoint_freq",
            "bench_games",
            "ent_coef",
            "vf_coef",
            "num_env_runners",
            "bonus_shaping",
            "illegal_penalty",
        )
    },
    **{name: (0, math.inf, False) for name in ("learning_rate", "clip_range", "max_grad_norm", "reward_scale")},
    **{name: (0, 1, True) for name in ("gamma", "gae_lambda", "exploration_fraction", "exploration_final_eps")},
    "verbose": (0, 2, True),
}


def _validate(c: Config) -> None:
    from agents.players.registry import check_agent
    from agents.players.sb3_agent import ALGORITHMS

    for name, (low, high, low_ok) in NUMERIC_RANGES.items():
        value = getattr(c, name)
        if not (math.isfinite(value) and (value >= low if low_ok else value > low) and value <= high):
            bound = f"{'>=' if low_ok else '>'} {low}" if high == math.inf else f"in [{low}, {high}]"
            raise ValueError(f"{name} must be {bound}, got {value!r}")
    from agents.evaluation.protocol import check_training_seed

    check_training_seed(c.seed)  # the benchmark's evaluation set lies above every training seed
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in c.net_arch):
        raise ValueError(f"net_arch must list positive layer sizes (integers), got {c.net_arch!r}")
    for agent in c.bench_agents:
        try:
            check_agent(agent)
        except ValueError as error:
            raise ValueError(f"bench_agents: {error}") from None
    if c.solver not in ("auto", "on", "off"):
        raise ValueError(f"solver must be auto, on or off, got {c.solver!r}")

    if c.algo not in (*BATCHED_ALGORITHMS, *ALGORITHMS, *IMITATION_ALGORITHMS, *RLLIB_ALGORITHMS):
        raise ValueError(
            f"algo must be one of "
            f"{', '.join((*BATCHED_ALGORITHMS, *ALGORITHMS, *IMITATION_ALGORITHMS, *RLLIB_ALGORITHMS))}, "
            f"got {c.algo!r}"
        )
    if c.obs_mode not in ("flat", "dict"):
        raise ValueError(f"obs_mode must be flat or dict, got {c.obs_mode!r}")
    if c.activation not in ("tanh", "relu"):
        raise ValueError(f"activation must be tanh or relu, got {c.activation!r}")
    if c.lr_schedule not in ("constant", "linear"):
        raise ValueError(f"lr_schedule must be constant or linear, got {c.lr_schedule!r}")
    if c.precision not in ("float32", "bfloat16", "auto"):
        raise ValueError(f"precision must be float32, bfloat16 or auto, got {c.precision!r}")
    if isinstance(c.keep_head, bool) or not isinstance(c.keep_head, int) or c.keep_head < 0:
        raise ValueError(f"keep_head must be a non-negative integer (units; 0 = off), got {c.keep_head!r}")
    if not isinstance(c.keep_points, bool):
        raise ValueError(f"keep_points must be true or false, got {c.keep_points!r}")
    if isinstance(c.keep_points_rerolls, bool) or c.keep_points_rerolls not in (1, 2):
        raise ValueError(f"keep_points_rerolls must be 1 or 2, got {c.keep_points_rerolls!r}")
    if not isinstance(c.keep_points_bonus, bool) and c.keep_points_bonus != "par":
        raise ValueError(f"keep_points_bonus must be true, false or par, got {c.keep_points_bonus!r}")
    if c.keep_points_bonus and not (c.keep_points and c.keep_points_rerolls == 1):
        raise ValueError("keep_points_bonus needs keep_points=true with keep_points_rerolls=1")
    if c.keep_points and c.keep_head:
        raise ValueError("keep_points and keep_head are two ways of scoring keeps: set one of them to 0/false")
    if isinstance(c.box_points, bool) or not isinstance(c.box_points, (int, float)) or not 0 <= c.box_points < 1e6:
        raise ValueError(f"box_points must be a non-negative number (0 = off), got {c.box_points!r}")
    if c.algo in RLLIB_ALGORITHMS:
        if c.obs_mode != "flat":
            raise ValueError(f"{c.algo} uses the flat observation; set obs_mode=flat")
        if c.vec_env not in ("dummy", "subproc", "batched"):
            raise ValueError(f"vec_env must be dummy, subproc or batched, got {c.vec_env!r}")
        if c.n_envs % max(c.num_env_runners, 1):
            raise ValueError(
                f"n_envs ({c.n_envs}) must be a multiple of num_env_runners ({c.num_env_runners}): "
                "each env runner steps n_envs / num_env_runners games"
            )
        return
    if c.algo in (*BATCHED_ALGORITHMS, *IMITATION_ALGORITHMS):
        if c.obs_mode != "flat":
            raise ValueError(f"{c.algo} uses the flat observation; set obs_mode=flat")
        if c.algo in IMITATION_ALGORITHMS and not c.dataset:
            raise ValueError(f"{c.algo} imitates a dataset: set dataset=ID (written by dice-poker dataset)")
        return
    if c.vec_env not in ("dummy", "subproc", "batched"):
        raise ValueError(f"vec_env must be dummy, subproc or batched, got {c.vec_env!r}")
    if c.distinct_keeps and not ALGORITHMS[c.algo][2]:
        raise ValueError(f"distinct_keeps needs a masked algorithm (maskable_ppo); {c.algo} does not use masks")
    if c.vec_env == "batched" and not ALGORITHMS[c.algo][2]:
        raise ValueError("vec_env='batched' supports masked algorithms only (maskable_ppo); use dummy or subproc")


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, Config]:
    docs = field_docs()
    defaults = Config()
    epilog = "config fields (override with key=value; a dotted key reaches into a mapping: rules_options.joker=free):\n"
    epilog += "\n".join(
        f"  {f.name}: {f.type} = {getattr(defaults, f.name)!r}\n      {docs[f.name]}"
        for f in dataclasses.fields(Config)
    )
    parser = argparse.ArgumentParser(
        description="Train an agent on a dice game and benchmark it against the exact solver.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        type=Path,
        help=f"YAML config (default: {DEFAULT_CONFIG.relative_to(Path.cwd()) if DEFAULT_CONFIG.is_relative_to(Path.cwd()) else DEFAULT_CONFIG})",
    )
    parser.add_argument("--run-dir", type=Path, help="run folder (default: RUNS_DIR/RULES__ALGO__sSEED__TIME)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="CHECKPOINT",
        help="continue from a checkpoint zip, or (no value) the run folder's latest checkpoint",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start a fresh run in an existing run folder, replacing its artifacts "
        "(refused otherwise; only once every check has passed)",
    )
    parser.add_argument(
        "overrides", nargs="*", metavar="key=value", help="config overrides, e.g. total_timesteps=200000"
    )
    args = parser.parse_args(argv)
    if args.resume and "=" in args.resume and not args.resume.endswith(".zip"):
        args.overrides.insert(0, args.resume)  # "--resume key=value": a bare --resume then an override
        args.resume = "latest"
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
    config_path = config_path or DEFAULT_CONFIG
    args.base = read_config_file(config_path)
    try:
        config = make_config(args.base, args.overrides)
    except ValueError as error:
        fail(f"{config_path}: {error}")
    args.config = config_path
    return args, config


def run_config_of(checkpoint: Path, run_dir: Path | None) -> Path | None:
    """The ``config.yaml`` of the run a resumed checkpoint belongs to: ``run_dir``'s,
    else the one beside the checkpoint (``final_model.zip``) or above it
    (``checkpoints/model_N_steps.zip``); ``None`` if there is none."""
    candidates = [run_dir / "config.yaml"] if run_dir is not None else []
    candidates += [checkpoint.parent / "config.yaml", checkpoint.parent.parent / "config.yaml"]
    return next((path for path in candidates if path.is_file()), None)


def fail(message: str) -> NoReturn:
    """A usage error: one line on stderr, exit code 2, nothing written."""
    print(f"train.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def read_config_file(path: Path) -> dict[str, Any]:
    """The mapping of config fields in a YAML file (a one-line error otherwise)."""
    import yaml

    if not path.is_file():
        fail(f"no such config file: {path}")
    try:
        base = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        fail(f"{path}: not a text file (a YAML mapping of config fields expected)")
    except yaml.YAMLError as error:
        fail(f"{path}: not valid YAML ({yaml_problem(error)})")
    except OSError as error:
        fail(f"{path}: cannot read it ({error.strerror or error})")
    if not isinstance(base, dict):
        fail(f"{path}: expected a mapping of config fields")
    return base


# ----------------------------------------------------------------------------- envs
def make_env(config: Config, rules, rank: int, *, training: bool):
    """A thunk building env ``rank``: the game, the illegal-action fallback for unmasked
    algorithms, SB3's Monitor (raw scores), and (training only) the reward scale."""
    from stable_baselines3.common.monitor import Monitor

    from agents.players.sb3_agent import ALGORITHMS
    from agents.training.wrappers import DistinctKeepWrapper, LegalActionWrapper, ScaleReward
    from dice_poker_env.envs.single import DicePokerEnv

    masked = ALGORITHMS[config.algo][2]

    def thunk():
        env = DicePokerEnv(rules, obs_mode=config.obs_mode)
        if not masked:
            env = LegalActionWrapper(env, penalty=config.illegal_penalty if training else 0.0)
        elif config.distinct_keeps:
            env = DistinctKeepWrapper(env)
        env = Monitor(env)
        if training and config.reward_scale != 1.0:
            env = ScaleReward(env, config.reward_scale)
        env.action_space.seed(config.seed + rank)
        return env

    return thunk


def make_vec_env(config: Config, rules, n_envs: int, seed: int, *, training: bool):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if config.vec_env == "batched":
        return _batched_vec_env(config, rules, n_envs, seed, training=training)
    thunks = [make_env(config, rules, rank, training=training) for rank in range(n_envs)]
    if config.vec_env == "subproc" and n_envs > 1:
        vec = SubprocVecEnv(thunks, start_method="spawn")
    else:
        vec = DummyVecEnv(thunks)
    vec.seed(seed)
    return vec


def _batched_vec_env(config: Config, rules, n_envs: int, seed: int, *, training: bool):
    """The project's NumPy batched env behind SB3's VecEnv API (imported only here).

    All games live in one process, stepped together; masked algorithms only (the
    illegal-action fallback wrapper is per game).
    """
    from stable_baselines3.common.vec_env import VecEnvWrapper, VecMonitor

    from agents.players.sb3_agent import ALGORITHMS
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    if not ALGORITHMS[config.algo][2]:
        fail("vec_env='batched' supports masked algorithms only (maskable_ppo); use dummy or subproc")
    vec = VecMonitor(
        make_sb3_vec_env(
            "DicePoker/Custom-v0",
            n_envs,
            seed=seed,
            rules=rules,
            obs_mode=config.obs_mode,
            distinct_keeps=config.distinct_keeps,
        )
    )
    if not training or config.reward_scale == 1.0:
        return vec

    class ScaleVecReward(VecEnvWrapper):
        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            obs, reward, done, info = self.venv.step_wait()
            return obs, reward * config.reward_scale, done, info

    return ScaleVecReward(vec)


# ----------------------------------------------------------------------------- model
def build_model(config: Config, env, run_dir: Path):
    import torch

    from agents.players.sb3_agent import algorithm_class

    cls = algorithm_class(config.algo)
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[config.activation]
    policy = "MultiInputPolicy" if config.obs_mode == "dict" else "MlpPolicy"
    lr: Any = config.learning_rate
    if config.lr_schedule == "linear":
        lr = lambda progress: config.learning_rate * progress  # noqa: E731 - SB3 passes remaining progress 1 -> 0
    common = dict(
        learning_rate=lr,
        gamma=config.gamma,
        seed=config.seed,
        device=config.device,
        verbose=config.verbose,
        tensorboard_log=str(run_dir / "tb"),
    )
    if config.algo == "dqn":
        kwargs = dict(
            buffer_size=config.buffer_size,
            learning_starts=config.learning_starts,
            batch_size=config.batch_size,
            train_freq=config.train_freq,
            target_update_interval=max(config.target_update_interval // max(config.n_envs, 1), 1),
            exploration_fraction=config.exploration_fraction,
            exploration_final_eps=config.exploration_final_eps,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=dict(net_arch=list(config.net_arch), activation_fn=activation),
        )
    else:
        kwargs = dict(
            n_steps=config.n_steps,
            gae_lambda=config.gae_lambda,
            ent_coef=config.ent_coef,
            vf_coef=config.vf_coef,
            max_grad_norm=config.max_grad_norm,
            policy_kwargs=dict(
                net_arch=dict(pi=list(config.net_arch), vf=list(config.net_arch)), activation_fn=activation
            ),
        )
        if config.algo in ("maskable_ppo", "ppo"):
            kwargs.update(batch_size=config.batch_size, n_epochs=config.n_epochs, clip_range=config.clip_range)
    kwargs.update(config.algo_kwargs)
    return cls(policy, env, **common, **kwargs)


# ----------------------------------------------------------------------------- callbacks
def make_callbacks(config: Config, rules, run_dir: Path, optimal: float | None, metadata: dict):
    """Periodic evaluation (mean score, percent of optimal -> TensorBoard, console,
    evaluations.csv, best_model.zip) and checkpoints (with the ruleset metadata)."""
    from stable_baselines3.common.callbacks import BaseCallback

    from agents.players.sb3_agent import ALGORITHMS, save_model

    masked = ALGORITHMS[config.algo][2]

    class ScoreEval(BaseCallback):
        """Like sb3-contrib's MaskableEvalCallback, reporting game scores and % of optimal."""

        def __init__(self):
            super().__init__()
            self.next_eval = config.eval_freq
            self.eval_env = None
            self.best = -float("inf")
            self.csv = run_dir / "evaluations.csv"

        def _on_training_start(self) -> None:
            self.next_eval = (self.num_timesteps // config.eval_freq + 1) * config.eval_freq
            if not self.csv.exists():
                with self.csv.open("w", newline="") as handle:
                    csv.writer(handle).writerow(
                        ["timesteps", "mean_score", "std_score", "percent_of_optimal", "seconds"]
                    )

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                self.next_eval += config.eval_freq
                self.evaluate()
            return True

        def evaluate(self) -> float:
            if self.eval_env is None:
                self.eval_env = make_vec_env(
                    config.__class__(**{**asdict(config), "vec_env": "dummy"}),
                    rules,
                    1,
                    config.seed + 1_000_003,
                    training=False,
                )
            self.eval_env.seed(config.seed + 1_000_003)  # the same games at every evaluation
            if masked:
                from sb3_contrib.common.maskable.evaluation import evaluate_policy

                rewards, _ = evaluate_policy(
                    self.model,
                    self.eval_env,
                    n_eval_episodes=config.eval_episodes,
                    deterministic=True,
                    return_episode_rewards=True,
                    use_masking=True,
                )
            else:
                from stable_baselines3.common.evaluation import evaluate_policy

                rewards, _ = evaluate_policy(
                    self.model,
                    self.eval_env,
                    n_eval_episodes=config.eval_episodes,
                    deterministic=True,
                    return_episode_rewards=True,
                )
            import numpy as np

            mean, std = float(np.mean(rewards)), float(np.std(rewards))
            percent = 100.0 * mean / optimal if optimal else None
            self.logger.record("eval/mean_score", mean)
            self.logger.record("eval/std_score", std)
            if percent is not None:
                self.logger.record("eval/percent_of_optimal", percent)
            self.logger.dump(self.num_timesteps)
            with self.csv.open("a", newline="") as handle:
                csv.writer(handle).writerow(
                    [
                        self.num_timesteps,
                        f"{mean:.4f}",
                        f"{std:.4f}",
                        "" if percent is None else f"{percent:.4f}",
                        f"{time.perf_counter() - START:.1f}",
                    ]
                )
            text = f"[eval] {self.num_timesteps:>9,} steps: mean score {mean:7.2f} ± {std:5.2f}"
            if percent is not None:
                text += f"  ({percent:5.1f}% of optimal {optimal:.2f})"
            print(text, flush=True)
            if mean > self.best:
                self.best = mean
                save_model(self.model, run_dir / "best_model.zip", {**metadata, "timesteps": self.num_timesteps})
            return mean

    class Checkpoint(BaseCallback):
        def __init__(self):
            super().__init__()
            self.next_save = config.checkpoint_freq

        def _on_training_start(self) -> None:
            self.next_save = (self.num_timesteps // config.checkpoint_freq + 1) * config.checkpoint_freq

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_save:
                self.next_save += config.checkpoint_freq
                path = run_dir / "checkpoints" / f"model_{self.num_timesteps}_steps.zip"
                save_model(self.model, path, {**metadata, "timesteps": self.num_timesteps})
                if config.save_replay_buffer and hasattr(self.model, "save_replay_buffer"):
                    self.model.save_replay_buffer(path.with_suffix(".replay.pkl"))
            return True

    class LogConfig(BaseCallback):
        """The hyper-parameters to TensorBoard's HPARAMS tab, once per run."""

        def _on_training_start(self) -> None:
            from stable_baselines3.common.logger import HParam

            hparams = {
                k: (v if isinstance(v, (int, float, str, bool)) else json.dumps(v)) for k, v in asdict(config).items()
            }
            self.logger.record(
                "hparams",
                HParam(hparams, {"eval/mean_score": 0.0, "eval/percent_of_optimal": 0.0}),
                exclude=("stdout", "log", "json", "csv"),
            )

        def _on_step(self) -> bool:
            return True

    callbacks: list = [LogConfig()]
    evaluator = ScoreEval() if config.eval_freq > 0 else None
    if evaluator is not None:
        callbacks.append(evaluator)
    if config.checkpoint_freq > 0:
        callbacks.append(Checkpoint())
    return callbacks, evaluator


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint with the most timesteps in ``run_dir/checkpoints`` (``None`` if there is none)."""
    return max(checkpoints(run_dir))[1] if checkpoints(run_dir) else None


def checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """``(timesteps, path)`` of every checkpoint of the run (SB3 ``.zip``, batched trainers ``.pt``)."""
    return [
        (int(match.group(1)), path)
        for path in (run_dir / "checkpoints").glob("model_*_steps.*")
        if (match := re.fullmatch(r"model_(\d+)_steps\.(zip|pt)", path.name))
    ]


def checkpoint_metadata(path: Path) -> dict[str, Any]:
    """The metadata of a checkpoint: SB3's ``.zip`` or a batched trainer's ``.pt`` (checked whole)."""
    if path.suffix == ".pt":
        from agents.training.trainer import read_checkpoint

        return read_checkpoint(path)["metadata"]
    from agents.players.sb3_agent import read_metadata

    return read_metadata(path)


# ----------------------------------------------------------------------------- checks before the run
#: what a run leaves in its folder; ``--overwrite`` removes these (and nothing else)
RUN_ARTIFACTS = (
    "config.yaml",
    "tb",
    "checkpoints",
    "best_model.zip",
    "final_model.zip",
    "best_model.npz",
    "final_model.npz",
    "evaluations.csv",
    "rllib_checkpoint",
    "learning_curve.png",
    "score_distribution.png",
    "results.json",
)

#: config fields a resumed model keeps from its checkpoint: changing one on --resume is refused
RESUME_FIXED = (
    "rules",
    "rules_options",
    "obs_mode",
    "algo",
    "distinct_keeps",
    "net_arch",
    "activation",
    "algo_kwargs",
    "learning_rate",
    "lr_schedule",
    "gamma",
    "n_steps",
    "batch_size",
    "n_epochs",
    "gae_lambda",
    "clip_range",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "buffer_size",
    "learning_starts",
    "train_freq",
    "target_update_interval",
    "exploration_fraction",
    "exploration_final_eps",
)
#: also fixed on --resume for the batched trainers (the checkpoint holds the games of the batch)
BATCHED_RESUME_FIXED = (
    "features",
    "n_envs",
    "reward_scale",
    "precision",
    "keep_head",
    "box_points",
    "keep_points",
    "keep_points_rerolls",
    "keep_points_bonus",
    "bonus_shaping",
)


def load_config_rules(config: Config):
    """The ruleset of the config (a one-line error if it does not load or compile)."""
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.rules import load_rules

    try:
        rules = load_rules(config.rules, **config.rules_options)
        compile_rules(rules)  # what needs the score tables (the upper-bonus threshold) is checked here
        return rules
    except (ValueError, TypeError, KeyError, OSError) as error:
        options = f" rules_options={config.rules_options!r}" if config.rules_options else ""
        fail(f"rules={config.rules!r}{options}: {error}")


def check_run_dir(run_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """A fresh run needs a new or empty folder, or ``--overwrite`` of an earlier run's folder."""
    if run_dir.exists() and not run_dir.is_dir():
        fail(f"--run-dir {run_dir}: exists and is not a folder")
    parent = next(folder for folder in (run_dir, *run_dir.parents) if folder.exists())
    if not parent.is_dir():
        fail(f"run folder {run_dir}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        fail(f"run folder {run_dir}: {parent} is not writable")
    if resume or not run_dir.is_dir() or not any(run_dir.iterdir()):
        return
    if not overwrite:
        fail(
            f"--run-dir {run_dir} holds an earlier run; continue it with --resume, "
            "start it again with --overwrite, or choose a new folder"
        )
    if not (run_dir / "config.yaml").is_file():
        fail(
            f"--run-dir {run_dir} is not empty and is not a train.py run folder (no config.yaml): "
            "--overwrite only replaces runs; choose a new or empty folder"
        )


def clear_run(run_dir: Path) -> None:
    """Remove an earlier run's artifacts (``--overwrite``), so no file of it mixes with the new run."""
    for name in RUN_ARTIFACTS:
        path = run_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def find_checkpoint(args: argparse.Namespace, run_dir: Path, config: Config, rules) -> Path:
    """The checkpoint ``--resume`` continues from, checked whole and against the config."""
    from agents.players.sb3_agent import check_ruleset

    checkpoint = latest_checkpoint(run_dir) if args.resume == "latest" else Path(args.resume)
    if checkpoint is None:
        fail(f"--resume: no checkpoint in {run_dir / 'checkpoints'}")
    try:
        metadata = checkpoint_metadata(checkpoint)
        check_ruleset(metadata, rules, source=f"checkpoint {checkpoint}")
    except (ValueError, OSError) as error:
        earlier = [p for _, p in checkpoints(run_dir) if p != checkpoint]
        hint = "; an earlier checkpoint can be given as --resume PATH" if args.resume == "latest" and earlier else ""
        fail(f"--resume: {error}{hint}")
    for name in ("algo", "obs_mode", "distinct_keeps"):
        saved = metadata.get("algorithm" if name == "algo" else name, False if name == "distinct_keeps" else None)
        if saved != getattr(config, name):
            fail(
                f"--resume: checkpoint {checkpoint} was trained with {name}={saved!r}, the config says "
                f"{name}={getattr(config, name)!r}; resume with the run's own {name} or start a new run"
            )
    saved_config = run_config_of(checkpoint, run_dir)
    reference = read_config_file(saved_config) if saved_config is not None else args.base
    try:
        before = make_config(reference)
    except ValueError as error:
        fail(f"--resume: {saved_config or args.config}: {error}")
    fixed = RESUME_FIXED + (BATCHED_RESUME_FIXED if config.algo in BATCHED_ALGORITHMS else ())
    changed = [name for name in fixed if getattr(config, name) != getattr(before, name)]
    if changed:
        fail(
            f"--resume: {', '.join(f'{n}={getattr(config, n)!r}' for n in changed)} differs from the run's "
            f"{', '.join(f'{n}={getattr(before, n)!r}' for n in changed)}; a resumed model keeps its own "
            "(start a new run to change it)"
        )
    return checkpoint


def exact_solution(config: Config, rules):
    """The solver's solution (the yardstick), or ``None`` when ``solver`` is off or the solve is refused."""
    from agents.evaluation.benchmark import load_solution

    if config.solver == "off":
        print("solver=off: no exact solve; evaluation and benchmark in raw scores (no % of optimal, no regret)")
        return None
    try:
        return load_solution(rules, required=True)
    except (ImportError, MemoryError) as error:  # MemoryError: the solver refuses a ruleset too large to solve
        reason = str(error) or type(error).__name__
        if config.solver == "on":
            fail(
                f"solver=on: the exact solve of {rules.name!r} is not possible ({reason}); "
                "use solver=auto or solver=off to train without it"
            )
        print(
            f"solver=auto: the exact solve of {rules.name!r} is not possible ({reason}); training without it: "
            "evaluation and benchmark in raw scores (no % of optimal, no regret)",
            flush=True,
        )
        return None


def one_line(error: BaseException) -> str:
    """An exception as one line of text."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# ----------------------------------------------------------------------------- main
START = time.perf_counter()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(arg == "--sweep" or arg.startswith("--sweep=") for arg in argv):
        return {"trials": sweep(argv)}
    args, config = parse_args(argv)

    # 1. every check before anything is written: ruleset, run folder, checkpoint, solve, envs and model
    rules = load_config_rules(config)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = args.run_dir or Path(config.runs_dir) / f"{rules.name}__{config.algo}__s{config.seed}__{stamp}"
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
    solution = exact_solution(config, rules)
    optimal = float(solution.expected_score) if solution is not None else None
    if config.algo in BATCHED_ALGORITHMS:
        trainer = batched_trainer(config, rules, run_dir, optimal, resume_from)
    elif config.algo in IMITATION_ALGORITHMS:
        trainer = imitation_trainer(config, rules, run_dir, optimal)
    elif config.algo in RLLIB_ALGORITHMS:
        trainer = rllib_trainer(config, rules, run_dir, optimal)
    else:
        env, model, metadata = sb3_model(config, rules, run_dir, resume_from)

    # 2. the run folder (an earlier run's artifacts go only now, with --overwrite)
    if args.overwrite and run_dir.is_dir():
        clear_run(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(asdict(config), sort_keys=False))
    print(f"run folder: {run_dir}\n{rules.describe()}")
    print(f"optimal expected score: {optimal:.4f}" if optimal is not None else "no exact solution: no % of optimal")
    if resume_from is not None:
        print(
            f"resumed from {resume_from} at "
            f"{(trainer if config.algo in BATCHED_ALGORITHMS else model).num_timesteps:,} timesteps"
        )

    # 3. train
    if config.algo in (*BATCHED_ALGORITHMS, *IMITATION_ALGORITHMS, *RLLIB_ALGORITHMS):
        final_path = trainer.run(progress=config.progress_bar)
        timesteps, train_seconds = trainer.num_timesteps, trainer.train_seconds
    else:
        final_path, timesteps, train_seconds = sb3_learn(
            config, rules, run_dir, optimal, env, model, metadata, resumed=resume_from is not None
        )
    print(f"trained {timesteps:,} timesteps in {train_seconds:.0f} s -> {final_path}")
    extra = trainer.results_extra if config.algo in RLLIB_ALGORITHMS else None
    return finish(config, rules, run_dir, solution, optimal, final_path, timesteps, train_seconds, extra=extra)


def sweep(argv: list[str]) -> list[dict[str, Any]]:
    """``--sweep FILE``: many runs of this script on Ray Tune (agents/training/sweep.py; the ``ray`` extra)."""
    from agents.training.sweep import main as sweep_main  # imports Ray only once the sweep file and folder are checked

    return sweep_main(
        argv,
        fields={f.name for f in dataclasses.fields(Config)},
        train_script=Path(__file__),
        default_config=DEFAULT_CONFIG,
        fail=fail,
        default_runs=Config().runs_dir,
    )


def run_metadata(config: Config) -> dict[str, Any]:
    """What every policy file of a run records so that it can be reproduced: the config, the command (when
    run as ``train.py``), the library's version and, in a git checkout, the commit of the code (``-dirty``
    where the files differ from it)."""
    import dice_poker_env

    command = "python train.py " + " ".join(sys.argv[1:]) if Path(sys.argv[0]).name == "train.py" else None
    try:
        commit = (
            subprocess.run(
                ["git", "describe", "--always", "--dirty", "--abbrev=40"],
                cwd=Path(__file__).resolve().parent,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):  # no git, or not a checkout
        commit = None
    return {"config": asdict(config), "command": command, "version": dice_poker_env.__version__, "git_commit": commit}


def batched_trainer(config: Config, rules, run_dir: Path, optimal: float | None, resume_from: Path | None):
    """The project's batched torch trainer (agents/training/trainer.py), resumed if asked; nothing written yet."""
    from agents.training.trainer import Trainer

    try:
        trainer = Trainer(config, rules, run_dir, optimal=optimal, metadata=run_metadata(config))
        if resume_from is not None:
            trainer.load_checkpoint(resume_from)
    except Exception as error:  # noqa: BLE001 - whatever torch raises, the run has not started
        what = (
            f"checkpoint {resume_from} cannot be loaded" if resume_from is not None else "the trainer cannot be built"
        )
        fail(f"{what}: {type(error).__name__}: {one_line(error)}")
    return trainer


def rllib_trainer(config: Config, rules, run_dir: Path, optimal: float | None):
    """RLlib's PPO with action masking (agents/training/rllib_ppo.py): Ray and the algorithm built, nothing written yet."""
    try:
        from agents.training.rllib_ppo import RLlibTrainer
    except ModuleNotFoundError as error:
        fail(f"{config.algo} runs on RLlib: {error.name} is not installed (pip install -e '.[rllib]')")
    try:
        return RLlibTrainer(config, rules, run_dir, optimal=optimal, metadata=run_metadata(config))
    except Exception as error:  # noqa: BLE001 - whatever Ray or RLlib raise, the run has not started
        fail(f"RLlib's PPO cannot be built: {type(error).__name__}: {one_line(error)}")


def imitation_trainer(config: Config, rules, run_dir: Path, optimal: float | None):
    """Behaviour cloning from ``config.dataset`` (agents/training/bc.py); the dataset is read and checked, nothing written yet."""
    from agents.training.bc import BCTrainer

    try:
        return BCTrainer(config, rules, run_dir, optimal=optimal, metadata=run_metadata(config))
    except ModuleNotFoundError as error:
        fail(f"{config.algo} reads Minari datasets: {error.name} is not installed (pip install -e '.[datasets]')")
    except (ValueError, OSError) as error:
        fail(f"dataset={config.dataset!r}: {one_line(error)}")


def sb3_model(config: Config, rules, run_dir: Path, resume_from: Path | None):
    """SB3's training envs and model (fresh, or loaded from a checkpoint); nothing written yet."""
    from stable_baselines3.common.utils import set_random_seed

    from agents.players.sb3_agent import algorithm_class, model_metadata

    set_random_seed(config.seed)
    try:
        env = make_vec_env(config, rules, config.n_envs, config.seed, training=True)
    except Exception as error:  # noqa: BLE001 - the run has not started
        fail(f"the training envs cannot be built: {type(error).__name__}: {one_line(error)}")
    metadata = model_metadata(
        rules, config.obs_mode, config.algo, seed=config.seed, distinct_keeps=config.distinct_keeps
    )
    try:
        if resume_from is not None:
            model = algorithm_class(config.algo).load(
                resume_from, env=env, device=config.device, tensorboard_log=str(run_dir / "tb")
            )
            replay = resume_from.with_suffix(".replay.pkl")
            if replay.is_file() and hasattr(model, "load_replay_buffer"):
                model.load_replay_buffer(replay)
        else:
            model = build_model(config, env, run_dir)
    except Exception as error:  # noqa: BLE001 - whatever SB3/torch raise, the run has not started
        env.close()
        what = f"checkpoint {resume_from} cannot be loaded" if resume_from is not None else "the model cannot be built"
        fail(f"{what}: {type(error).__name__}: {one_line(error)}")
    return env, model, metadata


def sb3_learn(
    config: Config, rules, run_dir: Path, optimal: float | None, env, model, metadata: dict, *, resumed: bool
) -> tuple[Path, int, float]:
    """Train an SB3 model with the evaluation and checkpoint callbacks; save the final model."""
    from agents.players.sb3_agent import save_model

    callbacks, evaluator = make_callbacks(config, rules, run_dir, optimal, metadata)
    remaining = max(config.total_timesteps - model.num_timesteps, 0)
    started = time.perf_counter()
    if remaining:
        model.learn(
            remaining,
            callback=callbacks,
            progress_bar=config.progress_bar,
            reset_num_timesteps=not resumed,
            tb_log_name="run",
        )
    train_seconds = time.perf_counter() - started
    final_path = save_model(model, run_dir / "final_model.zip", {**metadata, "timesteps": model.num_timesteps})
    if evaluator is not None and (
        not evaluator.csv.exists() or str(model.num_timesteps) not in evaluator.csv.read_text()
    ):
        evaluator.evaluate()  # the end point of the learning curve
    env.close()
    return final_path, int(model.num_timesteps), train_seconds


def algo_label(config: Config) -> str:
    """The algorithm as reported: behaviour cloning is named as the imitation of the solver it is."""
    if config.algo in IMITATION_ALGORITHMS:
        from agents.training.bc import LABEL

        return f"{config.algo} ({LABEL})"
    return config.algo


def finish(
    config: Config,
    rules,
    run_dir: Path,
    solution,
    optimal: float | None,
    final_path: Path,
    timesteps: int,
    train_seconds: float,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Benchmark the trained agent against the solver, greedy and random; ``results.json``; plots."""
    from agents.evaluation.benchmark import benchmark, render_table

    # 4. benchmark the trained agent against the solver, greedy and random
    results: dict[str, Any] = {
        "algorithm": config.algo,
        "rules": rules.name,
        "rules_options": dict(rules.options),
        "timesteps": int(timesteps),
        "train_seconds": round(train_seconds, 1),
        "optimal_expected_score": optimal,
    }
    label = algo_label(config)
    if label != config.algo:
        results["label"] = label
    results.update(extra or {})
    if config.bench_games > 0:
        agents = [a for a in config.bench_agents if not (a == "optimal" and solution is None)]
        name = "model" if label == config.algo else label  # the trained agent's row
        bench = benchmark(
            rules,
            [*agents, (name, f"model:{final_path}")],
            games=config.bench_games,
            seed=config.seed + 2_000_003,
            workers=config.bench_workers,
            solution=solution if solution is not None else False,
        )
        results.update(bench.data["agents"][name])
        results["agents"] = bench.data["agents"]
        results["bench_games"] = config.bench_games
        render_table({**bench.data})
    results["config"] = asdict(config)
    (run_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    # 5. plots (matplotlib is part of the train extra; skip quietly without it)
    try:
        from agents.evaluation.plots import plot_learning_curve, plot_score_distributions

        if (run_dir / "evaluations.csv").is_file():
            plot_learning_curve(
                run_dir / "evaluations.csv", run_dir / "learning_curve.png", optimal, title=f"{label} on {rules.name}"
            )
        if config.bench_games > 0:
            plot_score_distributions(bench, run_dir / "score_distribution.png")
    except ModuleNotFoundError as error:
        print(f"no plots ({error.name} is not installed)")
    print(f"results: {run_dir / 'results.json'}")
    return results


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
