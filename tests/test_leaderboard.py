"""benchmarks/leaderboard.py rebuilds the aggregate tables and docs/leaderboard.md from results rows alone."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rliable")

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"benchmarks_{name}"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def fake_rows() -> list[dict]:
    rows = []
    for suite, base in (("raw_ppo_1m", 80.0), ("raw_a2c_1m", 70.0)):
        for ruleset in ("yahtzee", "yacht"):
            for k, seed in enumerate(range(1000, 1005)):  # the fewest seeds with an interval
                rows.append(
                    {
                        "suite": suite,
                        "track": "raw",
                        "algorithm": suite.split("_")[1],
                        "ruleset": ruleset,
                        "budget": 1_000_000,
                        "steps": 999_424,
                        "seed": seed,
                        "luck_free_percent": base + k + (ruleset == "yacht"),
                        "mean": 200.0,
                        "median": 199.0,
                        "upper_bonus_rate": None if ruleset == "yacht" else 0.5,  # yacht has no upper bonus
                        "wall_seconds": 100.0,
                    }
                )
                if suite == "raw_ppo_1m":  # rows recorded before the keep/box split have no such fields
                    rows[-1].update(regret_keep_mean=10.0 + k, regret_box_mean=4.0, five_of_a_kind_rate=0.25 + 0.01 * k)
    return rows


def fake_match() -> dict:
    return {
        "rules": "yacht",
        "agents": ["optimal", "greedy"],
        "win_rate": 0.8165,
        "win_rate_ci95": [0.8069, 0.8261],
        "win_rate_seat": [0.812, 0.821],
        "games": 5306,
        "mean_score": [169.52, 121.67],
        "command": "dice-poker match yacht --agents optimal greedy --games 5306",
    }


def test_leaderboard_rebuilds_from_rows(tmp_path, monkeypatch):
    leaderboard = load("leaderboard")
    results = tmp_path / "results"
    results.mkdir()
    probe = [  # recipe development on the development seeds: apart from the baselines
        {**row, "suite": "probe_raw_ppo_wide_1m", "seed": seed, "luck_free_percent": 90.0 + seed}
        for row in fake_rows()[:1]
        for seed in (0, 1)
    ]
    (results / "runs.json").write_text(json.dumps(fake_rows() + probe))
    monkeypatch.setattr(leaderboard, "RESULTS", results)
    monkeypatch.setattr(leaderboard, "ROOT", tmp_path)
    winning = results / "winning"
    winning.mkdir()
    (winning / "match_yacht_optimal_vs_greedy.json").write_text(json.dumps(fake_match()))
    (winning / "reach_yacht.json").write_text("{}")  # other results there are not matches
    (winning / "match_yacht_reach.json").write_text('{"rules": "yacht"}')
    (winning / "match_yacht_x_vs_y.json").write_text('{"rules": "yacht", "win_rate": 0.5}')
    running = tmp_path / "runs-benchmark" / "raw_ppo_10m" / "yahtzee" / "s1000"  # still training: no row yet
    running.mkdir(parents=True)
    (running / "evaluations.csv").write_text("timesteps,percent_of_optimal\n1000000,80.0\n")
    curve = results / "curves" / "raw_ppo_1m" / "yahtzee" / "s1000.csv"  # a recorded run's periodic evaluations
    curve.parent.mkdir(parents=True)
    curve.write_text("timesteps,percent_of_optimal\n500000,70.0\n1000000,80.0\n")
    out = tmp_path / "leaderboard.md"
    assert leaderboard.main(["--reps", "200", "--out", str(out)]) == 0
    assert (results / "running" / "raw_ppo_10m" / "yahtzee" / "s1000.csv").read_text().endswith("80.0\n")
    text = out.read_text()
    assert "## Two-player track: head to head" in text and text.count("| yacht | optimal | greedy |") == 1
    assert (
        "| yacht | optimal | greedy | 81.65% | 80.69 - 82.61 | 5,306 | 81.2% / 82.1% | 169.52, 121.67 | "
        "`dice-poker match yacht --agents optimal greedy --games 5306` |"
    ) in text
    assert "| raw | raw_ppo_1m | ppo | 1M | yahtzee | 5 |" in text
    assert "Pape 2025" in text and "244.87" in text
    assert "## Where the points go" in text  # the seeds' means; the A2C rows lack the fields and are left out
    assert "| yahtzee | raw_ppo_1m | 5 | 12.00 | 4.00 | 50.0% | 27.0% |" in text
    assert "| yacht | raw_ppo_1m | 5 | 12.00 | 4.00 | - | 27.0% |" in text
    points = text.split("## Where the points go")[1].split("##")[0]
    assert "| yahtzee | raw_a2c_1m |" not in points
    assert re.search(r"are not in it \(raw_a2c_1m: \d+\): `python benchmarks/run_baselines.py --backfill", points)
    agg = {(a["suite"], a["ruleset"]): a for a in json.loads((results / "aggregate.json").read_text())}
    yahtzee = agg[("raw_ppo_1m", "yahtzee")]
    assert yahtzee["iqm"] == pytest.approx(82.0)  # IQM of 80 .. 84: the middle three
    assert yahtzee["iqm_ci95_low"] <= yahtzee["iqm"] <= yahtzee["iqm_ci95_high"]
    assert agg[("raw_ppo_1m", "all (yahtzee, yacht)")]["runs"] == 10
    (poi,) = json.loads((results / "probability_of_improvement.json").read_text())  # none with the probe
    assert {poi["x"], poi["y"]} == {"raw_ppo_1m", "raw_a2c_1m"}
    assert agg[("probe_raw_ppo_wide_1m", "yahtzee")]["probe"] and not yahtzee["probe"]
    baselines, probes = text.split("## Recipe development probes (not baselines)")
    assert "| raw | probe_raw_ppo_wide_1m | ppo | 1M | yahtzee | 2 | 90.50 |" in probes.split("##")[0]
    assert "probe_raw_ppo_wide_1m" not in baselines
    for figure in ("performance_profiles", "sample_efficiency"):  # drawn beside the page, which shows them
        assert (tmp_path / "img" / "benchmark" / f"{figure}.png").stat().st_size > 0
        assert f"](img/benchmark/{figure}.png)" in text
    first = text
    assert leaderboard.main(["--reps", "200", "--out", str(out)]) == 0
    assert out.read_text() == first  # seeded bootstrap: the same rows give the same page
    shutil.rmtree(tmp_path / "runs-benchmark")  # a contributor's checkout: the committed snapshot stays
    assert leaderboard.main(["--reps", "200", "--out", str(out)]) == 0
    assert (results / "running" / "raw_ppo_10m" / "yahtzee" / "s1000.csv").is_file()


def test_aggregate_uses_the_seeds_every_ruleset_has_and_gives_one_run_no_interval():
    leaderboard = load("leaderboard")
    rows = [
        {
            "suite": "s",
            "track": "raw",
            "algorithm": "ppo",
            "budget": 1,
            "ruleset": ruleset,
            "seed": seed,
            "luck_free_percent": value,
            "median": 200.0,
        }
        for ruleset, values in (("yahtzee", {1000: 70.0, 1001: 90.0, 1002: 80.0}), ("yacht", {1001: 60.0, 1002: 50.0}))
        for seed, value in values.items()
    ]
    matrix = leaderboard.suite_matrix(rows, ["yahtzee", "yacht"])
    assert matrix.tolist() == [[90.0, 60.0], [80.0, 50.0]]  # seeds 1001 and 1002, not yahtzee's lowest two
    one = [dict(row, suite="t") for row in rows if row["seed"] == 1002]
    agg = {a["ruleset"]: a for a in leaderboard.aggregate(one, reps=50)}
    assert agg["yahtzee"]["iqm"] == 80.0 and agg["yahtzee"]["iqm_ci95_low"] is None
    assert agg["all (yahtzee, yacht)"]["iqm_ci95_high"] is None
    # below five seeds a ruleset has no interval either (a bootstrap of 2-4 covers far less than 95%)
    agg = {a["ruleset"]: a for a in leaderboard.aggregate(rows, reps=50)}
    assert agg["yahtzee"]["runs"] == 3 and agg["yahtzee"]["iqm_ci95_low"] is agg["yahtzee"]["iqm_ci95_high"] is None
    assert (agg["yahtzee"]["min"], agg["yahtzee"]["max"]) == (70.0, 90.0)  # the range the table shows instead
    assert leaderboard.ci_md(None, None) == "-" and leaderboard.ci_md(1.0, 2.5) == "1.00 - 2.50"
    # three yahtzee runs and two yacht runs weigh the same: above 75 (2/3 + 0/2) / 2, not 2/5; above 55
    # (3/3 + 1/2) / 2, not 4/5
    profile = leaderboard.performance_profile(rows, np.array([75.0, 55.0]))
    assert profile.tolist() == pytest.approx([1 / 3, 0.75])


def test_improvement_is_compared_only_between_suites_of_enough_seeds_that_differ():
    """A suite still short of seeds is not compared (2 seeds against 5 made P = 0.80 of one recipe against
    itself), nor an ablation step whose runs are a suite's own under another name."""
    leaderboard = load("leaderboard")
    rows = fake_rows()
    twin = [dict(row, suite="raw_ppo_1m_again") for row in rows if row["suite"] == "raw_ppo_1m"]
    short = [dict(row, suite="raw_short_1m", luck_free_percent=99.0) for row in rows[:2]]
    pairs = {(p["x"], p["y"]) for p in leaderboard.improvements(rows + twin + short, reps=50)}
    assert pairs == {("raw_a2c_1m", "raw_ppo_1m"), ("raw_a2c_1m", "raw_ppo_1m_again")}
    ppo = [row for row in rows if row["suite"] == "raw_ppo_1m"]
    assert leaderboard.same_runs(twin, ppo) and not leaderboard.same_runs(short, ppo)


def test_run_baselines_skips_recorded_runs_and_refuses_unknown_suites(tmp_path, monkeypatch, capsys):
    driver = load("run_baselines")
    monkeypatch.setattr(driver, "RESULTS", tmp_path)
    todo = driver.plan(["raw_ppo_1m"])
    assert len(todo) == 50 and todo[0][2:] == ("yahtzee", 1000)  # seed-major: every ruleset gets seed 1000 first
    assert all(seed < 2**32 for *_, seed in todo)  # training seeds stay below the evaluation set
    driver.add_row({"suite": "raw_ppo_1m", "ruleset": "yahtzee", "seed": 1000, "luck_free_percent": 80.0})
    assert ("raw_ppo_1m", "yahtzee", 1000) not in {(n, r, s) for n, _, r, s in driver.plan(["raw_ppo_1m"])}
    assert (tmp_path / "runs.csv").read_text().startswith("suite,track,algorithm,ruleset,budget,steps,seed,")
    with pytest.raises(SystemExit):
        driver.main(["no_such_suite"])
    assert "unknown suite" in capsys.readouterr().err
    for suite in driver.SUITES.values():  # every suite's config exists
        assert (ROOT / "configs" / "benchmark" / suite.config).is_file(), suite.config


def test_run_baselines_seeds_and_rulesets_pick_runs_across_suites(tmp_path, monkeypatch, capsys):
    driver = load("run_baselines")
    for name, folder in (("RESULTS", tmp_path), ("RUNS", tmp_path / "runs"), ("PARKED", tmp_path / "parked")):
        monkeypatch.setattr(driver, name, folder)
    started = []
    monkeypatch.setattr(
        driver,
        "run_one",
        lambda name, suite, ruleset, seed, evaluate=True: started.append((name, ruleset, seed)) or True,
    )
    monkeypatch.setattr(driver, "ensure_dataset", lambda name, suite: True)
    argv = ["raw_pqn_1m", "rules_ppo_10m", "--seeds", "1001", "--rulesets", "yacht", "--jobs", "1"]
    assert driver.main(argv) == 0
    assert started == [("raw_pqn_1m", "yacht", 1001), ("rules_ppo_10m", "yacht", 1001)]  # a first row of each suite
    with pytest.raises(SystemExit):
        driver.main(["raw_pqn_1m", "--seeds", "7"])  # not a seed of the suite: said, not an empty queue
    assert "seed(s) [7]" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a ruleset's typo: said, not "0 runs to do"
        driver.main(["raw_pqn_1m", "--rulesets", "yahtzeee"])
    assert "--rulesets: unknown yahtzeee" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "benchmark").glob("*.yaml")), ids=lambda p: p.stem)
def test_benchmark_configs_load_and_the_raw_ones_use_no_rules_knowledge(path):
    import yaml

    import train

    config = train.make_config(yaml.safe_load(path.read_text()), ["rules=yahtzee"])
    assert 0 <= config.seed < 2**32
    if path.stem.startswith("raw_"):
        # rules knowledge in the inputs or heads (fields of the batched trainers' section; SB3's has none)
        knowledge = ("features", "box_points", "keep_points", "keep_points_bonus")
        assert not [name for name in knowledge if getattr(config, name, False)]
    budget = {"1m": 1_000_000, "10m": 10_000_000, "100m": 100_000_000}.get(path.stem.rsplit("_", 1)[-1])
    if budget is not None:  # the budget bounds the steps trained (whole rollouts)
        assert config.total_timesteps <= budget
        assert config.total_timesteps % (config.n_envs * config.n_steps) == 0


def test_run_baselines_says_what_the_runs_will_cost():
    driver = load("run_baselines")
    rows = [{"suite": "raw_ppo_1m", "steps": 1_000_000, "wall_seconds": w} for w in (100.0, 200.0, 300.0)]
    todo = [("raw_ppo_1m", driver.SUITES["raw_ppo_1m"], "yahtzee", 1000)] * 2  # the suite's median wall time
    assert driver.estimate_seconds(todo, rows) == pytest.approx(400.0)
    later = [("raw_ppo_10m", driver.SUITES["raw_ppo_10m"], "yahtzee", 1000)]  # none recorded: the median pace
    assert driver.estimate_seconds(later, rows) == pytest.approx(10_000_000 / 5_000.0)
    assert driver.estimate_seconds(later, []) == 0.0


def test_run_baselines_counts_only_what_a_started_or_parked_run_has_left(tmp_path, monkeypatch):
    driver = load("run_baselines")
    monkeypatch.setattr(driver, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(driver, "PARKED", tmp_path / "parked")
    rows = [{"suite": "raw_ppo_10m", "steps": 10_000_000, "wall_seconds": 1000.0}]
    todo = [("raw_ppo_10m", driver.SUITES["raw_ppo_10m"], ruleset, 1000) for ruleset in ("yahtzee", "yacht")]
    assert driver.estimate_seconds(todo, rows) == pytest.approx(2000.0)
    started = driver.run_path("raw_ppo_10m", "yahtzee", 1000) / "checkpoints"
    started.mkdir(parents=True)
    for steps in (2_000_000, 4_000_000):  # the latest checkpoint counts
        (started / f"model_{steps}_steps.pt").write_bytes(b"")
    parked = driver.run_path("raw_ppo_10m", "yacht", 1000, driver.PARKED) / "checkpoints"
    parked.mkdir(parents=True)
    (parked / "model_9000000_steps.pt").write_bytes(b"")
    assert driver.estimate_seconds(todo, rows) == pytest.approx(600.0 + 100.0)


def test_run_baselines_list_says_what_is_left(tmp_path, monkeypatch, capsys):
    driver = load("run_baselines")
    for name, folder in (("RESULTS", tmp_path), ("RUNS", tmp_path / "runs"), ("PARKED", tmp_path / "parked")):
        monkeypatch.setattr(driver, name, folder)  # nothing of this checkout's own runs
    for seed in driver.SEEDS:  # raw PPO 1M on every ruleset done at 100 s a run
        for ruleset in driver.ALL_RULESETS:
            driver.add_row(
                {"suite": "raw_ppo_1m", "ruleset": ruleset, "seed": seed, "steps": 10**6, "wall_seconds": 100}
            )
    assert driver.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "raw_ppo_1m" in out and " 50/50 " in out.split("raw_ppo_1m")[1].split("\n")[0]
    assert "h left" not in out.split("raw_ppo_1m ")[1].split("\n")[0]  # done: nothing left
    a2c = driver.SUITES["raw_a2c_1m"]  # no row yet: the budget at the recorded pace (10,000 steps a second)
    assert f"{a2c.budget / 10_000 * 50 / 3600:5.1f} h left" in out.split("raw_a2c_1m ")[1].split("\n")[0]
    left = [n for n in driver.SUITES if not n.startswith("probe_") and n != "raw_ppo_1m"]
    runs = sum(len(driver.SUITES[n].rulesets) * len(driver.SUITES[n].seeds) for n in left)
    hours = sum(
        driver.SUITES[n].budget / 10_000 * len(driver.SUITES[n].rulesets) * len(driver.SUITES[n].seeds) for n in left
    )
    assert f"left (without the probes): {runs} runs, about {hours / 3600:.0f} h of one core" in out


def test_run_baselines_writes_a_missing_dataset_first(tmp_path, monkeypatch, capsys):
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    driver = load("run_baselines")
    dataset_id = "dice_poker/yacht/greedy-test-v0"
    suite = driver.Suite(
        "x.yaml", 0, dataset=(dataset_id, ("yacht", "--agent", "greedy", "--episodes", "3", "--id", dataset_id))
    )
    assert driver.ensure_dataset("bc_test", suite)
    assert "is missing; writing it first" in capsys.readouterr().out
    import minari

    assert dataset_id in minari.list_local_datasets()
    assert driver.ensure_dataset("bc_test", suite)  # there now: nothing written again
    assert "writing it first" not in capsys.readouterr().out
    assert driver.ensure_dataset("plain", driver.SUITES["raw_ppo_1m"])  # a suite without a dataset
    from agents.commands.dataset import main as write

    for other in (["--episodes", "4"], ["--episodes", "3", "--seed", "1"], ["--episodes", "3", "--obs-mode", "dict"]):
        assert write(["yacht", "--agent", "greedy", *other, "--id", dataset_id, "--overwrite", "--quiet"]) == 0
        assert not driver.ensure_dataset("bc_test", suite)  # another dataset under the suite's id: refused
        assert "is not the dataset the suite trains on" in capsys.readouterr().out


def test_backfill_fills_later_fields_only_where_the_replay_matches(tmp_path, monkeypatch):
    import subprocess
    from types import SimpleNamespace

    driver = load("run_baselines")
    monkeypatch.setattr(driver, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(driver, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(driver, "OUT", tmp_path)
    for seed, recorded in ((1000, 80.0), (1001, 81.0), (1002, 82.0)):
        driver.add_row({"suite": "raw_ppo_1m", "ruleset": "yacht", "seed": seed, "luck_free_percent": recorded})
        if seed != 1002:  # s1002's policy file is gone
            run = tmp_path / "runs" / "raw_ppo_1m" / "yacht" / f"s{seed}"
            run.mkdir(parents=True)
            (run / "final_model.npz").write_bytes(b"")

    def replay(command, **kwargs):  # s1000 and s1002 replay to their recorded percents, s1001 does not
        if "train.py" in command:  # --retrain: the run is trained again into its folder
            run_dir = Path(command[command.index("--run-dir") + 1])
            run_dir.mkdir(parents=True)
            (run_dir / "final_model.npz").write_bytes(b"")
            return SimpleNamespace(returncode=0)
        replayed = {"s1000": 80.0, "s1002": 82.0}.get(Path(command[-2]).parent.name, 81.5)
        metrics = {
            "luck_free_percent": replayed,
            "five_of_a_kind_rate": 0.2,
            "regret_keep_mean": 9.0,
            "regret_box_mean": 3.0,
        }
        return SimpleNamespace(returncode=0, stdout=json.dumps(metrics), stderr="")

    monkeypatch.setattr(subprocess, "run", replay)
    assert driver.backfill() == 1  # two rows could not be filled in
    rows = {r["seed"]: r for r in driver.read_rows()}
    assert rows[1000]["regret_keep_mean"] == 9.0 and rows[1000]["luck_free_percent"] == 80.0
    assert "regret_keep_mean" not in rows[1001] and "regret_keep_mean" not in rows[1002]
    assert driver.backfill(retrain=True) == 1  # s1002 trained again and replays its percent; s1001 still not
    rows = {r["seed"]: r for r in driver.read_rows()}
    assert rows[1002]["regret_box_mean"] == 3.0 and "regret_keep_mean" not in rows[1001]


def test_park_keeps_an_unfinished_run_for_a_fresh_checkout_which_resumes_it(tmp_path, monkeypatch):
    import os
    import subprocess
    from types import SimpleNamespace

    driver = load("run_baselines")
    for name, path in (("OUT", tmp_path), ("RUNS", tmp_path / "runs"), ("RESULTS", tmp_path / "results")):
        monkeypatch.setattr(driver, name, path)
    monkeypatch.setattr(driver, "PARKED", tmp_path / "results" / "parked")
    run = tmp_path / "runs" / "raw_ppo_10m" / "yacht" / "s1000"
    (run / "checkpoints").mkdir(parents=True)
    (run / "tb").mkdir()
    for steps in (1000, 2000):
        (run / "checkpoints" / f"model_{steps}_steps.pt").write_bytes(b"%d" % steps)
    (run / "config.yaml").write_text("algo: ppo\n")
    (run / "evaluations.csv").write_text("timesteps,mean\n")
    latest = (run / "checkpoints" / "model_2000_steps.pt").stat().st_mtime
    # the driver was killed 50 s after the segment began: it counts up to the latest checkpoint
    (run.parent / "s1000.wall.json").write_text(
        json.dumps({"seconds": 100.0, "open_since": latest - 50.0, "hardware": ["CPU A, 1 torch thread per run"]})
    )
    stale = tmp_path / "results" / "parked" / "raw_ppo_10m" / "yacht" / "s1001"
    stale.mkdir(parents=True)  # parked earlier, recorded since: its copy goes
    driver.add_row({"suite": "raw_ppo_10m", "ruleset": "yacht", "seed": 1001, "luck_free_percent": 90.0})

    assert driver.park() == 1
    parked = tmp_path / "results" / "parked" / "raw_ppo_10m" / "yacht" / "s1000"
    assert sorted(p.relative_to(parked).as_posix() for p in parked.rglob("*") if p.is_file()) == [
        "checkpoints/model_2000_steps.pt",
        "config.yaml",
        "evaluations.csv",
        "wall.json",
    ]
    wall = json.loads((parked / "wall.json").read_text())
    assert wall["seconds"] == pytest.approx(150.0) and wall["hardware"] == ["CPU A, 1 torch thread per run"]
    assert not stale.exists()

    import shutil

    shutil.rmtree(tmp_path / "runs")  # a fresh checkout: only what was committed
    commands = []

    def fake(command, **kwargs):
        commands.append(command)
        if "train.py" in command:
            run_dir = Path(command[command.index("--run-dir") + 1])
            assert (run_dir / "checkpoints" / "model_2000_steps.pt").read_bytes() == b"2000"
            (run_dir / "final_model.npz").write_bytes(b"")
            (run_dir / "results.json").write_text(json.dumps({"timesteps": 9_999_360, "algorithm": "ppo"}))
            return SimpleNamespace(returncode=0)
        metrics = {"track": "raw", "luck_free_percent": 91.0, "mean": 230.0}
        return SimpleNamespace(returncode=0, stdout=json.dumps(metrics), stderr="")

    monkeypatch.setattr(subprocess, "run", fake)
    monkeypatch.setattr(driver, "hardware", lambda: "CPU B, 1 torch thread per run")  # resumed elsewhere
    assert driver.run_one("raw_ppo_10m", driver.SUITES["raw_ppo_10m"], "yacht", 1000)
    assert "--resume" in commands[0]
    (row,) = [r for r in driver.read_rows() if r["seed"] == 1000]
    assert row["luck_free_percent"] == 91.0 and row["wall_seconds"] >= 150.0
    # float arithmetic differs between CPU models: the row names both machines that trained it
    assert row["hardware"] == "CPU A, 1 torch thread per run + CPU B, 1 torch thread per run"
    assert not parked.exists()  # recorded: its parked copy is gone
    assert os.listdir(tmp_path / "results" / "parked" / "raw_ppo_10m" / "yacht") == []


def test_train_only_leaves_the_evaluation_to_a_later_call(tmp_path, monkeypatch):
    # --train-only trains (here: elsewhere) and records nothing; a later call evaluates the trained folder
    # without training it again, and the row names the machine that trained it
    import subprocess
    from types import SimpleNamespace

    driver = load("run_baselines")
    monkeypatch.setattr(driver, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(driver, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(driver, "PARKED", tmp_path / "results" / "parked")
    monkeypatch.setattr(driver, "OUT", tmp_path)
    commands = []

    def fake(command, **kwargs):
        commands.append(command)
        if "train.py" in command:
            run_dir = Path(command[command.index("--run-dir") + 1])
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "final_model.npz").write_bytes(b"")
            (run_dir / "results.json").write_text(json.dumps({"timesteps": 9_994_240, "algorithm": "pqn"}))
            return SimpleNamespace(returncode=0)
        metrics = {"track": "raw", "luck_free_percent": 91.5, "mean": 231.0}
        return SimpleNamespace(returncode=0, stdout=json.dumps(metrics), stderr="")

    monkeypatch.setattr(subprocess, "run", fake)
    monkeypatch.setattr(driver, "hardware", lambda: "CPU big, 1 torch thread per run")
    assert driver.main(["raw_pqn_10m", "--seeds", "1001", "--rulesets", "yacht", "--jobs", "1", "--train-only"]) == 0
    kinds = lambda: ["train" if "train.py" in c else "evaluate" for c in commands if "train.py" in c or "evaluate" in c]  # noqa: E731
    assert kinds() == ["train"]  # trained, not evaluated
    assert driver.read_rows() == []
    # the borrowed machine parks the trained run (its policy, no checkpoint); a fresh checkout takes it back
    assert driver.park() == 1
    parked = tmp_path / "results" / "parked" / "raw_pqn_10m" / "yacht" / "s1001"
    assert sorted(p.name for p in parked.iterdir()) == ["final_model.npz", "results.json", "wall.json"]
    suite = driver.SUITES["raw_pqn_10m"]
    assert driver.fraction_done("raw_pqn_10m", suite, "yacht", 1001) == 1.0  # nothing left to train
    import shutil

    shutil.rmtree(tmp_path / "runs")
    monkeypatch.setattr(driver, "hardware", lambda: "CPU small, 1 torch thread per run")
    assert driver.run_one("raw_pqn_10m", suite, "yacht", 1001)
    assert kinds() == ["train", "evaluate"]  # evaluated, not trained again
    (row,) = driver.read_rows()
    assert row["luck_free_percent"] == 91.5 and row["steps"] == 9_994_240
    assert row["hardware"] == "CPU big, 1 torch thread per run"
    assert not parked.exists()  # recorded: its parked copy is gone


def test_reference_rows_carry_their_command_and_are_reproduced_before_they_gain_one(tmp_path, monkeypatch, capsys):
    """``--reference`` writes each row with the command that gives it; a row recorded without one is evaluated
    again and gains it (and this machine's hardware) only where its percent comes out the same (to 9 digits: the
    last ones may differ where the solution was solved on another CPU)."""
    leaderboard = load("leaderboard")
    monkeypatch.setattr(leaderboard, "REFERENCE_AGENTS", ("greedy", "random"))
    monkeypatch.setattr(leaderboard, "RULESETS", ("yacht",))
    path = tmp_path / "reference.json"
    rows = leaderboard.reference(20, path)
    assert [row["command"] for row in rows] == [
        "dice-poker evaluate yacht --agent greedy --games 20 --json",
        "dice-poker evaluate yacht --agent random --games 20 --json",
    ]
    greedy, random = (dict(row) for row in rows)
    for row in rows:  # as recorded before rows had commands; one of them also altered
        del row["command"], row["hardware"]
    rows[0]["luck_free_percent"] *= 1 + 1e-12  # a solution solved elsewhere: the same play
    rows[1]["luck_free_percent"] += 1e-6
    path.write_text(json.dumps(rows))
    again = leaderboard.reference(20, path)
    assert again[0] == {**greedy, "luck_free_percent": greedy["luck_free_percent"] * (1 + 1e-12)}  # as recorded
    assert "command" not in again[1] and again[1]["luck_free_percent"] == random["luck_free_percent"] + 1e-6
    assert "yacht random: gives" in capsys.readouterr().err


def test_the_pages_read_and_write_the_checkout_that_bench_root_names(tmp_path):
    """run_baselines.py writes its rows and runs under $BENCH_ROOT (a snapshot's code running for another checkout);
    the leaderboard and the results page read them, and write their pages, there too (they read this checkout's)."""
    import os
    import subprocess

    code = (
        "import runpy, sys; sys.argv = ['x']; "
        "print(runpy.run_path('benchmarks/leaderboard.py', run_name='probe')['ROOT']); "
        "print(runpy.run_path('tools/results_page.py', run_name='probe')['ROOT']); "
        "print(runpy.run_path('benchmarks/run_baselines.py', run_name='probe')['OUT'])"
    )
    for given, expected in ((str(tmp_path), tmp_path.resolve()), ("", ROOT)):
        env = {**os.environ, "BENCH_ROOT": given}
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split() == [str(expected)] * 3, out.stdout


def test_reference_rows_of_fewer_games_stay_off_the_page_and_the_readme(tmp_path, monkeypatch, capsys):
    """``--reference --games N`` (a quick check) adds rows of N games to reference.json; the leaderboard's table of
    agents without training and the README's headline table show the full evaluation set's rows only: a row of
    fewer games stood beside (the page) or in place of (the README) its agent's full-set row, nothing telling
    them apart."""
    leaderboard = load("leaderboard")
    results = tmp_path / "results"
    results.mkdir()
    (results / "runs.json").write_text(json.dumps(fake_rows()))
    reference = json.loads((ROOT / "results" / "benchmark" / "reference.json").read_text())
    full = next(row for row in reference if row["agent"] == "greedy" and row["rules"] == "yacht")
    quick = {**full, "games": 20, "luck_free_percent": 12.3456, "command": full["command"] + " --games 20"}
    (results / "reference.json").write_text(json.dumps([full, quick]))
    monkeypatch.setattr(leaderboard, "RESULTS", results)
    monkeypatch.setattr(leaderboard, "ROOT", tmp_path)
    out = tmp_path / "leaderboard.md"
    assert leaderboard.main(["--reps", "50", "--out", str(out)]) == 0
    text = out.read_text()
    assert f"| yacht | greedy | rules | {full['luck_free_percent']:.2f} |" in text and "12.35" not in text
    assert (
        "1 reference row of fewer than 10,000 games (--reference --games) kept off the page" in capsys.readouterr().err
    )
    spec = importlib.util.spec_from_file_location("results_page", ROOT / "tools" / "results_page.py")
    results_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(results_page)
    aggregate = json.loads((ROOT / "results" / "benchmark" / "aggregate.json").read_text())
    block = results_page.readme_block([*reference, {**quick, "agent": "trained"}], aggregate)
    assert block == results_page.readme_block(reference, aggregate) and "12.35" not in block


def test_the_protocol_page_states_how_the_intervals_are_drawn():
    """A paper reproducing an interval needs the resamples and the seed: docs/benchmark.md states the defaults that
    leaderboard.py and compare.py use (rliable's own default is 50,000 resamples, its generator unseeded)."""
    text = " ".join((ROOT / "docs" / "benchmark.md").read_text().split())
    assert "percentile intervals from 2,000 resamples, NumPy's global generator seeded 0" in text
    source = (ROOT / "benchmarks" / "leaderboard.py").read_text()
    assert "np.random.seed(0)" in source and 'default=2000, help="bootstrap resamples' in source
