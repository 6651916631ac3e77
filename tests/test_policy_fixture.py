"""Behaviour identity: every shipped policy plays as recorded (``tests/policy_fixture.py`` made the record).

At each of the 2,000 recorded states per ruleset the NumPy player must take the recorded action and give
the recorded logits (within 1e-5 of the row's scale: logits reach several hundred, where float32 holds
about 7 digits); the torch actor built from the same policy file must agree. Where the recorded best two
legal logits are closer than that tolerance (a near tie, which another CPU's rounding may break either
way), either of them is accepted.
"""

from __future__ import annotations

import numpy as np
import pytest
from policy_fixture import FIXTURE

RULESETS = ("dice_poker", "school_poker", "yacht", "yahtzee", "yatzy")
TOLERANCE = 1e-5


def recorded(name: str) -> dict[str, np.ndarray]:
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {key: data[f"{name}/{key}"] for key in ("obs", "mask", "logits", "action")}


def check_plays_as_recorded(logits: np.ndarray, actions: np.ndarray, want: dict[str, np.ndarray], what: str) -> None:
    """``logits`` ``(B, A)`` and ``actions`` ``(B,)`` against the record (see the module docstring)."""
    scale = np.maximum(1.0, np.abs(want["logits"]).max(axis=1, keepdims=True))
    off = np.abs(logits - want["logits"]) > TOLERANCE * scale
    assert not off.any(), f"{what}: logits differ at {off.any(axis=1).sum()} states, e.g. row {np.argmax(off.any(1))}"
    legal = np.where(want["mask"], want["logits"], -np.inf)
    best = legal.max(axis=1)
    rows = np.arange(len(actions))
    near_best = legal[rows, actions] >= best - 2 * TOLERANCE * scale[:, 0]  # the action taken is (near) the best
    same = actions == want["action"]
    assert want["mask"][rows, actions].all(), f"{what}: illegal actions taken"
    assert (same | near_best).all(), f"{what}: other actions at {np.count_nonzero(~same)} of {len(same)} states"
    assert same.mean() > 0.99  # near ties are rare: the record is not passed by accepting any action


@pytest.mark.parametrize("name", RULESETS)
def test_the_numpy_player_plays_every_recorded_state_as_recorded(name):
    from agents.policy.player import shipped_policy

    want = recorded(name)
    agent = shipped_policy(name)
    check_plays_as_recorded(agent.logits(want["obs"]), agent.act_batch(want["obs"], want["mask"]), want, name)
    # the check can fail: another policy's logits are not these
    other = want["logits"] + np.random.default_rng(0).normal(0.0, 1.0, want["logits"].shape).astype(np.float32)
    with pytest.raises(AssertionError):
        check_plays_as_recorded(other, np.argmax(np.where(want["mask"], other, -np.inf), axis=1), want, name)


@pytest.mark.parametrize("name", RULESETS)
def test_the_torch_actor_of_the_policy_file_plays_as_recorded(name):
    torch = pytest.importorskip("torch")
    from agents.policy.player import SHIPPED_DIR, PolicyAgent, load_policy
    from agents.training.actor_critic import ActorCritic
    from dice_poker_env.engine.combinatorics import distinct_keep_mask, roll_index_of_counts
    from dice_poker_env.engine.tables import compile_rules
    from dice_poker_env.envs.observation import flat_layout

    want = recorded(name)
    weights, metadata = load_policy(SHIPPED_DIR / f"{name}.npz")
    player = PolicyAgent(weights, metadata)
    model = ActorCritic.from_policy(weights, metadata, player.rules)
    with torch.no_grad():
        logits = model.actor_logits(torch.from_numpy(player.inputs(want["obs"]))).float().numpy()
    mask = want["mask"]
    if player.distinct_keeps:  # as the player: each distinct keep once
        counts = want["obs"][:, flat_layout(compile_rules(player.rules))["face_counts"]] * 5
        mask = distinct_keep_mask(mask, roll_index_of_counts(counts))
    actions = np.argmax(np.where(mask, logits, -np.inf), axis=1)
    check_plays_as_recorded(logits, actions, want, f"{name} (torch)")
