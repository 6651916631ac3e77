"""Long solves speak first (their estimate before they start, then progress); commands that need no solver
values do not solve at all."""

from __future__ import annotations

import dataclasses

import pytest

import dice_poker_env.solver.solution as solution_module
from dice_poker_env.rules import load_rules
from dice_poker_env.solver import budget, solve


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DICE_POKER_KEY_DIR", str(tmp_path / "key"))


def _estimated(seconds: float, monkeypatch):
    real = budget.estimate
    monkeypatch.setattr(budget, "estimate", lambda *a, **k: dataclasses.replace(real(*a, **k), seconds=seconds))


def test_a_long_solve_prints_its_estimate_first_then_progress_lines(empty_cache, monkeypatch, capsys):
    _estimated(1500.0, monkeypatch)  # "25 min"
    monkeypatch.setattr(solution_module, "PROGRESS_LINE_SECONDS", 0.0)  # a line per update
    seen_before = []
    real_dp = solution_module.solve_dp

    def dp(*args, **kwargs):
        seen_before.append(capsys.readouterr().err)  # what was printed before the work began
        return real_dp(*args, **kwargs)

    monkeypatch.setattr(solution_module, "solve_dp", dp)
    solve("yacht", cache=False, workers=1)
    first = seen_before[0].strip().splitlines()
    assert len(first) == 1 and "states" in first[0] and "of memory" in first[0] and "25 min" in first[0]
    progress = capsys.readouterr().err.strip().splitlines()
    assert progress and all(line.startswith("solving yacht: ") and line.endswith(" s)") for line in progress)
    assert any("valuing the states, 100%" in line for line in progress)


def test_a_short_solve_is_silent_off_a_terminal(empty_cache, monkeypatch, capsys):
    _estimated(0.5, monkeypatch)
    solve("yacht", cache=False, workers=1)
    assert capsys.readouterr().err == ""


def test_no_progress_keeps_only_the_estimate_line(empty_cache, monkeypatch, capsys):
    _estimated(600.0, monkeypatch)
    monkeypatch.setattr(solution_module, "PROGRESS_LINE_SECONDS", 0.0)
    solve("yacht", cache=False, workers=1, progress=False)
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "command", [["solve", "yacht", "--no-cache"], ["advise", "yacht", "--dice", "1", "2", "3", "4", "5"]]
)
def test_the_commands_say_it_before_a_long_solve(empty_cache, monkeypatch, capsys, command):
    from dice_poker_env.cli import main

    _estimated(900.0, monkeypatch)
    assert main(command) == 0
    err = capsys.readouterr().err
    assert "15 min of computing" in err.splitlines()[0]


def test_bench_without_regret_or_the_optimal_agent_never_solves(empty_cache, monkeypatch, capsys):
    from dice_poker_env.cli import main

    monkeypatch.setattr(solution_module, "solve_dp", lambda *a, **k: pytest.fail("bench solved"))
    assert main(["bench", "yacht", "--agents", "greedy", "random", "--games", "20", "--no-regret", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"optimal_expected_score": null' in out


def test_bench_without_regret_uses_a_cached_solution_for_the_percent_of_optimal(empty_cache, monkeypatch, capsys):
    from dice_poker_env.cli import main

    optimal = solve(load_rules("yacht"), workers=1).expected_score  # now in the (empty) cache
    monkeypatch.setattr(solution_module, "solve_dp", lambda *a, **k: pytest.fail("bench solved"))
    assert main(["bench", "yacht", "--agents", "greedy", "--games", "20", "--no-regret", "--json"]) == 0
    assert f'"optimal_expected_score": {optimal}' in capsys.readouterr().out
