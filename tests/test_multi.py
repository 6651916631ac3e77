"""The multi-player PettingZoo env and the one-seat Gymnasium wrapper."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import api_test, seed_test  # noqa: E402

from dice_poker_env import RULESET_NAMES, ScriptedDice, load_rules, multi  # noqa: E402
from dice_poker_env.envs.observation import observation_space  # noqa: E402
from dice_poker_env.envs.single import IllegalActionError  # noqa: E402

RULESETS = ["yacht", "dice_poker", "school_poker", "yahtzee", "yatzy"]


def play_random(e, seed: int) -> dict[str, float]:
    """Masked random play of a whole game; the return of every agent."""
    rng = np.random.default_rng(seed)
    e.reset(seed=seed)
    returns = dict.fromkeys(e.possible_agents, 0.0)
    for agent in e.agent_iter():
        obs, reward, termination, truncation, _ = e.last()
        returns[agent] += reward
        if termination or truncation:
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return returns


def test_rulesets_cover_every_shipped_one():
    assert set(RULESETS) == set(RULESET_NAMES)


@pytest.mark.parametrize("num_players", [2, 4])
@pytest.mark.parametrize("rules", RULESETS)
def test_pettingzoo_api_and_seed(rules, num_players):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on dict observations
        api_test(multi.env(rules, num_players), num_cycles=200)
        seed_test(lambda: multi.env(rules, num_players), num_cycles=200)


def test_pettingzoo_api_flat_observations():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(multi.env("yahtzee", 3, obs_mode="flat"), num_cycles=200)
        seed_test(lambda: multi.env("yahtzee", 3, obs_mode="flat"), num_cycles=200)


def test_default_reward_modes():
    assert multi.raw_env("school_poker").reward_mode == "relative"
    for name in ("yacht", "dice_poker", "yahtzee", "yatzy"):
        assert multi.raw_env(name).reward_mode == "win"


@pytest.mark.parametrize(
    "totals, expected",
    [
        ([10, 20], [-1, 1]),
        ([30, 30], [0, 0]),
        ([30, 30, 10], [0.5, 0.5, -1]),
        ([5, 40, 40, 1], [-0.5, 0.5, 0.5, -0.5]),
        ([7, 7, 7, 7], [0, 0, 0, 0]),
    ],
)
def test_win_rewards(totals, expected):
    np.testing.assert_allclose(multi.final_rewards(totals, "win"), expected)


@pytest.mark.parametrize("rules", RULESETS)
def test_random_games_fill_every_box_and_rewards_add_up(rules):
    n_boxes = load_rules(rules).n_boxes
    for num_players, seed in [(2, 1), (4, 2)]:
        e = multi.raw_env(rules, num_players, reward_mode="score")
        returns = play_random(e, seed)
        for game in e.games:
            assert game.filled == (1 << n_boxes) - 1
        totals = e._totals()
        # "score": every player's return is their final score
        np.testing.assert_allclose(list(returns.values()), totals)

        rel = multi.raw_env(rules, num_players, reward_mode="relative")
        rel_returns = play_random(rel, seed)  # same seed, same game
        np.testing.assert_array_equal(rel._totals(), totals)
        values = np.array(list(rel_returns.values()))
        assert abs(values.sum()) < 1e-9
        np.testing.assert_allclose(values, totals - totals.mean())

        win = multi.raw_env(rules, num_players, reward_mode="win")
        win_values = np.array(list(play_random(win, seed).values()))
        assert abs(win_values.sum()) < 1e-9
        np.testing.assert_allclose(win_values, multi.final_rewards(totals, "win"))


def test_only_the_selected_agent_has_a_mask_and_turns_are_whole():
    e = multi.raw_env("yacht", 3)
    e.reset(seed=3)
    seen = []
    for _ in range(40):
        agent = e.agent_selection
        for other in e.agents:
            mask = e.observe(other)["action_mask"]
            assert mask.dtype == np.int8
            assert mask.any() == (other == agent)
        mask = e.observe(agent)["action_mask"]
        rolls_left = int(e.observe(agent)["observation"]["rolls_left"])
        action = 0 if rolls_left else 32 + int(np.flatnonzero(mask[32:])[0])  # reroll all, then score
        e.step(action)
        seen.append((agent, action >= 32))
    # each agent rolls twice then scores; players alternate only after scoring
    turns = [a for a, scored in seen if scored]
    assert turns[:6] == ["player_0", "player_1", "player_2"] * 2
    assert [a for a, _ in seen[:3]] == ["player_0"] * 3


def test_observation_includes_opponents_and_is_a_single_env_superset():
    e = multi.raw_env("yatzy", 3)
    e.reset(seed=0)
    while e.agent_selection == "player_0":  # player_0 finishes a turn
        mask = e.observe("player_0")["action_mask"]
        e.step(int(np.flatnonzero(mask)[-1]))  # the last legal action is a score action
    obs = e.observe("player_2")["observation"]
    # player_2's opponents in turn order: player_0 (just scored), then player_1
    assert obs["opponent_filled"].shape == (2, 15)
    assert obs["opponent_filled"][0].sum() == 1 and obs["opponent_filled"][1].sum() == 0
    assert obs["opponent_total"][0] == e.totals()["player_0"]
    single = {key: obs[key] for key in multi.SINGLE_KEYS}
    assert observation_space(load_rules("yatzy").tables, "dict").contains(single)
    assert e.observation_space("player_2").contains(e.observe("player_2"))


def test_scripted_dice_are_thrown_in_playing_order():
    # player_0 throws 1 1 1 1 1 and scores; then player_1 throws 6 6 6 6 6
    e = multi.raw_env("yacht", 2, dice_source=ScriptedDice([1] * 5 + [6] * 5 + [2] * 5))
    e.reset(seed=0)
    assert list(e.observe("player_0")["observation"]["dice"]) == [1] * 5
    e.step(32 + 11)  # yacht box: 50
    assert e.agent_selection == "player_1"
    assert list(e.observe("player_1")["observation"]["dice"]) == [6] * 5
    e.step(32 + 5)  # sixes: 30
    assert e.totals() == {"player_0": 50, "player_1": 30}
    assert list(e.observe("player_0")["observation"]["dice"]) == [2] * 5


def test_illegal_actions():
    raw = multi.raw_env("yacht", 2)
    raw.reset(seed=0)
    with pytest.raises(IllegalActionError, match="keeps all five dice"):
        raw.step(31)
    wrapped = multi.env("yacht", 2)
    wrapped.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped.step(31)
    assert all(wrapped.terminations.values())
    assert wrapped.rewards == {"player_0": -1.0, "player_1": 0.0}


@pytest.mark.parametrize("bad", [1, 7, "2"])
def test_player_count_is_checked(bad):
    with pytest.raises(ValueError, match="num_players"):
        multi.raw_env("yacht", bad)


def test_reward_mode_is_checked():
    with pytest.raises(ValueError, match="reward_mode"):
        multi.raw_env("yacht", 2, reward_mode="points")


def test_render_ansi_shows_every_player():
    e = multi.raw_env("yacht", 2, render_mode="ansi")
    e.reset(seed=0)
    text = e.render()
    assert "player_0 (to move)" in text and "player_1" in text


# ------------------------------------------------------------------ one seat
@pytest.mark.parametrize("obs_mode", ["dict", "flat"])
def test_seat_env_passes_check_env(obs_mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(multi.SeatEnv("yahtzee", ["random", "random"], obs_mode=obs_mode), skip_render_check=True)


@pytest.mark.parametrize("seat", [0, 1, 2])
def test_seat_env_plays_whole_games(seat):
    env = multi.SeatEnv("yacht", ["random", "random"], seat=seat, reward_mode="score")
    obs, info = env.reset(seed=seat)
    assert env.game.agent_selection == env.me
    assert int(obs["turn"]) == 0 and obs["opponent_filled"].sum() == seat
    rng = np.random.default_rng(seat)
    total, done = 0.0, False
    while not done:
        mask = env.action_masks()
        assert np.array_equal(mask, info["action_mask"])
        obs, reward, done, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += reward
    assert total == info["final_score"] == info["scores"][env.me]
    assert all(g.filled == (1 << 12) - 1 for g in env.game.games)


def test_seat_env_win_reward_is_paid_even_when_an_opponent_moves_last():
    env = multi.SeatEnv("yacht", ["random"], seat=0, reward_mode="win")
    for seed in range(3):
        env.reset(seed=seed)
        total, done, info = 0.0, False, {}
        while not done:
            _, reward, done, _, info = env.step(int(np.flatnonzero(env.action_masks())[-1]))
            total += reward
        scores = info["scores"]
        assert total == pytest.approx(multi.final_rewards([scores["player_0"], scores["player_1"]], "win")[0])


def test_seat_env_is_seeded_and_handles_illegal_actions():
    def rollout(env, seed):
        obs, _ = env.reset(seed=seed)
        trace = [int(obs["turn"])]
        for _ in range(30):
            obs, reward, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
            trace.append((tuple(obs["dice"]), reward, tuple(obs["opponent_total"])))
        return trace

    assert rollout(multi.SeatEnv("yatzy", ["random"]), 5) == rollout(multi.SeatEnv("yatzy", ["random"]), 5)
    env = multi.SeatEnv("yatzy", ["random"], illegal_penalty=-2)
    env.reset(seed=0)
    _, reward, done, _, info = env.step(31)
    assert done and reward == -2 and info["illegal_action"]
    strict = multi.SeatEnv("yatzy", ["random"], illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(IllegalActionError):
        strict.step(31)


def test_seat_env_accepts_agents_models_and_callables():
    class FirstLegal:
        name = "first"

        def act(self, observation, action_mask):
            assert "opponent_total" in observation  # agents see the seat's whole observation
            return int(np.flatnonzero(action_mask)[0])

        def reset(self):
            pass

    class Model:  # the shape of an SB3 model
        def predict(self, observation, action_masks=None, deterministic=True):
            return np.array(int(np.flatnonzero(action_masks)[-1])), None

    env = multi.SeatEnv("yacht", [FirstLegal(), Model(), lambda obs, mask: int(np.flatnonzero(mask)[0])])
    env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert len(info["scores"]) == 4
    with pytest.raises(ValueError, match="only 'random' is built in"):
        multi.SeatEnv("yacht", ["greedy"])


def test_seat_env_with_greedy_opponent():
    from agents import greedy
    env = multi.SeatEnv("yahtzee", [greedy.GreedyAgent(load_rules("yahtzee"))])
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert info["scores"]["player_1"] > 0


def test_players_get_the_observation_layout_they_read():
    e = multi.raw_env("yacht", 3)
    e.reset(seed=0)
    single_flat = observation_space(e.tables, "flat").shape
    multi_flat = multi.multi_observation_space(e.tables, 3, "flat").shape

    class Flat:
        obs_mode = "flat"

    class FlatModel:
        obs_mode = "flat"

        class model:  # noqa: N801 - the shape of an SB3 model attribute
            observation_space = multi.multi_observation_space(load_rules("yacht").tables, 3, "flat")

    class DictModel:
        observation_space = observation_space(load_rules("yacht").tables, "dict")

    assert e.observe_for("player_0", Flat())["observation"].shape == single_flat
    assert e.observe_for("player_0", FlatModel())["observation"].shape == multi_flat
    assert set(e.observe_for("player_0", DictModel())["observation"]) == set(multi.SINGLE_KEYS)
    assert "opponent_total" in e.observe_for("player_0", object())["observation"]


def test_random_seat():
    env = multi.SeatEnv("yacht", ["random", "random"], seat="random")
    seats = set()
    for seed in range(12):
        env.reset(seed=seed)
        seats.add(env.seat)
        assert env.game.agent_selection == env.me
    assert seats == {0, 1, 2}
