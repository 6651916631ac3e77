"""The benchmark and ``dice-poker bench``: JSON interface, seeding, exact regret."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from agents.benchmark import benchmark, game_seeds

PER_AGENT_KEYS = {
    "mean", "ci95", "median", "std", "percent_of_optimal", "regret_mean", "regret_ci95",
    "regret_keep_mean", "regret_box_mean", "upper_bonus_rate", "five_of_a_kind_rate", "box_means", "mistakes",
}


@pytest.fixture(scope="module")
def solution():
    from dice_poker_env import load_rules, solver

    return solver.solve(load_rules("yacht"))


def test_bench_cli_json_without_torch():
    code = (
        "import io, json, sys, contextlib\n"
        "from dice_poker_env.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = main(['bench', 'yacht', '--agents', 'greedy', 'random', '--games', '30', '--seed', '5', '--json'])\n"
        "assert rc == 0, rc\n"
        "assert 'torch' not in sys.modules, 'bench imported torch'\n"
        "print(buf.getvalue())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["rules"] == "yacht"
    assert "optimal_expected_score" in data
    assert set(data["agents"]) == {"greedy", "random"}
    for row in data["agents"].values():
        assert PER_AGENT_KEYS <= set(row)
        assert row["games"] == 30
        assert set(row["box_means"]) == {
            "ones", "twos", "threes", "fours", "fives", "sixes", "full_house", "four_of_a_kind",
            "little_straight", "big_straight", "choice", "yacht",
        }
        assert row["upper_bonus_rate"] is None  # yacht has no upper bonus


def test_bench_is_seeded_and_worker_independent():
    kw = dict(games=24, seed=11, solution=False)  # no solver needed here
    one = benchmark("yatzy", ["greedy", "random"], **kw)
    again = benchmark("yatzy", ["greedy", "random"], **kw)
    split = benchmark("yatzy", ["greedy", "random"], workers=2, **kw)
    for name in ("greedy", "random"):
        assert np.array_equal(one.scores[name], again.scores[name])
        assert np.array_equal(one.scores[name], split.scores[name])
    assert 0.0 <= one.data["agents"]["greedy"]["upper_bonus_rate"] <= 1.0
    assert one.data["optimal_expected_score"] is None and one.data["agents"]["greedy"]["regret_mean"] is None


def test_game_seeds_are_stable():
    assert np.array_equal(game_seeds(3, 5), game_seeds(3, 10)[:5])


def test_optimal_agent_has_zero_regret_and_matches_the_solver(solution):
    result = benchmark("yacht", ["optimal"], games=400, seed=2, solution=solution).data
    row = result["agents"]["optimal"]
    assert row["regret_mean"] == 0.0
    assert row["regret_keep_mean"] == 0.0 and row["regret_box_mean"] == 0.0
    assert row["mistakes"] == []
    assert abs(row["mean"] - result["optimal_expected_score"]) <= row["ci95"]


def test_greedy_regret_agrees_with_its_measured_gap(solution):
    result = benchmark("yacht", ["greedy"], games=400, seed=3, solution=solution).data
    row = result["agents"]["greedy"]
    gap = result["optimal_expected_score"] - row["mean"]
    assert row["regret_mean"] > 10  # greedy is far from optimal
    assert abs(row["regret_mean"] - gap) <= row["regret_ci95"] + row["ci95"]
    assert row["regret_mean"] == pytest.approx(row["regret_keep_mean"] + row["regret_box_mean"])
    assert row["mistakes"] and row["mistakes"][0]["loss_per_game"] > 0
    assert row["regret_ci95"] < row["ci95"]  # the point of the regret estimate


def test_bench_cli_writes_results_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from dice_poker_env.cli import main

    assert main(["bench", "yacht", "--agents", "random", "--games", "20", "--out", str(tmp_path), "--no-regret"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["agents"]["random"]["games"] == 20
    assert data["agents"]["random"]["regret_mean"] is None  # --no-regret: not computed, not zero
    assert (tmp_path / "score_distribution.png").stat().st_size > 1000
