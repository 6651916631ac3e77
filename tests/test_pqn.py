"""Masked PQN (agents/training/pqn.py): its targets are the Q(lambda) returns, its exploration is epsilon-greedy
over the legal actions, and it trains through train.py end to end (a tiny budget)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.policy.player import load_policy  # noqa: E402
from agents.training import pqn  # noqa: E402
from agents.training.actor_critic import MASKED_LOGIT  # noqa: E402
from agents.training.config import BatchedPQN, make_config  # noqa: E402
from agents.training.trainer import Trainer  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def tiny(**overrides) -> BatchedPQN:
    values = dict(
        n_envs=32,
        n_steps=8,
        batch_size=64,
        net_arch=[32, 32],
        precision="float32",
        compile=False,
        total_timesteps=32 * 8 * 4,
        eval_freq=0,
        checkpoint_freq=0,
        gae_lambda=0.7,
        gamma=0.9,
    )
    return BatchedPQN(**{**values, **overrides})


def test_targets_are_the_q_lambda_returns_of_the_rollout(tmp_path):
    trainer = Trainer(tiny(n_steps=48), load_rules("yacht"), tmp_path)  # longer than a game (12-36 steps)
    rollout, c = trainer.rollout, trainer.config
    batch = rollout.collect(trainer.policy, pqn.behaviour(c, 0.5))
    rewards, dones = rollout._rewards, rollout._dones  # (T, N), as stored by the rollout
    T, N = rewards.shape
    inputs = torch.from_numpy(rollout._inputs.reshape(T * N, -1))
    with torch.no_grad():
        best = trainer.model(inputs, torch.from_numpy(rollout._masks.reshape(T * N, -1)))[1].reshape(T, N).numpy()
        last = trainer.model.value(torch.from_numpy(rollout._obs), torch.from_numpy(rollout._mask)).numpy()
    # G_t = r_t + gamma * (1 - done_t) * ((1 - lambda) * max_a Q(s_t+1, a) + lambda * G_t+1), G_T = max_a Q(s_T, a)
    expected = np.zeros((T, N))
    following, next_best = last.astype(np.float64), last.astype(np.float64)
    for t in reversed(range(T)):
        live = 1.0 - dones[t]
        expected[t] = rewards[t] + c.gamma * live * ((1 - c.gae_lambda) * next_best + c.gae_lambda * following)
        following, next_best = expected[t], best[t]
    np.testing.assert_allclose(batch.returns.numpy().reshape(T, N), expected, rtol=1e-4, atol=1e-5)
    assert dones.any()  # a game ended inside the rollout: the cut at a game's end was exercised


def test_epsilon_decays_linearly_then_stays():
    c = tiny(start_e=1.0, end_e=0.1, exploration_fraction=0.5)
    assert [round(pqn.epsilon(c, p), 6) for p in (0.0, 0.25, 0.5, 0.9)] == [1.0, 0.55, 0.1, 0.1]


def test_behaviour_is_greedy_or_uniform_over_the_legal_actions():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(4000, 10)
    legal = torch.rand(4000, 10) < 0.5
    legal[:, 3] = True
    q = q.masked_fill(~legal, MASKED_LOGIT)
    greedy = pqn.behaviour(tiny(start_e=0.0, end_e=0.0), 0.0)(q, generator)
    assert torch.equal(greedy, q.argmax(dim=1))
    random = pqn.behaviour(tiny(start_e=1.0, end_e=1.0), 0.0)(q, generator)
    assert legal.gather(1, random[:, None]).all()  # never an illegal action
    # uniform over the legal actions: action 3 (always legal) is taken about 1 / (legal count) of the time
    share = (random == 3).float().mean().item()
    assert share == pytest.approx((1.0 / legal.sum(dim=1).float()).mean().item(), abs=0.02)
    assert (random != greedy).float().mean() > 0.3


def test_temperature_draws_the_legal_actions_by_softmax_of_q():
    generator = torch.Generator().manual_seed(0)
    q = torch.tensor([[0.0, 0.01, 0.03, 5.0]]).repeat(20000, 1)  # the last action illegal, worth the most
    legal = torch.tensor([True, True, True, False]).repeat(20000, 1)
    q = q.masked_fill(~legal, MASKED_LOGIT)
    chosen = pqn.behaviour(tiny(start_e=0.0, end_e=0.0, temperature=0.01), 0.0)(q, generator)
    share = torch.bincount(chosen, minlength=4).float() / len(chosen)
    expected = torch.softmax(torch.tensor([0.0, 1.0, 3.0]), dim=0)  # Q / temperature of the legal actions
    np.testing.assert_allclose(share[:3].numpy(), expected.numpy(), atol=0.015)
    assert share[3] == 0  # never the illegal action
    with pytest.raises(ValueError, match="temperature must be >= 0, got -0.01"):
        make_config({"algo": "batched_pqn"}, ["temperature=-0.01"])


def test_updates_move_the_q_network_and_its_policy_file_records_layer_norm(tmp_path):
    rules = load_rules("yacht")
    trainer = Trainer(tiny(), rules, tmp_path / "run", metadata={"rules": "yacht"})
    before = [p.detach().clone() for p in trainer.model.parameters()]
    path = trainer.run(progress=False)
    assert trainer.num_timesteps == 32 * 8 * 4 and trainer.rollout.illegal == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))
    assert not hasattr(trainer.model, "critic")
    _, metadata = load_policy(path)
    assert metadata["algorithm"] == "batched_pqn" and metadata["layer_norm"] is True


def test_dueling_q_is_value_plus_centred_advantage_and_its_policy_file_plays_qs_best_action(tmp_path):
    from agents.policy.player import PolicyAgent

    rules = load_rules("yacht")
    trainer = Trainer(tiny(dueling=True), rules, tmp_path / "run", metadata={"rules": "yacht"})
    model = trainer.model
    rollout = trainer.rollout
    rollout.collect(trainer.policy, pqn.behaviour(trainer.config, 0.5))
    x, mask = torch.from_numpy(rollout._obs), torch.from_numpy(rollout._mask)
    with torch.no_grad():
        q, best = model(x, mask)
        advantage, value = model.actor_logits(x).double(), model.critic(x).double().squeeze(1)
    legal = mask.numpy()
    a = np.where(legal, advantage.numpy(), np.nan)
    expected = value.numpy()[:, None] + advantage.numpy() - np.nanmean(a, axis=1, keepdims=True)
    np.testing.assert_allclose(q.numpy()[legal], expected[legal], rtol=1e-5, atol=1e-5)
    assert (q.numpy()[~legal] == MASKED_LOGIT).all() and torch.equal(best, q.max(dim=1).values)
    path = trainer.run(progress=False)  # it trains: V and A both move
    assert trainer.num_timesteps == 32 * 8 * 4 and trainer.rollout.illegal == 0
    weights, metadata = load_policy(path)
    assert metadata["dueling"] is True and metadata["layer_norm"] is True
    assert not any(name.startswith("critic") for name in weights)  # the file holds A alone
    agent = PolicyAgent(weights, metadata, rules)
    inputs, legal = rollout._obs.copy(), rollout._mask.copy()  # the positions the run ended on
    with torch.no_grad():
        q, _ = model(torch.from_numpy(inputs), torch.from_numpy(legal))
    chosen = np.where(legal, agent.logits(inputs[:, : agent.inputs.obs_size]), -np.inf).argmax(axis=1)
    np.testing.assert_array_equal(chosen, q.argmax(dim=1).numpy())  # A's best legal action is Q's
    plain = Trainer(tiny(), rules, tmp_path / "plain", metadata={"rules": "yacht"})
    assert not hasattr(plain.model, "critic")  # off by default: the Q-network of the baselines, unchanged


def test_pqn_is_selected_by_its_alias_and_its_section_refuses_ppo_fields():
    assert isinstance(make_config({"algo": "pqn"}), BatchedPQN)
    with pytest.raises(ValueError, match="'clip_range' is not used by algo batched_pqn"):
        make_config({"algo": "batched_pqn", "clip_range": 0.2})
    with pytest.raises(ValueError, match="end_e"):
        make_config({"algo": "batched_pqn", "start_e": 0.1, "end_e": 0.5})


def test_train_py_trains_pqn_end_to_end(tmp_path):
    """The smoke test: configs/batched_pqn_yacht.yaml with a tiny budget, through train.py."""
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        str(ROOT / "train.py"),
        "--config",
        str(ROOT / "configs" / "batched_pqn_yacht.yaml"),
        "--run-dir",
        str(run_dir),
        "total_timesteps=2048",
        "n_envs=64",
        "n_steps=16",
        "batch_size=256",
        "net_arch=[32, 32]",
        "compile=false",
        "precision=float32",
        "eval_freq=1024",
        "eval_episodes=20",
        "checkpoint_freq=1024",
        "bench_games=20",
        "bench_agents=[random]",
        "bench_workers=1",
        "progress_bar=false",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["algorithm"] == "batched_pqn" and results["timesteps"] == 2048
    assert set(results["agents"]) == {"random", "model"} and results["agents"]["model"]["games"] == 20
    assert (run_dir / "final_model.npz").is_file() and (run_dir / "best_model.npz").is_file()
    assert len((run_dir / "evaluations.csv").read_text().splitlines()) == 3  # header, 1,024 and 2,048 steps
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "model_1024_steps.pt",
        "model_2048_steps.pt",
    ]
