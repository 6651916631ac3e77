"""The batched torch trainers (agents/training/trainer.py, agents/training/ppo.py, agents/training/a2c.py) and their policies."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.policy.heads import PolicyHeads, PolicyOptions  # noqa: E402
from agents.policy.player import PolicyAgent, load_policy  # noqa: E402
from agents.training.actor_critic import ActorCritic  # noqa: E402
from agents.training.config import BATCHED_ALGORITHMS, section  # noqa: E402
from agents.training.rollout import Rollout  # noqa: E402
from agents.training.trainer import Trainer, evaluate, read_checkpoint  # noqa: E402
from dice_poker_env.engine.combinatorics import roll_index_of_counts  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.envs.observation import flat_layout  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def config(**overrides):
    """A tiny run of the algo's config section: 32 games x 8 steps per update, eager float32, the plain network.

    The hyper-parameters below are the tests' where the section takes them from its base; a default the section
    redeclares (its recipe: BatchedPQN's max_grad_norm, a new section's gae_lambda) stays the section's unless
    ``overrides`` names it.
    """
    size = dict(
        algo="batched_ppo",
        n_envs=32,
        n_steps=8,
        batch_size=64,
        n_epochs=2,
        net_arch=[32, 32],
        device="cpu",
        seed=0,
        total_timesteps=32 * 8 * 4,
        eval_freq=0,
        eval_episodes=10,
        checkpoint_freq=0,
        precision="float32",
        compile=False,
        box_points=0.0,
        keep_points=False,
    )
    hyper = dict(
        learning_rate=1e-3,
        lr_schedule="linear",
        gamma=1.0,
        gae_lambda=0.8,
        clip_range=0.2,
        ent_coef=0.001,
        vf_coef=0.5,
        max_grad_norm=0.5,
        activation="tanh",
        reward_scale=0.02,
        distinct_keeps=True,
        features=True,
    )
    cls = section(overrides.get("algo", size["algo"]))  # the algo's own section (a new algorithm needs nothing here)
    bases = [getattr(base, "__dataclass_fields__", {}) for base in cls.__mro__[1:]]
    redeclared = {name for name in vars(cls).get("__annotations__", {}) if any(name in fields for fields in bases)}
    values = {**size, **{k: v for k, v in hyper.items() if k not in redeclared}, **overrides}
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def test_the_config_helper_keeps_a_section_s_own_recipe(monkeypatch):
    """A new section redeclaring a default (its recipe) runs it in tests; the run's size is still the helper's."""
    from agents.training import config as config_module

    @dataclasses.dataclass
    class Recipe(config_module.BatchedPPO):
        gae_lambda: float = config_module.setting(0.5, "Lambda.")

    monkeypatch.setitem(config_module.SECTIONS, "my_algo", Recipe)
    made = config(algo="my_algo")
    assert type(made) is Recipe and made.gae_lambda == 0.5 and made.n_envs == 32 and made.learning_rate == 1e-3
    assert config(algo="my_algo", gae_lambda=0.7).gae_lambda == 0.7
    assert config().gae_lambda == 0.8  # a section that does not redeclare it: the tests' value


def test_an_algorithm_with_a_section_but_no_update_rule_says_where_to_name_it(monkeypatch, tmp_path):
    from agents.training import config as config_module

    monkeypatch.setitem(config_module.SECTIONS, "my_algo", config_module.BatchedPQN)
    with pytest.raises(
        ValueError,
        match=r"^algo 'my_algo' has a config section but no update rule: write update\(model, optimizer, batch, "
        r"config, generator\) in agents/training/my_algo.py$",
    ):
        Trainer(config(algo="my_algo"), load_rules("yacht"), tmp_path / "run")


def test_an_update_rule_of_another_signature_is_refused_before_the_run_starts(monkeypatch, tmp_path):
    import types

    from agents.training import config as config_module

    module = types.ModuleType("agents.training.my_algo")
    module.update = lambda model, optimizer, batch, config: {}  # (no generator)
    monkeypatch.setitem(sys.modules, "agents.training.my_algo", module)
    monkeypatch.setitem(config_module.SECTIONS, "my_algo", config_module.BatchedPPO)
    with pytest.raises(
        ValueError,
        match=r"^agents.training.my_algo.update must take \(model, optimizer, batch, config, generator\), not \(model, optimizer, batch, config\)$",
    ):
        Trainer(config(algo="my_algo"), load_rules("yacht"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def params(trainer: Trainer) -> list:
    return [p.detach().clone() for p in trainer.model.parameters()]


@pytest.mark.parametrize("algo", BATCHED_ALGORITHMS)  # every registered one: a new algorithm is checked too
def test_seeded_runs_reproduce_the_same_updates(tmp_path, algo):
    runs = []
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        trainer = Trainer(config(algo=algo, seed=seed), load_rules("yacht"), tmp_path / name)
        trainer.run(progress=False)
        runs.append(params(trainer))
    assert all(torch.equal(x, y) for x, y in zip(runs[0], runs[1]))  # same machine, same seed: same arithmetic
    assert not all(torch.equal(x, y) for x, y in zip(runs[0], runs[2]))


@pytest.mark.parametrize("algo", BATCHED_ALGORITHMS)  # (state an update keeps must live in the checkpoint)
def test_resume_continues_exactly_where_the_run_stopped(tmp_path, algo):
    rules = load_rules("yacht")
    straight = Trainer(config(algo=algo), rules, tmp_path / "straight")
    straight.run(progress=False)

    first = Trainer(config(algo=algo), rules, tmp_path / "split")
    assert first.run(progress=False, stop_at=32 * 8 * 2) is None  # interrupted after two updates
    checkpoint = first.save_checkpoint()
    resumed = Trainer(config(algo=algo), rules, tmp_path / "split")
    resumed.load_checkpoint(checkpoint)
    assert resumed.num_timesteps == 32 * 8 * 2
    resumed.run(progress=False)
    assert resumed.num_timesteps == straight.num_timesteps
    assert all(torch.equal(x, y) for x, y in zip(params(straight), params(resumed)))
    assert np.array_equal(straight.rollout.env.state.scores, resumed.rollout.env.state.scores)


def test_a_resumed_run_logs_each_evaluation_once(tmp_path):
    """Evaluations past the checkpoint (the run was killed later) are dropped, then made again: one row a step."""
    import csv

    rules, update = load_rules("yacht"), 32 * 8
    straight = Trainer(config(eval_freq=update, eval_episodes=4), rules, tmp_path / "straight")
    straight.run(progress=False)
    first = Trainer(config(eval_freq=update, eval_episodes=4), rules, tmp_path / "split")
    first.run(progress=False, stop_at=2 * update)
    checkpoint = first.save_checkpoint()
    first.run(progress=False, stop_at=3 * update)  # one more evaluation, then the run is killed
    resumed = Trainer(config(eval_freq=update, eval_episodes=4), rules, tmp_path / "split")
    resumed.load_checkpoint(checkpoint)
    resumed.run(progress=False)

    def rows(run):
        with (tmp_path / run / "evaluations.csv").open(newline="") as handle:
            return [(row["timesteps"], row["mean_score"]) for row in csv.DictReader(handle)]

    assert rows("split") == rows("straight") and len(rows("split")) == 4


def test_checkpoint_of_another_ruleset_or_algo_or_a_truncated_file_is_refused(tmp_path):
    trainer = Trainer(config(), load_rules("yacht"), tmp_path / "run")
    path = trainer.save_checkpoint()
    with pytest.raises(ValueError, match="algo 'batched_ppo'"):
        Trainer(config(algo="batched_a2c"), load_rules("yacht"), tmp_path / "other").load_checkpoint(path)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_checkpoint(truncated)


def test_a_checkpoint_of_other_rules_is_refused_even_under_the_same_name(tmp_path):
    """The checkpoint's rules are checked by fingerprint before anything loads: another ruleset is refused as
    such (not as a network that happens not to fit), and so is a custom ruleset that keeps the name "yacht"
    but changes the play (a yacht worth 40): its network would fit, but its games are not the checkpoint's."""
    yacht = load_rules("yacht")
    path = Trainer(config(), yacht, tmp_path / "run").save_checkpoint()
    custom_file = tmp_path / "my_yacht.toml"
    shipped = (ROOT / "dice_poker_env" / "rules" / "data" / "yacht.toml").read_text()
    custom_file.write_text(shipped.replace("points = 50", "points = 40"))
    custom = load_rules(custom_file)
    assert custom.name == yacht.name and custom.box_names == yacht.box_names
    assert custom.fingerprint != yacht.fingerprint
    for name, rules in (("yahtzee", load_rules("yahtzee")), ("custom", custom)):
        trainer = Trainer(config(), rules, tmp_path / name)
        with pytest.raises(ValueError, match=r"is of another ruleset \('yacht'\)"):
            trainer.load_checkpoint(path)
        assert trainer.updates == 0 and trainer.num_timesteps == 0


def same_state(a, b) -> bool:
    """Nested dicts/lists of tensors and plain values (a ``state_dict``) hold equal values."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(same_state, a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    return a == b


def test_a_load_that_fails_late_leaves_the_trainer_as_it_was(tmp_path, monkeypatch):
    """A checkpoint whose games fail to restore after the network, optimizer and generator were loaded: the
    load is refused and all three are rolled back, so nothing half-loaded trains on (Adam's moments of
    another run would move these weights)."""
    rules = load_rules("yacht")
    source = Trainer(config(), rules, tmp_path / "source")
    source.run(progress=False, stop_at=32 * 8)  # one update: trained weights, Adam's moments, a used generator
    path = source.save_checkpoint()
    trainer = Trainer(config(), rules, tmp_path / "target")
    weights, optimizer = params(trainer), copy.deepcopy(trainer.optimizer.state_dict())
    generator = trainer.generator.get_state().clone()
    assert not same_state(source.optimizer.state_dict(), optimizer)  # a load that stuck would show
    assert not all(torch.equal(x, y) for x, y in zip(params(source), weights))
    assert not torch.equal(source.generator.get_state(), generator)

    def broken(state):
        raise RuntimeError("the games do not fit")

    monkeypatch.setattr(trainer.rollout, "restore", broken)
    with pytest.raises(ValueError, match=r"does not fit this run \(RuntimeError: the games do not fit\)"):
        trainer.load_checkpoint(path)
    assert all(torch.equal(x, y) for x, y in zip(params(trainer), weights))
    assert same_state(trainer.optimizer.state_dict(), optimizer)
    assert torch.equal(trainer.generator.get_state(), generator)
    assert trainer.updates == 0 and trainer.num_timesteps == 0


@pytest.mark.parametrize("counter", ["updates", "best", "train_seconds"])
def test_a_checkpoint_whose_counter_is_a_bool_is_refused(tmp_path, counter):
    """A checkpoint's counters are numbers; ``True`` is an int to Python but no count, so a checkpoint
    holding one (hand-edited, or written by a bug) is refused rather than resumed from."""
    rules = load_rules("yacht")
    source = Trainer(config(), rules, tmp_path / "run")
    if counter == "best":
        source.evaluation.best = True
    else:
        setattr(source, counter, True)
    path = source.save_checkpoint()
    trainer = Trainer(config(), rules, tmp_path / "other")
    with pytest.raises(ValueError, match=r"counters \[.*True.*\] are not numbers"):
        trainer.load_checkpoint(path)
    assert trainer.updates == 0 and trainer.train_seconds == 0.0


def test_a_checkpoint_whose_tensors_unpack_past_the_limit_is_refused_before_it_is_read(tmp_path):
    """A checkpoint is torch's archive behind a checksum anyone can recompute: a member declaring 1.2 GB of
    deflated zeros is refused before torch reads it."""
    import hashlib
    import io
    import zipfile

    from agents.training.trainer import CHECKPOINT_MAGIC

    path = Trainer(config(), load_rules("yacht"), tmp_path / "run").save_checkpoint()
    payload = io.BytesIO(path.read_bytes()[len(CHECKPOINT_MAGIC) + 65 :])
    with zipfile.ZipFile(payload, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("archive/data/99", "w", force_zip64=True) as member:
            for _ in range(70):
                member.write(bytes(1 << 24))
    body = payload.getvalue()
    bomb = tmp_path / "bomb.pt"
    bomb.write_bytes(CHECKPOINT_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    with pytest.raises(
        ValueError, match=r"not a checkpoint file: it unpacks to 1,17[\d,]+ bytes, more than a checkpoint"
    ):
        read_checkpoint(bomb)


def test_a_checkpoint_array_that_is_a_view_of_fewer_bytes_is_refused_unread():
    """A checkpoint's array entry holds its bytes as a uint8 tensor; one stored as a one-byte tensor expanded
    to a billion (torch keeps the stride, the file stays small) would be written out whole by ``tobytes``:
    refused before."""
    from agents.training.trainer import from_plain

    entry = {"__ndarray__": "uint8", "shape": [10**9], "data": torch.zeros(1, dtype=torch.uint8).expand(10**9)}
    with pytest.raises(ValueError, match="a view of fewer bytes"):
        from_plain({"array": entry})
    plain = {
        "__ndarray__": "int64",
        "shape": [2],
        "data": torch.tensor([1, 0, 0, 0, 0, 0, 0, 0] * 2, dtype=torch.uint8),
    }
    assert from_plain(plain).tolist() == [1, 1]


@pytest.mark.parametrize("rules_name", ["yacht", "yahtzee", "school_poker"])
def test_rollouts_only_take_legal_actions(rules_name):
    rules = load_rules(rules_name)
    rollout = Rollout(rules, 64, 64, seed=3)
    model = ActorCritic(PolicyHeads(rules), [16])
    torch.nn.init.normal_(model.actor[-1].weight, std=3.0)  # a peaked policy: wants illegal actions often
    for _ in range(4):
        batch = rollout.collect(model)
        taken_legal = batch.masks.gather(1, batch.actions[:, None])
        assert bool(taken_legal.all())
    assert rollout.illegal == 0
    assert len(rollout.take_scores()) > 0  # games ended on the way


def test_par_chance_is_the_binomial_chance_of_the_open_boxes():
    """The par model: each open upper box scores its face times a Binomial(5, 0.6) count (three on average)."""
    from agents.policy.bonus import PAR_ONE_DIE, par_chance, par_points

    rules = load_rules("yahtzee")
    chance = par_chance(rules)
    sixes_only = 1 << 5  # bit j: the j-th upper box open
    p = 0.6  # each die shows the face with chance 0.6: three of five on average, the par
    assert PAR_ONE_DIE == pytest.approx(p)
    assert chance[sixes_only, 12] == pytest.approx(1 - (1 - p) ** 5 - 5 * p * (1 - p) ** 4)
    assert chance[sixes_only, 31] == 0.0  # five sixes make 30
    assert chance[0b111111, 1] == pytest.approx(1.0)
    assert chance.shape == (64, 64) and (np.diff(chance, axis=1) <= 1e-12).all()  # needing more is never likelier
    assert sum(par_points(box) for box in rules.boxes) == 63  # the threshold is built on the par
    with pytest.raises(ValueError, match="par model needs an upper bonus"):
        par_chance(load_rules("school_poker"))


@pytest.mark.parametrize(
    "algo, box_points, keep_points, bonus",
    [
        ("batched_ppo", 0.0, False, False),
        ("batched_ppo", 4.0, False, False),
        ("batched_ppo", 4.0, True, False),
        ("batched_ppo", 0.0, True, False),
        ("batched_ppo", 4.0, True, True),
        ("batched_ppo", 4.0, True, "par"),
        ("batched_pqn", 0.0, False, False),  # the Q-network: LayerNorm in its hidden layers
        # every registered algorithm's network (its own NETWORK, network_options): a new one is checked too
        *((algo, 1.0, True, "par") for algo in BATCHED_ALGORITHMS),
    ],
)
def test_policy_file_plays_the_torch_networks_greedy_action(tmp_path, algo, box_points, keep_points, bonus):
    rules = load_rules("yahtzee")
    trainer = Trainer(
        config(
            algo=algo,
            net_arch=[64, 64],
            box_points=box_points,
            keep_points=keep_points,
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
        rollout.collect(ActorCritic(PolicyHeads(rules), [8]))
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
        kb = agent.heads.keep_bonus
        terms, _ = kb.terms(
            kb, roll_index_of_counts(obs[:, :6] * 5), np.rint(obs[:, upper.start] * 63), 1.0 - obs[:, 9 + kb.upper]
        )
        assert (terms > 0).any(axis=(1, 2)).mean() > 0.5
    _, metadata = load_policy(path)
    assert metadata["rules_fingerprint"] == rules.fingerprint and metadata["features"] is True
    assert "keep_head" not in metadata and metadata["box_points"] == box_points
    assert metadata.get("layer_norm", False) is (algo == "batched_pqn") is agent.layer_norm
    assert path.stat().st_size < 2 * 1024 * 1024
    if box_points:  # the learnt per-box weights travel with the file; without them the file is refused
        weights, metadata = load_policy(path)
        np.testing.assert_array_equal(weights["box_points_w"], trainer.model.box_points_w.detach().numpy())
        del weights["box_points_w"]
        with pytest.raises(ValueError, match="box_points_w"):
            PolicyAgent(weights, metadata, rules)
    assert metadata["keep_points"] is keep_points
    assert "keep_points_rerolls" not in metadata
    assert metadata.get("keep_points_bonus", False) == bonus
    if bonus:  # a mode the player does not know is refused, not played as another
        weights, metadata = load_policy(path)
        with pytest.raises(ValueError, match="keep_points_bonus must be true or par"):
            PolicyAgent(weights, {**metadata, "keep_points_bonus": "parr"}, rules)
    # the retired options: recorded "off" (as earlier versions did) the file plays; recorded on, a one-line error
    weights, metadata = load_policy(path)
    PolicyAgent(weights, {**metadata, "keep_head": 0, "keep_points_rerolls": 1}, rules)
    for retired, value in (("keep_head", 64), ("keep_points_rerolls", 2)):
        with pytest.raises(ValueError, match=rf"{retired}={value} was retired") as refused:
            PolicyAgent(weights, {**metadata, retired: value}, rules)
        assert "\n" not in str(refused.value)
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
    """keep_points_bonus=par: writing an upper box adds the change in the par potential phi (the bonus's points
    times the par chance of reaching it) beyond the bonus its points already hold; a keep adds that change
    averaged over every sequence of the rerolled dice (naive scorer) plus the bonus where the box reaches it."""
    import itertools

    from naive_rules import NAIVE

    from agents.policy.bonus import par_chance
    from agents.policy.inputs import KeepBonus
    from dice_poker_env.engine.combinatorics import ROLL_DICE

    rules = load_rules(rules_name)
    tables = compile_rules(rules)
    scale = 50.0
    kb, chance = KeepBonus(rules, par=True), par_chance(rules)
    upper_boxes = [box for box in rules.boxes if box.section == "upper"]
    threshold, bonus = tables.upper_bonus_threshold, tables.upper_bonus_points

    def potential(total: int, upper_open: np.ndarray) -> float:
        """The bonus's points times the par chance that the open upper boxes bring the points needed."""
        needed = threshold - total
        mask = int((upper_open.astype(np.int64) << np.arange(len(upper_open))).sum())
        return bonus * chance[mask, needed] if needed > 0 else 0.0

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
        rollout.collect(ActorCritic(PolicyHeads(rules), [16]))
    x = torch.from_numpy(rollout.current_inputs)
    plain = ActorCritic(PolicyHeads(rules), [32])
    table = keep_expected_points(rules)
    model = ActorCritic(PolicyHeads(rules, PolicyOptions(keep_points=True)), [32])
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
    with pytest.raises(ValueError, match="keep_points_bonus needs keep_points"):
        PolicyOptions(keep_points_bonus="par")


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
    plain = ActorCritic(PolicyHeads(rules), [32])
    boosted = ActorCritic(PolicyHeads(rules, PolicyOptions(box_points=4.0)), [32])
    boosted.actor.load_state_dict(plain.actor.state_dict())
    with torch.no_grad():
        difference = (boosted.actor_logits(x) - plain.actor_logits(x)).numpy()
    np.testing.assert_allclose(difference[:, :N_KEEP_ACTIONS], 0.0, atol=1e-6)  # keeps untouched
    np.testing.assert_allclose(
        difference[:, N_KEEP_ACTIONS:], 4.0 * rollout.current_inputs[:, points], rtol=1e-5, atol=1e-6
    )
    assert np.abs(difference).max() > 0.5  # some rolls score points now
    for bad in (-1.0, float("nan"), True):
        with pytest.raises(ValueError, match="box_points must be a non-negative number"):
            PolicyOptions(box_points=bad)


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
    # any field of the algorithm's section is the checkpoint's (not only those a list names): refused, nothing written
    changed = subprocess.run(
        [*command, "--resume", "total_timesteps=8192", "critic_warmup=3"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert changed.returncode == 2 and "critic_warmup=3 differs from the run's critic_warmup=0" in changed.stderr
    assert json.loads((run / "results.json").read_text())["timesteps"] == 6144
    # a checkpoint path alone goes on in its own run (no new folder), overrides may follow the options; a total
    # that is not a multiple of checkpoint_freq is checkpointed at its end, so the next resume starts there
    again = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "total_timesteps=10240", "--resume",
         str(run / "checkpoints" / "model_6144_steps.pt"), "checkpoint_freq=4096"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert "model_10240_steps.pt" in {p.name for p in (run / "checkpoints").iterdir()}
    assert json.loads((run / "results.json").read_text())["timesteps"] == 10240
    policy = subprocess.run(  # a policy file is not a checkpoint: said so, not "an older format"
        [sys.executable, str(ROOT / "train.py"), "--run-dir", str(run), "--resume", str(run / "final_model.npz")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert policy.returncode == 2 and "a policy or model file, not a checkpoint" in policy.stderr, policy.stderr


def test_a_run_without_a_benchmark_is_refused_with_a_fix_that_works(tmp_path):
    """Trained with bench_games=0: resuming adds the benchmark only where a checkpoint is left to resume."""
    from agents.evaluation import results as results_module

    run = tmp_path / "yacht__batched_ppo__s0"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"rules": "yacht", "percent_of_optimal": None}))
    with pytest.raises(SystemExit, match="no checkpoint to resume and benchmark: train it again"):
        results_module.main([str(run), "--out", str(tmp_path / "out")])
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "model_4096_steps.pt").write_bytes(b"")
    with pytest.raises(SystemExit, match=f"python train.py --run-dir {run} --resume bench_games=2000"):
        results_module.main([str(run), "--out", str(tmp_path / "out")])


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
    assert rows[0]["percent_of_optimal_iqm_ci95"] is None and rows[0]["percent_of_optimal_mean_ci95"] is None
    assert results_module.interval_text(rows[0]) == "range 90.00-92.00, 3 seeds: too few for an interval"
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

    # another group aggregated beside this one, and sorting first: this group's row does not move
    interval, extras = rows[0]["percent_of_optimal_iqm"], []
    for seed, percent in ((5, 70.0), (6, 95.0), (7, 80.0)):
        extras.append(tmp_path / "other" / f"yacht__batched_ppo__s{seed}")
        extras[-1].mkdir(parents=True)
        text = (runs[0] / "results.json").read_text().replace('"seed": 0', f'"seed": {seed}')
        text = text.replace('"percent_of_optimal": 90.0', f'"percent_of_optimal": {percent}')
        (extras[-1] / "results.json").write_text(text.replace('"recipe": "r1"', '"recipe": "a0"'))
    both = results_module.main([*map(str, runs + extras), "--out", str(tmp_path / "both"), "--reps", "200"])
    assert [r["group"] for r in both] == ["a0", "r1"] and both[1]["percent_of_optimal_iqm"] == interval

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


def test_the_fields_seeds_of_one_recipe_may_differ_in_are_those_a_resume_may_change():
    """A run resumed with another eval_freq (allowed) must still join its recipe's group: the two lists agree
    (the evaluation layer cannot import the training one's)."""
    from agents.evaluation.results import HOW_IT_RAN
    from agents.training.run import RESUME_MAY_CHANGE

    assert HOW_IT_RAN == RESUME_MAY_CHANGE - {"total_timesteps", "bc_epochs", "bench_games", "recipe"}


def test_results_refuse_a_group_that_is_not_one_recipes_seeds(tmp_path):
    """A researcher's runs joined the published "batched_ppo" row of yacht and replaced it (seeds 0, 1, 2 became
    0, 0, 0: one run given twice and a run at another budget): a seed twice, runs of another budget, benchmark or
    algorithm, two runs of one name, and a group that would replace a row recorded without its runs are refused
    before anything is copied."""
    pytest.importorskip("rliable")
    from agents.evaluation import results as results_module

    def run(folder: str, seed: int, steps: int = 1000, bench: int = 100, recipe: str = "r1", **config) -> str:
        path = tmp_path / folder
        path.mkdir(parents=True)
        (path / "results.json").write_text(
            json.dumps(
                {
                    "rules": "yacht",
                    "algorithm": "batched_ppo",
                    "percent_of_optimal": 90.0 + seed,
                    "mean": 150.0,
                    "median": 150.0,
                    "timesteps": steps,
                    "train_seconds": 60.0,
                    "bench_games": bench,
                    "config": {
                        "seed": seed,
                        "recipe": recipe,
                        "total_timesteps": steps,
                        "algo": "batched_ppo",
                        "learning_rate": 0.002,
                        "device": "cpu",
                        **config,
                    },
                }
            )
        )
        return str(path)

    out = tmp_path / "results"
    a, b = run("a/s0", 0), run("b/s1", 1)
    results_module.main([a, b, "--out", str(out), "--reps", "50"])
    table = (out / "training.json").read_text()
    for given, message in [
        ([run("c/again0", 0)], r"group 'r1' would hold seed 0 more than once \(s0, again0\)"),
        ([run("d/s2", 2, steps=5000)], r"would mix runs of different total_timesteps \(s0 1000, s1 1000, s2 5000\)"),
        ([run("e/s3", 3, bench=2000)], "would mix runs of different bench_games"),
        # another hyper-parameter under the same label (the default one: the algo) is another recipe, not a seed
        ([run("j/s3", 3, learning_rate=0.0001)], r"would mix runs of different learning_rate \(s0 0.002, s1 0.002"),
        ([run("f/s4", 4, recipe="r2"), run("g/s4", 5, recipe="r2")], "share the name s4"),
    ]:
        with pytest.raises(SystemExit, match=message):
            results_module.main([*given, "--out", str(out), "--reps", "50"])
        assert (out / "training.json").read_text() == table  # nothing copied, nothing rewritten
        assert sorted(p.name for p in (out / "runs" / "yacht").iterdir()) == ["s0", "s1"]
    # how a run ran is not its recipe: a seed trained on another device joins the group
    rows = results_module.main([run("k/s6", 6, device="cuda"), "--out", str(out), "--reps", "50"])
    assert [(r["group"], r["seeds"]) for r in rows] == [("r1", [0, 1, 6])]
    # a row recorded without its runs (a fresh clone): joining its group would replace it
    shutil.rmtree(out / "runs")
    with pytest.raises(SystemExit, match=r"would join the group 'r1' of yacht, a row of .* \(seeds \[0, 1, 6\]\)"):
        results_module.main([run("h/s7", 7), "--out", str(out), "--reps", "50"])
    rows = results_module.main([run("i/s8", 8), "--out", str(out), "--reps", "50", "--group", "mine"])
    assert [(r["group"], r["seeds"]) for r in rows] == [("mine", [8]), ("r1", [0, 1, 6])]
    again = results_module.main([a, "--out", str(tmp_path / "again"), "--reps", "50"])  # a run collected again: fine
    assert results_module.main([a, "--out", str(tmp_path / "again"), "--reps", "50"]) == again


def test_results_iqm_and_mean_are_each_their_own_statistic():
    """One seed far below the others: the IQM (of five runs: the middle three) ignores it, the mean does not,
    so each column holds its own statistic and each interval surrounds its own point; another group
    aggregated beside it moves neither interval (each group's bootstrap is seeded on its own)."""
    pytest.importorskip("rliable")
    from agents.evaluation import results as results_module

    runs = [
        {
            "name": f"yacht__batched_ppo__s{seed}",
            "rules": "yacht",
            "group": "r1",
            "seed": seed,
            "results": {
                "percent_of_optimal": percent,
                "mean": percent * 1.7,
                "median": percent * 1.7,
                "timesteps": 1000,
                "train_seconds": 60.0,
            },
            "curve": None,
        }
        for seed, percent in ((0, 50.0), (1, 90.0), (2, 91.0), (3, 92.0), (4, 93.0))
    ]
    (row,) = results_module.aggregate(runs, reps=200)
    assert row["percent_of_optimal_mean"] == pytest.approx(83.2)
    assert row["percent_of_optimal_iqm"] == pytest.approx(91.0)  # (90 + 91 + 92) / 3
    for key, point in (("iqm", 91.0), ("mean", 83.2)):
        low, high = row[f"percent_of_optimal_{key}_ci95"]
        assert 50.0 <= low <= point <= high <= 93.0, key
    assert results_module.interval_text(row).startswith("95% CI ")
    others = [
        dict(run, group="a0", results={**run["results"], "percent_of_optimal": 70.0 + run["seed"]}) for run in runs
    ]
    both = {r["group"]: r for r in results_module.aggregate(others + runs, reps=200)}
    assert both["r1"]["percent_of_optimal_iqm_ci95"] == row["percent_of_optimal_iqm_ci95"]


def _result_run(seed: int, percent: float, **results) -> dict:
    """One run as agents.evaluation.results.load_runs gives it to aggregate."""
    base = {"percent_of_optimal": percent, "mean": 170.0, "median": 170.0, "timesteps": 1000, "train_seconds": 60.0}
    return {
        "name": f"yacht__batched_ppo__s{seed}",
        "rules": "yacht",
        "group": "r1",
        "seed": seed,
        "results": base | results,
        "curve": None,
    }


def test_results_rows_list_seeds_in_order_with_the_sample_std_and_no_regret_interval_for_a_missing_regret():
    """A row lists its seeds in order whatever the order of the runs, its std is the sample's (ddof 1), and a
    run that reports no regret leaves the regret's interval out (the mean is the others')."""
    pytest.importorskip("rliable")
    from agents.evaluation import results as results_module

    (row,) = results_module.aggregate([_result_run(2, 91.0), _result_run(0, 90.0), _result_run(1, 92.0)], reps=50)
    assert row["seeds"] == [0, 1, 2] and row["per_seed_percent"] == [90.0, 92.0, 91.0]
    assert row["runs"] == [f"yacht__batched_ppo__s{seed}" for seed in (0, 1, 2)]
    assert row["percent_of_optimal_std"] == pytest.approx(1.0)
    runs = [_result_run(seed, 90.0 + seed, regret_mean=2.0 + seed) for seed in range(4)] + [_result_run(4, 94.0)]
    (row,) = results_module.aggregate(runs, reps=50)
    assert row["regret_mean"] == pytest.approx(3.5) and row["regret_mean_ci95"] is None
    assert row["percent_of_optimal_iqm_ci95"] is not None


def test_results_mean_curve_keeps_the_steps_every_seed_has_and_an_interval_needs_enough_seeds():
    """The mean learning curve is taken at the steps all seeds share; a row with an interval but fewer than
    MIN_SEEDS_FOR_INTERVAL seeds (a hand-made or older row) shows the seeds' range, not the interval."""
    from agents.evaluation import results as results_module

    curve = results_module.mean_curve([[(500, 80.0, 1.0), (1000, 90.0, 2.0)], [(1000, 92.0, 2.0), (1500, 95.0, 3.0)]])
    assert curve == {"seeds": 2, "timesteps": [1000], "mean": [91.0], "min": [90.0], "max": [92.0]}
    assert results_module.mean_curve([[(500, 80.0, 1.0)], [(1000, 92.0, 2.0)]]) is None
    row = {"seeds": [0, 1, 2], "per_seed_percent": [90.0, 91.0, 92.0], "percent_of_optimal_iqm_ci95": [89.0, 93.0]}
    assert results_module.interval_text(row) == "range 90.00-92.00, 3 seeds: too few for an interval"


def test_results_load_runs_leaves_out_evaluations_without_a_percent_of_optimal(tmp_path):
    """An evaluations.csv row without a percent of optimal (an evaluation in raw scores) is not a curve point."""
    from agents.evaluation import results as results_module

    run = tmp_path / "runs" / "yacht" / "yacht__batched_ppo__s0"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({"rules": "yacht", "algorithm": "batched_ppo", "config": {"seed": 0}}))
    (run / "evaluations.csv").write_text(
        "timesteps,mean_score,std_score,percent_of_optimal,seconds\n500,1,1,,1\n1000,1,1,91.5,2\n"
    )
    (loaded,) = results_module.load_runs(tmp_path)
    assert loaded["curve"] == [(1000, 91.5, 2.0)] and loaded["group"] == "batched_ppo" and loaded["seed"] == 0


def test_results_main_refuses_a_bad_group_label_and_a_table_of_rows_without_rules_and_group(tmp_path, capsys):
    """``--group`` is one line without '/' (it names a folder's label), refused by the argument parser; a
    training.json whose rows lack ``rules`` or ``group`` is not a results table and is left as it was."""
    from agents.evaluation import results as results_module

    out = tmp_path / "results"
    for label in ("a/b", "  ", "two\nlines"):
        with pytest.raises(SystemExit) as raised:
            results_module.main(["--group", label, "--out", str(out)])
        assert raised.value.code == 2 and "--group must be a non-empty one-line label" in capsys.readouterr().err
    out.mkdir()
    (out / "training.json").write_text('[{"rules": "yacht"}]')
    with pytest.raises(SystemExit, match="is not a results table"):
        results_module.main(["--out", str(out)])
    assert (out / "training.json").read_text() == '[{"rules": "yacht"}]'


def test_results_regenerated_twice_keep_one_row_per_group(tmp_path):
    """A group whose runs are present replaces its row of the previous training.json instead of adding to it."""
    pytest.importorskip("rliable")
    from agents.evaluation import results as results_module

    run = tmp_path / "yacht__batched_ppo__s0"
    run.mkdir()
    results = _result_run(0, 90.0)["results"] | {"rules": "yacht", "algorithm": "batched_ppo", "config": {"seed": 0}}
    (run / "results.json").write_text(json.dumps(results))
    (run / "evaluations.csv").write_text("timesteps,mean_score,std_score,percent_of_optimal,seconds\n1000,1,1,90,2\n")
    out = tmp_path / "results"
    first = results_module.main([str(run), "--out", str(out), "--reps", "50"])
    again = results_module.main(["--out", str(out), "--reps", "50"])
    assert [r["group"] for r in first] == [r["group"] for r in again] == ["batched_ppo"]
    assert len(json.loads((out / "training.json").read_text())) == 1


def test_bfloat16_precision_trains_and_plays_through_the_float32_policy_file(tmp_path):
    rules = load_rules("yacht")
    trainer = Trainer(config(precision="bfloat16"), rules, tmp_path / "run")
    trainer.run(progress=False)
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())  # autocast: weights stay float32
    scores = evaluate(trainer.agent(), rules, 20, seed=1)
    assert scores.shape == (20,) and (scores >= 0).all()


@pytest.mark.parametrize(
    "path",
    [
        # dice_poker's policy plays its 10,000 games in 107 s on 2 shared vCPUs: a slow check
        pytest.param(p, marks=pytest.mark.slow) if p.stem == "dice_poker" else p
        for p in sorted((ROOT / "agents" / "policies").glob("*.npz"))
    ],
    ids=lambda p: p.stem,
)
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
    """No class of this package is pickled into a checkpoint, so moving or renaming modules keeps runs resumable;
    and nothing but tensors and plain data: the file reads under ``torch.load(weights_only=True)``."""
    import io
    import pickletools
    import zipfile

    from agents.training.trainer import CHECKPOINT_MAGIC

    trainer = Trainer(config(), load_rules("yacht"), tmp_path / "run")
    trainer.run(progress=False, stop_at=32 * 8)
    data = trainer.save_checkpoint().read_bytes()
    assert data.startswith(CHECKPOINT_MAGIC)
    payload = data[len(CHECKPOINT_MAGIC) + 65 :]
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        pickled = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    globals_ = {arg for op, arg, _ in pickletools.genops(pickled) if isinstance(arg, str) and "." in arg}
    assert not any("dice_poker_env" in name or "agents" in name or "numpy" in name for name in globals_), globals_
    torch.load(io.BytesIO(payload), weights_only=True)  # raises on anything but tensors and plain data


def test_a_checkpoint_with_one_byte_changed_is_refused_in_one_line(tmp_path):
    trainer = Trainer(config(), load_rules("yacht"), tmp_path / "run")
    path = trainer.save_checkpoint()
    data = bytearray(path.read_bytes())
    for position in (len(data) // 2, len(data) - 1):
        flipped = tmp_path / f"flipped{position}.pt"
        changed = bytearray(data)
        changed[position] ^= 0x01
        flipped.write_bytes(bytes(changed))
        with pytest.raises(ValueError, match="checksum") as info:
            read_checkpoint(flipped)
        assert "\n" not in str(info.value)


def test_a_malicious_checkpoint_runs_no_code(tmp_path):
    """A checkpoint whose pickle would create a file when unpickled (with a valid checksum, as an attacker
    writes it): refused, and the file is never created."""
    import hashlib
    import io
    import os

    from agents.training.trainer import CHECKPOINT_MAGIC

    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    trainer = Trainer(config(), load_rules("yacht"), tmp_path / "run")
    state = trainer.state_dict()
    for where in ("top", "rollout"):
        evil = dict(state, rollout=dict(state["rollout"], env=Payload())) if where == "rollout" else dict(state)
        if where == "top":
            evil["payload"] = Payload()
        buffer = io.BytesIO()
        torch.save(evil, buffer)
        payload = buffer.getvalue()
        for name, data in (
            ("new.pt", CHECKPOINT_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload),
            ("old.pt", payload),  # format 1: a bare torch.save file
        ):
            path = tmp_path / name
            path.write_bytes(data)
            with pytest.raises(ValueError, match="corrupt|older format"):
                read_checkpoint(path)
            with pytest.raises(ValueError):
                Trainer(config(), load_rules("yacht"), tmp_path / "other").load_checkpoint(path)
    assert not marker.exists()


def test_precision_auto_picks_bfloat16_only_where_the_cpu_has_bf16_units(monkeypatch):
    from agents.training import actor_critic

    monkeypatch.setattr(actor_critic, "cpu_has_bf16_units", lambda: False)
    assert actor_critic.resolve_precision("auto") == "float32"
    monkeypatch.setattr(actor_critic, "cpu_has_bf16_units", lambda: True)
    assert actor_critic.resolve_precision("auto") == "bfloat16"
    assert ActorCritic(PolicyHeads(load_rules("yacht")), [4], precision="auto").precision == "bfloat16"
    assert actor_critic.resolve_precision("float32") == "float32"
    with pytest.raises(ValueError, match="precision must be one of"):
        actor_critic.resolve_precision("float16")


@pytest.mark.slow  # torch.compile builds C++ kernels for the CPU backend: 158 s on 2 shared vCPUs
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


def _assert_is_tanh(layer) -> None:
    """``layer`` is tanh, values and gradients, far into both tails."""
    x = torch.cat([torch.linspace(-100, 100, 4001), torch.linspace(-1e-3, 1e-3, 101)]).requires_grad_(True)
    y = layer(x)
    (grad,) = torch.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(y.detach().numpy(), torch.tanh(x).detach().numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(grad.numpy(), (1 - torch.tanh(x) ** 2).detach().numpy(), rtol=0, atol=1e-6)
    assert torch.isfinite(y).all() and torch.isfinite(grad).all()


def test_the_tanh_formula_is_tanh_with_its_gradient():
    """The formula the tanh layers run under torch.compile (its autograd function, called eagerly here), and the
    eager layer, which is torch's own tanh."""
    from agents.training.actor_critic import Tanh, _CompiledTanh

    _assert_is_tanh(_CompiledTanh.apply)
    x = torch.linspace(-5, 5, 101)
    assert torch.equal(Tanh()(x), torch.tanh(x))


@pytest.mark.slow  # torch.compile builds C++ kernels for the CPU backend: about 30 s
def test_compiled_tanh_is_tanh_with_its_gradient(tmp_path, monkeypatch):
    """The tanh layer under torch.compile (where it takes the formula) is tanh."""
    from agents.training.actor_critic import Tanh

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    _assert_is_tanh(torch.compile(Tanh()))


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


def test_init_policy_is_read_for_a_new_run_only_and_null_clears_it(tmp_path):
    """A resumed run's checkpoint holds the actor: its init_policy (maybe a relative path from another folder)
    is not read again; ``init_policy=null`` is the empty default (it was refused as "expects str")."""
    from agents.training.config import make_config

    rules = load_rules("yacht")
    missing = config(init_policy="no/such/policy.npz")
    with pytest.raises(FileNotFoundError):
        Trainer(missing, rules, tmp_path / "a")
    assert Trainer(missing, rules, tmp_path / "b", resuming=True).num_timesteps == 0
    assert make_config({"algo": "batched_ppo", "rules": "yacht"}, ["init_policy=null"]).init_policy == ""


def test_the_progress_bar_counts_the_steps_the_run_will_train(tmp_path, monkeypatch):
    """Whole rollouts: total_timesteps=300 of 256-step rollouts trains 512 steps, and the bar's total says so."""
    tqdm = pytest.importorskip("tqdm")
    bars = []

    class Bar:
        def __init__(self, total, initial, **kwargs):
            bars.append(self)
            self.total, self.n = total, initial

        def update(self, steps):
            self.n += steps

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    trainer = Trainer(config(total_timesteps=300), load_rules("yacht"), tmp_path / "run")
    trainer.run(progress=True)
    assert trainer.num_timesteps == 512 and bars[0].total == 512 and bars[0].n == 512
