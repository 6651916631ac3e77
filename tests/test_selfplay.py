"""Self-play for the win (agents/training/selfplay.py): two-player tables, one policy in both seats, paid for winning."""

from __future__ import annotations

import csv

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_trainer import config, params  # noqa: E402

from agents.evaluation.match import play_deals  # noqa: E402
from agents.players.greedy import GreedyAgent  # noqa: E402
from agents.policy.heads import PolicyHeads, PolicyOptions  # noqa: E402
from agents.policy.player import PolicyAgent, load_policy, save_policy, shipped_policy  # noqa: E402
from agents.training.actor_critic import ActorCritic  # noqa: E402
from agents.training.config import make_config  # noqa: E402
from agents.training.selfplay import PLAYERS, SelfPlayRollout  # noqa: E402
from agents.training.trainer import Trainer, from_plain, to_plain  # noqa: E402
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.multi.rewards import final_rewards  # noqa: E402
from dice_poker_env.rules import load_rules  # noqa: E402

YACHT = load_rules("yacht")


def small_model(rules=YACHT, **options) -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(PolicyHeads(rules, PolicyOptions(players=2, **options)), [32, 32])


def collect(n_envs=8, n_steps=96, gae_lambda=0.8, seed=3):
    rollout = SelfPlayRollout(YACHT, n_envs, n_steps, seed, gae_lambda=gae_lambda)
    model = small_model()
    batch = rollout.collect(model)
    last = np.stack(
        [
            model.value(*(torch.from_numpy(a) for a in rollout._observe(np.full(n_envs, seat)))).detach().numpy()
            for seat in range(PLAYERS)
        ],
        axis=1,
    )
    return rollout, batch, last


def naive_advantages(rollout: SelfPlayRollout, last: np.ndarray) -> np.ndarray:
    """GAE along each (table, seat)'s own decisions, written out one trajectory at a time."""
    T, N = rollout.n_steps, rollout.n_envs
    seats, dones, rewards = rollout._seats, rollout._dones, rollout._rewards
    values = rollout._values.numpy()
    out = np.zeros((T, N))
    for i in range(N):
        for s in range(PLAYERS):
            steps = [t for t in range(T) if seats[t, i] == s]
            running = 0.0
            for k in reversed(range(len(steps))):
                t = steps[k]
                until = steps[k + 1] if k + 1 < len(steps) else T
                ends = [u for u in range(t, until) if dones[u, i]]
                assert len(ends) <= 1  # a seat decides in every game
                if ends:
                    reward, next_value, live = rewards[ends[0], i, s], 0.0, 0.0
                else:
                    reward, live = 0.0, 1.0
                    next_value = values[until, i] if until < T else last[i, s]
                delta = reward + next_value * live - values[t, i]
                running = delta + rollout.gae_lambda * live * running
                out[t, i] = running
    return out


def test_advantages_run_along_each_seats_own_decisions():
    rollout, batch, last = collect()
    assert rollout._dones.any()  # games ended inside the rollout: the end's rewards and cuts are exercised
    expected = naive_advantages(rollout, last)
    got = batch.advantages.numpy().reshape(rollout.n_steps, rollout.n_envs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batch.returns.numpy(), batch.advantages.numpy() + batch.values.numpy(), atol=1e-6)


def test_seats_take_turns_and_each_game_pays_the_win_reward():
    rollout, batch, _ = collect(n_envs=6, n_steps=200)
    tables = compile_rules(YACHT)
    actions = batch.actions.numpy().reshape(rollout.n_steps, rollout.n_envs)
    for i in range(rollout.n_envs):
        boxes = np.zeros(PLAYERS, dtype=int)  # boxes written in the current game
        seat = rollout._seats[0, i]
        for t in range(rollout.n_steps):
            assert rollout._seats[t, i] == seat
            assert batch.masks.numpy().reshape(rollout.n_steps, rollout.n_envs, -1)[t, i, actions[t, i]]
            scored = actions[t, i] >= N_KEEP_ACTIONS
            boxes[seat] += scored
            if rollout._dones[t, i]:
                assert seat == 1 and (t == 0 or boxes.tolist() == [tables.n_boxes] * 2 or boxes[1] == tables.n_boxes)
                result = rollout._rewards[t, i]
                assert sorted(result.tolist()) in ([-1.0, 1.0], [0.0, 0.0])
                boxes[:] = 0
                seat = 0
            else:
                assert not rollout._rewards[t, i].any()
                seat = (seat + 1) % PLAYERS if scored else seat
    totals = np.concatenate(rollout.scores).reshape(-1, PLAYERS)
    assert len(totals) == rollout._dones.sum()
    for pair in totals:  # the results are the multi-player env's win rewards
        assert sorted(final_rewards(pair, "win").tolist()) in ([-1.0, 1.0], [0.0, 0.0])


def test_restored_rollout_continues_exactly():
    model = small_model()
    straight = SelfPlayRollout(YACHT, 4, 40, 5)
    straight.collect(model)
    expected = straight.collect(model)
    split = SelfPlayRollout(YACHT, 4, 40, 5)
    split.collect(model)
    state = from_plain(to_plain(split.state()))  # what a checkpoint holds and gives back
    resumed = SelfPlayRollout(YACHT, 4, 40, 99)
    resumed.restore(state)
    got = resumed.collect(model)
    for name in ("inputs", "actions", "advantages"):
        assert torch.equal(getattr(expected, name), getattr(got, name)), name
    with pytest.raises(ValueError, match="tables"):
        SelfPlayRollout(YACHT, 5, 40, 5).restore(state)


def test_selfplay_trainer_trains_evaluates_by_match_and_resumes(tmp_path):
    settings = dict(players=2, reward_scale=1.0, eval_freq=32 * 8 * 2, eval_episodes=8)
    straight = Trainer(config(**settings), YACHT, tmp_path / "straight", optimal=169.77)  # with a solution
    final = straight.run(progress=False)
    with (tmp_path / "straight" / "evaluations.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 and all(0.0 <= float(row["win_rate"]) <= 1.0 for row in rows)
    assert straight.evaluation.opponent_name == "optimal"

    agent = PolicyAgent.load(final)
    assert agent.players == 2
    scores = play_deals(YACHT, [agent, GreedyAgent(YACHT)], 0, 4)  # plays at a two-player table
    assert scores.shape == (4, 2, 2)

    first = Trainer(config(**settings), YACHT, tmp_path / "split", optimal=169.77)
    first.run(progress=False, stop_at=32 * 8 * 2)
    resumed = Trainer(config(**settings), YACHT, tmp_path / "split", optimal=169.77)
    resumed.load_checkpoint(first.save_checkpoint())
    resumed.run(progress=False)
    assert all(torch.equal(x, y) for x, y in zip(params(straight), params(resumed)))


def test_a_two_player_policy_refuses_the_single_players_observation_and_back():
    two = PolicyAgent(small_model().export(), {**_metadata(), "players": 2}, YACHT)
    one = shipped_policy(YACHT)
    size = one.inputs.obs_size
    with pytest.raises(ValueError, match="two-player table"):
        two.act(np.zeros(size, dtype=np.float32), np.ones(44, dtype=np.int8))
    with pytest.raises(ValueError, match="single-player env's flat observation"):
        one.act(np.zeros(two.inputs.obs_size, dtype=np.float32), np.ones(44, dtype=np.int8))


def _metadata() -> dict:
    return {"rules": "yacht", "rules_fingerprint": YACHT.fingerprint, "activation": "tanh", "features": True}


def test_init_policy_starts_from_the_shipped_policy_and_plays_as_it(tmp_path):
    base = {"rules": "yacht", "algo": "batched_ppo", "players": 2, "init_policy": "agents/policies/yacht.npz"}
    trainer = Trainer(
        make_config({**base, "compile": False, "precision": "float32", "box_points": 4.0, "keep_points": True}),
        YACHT,
        tmp_path / "run",
    )
    warm, shipped = trainer.agent(), shipped_policy(YACHT)
    scores = play_deals(YACHT, [warm, shipped], 11, 40)
    assert np.array_equal(scores[:, 0, 0], scores[:, 1, 0]) and np.array_equal(scores[:, 0, 1], scores[:, 1, 1])

    weights, metadata = load_policy("agents/policies/yacht.npz")
    with pytest.raises(ValueError, match="options"):  # another head
        small_model(box_points=4.0).load_actor(weights, metadata)
    with pytest.raises(ValueError, match="cannot play ruleset"):
        ActorCritic(PolicyHeads(load_rules("yahtzee"), PolicyOptions(box_points=4.0, keep_points=True))).load_actor(
            weights, metadata
        )
    narrow = ActorCritic(PolicyHeads(YACHT, PolicyOptions(box_points=4.0, keep_points=True, players=2)), [64])
    with pytest.raises(ValueError, match="layer sizes differ|missing"):
        narrow.load_actor(weights, metadata)
    path = save_policy(tmp_path / "two.npz", trainer.model.export(), trainer.metadata)
    with pytest.raises(ValueError, match="options"):  # a two-player policy does not start a one-player run
        ActorCritic(PolicyHeads(YACHT, PolicyOptions(box_points=4.0, keep_points=True))).load_actor(*load_policy(path))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["players=3"], "players must be 1"),
        (["init_policy=model.zip"], "init_policy must be a policy file"),
        (["algo=batched_pqn", "players=2"], "players"),
    ],
)
def test_selfplay_config_errors_are_one_line(overrides, message):
    with pytest.raises(ValueError, match=message) as error:
        make_config({"rules": "yacht"}, overrides)
    assert "\n" not in str(error.value)


def test_critic_warmup_holds_the_actor_and_trains_the_critic(tmp_path):
    trainer = Trainer(config(players=2, reward_scale=1.0, critic_warmup=32 * 8 * 2), YACHT, tmp_path / "run")
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.run(progress=False, stop_at=32 * 8 * 2)  # two updates, both inside the warm-up
    moved = {name for name, p in trainer.model.named_parameters() if not torch.equal(p, before[name])}
    assert moved and all(name.startswith("critic.") for name in moved)
    trainer.run(progress=False)  # past it: the actor learns too
    assert any(
        not torch.equal(p, before[name]) for name, p in trainer.model.named_parameters() if name.startswith("actor")
    )


def test_a_two_player_policy_plays_as_an_opponent_in_the_multi_player_env():
    from dice_poker_env.multi.seat import SeatEnv

    two = PolicyAgent(small_model().export(), {**_metadata(), "players": 2}, YACHT)
    env = SeatEnv(YACHT, [two], seat=1)  # the policy moves first: it reads the table's flat vector
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, done, _, info = env.step(action)
    assert len(info["scores"]) == 2


def test_a_two_player_policy_is_refused_at_a_three_player_table_before_the_game():
    """Seated at a table of another size it would fail at its first move; SeatEnv and `dice-poker play` say so
    at the start, naming the table it reads."""
    from dice_poker_env.multi import SeatEnv
    from dice_poker_env.multi.observations import table_problem

    two = PolicyAgent(small_model().export(), {**_metadata(), "players": 2}, YACHT)
    tables = compile_rules(YACHT)
    assert table_problem(two, tables, 2) is None and table_problem(shipped_policy(YACHT), tables, 3) is None
    assert "a 2-player table's flat observation (108 values); this table has 3 players" in table_problem(two, tables, 3)
    SeatEnv(YACHT, [two]).reset(seed=0)
    with pytest.raises(ValueError, match=r"opponents\[0\] .*reads a 2-player table's"):
        SeatEnv(YACHT, [two, "random"])


def test_a_flat_policy_given_a_dict_observation_says_so_in_one_line():
    one = shipped_policy(YACHT)
    with pytest.raises(TypeError, match="reads flat observations .*got a dict observation .*obs_mode='flat'"):
        one.act({"dice": np.ones(5)}, np.ones(44, dtype=np.int8))
    with pytest.raises(TypeError, match="reads flat observations"):
        one.act([{"dice": 1}], np.ones(44, dtype=np.int8))
