"""Run the benchmark's baselines (docs/benchmark.md) and record one row per run in results/benchmark/.

Each suite is a config of ``configs/benchmark/`` trained on some rulesets with some seeds at its
budget. A run lives in ``runs-benchmark/<suite>/<ruleset>/s<seed>/`` (git-ignored). The driver is
resumable: a run with a row in ``results/benchmark/runs.json`` is skipped; a run with a final policy
is only evaluated; a run with checkpoints continues with ``train.py --resume``; anything else starts
afresh. The final metric always comes from ``dice-poker evaluate`` on the fixed evaluation set.

Run folders are not committed. ``--park`` copies each unfinished run's latest checkpoint (with its
config, learning curve, best policy and wall time) to ``results/benchmark/parked/``, which is committed: a run
missing from ``runs-benchmark/`` but parked there is resumed from it, and its parked copy goes once its
row is recorded. Resuming is deterministic on one CPU model, so a run trained over several sessions
on one kind of machine records what one uninterrupted run would; float arithmetic differs between CPU
models, so a run continued on another kind names every machine in its ``hardware`` field.

    nohup python benchmarks/run_baselines.py raw_ppo_1m raw_a2c_1m raw_ppo_10m --jobs 2 &
    python benchmarks/run_baselines.py --list             # the suites and how many runs each has done
    python benchmarks/run_baselines.py --park             # before stopping: keep unfinished runs' progress

On a borrowed machine with more cores, ``--train-only`` trains without evaluating (the evaluation needs the
solver's tables); copy back its finished run folders and its ``--park``-ed ones, and the driver here evaluates
the finished runs (their rows name the machine that trained them) and resumes the others.

Training runs get one torch thread each (``torch_threads: 1`` and ``OMP_NUM_THREADS=1``) and run
at niceness 10 (``nice``; not added twice when the driver itself runs under ``nice``). Training seeds are 1000 + k (k = 0..9): never used while the recipes were developed
(seeds 0-2), and far below the evaluation set's env seeds (2**40 + i).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: the code the runs use (train.py, configs, agents): this checkout, or a snapshot of it
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's agents, as train.py (run from ROOT) imports them, not an install
    sys.path.insert(0, str(ROOT))

from agents.training.run import checkpoints, latest_checkpoint  # noqa: E402  (what train.py --resume continues from)
from benchmarks.leaderboard import is_probe  # noqa: E402  (a probe is not a baseline: one rule, the leaderboard's)
from dice_poker_env.cli import machine_description  # noqa: E402
from dice_poker_env.files import write_whole  # noqa: E402
from dice_poker_env.rules import RULESET_NAMES  # noqa: E402

#: where run folders and result rows go: $BENCH_ROOT (a checkout running a snapshot's code) or ROOT
OUT = Path(os.environ.get("BENCH_ROOT") or ROOT).resolve()
RUNS = OUT / "runs-benchmark"
RESULTS = OUT / "results" / "benchmark"
#: unfinished runs' latest state, committed (``--park``) so that a fresh checkout resumes them
PARKED = RESULTS / "parked"
#: what a parked run keeps besides its latest checkpoint
PARK_FILES = ("config.yaml", "evaluations.csv", "best_model.npz", "best_model.zip")
ALL_RULESETS = ("yahtzee", "yacht", "yatzy", "dice_poker", "school_poker")
#: training seeds of the benchmark runs (never used in recipe development)
SEEDS = tuple(range(1000, 1010))
#: the seeds recipe development uses (the probes)
DEV_SEEDS = (0, 1)

FIELDS = (
    "suite",
    "track",
    "algorithm",
    "ruleset",
    "budget",
    "steps",
    "seed",
    "luck_free_percent",
    "luck_free_percent_ci95",
    "regret_mean",
    "mean",
    "mean_ci95",
    "median",
    "upper_bonus_rate",
    "five_of_a_kind_rate",
    "regret_keep_mean",
    "regret_box_mean",
    "train_seconds",
    "wall_seconds",
    "hardware",
    "eval_set",
    "env_id",
    "observation_layout_version",
    "rules_fingerprint",
    "library_version",
    "git_commit",
    "config",
    "command",
    "finished_utc",
)


@dataclass(frozen=True)
class Suite:
    """A config trained on ``rulesets`` x ``seeds`` at ``budget`` env steps."""

    config: str
    budget: int
    rulesets: tuple[str, ...] = ALL_RULESETS
    seeds: tuple[int, ...] = SEEDS
    #: the policy file train.py writes (batched trainers: .npz; SB3: .zip)
    final: str = "final_model.npz"
    #: extra ``key=value`` overrides per ruleset
    overrides: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: a Minari dataset the runs read, and the ``dice-poker dataset`` arguments that write it when it is missing
    dataset: tuple[str, tuple[str, ...]] | None = None


#: keep_points_bonus: par needs an upper bonus paid at a face-sum total (not yacht's, none; not school_poker's)
NO_PAR_BONUS = (("yacht", ("keep_points_bonus=false",)), ("school_poker", ("keep_points_bonus=false",)))

SUITES: dict[str, Suite] = {
    "raw_ppo_1m": Suite("raw_batched_ppo_1m.yaml", 1_000_000),
    "raw_a2c_1m": Suite("raw_batched_a2c_1m.yaml", 1_000_000),
    "raw_ppo_10m": Suite(
        "raw_batched_ppo_10m.yaml", 10_000_000, ("yahtzee", "yacht", "yatzy", "dice_poker", "school_poker")
    ),
    "raw_a2c_10m": Suite("raw_batched_a2c_10m.yaml", 10_000_000),
    # masked PQN: the one-file algorithm (agents/training/pqn.py)
    "raw_pqn_1m": Suite("raw_batched_pqn_1m.yaml", 1_000_000),
    "raw_pqn_10m": Suite("raw_batched_pqn_10m.yaml", 10_000_000),
    "raw_ppo_100m_yahtzee": Suite("raw_batched_ppo_100m.yaml", 100_000_000, ("yahtzee",), SEEDS[:5]),
    "raw_ppo_100m": Suite(
        "raw_batched_ppo_100m.yaml", 100_000_000, ("yacht", "yatzy", "dice_poker", "school_poker"), SEEDS[:3]
    ),
    # the raw track's other 100M Yahtzee baseline: masked PQN, ahead of PPO on the development seeds (probe below)
    "raw_pqn_100m_yahtzee": Suite("raw_batched_pqn_100m.yaml", 100_000_000, ("yahtzee",), SEEDS[:5]),
    # and dueling masked PQN, 97.23% on development seed 0 at 100M (probe_raw_pqn_dueling_100m below)
    "raw_pqn_dueling_100m_yahtzee": Suite("raw_batched_pqn_dueling_100m.yaml", 100_000_000, ("yahtzee",), SEEDS[:5]),
    "raw_maskable_ppo_1m": Suite("raw_maskable_ppo_1m.yaml", 1_000_000, final="final_model.zip"),
    "rules_ppo_10m": Suite("rules_batched_ppo_10m.yaml", 10_000_000, overrides=NO_PAR_BONUS),
    "rules_ppo_100m": Suite(
        "rules_batched_ppo_100m.yaml", 100_000_000, ("yahtzee",), SEEDS[:5], overrides=NO_PAR_BONUS
    ),
    **{
        f"ablation_{step}_10m": Suite(f"ablation_{step}_10m.yaml", 10_000_000, ("yahtzee", "yacht"), SEEDS[:5])
        for step in ("1_features", "2_box_points", "3_keep_points")
    },
    # yacht has no upper bonus: its ablation ends at step 3
    "ablation_4_keep_points_bonus_10m": Suite(
        "ablation_4_keep_points_bonus_10m.yaml", 10_000_000, ("yahtzee",), SEEDS[:5]
    ),
    "bc_yahtzee": Suite(
        "solver_bc_yahtzee.yaml",
        0,
        ("yahtzee",),
        SEEDS[:5],
        dataset=("dice_poker/yahtzee/optimal-v0", ("yahtzee", "--agent", "optimal", "--episodes", "100000")),
    ),
    # probes toward the raw track's Yahtzee target (97% at 100M): the raw PPO recipe with one change, at 10M
    # on the development seeds 0 and 1 (recipe development never uses the baselines' seeds 1000-1009)
    **{
        f"probe_raw_ppo_{name}_10m": Suite(
            "raw_batched_ppo_10m.yaml", 10_000_000, ("yahtzee",), DEV_SEEDS, overrides=(("yahtzee", change),)
        )
        for name, change in (
            ("lambda095", ("gae_lambda=0.95",)),
            ("wide512", ("net_arch=[512,512]",)),
            ("deep3", ("net_arch=[256,256,256]",)),
        )
    },
    # another algorithm on the same inputs: masked PQN, at 10M as fast as PPO and still rising, at 100M
    "probe_raw_pqn_100m": Suite(
        "raw_batched_pqn_10m.yaml",
        100_000_000,
        ("yahtzee",),
        DEV_SEEDS,
        overrides=(
            (
                "yahtzee",
                ("total_timesteps=99991552", "eval_freq=5000000", "eval_episodes=2000", "checkpoint_freq=2000000"),
            ),
        ),
    ),
    # its learning rate: the probe above plateaus at 91-94% from 40M to 85M steps, then gains 3 points as the
    # rate falls to zero, and its 50M checkpoint annealed over 10M more steps already reaches 95.3%: a lower rate
    **{
        f"probe_raw_pqn_{name}_100m": Suite(
            "raw_batched_pqn_100m.yaml", 100_000_000, ("yahtzee",), DEV_SEEDS, overrides=(("yahtzee", change),)
        )
        for name, change in (("lr5e-4", ("learning_rate=0.0005",)), ("lr3e-4", ("learning_rate=0.0003",)))
    },
    # a dueling Q-network (V(s) + centred A(s, a)): the actor learns only how a state's actions differ, the
    # precision Q-values need to rank actions a point apart in states worth 250; at 10M on the development seeds
    **{
        f"probe_raw_pqn_dueling_{budget}": Suite(
            f"raw_batched_pqn_{budget}.yaml",
            steps,
            ("yahtzee",),
            DEV_SEEDS,
            overrides=(("yahtzee", ("dueling=true",)),),
        )
        for budget, steps in (("10m", 10_000_000), ("100m", 100_000_000))
    },
    # the dueling recipe with one more change, at 10M on the development seeds: more updates per env step (the
    # budget counts env steps, not gradient steps), longer lambda-returns (the bonus is paid many turns after
    # the keeps that earn it), a wider actor, less exploration at epsilon's floor (the lambda-returns carry a
    # random action's cost back into the values of the states before it), Boltzmann exploration (near-ties
    # tried often, bad actions almost never; temperature 0.005 is half a point at reward_scale 0.01)
    **{
        f"probe_raw_pqn_dueling_{name}_10m": Suite(
            "raw_batched_pqn_10m.yaml",
            10_000_000,
            ("yahtzee",),
            DEV_SEEDS,
            overrides=(("yahtzee", ("dueling=true", *change)),),
        )
        for name, change in (
            ("epochs4", ("n_epochs=4",)),
            ("epochs8", ("n_epochs=8",)),
            ("lambda09", ("gae_lambda=0.9",)),
            ("wide512", ("net_arch=[512,512]",)),
            ("eps001", ("end_e=0.001",)),
            ("temp005", ("temperature=0.005", "end_e=0.001")),
            ("temp002", ("temperature=0.002", "end_e=0.001")),
        )
    },
    # the two changes that gained at 10M, together at 100M: dueling and 4 epochs (93.86% at 10M on seed 0)
    "probe_raw_pqn_dueling_epochs4_100m": Suite(
        "raw_batched_pqn_100m.yaml",
        100_000_000,
        ("yahtzee",),
        DEV_SEEDS,
        overrides=(("yahtzee", ("dueling=true", "n_epochs=4")),),
    ),
    # can the raw agent's network hold near-optimal play at all? behaviour cloning of the optimal games into it:
    # the solver track's recipe with the raw track's inputs (the flat observation alone, no PolicyInputs features)
    "probe_bc_raw_inputs": Suite(
        "solver_bc_yahtzee.yaml",
        0,
        ("yahtzee",),
        DEV_SEEDS,
        dataset=("dice_poker/yahtzee/optimal-v0", ("yahtzee", "--agent", "optimal", "--episodes", "100000")),
        overrides=(("yahtzee", ("features=false",)),),
    ),
}

_lock = threading.Lock()
#: runs go at niceness 10 whatever the driver's own (niceness is per thread: never add 10 twice)
NICE = ("nice", "-n", str(max(0, 10 - os.nice(0))))


def log(message: str) -> None:
    with _lock:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def cpu_model() -> str:
    """This machine's CPU model, vector extensions and CPUs, e.g. "Intel(R) Xeon(R) Processor (avx2, avx512f,
    avx512_bf16, amx_bf16), 2 CPUs (shared)" (:func:`dice_poker_env.cli.machine_description`)."""
    return f"{machine_description()} (shared)"


def hardware() -> str:
    """CPU model and count of this machine (the runs use one torch thread each)."""
    return f"{cpu_model()}, 1 torch thread per run"


def cpu_of(text: str) -> str:
    """The CPU model a :func:`hardware` text names first, in this format or the earlier one without the vector
    extensions ("Intel(R) Xeon(R) Processor, 2 vCPU (shared), ..."): what tells two machines apart."""
    return text.split(",")[0].split(" (")[0].strip()


def git_commit() -> str:
    """The commit of the code the runs use (a snapshot made by ``git archive`` holds it in ``COMMIT``)."""
    if (ROOT / "COMMIT").exists():
        return (ROOT / "COMMIT").read_text().strip()
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def read_rows() -> list[dict]:
    path = RESULTS / "runs.json"
    return json.loads(path.read_text()) if path.exists() else []


def write_rows(rows: list[dict]) -> None:
    """``runs.json`` and ``runs.csv``, each written whole and renamed into place."""
    import csv
    import io

    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (r["suite"], r["ruleset"], r["seed"]))
    text = json.dumps(rows, indent=1) + "\n"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    for name, content in (("runs.json", text), ("runs.csv", buffer.getvalue())):
        write_whole(RESULTS / name, content)


def add_row(row: dict) -> None:
    """Record ``row`` (replacing the run's earlier row), under a file lock: drivers of different suites may
    run at once (say, one on the 100M runs and one on the 10M runs)."""
    import fcntl

    RESULTS.mkdir(parents=True, exist_ok=True)
    with _lock, (RESULTS / ".runs.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = [
            r
            for r in read_rows()
            if (r["suite"], r["ruleset"], r["seed"]) != (row["suite"], row["ruleset"], row["seed"])
        ]
        write_rows([*rows, row])


def done_keys() -> set[tuple[str, str, int]]:
    return {(r["suite"], r["ruleset"], int(r["seed"])) for r in read_rows()}


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def train_command(suite: Suite, ruleset: str, seed: int, run_dir: Path) -> list[str]:
    """The command that trains one run of ``suite`` from scratch into ``run_dir`` (at niceness 10)."""
    config = ROOT / "configs" / "benchmark" / suite.config
    return [
        *NICE,
        sys.executable,
        "train.py",
        "--config",
        str(config.relative_to(ROOT)),
        "--run-dir",
        str(run_dir),
        f"rules={ruleset}",
        f"seed={seed}",
        *dict(suite.overrides).get(ruleset, ()),
    ]


def planned_steps(suite: Suite, ruleset: str) -> int | None:
    """The env steps a run of ``suite`` on ``ruleset`` will train: a batched trainer trains whole rollouts
    (``n_envs x n_steps``), the last one past ``total_timesteps`` if it does not divide it; ``None`` for the
    other trainers (SB3, behaviour cloning), which are not checked here."""
    import yaml

    from agents.training.config import Batched, make_config

    base = yaml.safe_load((ROOT / "configs" / "benchmark" / suite.config).read_text())
    config = make_config(base, [f"rules={ruleset}", *dict(suite.overrides).get(ruleset, ())])
    if not isinstance(config, Batched):
        return None
    rollout = int(config.n_envs) * int(config.n_steps)
    return -(-int(config.total_timesteps) // rollout) * rollout


def budget_problem(name: str, suite: Suite) -> str | None:
    """Why ``suite``'s runs would train outside 99-100% of its budget (the rows' test refuses them), or ``None``."""
    for ruleset in suite.rulesets:
        steps = planned_steps(suite, ruleset)
        if steps is not None and not 0.99 * suite.budget <= steps <= suite.budget:
            return (
                f"suite {name} would train {steps:,} steps on {ruleset} (whole rollouts of n_envs x n_steps), "
                f"not 99-100% of its budget of {suite.budget:,}: set total_timesteps, n_envs or n_steps in "
                f"configs/benchmark/{suite.config} so that whole rollouts come within it"
            )
    return None


def evaluate_command(ruleset: str, final: Path) -> list[str]:
    """The command that plays the evaluation set with the policy file ``final`` and prints its JSON."""
    return [sys.executable, "-m", "dice_poker_env", "evaluate", ruleset, "--agent", f"model:{final}", "--json"]


def run_path(suite: str, ruleset: str, seed: int, root: Path | None = None) -> Path:
    """A run's folder, ``<root>/<suite>/<ruleset>/s<seed>/`` (``root``: :data:`RUNS`, or :data:`PARKED` for
    its parked copy); its log and wall time lie beside it (``s<seed>.log``, ``s<seed>.wall.json``, the
    ``.with_suffix`` of the folder). benchmarks/leaderboard.py reads the same layout."""
    return (RUNS if root is None else root) / suite / ruleset / f"s{seed}"


def machines_so_far(wall_file: Path) -> list[str]:
    """The :func:`hardware` of each machine that trained the run so far, in order (a parked run may continue
    on another machine: float arithmetic differs between CPU models, so the row names every one)."""
    return list(json.loads(wall_file.read_text()).get("hardware", [])) if wall_file.exists() else []


def wall_so_far(wall_file: Path, until: float | None) -> float:
    """Seconds of training wall time behind the run's latest checkpoint.

    ``wall_file`` holds the closed segments' total and, while a segment runs, when it began
    (``open_since``, epoch seconds). A segment whose driver was killed counts up to ``until`` (the latest
    checkpoint's time; what came after it is trained again), not at all when ``until`` is ``None``."""
    if not wall_file.exists():
        return 0.0
    saved = json.loads(wall_file.read_text())
    since = saved.get("open_since")
    return float(saved["seconds"]) + (max(0.0, until - since) if since is not None and until is not None else 0.0)


def unpark(name: str, ruleset: str, seed: int) -> bool:
    """Put a parked run's state back into its run folder (when the folder is not there). ``True`` if it did."""
    run_dir, parked = run_path(name, ruleset, seed), run_path(name, ruleset, seed, PARKED)
    if run_dir.exists() or not parked.is_dir():
        return False
    shutil.copytree(parked, run_dir, ignore=shutil.ignore_patterns("wall.json"))
    shutil.copyfile(parked / "wall.json", run_dir.with_suffix(".wall.json"))
    return True


def park() -> int:
    """Copy each unfinished run's resumable state to ``results/benchmark/parked/<suite>/<ruleset>/s<seed>/``
    (its latest checkpoint, :data:`PARK_FILES` and the wall time behind the checkpoint), replacing an earlier
    copy; remove the copies of runs that have a row. A run trained but not yet evaluated (``--train-only``)
    is parked with its final policy and ``results.json`` instead of a checkpoint: the driver that takes it
    back evaluates it. Safe while runs train (checkpoints are written whole). Returns the number of runs
    parked."""
    done = done_keys()
    for folder in sorted(PARKED.glob("*/*/s*")):
        if (folder.parts[-3], folder.parts[-2], int(folder.name[1:])) in done:
            shutil.rmtree(folder)
    parked = 0
    for run_dir in sorted(RUNS.glob("*/*/s*/")):
        name, ruleset, seed = run_dir.parts[-3], run_dir.parts[-2], int(run_dir.name[1:])
        if (name, ruleset, seed) in done or name not in SUITES:
            continue
        final = run_dir / SUITES[name].final
        checkpoint = None if final.exists() else latest_checkpoint(run_dir)
        if checkpoint is None and not final.exists():
            continue
        wall_file = run_dir.with_suffix(".wall.json")
        target = run_path(name, ruleset, seed, PARKED)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        if checkpoint is None:  # trained, not evaluated: the policy and what the row reads
            wall = wall_so_far(wall_file, None)
            files, where = (final.name, "results.json", "config.yaml", "evaluations.csv"), "trained"
        else:
            wall = wall_so_far(wall_file, checkpoint.stat().st_mtime)
            (target / "checkpoints").mkdir()
            shutil.copy2(checkpoint, target / "checkpoints" / checkpoint.name)
            files, where = PARK_FILES, f"at {checkpoint.name}"
        for file in files:
            if (run_dir / file).exists():
                shutil.copy2(run_dir / file, target / file)
        machines = machines_so_far(wall_file)
        (target / "wall.json").write_text(json.dumps({"seconds": round(wall, 1), "hardware": machines}))
        log(f"parked {name} {ruleset} s{seed} {where} ({wall / 3600:.2f} h of wall time)")
        parked += 1
    return parked


def run_one(name: str, suite: Suite, ruleset: str, seed: int, evaluate: bool = True) -> bool:
    """Train (or resume) and evaluate one run; record its row. ``False`` when something failed.

    Without ``evaluate`` (``--train-only``) the trained run folder is left for a later call to evaluate and
    record: training on a borrowed machine, the evaluation and the row here."""
    run_dir = run_path(name, ruleset, seed)
    logfile = run_dir.with_suffix(".log")
    logfile.parent.mkdir(parents=True, exist_ok=True)
    fresh = train_command(suite, ruleset, seed, run_dir)
    final = run_dir / suite.final
    wall_file = run_dir.with_suffix(".wall.json")
    if not final.exists() and unpark(name, ruleset, seed):
        log(f"{name} {ruleset} s{seed}: taken from {PARKED.relative_to(OUT)}")
    checkpoint = latest_checkpoint(run_dir)
    wall = wall_so_far(wall_file, checkpoint.stat().st_mtime if checkpoint else None)
    machines = machines_so_far(wall_file)
    if not final.exists():
        if checkpoint is not None:
            command = [*fresh[: len(NICE) + 2], "--run-dir", str(run_dir), "--resume"]
            log(f"{name} {ruleset} s{seed}: resuming from {checkpoint.name}")
        else:
            if run_dir.exists():  # started but killed before its first checkpoint
                shutil.rmtree(run_dir)
            command, wall, machines = fresh, 0.0, []
            log(f"{name} {ruleset} s{seed}: training")
        if machines and cpu_of(machines[-1]) == cpu_of(hardware()):
            machines[-1] = hardware()  # the same CPU model (its text may be of the earlier format)
        else:
            machines.append(hardware())
        start = time.monotonic()
        wall_file.write_text(json.dumps({"seconds": wall, "open_since": time.time(), "hardware": machines}))
        with logfile.open("a") as out:
            code = subprocess.run(command, cwd=ROOT, env=child_env(), stdout=out, stderr=subprocess.STDOUT).returncode
        wall += time.monotonic() - start
        wall_file.write_text(json.dumps({"seconds": wall, "hardware": machines}))
        if code != 0 or not final.exists():
            log(f"{name} {ruleset} s{seed}: train.py failed (exit {code}); see {logfile}")
            return False
    if not evaluate:
        log(f"{name} {ruleset} s{seed}: trained; evaluation left for later")
        return True
    command = evaluate_command(ruleset, final)
    result = subprocess.run([*NICE, *command], cwd=ROOT, env=child_env(), capture_output=True, text=True)
    if result.returncode != 0:
        log(f"{name} {ruleset} s{seed}: evaluation failed: {result.stderr.strip()[-300:]}")
        return False
    metrics = json.loads(result.stdout)
    trained = json.loads((run_dir / "results.json").read_text()) if (run_dir / "results.json").exists() else {}
    algorithm = trained.get("algorithm", "")
    row = {
        "suite": name,
        "track": metrics["track"],
        "algorithm": algorithm,
        "ruleset": ruleset,
        "budget": suite.budget,
        "steps": trained.get("timesteps"),
        "seed": seed,
        **{key: metrics[key] for key in FIELDS if key in metrics},
        "train_seconds": trained.get("train_seconds"),
        "wall_seconds": round(wall, 1),
        "hardware": " + ".join(machines or [hardware()]),  # every machine that trained it, in order
        "git_commit": git_commit(),
        "config": f"configs/benchmark/{suite.config}",
        "command": " ".join(["python", *fresh[len(NICE) + 1 :]]).replace(str(OUT) + "/", "")
        + " && "
        + " ".join(["python", *command[1:]]).replace(str(OUT) + "/", ""),
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if suite.budget and row["steps"] is not None and row["steps"] > suite.budget:
        log(f"{name} {ruleset} s{seed}: trained {row['steps']} steps, over the budget {suite.budget}")
    add_row(row)
    shutil.rmtree(run_path(name, ruleset, seed, PARKED), ignore_errors=True)
    log(f"{name} {ruleset} s{seed}: {row['luck_free_percent']:.2f}% luck-free, mean {row['mean']:.1f}")
    return True


#: fields added to the rows after the first runs were recorded (``--backfill`` fills them in)
LATER_FIELDS = ("five_of_a_kind_rate", "regret_keep_mean", "regret_box_mean")


def backfill(retrain: bool = False) -> int:
    """Fill in :data:`LATER_FIELDS` of earlier rows by evaluating their final policies again. The evaluation
    is deterministic, so the replayed luck-free percent must equal the recorded one; a row where it does
    not is reported and left as it was. A row whose policy file is gone is trained again from scratch with
    ``retrain`` (training is deterministic on one CPU model: the same check then audits the whole run), else left.
    Returns 1 when some row could not be filled in, else 0."""
    todo = [r for r in read_rows() if any(r.get(key) is None for key in LATER_FIELDS)]
    log(f"backfill: {len(todo)} rows to fill in")
    failed = 0
    for row in todo:
        name = f"{row['suite']} {row['ruleset']} s{row['seed']}"
        suite = SUITES[row["suite"]]
        run_dir = run_path(row["suite"], row["ruleset"], row["seed"])
        final = run_dir / suite.final
        if not final.exists() and retrain:
            shutil.rmtree(run_dir, ignore_errors=True)
            log(f"{name}: its policy file is gone; training it again")
            logfile = run_dir.with_suffix(".log")
            logfile.parent.mkdir(parents=True, exist_ok=True)
            with logfile.open("a") as out:
                command = train_command(suite, row["ruleset"], int(row["seed"]), run_dir)
                subprocess.run(command, cwd=ROOT, env=child_env(), stdout=out, stderr=subprocess.STDOUT)
        if not final.exists():
            log(f"{name}: no {final.relative_to(OUT)} here; left as it was")
            failed += 1
            continue
        command = [*NICE, *evaluate_command(row["ruleset"], final)]
        result = subprocess.run(command, cwd=ROOT, env=child_env(), capture_output=True, text=True)
        metrics = json.loads(result.stdout) if result.returncode == 0 else {}
        if metrics.get("luck_free_percent") != row["luck_free_percent"]:
            elsewhere = row.get("hardware") is not None and cpu_of(row["hardware"]) != cpu_of(hardware())
            log(
                f"{name}: the evaluation gives {metrics.get('luck_free_percent')}, not the recorded "
                f"{row['luck_free_percent']}; left as it was"
                + (
                    f" (recorded on {row['hardware']}; float arithmetic differs between CPU models)"
                    if elsewhere
                    else ""
                )
            )
            failed += 1
            continue
        add_row({**row, **{key: metrics[key] for key in LATER_FIELDS}})
        log(f"{name}: filled in")
    return 1 if failed else 0


def ensure_dataset(name: str, suite: Suite) -> bool:
    """Write the suite's dataset first when it is not in Minari's local datasets; ``False`` when it cannot be."""
    if suite.dataset is None:
        return True
    dataset_id, arguments = suite.dataset
    try:
        import minari
    except ImportError:
        log(f"{name}: needs the dataset {dataset_id} and minari to read it (pip install -e '.[datasets]')")
        return False
    if dataset_id in minari.list_local_datasets():
        problem = dataset_problem(dataset_id, arguments)
        if problem is not None:
            log(f"{name}: {dataset_id} is not the dataset the suite trains on ({problem}); move it aside to rewrite it")
            return False
        return True
    command = [sys.executable, "-m", "dice_poker_env", "dataset", *arguments]
    log(f"{name}: the dataset {dataset_id} is missing; writing it first: {' '.join(['python', *command[1:]])}")
    if subprocess.run([*NICE, *command], cwd=ROOT, env=child_env()).returncode != 0:
        log(f"{name}: writing the dataset {dataset_id} failed")
        return False
    return True


def dataset_problem(dataset_id: str, arguments: tuple[str, ...]) -> str | None:
    """How the local dataset ``dataset_id`` differs from what ``dice-poker dataset ARGUMENTS`` writes (ruleset and
    its options, agent, games, seed, values), or ``None``: a dataset written by hand under the suite's id
    must not become a baseline's training data."""

    from agents.commands.dataset import add_arguments
    from agents.evaluation.datasets import DatasetError, dataset_info, open_dataset
    from dice_poker_env.cli.rules_arguments import load_rules_from

    parser = argparse.ArgumentParser()
    add_arguments(parser)  # read as the command reads them
    args = parser.parse_args(list(arguments))
    wanted = {
        "ruleset": load_rules_from(args).fingerprint,
        "agent": args.agent,
        "seed": args.seed,
        "episodes": args.episodes,
        "with_values": args.with_values,
        "obs_mode": args.obs_mode,
    }
    try:
        dataset = open_dataset(dataset_id)
        info = dataset_info(dataset)
    except DatasetError as error:
        return str(error)
    found = {
        "ruleset": info["rules_fingerprint"],
        "agent": info["agent"],
        "seed": info["seed"],
        "episodes": dataset.total_episodes,
        "with_values": info["with_values"],
        "obs_mode": info["obs_mode"],
    }
    differ = [f"{key} {found[key]!r}, not {wanted[key]!r}" for key in found if found[key] != wanted[key]]
    return "; ".join(differ) or None


def plan(names: list[str]) -> list[tuple[str, Suite, str, int]]:
    """The runs of the suites in order (seed-major within a suite: every ruleset gets seeds early)."""
    done = done_keys()
    out = []
    for name in names:
        suite = SUITES[name]
        for seed in suite.seeds:
            for ruleset in suite.rulesets:
                if (name, ruleset, seed) not in done:
                    out.append((name, suite, ruleset, seed))
    return out


def estimate_seconds(runs: list[tuple[str, Suite, str, int]], rows: list[dict]) -> float:
    """What ``runs`` will take one after another, from the recorded rows: a suite's median wall time, else the
    budget at the median pace (steps per second) of every recorded run, less what a started or parked run's
    latest checkpoint already holds; 0 without any recorded run."""
    import statistics

    paces = [r["steps"] / r["wall_seconds"] for r in rows if r.get("steps") and r.get("wall_seconds")]
    if not paces:
        return 0.0
    pace = statistics.median(paces)
    walls: dict[str, list[float]] = {}
    for r in rows:
        if r.get("wall_seconds"):
            walls.setdefault(r["suite"], []).append(float(r["wall_seconds"]))
    total = 0.0
    for name, suite, ruleset, seed in runs:
        whole = statistics.median(walls[name]) if name in walls else suite.budget / pace
        total += whole * (1.0 - fraction_done(name, suite, ruleset, seed))
    return total


def fraction_done(name: str, suite: Suite, ruleset: str, seed: int) -> float:
    """How much of a started (or parked) run's budget its latest checkpoint holds: what resuming skips."""
    if not suite.budget:
        return 0.0
    if any(
        (folder / suite.final).exists()
        for folder in (run_path(name, ruleset, seed), run_path(name, ruleset, seed, PARKED))
    ):
        return 1.0  # trained, not yet evaluated
    steps = [
        max(checkpoints(folder))[0]
        for folder in (run_path(name, ruleset, seed), run_path(name, ruleset, seed, PARKED))
        if checkpoints(folder)
    ]
    return min(1.0, max(steps, default=0) / suite.budget)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="*", help=f"suites to run, in order: {', '.join(SUITES)}")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--rulesets", nargs="+", help="only these rulesets")
    parser.add_argument(
        "--seeds", nargs="+", type=int, help="only these training seeds (one seed of many suites: a first row of each)"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the suites, their finished runs and the hours of one core left"
    )
    parser.add_argument(
        "--backfill", action="store_true", help="fill in fields added later by evaluating recorded runs again"
    )
    parser.add_argument(
        "--retrain", action="store_true", help="with --backfill: train again the runs whose policy file is gone"
    )
    parser.add_argument(
        "--train-only",
        action="store_true",
        help="train (or resume) the runs but leave their evaluation and rows to a later call without it (train on "
        "another machine, copy the run folders here)",
    )
    parser.add_argument(
        "--park",
        action="store_true",
        help="copy unfinished runs' latest checkpoints to results/benchmark/parked/ (commit it: a fresh checkout "
        "resumes them)",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.suites if name not in SUITES]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(SUITES)}")
    if args.retrain and not args.backfill:
        parser.error("--retrain goes with --backfill")
    if args.backfill:
        return backfill(retrain=args.retrain)
    if args.park:
        log(f"{park()} runs parked in {PARKED.relative_to(OUT)}")
        return 0
    if args.list or not args.suites:
        done, rows = done_keys(), read_rows()
        width = max(map(len, SUITES))
        for name, suite in SUITES.items():
            total = len(suite.rulesets) * len(suite.seeds)
            finished = sum((name, r, s) in done for r in suite.rulesets for s in suite.seeds)
            todo = f"{estimate_seconds(plan([name]), rows) / 3600:5.1f} h left" if finished < total else " " * 11
            print(f"{name:{width}s} {finished:3d}/{total:<3d} {todo}  configs/benchmark/{suite.config}")
        left = plan([name for name in SUITES if not is_probe(name)])
        hours = estimate_seconds(left, rows) / 3600
        print(f"left (without the probes): {len(left)} runs, about {hours:.0f} h of one core at the recorded pace")
        return 0
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    runs = plan(args.suites)
    if args.rulesets:
        unknown = sorted(set(args.rulesets) - set(RULESET_NAMES))
        if unknown:
            parser.error(f"--rulesets: unknown {', '.join(unknown)}; the benchmark's are {', '.join(RULESET_NAMES)}")
        runs = [run for run in runs if run[2] in args.rulesets]
    if args.seeds:
        known = {seed for name in args.suites for seed in SUITES[name].seeds}
        if not set(args.seeds) <= known:
            parser.error(f"no suite named trains seed(s) {sorted(set(args.seeds) - known)}; theirs: {sorted(known)}")
        runs = [run for run in runs if run[3] in args.seeds]
    missing = sorted({s.config for _, s, _, _ in runs if not (ROOT / "configs" / "benchmark" / s.config).exists()})
    if missing:
        parser.error(f"no config {', '.join(missing)} in configs/benchmark/")
    for name in dict.fromkeys(n for n, _, _, _ in runs):  # before any training: a row the tests would refuse
        problem = budget_problem(name, SUITES[name])
        if problem:
            parser.error(problem)
    cost = estimate_seconds(runs, read_rows()) / min(args.jobs, max(len(runs), 1))
    log(
        f"{len(runs)} runs to do, {args.jobs} at once"
        + (f": about {cost / 3600:.1f} h at the recorded runs' pace" if cost else "")
    )
    ready = {name: ensure_dataset(name, suite) for name, suite in {n: s for n, s, _, _ in runs}.items()}
    skipped = [run for run in runs if not ready[run[0]]]
    runs = [run for run in runs if ready[run[0]]]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(
            pool.map(lambda run: run_one(run[0], run[1], run[2], run[3], evaluate=not args.train_only), runs)
        )
    failed = results.count(False) + len(skipped)
    log(f"finished: {len(results) - failed} runs {'trained' if args.train_only else 'recorded'}, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    from dice_poker_env.cli import run_script

    run_script(main)
