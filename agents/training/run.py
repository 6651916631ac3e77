"""A ``train.py`` run's folder and lifecycle: the checks before it, its trainer, and the final benchmark.

Read in the order ``train.py`` calls it: the config file (:func:`read_config_file`), the ruleset
(:func:`load_config_rules`), the run folder (:func:`check_run_dir`: a fresh run refuses a non-empty one unless
``--overwrite``), the checkpoint of a ``--resume`` (:func:`find_checkpoint`: complete, same ruleset, algorithm,
observation layout and network), the exact solve (:func:`exact_solution`), the trainer of the config's family
(:func:`batched_trainer`, :func:`imitation_trainer`, :func:`rllib_trainer`; SB3's in :mod:`agents.training.sb3`),
and after training :func:`finish`: the benchmark of the trained agent against the solver and the other agents,
``results.json`` and the plots.

A run folder holds ``config.yaml`` (the resolved config), ``tb/`` (TensorBoard), ``checkpoints/``,
``final_model.zip`` (SB3; ``final_model.npz``, a NumPy policy file, for the others), ``evaluations.csv``,
``learning_curve.png``, ``score_distribution.png`` and ``results.json`` (the trained agent's benchmark fields at
the top level plus ``algorithm``, ``rules`` and ``timesteps``; every agent under ``agents``).

Bad input is a :class:`UsageError` (``train.py`` prints it as one line and exits with code 2), raised before
anything is written.

Size: one run's lifecycle, read in the order ``train.py`` calls it; the checks of a ``--resume`` (the checkpoint
against its own run, the run folder, the fields that may change) share the config readers above them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agents.training.config import (
    BATCHED_ALGORITHMS,
    BC,
    IMITATION_ALGORITHMS,
    SB3_ALGORITHMS,
    Common,
    as_dict,
    make_config,
    one_line,
    saved_run_config,
    yaml_problem,
)
from dice_poker_env.files import cannot_write

if TYPE_CHECKING:
    from agents.training.bc import BCTrainer
    from agents.training.rllib_ppo import RLlibTrainer
    from agents.training.trainer import Trainer
    from dice_poker_env.rules import Rules
    from dice_poker_env.solver import Solution

ROOT = Path(__file__).resolve().parents[2]


class UsageError(Exception):
    """Bad input to ``train.py``: one line, exit code 2, nothing written."""


def fail(message: str) -> NoReturn:
    """Raise a :class:`UsageError` with ``message``."""
    raise UsageError(message)


def run_config_of(checkpoint: Path, run_dir: Path | None = None) -> Path | None:
    """The ``config.yaml`` of the run a resumed checkpoint belongs to: the one beside the checkpoint
    (``final_model.zip``) or above it (``checkpoints/model_N_steps.pt``), else ``run_dir``'s (a checkpoint kept
    outside any run folder); ``None`` if there is none."""
    candidates = [checkpoint.parent / "config.yaml", checkpoint.parent.parent / "config.yaml"]
    candidates += [run_dir / "config.yaml"] if run_dir is not None else []
    return next((path for path in candidates if path.is_file()), None)


def read_config_file(path: Path) -> dict[str, Any]:
    """The mapping of config fields in a YAML file (a one-line error otherwise)."""
    import yaml

    if path.is_dir():
        fail(f"config {path}: is a folder; name a YAML file (configs/*.yaml)")
    if not path.is_file():
        fail(f"no such config file: {path}")
    try:
        base = load_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        fail(f"{path}: not a text file (a YAML mapping of config fields expected)")
    except yaml.YAMLError as error:
        fail(f"{path}: not valid YAML ({yaml_problem(error)})")
    except OSError as error:
        fail(f"{path}: cannot read it ({error.strerror or error})")
    except RecursionError:  # (lists or mappings nested past the parser's stack: a traceback before)
        fail(f"{path}: not valid YAML (nested too deep to read)")
    if base is None:
        fail(f"{path}: empty (a YAML mapping of config fields expected)")
    if not isinstance(base, dict):
        fail(f"{path}: expected a mapping of config fields")
    return base


#: the most values a config file may expand to, its aliases (``*name``) counted as copies: a config has about
#: a hundred; a few lines of aliases of aliases (a "billion laughs") expand to billions, which the config's
#: typing copies out (a MemoryError traceback, after gigabytes)
MAX_CONFIG_VALUES = 100_000


def _expanded_size(node: Any, sizes: dict[int, int]) -> int:
    """The values ``node`` stands for with every alias expanded, each node counted once (``sizes``)."""
    if id(node) not in sizes:
        sizes[id(node)] = 0  # (a recursive alias counts nothing more)
        children = node.value if isinstance(node.value, list) else []
        items = [part for child in children for part in (child if isinstance(child, tuple) else (child,))]
        sizes[id(node)] = min(1 + sum(_expanded_size(item, sizes) for item in items), MAX_CONFIG_VALUES + 1)
    return sizes[id(node)]


def load_yaml(text: str) -> Any:
    """A YAML document read as config files are (a key given twice and a document that expands past
    :data:`MAX_CONFIG_VALUES` values are ``yaml.YAMLError``; nesting past the parser's stack ``RecursionError``)."""
    import yaml

    return yaml.load(text, Loader=_unique_keys_loader())  # noqa: S506 - a SafeLoader


def _unique_keys_loader() -> type:
    """PyYAML's ``SafeLoader``, but a key given twice in one mapping is an error (PyYAML keeps the last silently),
    and a document that expands to more than :data:`MAX_CONFIG_VALUES` values is refused before it is built."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_document(self, node: Any) -> Any:
            if _expanded_size(node, {}) > MAX_CONFIG_VALUES:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"it expands to more than {MAX_CONFIG_VALUES:,} values (aliases of aliases)",
                    node.start_mark,
                )
            return super().construct_document(node)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, (str, int, float, bool)):
                    continue  # (an unhashable key: PyYAML's own error follows)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint with the most timesteps in ``run_dir/checkpoints`` (``None`` if there is none)."""
    found = checkpoints(run_dir)
    return max(found)[1] if found else None


def checkpoint_steps(path: Path) -> int | None:
    """The timesteps in a checkpoint's name (``model_N_steps.pt`` or ``.zip``), ``None`` for another name."""
    match = re.fullmatch(r"model_(\d+)_steps\.(zip|pt)", path.name)
    return int(match.group(1)) if match else None


def checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """``(timesteps, path)`` of every checkpoint of the run (SB3 ``.zip``, batched trainers ``.pt``)."""
    return [
        (steps, path)
        for path in (run_dir / "checkpoints").glob("model_*_steps.*")
        if (steps := checkpoint_steps(path)) is not None
    ]


def checkpoint_metadata(path: Path) -> dict[str, Any]:
    """The metadata of a checkpoint: SB3's ``.zip`` or a batched trainer's ``.pt`` (checked whole)."""
    return checkpoint_contents(path)[0]


def checkpoint_contents(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The metadata of a checkpoint (checked whole) and the config it was trained with where it holds one (a batched
    trainer's ``.pt``, an SB3 ``.zip`` of this version's ``train.py``; ``None`` for an older ``.zip``)."""
    if path.suffix == ".pt":
        from agents.training.trainer import read_checkpoint

        state = read_checkpoint(path)
        return state["metadata"], state["config"] if isinstance(state["config"], dict) else None
    from agents.players.sb3_agent import read_metadata

    metadata = read_metadata(path)
    stored = metadata.get("config")
    return metadata, stored if isinstance(stored, dict) else None


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

#: config fields a resumed run may change: how long it trains, how often it is evaluated, how it is benchmarked,
#: logged and checkpointed, and the hardware it runs on. Every other field of its section (the ruleset, the seed,
#: the network, the batch, the algorithm's hyper-parameters, a new algorithm's own fields too, and what an
#: evaluation measures: :data:`EVALUATION_FIELDS`) is the checkpoint's: changing one on --resume is refused, since
#: the resumed model would keep its own while config.yaml claimed the new value
RESUME_MAY_CHANGE = frozenset(
    {
        "total_timesteps",
        "bc_epochs",
        "eval_freq",
        "bench_games",
        "bench_agents",
        "bench_workers",
        "checkpoint_freq",
        "save_replay_buffer",
        "progress_bar",
        "verbose",
        "runs_dir",
        "recipe",
        "device",
        "torch_threads",
        "compile",
        "vec_env",
        "num_env_runners",
        "ray_address",
    }
)


#: what each row of a run's evaluations.csv measures (its games; with the solver, % of optimal and, in self-play,
#: the opponent): the same over the whole run, so that its rows and its best model compare like with like
EVALUATION_FIELDS = ("eval_episodes", "solver")


def fixed_fields(config: Common) -> list[str]:
    """The fields of ``config``'s section that a resumed run keeps from its checkpoint (all but
    :data:`RESUME_MAY_CHANGE`)."""
    return [field.name for field in dataclasses.fields(config) if field.name not in RESUME_MAY_CHANGE]


def load_config_rules(config: Common) -> Rules:
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


def check_bench_agents(config: Common, rules: Rules) -> None:
    """Every agent of the final benchmark loads for this ruleset before training starts: model files (present,
    readable, of this ruleset), the shipped policy of ``trained``, custom agents (``optimal`` needs the solve,
    and is left out of the benchmark without one)."""
    from agents.players.registry import make_agent

    if config.bench_games == 0:
        return
    for name in config.bench_agents:
        if name == "optimal":
            continue
        try:
            make_agent(name, rules, seed=config.seed)
        except (ValueError, OSError, ImportError) as error:
            fail(f"bench_agents: {name}: {one_line(error)}")


def default_run_dir(runs_dir: str | Path, rules: Rules, algo: str, seed: int, stamp: str) -> Path:
    """``RUNS_DIR/RULES__ALGO__sSEED__STAMP``, the run folder when ``--run-dir`` is not given. A ruleset's name is
    any text in a rules file: only its letters, digits, ``-`` and ``_`` go into the folder's name (as in the solver
    cache's file names), so that a name such as ``../x`` or ``/tmp/x`` stays a folder inside ``runs_dir``."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in rules.name)[:40] or "rules"
    return Path(runs_dir) / f"{safe}__{algo}__s{seed}__{stamp}"


def check_run_dir(run_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """A fresh run needs a new or empty folder, or ``--overwrite`` of an earlier run's folder; a resumed one its own
    run folder (``config.yaml``) or a new or empty one (never a folder of other files)."""
    if run_dir.exists() and not run_dir.is_dir():
        fail(f"--run-dir {run_dir}: exists and is not a folder")
    parent = next(folder for folder in (run_dir, *run_dir.parents) if folder.exists())
    if not parent.is_dir():
        fail(f"run folder {run_dir}: {parent} is not a folder")
    problem = cannot_write(parent)
    if problem is not None:
        fail(f"run folder {run_dir}: {parent} is not writable ({problem})")
    if not run_dir.is_dir() or not any(run_dir.iterdir()):
        return
    if not (run_dir / "config.yaml").is_file():
        fail(
            f"--run-dir {run_dir} is not empty and is not a train.py run folder (no config.yaml): "
            + (
                "a resumed run goes on in its own folder or in a new or empty one"
                if resume
                else "--overwrite only replaces runs; choose a new or empty folder"
            )
        )
    if resume:
        return
    if not overwrite:
        fail(
            f"--run-dir {run_dir} holds an earlier run; continue it with --resume, "
            "start it again with --overwrite, or choose a new folder"
        )


def clear_run(run_dir: Path) -> None:
    """Remove an earlier run's artifacts (``--overwrite``), so no file of it mixes with the new run."""
    for name in RUN_ARTIFACTS:
        path = run_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def find_checkpoint(args: argparse.Namespace, run_dir: Path, config: Common, rules: Rules) -> Path:
    """The checkpoint ``--resume`` continues from, checked whole and against the config."""
    from agents.players.sb3_agent import check_ruleset

    checkpoint = latest_checkpoint(run_dir) if args.resume == "latest" else Path(args.resume)
    if checkpoint is None:
        fail(
            f"--resume: no checkpoint in {run_dir / 'checkpoints'} (the run stopped before its first): nothing can be "
            f"resumed; start it again with --overwrite"
        )
    try:
        metadata, stored = checkpoint_contents(checkpoint)
        check_ruleset(metadata, rules, source=f"checkpoint {checkpoint}")
    except (ValueError, OSError) as error:
        earlier = [p for _, p in checkpoints(run_dir) if p != checkpoint]
        hint = "; an earlier checkpoint can be given as --resume PATH" if args.resume == "latest" and earlier else ""
        fail(f"--resume: {str(error).rstrip('.') if hint else error}{hint}")
    own = run_config_of(checkpoint)  # the reference is the checkpoint's own run: its folder's config.yaml, ...
    known = own is not None or stored is not None  # (... else the config a batched checkpoint holds)
    for name in ("algo", "obs_mode", "distinct_keeps") if known else ("algo", "obs_mode", "distinct_keeps", "seed"):
        saved = metadata.get("algorithm" if name == "algo" else name, False if name == "distinct_keeps" else None)
        if saved != getattr(config, name) and not (name == "seed" and saved is None):  # (older files: no seed)
            fail(
                f"--resume: checkpoint {checkpoint} was trained with {name}={saved!r}, the config says "
                f"{name}={getattr(config, name)!r}; resume with the run's own {name} or start a new run"
            )
    if own is not None:
        reference, source = saved_run_config(read_config_file(own)), str(own)
    elif stored is not None:
        reference, source = saved_run_config(stored), f"checkpoint {checkpoint}"
    else:  # (an older SB3 checkpoint outside any run folder: its metadata, checked above with its seed, is all)
        reference, source = args.base, str(args.config)
    try:
        before = make_config(reference)
    except ValueError as error:
        fail(f"--resume: {source}: {error}")
    home = run_dir / "config.yaml"
    if home.is_file() and (own is None or own.resolve() != home.resolve()):  # --run-dir holds a run of its own
        try:
            theirs = make_config(saved_run_config(read_config_file(home)))
        except ValueError as error:
            fail(f"--resume: {home}: {error}")
        differ = [n for n in fixed_fields(before) if getattr(theirs, n, None) != getattr(before, n)]
        if differ:
            fail(
                f"--resume: checkpoint {checkpoint} is of another run than {run_dir}'s (the checkpoint's "
                f"{', '.join(f'{n}={getattr(before, n)!r}' for n in differ)}; {run_dir}'s "
                f"{', '.join(f'{n}={getattr(theirs, n, None)!r}' for n in differ)}): resume it in its own run "
                "folder or a new one"
            )
    args.previous_total = getattr(before, "total_timesteps", None)  # (train.py says when the schedule stretches)
    steps = checkpoint_steps(checkpoint)
    total = getattr(config, "total_timesteps", None)  # (an imitation run counts epochs)
    if steps is not None and total is not None and steps > total != getattr(before, "total_timesteps", None):
        fail(  # (at the run's own total, a finished run goes on to its benchmark: whole rollouts may pass the total)
            f"--resume: checkpoint {checkpoint} is at {steps:,} timesteps, past "
            f"total_timesteps={total:,}; resume with a larger total_timesteps=N (the run's results would otherwise "
            "be rewritten from nothing trained)"
        )
    changed = [name for name in fixed_fields(config) if getattr(config, name) != getattr(before, name, None)]
    measured = [name for name in changed if name in EVALUATION_FIELDS]
    if measured:
        fail(
            f"--resume: {', '.join(f'{n}={getattr(config, n)!r}' for n in measured)} differs from the run's "
            f"{', '.join(f'{n}={getattr(before, n)!r}' for n in measured)}; the run's evaluations (evaluations.csv, "
            "the best model) measure with its own (start a new run to change it)"
        )
    if changed:
        fail(
            f"--resume: {', '.join(f'{n}={getattr(config, n)!r}' for n in changed)} differs from the run's "
            f"{', '.join(f'{n}={getattr(before, n)!r}' for n in changed)}; a resumed model keeps its own "
            "(start a new run to change it)"
        )
    return checkpoint


def interrupted(run_dir: Path, steps: int, algo: str) -> str:
    """The line an interrupted run ends with: where it stopped, its last checkpoint, and how it goes on."""
    where = f"train.py: interrupted at {steps:,} steps"
    folder = shlex.quote(str(run_dir))  # (a command to paste: a folder with a space stays one argument)
    config = shlex.quote(str(run_dir / "config.yaml"))
    again = f"start it again with python train.py --config {config} --run-dir {folder} --overwrite"
    if algo not in BATCHED_ALGORITHMS + SB3_ALGORITHMS:
        return f"{where}; {algo} runs are not resumed: {again}"
    found = checkpoints(run_dir)
    if not found:
        return f"{where}, before its first checkpoint: nothing can be resumed; {again}"
    at, path = max(found)
    lost = f" (the {steps - at:,} steps since it are lost)" if steps > at else ""
    return f"{where}; last checkpoint {path}{lost}; resume with python train.py --run-dir {folder} --resume"


def exact_solution(config: Common, rules: Rules) -> Solution | None:
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


def run_metadata(config: Common) -> dict[str, Any]:
    """What every policy file of a run records so that it can be reproduced: the config, the command (when
    run as ``train.py``; ``commands``: with the commands of the sessions a resumed run continues), the library's version and, in a git checkout, the commit of the code (``-dirty``
    where the files differ from it)."""
    import dice_poker_env
    from agents.evaluation.protocol import code_commit

    command = "python train.py " + " ".join(sys.argv[1:]) if Path(sys.argv[0]).name == "train.py" else None
    return {
        "config": as_dict(config),
        "command": command,
        "commands": [command] if command else [],  # a resumed batched run's: every session's, the first first
        "version": dice_poker_env.__version__,
        "git_commit": code_commit(),
    }


def batched_trainer(
    config: Common, rules: Rules, run_dir: Path, optimal: float | None, resume_from: Path | None
) -> Trainer:
    """The project's batched torch trainer (agents/training/trainer.py), resumed if asked; nothing written yet."""
    from agents.training.trainer import Trainer

    try:
        trainer = Trainer(
            config, rules, run_dir, optimal=optimal, metadata=run_metadata(config), resuming=resume_from is not None
        )
        if resume_from is not None:
            trainer.load_checkpoint(resume_from)
    except Exception as error:  # noqa: BLE001 - whatever torch raises, the run has not started
        what = (
            f"checkpoint {resume_from} cannot be loaded" if resume_from is not None else "the trainer cannot be built"
        )
        kind = "" if isinstance(error, ValueError) else f"{type(error).__name__}: "  # (ours: one line already)
        fail(f"{what}: {kind}{one_line(error)}")
    return trainer


def rllib_trainer(config: Common, rules: Rules, run_dir: Path, optimal: float | None) -> RLlibTrainer:
    """RLlib's PPO with action masking (agents/training/rllib_ppo.py): Ray and the algorithm built, nothing written yet."""
    try:
        from agents.training.rllib_ppo import RLlibTrainer
    except ModuleNotFoundError as error:
        fail(f"{config.algo} runs on RLlib: {error.name} is not installed (pip install -e '.[rllib]')")
    try:
        return RLlibTrainer(config, rules, run_dir, optimal=optimal, metadata=run_metadata(config))
    except Exception as error:  # noqa: BLE001 - whatever Ray or RLlib raise, the run has not started
        fail(f"RLlib's PPO cannot be built: {type(error).__name__}: {one_line(error)}")


def imitation_trainer(config: BC, rules: Rules, run_dir: Path, optimal: float | None) -> BCTrainer:
    """Behaviour cloning from ``config.dataset`` (agents/training/bc.py); the dataset is read and checked, nothing written yet."""
    from agents.training.bc import BCTrainer

    try:
        return BCTrainer(config, rules, run_dir, optimal=optimal, metadata=run_metadata(config))
    except ImportError as error:  # (Minari raises a plain ImportError for h5py)
        missing = f"{error.name} is not installed" if error.name else one_line(error)
        fail(f"{config.algo} reads Minari datasets: {missing} (pip install -e '.[datasets]')")
    except (ValueError, OSError) as error:
        fail(f"dataset={config.dataset!r}: {one_line(error)}")


def algo_label(config: Common, policy: Path | None = None) -> str:
    """The algorithm as reported: behaviour cloning is named as the imitation it is (of the solver, of the greedy
    agent: the agent its dataset's metadata names, as the trained ``policy`` file records it; not its id's)."""
    if config.algo in IMITATION_ALGORITHMS:
        from agents.policy.files import load_policy
        from agents.training.bc import imitation_label

        agent = load_policy(policy)[1].get("dataset_agent") if policy is not None and policy.is_file() else None
        return f"{config.algo} ({imitation_label(agent if isinstance(agent, str) else None)})"
    return config.algo


def bench_matches(config: Common, rules: Rules, solution: Solution | None, final_path: Path) -> dict[str, Any]:
    """A self-play policy's benchmark: a duplicate match (``bench_games`` games) against each of
    ``bench_agents`` (``optimal`` only with a solution); the match summaries by opponent."""
    from agents.evaluation.match import match

    out: dict[str, Any] = {}
    for opponent in config.bench_agents:
        if opponent == "optimal" and solution is None:
            continue
        games = max(2, config.bench_games - config.bench_games % 2)
        row = match(rules, f"model:{final_path}", opponent, games=games, seed=config.seed + 2_000_003)
        low, high = row["win_rate_ci95"]
        print(
            f"model vs {opponent}: win rate {100 * row['win_rate']:.2f}% (95% CI {100 * low:.2f}-{100 * high:.2f}), {games:,} games"
        )
        out[opponent] = row
    return out


def finish(
    config: Common,
    rules: Rules,
    run_dir: Path,
    solution: Solution | None,
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
        "train_seconds": round(train_seconds, 3),  # (0.1 s made a short run's steps/s a rounding artifact)
        "optimal_expected_score": optimal,
    }
    label = algo_label(config, final_path)
    if label != config.algo:
        results["label"] = label
    results.update(extra or {})
    if config.bench_games > 0 and getattr(config, "players", 1) > 1:
        results["matches"] = bench_matches(config, rules, solution, final_path)
    elif config.bench_games > 0:
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
        try:
            render_table({**bench.data})
        except ModuleNotFoundError as error:  # rich: the cli extra, part of train; the run's results still count
            print(f"no table ({error.name} is not installed)")
    results["config"] = as_dict(config)
    (run_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    # 5. plots (matplotlib is part of the train extra; skip quietly without it)
    try:
        from agents.evaluation.plots import plot_learning_curve, plot_score_distributions

        if (run_dir / "evaluations.csv").is_file():
            plot_learning_curve(
                run_dir / "evaluations.csv", run_dir / "learning_curve.png", optimal, title=f"{label} on {rules.name}"
            )
        if config.bench_games > 0 and "matches" not in results:
            plot_score_distributions(bench, run_dir / "score_distribution.png")
    except ModuleNotFoundError as error:
        print(f"no plots ({error.name} is not installed)")
    print(f"results: {run_dir / 'results.json'}")
    return results
