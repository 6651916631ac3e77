"""Sweeps on Ray Tune (``train.py --sweep``, agents/training/sweep.py): a small sweep, its tables, a failed trial,
an interruption and its resume, a Ray cluster started with ``ray start``, and bad sweep files.

Every Ray here is started in a temporary folder (``RAY_TMPDIR``) and stopped before the test ends.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from train_script import load_train

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("yaml")

SMOKE = ROOT / "configs" / "smoke_batched.yaml"
#: a few thousand steps per trial, small evaluations and benchmarks
TINY = {
    "total_timesteps": 2048,
    "n_envs": 64,
    "n_steps": 16,
    "eval_freq": 1024,
    "eval_episodes": 10,
    "checkpoint_freq": 1024,
    "bench_games": 10,
    "bench_agents": ["optimal", "random"],
}


def write_sweep(folder: Path, configurations: dict, seeds=(0, 1), **more) -> Path:
    import yaml

    path = folder / "sweep.yaml"
    path.write_text(
        yaml.safe_dump(
            {"configurations": configurations, "set": TINY, "seeds": list(seeds), "resources": {"cpu": 1}, **more},
            sort_keys=False,
        )
    )
    return path


@pytest.fixture(scope="module")
def ray_env():
    """The environment of a process that starts Ray: its session files in a short temporary folder."""
    pytest.importorskip("ray.tune")
    pytest.importorskip("torch")
    folder = Path(tempfile.mkdtemp(prefix="ray"))  # short: Ray's socket paths must fit in 107 characters
    env = {
        **os.environ,
        "RAY_TMPDIR": str(folder),
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    env.pop("RAY_ADDRESS", None)
    yield env
    stop_cluster(str(folder))  # anything a failed test left running
    shutil.rmtree(folder, ignore_errors=True)


def train(args: list[str], env: dict, timeout: int = 900, *, isolate: bool = True) -> subprocess.CompletedProcess:
    """``train.py`` with ``args``; with ``isolate``, in a network namespace holding only the loopback where
    bubblewrap can make one, so that the Ray it starts (whose servers listen on every interface) is reachable
    from nowhere else (a local Ray also advertises 127.0.0.1 only: sweep.py)."""
    from test_ray_reaper import loopback_only

    return subprocess.run(
        [*(loopback_only() if isolate else []), sys.executable, str(ROOT / "train.py"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, ray_env):
    """2 configurations x 2 seeds plus one configuration whose value is refused: interrupted after 2 trials, resumed."""
    import yaml

    folder = tmp_path_factory.mktemp("sweep")
    a2c = yaml.safe_load(SMOKE.read_text())  # the smoke config less what A2C does not use (an error otherwise)
    a2c = {key: value for key, value in a2c.items() if key not in ("batch_size", "n_epochs")}
    (folder / "a2c.yaml").write_text(yaml.safe_dump({**a2c, "algo": "batched_a2c"}))
    path = write_sweep(
        folder,
        {
            "ppo": {"config": str(SMOKE)},
            "a2c": {"config": str(folder / "a2c.yaml")},
            "bad": {"config": str(SMOKE), "n_epochs": 0},
        },
    )
    sweep_dir = folder / "out"
    first = train(["--sweep", path, "--sweep-dir", sweep_dir, "--num-cpus", 2, "--stop-after", 2], ray_env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    ended = {p.parent.name: snapshot(p.parent) for p in (sweep_dir / "runs").glob("*/results.json")}
    journal = (sweep_dir / "trials.log").read_text()
    second = train(["--sweep", path, "--sweep-dir", sweep_dir, "--resume", "--num-cpus", 2], ray_env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    return sweep_dir, first.stdout, second.stdout, ended, journal


@pytest.mark.slow  # the module's sweep fixture runs two Ray Tune sweeps in subprocesses: 202 s on 2 shared vCPUs
def test_sweep_runs_every_trial_as_a_training_run_and_reports_the_failed_one(sweep):
    sweep_dir, _, stdout, _, _ = sweep
    rows = {row["trial"]: row for row in read_csv(sweep_dir / "trials.csv")}
    assert set(rows) == {f"{label}__s{seed}" for label in ("ppo", "a2c", "bad") for seed in (0, 1)}
    for label in ("ppo", "a2c"):
        for seed in (0, 1):
            row = rows[f"{label}__s{seed}"]
            assert row["status"] == "FINISHED", row
            run = sweep_dir / "runs" / row["trial"]
            results = json.loads((run / "results.json").read_text())
            assert results["algorithm"] == {"ppo": "batched_ppo", "a2c": "batched_a2c"}[label]
            assert results["config"]["seed"] == seed and results["config"]["recipe"] == label
            assert results["timesteps"] >= TINY["total_timesteps"] and results["bench_games"] == TINY["bench_games"]
            assert float(row["percent_of_optimal"]) == pytest.approx(results["percent_of_optimal"], abs=1e-3)
            assert float(row["regret_mean"]) == pytest.approx(results["regret_mean"], abs=1e-3)
            assert (run / "final_model.npz").is_file() and (run / "evaluations.csv").is_file()
    for seed in (0, 1):
        row = rows[f"bad__s{seed}"]
        assert row["status"] == "FAILED" and "n_epochs must be >= 1" in row["error"], row
        assert not (sweep_dir / "runs" / row["trial"] / "results.json").exists()
    assert "FAILED" in stdout and "n_epochs must be >= 1" in stdout


@pytest.mark.slow  # the module's sweep fixture runs two Ray Tune sweeps in subprocesses: 202 s on 2 shared vCPUs
def test_sweep_compares_the_configurations_over_seeds(sweep):
    sweep_dir, _, stdout, _, _ = sweep
    summary = {row["label"]: row for row in read_csv(sweep_dir / "summary.csv")}
    assert set(summary) == {"ppo", "a2c"}  # the failed configuration has no finished seed
    trials = read_csv(sweep_dir / "trials.csv")
    for label, row in summary.items():
        assert json.loads(row["seeds"]) == [0, 1]
        percents = [float(t["percent_of_optimal"]) for t in trials if t["label"] == label]
        assert float(row["percent_of_optimal_mean"]) == pytest.approx(sum(percents) / 2, abs=1e-3)
        # two seeds are too few for a bootstrap interval (agents.evaluation.protocol.MIN_SEEDS_FOR_INTERVAL)
        assert row["percent_of_optimal_mean_ci95"] == row["percent_of_optimal_iqm_ci95"] == ""
        regrets = [float(t["regret_mean"]) for t in trials if t["label"] == label]
        assert float(row["regret_mean"]) == pytest.approx(sum(regrets) / 2, abs=1e-3)
        assert row["regret_mean_ci95"] == ""
    assert (sweep_dir / "results" / "training.json").is_file()  # agents.evaluation.results' own outputs
    assert (sweep_dir / "results" / "learning_curves.png").stat().st_size > 1000
    assert "configuration" in stdout and "ppo" in stdout and "a2c" in stdout and "too few seeds" in stdout


@pytest.mark.slow  # the module's sweep fixture runs two Ray Tune sweeps in subprocesses: 202 s on 2 shared vCPUs
def test_an_interrupted_sweep_resumes_without_rerunning_finished_trials(sweep):
    sweep_dir, first, second, ended, journal = sweep
    assert 2 <= len(ended) < 4, ended.keys()  # interrupted after two trials had ended
    assert "pending" in first and "continue it: python train.py --sweep" in first
    assert first.split("continue it: ")[1].splitlines()[0].endswith(f"--sweep-dir {sweep_dir} --resume --num-cpus 2")
    for name, files in ended.items():
        assert snapshot(sweep_dir / "runs" / name) == files, f"{name} was rewritten by the resumed sweep"
    starts = [
        line.split()[-1] for line in (sweep_dir / "trials.log").read_text().splitlines() if line.split()[1] == "start"
    ]
    for name in ended:
        assert starts.count(name) == 1, (name, starts)
    assert len(journal.splitlines()) < len((sweep_dir / "trials.log").read_text().splitlines())
    assert "resuming the sweep" in second


@pytest.mark.slow  # the module's sweep fixture runs two Ray Tune sweeps in subprocesses: 202 s on 2 shared vCPUs
def test_a_sweep_folder_is_never_overwritten(sweep, ray_env):
    sweep_dir, *_ = sweep
    before = snapshot(sweep_dir / "runs")
    out = train(["--sweep", sweep_dir / "sweep.yaml", "--sweep-dir", sweep_dir], ray_env)
    assert out.returncode == 2 and "never overwritten" in out.stderr and "Traceback" not in out.stderr
    assert snapshot(sweep_dir / "runs") == before


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_cluster(temp_dir: str, timeout: float = 30.0) -> None:
    """End the processes of the Ray cluster whose session lives in ``temp_dir``, and only those.

    (``ray stop`` would end every Ray process of the machine, other people's included.)
    """
    import signal
    import time

    def ours(entry: Path) -> bool:
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if temp_dir.encode() in cmdline:
                return True
            # a Ray worker or agent renames itself "ray::...": it is ours if it holds a file of the session open
            return cmdline.startswith(b"ray::") and any(temp_dir in os.readlink(fd) for fd in (entry / "fd").iterdir())
        except OSError:
            return False

    def members() -> list[int]:
        return [
            int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and int(e.name) != os.getpid() and ours(e)
        ]

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in members():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while members() and time.monotonic() < deadline:
            time.sleep(0.5)
        if not members():
            return


#: the ``ray start`` test's steps, run by one shell in one network namespace (the loopback only, where bubblewrap
#: can make one): the head, a worker node, the sweep on them; each step's output in its own log file
CLUSTER_SCRIPT = """
set -e
"$RAY_CLI" start --head --node-ip-address 127.0.0.1 --port "$PORT" --num-cpus 1 --include-dashboard false \\
    --disable-usage-stats > "$LOGS/head.log" 2>&1 || { echo head; exit 1; }
"$RAY_CLI" start --address "127.0.0.1:$PORT" --node-ip-address 127.0.0.1 --num-cpus 1 --disable-usage-stats \\
    > "$LOGS/worker.log" 2>&1 || { echo worker; exit 1; }
"$PYTHON" "$TRAIN" --sweep "$SWEEP" --sweep-dir "$OUT" --address "127.0.0.1:$PORT" > "$LOGS/sweep.log" 2>&1 \\
    || { echo sweep; exit 1; }
"""


@pytest.mark.slow  # starts a Ray cluster (ray start) and sweeps on it: 160 s on 2 shared vCPUs
def test_a_sweep_runs_on_a_cluster_started_with_ray_start(tmp_path, ray_env):
    """The documented cluster workflow (docs/scale-out.md), its nodes on 127.0.0.1 and, where bubblewrap can make
    one, in a network namespace holding only the loopback: Ray 2.60's servers listen on every interface, so the
    cluster is reachable from nowhere else (``test_ray_reaper.loopback_only``)."""
    from test_ray_reaper import loopback_only

    ray_cli = shutil.which("ray", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if ray_cli is None or not Path("/proc").is_dir():
        pytest.skip("needs the ray command and /proc (Linux) to stop the cluster it starts")
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        **ray_env,
        "RAY_TMPDIR": tempfile.mkdtemp(prefix="rayc"),
        "RAY_CLI": ray_cli,
        "PORT": str(free_port()),
        "LOGS": str(logs),
        "PYTHON": sys.executable,
        "TRAIN": str(ROOT / "train.py"),
        "SWEEP": str(write_sweep(tmp_path, {"ppo": {"config": str(SMOKE)}}, seeds=(0, 1))),
        "OUT": str(tmp_path / "out"),
    }
    try:
        out = subprocess.run(
            [*loopback_only(), "sh", "-c", CLUSTER_SCRIPT],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            cwd=ROOT,
        )
        failed = out.stdout.strip()
        assert out.returncode == 0, (failed, (logs / f"{failed}.log").read_text()[-3000:] if failed else out.stderr)
        rows = read_csv(tmp_path / "out" / "trials.csv")
        assert [row["status"] for row in rows] == ["FINISHED", "FINISHED"]
        assert all((tmp_path / "out" / "runs" / row["trial"] / "results.json").is_file() for row in rows)
    finally:
        stop_cluster(env["RAY_TMPDIR"])
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)


# ----------------------------------------------------------------------------- bad input (Ray is not started)
@pytest.mark.parametrize(
    "content, message",
    [
        ("seeds: [0, 1\n", "not valid YAML"),
        ("seeds: [0]\nseeds: [1, 2]\n", "not valid YAML"),  # a key twice (PyYAML kept the last silently)
        ("grid: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),  # (a RecursionError traceback)
        (  # a 'billion laughs': aliases of aliases, expanded past 100,000 values (gigabytes before a MemoryError)
            "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
            + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh"))
            + "set: *h\n",
            "expands to more than",
        ),
        ("configurations: {a: {}}\nseed: [0]\n", "unknown key 'seed'"),
        ("grid: {lerning_rate: [0.1]}\n", "grid: unknown config field 'lerning_rate'"),
        ("grid: {seed: [1, 2]}\n", "set by seeds"),
        ("configurations: {a: {config: nowhere.yaml}}\n", "no such config file"),
        ("grid: {n_steps: 16}\n", "must list its values"),
        ("random: {ent_coef: {loguniform: [0, 1]}}\n", "low > 0"),
        ("random: {n_epochs: {randint: [1.5, 4]}}\n", "randint needs [low, high] of integers"),  # (1.5 became 1)
        ("seeds: [0, 0]\n", "distinct"),
        ("resources: {cpu: 1, gpus: 1}\n", "unknown key 'gpus'"),
        ("samples: 5\n", "samples goes with random"),  # (it was ignored)
        ("set: {recipe: mine}\n", "set by the configuration's label 'recipe'"),  # (the label overrode it)
        ("set: {runs_dir: /data/runs}\n", "set by the sweep folder (SWEEP/runs/NAME) 'runs_dir'"),  # (ignored)
        # a field drawn at random and given elsewhere: one of the two was dropped (the grid's, named in the label)
        (
            "grid: {learning_rate: [0.001]}\nrandom: {learning_rate: {uniform: [0.1, 0.2]}}\n",
            "learning_rate is drawn at random and also given in grid",
        ),
        (
            "configurations: {a: {rules_options: {joker: free}}}\nrandom: {rules_options.joker: {choice: [forced]}}\n",
            "also given in configuration 'a' (rules_options)",
        ),
        ("[1, 2]\n", "expected a mapping"),
    ],
)
def test_a_bad_sweep_file_is_a_one_line_error_and_starts_nothing(tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--sweep", str(path), "--sweep-dir", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and out.stderr.startswith("train.py: error:") and len(out.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_an_address_where_no_ray_answers_is_a_one_line_error_at_once(tmp_path):
    """(Ray 2.60 tries an unreachable GCS 20 times, about 40 s each, a warning every few seconds, before its error.)"""
    path = tmp_path / "sweep.yaml"
    path.write_text("seeds: [0]\n")
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--sweep", str(path), "--sweep-dir", str(tmp_path / "out")]
        + ["--address", f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 2, out.stderr[-3000:]
    assert out.stderr.startswith("train.py: error: cannot start or reach the Ray cluster at 127.0.0.1:")
    assert "nothing answers there" in out.stderr and len(out.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_unreachable_probes_host_and_port_addresses_only():
    from agents.training.ray_reaper import unreachable

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert unreachable(f"127.0.0.1:{server.getsockname()[1]}") is None
    assert "nothing answers there" in (unreachable(f"127.0.0.1:{free_port()}") or "")
    assert unreachable("auto") is None and unreachable("ray://127.0.0.1:1") is None and unreachable("local") is None


def test_resume_needs_the_same_sweep(tmp_path):
    path = write_sweep(tmp_path, {"ppo": {"config": str(SMOKE)}})
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--sweep",
            str(path),
            "--sweep-dir",
            str(tmp_path / "nothing"),
            "--resume",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 2 and "holds no sweep to continue" in out.stderr


def test_sweep_file_expands_grid_random_points_and_seeds(tmp_path):
    import yaml

    from agents.training.sweep import load_sweep

    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "configurations": {"a": {"config": str(SMOKE)}, "b": {"config": str(SMOKE), "algo": "batched_a2c"}},
                "grid": {"n_epochs": [1, 2]},
                "random": {"learning_rate": {"loguniform": [1e-4, 1e-2]}, "activation": {"choice": ["tanh", "relu"]}},
                "samples": 3,
                "seeds": [0, 1],
                "resources": {"cpu": 2, "gpu": 0.5},
                "set": {"device": "cuda"},  # (a GPU share goes with a cuda device)
            }
        )
    )
    fields = {"algo", "n_epochs", "learning_rate", "activation", "seed", "recipe", "device"}
    sweep = load_sweep(path, fields, lambda overrides: SMOKE)
    assert len(sweep.trials) == 2 * 2 * 3 * 2 and (sweep.cpu, sweep.gpu) == (2.0, 0.5)
    assert len({t.name for t in sweep.trials}) == len(sweep.trials)
    groups: dict[str, list] = {}
    for trial in sweep.trials:
        groups.setdefault(trial.label, []).append(trial)
    for label, members in groups.items():
        assert sorted(t.seed for t in members) == [0, 1]
        # the seeds of a configuration share its sampled values: only the seed differs
        assert [o for o in members[0].overrides if not o.startswith("seed=")] == [
            o for o in members[1].overrides if not o.startswith("seed=")
        ]
        assert f"recipe={json.dumps(label)}" in members[0].overrides
    rates = {float(o.split("=", 1)[1]) for t in sweep.trials for o in t.overrides if o.startswith("learning_rate=")}
    assert len(rates) == 3 and all(1e-4 <= r <= 1e-2 for r in rates)
    assert (
        load_sweep(path, fields, lambda overrides: SMOKE).as_dict() == sweep.as_dict()
    )  # the same file, the same trials


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "sweeps").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_sweeps_load_and_their_trials_are_valid_configs(path):
    import yaml

    from agents.training.sweep import load_sweep

    train = load_train()
    sweep = load_sweep(path, train.all_fields(), train.default_config)
    assert sweep.trials
    for trial in sweep.trials:  # what each trial's train.py will check first
        base = yaml.safe_load(Path(trial.config_file).read_text()) if trial.config_file else None
        train.make_config(base, trial.overrides)
    if path.stem == "yacht_algorithms":
        assert {t.label for t in sweep.trials} >= {"batched_ppo", "batched_a2c", "batched_pqn", "maskable_ppo"}
        assert sorted({t.seed for t in sweep.trials}) == [0, 1, 2]


def test_a_configuration_naming_only_its_algo_starts_from_that_algos_recipe(tmp_path):
    """As ``train.py algo=X`` does: a configuration (or grid point) without a config file whose ``algo`` is X
    trains X's shipped recipe (configs/X_yacht.yaml), not batched PPO's with X's name on it."""
    import yaml

    from agents.training.sweep import load_sweep

    train = load_train()
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "configurations": {"pqn": {"algo": "batched_pqn"}, "plain": {}},
                "grid": {"algo": ["batched_a2c", "batched_ppo"]},
                "set": {"total_timesteps": 4096},
            }
        )
    )
    by_algo = {}
    for trial in load_sweep(path, train.all_fields(), train.default_config).trials:
        algo = [o.split("=", 1)[1] for o in trial.overrides if o.startswith("algo=")][-1]
        by_algo.setdefault(json.loads(algo), set()).add(trial.config_file)
        config = train.make_config(yaml.safe_load(Path(trial.config_file).read_text()), trial.overrides)
        assert config.algo == json.loads(algo)
    assert by_algo == {  # the grid's algo is the last word: each trial its own recipe
        "batched_a2c": {str(ROOT / "configs" / "batched_a2c_yacht.yaml")},
        "batched_ppo": {str(ROOT / "configs" / "batched_ppo_yacht.yaml")},
    }
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump({"configurations": {"pqn": {"algo": "batched_pqn"}}}))
    (trial,) = load_sweep(one, train.all_fields(), train.default_config).trials
    assert trial.config_file == str(ROOT / "configs" / "batched_pqn_yacht.yaml")
    written = tmp_path / "given.yaml"  # a configuration's own file is never replaced
    written.write_text(Path(SMOKE).read_text())
    given = tmp_path / "given_sweep.yaml"
    given.write_text(yaml.safe_dump({"configurations": {"x": {"config": str(written), "algo": "batched_a2c"}}}))
    (trial,) = load_sweep(given, train.all_fields(), train.default_config).trials
    assert trial.config_file == str(written.resolve())


def test_plain_train_py_never_imports_ray(tmp_path):
    """A training run without --sweep or algo: rllib_ppo imports no part of Ray (the ray extras are optional)."""
    pytest.importorskip("torch")
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['train.py', '--config', {str(SMOKE)!r}, '--run-dir', {str(tmp_path / 'run')!r},\n"
        "            'total_timesteps=1024', 'eval_freq=1024', 'eval_episodes=5', 'checkpoint_freq=0',\n"
        "            'bench_games=5', 'bench_agents=[random]']\n"
        "try:\n"
        f"    runpy.run_path({str(ROOT / 'train.py')!r}, run_name='__main__')\n"
        "finally:\n"
        "    loaded = sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))\n"
        "    print('RAY MODULES', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert (tmp_path / "run" / "results.json").is_file()
    assert "RAY MODULES []" in out.stdout


def test_only_the_ray_modules_import_ray():
    """Ray is imported by agents/training/sweep.py and agents/training/rllib_ppo.py alone; train.py and
    agents/training/run.py reach them only inside functions."""
    import ast

    importers = []
    for path in sorted([*(ROOT / "agents").rglob("*.py"), *(ROOT / "dice_poker_env").rglob("*.py"), ROOT / "train.py"]):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(
                n == "ray" or n.startswith("ray.") or n in ("agents.training.sweep", "agents.training.rllib_ppo")
                for n in names
            ):
                importers.append(str(path.relative_to(ROOT)))
    assert set(importers) == {
        "agents/training/sweep.py",
        "agents/training/rllib_ppo.py",
        "agents/training/run.py",
        "train.py",
    }
    ray_modules = ("ray", "agents.training.sweep", "agents.training.rllib_ppo")
    for path in ("train.py", "agents/training/run.py"):
        top_level = [
            alias.name if isinstance(node, ast.Import) else node.module
            for node in ast.parse((ROOT / path).read_text()).body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        ]
        assert top_level and not [n for n in top_level if n == "ray" or n.startswith("ray.") or n in ray_modules]


def test_a_sweep_whose_trials_all_failed_exits_non_zero(tmp_path, ray_env):
    path = write_sweep(tmp_path, {"bad": {"config": str(SMOKE), "n_epochs": 0}}, seeds=(0,))
    out = train(["--sweep", path, "--sweep-dir", tmp_path / "out", "--num-cpus", 1], ray_env)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1].startswith("train.py --sweep: error: every trial of sweep")
    assert [row["status"] for row in read_csv(tmp_path / "out" / "trials.csv")] == ["FAILED"]


def test_a_trial_asking_for_more_than_the_cluster_has_is_refused_before_it_waits_forever(tmp_path, ray_env):
    path = write_sweep(tmp_path, {"big": {"config": str(SMOKE)}}, seeds=(0,), resources={"cpu": 4})
    out = train(["--sweep", path, "--sweep-dir", tmp_path / "out", "--num-cpus", 1], ray_env, timeout=300)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    assert "a trial asks for 4 CPU(s)" in out.stderr and "the Ray cluster has 1" in out.stderr


def descendants_running(pid: int, needle: str) -> list[int]:
    """The processes below ``pid`` (this one included) whose command line holds ``needle`` (Linux /proc)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        try:
            if needle in Path(f"/proc/{current}/cmdline").read_bytes().decode(errors="replace"):
                found.append(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(child) for child in (task / "children").read_text().split()]
        except OSError:  # ended meanwhile
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the driver through Linux's /proc")
def test_a_sweep_stopped_by_sigterm_says_so_and_exits_130_with_its_state_saved(tmp_path, ray_env):
    import signal
    import time

    path = write_sweep(tmp_path, {"long": {"config": str(SMOKE)}}, seeds=(0,))
    text = path.read_text().replace("total_timesteps: 2048", "total_timesteps: 1000000000")
    path.write_text(text)
    out_dir = tmp_path / "out"
    from test_ray_reaper import loopback_only

    args = [*loopback_only(), sys.executable, str(ROOT / "train.py"), "--sweep", str(path)]
    process = subprocess.Popen(
        [*args, "--sweep-dir", str(out_dir), "--num-cpus", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ray_env,
    )
    try:
        deadline = time.monotonic() + 240
        while not list(out_dir.glob("runs/long__s0/checkpoints/*")) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(1)
        assert list(out_dir.glob("runs/long__s0/checkpoints/*")), "the trial never checkpointed"
        drivers = [
            p
            for p in descendants_running(process.pid, "train.py")
            if "--sweep" in Path(f"/proc/{p}/cmdline").read_bytes().decode()
        ]
        os.kill(drivers[-1], signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=240)
    finally:
        process.kill()
    assert process.returncode == 130, stdout[-2000:] + stderr[-2000:]  # as grade and dataset
    assert stderr.strip().splitlines()[-1] == "train.py --sweep: interrupted with 1 trial(s) pending"
    assert "Traceback" not in stderr
    assert "continue it: " in stdout and [r["status"] for r in read_csv(out_dir / "trials.csv")] == ["PENDING"]


def test_a_config_file_changed_since_the_sweep_started_is_refused(tmp_path):
    """The seeds of a configuration train the same values: a trial's config file edited between an interrupted
    sweep and its --resume (or while it runs) is refused, not trained with the new values beside the old ones."""
    pytest.importorskip("ray.tune")
    from agents.training.sweep import SPEC_FILE, config_fingerprints, load_sweep, run_trial

    config = tmp_path / "mine.yaml"
    config.write_text(SMOKE.read_text())
    path = write_sweep(tmp_path, {"a": {"config": str(config)}})
    train = load_train()
    sweep = load_sweep(path, train.all_fields(), train.default_config)
    sweep_dir = tmp_path / "out"
    (sweep_dir / "tune").mkdir(parents=True)  # an interrupted sweep's folder, as train.py --sweep left it
    spec = {**sweep.as_dict(), "config_files": config_fingerprints(sweep.trials)}
    (sweep_dir / SPEC_FILE).write_text(json.dumps(spec))
    config.write_text(SMOKE.read_text().replace("gae_lambda: 0.95", "gae_lambda: 0.5"))
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--sweep", str(path), "--sweep-dir", str(sweep_dir), "--resume"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 2 and f"config file {config.resolve()} changed since the sweep" in out.stderr, out.stderr
    trial = sweep.trials[1].as_dict()  # a trial not started yet, on a worker while the sweep runs
    with pytest.raises(RuntimeError, match="changed since the sweep started"):
        run_trial({"trial": trial}, sweep_dir=str(sweep_dir), train_script=str(ROOT / "train.py"))
    assert "changed since the sweep started" in (sweep_dir / "logs" / f"{trial['name']}.error").read_text()
    assert not (sweep_dir / "runs").exists()  # nothing trained


def test_the_tables_name_the_finished_trials_the_summary_leaves_out(capsys):
    """A trial trained with solver=off (or bench_games=0) has no percent of optimal: the summary, which ranks by it,
    leaves its configuration out, and says so (it vanished from the ranking without a word)."""
    from agents.training.sweep import print_tables

    rows = [
        {"trial": "ppo__s0", "label": "ppo", "seed": 0, "status": "FINISHED", "percent_of_optimal": 90.0},
        {"trial": "raw__s0", "label": "raw", "seed": 0, "status": "FINISHED", "mean_score": 40.6},
        {"trial": "bad__s0", "label": "bad", "seed": 0, "status": "FAILED", "error": "exit code 2"},
    ]
    print_tables(rows, [])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("not in the summary")]
    assert len(lines) == 1 and lines[0].endswith(": raw__s0") and "solver=off" in lines[0]


def test_a_gpu_share_goes_with_a_cuda_device(tmp_path):
    """resources: {gpu: 0.25} reserved a GPU share for trials that trained on the CPU (device defaults to cpu),
    and a trial with device: cuda but no GPU share was scheduled as if it used none: both are refused."""
    import yaml

    from agents.training.sweep import SweepError, load_sweep

    train = load_train()

    def load(**more):
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump({"configurations": {"a": {"config": str(SMOKE)}}, **more}))
        return load_sweep(path, train.all_fields(), train.default_config)

    with pytest.raises(SweepError, match=r"gpu 0.25 per trial, but trial a__s0 trains on device cpu"):
        load(resources={"cpu": 1, "gpu": 0.25})
    with pytest.raises(SweepError, match=r"trial a__s0 trains on device cuda, but resources give it no GPU"):
        load(set={"device": "cuda"})
    assert load(resources={"cpu": 1, "gpu": 0.25}, set={"device": "cuda"}).gpu == 0.25
    assert load(grid={"device": ["cuda:0"]}, resources={"gpu": 1}).trials
