"""RLlib's PPO with action masking (agents/training/rllib_ppo.py, ``algo: rllib_ppo``): the masked envs, the masked
module and its exported policy, and a few iterations on yacht through train.py (a Ray of its own, in a
temporary folder) with no illegal action and a complete run folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")
pytest.importorskip("ray.rllib")

import torch  # noqa: E402

from agents.policy.player import PolicyAgent, load_policy  # noqa: E402
from agents.training.rllib_ppo import (  # noqa: E402
    IllegalActionCount,
    MaskedDiceEnv,
    MaskedDiceVectorEnv,
    MaskedPPOModule,
    actor_weights,
    make_env,
)
from dice_poker_env.engine.combinatorics import distinct_keep_mask  # noqa: E402
from dice_poker_env.envs.single import DicePokerEnv  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

ENV_CONFIG = {"rules": "yacht", "rules_options": {}, "distinct_keeps": True, "features": True, "reward_scale": 0.02}


def test_the_masked_env_shows_the_legal_actions_of_the_game_it_plays():
    env, plain = MaskedDiceEnv(ENV_CONFIG), DicePokerEnv("yacht", obs_mode="flat")
    obs, _ = env.reset(seed=3)
    flat, info = plain.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(40):
        assert env.observation_space.contains(obs)
        mask = distinct_keep_mask(info["action_mask"], plain.state.roll)
        assert np.array_equal(obs["action_mask"], mask.astype(np.float32))
        assert np.array_equal(obs["observations"][: flat.size], flat)  # then the policy features
        action = int(rng.choice(np.flatnonzero(mask)))
        obs, reward, over, _, _ = env.step(action)
        flat, raw, plain_over, _, info = plain.step(action)
        assert reward == pytest.approx(0.02 * raw) and over == plain_over
        if over:
            obs, _ = env.reset(seed=4)
            flat, info = plain.reset(seed=4)


def test_the_masked_env_passes_gymnasiums_env_checker():
    import warnings

    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the unbounded Box of the features: a warning, not a failure)
        check_env(MaskedDiceEnv(ENV_CONFIG), skip_render_check=True)  # reset(seed=...) seeds env.np_random too


def test_an_illegal_action_ends_the_episode_and_is_counted():
    env = MaskedDiceEnv(ENV_CONFIG)
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"][31] == 0  # keeping all five dice is never a move
    _, _, over, _, info = env.step(31)
    assert over and info["illegal_action"]

    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    class Episode:
        def __init__(self, info):
            self.info = info

        def get_infos(self, index):
            return self.info

    logger = MetricsLogger()
    counter = IllegalActionCount()
    for episode_info in (info, {"final_score": 120}, info):
        counter.on_episode_end(episode=Episode(episode_info), metrics_logger=logger, env_index=0)
    assert logger.peek("illegal_actions") == 2


def test_the_vector_env_is_the_batched_env_with_masks_in_the_observation():
    vec = make_env({**ENV_CONFIG, "num_envs": 6})
    assert isinstance(vec, MaskedDiceVectorEnv) and isinstance(make_env(ENV_CONFIG), MaskedDiceEnv)
    obs, info = vec.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(80):  # past the end of some games: NEXT_STEP autoreset
        assert vec.observation_space.contains(obs)
        legal = obs["action_mask"] > 0.5
        assert legal.any(axis=1).all() or info.get("final_score") is not None
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        obs, _, _, _, info = vec.step(actions)
        assert not np.asarray(info.get("illegal_action", np.zeros(6, dtype=bool))).any()


def masked_module(obs_space, action_space, hidden=(32, 32)):
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    return RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=obs_space,
        action_space=action_space,
        model_config={
            "fcnet_hiddens": list(hidden),
            "fcnet_activation": "tanh",
            "vf_share_layers": False,
            "head_fcnet_hiddens": [],
        },
    ).build()


def test_the_module_never_samples_an_illegal_action_and_exports_its_actor_exactly():
    from ray.rllib.core.columns import Columns

    torch.manual_seed(0)
    vec = make_env({**ENV_CONFIG, "num_envs": 64})
    module = masked_module(vec.single_observation_space, vec.single_action_space)
    obs, _ = vec.reset(seed=2)
    batch = {k: torch.as_tensor(v) for k, v in obs.items()}
    legal = obs["action_mask"] > 0.5
    for forward in (module.forward_inference, module.forward_exploration):
        logits = forward({Columns.OBS: dict(batch)})[Columns.ACTION_DIST_INPUTS]
        draws = torch.distributions.Categorical(logits=logits).sample((200,)).numpy()  # (200, 64)
        assert legal[np.arange(64), draws].all()
    assert module.compute_values({Columns.OBS: dict(batch)}).shape == (64,)

    rules = load_rules("yacht")
    metadata = {
        "rules": "yacht",
        "rules_options": {},
        "rules_fingerprint": rules.fingerprint,
        "activation": "tanh",
        "features": True,
        "distinct_keeps": True,
    }
    agent = PolicyAgent(actor_weights(module), metadata, rules)
    logits = module.forward_inference({Columns.OBS: dict(batch)})[Columns.ACTION_DIST_INPUTS].detach().numpy()
    flat = obs["observations"][:, : agent.inputs.obs_size]
    assert np.allclose(agent.logits(flat)[legal], logits[legal], atol=1e-4)  # the same network, in NumPy
    assert np.array_equal(
        agent.act_batch(flat, legal.astype(np.int8)),  # the env's int8 masks
        np.where(legal, logits, -np.inf).argmax(axis=1),
    )


@pytest.fixture(scope="module")
def rllib_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("rllib") / "run"
    ray_tmp = tempfile.mkdtemp(prefix="ray")
    home = tmp_path_factory.mktemp("home")  # RLlib makes a folder under ~/ray_results: here, and removed again
    env = {
        **os.environ,
        "HOME": str(home),
        "RAY_TMPDIR": ray_tmp,
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    env.pop("RAY_ADDRESS", None)
    overrides = [
        "algo=rllib_ppo",
        "rules=yacht",
        "n_envs=8",
        "n_steps=64",
        "batch_size=128",
        "n_epochs=2",
        "total_timesteps=1024",
        "net_arch=[32, 32]",
        "num_env_runners=1",
        "vec_env=batched",
        "eval_freq=512",
        "eval_episodes=10",
        "checkpoint_freq=0",
        "bench_games=10",
        "bench_agents=[optimal, random]",
        "progress_bar=true",
        "recipe=rllib_smoke",
    ]
    try:
        from test_ray_reaper import loopback_only

        out = subprocess.run(
            [
                *loopback_only(),  # Ray's servers listen on every interface: here there is only the loopback
                sys.executable,
                str(ROOT / "train.py"),
                "--config",
                str(ROOT / "configs" / "smoke_rllib.yaml"),
                "--run-dir",
                str(run_dir),
                *overrides,
            ],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
            env=env,
        )
    finally:
        from test_sweep import stop_cluster

        stop_cluster(ray_tmp)  # anything left running if the run failed
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    results = home / "ray_results"  # nothing left outside the run folder (an empty folder per run once)
    assert not results.exists() or not any(results.iterdir()), sorted(results.iterdir())
    return run_dir, out.stdout


def test_rllib_ppo_trains_on_yacht_without_an_illegal_action(rllib_run):
    run_dir, stdout = rllib_run
    results = json.loads((run_dir / "results.json").read_text())
    assert results["algorithm"] == "rllib_ppo" and results["rules"] == "yacht"
    assert results["timesteps"] >= 1024 and results["rllib_iterations"] >= 2
    assert results["training_episodes"] >= 8  # whole games were played (about 30 steps each) ...
    assert results["illegal_actions"] == 0  # ... and none was ended by an illegal action
    assert results["num_env_runners"] == 1 and results["vec_env"] == "batched"
    assert "[rllib] iteration" in stdout and "illegal actions 0" in stdout


def test_an_rllib_run_folder_is_complete_with_the_benchmark(rllib_run):
    run_dir, stdout = rllib_run
    for name in ("config.yaml", "evaluations.csv", "results.json", "final_model.npz", "best_model.npz"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "rllib_checkpoint").is_dir() and any((run_dir / "rllib_checkpoint").iterdir())
    assert list((run_dir / "tb").rglob("events.out.tfevents.*"))
    rows = (run_dir / "evaluations.csv").read_text().splitlines()
    assert rows[0] == "timesteps,mean_score,std_score,percent_of_optimal,seconds" and len(rows) >= 3
    assert all(float(row.split(",")[3]) > 0 for row in rows[1:])
    results = json.loads((run_dir / "results.json").read_text())
    optimal = results["optimal_expected_score"]
    assert optimal == pytest.approx(169.773889, abs=1e-5)
    model = results["agents"]["model"]
    assert set(results["agents"]) == {"optimal", "random", "model"} and model["games"] == 10
    assert model["percent_of_optimal"] == pytest.approx(100 * model["mean"] / optimal)
    assert model["regret_mean"] > 0 and model["regret_illegal_mean"] == 0
    _, metadata = load_policy(run_dir / "final_model.npz")
    assert metadata["algorithm"] == "rllib_ppo" and metadata["illegal_actions"] == 0
    assert "% of optimal" in stdout


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["algo=rllib_ppo", "n_envs=6", "num_env_runners=4"], "multiple of num_env_runners"),
        (["algo=rllib_ppo", "obs_mode=dict"], "flat observation"),
        (["algo=rllib_ppo", "num_env_runners=-1"], "num_env_runners must be >= 0"),
        # a cluster address where nothing listens (port 1 of the loopback): at once, not after Ray's 20 tries
        (["algo=rllib_ppo", "ray_address=127.0.0.1:1"], "ray_address 127.0.0.1:1: nothing answers there"),
    ],
)
def test_bad_rllib_settings_are_one_line_errors(tmp_path, overrides, message):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--config",
            str(ROOT / "configs" / "smoke_rllib.yaml"),
            "--run-dir",
            str(tmp_path / "run"),
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "run").exists()
