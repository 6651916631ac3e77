"""train.py: config loading and overrides, the smoke run (subprocess), resume, saved models."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("yaml")


def load_train():
    spec = importlib.util.spec_from_file_location("train_script", ROOT / "train.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_script"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_config_field_is_documented():
    train = load_train()
    docs = train.field_docs()
    import dataclasses

    missing = [f.name for f in dataclasses.fields(train.Config) if not docs.get(f.name)]
    assert not missing, f"fields without a docstring: {missing}"


def test_overrides_are_typed_and_checked():
    train = load_train()
    config = train.make_config({"algo": "ppo", "net_arch": [32]}, ["total_timesteps=5000", "net_arch=[64, 64]",
                                                                   "progress_bar=false", "rules_options={joker: free}"])
    assert config.algo == "ppo" and config.total_timesteps == 5000 and config.net_arch == [64, 64]
    assert config.progress_bar is False and config.rules_options == {"joker": "free"}
    with pytest.raises(ValueError, match="unknown config field 'totl_timesteps'"):
        train.make_config({}, ["totl_timesteps=5"])
    with pytest.raises(ValueError, match="expects int"):
        train.make_config({}, ["n_envs=two"])
    with pytest.raises(ValueError, match="algo must be one of"):
        train.make_config({"algo": "sac"})
    with pytest.raises(ValueError, match="distinct_keeps needs a masked algorithm"):
        train.make_config({"algo": "dqn", "distinct_keeps": True})


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_configs_load(path):
    import yaml

    train = load_train()
    config = train.make_config(yaml.safe_load(path.read_text()))
    from dice_poker_env import load_rules

    load_rules(config.rules, **config.rules_options)


def test_required_configs_exist():
    names = {p.stem for p in (ROOT / "configs").glob("*.yaml")}
    for rules in ("yacht", "dice_poker", "school_poker", "yahtzee", "yatzy"):
        assert f"maskable_ppo_{rules}" in names
    assert {"ppo_yacht", "a2c_yacht", "dqn_yacht", "smoke"} <= names


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    pytest.importorskip("sb3_contrib")
    run_dir = tmp_path_factory.mktemp("smoke")
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--config", str(ROOT / "configs" / "smoke.yaml"),
         "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    return run_dir, out.stdout


def test_smoke_config_runs_end_to_end(smoke_run):
    run_dir, stdout = smoke_run
    for name in ("config.yaml", "final_model.zip", "evaluations.csv", "results.json"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "checkpoints").glob("model_*_steps.zip"))
    assert list((run_dir / "tb").rglob("events.out.tfevents.*"))
    results = json.loads((run_dir / "results.json").read_text())
    assert results["algorithm"] == "maskable_ppo" and results["rules"] == "yacht"
    assert results["timesteps"] >= 2048
    for key in ("mean", "ci95", "median", "std", "percent_of_optimal", "regret_mean", "regret_ci95"):
        assert key in results, key
    assert "model" in results["agents"] and "greedy" in results["agents"]
    assert "[eval]" in stdout and "% of optimal" in stdout or results["optimal_expected_score"] is None
    assert "mean ± 95% CI" in stdout  # the rich table


def test_resume_continues_from_the_latest_checkpoint(smoke_run, tmp_path):
    import shutil

    run_dir, _ = smoke_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    out = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--run-dir", str(copy), "--resume",
         "total_timesteps=2560", "bench_games=0", "eval_freq=0"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "resumed from" in out.stdout and "model_2048_steps.zip" in out.stdout
    results = json.loads((copy / "results.json").read_text())
    assert results["timesteps"] >= 2560


def test_saved_model_reloads_and_reproduces_its_actions(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.sb3_agent import SB3Agent, model_metadata, save_model
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    env = DicePokerEnv(rules, obs_mode="flat")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=1, policy_kwargs=dict(net_arch=[32]))
    model.learn(128)
    path = save_model(model, tmp_path / "m", model_metadata(rules, "flat", "maskable_ppo"))
    original = SB3Agent(model, model_metadata(rules, "flat", "maskable_ppo"), rules)
    loaded = SB3Agent.load(path, rules="yacht")
    obs, info = env.reset(seed=3)
    for _ in range(60):
        a, b = original.act(obs, info["action_mask"]), loaded.act(obs, info["action_mask"])
        assert a == b and info["action_mask"][a] == 1
        obs, _, done, _, info = env.step(a)
        if done:
            obs, info = env.reset()


def test_distinct_keeps_model_only_picks_the_lowest_bitmask_of_a_keep():
    """A model trained with distinct_keeps gets the same masks when it plays (SB3Agent)."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.sb3_agent import SB3Agent, model_metadata
    from agents.wrappers import DistinctKeepWrapper
    from dice_poker_env import load_rules
    from dice_poker_env.engine.dice import CANONICAL_KEEP_ACTION, N_KEEP_ACTIONS
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yacht")
    model = MaskablePPO("MlpPolicy", DistinctKeepWrapper(DicePokerEnv(rules, obs_mode="flat")), n_steps=64,
                        batch_size=64, seed=1, policy_kwargs=dict(net_arch=[16]))
    agent = SB3Agent(model, model_metadata(rules, "flat", "maskable_ppo", distinct_keeps=True), rules, deterministic=False)
    assert agent.distinct_keeps
    env = DicePokerEnv(rules, obs_mode="flat")  # full masks, as the benchmark plays
    obs, info = env.reset(seed=5)
    keeps = 0
    for _ in range(400):
        action = agent.act(obs, info["action_mask"])
        if action < N_KEEP_ACTIONS:
            keeps += 1
            assert CANONICAL_KEEP_ACTION[env.state.roll, action]
        obs, _, done, _, info = env.step(action)
        if done:
            obs, info = env.reset()
    assert keeps > 50 and agent.fallbacks == 0


def test_model_refuses_another_ruleset(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.registry import make_agent
    from agents.sb3_agent import RulesetMismatchError, SB3Agent, model_metadata, save_model
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yahtzee")
    model = MaskablePPO("MlpPolicy", DicePokerEnv(rules, obs_mode="flat"), n_steps=64, policy_kwargs=dict(net_arch=[8]))
    path = save_model(model, tmp_path / "yahtzee_model.zip", model_metadata(rules, "flat", "maskable_ppo"))
    with pytest.raises(RulesetMismatchError, match=r"trained on ruleset 'yahtzee'.*cannot play ruleset 'yatzy'"):
        SB3Agent.load(path, rules="yatzy")
    with pytest.raises(RulesetMismatchError, match="joker"):  # same boxes, another option
        make_agent(f"model:{path}", load_rules("yahtzee", joker="free"))
    assert SB3Agent.load(path, rules="yahtzee").obs_mode == "flat"


def test_unmasked_algorithm_trains_through_the_fallback_wrapper(tmp_path):
    pytest.importorskip("stable_baselines3")
    train = load_train()
    config = train.make_config({"algo": "a2c", "n_envs": 2, "n_steps": 8, "total_timesteps": 64})
    rules = __import__("dice_poker_env").load_rules("yacht")
    env = train.make_vec_env(config, rules, 2, 0, training=True)
    model = train.build_model(config, env, tmp_path)
    model.learn(64)
    obs = env.reset()
    for _ in range(50):
        obs, _, _, infos = env.step(np.array([31, 31]))  # never legal: replaced, games go on
        assert not any(i.get("illegal_action") for i in infos)
    env.close()


def test_bench_cli_plays_the_trained_model_and_refuses_another_ruleset(smoke_run, capsys):
    from dice_poker_env.cli import main

    run_dir, _ = smoke_run
    model = str(run_dir / "final_model.zip")
    assert main(["bench", "yacht", "--agents", "greedy", "--model", model, "--games", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["agents"]) == {"greedy", "model"}
    assert main(["bench", "yatzy", "--agents", "greedy", "--model", model, "--games", "4", "--json"]) == 2
    err = capsys.readouterr().err
    assert "trained on ruleset 'yacht'" in err and "cannot play ruleset 'yatzy'" in err
