"""The speed scripts in benchmarks/ compare like with like: both sides did the same work, checked before a ratio."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmark_script_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_solvers(monkeypatch, module: ModuleType, theirs_optimum: dict[str, float]) -> None:
    """Both solvers' processes replaced by their outputs: ours the published optimum, theirs ``theirs_optimum``."""
    published = {variant: value for _, _, variant, value in module.PAIRS}
    ours = {args[0]: value for _, args, _, value in module.PAIRS}

    def run(command, env):
        if command[1] == "-c":  # yatzy-solver's process: python -c PROGRAM VARIANT
            return 1.0, {"expected_score": theirs_optimum.get(command[-1], published[command[-1]])}, 0
        name = command[command.index("solve") + 1]
        return 0.5, {"expected_score": ours[name], "score_std": 50.0, "states": 1, "seconds": 0.4}, 0

    monkeypatch.setattr(module, "_run", run)
    monkeypatch.setattr(module, "have_theirs", lambda: True)
    monkeypatch.setattr(module, "compile_package", lambda: None)


def test_bench_solver_reports_a_ratio_when_both_solvers_find_the_published_optimum(monkeypatch):
    module = _script("bench_solver")
    _fake_solvers(monkeypatch, module, {})
    rows = module.bench_solve(2)
    assert [row["ratio"] for row in rows] == [0.5, 0.5]


def test_bench_solver_refuses_a_ratio_of_two_solvers_that_solved_different_games(monkeypatch):
    # the optima were printed side by side but never compared: a ratio was reported whatever theirs found
    module = _script("bench_solver")
    _fake_solvers(monkeypatch, module, {"yatzy-scandinavian": 247.9})
    with pytest.raises(SystemExit, match=r"^yatzy: yatzy-solver yatzy-scandinavian found an optimum of 247\.900000"):
        module.bench_solve(1)


class _OneStepGames:
    """A batched env whose every game ends at its first step, with Gymnasium's ``NEXT_STEP`` autoreset."""

    num_envs = 8

    def __init__(self):
        import numpy as np

        from dice_poker_env.engine.tables import compile_rules
        from dice_poker_env.rules import load_rules

        self.np = np
        self.tables = compile_rules(load_rules("yahtzee"))
        self.unwrapped = self
        self.ended = False

    def _info(self):
        mask = self.np.zeros((self.num_envs, 32 + self.tables.n_boxes), dtype=self.np.int8)
        mask[:, 32:] = 0 if self.ended else 1
        return {"action_mask": mask}

    def reset(self, seed=None):
        self.ended = False
        return None, self._info()

    def step(self, actions):
        terminated = self.np.full(self.num_envs, not self.ended)  # a reset step ends nothing
        self.ended = not self.ended
        return None, self.np.zeros(self.num_envs), terminated, self.np.zeros(self.num_envs, bool), self._info()


def test_bench_vector_counts_the_steps_that_advance_a_game_not_the_autoreset_steps(monkeypatch):
    # every batched step counted N env steps, the autoreset step after each game's end included: one step a
    # game more than the single env's count, against which the ratios are reported
    import gymnasium

    module = _script("bench_vector")
    monkeypatch.setattr(gymnasium, "make_vec", lambda *args, **kwargs: _OneStepGames())
    run = module.batched(_OneStepGames.num_envs)
    run(0.01)
    counts = run.counts
    assert counts["batched_steps"] >= 2
    assert counts["env_steps"] == _OneStepGames.num_envs * ((counts["batched_steps"] + 1) // 2)


def test_bench_train_records_the_work_per_env_step_of_each_side(monkeypatch):
    # the ratio compares two recipes that do different gradient work per env step; nothing in the output said so
    module = _script("bench_train")
    timed = []
    monkeypatch.setattr(module, "time_sb3", lambda train, config, updates: 1000.0)

    def time_batched(config, updates):
        timed.append((config.n_epochs, config.batch_size, config.precision, config.compile))
        return 10000.0

    monkeypatch.setattr(module, "time_batched", time_batched)
    result = module.main(["--rounds", "1", "--updates", "1", "--same-update", "--json"])
    work = result["work_per_rollout"]
    assert work["sb3_maskable_ppo"] == {"env_steps": 16384, "passes": 10, "gradient_steps": 160}
    assert work["batched_ppo"] == {"env_steps": 16384, "passes": 2, "gradient_steps": 16}
    assert work["batched_ppo_sb3_update"] == {"env_steps": 16384, "passes": 10, "gradient_steps": 160}
    assert timed[-1] == (10, 1024, timed[0][2], timed[0][3])  # SB3's update, the default precision and compile
    assert result["ratio"] == result["ratio_same_update"] == 10.0
