"""The committed benchmark results (``results/benchmark/runs.csv``) agree with the code that reads them.

The leaderboard and docs/benchmark.md quote these rows, so a row that no longer matches the library (a
ruleset whose fingerprint changed, an evaluation set renamed, a suite whose seeds or budget moved) or that
contradicts itself (a percent that does not follow from its regret, a seed recorded twice) would be a number
nobody can reproduce. These tests read the file as committed; they train and solve nothing.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType

import pytest

from agents.evaluation.protocol import TRAIN_SEED_LIMIT, eval_set_id, versions
from dice_poker_env.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "benchmark"
#: Yahtzee's optimal expected score (Verhoeff; Glenn), the yardstick of its luck-free percent
YAHTZEE_OPTIMAL = 254.5877


def run_baselines() -> ModuleType:
    name = "benchmarks_run_baselines_results"
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "run_baselines.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


DRIVER = run_baselines()
with (RESULTS / "runs.csv").open(newline="") as stream:
    READER = csv.DictReader(stream)
    HEADER = tuple(READER.fieldnames or ())
    ROWS = list(READER)


def row_id(row: dict[str, str]) -> str:
    return f"{row['suite']}/{row['ruleset']}/s{row['seed']}"


def expected_track(suite: str) -> str:
    """The track a suite's name promises (its policy's metadata decides the recorded one)."""
    if suite.startswith(("bc_", "probe_bc_")):
        return "solver"
    if suite.startswith(("rules_", "ablation_")):
        return "rules"
    assert suite.startswith(("raw_", "probe_raw_")), f"suite {suite} has no track in its name"
    return "raw"


def test_the_file_has_the_drivers_columns_and_rows():
    assert HEADER == DRIVER.FIELDS
    assert len(ROWS) > 0


def test_the_json_rows_the_leaderboard_reads_are_the_csv_rows():
    """``runs.json`` (read by the leaderboard and the driver) and ``runs.csv`` (read by people) say the same."""
    rows = json.loads((RESULTS / "runs.json").read_text())
    assert len(rows) == len(ROWS)
    for row, text in zip(rows, ROWS):
        assert {key: "" if row.get(key) is None else str(row[key]) for key in HEADER} == text, row_id(text)


def test_every_run_is_recorded_once():
    keys = [(row["suite"], row["ruleset"], int(row["seed"])) for row in ROWS]
    assert len(keys) == len(set(keys)), [key for key in set(keys) if keys.count(key) > 1]


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_row_belongs_to_its_suite(row):
    """Suite, ruleset, seed, budget, config and track are the driver's for that suite, and so is the command."""
    suite = DRIVER.SUITES.get(row["suite"])
    assert suite is not None, f"unknown suite {row['suite']}"
    assert row["ruleset"] in suite.rulesets
    assert int(row["seed"]) in suite.seeds and 0 <= int(row["seed"]) < TRAIN_SEED_LIMIT
    assert int(row["budget"]) == suite.budget
    if suite.budget:  # the batched trainers stop on the last whole rollout at or under the budget
        assert 0.99 * suite.budget <= int(row["steps"]) <= suite.budget
    assert row["config"] == f"configs/benchmark/{suite.config}" and (ROOT / row["config"]).is_file()
    assert row["track"] == expected_track(row["suite"])
    run_dir = f"runs-benchmark/{row['suite']}/{row['ruleset']}/s{row['seed']}"
    assert f"--config {row['config']} --run-dir {run_dir} rules={row['ruleset']} seed={row['seed']}" in row["command"]
    assert f"evaluate {row['ruleset']} --agent model:{run_dir}/{suite.final}" in row["command"]
    assert re.fullmatch(r"[0-9a-f]{7,40}", row["git_commit"])
    datetime.strptime(row["finished_utc"], "%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("ruleset", sorted({row["ruleset"] for row in ROWS}))
def test_rows_were_measured_on_the_ruleset_and_evaluation_set_of_today(ruleset):
    """A ruleset whose rules, observation or ids change makes its recorded rows stale: they must be rerun (or
    the change versioned), never mixed with new ones on the leaderboard."""
    rules = load_rules(ruleset)
    now = versions(rules)
    for row in (row for row in ROWS if row["ruleset"] == ruleset):
        assert row["eval_set"] == eval_set_id(rules), row_id(row)
        assert row["rules_fingerprint"] == now["rules_fingerprint"], row_id(row)
        assert row["env_id"] == now["env_id"], row_id(row)
        assert int(row["observation_layout_version"]) == now["observation_layout_version"], row_id(row)


@pytest.mark.parametrize("ruleset", sorted({row["ruleset"] for row in ROWS}))
def test_percent_follows_from_the_regret_with_one_optimal_score_per_ruleset(ruleset):
    """luck_free_percent = 100 (1 - regret / optimal): every row of a ruleset implies the same optimal
    expected score (Yahtzee's is the published 254.5877), and the keep and box regrets add up to the whole."""
    implied = []
    for row in (row for row in ROWS if row["ruleset"] == ruleset):
        percent, regret = float(row["luck_free_percent"]), float(row["regret_mean"])
        # (below 0 is possible: an agent whose decisions lose more than the optimal expected score)
        assert percent <= 100 and regret >= 0 and float(row["luck_free_percent_ci95"]) > 0, row_id(row)
        implied.append(100 * regret / (100 - percent))
        if row["regret_keep_mean"] and row["regret_box_mean"]:
            parts = float(row["regret_keep_mean"]) + float(row["regret_box_mean"])
            assert parts == pytest.approx(regret, rel=1e-6), row_id(row)
        for rate in ("upper_bonus_rate", "five_of_a_kind_rate"):
            assert row[rate] == "" or 0 <= float(row[rate]) <= 1, row_id(row)
        assert 0 < float(row["median"]) and 0 < float(row["mean"]) and float(row["mean_ci95"]) > 0, row_id(row)
    assert max(implied) == pytest.approx(min(implied), rel=1e-6)
    if ruleset == "yahtzee":
        assert implied[0] == pytest.approx(YAHTZEE_OPTIMAL, abs=1e-3)


@pytest.mark.parametrize("name", [n for n in DRIVER.SUITES if not n.startswith("probe_")])
def test_every_suite_trains_within_its_budget(name):
    """Whole rollouts of every batched suite come within 99-100% of its budget, as the rows' test asks; the
    driver checks the same before training (a contributor's suite of 1024 x 64 rollouts trained 983,040 steps
    of 1M, recorded its row, then failed the test)."""
    assert DRIVER.budget_problem(name, DRIVER.SUITES[name]) is None


def test_a_suite_whose_rollouts_miss_its_budget_is_refused_before_training():
    wide = DRIVER.Suite("raw_batched_ppo_1m.yaml", 1_100_000, ("yacht",))
    problem = DRIVER.budget_problem("wide", wide)
    assert problem is not None and "would train 999,424 steps on yacht" in problem and "1,100,000" in problem


def test_parked_runs_are_runs_the_driver_knows():
    """What ``run_baselines.py --park`` left for the next session: runs of the driver's suites, which it resumes
    (a copy whose run has since been recorded is ignored, and removed by the next ``--park``)."""
    parked = RESULTS / "parked"
    if not parked.is_dir():
        pytest.skip("no parked runs")
    for run in sorted(path for path in parked.glob("*/*/s*") if path.is_dir()):
        suite, ruleset, seed = run.relative_to(parked).parts
        assert suite in DRIVER.SUITES, f"parked run of unknown suite {suite}"
        assert ruleset in DRIVER.SUITES[suite].rulesets and int(seed[1:]) in DRIVER.SUITES[suite].seeds
        assert (run / "wall.json").is_file(), f"{run} has no wall.json"


def test_the_leaderboard_page_counts_every_recorded_run():
    """docs/leaderboard.md is regenerated with the rows (``python benchmarks/leaderboard.py``): its tables count,
    suite by suite and ruleset by ruleset, the runs ``runs.csv`` records."""
    recorded: dict[tuple[str, str], int] = {}
    for row in ROWS:
        recorded[row["suite"], row["ruleset"]] = recorded.get((row["suite"], row["ruleset"]), 0) + 1
    shown: dict[tuple[str, str], int] = {}
    for line in (ROOT / "docs" / "leaderboard.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 10 and cells[1] in DRIVER.SUITES and not cells[4].startswith("all"):
            shown[cells[1], cells[4]] = int(cells[5])
    assert shown == recorded, "docs/leaderboard.md is stale: run python benchmarks/leaderboard.py"


def test_a_runs_machines_are_told_apart_by_cpu_model_in_either_hardware_format():
    """A parked run continued on the same kind of machine is not named twice because the hardware text gained
    the vector extensions; another CPU model is a second machine."""
    module = run_baselines()
    old = "Intel(R) Xeon(R) Processor, 2 vCPU (shared), 1 torch thread per run"
    assert module.cpu_of(module.hardware()) and "," not in module.cpu_of(module.hardware())
    assert module.cpu_of(old) == "Intel(R) Xeon(R) Processor"
    assert module.cpu_of("AMD EPYC 7B13, 2 vCPU (shared), 1 torch thread per run + " + old) == "AMD EPYC 7B13"
    assert module.cpu_of("Intel(R) Xeon(R) Processor (avx2, avx512f), 2 CPUs (shared), 1 torch thread per run") == (
        module.cpu_of(old)
    )
