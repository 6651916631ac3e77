"""Agents: legal play on every ruleset, seeding, the illegal-action wrapper, the registry."""

from __future__ import annotations

import numpy as np
import pytest

from agents.players.greedy import GreedyAgent, best_box_action, state_from_observation
from agents.players.random_agent import RandomAgent
from agents.players.registry import make_agent
from agents.training.wrappers import DistinctKeepWrapper, LegalActionWrapper
from dice_poker_env import RULESET_NAMES, load_rules
from dice_poker_env.engine.combinatorics import KEEP_OF_ACTION, N_KEEP_ACTIONS, N_ROLLS, distinct_keep_mask, roll_index
from dice_poker_env.envs.single import DicePokerEnv


def play(env, agent, seed):
    """One game; the env raises on any illegal action."""
    agent.reset()
    obs, info = env.reset(seed=seed)
    done, total, steps = False, 0.0, 0
    while not done:
        action = agent.act(obs, info["action_mask"])
        assert isinstance(action, int)
        assert info["action_mask"][action] == 1
        obs, reward, done, _, info = env.step(action)
        total += reward
        steps += 1
    assert total == info["final_score"]
    return info["final_score"]


@pytest.mark.parametrize("rules", RULESET_NAMES)
@pytest.mark.parametrize("name", ["random", "greedy"])
def test_agents_only_take_legal_actions(rules, name):
    env = DicePokerEnv(rules, illegal_action="raise")
    agent = make_agent(name, rules, seed=3)
    for seed in range(15):
        play(env, agent, seed)


def test_optimal_agent_only_takes_legal_actions():
    env = DicePokerEnv("yacht", illegal_action="raise")
    agent = make_agent("optimal", "yacht")
    for seed in range(5):
        play(env, agent, seed)


@pytest.mark.parametrize("rules", ["yacht", "yatzy"])
def test_optimal_agent_is_optimal_within_the_value_tolerance(rules):
    """The agent's fast path (float32) picks an action whose exact float64 value is
    the maximum to within VALUE_TOLERANCE, in positions random play reaches."""
    from agents.players.optimal import VALUE_TOLERANCE, OptimalAgent

    agent = OptimalAgent(rules, progress=False)
    env = DicePokerEnv(rules)
    rng = np.random.default_rng(1)
    checked = 0
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            q = agent.solution.action_values(obs)
            assert q[agent.act(obs, info["action_mask"])] >= q.max() - VALUE_TOLERANCE
            checked += 1
            obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    assert checked > 100


def test_random_agent_is_seeded():
    env = DicePokerEnv("yahtzee")
    first = [play(env, RandomAgent(seed=7), s) for s in range(3)]
    second = [play(env, RandomAgent(seed=7), s) for s in range(3)]
    assert first == second


def test_greedy_scores_the_best_box_on_the_last_roll():
    rules = load_rules("yacht")
    env = DicePokerEnv(rules)
    obs, info = env.reset(options={"dice": [3, 3, 3, 6, 6], "rolls_left": 0})
    action = GreedyAgent(rules).act(obs, info["action_mask"])
    # full house (sum 21) ties choice (21); the first box in scorecard order wins
    assert rules.box_names[action - N_KEEP_ACTIONS] == "full_house"


def test_greedy_keeps_the_most_common_face():
    env = DicePokerEnv("yacht")
    obs, info = env.reset(options={"dice": [1, 2, 4, 4, 6], "rolls_left": 2})
    action = GreedyAgent("yacht").act(obs, info["action_mask"])
    assert action == 0b01100  # the two fours (sorted positions 2 and 3)


def test_greedy_takes_a_made_straight():
    rules = load_rules("yahtzee")
    env = DicePokerEnv(rules)
    obs, info = env.reset(options={"dice": [2, 3, 4, 5, 6], "rolls_left": 2})
    action = GreedyAgent(rules).act(obs, info["action_mask"])
    assert rules.box_names[action - N_KEEP_ACTIONS] == "large_straight"


def test_state_from_observation_round_trips():
    env = DicePokerEnv("yahtzee")
    obs, info = env.reset(seed=1)
    agent = RandomAgent(seed=1)
    for _ in range(20):
        state = state_from_observation(env.tables, obs)
        for field, value in zip(state._fields, state):
            assert np.array_equal(np.asarray(value).reshape(-1), np.asarray(getattr(env.state, field)).reshape(-1)), (
                field
            )
        obs, _, done, _, info = env.step(agent.act(obs, info["action_mask"]))
        if done:
            break


def test_greedy_refuses_flat_observations():
    env = DicePokerEnv("yacht", obs_mode="flat")
    obs, info = env.reset(seed=0)
    with pytest.raises(TypeError, match="dict"):
        GreedyAgent("yacht").act(obs, info["action_mask"])


def test_legal_action_wrapper_replaces_illegal_actions():
    env = LegalActionWrapper(DicePokerEnv("yacht", obs_mode="flat"), penalty=1.0)
    obs, info = env.reset(seed=0)
    done, total, replaced = False, 0.0, 0
    while not done:
        obs, reward, done, _, info = env.step(31)  # "keep all": never legal
        replaced += bool(info.get("illegal_replaced"))
        assert not info.get("illegal_action")
        total += reward + (1.0 if info.get("illegal_replaced") else 0.0)
    assert replaced == 12 == env.replaced  # one per turn, each scoring the best open box
    assert total == info["final_score"]
    assert env.action_masks().shape == (32 + 12,)


def test_distinct_keep_mask_leaves_one_bitmask_per_keep():
    full = np.ones((N_ROLLS, N_KEEP_ACTIONS + 12), dtype=np.int8)
    full[:, 31] = 0  # "keep all" is never legal
    masks = distinct_keep_mask(full, np.arange(N_ROLLS))
    assert np.array_equal(masks[:, N_KEEP_ACTIONS:], full[:, N_KEEP_ACTIONS:])  # score actions untouched
    for roll in range(N_ROLLS):
        kept = KEEP_OF_ACTION[roll, :31]
        shown = np.flatnonzero(masks[roll, :31])
        assert sorted(kept[shown].tolist()) == sorted(set(kept.tolist()))  # every keep once
        for a in shown:  # and as its lowest bitmask
            assert a == np.flatnonzero(kept == kept[a])[0]
    two_pairs = distinct_keep_mask(full[0], roll_index([2, 2, 5, 5, 6]))
    assert two_pairs[0b00001] and not two_pairs[0b00010]  # one 2: die 0, never die 1
    assert two_pairs[:31].sum() == 3 * 3 * 2 - 1  # (0-2 twos) x (0-2 fives) x (0-1 six), not all five


def test_distinct_keep_wrapper_masks_and_info_agree():
    env = DistinctKeepWrapper(DicePokerEnv("yacht", obs_mode="flat"))
    obs, info = env.reset(options={"dice": [3, 3, 3, 6, 6]})
    assert np.array_equal(info["action_mask"], env.action_masks())
    assert env.action_masks()[:31].sum() == 4 * 3 - 1 and env.action_masks()[0b00111] == 1
    assert env.unwrapped.action_masks()[:31].sum() == 31  # the env itself still takes every bitmask
    obs, _, _, _, info = env.step(0b00111)  # keep the threes
    assert np.array_equal(
        info["action_mask"], distinct_keep_mask(env.unwrapped.action_masks(), env.unwrapped.state.roll)
    )


def test_best_box_action_is_legal():
    env = DicePokerEnv("school_poker")
    obs, info = env.reset(seed=4)
    action = best_box_action(env.tables, env.state, info["action_mask"])
    assert info["action_mask"][action] == 1


def test_unknown_agent_name():
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("genius", "yacht")


def test_make_agent_takes_rules_options_and_refuses_unknown_keywords():
    from dice_poker_env import RulesError

    greedy = make_agent("greedy", "yahtzee", joker="free")  # the rules options, as load_rules and the envs take them
    assert greedy.rules.options["joker"] == "free"
    with pytest.raises(RulesError, match="unknown rules option 'sed'"):  # a misspelt keyword is not dropped
        make_agent("random", "yacht", sed=3)
    with pytest.raises(ValueError, match="default options"):  # no policy ships for these options: said, not ignored
        make_agent("trained", "yahtzee", joker="free")


@pytest.mark.parametrize("name", ["random", "greedy", "optimal", "trained"])
def test_make_agent_reports_the_agent_name_given(name):
    assert make_agent(name, "yacht", agent_name="mine").name == "mine"


def test_the_rules_agents_take_rules_options_as_the_optimal_agent_does():
    from agents.players.heuristic import LookaheadAgent

    for agent in (GreedyAgent("yahtzee", joker="free"), LookaheadAgent("yahtzee", joker="free")):
        assert agent.rules.options == {"joker": "free"}
        assert agent.tables.rules.options == {"joker": "free"}
    assert LookaheadAgent("yacht").rules.name == "yacht"  # like every other rules-playing agent


def test_batched_play_games_checks_its_counts():
    from agents.players.optimal import play_games

    agent = make_agent("optimal", "yacht")
    assert play_games(agent, 0).shape == (0,)  # no games: no scores (it failed inside NumPy)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="n_games must be an integer >= 0"):
            play_games(agent, bad)
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        play_games(agent, 3, batch=0)
    assert len(play_games(agent, 3, seed=1, batch=2)) == 3


def _visited_batch(rules, games, seed, **options):
    """Dict observations and masks of many positions of random and greedy play (vector env, same-step autoreset)."""
    from dice_poker_env.envs.vector import DicePokerVectorEnv

    env = DicePokerVectorEnv(games, rules, obs_mode="dict", autoreset_mode="same_step", **options)
    greedy, rng = GreedyAgent(env.rules), np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    for _ in range(60):
        yield obs, info["action_mask"]
        random = RandomAgent(seed=int(rng.integers(1 << 30))).act_batch(obs, info["action_mask"])
        play = np.where(rng.random(games) < 0.5, greedy.act_batch(obs, info["action_mask"]), random)
        obs, _, _, _, info = env.step(play)


@pytest.mark.parametrize(
    "rules, options",
    [("yacht", {}), ("yahtzee", {}), ("yahtzee", {"joker": "free"}), ("yatzy", {}), ("school_poker", {})],
)
def test_greedy_act_batch_agrees_with_act(rules, options):
    agent = GreedyAgent(load_rules(rules, **options))
    checked = 0
    for obs, masks in _visited_batch(rules, 40, 5, **options):
        actions = agent.act_batch(obs, masks)
        assert actions.dtype == np.int64
        for i in range(len(masks)):
            assert actions[i] == agent.act({k: v[i] for k, v in obs.items()}, masks[i])
            checked += 1
    assert checked == 40 * 60


def test_random_act_batch_is_uniform_over_legal_actions_and_seeded():
    masks = np.zeros((20000, 45), dtype=np.int8)
    masks[:, [3, 7, 40]] = 1
    actions = RandomAgent(seed=1).act_batch(None, masks)
    assert set(actions.tolist()) == {3, 7, 40}
    assert np.allclose(np.bincount(actions, minlength=45)[[3, 7, 40]] / len(actions), 1 / 3, atol=0.02)
    assert np.array_equal(actions, RandomAgent(seed=1).act_batch(None, masks))
    with pytest.raises(ValueError, match="no legal action"):
        RandomAgent(seed=1).act_batch(None, np.zeros((2, 45), dtype=np.int8))


def test_a_solution_of_other_rules_is_refused_by_the_agents_that_play_it():
    """``make_agent("optimal", rules, solution=...)`` and ``WinningAgent(rules, solution=...)`` played another
    ruleset's values without a word (the winning agent after solving the reach table)."""
    from agents.players.winning import WinningAgent
    from dice_poker_env.solver import solve

    yacht = solve("yacht", progress=False)
    for build in (
        lambda: make_agent("optimal", "yahtzee", solution=yacht),
        lambda: make_agent("winning", "yahtzee", solution=yacht),
        lambda: WinningAgent("yahtzee", solution=yacht, progress=False),
    ):
        with pytest.raises(ValueError, match=r"^the solution given solves 'yacht', not the rules played \('yahtzee'"):
            build()
    assert make_agent("optimal", "yacht", solution=yacht).solution is yacht
