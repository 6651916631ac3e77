"""The policy's decoder of the flat observation, its options and its heads (agents/policy/), NumPy and torch."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from agents.policy.heads import PolicyHeads, PolicyOptions
from agents.policy.observation import FlatObservation
from dice_poker_env.envs.vector import DicePokerVectorEnv
from dice_poker_env.rules import load_rules


@pytest.mark.parametrize("name", ["yahtzee", "school_poker"])
def test_the_decoder_reads_back_the_games_state(name):
    """Roll, open boxes, scores and upper total read from flat observations are the env's own state."""
    rules = load_rules(name)
    env = DicePokerVectorEnv(64, rules, obs_mode="flat")
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    flat = FlatObservation(rules)
    for _ in range(60):  # games part-way through: boxes filled, upper totals away from 0
        mask = np.asarray(info["action_mask"]).astype(bool)
        obs, _, _, _, info = env.step(np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1))
    state = env.state
    assert np.array_equal(flat.roll(flat, obs), state.roll)
    filled = (state.filled[:, None] >> np.arange(rules.n_boxes)) & 1
    assert np.array_equal(flat.open_boxes(obs), 1.0 - filled)
    assert np.array_equal(flat.scores(obs).round(), state.scores)
    upper = np.clip(state.upper_total, -flat.upper_scale, flat.upper_scale)
    assert np.array_equal(flat.upper_total(obs), upper) and np.abs(upper).max() > 10
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(obs)
    tables = SimpleNamespace(**{k: torch.from_numpy(v) for k, v in flat.arrays().items()})
    assert np.array_equal(flat.roll(tables, x).numpy(), state.roll)
    assert np.array_equal(flat.upper_total(x).numpy(), upper)


def test_options_round_trip_through_the_metadata_and_refuse_bad_values():
    options = PolicyOptions(features=True, box_points=4.0, keep_points=True, keep_points_bonus="par")
    assert PolicyOptions.from_metadata(options.metadata()) == options
    assert "keep_points_bonus" not in PolicyOptions(keep_points=True).metadata()
    assert PolicyOptions.from_metadata({}) == PolicyOptions(features=False)  # files before the features
    for bad, message in (
        ({"keep_points_bonus": 1}, "keep_points_bonus must be true or par"),
        ({"keep_points_bonus": True}, "keep_points_bonus needs keep_points"),
        ({"box_points": -2.0}, "box_points must be a non-negative number"),
    ):
        with pytest.raises(ValueError, match=message):
            PolicyOptions(**bad)
    with pytest.raises(ValueError, match=r"^policy p: keep_head=8 was retired"):
        PolicyOptions.from_metadata({"keep_head": 8}, source="policy p")


def test_the_heads_give_the_same_logits_in_numpy_and_torch():
    """One PolicyHeads.logits for both array types: NumPy tables and torch buffers agree on random states."""
    torch = pytest.importorskip("torch")
    rules = load_rules("yatzy")
    heads = PolicyHeads(rules, PolicyOptions(box_points=2.0, keep_points=True, keep_points_bonus="par"))
    env = DicePokerVectorEnv(256, rules, obs_mode="flat")
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(4)
    obs[:, heads.obs.layout["upper_total"]] = rng.integers(30, 63, size=(len(obs), 1)) / heads.obs.upper_scale
    obs[:, heads.obs.layout["filled"]] = rng.random((len(obs), heads.n_boxes)) < 0.4
    x = heads.inputs(obs)
    out = rng.normal(size=(len(x), heads.n_actions)).astype(np.float32)
    u = rng.normal(size=(len(x), heads.n_boxes)).astype(np.float32)
    w = rng.normal(size=heads.n_boxes).astype(np.float32)
    numpy_logits = heads.logits(heads.tables, x, out, u, w)
    tables = SimpleNamespace(**{k: torch.from_numpy(v) for k, v in heads.arrays.items()})
    as_torch = [torch.from_numpy(a) for a in (x, out, u, w)]
    torch_logits = heads.logits(tables, *as_torch).numpy()
    np.testing.assert_allclose(numpy_logits, torch_logits, rtol=1e-5, atol=1e-5)
    assert np.abs(numpy_logits - out).max() > 0.1  # the heads add something


def test_keep_points_count_only_the_open_boxes():
    """The keeps' term ``sum_b open_b u_b E_ab`` leaves filled boxes out: values on filled boxes alone add
    nothing to a keep, values on open boxes do."""
    rules = load_rules("yacht")
    heads = PolicyHeads(rules, PolicyOptions(keep_points=True))
    env = DicePokerVectorEnv(64, rules, obs_mode="flat")
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(2)
    filled = rng.random((len(obs), heads.n_boxes)) < 0.5
    obs[:, heads.obs.layout["filled"]] = filled
    x = heads.inputs(obs)
    u = rng.uniform(0.5, 1.5, size=(len(x), heads.n_boxes)).astype(np.float32)
    on_filled, _ = heads.points_terms(heads.tables, x, u * filled)
    on_open, _ = heads.points_terms(heads.tables, x, u * ~filled)
    assert np.abs(on_filled).max() < 1e-6
    assert np.abs(on_open).max() > 1.0
