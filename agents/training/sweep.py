"""Sweeps on Ray Tune: many ordinary training runs (configurations x seeds), compared at the end.

    python train.py --sweep configs/sweeps/yacht_algorithms.yaml            # Ray embedded on this machine
    python train.py --sweep FILE --address auto                             # on a running Ray cluster
    python train.py --sweep FILE --sweep-dir runs/sweeps/x --resume         # continue an interrupted sweep

A sweep file (YAML) names the configurations to compare and the seeds::

    configurations:              # label -> a train.py config file and fields set on top of it
      batched_ppo: {config: configs/batched_ppo_yacht.yaml}
      batched_a2c: {config: configs/batched_a2c_yacht.yaml, learning_rate: 0.001}
      batched_pqn: {config: configs/batched_pqn_yacht.yaml}
    set: {bench_games: 500}      # fields of every trial
    grid: {n_epochs: [2, 4]}     # every combination of these values (x every configuration)
    random:                      # `samples` random points (each with every seed)
      ent_coef: {loguniform: [0.0001, 0.01]}
    samples: 1
    seeds: [0, 1, 2]
    resources: {cpu: 1, gpu: 0}  # per trial; gpu may be a fraction
    max_concurrent: 0            # trials at once (0: as many as the cluster's resources allow)

A configuration without ``config`` takes the file's top-level ``config``, else
what ``train.py`` would take: with an ``algo`` (its own, ``set``'s, a grid or
random point's) that algorithm's shipped recipe, else batched PPO's.

Each trial is ``python train.py --config FILE --run-dir SWEEP/runs/NAME key=value ...``
in a process of its own, scheduled by Ray Tune on a CPU (or GPU share) of the
local machine or the cluster: its run folder, evaluations and final benchmark
are those of any training run. A trial that fails (a bad value in one grid
point, a crash) is reported FAILED with its error; the others go on. Ray Tune
records the sweep's state in ``SWEEP/tune``; an interrupted sweep continues
with ``--resume`` and reruns no finished trial (a trial cut off mid-run continues
from its last checkpoint). At the end, :mod:`agents.evaluation.results` aggregates the
finished trials by configuration label (IQM and mean with 95% bootstrap
intervals over seeds, the mean regret with its interval, learning curves with
the seeds shaded) into ``SWEEP/results/``, and the sweep's tables are written
to ``SWEEP/trials.csv`` (every trial) and ``SWEEP/summary.csv`` (every
configuration) and printed.

The sweep file is checked before Ray starts (unknown keys and config fields,
missing config files: a one-line error, exit code 2); the values of config
fields are checked by each trial's ``train.py``. Layering: ``train.py`` calls
:func:`main` with its config fields and script path; this module never imports
``train``. Ray is imported only when a sweep runs (the ``ray`` extra).

Size: one command: the sweep file's schema and its validation (a third of the module),
the trial runner and the tables of the results.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dice_poker_env.files import write_whole

if TYPE_CHECKING:
    from ray.tune import Callback
    from ray.tune.experiment import Trial as TuneTrial

ROOT = Path(__file__).resolve().parents[2]
#: the keys of a sweep file
SWEEP_KEYS = (
    "name",
    "configurations",
    "config",
    "set",
    "grid",
    "random",
    "samples",
    "seeds",
    "resources",
    "max_concurrent",
    "random_seed",
)
#: config fields the sweep sets itself, and what sets them (``runs_dir``: each trial's run folder is SWEEP/runs/NAME)
SET_BY_THE_SWEEP = {
    "seed": "set by seeds",
    "recipe": "set by the configuration's label",
    "runs_dir": "set by the sweep folder (SWEEP/runs/NAME)",
}
#: random search distributions: name -> (number of bounds, the sampler)
DISTRIBUTIONS = ("uniform", "loguniform", "randint", "choice")
TUNE_DIR = "tune"
SPEC_FILE = "sweep.json"


class SweepError(ValueError):
    """A problem with a sweep file or a sweep folder (one line)."""


@dataclass
class Trial:
    """One training run of the sweep."""

    name: str  # unique, the run folder's name: LABEL__sSEED
    label: str  # the configuration compared (seeds of one label are aggregated together)
    seed: int
    config_file: str  # absolute path of the train.py config file ("": none, the algorithm section's defaults)
    overrides: list[str] = field(default_factory=list)  # key=value, after the config file

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "seed": self.seed,
            "config_file": self.config_file,
            "overrides": list(self.overrides),
        }


@dataclass
class Sweep:
    """A sweep file, expanded into its trials."""

    name: str
    trials: list[Trial]
    cpu: float = 1.0
    gpu: float = 0.0
    max_concurrent: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cpu": self.cpu,
            "gpu": self.gpu,
            "max_concurrent": self.max_concurrent,
            "trials": [t.as_dict() for t in self.trials],
        }


# ----------------------------------------------------------------------------- the sweep file
def load_sweep(path: Path, fields: set[str], default_config: Callable[[list[str]], Path | None]) -> Sweep:
    """Read and expand a sweep file (nothing runs; a :class:`SweepError` names the problem).

    Args:
        path: the sweep file (YAML).
        fields: the config fields of ``train.py`` (grid, random and set keys must be among them).
        default_config: the config file of a trial whose configuration names none, from the trial's
            overrides (``train.py``'s own choice: with ``algo=X`` among them, X's recipe; ``None``: no file,
            the section's defaults).
    """
    import yaml

    if not path.is_file():
        raise SweepError(f"no such sweep file: {path}")
    from agents.training.run import load_yaml

    try:  # (read as config files are: a key given twice, or aliases expanding to billions of values, refused)
        data = load_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SweepError(f"{path}: not a text file (a YAML sweep file expected)") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise SweepError(f"{path}: not valid YAML ({getattr(error, 'problem', None) or 'unreadable'}{where})") from None
    except RecursionError:
        raise SweepError(f"{path}: not valid YAML (nested too deep to read)") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path}: expected a mapping (configurations, grid, seeds, ...)")
    unknown = [key for key in data if key not in SWEEP_KEYS]
    if unknown:
        raise SweepError(f"{path}: unknown key {unknown[0]!r} (a sweep file has {', '.join(SWEEP_KEYS)})")

    def mapping(key: str) -> dict:
        value = data.get(key) or {}
        if not isinstance(value, dict):
            raise SweepError(f"{path}: {key} must be a mapping, got {value!r}")
        return value

    def check_fields(where: str, keys: Iterable[Any]) -> None:
        for key in keys:
            if str(key).split(".")[0] not in fields or key in SET_BY_THE_SWEEP:
                why = SET_BY_THE_SWEEP.get(str(key), "unknown config field")
                raise SweepError(f"{path}: {where}: {why} {key!r}")

    def config_path(value: Any, where: str) -> Path:
        if not isinstance(value, str) or not value:
            raise SweepError(f"{path}: {where}: config must be a config file path, got {value!r}")
        for base in (path.parent, ROOT, Path.cwd()):
            candidate = (base / value).resolve()
            if candidate.is_file():
                return candidate
        raise SweepError(f"{path}: {where}: no such config file: {value}")

    base_config = config_path(data["config"], "config") if "config" in data else None
    common = mapping("set")
    check_fields("set", common)
    configurations = mapping("configurations") or {"": {}}
    labelled: list[tuple[str, Path | None, dict]] = []
    for label, entry in configurations.items():
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            raise SweepError(f"{path}: configuration {label!r} must be a mapping (config: FILE, fields), got {entry!r}")
        entry = dict(entry)
        config = config_path(entry.pop("config"), f"configuration {label!r}") if "config" in entry else base_config
        check_fields(f"configuration {label!r}", entry)
        labelled.append((str(label), config, entry))

    grid = mapping("grid")
    check_fields("grid", grid)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"{path}: grid: {key} must list its values, got {values!r}")
    random_fields = mapping("random")
    check_fields("random", random_fields)
    given = [("set", common), ("grid", grid), *((f"configuration {label!r}", own) for label, _, own in labelled)]
    clash = drawn_elsewhere(random_fields, given)
    if clash:
        raise SweepError(f"{path}: random: {clash}")
    samples = data.get("samples", 1)
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise SweepError(f"{path}: samples must be a positive integer, got {samples!r}")
    if "samples" in data and not random_fields:  # (it was ignored, silently)
        raise SweepError(f"{path}: samples goes with random: (the fields to sample); there is none")
    random_seed = data.get("random_seed", 0)
    if not isinstance(random_seed, int) or isinstance(random_seed, bool):
        raise SweepError(f"{path}: random_seed must be an integer, got {random_seed!r}")
    points = random_points(random_fields, samples if random_fields else 1, random_seed, path)

    seeds = data.get("seeds", [0])
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if (
        not isinstance(seeds, list)
        or not seeds
        or len(set(map(str, seeds))) != len(seeds)
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
    ):
        raise SweepError(f"{path}: seeds must list distinct non-negative integers, got {seeds!r}")
    resources = mapping("resources")
    for key in resources:
        if key not in ("cpu", "gpu"):
            raise SweepError(f"{path}: resources: unknown key {key!r} (cpu, gpu)")
    cpu, gpu = resources.get("cpu", 1), resources.get("gpu", 0)
    for key, value in (("cpu", cpu), ("gpu", gpu)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
            raise SweepError(f"{path}: resources: {key} must be a non-negative number, got {value!r}")
    if cpu == 0 and gpu == 0:
        raise SweepError(f"{path}: resources: a trial needs a CPU or a GPU share")
    max_concurrent = data.get("max_concurrent", 0)
    if not isinstance(max_concurrent, int) or isinstance(max_concurrent, bool) or max_concurrent < 0:
        raise SweepError(f"{path}: max_concurrent must be a non-negative integer, got {max_concurrent!r}")

    trials: list[Trial] = []
    grid_keys = list(grid)
    for label, config, own in labelled:
        for values in itertools.product(*(grid[key] for key in grid_keys)):
            for index, point in enumerate(points):
                parts = [label] if label else []
                parts += [f"{key}={_short(value)}" for key, value in zip(grid_keys, values)]
                if random_fields:
                    parts.append(f"r{index}")
                group = ",".join(parts) or "trial"
                fixed = {**common, **own, **dict(zip(grid_keys, values)), **point}
                for seed in seeds:
                    overrides = [f"{key}={_yaml_value(value)}" for key, value in fixed.items()]
                    overrides += [f"recipe={_yaml_value(group)}", f"seed={seed}"]
                    file = config if config is not None else default_config(overrides)
                    name = f"{_safe(group)}__s{seed}"
                    trials.append(Trial(name, group, int(seed), str(file.resolve()) if file else "", overrides))
    for trial in trials:  # the GPU share Ray reserves is the one the trial trains on
        device = trial_device(trial)
        if gpu > 0 and not device.startswith("cuda"):
            raise SweepError(
                f"{path}: resources: gpu {gpu:g} per trial, but trial {trial.name} trains on device {device} "
                "(set device: cuda, or gpu: 0)"
            )
        if gpu == 0 and device.startswith("cuda"):
            raise SweepError(
                f"{path}: trial {trial.name} trains on device {device}, but resources give it no GPU "
                "(resources: {gpu: 0.25} shares one GPU between four trials)"
            )
    names = [t.name for t in trials]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise SweepError(
            f"{path}: two trials would share the run folder {duplicate!r}; give the configurations distinct labels"
        )
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise SweepError(f"{path}: name must be a folder name (letters, digits, _ . -), got {name!r}")
    return Sweep(name, trials, float(cpu), float(gpu), max_concurrent)


def trial_device(trial: Trial) -> str:
    """The torch device a trial trains on: its last ``device=`` override, else its config file's, else ``cpu``."""
    import yaml

    for override in reversed(trial.overrides):
        key, _, value = override.partition("=")
        if key.strip() == "device":
            try:
                return str(yaml.safe_load(value))
            except yaml.YAMLError:
                return value
    if trial.config_file:
        from agents.training.run import load_yaml

        try:
            data = load_yaml(Path(trial.config_file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
            return "cpu"  # (the trial's train.py says what is wrong with its file)
        if isinstance(data, dict) and "device" in data:
            return str(data["device"])
    return "cpu"


def drawn_elsewhere(random_fields: dict, given: list[tuple[str, dict]]) -> str | None:
    """What is wrong when a field of ``random`` is also given in ``set``, ``grid`` or a configuration (``given``:
    where, its fields), a dotted key and its mapping (``rules_options.joker``, ``rules_options``) counting as one;
    ``None`` if none is. A trial takes one of the two values, and its label would not say which (a grid's value
    in the label while the draw trained), so the other would be dropped silently."""

    def overlap(a: str, b: str) -> bool:
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")

    for key in map(str, random_fields):
        for where, fields in given:
            other = next((str(k) for k in fields if overlap(key, str(k))), None)
            if other is not None:
                return f"{key} is drawn at random and also given in {where} ({other}); give it in one place"
    return None


def config_fingerprints(trials: list[Trial]) -> dict[str, str]:
    """The SHA-256 of each config file the trials start from, by path (recorded in ``sweep.json``)."""
    return {path: _sha256(Path(path)) for path in sorted({t.config_file for t in trials if t.config_file})}


def changed_configs(recorded: dict[str, str]) -> list[str]:
    """The config files whose contents are no longer those ``recorded`` (:func:`config_fingerprints`) when the
    sweep started: a trial starting from one now would train other values than its seeds that ran."""
    return [path for path, digest in recorded.items() if _sha256(Path(path)) != digest]


def _sha256(path: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""  # (gone or unreadable: changed)


def random_points(spec: dict, samples: int, seed: int, path: Path) -> list[dict[str, Any]]:
    """``samples`` points of the random search, drawn with NumPy from ``seed`` (the same file, the same points)."""
    import numpy as np

    generator = np.random.default_rng(seed)
    draws: dict[str, list] = {}
    for key, dist in spec.items():
        if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
            raise SweepError(
                f"{path}: random: {key} must be one of {{{': [...]}, {'.join(DISTRIBUTIONS)}: [...]}}, got {dist!r}"
            )
        kind, args = next(iter(dist.items()))
        if kind == "choice":
            if not isinstance(args, list) or not args:
                raise SweepError(f"{path}: random: {key}: choice needs a list of values")
            draws[key] = [args[int(i)] for i in generator.integers(0, len(args), samples)]
            continue
        numeric = (
            isinstance(args, list)
            and len(args) == 2
            and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)
            and (kind != "randint" or all(isinstance(a, int) for a in args))  # (1.5 was truncated to 1)
        )
        if not numeric or not args[0] < args[1] or (kind == "loguniform" and args[0] <= 0):
            raise SweepError(
                f"{path}: random: {key}: {kind} needs [low, high]"
                + (" of integers" if kind == "randint" else "")
                + " with low < high"
                + (" and low > 0" if kind == "loguniform" else "")
                + f", got {args!r}"
            )
        low, high = args
        if kind == "uniform":
            draws[key] = [float(v) for v in generator.uniform(low, high, samples)]
        elif kind == "loguniform":
            draws[key] = [float(v) for v in np.exp(generator.uniform(math.log(low), math.log(high), samples))]
        else:
            draws[key] = [int(v) for v in generator.integers(int(low), int(high), samples, endpoint=True)]
    return [{key: values[i] for key, values in draws.items()} for i in range(samples)]


def _yaml_value(value: Any) -> str:
    """A value as train.py's ``key=value`` override reads it (YAML flow style)."""
    if isinstance(value, str):
        return json.dumps(value)  # quoted: "1e-3" stays a string, a string stays a string
    return json.dumps(value) if isinstance(value, (dict, list, bool)) or value is None else repr(value)


def _short(value: Any) -> str:
    return (
        f"{value:g}"
        if isinstance(value, float)
        else (json.dumps(value) if isinstance(value, (list, dict)) else str(value))
    )


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=,+-]", "_", text)[:120]


# ----------------------------------------------------------------------------- one trial (on a Ray worker)
def _death_signal() -> Callable[[], None] | None:
    """For the trial's child process: end it when the Ray worker running it ends (Linux), so no run is orphaned.

    The C function is looked up here, in the worker; the child (between fork and
    exec) only calls it.
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _read_curve(path: Path) -> list[dict[str, float]]:
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return [
            {
                "timesteps": int(r["timesteps"]),
                "mean_score": float(r["mean_score"]),
                **({"percent_of_optimal": float(r["percent_of_optimal"])} if r.get("percent_of_optimal") else {}),
            }
            for r in csv.DictReader(handle)
            if r.get("timesteps")
        ]


def final_metrics(results: dict[str, Any]) -> dict[str, Any]:
    """What a finished trial reports to Tune (from its ``results.json``)."""
    keys = ("percent_of_optimal", "regret_mean", "mean", "median", "timesteps", "train_seconds")
    return {"trial_finished": True, **{key: results.get(key) for key in keys if results.get(key) is not None}}


def run_trial(config: dict[str, Any], *, sweep_dir: str, train_script: str) -> None:
    """Ray Tune's function trainable: one ``train.py`` run in a child process, its evaluations reported."""
    from ray import tune

    trial = config["trial"]
    sweep = Path(sweep_dir)
    run_dir = sweep / "runs" / trial["name"]
    log_path = sweep / "logs" / f"{trial['name']}.log"
    error_path = log_path.with_suffix(".error")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    error_path.unlink(missing_ok=True)
    results_path = run_dir / "results.json"
    if results_path.is_file():  # finished before the sweep was interrupted, not yet recorded by Tune
        tune.report(final_metrics(json.loads(results_path.read_text())))
        return
    command = [sys.executable, train_script, "--run-dir", str(run_dir)]
    checkpoints = list((run_dir / "checkpoints").glob("model_*_steps.*")) if run_dir.is_dir() else []
    if checkpoints and (run_dir / "config.yaml").is_file():
        command.append("--resume")  # cut off mid-run: continue from the run's own config and checkpoint
        how = "resume"
    else:
        spec = json.loads((sweep / SPEC_FILE).read_text()) if (sweep / SPEC_FILE).is_file() else {}
        recorded = spec.get("config_files", {})
        if trial["config_file"] in recorded and changed_configs({trial["config_file"]: recorded[trial["config_file"]]}):
            message = f"config file {trial['config_file']} changed since the sweep started; start a new sweep folder"
            error_path.write_text(message + "\n")  # (its seeds that ran trained the file as it was)
            raise RuntimeError(f"trial {trial['name']} failed: {message}")
        command += [*(["--config", trial["config_file"]] if trial["config_file"] else []), *trial["overrides"]]
        if run_dir.is_dir() and (run_dir / "config.yaml").is_file():
            command.append("--overwrite")  # cut off before its first checkpoint: start it again
        how = "start"
    with (sweep / "trials.log").open("a") as journal:
        journal.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {how} {trial['name']}\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(train_script).resolve().parent), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    env.pop("RAY_ADDRESS", None)  # an rllib_ppo trial starts a Ray of its own unless its config names one
    reported = 0
    with log_path.open("a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(Path(train_script).resolve().parent),
            preexec_fn=_death_signal(),
        )
        try:
            while process.poll() is None:
                time.sleep(1.0)
                curve = _read_curve(run_dir / "evaluations.csv")
                for row in curve[reported:]:
                    tune.report(row)  # the learning curve, as it grows
                reported = len(curve)
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait()
    if process.returncode != 0 or not results_path.is_file():
        lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("train.py: error:")]
        message = errors[-1] if errors else (lines[-1] if lines else "no output")
        if process.returncode < 0:  # killed: the last line logged is not why it ended
            name = signal.Signals(-process.returncode).name if -process.returncode in signal.valid_signals() else "?"
            message = f"killed by signal {-process.returncode} ({name}); its last line: {message}"
        else:
            message = f"exit code {process.returncode}: {message}"
        message = message[:500]
        error_path.write_text(message + "\n")
        raise RuntimeError(f"trial {trial['name']} failed: {message} (log: {log_path})")
    tune.report(final_metrics(json.loads(results_path.read_text())))


# ----------------------------------------------------------------------------- the driver
STOP_AFTER_FILE = ".stop_after"
STOPPED_FILE = ".stopped_after"  # written when --stop-after stopped this session


def _stop_after(sweep_dir: Path) -> Callback:
    """A Tune callback for ``--stop-after N``: it interrupts the sweep once N trials have ended.

    N is read from ``SWEEP/.stop_after`` when each session of the sweep starts
    (Tune keeps its callbacks in the sweep's state, so a resumed session gets the
    same object back; the file says what this session was asked). It sends the
    driver the signal Ray Tune handles as Ctrl+C (SIGUSR1): Tune saves the sweep's
    state with the unfinished trials still unfinished, exactly as after an
    interruption, so ``--resume`` continues them.
    """
    from ray import tune

    class StopAfter(tune.Callback):
        def setup(self, *args: Any, **info: Any) -> None:
            path = sweep_dir / STOP_AFTER_FILE
            self.count = int(path.read_text()) if path.is_file() else 0
            self.ended = 0

        def _ended(self) -> None:
            self.ended += 1
            if self.ended == self.count:
                (sweep_dir / STOPPED_FILE).touch()  # the driver's exit code: stopped as asked, not interrupted
                os.kill(os.getpid(), signal.SIGUSR1)

        def on_trial_complete(self, iteration: int, trials: list[TuneTrial], trial: TuneTrial, **info: Any) -> None:
            self._ended()

        def on_trial_error(self, iteration: int, trials: list[TuneTrial], trial: TuneTrial, **info: Any) -> None:
            self._ended()

    return StopAfter()


def trial_table(sweep: Sweep, sweep_dir: Path, statuses: dict[str, str]) -> list[dict[str, Any]]:
    """One row per trial: status, final percent of optimal and regret, or the error."""
    rows = []
    for trial in sweep.trials:
        results_path = sweep_dir / "runs" / trial.name / "results.json"
        error_path = sweep_dir / "logs" / f"{trial.name}.error"
        row: dict[str, Any] = {"trial": trial.name, "label": trial.label, "seed": trial.seed}
        if results_path.is_file():  # the run folders are the record: a finished run has its results
            results = json.loads(results_path.read_text())
            row.update(
                status="FINISHED",
                percent_of_optimal=results.get("percent_of_optimal"),
                regret_mean=results.get("regret_mean"),
                mean_score=results.get("mean"),
                timesteps=results.get("timesteps"),
                train_seconds=results.get("train_seconds"),
            )
        elif error_path.is_file():  # written by the trial as it failed
            row.update(status="FAILED", error=error_path.read_text().strip())
        elif statuses.get(trial.name) == "ERROR":
            row.update(status="FAILED", error=f"see the Ray Tune log in {sweep_dir / TUNE_DIR}")
        else:
            row["status"] = "PENDING"
        rows.append(row)
    return rows


TRIAL_COLUMNS = (
    "trial",
    "label",
    "seed",
    "status",
    "percent_of_optimal",
    "regret_mean",
    "mean_score",
    "timesteps",
    "train_seconds",
    "error",
)
SUMMARY_COLUMNS = (
    "rules",
    "label",
    "seeds",
    "percent_of_optimal_mean",
    "percent_of_optimal_mean_ci95",
    "percent_of_optimal_iqm",
    "percent_of_optimal_iqm_ci95",
    "regret_mean",
    "regret_mean_ci95",
    "timesteps",
    "train_minutes",
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return json.dumps([round(v, 3) if isinstance(v, float) else v for v in value])
    return str(value)


def write_csv(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    """The table ``rows`` (``columns`` of each) written whole to ``path``."""
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    write_whole(path, text.getvalue())


def summarize(sweep: Sweep, sweep_dir: Path, rows: list[dict[str, Any]], reps: int = 2000) -> list[dict[str, Any]]:
    """Aggregate the finished trials by label with :mod:`agents.evaluation.results` (table, plot) into ``SWEEP/results``;
    the rows best IQM percent of optimal first."""
    import numpy as np

    from agents.evaluation import results as aggregator

    finished = [
        sweep_dir / "runs" / r["trial"]
        for r in rows
        if r["status"] == "FINISHED" and r.get("percent_of_optimal") is not None
    ]
    if not finished:
        return []
    out = sweep_dir / "results"
    if out.is_dir():
        shutil.rmtree(out)  # derived from the run folders alone: rebuilt whole
    aggregator.collect(finished, out)
    runs = aggregator.load_runs(out)
    np.random.seed(0)  # rliable's bootstrap: the same trials, the same intervals
    summary = aggregator.aggregate(runs, reps=reps)
    aggregator.write(summary, out)
    try:
        aggregator.plot(summary, out / "learning_curves.png")
    except ModuleNotFoundError as error:
        print(f"no plot ({error.name} is not installed)")
    for row in summary:
        row["label"] = row["group"]
    summary.sort(key=lambda row: -float(row.get("percent_of_optimal_iqm") or -math.inf))  # a ranking: best first
    write_csv(sweep_dir / "summary.csv", summary, SUMMARY_COLUMNS)
    return summary


def unranked(rows: list[dict[str, Any]]) -> list[str]:
    """The finished trials the summary leaves out: no percent of optimal (``solver=off``, a ruleset too large to
    solve, or ``bench_games=0``)."""
    return [r["trial"] for r in rows if r["status"] == "FINISHED" and r.get("percent_of_optimal") is None]


def print_tables(rows: list[dict[str, Any]], summary: list[dict[str, Any]]) -> None:
    width = max([len(r["trial"]) for r in rows] + [5])
    print(f"\n{'trial':<{width}}  status    % optimal   regret  error")
    for r in rows:
        percent = "" if r.get("percent_of_optimal") is None else f"{r['percent_of_optimal']:9.2f}"
        regret = "" if r.get("regret_mean") is None else f"{r['regret_mean']:8.2f}"
        print(f"{r['trial']:<{width}}  {r['status']:<8}  {percent:>9}  {regret:>7}  {r.get('error', '')}")
    left_out = unranked(rows)
    if left_out:
        print(
            f"\nnot in the summary (finished without a percent of optimal: solver=off, no exact solve, or "
            f"bench_games=0; their mean scores are in trials.csv): {', '.join(left_out)}"
        )
    if summary:
        width = max([len(s["label"]) for s in summary] + [len("configuration")])
        print(
            f"\n{'configuration':<{width}}  seeds  % of optimal: mean [95% CI]   IQM [95% CI]           "
            "regret: mean [95% CI]"
        )

        def bracket(interval: list[float] | None) -> str:  # (none below MIN_SEEDS_FOR_INTERVAL seeds)
            return "[  too few seeds ]" if interval is None else f"[{interval[0]:6.2f}, {interval[1]:6.2f}]"

        for s in summary:
            regret = "" if s.get("regret_mean") is None else f"{s['regret_mean']:.2f}"
            if s.get("regret_mean_ci95"):
                regret += f" [{s['regret_mean_ci95'][0]:.2f}, {s['regret_mean_ci95'][1]:.2f}]"
            print(
                f"{s['label']:<{width}}  {len(s['seeds']):>5}  {s['percent_of_optimal_mean']:6.2f} "
                f"{bracket(s['percent_of_optimal_mean_ci95'])}   {s['percent_of_optimal_iqm']:6.2f} "
                f"{bracket(s['percent_of_optimal_iqm_ci95'])}   {regret}"
            )


def parse_args(argv: list[str], default_runs: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="train.py --sweep", description="Run a sweep of training runs on Ray Tune.")
    parser.add_argument("--sweep", type=Path, required=True, metavar="FILE", help="the sweep file (YAML)")
    parser.add_argument(
        "--sweep-dir",
        type=Path,
        help=f"the sweep folder (default {default_runs}/sweeps/NAME, NAME from the sweep file)",
    )
    parser.add_argument("--resume", action="store_true", help="continue the interrupted sweep in the sweep folder")
    parser.add_argument(
        "--address",
        help="a running Ray cluster (auto, or HOST:PORT; default RAY_ADDRESS, else Ray embedded on this machine)",
    )
    parser.add_argument("--num-cpus", type=int, help="embedded Ray only: CPUs it may use (default all)")
    parser.add_argument(
        "--stop-after",
        type=int,
        metavar="N",
        help="stop (resumably) once N trials have ended; the rest wait for --resume",
    )
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples of the intervals (default 2000)")
    return parser.parse_args(argv)


def main(
    argv: list[str],
    *,
    fields: set[str],
    train_script: Path,
    default_config: Callable[[list[str]], Path | None],
    fail: Callable[[str], NoReturn],
    default_runs: str = "runs",
) -> list[dict[str, Any]]:
    """``train.py --sweep``: check the sweep file and folder, run the trials on Ray Tune, print the tables.

    Returns the trial table (one row per trial).
    """
    args = parse_args(argv, default_runs)
    try:
        sweep = load_sweep(args.sweep, fields, default_config)
    except SweepError as error:
        fail(str(error))
    for name, value in (("--num-cpus", args.num_cpus), ("--stop-after", args.stop_after), ("--reps", args.reps)):
        if value is not None and value < 1:
            fail(f"{name} must be a positive integer, got {value}")
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if address and args.num_cpus:
        fail("--num-cpus sizes the embedded Ray; a cluster (--address or RAY_ADDRESS) has its own CPUs")
    sweep_dir = (args.sweep_dir or Path(default_runs) / "sweeps" / sweep.name).resolve()
    state = sweep_dir / TUNE_DIR
    spec_path = sweep_dir / SPEC_FILE
    if sweep_dir.exists() and not sweep_dir.is_dir():
        fail(f"--sweep-dir {sweep_dir}: exists and is not a folder")
    if args.resume:
        if not spec_path.is_file() or not state.is_dir():
            fail(f"--resume: {sweep_dir} holds no sweep to continue (no {SPEC_FILE} or {TUNE_DIR}/)")
        saved = json.loads(spec_path.read_text())
        recorded = saved.pop("config_files", {})  # (a sweep folder of an earlier version has none)
        if saved != sweep.as_dict():
            fail(
                f"--resume: {args.sweep} is not the sweep in {sweep_dir} (its trials or resources differ); "
                "resume with the same sweep file, or start a new sweep folder"
            )
        changed = changed_configs(recorded)
        if changed:
            fail(
                f"--resume: config file {changed[0]} changed since the sweep in {sweep_dir} started (its trials "
                "that ran trained it as it was); restore it, or start a new sweep folder"
            )
    elif sweep_dir.is_dir() and any(sweep_dir.iterdir()):
        fail(
            f"--sweep-dir {sweep_dir} is not empty (an earlier sweep?); continue it with --resume or choose a "
            "new folder (a sweep folder is never overwritten)"
        )

    try:
        import ray
        from ray import tune
    except ModuleNotFoundError as error:
        fail(f"--sweep runs on Ray Tune: {error.name} is not installed (pip install -e '.[ray]')")
    init = (
        dict(address=address)
        if address
        else dict(address="local", num_cpus=args.num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1")
    )
    from agents.training.ray_reaper import unreachable

    why = unreachable(address) if address else None
    if why:
        fail(f"cannot start or reach the Ray cluster at {address}: {why}")
    try:
        # ray.init's annotation says int; it takes a level name too (logging's own convention)
        ray.init(**init, log_to_driver=False, logging_level="WARNING")  # type: ignore[arg-type]
        if not address:  # the local node's processes end with this driver, even if it is killed
            from agents.training.ray_reaper import reap_on_exit

            reap_on_exit()
    except (ConnectionError, ValueError, RuntimeError) as error:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        text = " ".join(str(error).split())[:300]
        fail(f"cannot start or reach {where}: {type(error).__name__}: {text}")
    cluster = ray.cluster_resources()  # a trial asking for more than the cluster has would wait forever
    for key, need in (("CPU", sweep.cpu), ("GPU", sweep.gpu)):
        if need > cluster.get(key, 0):
            ray.shutdown()
            fail(
                f"a trial asks for {need:g} {key}(s) (resources: in {args.sweep}), but the Ray cluster has "
                f"{cluster.get(key, 0):g}: it would never start (fewer resources per trial, or --num-cpus)"
            )
    # SIGTERM (timeout, kill, a batch scheduler) stops the sweep as Ctrl-C does: Tune saves its state cleanly
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(os.getpid(), signal.SIGINT))
    started = time.perf_counter()
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)  # only now: a sweep that cannot start leaves nothing
        if not args.resume:
            spec = {**sweep.as_dict(), "config_files": config_fingerprints(sweep.trials)}
            spec_path.write_text(json.dumps(spec, indent=2) + "\n")
            shutil.copy2(args.sweep, sweep_dir / "sweep.yaml")
        trainable = tune.with_resources(
            tune.with_parameters(run_trial, sweep_dir=str(sweep_dir), train_script=str(train_script.resolve())),
            {"cpu": sweep.cpu, "gpu": sweep.gpu},
        )
        run_config = tune.RunConfig(
            name=TUNE_DIR,
            storage_path=str(sweep_dir),
            failure_config=tune.FailureConfig(max_failures=0),
            callbacks=[_stop_after(sweep_dir)],
            verbose=1,
        )
        stop_file = sweep_dir / STOP_AFTER_FILE
        (sweep_dir / STOPPED_FILE).unlink(missing_ok=True)
        if args.stop_after:
            stop_file.write_text(f"{args.stop_after}\n")
        else:
            stop_file.unlink(missing_ok=True)
        if args.resume:
            tuner = tune.Tuner.restore(
                str(state), trainable, resume_unfinished=True, resume_errored=False, restart_errored=False
            )
            print(f"resuming the sweep in {sweep_dir}")
        else:
            tuner = tune.Tuner(
                trainable,
                param_space={"trial": tune.grid_search([t.as_dict() for t in sweep.trials])},
                tune_config=tune.TuneConfig(
                    max_concurrent_trials=sweep.max_concurrent or None,
                    trial_name_creator=lambda t: t.config["trial"]["name"],
                    trial_dirname_creator=lambda t: t.config["trial"]["name"],
                ),
                run_config=run_config,
            )
        grid = tuner.fit()
        statuses = {}
        for result in grid:  # type: ignore[attr-defined]  # ResultGrid iterates through __len__/__getitem__
            trial_name = result.config["trial"]["name"] if result.config else None
            if trial_name is not None:
                statuses[trial_name] = (
                    "ERROR"
                    if result.error is not None
                    else ("FINISHED" if (result.metrics or {}).get("trial_finished") else "PENDING")
                )
    finally:
        ray.shutdown()
    seconds = time.perf_counter() - started
    rows = trial_table(sweep, sweep_dir, statuses)
    write_csv(sweep_dir / "trials.csv", rows, TRIAL_COLUMNS)
    summary = summarize(sweep, sweep_dir, rows, reps=args.reps)
    print_tables(rows, summary)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("FINISHED", "FAILED", "PENDING")}
    print(
        f"\nsweep {sweep.name}: {counts['FINISHED']} finished, {counts['FAILED']} failed, {counts['PENDING']} "
        f"pending, {seconds:.0f} s -> {sweep_dir / 'trials.csv'}"
        + (f", {sweep_dir / 'summary.csv'}, {sweep_dir / 'results'}" if summary else "")
    )
    if counts["PENDING"]:
        again = f"python train.py --sweep {args.sweep} --sweep-dir {sweep_dir} --resume"
        again += f" --address {args.address}" if args.address else ""
        again += f" --num-cpus {args.num_cpus}" if args.num_cpus else ""
        print(f"continue it: {again}")
    with (sweep_dir / "sweep_times.log").open("a") as handle:
        handle.write(json.dumps({"seconds": round(seconds, 1), **counts}) + "\n")
    if counts["PENDING"] and not (sweep_dir / STOPPED_FILE).is_file():  # Ctrl-C or SIGTERM, not --stop-after
        print(f"train.py --sweep: interrupted with {counts['PENDING']} trial(s) pending", file=sys.stderr)
        raise SystemExit(130)  # as every command of the project that Ctrl-C or SIGTERM interrupts
    if counts["FAILED"] and not counts["FINISHED"] and not counts["PENDING"]:
        print(
            f"train.py --sweep: error: every trial of sweep {sweep.name} failed ({counts['FAILED']}); "
            f"their errors are in {sweep_dir / 'trials.csv'}",
            file=sys.stderr,
        )
        raise SystemExit(1)
    return rows
