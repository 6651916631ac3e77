"""The batched torch trainers (agents/training/trainer.py, agents/training/ppo.py, agents/training/a2c.py) and their policies."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.policy.player import PolicyAgent, load_policy  # noqa: E402
from agents.training.actor_critic import ActorCritic  # noqa: E402
from agents.training.rollout import Rollout  # noqa: E402
from agents.training.trainer import Trainer, evaluate, read_checkpoint  # noqa: E402
from dice_poker_env.engine.combinatorics import roll_index_of_counts  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.envs.observation import flat_layout  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def config(**overrides) -> SimpleNamespace:
    """A tiny run: 32 games x 8 steps per update."""
    values = dict(
        algo="batched_ppo",
        n_envs=32,
        n_steps=8,
        batch_size=64,
        n_epochs=2,
        learning_rate=1e-3,
        lr_schedule="linear",
        gamma=1.0,
        gae_lambda=0.8,
        clip_range=0.2,
        ent_coef=0.001,
        vf_coef=0.5,
        max_grad_norm=0.5,
        net_arch=[32, 32],
        activation="tanh",
        reward_scale=0.02,
        distinct_keeps=True,
        features=True,
        device="cpu",
        seed=0,
        total_timesteps=32 * 8 * 4,
        eval_freq=0,
        eval_episodes=10,
        checkpoint_freq=0,
    )
    values.update(overrides)
    return SimpleNamespace(**values)


def params(trainer: Trainer) -> list:
    return [p.detach().clone() for p in trainer.model.parameters()]


@pytest.mark.parametrize("algo", ["batched_ppo", "batched_a2c"])
def test_seeded_runs_reproduce_the_same_updates(tmp_path, algo):
    runs = []
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        trainer = Trainer(config(algo=algo, seed=seed), load_rules("yacht"), tmp_path / name)
        trainer.run(progress=False)
        runs.append(params(trainer))
    assert all(torch.equal(x, y) for x, y in zip(runs[0], runs[1]))  # same machine, same seed: same arithmetic
    assert not all(torch.equal(x, y) for x, y in zip(runs[0], runs[2]))


def test_resume_continues_exactly_where_the_run_stopped(tmp_path):
    rules = load_rules("yacht")
    straight = Trainer(config(), rules, tmp_path / "straight")
    straight.run(progress=False)

    first = Trainer(config(), rules, tmp_path / "split")
    assert first.run(progress=False, stop_at=32 * 8 * 2) is None  # interrupted after two updates
    checkpoint = first.save_checkpoint()
    resumed = Trainer(config(), rules, tmp_path / "split")
    resumed.load_checkpoint(checkpoint)
    assert resumed.num_timesteps == 32 * 8 * 2
    resumed.run(progress=False)
    assert resumed.num_timesteps == straight.num_timesteps
    assert all(torch.equal(x, y) for x, y in zip(params(straight), params(resumed)))
    assert np.array_equal(straight.rollout.env.state.scores, resumed.rollout.env.state.scores)


def test_checkpoint_of_another_ruleset_or_algo_or_a_truncated_file_is_refused(tmp_path):
    trainer = Trainer(config(), load_rules("yacht"), tmp_path / "run")
    path = trainer.save_checkpoint()
    with pytest.raises(ValueError, match="algo 'batched_ppo'"):
        Trainer(config(algo="batched_a2c"), load_rules("yacht"), tmp_path / "other").load_checkpoint(path)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_checkpoint(truncated)


@pytest.mark.parametrize("rules_name", ["yacht", "yahtzee", "school_poker"])
def test_rollouts_only_take_legal_actions(rules_name):
    rules = load_rules(rules_name)
    rollout = Rollout(rules, 64, 64, seed=3)
    model = ActorCritic(rollout.inputs.size, compile_rules(rules).n_actions, [16])
    torch.nn.init.normal_(model.actor[-1].weight, std=3.0)  # a peaked policy: wants illegal actions often
    for _ in range(4):
        batch = rollout.collect(model)
        taken_legal = batch.masks.gather(1, batch.actions[:, None])
        assert bool(taken_legal.all())
    assert rollout.illegal == 0
    assert len(rollout.take_scores()) > 0  # games ended on the way


def test_bonus_potential_is_the_par_chance_of_the_open_boxes():
    from agents.training.shaping import BonusPotential
    from dice_poker_env.envs.vector import DicePokerVectorEnv

    rules = load_rules("yahtzee")
    potential = BonusPotential(rules)
    sixes_only = 1 << 5  # bit j: the j-th upper box open
    p = 0.6  # each die shows the face with chance 0.6: three of five on average, the par
    assert potential.chance[sixes_only, 12] == pytest.approx(1 - (1 - p) ** 5 - 5 * p * (1 - p) ** 4)
    assert potential.chance[sixes_only, 31] == 0.0  # five sixes make 30
    assert potential.chance[0b111111, 1] == pytest.approx(1.0)
    env = DicePokerVectorEnv(3, rules, obs_mode="flat")
    obs, _ = env.reset(seed=0)
    assert potential(obs) == pytest.approx(np.full(3, 35.0 * potential.chance[0b111111, 63]))
    layout = flat_layout(compile_rules(rules))
    reached = obs.copy()
    reached[:, layout["upper_total"]] = 1.0  # 63 or more: the bonus is paid, nothing more to come
    assert (potential(reached) == 0).all()
    with pytest.raises(ValueError, match="bonus_shaping needs an upper bonus"):
        BonusPotential(load_rules("school_poker"))


def test_bonus_shaping_sums_to_minus_the_first_potential_over_each_game():
    """Potential-based shaping (gamma 1): a game's shaping terms sum to -phi(its first state), whatever is played."""
    from agents.training.shaping import BonusPotential

    rules = load_rules("yahtzee")
    plain, shaped = (
        Rollout(rules, 8, 120, seed=3, reward_scale=0.5),
        Rollout(rules, 8, 120, seed=3, reward_scale=0.5, bonus_shaping=2.0),
    )
    model = ActorCritic(plain.inputs.size, compile_rules(rules).n_actions, [16])
    first, second = plain.collect(model), shaped.collect(model)
    assert torch.equal(first.actions, second.actions)  # same games, same play: only the rewards differ
    extra = (shaped._rewards - plain._rewards) / 0.5  # (steps, games)
    phi = BonusPotential(rules)(plain._inputs.reshape(-1, plain.inputs.size)[:, : plain.inputs.obs_size]).reshape(
        120, 8
    )
    games = 0
    for g in range(8):
        start = 0
        for end in np.flatnonzero(plain._dones[:, g]):
            assert extra[start : end + 1, g].sum() == pytest.approx(-2.0 * phi[start, g], abs=1e-3)
            start, games = end + 1, games + 1
    assert games >= 8 and np.abs(extra).max() > 0


@pytest.mark.parametrize(
    "keep_head, box_points, keep_points, rerolls, bonus",
    [
        (0, 0.0, False, 1, False),
        (16, 0.0, False, 1, False),
        (0, 4.0, False, 1, False),
        (16, 2.5, False, 1, False),
        (0, 4.0, True, 1, False),
        (0, 0.0, True, 1, False),
        (0, 4.0, True, 2, False),
        (0, 4.0, True, 1, True),
        (0, 4.0, True, 1, "par"),
    ],
)
def test_policy_file_plays_the_torch_networks_greedy_action(
    tmp_path, keep_head, box_points, keep_points, rerolls, bonus
):
    rules = load_rules("yahtzee")
    trainer = Trainer(
        config(
            net_arch=[64, 64],
            keep_head=keep_head,
            box_points=box_points,
            keep_points=keep_points,
            keep_points_rerolls=rerolls,
            keep_points_bonus=bonus,
        ),
        rules,
        tmp_path / "run",
        metadata={"rules": rules.name, "rules_options": dict(rules.options), "rules_fingerprint": rules.fingerprint},
    )
    if keep_points:  # the box values' head starts at 0: give it weights, so that the test can fail
        torch.nn.init.normal_(trainer.model.points_head.weight, std=0.5)
        torch.nn.init.normal_(trainer.model.points_head.bias, std=1.0)
    path = trainer.save_policy(tmp_path / "policy.npz")
    agent = PolicyAgent.load(path, rules)
    rollout = Rollout(rules, 64, 1, seed=5)
    for _ in range(2):  # positions with 2, 1 and 0 rerolls left
        rollout.collect(ActorCritic(rollout.inputs.size, compile_rules(rules).n_actions, [8]))
    rolls_left = rollout.current_inputs[:, 6:9].argmax(axis=1)
    assert set(rolls_left.tolist()) == {0, 1, 2}
    obs = rollout.current_inputs[:, : agent.inputs.obs_size].copy()
    # upper totals from 40 to 62: the upper bonus within a reroll's reach (keep_points_bonus' terms not all 0)
    upper = flat_layout(compile_rules(rules))["upper_total"]
    obs[:, upper] = np.random.default_rng(1).integers(40, 63, size=(len(obs), 1)) / 63.0
    logits_np = agent.logits(obs)
    with torch.no_grad():
        logits_torch = trainer.model.actor_logits(torch.from_numpy(agent.inputs(obs))).numpy()
    np.testing.assert_allclose(logits_np, logits_torch, rtol=1e-4, atol=1e-5)
    if bonus is True:
        kb = agent._keep_bonus
        terms, _ = kb.terms(
            kb, roll_index_of_counts(obs[:, :6] * 5), np.rint(obs[:, upper.start] * 63), 1.0 - obs[:, 9 + kb.upper]
        )
        assert (terms > 0).any(axis=(1, 2)).mean() > 0.5
    _, metadata = load_policy(path)
    assert metadata["rules_fingerprint"] == rules.fingerprint and metadata["features"] is True
    assert metadata["keep_head"] == keep_head and metadata["box_points"] == box_points
    assert path.stat().st_size < 2 * 1024 * 1024
    if box_points:  # the learnt per-box weights travel with the file; without them the file is refused
        weights, metadata = load_policy(path)
        np.testing.assert_array_equal(weights["box_points_w"], trainer.model.box_points_w.detach().numpy())
        del weights["box_points_w"]
        with pytest.raises(ValueError, match="box_points_w"):
            PolicyAgent(weights, metadata, rules)
    assert metadata["keep_points"] is keep_points
    assert metadata.get("keep_points_rerolls", 1) == rerolls
    assert metadata.get("keep_points_bonus", False) == bonus
    if bonus:  # a mode the player does not know is refused, not played as another
        weights, metadata = load_policy(path)
        with pytest.raises(ValueError, match="keep_points_bonus must be true or par"):
            PolicyAgent(weights, {**metadata, "keep_points_bonus": "parr"}, rules)
    if keep_points:
        weights, metadata = load_policy(path)
        del weights["points_b"]
        with pytest.raises(ValueError, match="points_w/points_b"):
            PolicyAgent(weights, metadata, rules)


@pytest.mark.parametrize("rules_name", ["yatzy", "school_poker"])
def test_keep_expected_points_match_a_naive_enumeration_of_the_reroll(rules_name):
    """Each keep's expected points per box after one reroll, against the independent naive scorer over
    every sequence of the rerolled dice."""
    import itertools

    from naive_rules import NAIVE

    from agents.policy.inputs import keep_expected_points
    from dice_poker_env.engine.combinatorics import ROLL_DICE
    from dice_poker_env.envs.observation import flat_scales

    rules = load_rules(rules_name)
    table = keep_expected_points(rules)
    scale, _ = flat_scales(compile_rules(rules))
    rng = np.random.default_rng(0)
    for roll, action in [(0, 0), (251, 31), *zip(rng.integers(0, 252, 12), rng.integers(0, 32, 12))]:
        dice = ROLL_DICE[roll].tolist()
        kept = [d for i, d in enumerate(dice) if action >> i & 1]
        outcomes = [kept + list(rest) for rest in itertools.product(range(1, 7), repeat=5 - len(kept))]
        for b, box in enumerate(rules.boxes):
            naive = np.mean([NAIVE[rules_name](sorted(o), box.name) for o in outcomes])
            assert table[roll, action, b] * scale == pytest.approx(naive, rel=1e-5, abs=1e-5), (dice, action, box.name)


@pytest.mark.parametrize("rules_name", ["yahtzee", "school_poker"])
def test_keep_bonus_is_the_chance_a_reroll_reaches_the_upper_bonus(rules_name):
    """keep_points_bonus: for each keep and open upper box, the bonus's points times the chance that writing the
    box after one reroll earns the bonus, against the independent naive scorer over every sequence of the
    rerolled dice (school poker: earned only by writing the last open upper box)."""
    import itertools

    from naive_rules import NAIVE

    from agents.policy.inputs import KeepBonus
    from dice_poker_env.engine.combinatorics import ROLL_DICE
    from dice_poker_env.envs.observation import flat_scales

    rules = load_rules(rules_name)
    tables = compile_rules(rules)
    kb = KeepBonus(rules)
    scale, _ = flat_scales(tables)
    upper_boxes = [box for box in rules.boxes if box.section == "upper"]
    rng = np.random.default_rng(3)
    cases = [(ROLL_DICE.tolist().index([1, 4, 4, 4, 4]), 0b11110, 56 if rules_name == "yahtzee" else -12)]
    cases += [
        (int(r), int(a), int(t))
        for r, a, t in zip(
            rng.integers(0, 252, 10),
            rng.integers(0, 32, 10),
            rng.integers(30, 63, 10) if rules_name == "yahtzee" else rng.integers(-20, 5, 10),
        )
    ]
    for roll, action, total in cases:
        dice = ROLL_DICE[roll].tolist()
        kept = [d for i, d in enumerate(dice) if action >> i & 1]
        outcomes = [kept + list(rest) for rest in itertools.product(range(1, 7), repeat=5 - len(kept))]
        for last in (False, True):  # every upper box open, or only one
            for j, box in enumerate(upper_boxes):
                upper_open = np.ones((1, len(upper_boxes)), np.float32)
                if last:
                    upper_open[:] = 0.0
                    upper_open[0, j] = 1.0
                got, _ = kb.terms(kb, np.array([roll]), np.array([float(total)]), upper_open)
                earns = (total < tables.upper_bonus_threshold) if not tables.upper_bonus_on_complete else last
                naive = np.mean(
                    [
                        earns and total + NAIVE[rules_name](sorted(o), box.name) >= tables.upper_bonus_threshold
                        for o in outcomes
                    ]
                )
                assert got[0, action, j] * scale == pytest.approx(naive * tables.upper_bonus_points, abs=1e-4), (
                    dice,
                    action,
                    total,
                    box.name,
                    last,
                )
    if tables.upper_bonus_on_complete:  # the par model needs a bonus paid at a total: a one-line error
        with pytest.raises(ValueError, match="keep_points_bonus=par"):
            KeepBonus(rules, par=True)
    # the case that motivated it: 1-4-4-4-4 with 56 in the upper section, keep the fours: the bonus is certain
    if rules_name == "yahtzee":
        got, _ = kb.terms(kb, np.array([cases[0][0]]), np.array([56.0]), np.ones((1, 6)))
        assert got[0, 0b11110, 3] * scale == pytest.approx(35.0)


@pytest.mark.parametrize("rules_name", ["yahtzee", "yatzy"])
def test_keep_bonus_par_is_the_change_in_the_par_potential(rules_name):
    """keep_points_bonus=par: writing an upper box adds the change in BonusPotential's phi (the bonus's points
    times the par chance of reaching it) beyond the bonus its points already hold; a keep adds that change
    averaged over every sequence of the rerolled dice (naive scorer) plus the bonus where the box reaches it."""
    import itertools

    from naive_rules import NAIVE

    from agents.policy.inputs import KeepBonus
    from agents.training.shaping import BonusPotential
    from dice_poker_env.engine.combinatorics import ROLL_DICE

    rules = load_rules(rules_name)
    tables = compile_rules(rules)
    layout = flat_layout(tables)
    scale, upper_scale = 50.0, 63.0
    kb, phi = KeepBonus(rules, par=True), BonusPotential(rules)
    upper_boxes = [box for box in rules.boxes if box.section == "upper"]
    threshold, bonus = tables.upper_bonus_threshold, tables.upper_bonus_points

    def potential(total: int, upper_open: np.ndarray) -> float:
        obs = np.zeros((1, layout["dice_one_hot"].stop), np.float32)
        obs[0, layout["upper_total"]] = min(total, upper_scale) / upper_scale
        obs[0, layout["filled"].start + kb.upper] = 1.0 - upper_open
        return float(phi(obs)[0])

    rng = np.random.default_rng(5)
    for _ in range(12):
        roll, action, total = int(rng.integers(0, 252)), int(rng.integers(0, 32)), int(rng.integers(0, 63))
        upper_open = (rng.random(6) < 0.6).astype(np.float32)
        upper_open[rng.integers(0, 6)] = 1.0
        keeps, boxes = kb.terms(kb, np.array([roll]), np.array([float(total)]), upper_open[None])
        dice = ROLL_DICE[roll].tolist()
        kept = [d for i, d in enumerate(dice) if action >> i & 1]
        outcomes = [kept + list(rest) for rest in itertools.product(range(1, 7), repeat=5 - len(kept))]
        before = potential(total, upper_open)
        for j, box in enumerate(upper_boxes):
            if not upper_open[j]:
                assert keeps[0, action, j] == 0 and boxes[0, j] == 0
                continue
            rest = upper_open.copy()
            rest[j] = 0.0

            def change(points: int, total=total, rest=rest, before=before) -> float:  # phi after writing the box
                reached = total + points >= threshold
                return (bonus if reached else potential(total + points, rest)) - before

            now = NAIVE[rules_name](sorted(dice), box.name)
            assert boxes[0, j] * scale == pytest.approx(change(now) - bonus * (total + now >= threshold), abs=1e-3)
            expected = np.mean([change(NAIVE[rules_name](sorted(o), box.name)) for o in outcomes])
            assert keeps[0, action, j] * scale == pytest.approx(expected, abs=1e-3), (dice, action, total, box.name)


@pytest.mark.parametrize("rules_name", ["yatzy", "yahtzee"])
def test_two_reroll_keep_points_are_one_reroll_then_each_boxs_best_keep(rules_name):
    """keep_points_rerolls=2: the points box b scores on average when the dice not kept are rolled, then kept
    again as is best for box b alone and rolled once more: enumerated over every sequence of the first reroll,
    each outcome worth its best one-reroll keep for the box (the one-reroll table, checked against the naive
    scorer above)."""
    import itertools

    from agents.policy.inputs import keep_expected_points, keep_points_tables
    from dice_poker_env.engine.combinatorics import ROLL_DICE, roll_index_of_counts

    rules = load_rules(rules_name)
    one, two = keep_expected_points(rules, 1), keep_expected_points(rules, 2)
    best_after_one = one.max(axis=1)  # (252, n_boxes): each box's best keep from each roll
    rng = np.random.default_rng(1)
    for roll, action in [(0, 31), (251, 0b11100), *zip(rng.integers(0, 252, 10), rng.integers(0, 32, 10))]:
        dice = ROLL_DICE[roll].tolist()
        kept = [d for i, d in enumerate(dice) if action >> i & 1]
        if len(kept) < 2:
            kept = dice[:2]
            action = 0b11
        outcomes = [kept + list(rest) for rest in itertools.product(range(1, 7), repeat=5 - len(kept))]
        counts = np.array([np.bincount(o, minlength=7)[1:] for o in outcomes])
        expected = best_after_one[roll_index_of_counts(counts)].mean(axis=0)
        np.testing.assert_allclose(two[roll, action], expected, rtol=1e-5, atol=1e-6)
    assert (two >= one - 1e-6).all() and (two > one + 1e-3).any()  # a second reroll never lowers a box's points
    stacked = keep_points_tables(rules, 2)
    assert stacked.shape == (2, *one.shape) and np.array_equal(stacked[0], one) and np.array_equal(stacked[1], two)
    with pytest.raises(ValueError, match="rerolls"):
        keep_expected_points(rules, 3)


def test_keep_points_weigh_each_keeps_expected_points_by_the_box_values():
    """With keep_points the keep logits gain sum_b open_b u_b E_ab and the box logits u_b p_b; with u = 0 (the
    start) the network is unchanged."""
    from agents.policy.inputs import keep_expected_points
    from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, roll_index_of_counts
    from dice_poker_env.envs.observation import flat_layout

    rules = load_rules("yatzy")
    tables = compile_rules(rules)
    layout = flat_layout(tables)
    rollout = Rollout(rules, 128, 1, seed=6)
    for _ in range(40):  # games part-way through: some boxes filled
        rollout.collect(ActorCritic(rollout.inputs.size, tables.n_actions, [16]))
    x = torch.from_numpy(rollout.current_inputs)
    plain = ActorCritic(rollout.inputs.size, tables.n_actions, [32])
    table = keep_expected_points(rules)
    model = ActorCritic(
        rollout.inputs.size,
        tables.n_actions,
        [32],
        keep_points=True,
        potential_points=layout["potential_points"].start,
        face_counts=layout["face_counts"].start,
        filled=layout["filled"].start,
        expected_points=table,
    )
    model.actor[0][0].load_state_dict(plain.actor[0].state_dict())  # the same hidden layer and output layer
    model.actor_out.load_state_dict(plain.actor[-1].state_dict())
    with torch.no_grad():
        np.testing.assert_allclose(model.actor_logits(x).numpy(), plain.actor_logits(x).numpy(), rtol=1e-5, atol=1e-6)
        u = np.linspace(-1.0, 2.0, tables.n_boxes).astype(np.float32)
        model.points_head.bias.copy_(torch.from_numpy(u))
        difference = (model.actor_logits(x) - plain.actor_logits(x)).numpy()
    obs = rollout.current_inputs
    open_boxes = 1.0 - obs[:, layout["filled"]]
    assert 0 < open_boxes.sum() < open_boxes.size
    rolls = roll_index_of_counts(obs[:, layout["face_counts"]] * 5)
    expected_keeps = np.einsum("bkn,bn->bk", table[rolls], u * open_boxes)
    np.testing.assert_allclose(difference[:, :N_KEEP_ACTIONS], expected_keeps, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        difference[:, N_KEEP_ACTIONS:], u * obs[:, layout["potential_points"]], rtol=1e-4, atol=1e-5
    )
    with pytest.raises(ValueError, match="keep_points needs"):
        ActorCritic(rollout.inputs.size, tables.n_actions, [32], keep_points=True)
    with pytest.raises(ValueError, match="use one"):
        ActorCritic(rollout.inputs.size, tables.n_actions, [32], keep_points=True, keep_head=8)


def test_box_points_adds_each_boxs_points_to_its_logit():
    """With box_points the box logits are the network's plus w_b times the points box b would score now,
    read from the observation: five of a kind favours the 50-point box from the start."""
    from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS
    from dice_poker_env.envs.observation import flat_layout

    rules = load_rules("yacht")
    tables = compile_rules(rules)
    rollout = Rollout(rules, 128, 1, seed=4)
    x = torch.from_numpy(rollout.current_inputs)
    points = flat_layout(tables)["potential_points"]
    plain = ActorCritic(rollout.inputs.size, tables.n_actions, [32])
    boosted = ActorCritic(rollout.inputs.size, tables.n_actions, [32], box_points=4.0, potential_points=points.start)
    boosted.actor.load_state_dict(plain.actor.state_dict())
    with torch.no_grad():
        difference = (boosted.actor_logits(x) - plain.actor_logits(x)).numpy()
    np.testing.assert_allclose(difference[:, :N_KEEP_ACTIONS], 0.0, atol=1e-6)  # keeps untouched
    np.testing.assert_allclose(
        difference[:, N_KEEP_ACTIONS:], 4.0 * rollout.current_inputs[:, points], rtol=1e-5, atol=1e-6
    )
    assert np.abs(difference).max() > 0.5  # some rolls score points now
    with pytest.raises(ValueError, match="potential_points"):
        ActorCritic(rollout.inputs.size, tables.n_actions, [32], box_points=1.0)


def test_keep_head_scores_a_keep_by_the_dice_it_keeps():
    """The keep head's kept-dice sums are the engine's keep counts, so equal keeps get equal logits."""
    from dice_poker_env.engine.combinatorics import KEEP_COUNTS, KEEP_OF_ACTION, N_KEEP_ACTIONS, ROLL_DICE
    from dice_poker_env.envs.observation import flat_layout

    rules = load_rules("yahtzee")
    tables = compile_rules(rules)
    rollout = Rollout(rules, 256, 1, seed=2)
    x = torch.from_numpy(rollout.current_inputs)
    start = flat_layout(tables)["dice_one_hot"].start
    model = ActorCritic(rollout.inputs.size, tables.n_actions, [32], keep_head=8, dice_one_hot=start)
    torch.nn.init.normal_(model.keep_out.weight, std=1.0)
    dice = x[:, start : start + 30].reshape(-1, 5, 6)
    kept = torch.matmul(model.keep_bits, dice).numpy()  # (B, 32, 6) face counts of the kept dice
    counts = rollout.current_inputs[:, flat_layout(tables)["face_counts"]] * 5
    rolls = [
        ROLL_DICE.tolist().index(sorted(np.repeat(np.arange(1, 7), np.rint(c).astype(int)).tolist())) for c in counts
    ]
    assert np.array_equal(kept, KEEP_COUNTS[KEEP_OF_ACTION[rolls]])
    with torch.no_grad():
        logits = model.actor_logits(x).numpy()
    for row, roll in enumerate(rolls[:32]):
        keeps = KEEP_OF_ACTION[roll]
        for a in range(N_KEEP_ACTIONS):
            same = np.flatnonzero(keeps == keeps[a])
            np.testing.assert_allclose(logits[row, same], logits[row, a], rtol=1e-5, atol=1e-6)
        assert len(np.unique(np.round(logits[row, :N_KEEP_ACTIONS], 5))) > 1  # not one logit for every keep


def test_evaluate_plays_each_game_once_and_returns_its_final_score():
    rules = load_rules("yacht")
    trainer = Trainer(config(), rules, "unused")
    scores = evaluate(trainer.agent(), rules, 50, seed=7)
    again = evaluate(trainer.agent(), rules, 50, seed=7)
    assert scores.shape == (50,) and np.array_equal(scores, again)
    assert scores.min() >= 0 and scores.max() <= compile_rules(rules).max_total


def test_train_py_runs_the_batched_trainer_end_to_end_and_resumes(tmp_path):
    run = tmp_path / "run"
    command = [
        sys.executable,
        str(ROOT / "train.py"),
        "--config",
        str(ROOT / "configs" / "smoke_batched.yaml"),
        "--run-dir",
        str(run),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((run / "results.json").read_text())
    assert results["algorithm"] == "batched_ppo" and results["timesteps"] == 4096
    assert results["agents"]["model"]["games"] == 20 and results["agents"]["model"]["illegal_actions"] == 0
    assert {"final_model.npz", "best_model.npz", "evaluations.csv", "learning_curve.png", "config.yaml"} <= {
        p.name for p in run.iterdir()
    }
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["model_2048_steps.pt", "model_4096_steps.pt"]
    assert any((run / "tb").rglob("events.out.tfevents.*"))
    rows = (run / "evaluations.csv").read_text().splitlines()
    assert rows[0].startswith("timesteps,") and [r.split(",")[0] for r in rows[1:]] == ["2048", "4096"]
    from agents.policy.player import PolicyAgent
    from dice_poker_env import __version__

    metadata = PolicyAgent.load(run / "final_model.npz").metadata  # what reproduces the policy
    assert metadata["command"].startswith("python train.py --config ") and metadata["version"] == __version__
    assert "git_commit" in metadata  # the code's commit in a git checkout (None elsewhere)
    # resume to a longer budget from the latest checkpoint
    longer = subprocess.run(
        [*command, "--resume", "total_timesteps=6144"], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert "resumed from" in longer.stdout and json.loads((run / "results.json").read_text())["timesteps"] == 6144


def test_results_aggregate_seeds_with_rliable_and_plot(tmp_path):
    pytest.importorskip("rliable")
    from agents.evaluation import results as results_module

    runs = []
    for seed, percent in ((0, 90.0), (1, 92.0), (2, 91.0)):
        run = tmp_path / f"yacht__batched_ppo__s{seed}"
        run.mkdir()
        (run / "results.json").write_text(
            json.dumps(
                {
                    "rules": "yacht",
                    "algorithm": "batched_ppo",
                    "percent_of_optimal": percent,
                    "mean": percent * 1.7,
                    "median": percent * 1.7,
                    "timesteps": 1000,
                    "train_seconds": 60.0,
                    "bench_games": 100,
                    "upper_bonus_rate": None,
                    "five_of_a_kind_rate": 0.5,
                    "regret_keep_mean": 5.0 + seed,
                    "regret_box_mean": 2.0,
                    "agents": {"optimal": {"upper_bonus_rate": None, "five_of_a_kind_rate": 0.4 + seed / 10}},
                    "config": {"seed": seed, "recipe": "r1"},
                }
            )
        )
        (run / "evaluations.csv").write_text(
            "timesteps,mean_score,std_score,percent_of_optimal,seconds\n"
            f"500,1,1,{percent - 10},1\n1000,1,1,{percent},2\n"
        )
        runs.append(run)
    out = tmp_path / "results"
    rows = results_module.main([*map(str, runs), "--out", str(out), "--reps", "200"])
    assert len(rows) == 1 and rows[0]["seeds"] == [0, 1, 2] and rows[0]["group"] == "r1"
    assert rows[0]["percent_of_optimal_mean"] == pytest.approx(91.0)
    assert rows[0]["percent_of_optimal_iqm"] == pytest.approx(91.0)  # IQM of three: the middle one, weighted
    low, high = rows[0]["percent_of_optimal_iqm_ci95"]
    assert 90.0 <= low <= 91.0 <= high <= 92.0
    assert rows[0]["regret_keep_mean"] == pytest.approx(6.0) and rows[0]["regret_box_mean"] == pytest.approx(2.0)
    assert rows[0]["optimal_five_of_a_kind_rate"] == pytest.approx(0.5) and rows[0]["optimal_upper_bonus_rate"] is None
    assert (out / "training.csv").read_text().startswith("rules,group,seeds")
    assert (out / "learning_curves.png").stat().st_size > 1000
    assert sorted(p.name for p in (out / "runs" / "yacht").iterdir()) == sorted(r.name for r in runs)
    assert rows[0]["curve"] == {
        "seeds": 3,
        "timesteps": [500, 1000],
        "mean": [81.0, 91.0],
        "min": [80.0, 90.0],
        "max": [82.0, 92.0],
    }

    # a fresh clone holds the table but not these runs' files: adding another group keeps the first row
    shutil.rmtree(out / "runs")
    other = tmp_path / "yacht__batched_ppo__s9"
    other.mkdir()
    (other / "results.json").write_text((runs[0] / "results.json").read_text().replace('"seed": 0', '"seed": 9'))
    rows = results_module.main([str(other), "--out", str(out), "--reps", "200", "--group", "r2"])
    assert [(r["group"], r["seeds"]) for r in rows] == [("r1", [0, 1, 2]), ("r2", [9])]
    assert json.loads((out / "training.json").read_text())[0]["curve"]["mean"] == [81.0, 91.0]
    assert "r1" in (out / "training.csv").read_text()

    # a table that does not read is an error, and is left as it was
    (out / "training.json").write_text("{not json")
    with pytest.raises(SystemExit, match="is not a results table"):
        results_module.main(["--out", str(out)])
    assert (out / "training.json").read_text() == "{not json"


def test_bfloat16_precision_trains_and_plays_through_the_float32_policy_file(tmp_path):
    rules = load_rules("yacht")
    trainer = Trainer(config(precision="bfloat16"), rules, tmp_path / "run")
    trainer.run(progress=False)
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())  # autocast: weights stay float32
    scores = evaluate(trainer.agent(), rules, 20, seed=1)
    assert scores.shape == (20,) and (scores >= 0).all()


@pytest.mark.parametrize("path", sorted((ROOT / "agents" / "policies").glob("*.npz")), ids=lambda p: p.stem)
def test_shipped_policies_load_without_torch_and_play_their_ruleset_well(path):
    from agents.players.registry import make_agent
    from agents.policy.player import shipped_policy

    _, metadata = load_policy(path)
    rules = load_rules(path.stem)
    assert metadata["rules_fingerprint"] == rules.fingerprint and metadata["command"].startswith("python train.py")
    assert path.stat().st_size <= 2 * 1024 * 1024
    agent = make_agent("trained", path.stem)
    assert isinstance(agent, PolicyAgent) and agent.rules.fingerprint == rules.fingerprint
    scores = evaluate(agent, rules, 300, seed=11)
    from dice_poker_env.solver import solve

    optimal = solve(rules).expected_score
    assert scores.mean() >= 0.9 * optimal  # the shipped policies play 96-99% in 10,000 games (docs/training.md)
    other = _other_options(path.stem)
    if other:
        with pytest.raises(ValueError, match="default options"):
            shipped_policy(load_rules(path.stem, **other))


def _other_options(name: str) -> dict:
    """Options other than the defaults (shipped policies refuse them); {} where a ruleset has none."""
    from dice_poker_env import ruleset_options

    options = ruleset_options(name)
    for key, info in options.items():
        values = info.get("values") if isinstance(info, dict) else None
        if values:
            return {key: next(v for v in values if v != info.get("default"))}
    return {}


def test_trained_agent_without_a_shipped_policy_is_a_clear_error():
    from agents.policy.player import SHIPPED_DIR, shipped_policy

    missing = [
        name
        for name in ("yacht", "yahtzee", "yatzy", "dice_poker", "school_poker")
        if not (SHIPPED_DIR / f"{name}.npz").is_file()
    ]
    if not missing:
        pytest.skip("every ruleset has a shipped policy")
    with pytest.raises(ValueError, match="no trained policy is shipped"):
        shipped_policy(missing[0])


def test_checkpoint_holds_its_games_as_plain_data(tmp_path):
    """No class of this package is pickled into a checkpoint, so moving or renaming modules keeps runs resumable."""
    import pickletools

    trainer = Trainer(config(), load_rules("yacht"), tmp_path / "run")
    trainer.run(progress=False, stop_at=32 * 8)
    rollout_bytes = trainer.state_dict()["rollout"]
    globals_ = {arg for op, arg, _ in pickletools.genops(rollout_bytes) if isinstance(arg, str) and "." in arg}
    assert not any("dice_poker_env" in name or "agents" in name for name in globals_), globals_


def test_precision_auto_picks_bfloat16_only_where_the_cpu_has_bf16_units(monkeypatch):
    from agents.training import actor_critic

    monkeypatch.setattr(actor_critic, "cpu_has_bf16_units", lambda: False)
    assert actor_critic.resolve_precision("auto") == "float32"
    monkeypatch.setattr(actor_critic, "cpu_has_bf16_units", lambda: True)
    assert actor_critic.resolve_precision("auto") == "bfloat16"
    assert ActorCritic(8, 33, [4], precision="auto").precision == "bfloat16"
    assert actor_critic.resolve_precision("float32") == "float32"
    with pytest.raises(ValueError, match="precision must be one of"):
        actor_critic.resolve_precision("float16")


def test_compiled_training_follows_the_eager_run(tmp_path, monkeypatch):
    """compile=True (torch.compile of the policy forward and the PPO loss) trains the same network as eager
    mode, up to float rounding."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))  # its kernels stay in tmp_path
    rules = load_rules("yacht")
    eager = Trainer(config(), rules, tmp_path / "eager")
    eager.run(progress=False)
    compiled = Trainer(config(compile=True), rules, tmp_path / "compiled")
    compiled.run(progress=False)
    for x, y in zip(params(eager), params(compiled)):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-3, atol=1e-4)
    # another trainer of the same structure reuses the graphs (dynamo lifts parameters as inputs): no recompiling
    from torch._dynamo.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    assert graphs > 0  # the compiled run above made its graphs
    Trainer(config(compile=True, seed=5), rules, tmp_path / "again").run(progress=False)
    assert counters["stats"]["unique_graphs"] == graphs
    assert not all(torch.equal(x, y) for x, y in zip(params(eager), params(Trainer(config(), rules, tmp_path / "new"))))


def test_compiled_tanh_is_tanh_with_its_gradient(tmp_path, monkeypatch):
    """The tanh layers' faster formula under torch.compile is tanh, values and gradients, far into both tails."""
    from agents.training.actor_critic import Tanh

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    x = torch.cat([torch.linspace(-100, 100, 4001), torch.linspace(-1e-3, 1e-3, 101)]).requires_grad_(True)
    compiled = torch.compile(Tanh())
    y = compiled(x)
    (grad,) = torch.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(y.detach().numpy(), torch.tanh(x).detach().numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(grad.numpy(), (1 - torch.tanh(x) ** 2).detach().numpy(), rtol=0, atol=1e-6)
    assert torch.isfinite(y).all() and torch.isfinite(grad).all()
    assert torch.equal(Tanh()(x), torch.tanh(x))  # eager: torch's own tanh


def test_compile_falls_back_to_eager_with_one_warning(tmp_path, monkeypatch):
    """Where torch.compile cannot build its kernels (no C++ compiler), the run goes on eagerly, identical to an
    eager run, after one warning per compiled function."""
    import agents.training.actor_critic
    import agents.training.ppo

    def broken(target):
        def call(*args, **kwargs):
            raise RuntimeError("no C++ compiler found\nlong backtrace")

        return call

    monkeypatch.setattr(agents.training.actor_critic.torch, "compile", broken)
    monkeypatch.setattr(agents.training.ppo, "_compiled_loss", None)
    rules = load_rules("yacht")
    eager = Trainer(config(), rules, tmp_path / "eager")
    eager.run(progress=False)
    with pytest.warns(
        RuntimeWarning,
        match="torch.compile is not available here .RuntimeError: no C.. compiler found.; running eagerly",
    ) as caught:
        fallback = Trainer(config(compile=True), rules, tmp_path / "fallback")
        fallback.run(progress=False)
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 2  # the forward and the loss
    assert all(torch.equal(x, y) for x, y in zip(params(eager), params(fallback)))
