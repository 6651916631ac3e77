"""The multi-player PettingZoo env and the one-seat Gymnasium wrapper."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import api_test, seed_test  # noqa: E402

from agents.players.sb3_agent import SB3Agent, model_metadata  # noqa: E402
from dice_poker_env import RULESET_NAMES, ScriptedDice, load_rules, multi  # noqa: E402
from dice_poker_env.engine.tables import compile_rules  # noqa: E402
from dice_poker_env.envs import IllegalActionError  # noqa: E402
from dice_poker_env.envs.observation import DICT_KEYS, observation_space  # noqa: E402

RULESETS = RULESET_NAMES


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


def test_the_parallel_api_is_pettingzoos_turn_based_conversion():
    """docs/multiplayer.md: AEC only (``aec_to_parallel`` refuses it); ``turn_based_aec_to_parallel`` gives a
    Parallel env that passes PettingZoo's parallel API test and pays the win rewards at the last step."""
    from pettingzoo.test import parallel_api_test
    from pettingzoo.utils import aec_to_parallel
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    assert multi.raw_env("yacht", 2).metadata["is_parallelizable"] is False
    with pytest.raises(AssertionError, match="is_parallelizable"):
        aec_to_parallel(multi.env("yacht", 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on dict observations
        parallel_api_test(turn_based_aec_to_parallel(multi.env("yacht", 3)), num_cycles=100)
    env = turn_based_aec_to_parallel(multi.env("yacht", 3))
    observations, _ = env.reset(seed=0)
    rng, returns = np.random.default_rng(0), dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {
            agent: int(rng.choice(np.flatnonzero(mask))) if (mask := observations[agent]["action_mask"]).any() else 0
            for agent in env.agents
        }
        observations, rewards, terminations, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
    assert all(terminations.values())
    totals = np.array([infos[agent]["final_score"] for agent in env.possible_agents])
    np.testing.assert_allclose(list(returns.values()), multi.final_rewards(totals, "win"))


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


@pytest.mark.parametrize("mode", ["win", "relative", "score"])
def test_rewards_of_rows_of_games_are_each_games_rewards(mode):
    """Self-play pays the tables that end in one step at once: rows of totals, each row as one game."""
    rows = np.array([[10, 20], [30, 30], [20, 10], [0, 0]])
    expected = np.stack([multi.final_rewards(row, mode) for row in rows])
    np.testing.assert_array_equal(multi.final_rewards(rows, mode), expected)
    four = np.array([[5, 40, 40, 1], [7, 7, 7, 7], [1, 2, 3, 4]])
    np.testing.assert_array_equal(multi.final_rewards(four, mode), [multi.final_rewards(r, mode) for r in four])


@pytest.mark.parametrize("rules", RULESETS)
def test_random_games_fill_every_box_and_rewards_add_up(rules):
    n_boxes = load_rules(rules).n_boxes
    for num_players, seed in [(2, 1), (4, 2)]:
        e = multi.raw_env(rules, num_players, reward_mode="score")
        returns = play_random(e, seed)
        for game in e.games:
            assert game.filled == (1 << n_boxes) - 1
        totals = np.array(list(e.totals().values()))
        # "score": every player's return is their final score
        np.testing.assert_allclose(list(returns.values()), totals)

        rel = multi.raw_env(rules, num_players, reward_mode="relative")
        rel_returns = play_random(rel, seed)  # same seed, same game
        np.testing.assert_array_equal(list(rel.totals().values()), totals)
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
    single = {key: obs[key] for key in DICT_KEYS}
    assert observation_space(compile_rules(load_rules("yatzy")), "dict").contains(single)
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


def test_tied_players_share_the_better_rank():
    """``info["rank"]`` at the end: 1 + the players with a higher total, so tied players share the better place."""
    e = multi.raw_env("yacht", 3, dice_source=ScriptedDice([3] * 5 * 40))  # everyone throws 3 3 3 3 3
    e.reset(seed=0)
    while not e.game_over:  # every player scores its first open box: the same game three times
        mask = e.observe(e.agent_selection)["action_mask"]
        e.step(32 + int(np.flatnonzero(mask[32:])[0]))
    totals = e.totals()
    assert len(set(totals.values())) == 1
    assert [e.infos[agent]["rank"] for agent in e.possible_agents] == [1, 1, 1]


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


def test_render_ansi_shows_dice_and_hints_only_for_the_player_to_move():
    """The others' dice are placeholders until their turn: their scorecards only (player_1 showed ``dice: 1 1 1 1
    1``, ``rolls left: 2`` and ``(would score 50)``)."""
    e = multi.raw_env("yacht", 3, render_mode="ansi")
    e.reset(seed=0)
    e.step(32)  # player_0 scores ones: player_1 to move
    to_move, *others = e.render().split("\n\n")
    assert to_move.startswith("== player_1 (to move) ==")
    assert "dice:" in to_move and "rolls left" in to_move and "would score" in to_move
    assert len(others) == 2
    for text in others:
        assert "dice:" not in text and "rolls left" not in text and "would score" not in text
        assert "TOTAL" in text and "ones" in text


# ------------------------------------------------------------------ one seat
@pytest.mark.parametrize("opponents", [0, 6])
def test_seat_env_counts_its_opponents(opponents):
    with pytest.raises(
        ValueError, match=rf"opponents: 1 to 5 agents \(2 to 6 players with the learner\), got {opponents}"
    ):
        multi.SeatEnv("yacht", opponents=["random"] * opponents)


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
    # a NumPy integer seeds as the int it holds (as the single env); anything else is a TypeError
    assert rollout(multi.SeatEnv("yatzy", ["random"]), np.int64(5)) == rollout(multi.SeatEnv("yatzy", ["random"]), 5)
    table, other = multi.env(rules="yatzy"), multi.env(rules="yatzy")
    table.reset(seed=np.int64(5))
    other.reset(seed=5)
    assert table.unwrapped.games[0].roll == other.unwrapped.games[0].roll
    for env in (multi.SeatEnv("yatzy", ["random"]), multi.env(rules="yatzy")):
        with pytest.raises(TypeError, match="seed must be an int or None"):
            env.reset(seed="5")
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

    class Model:  # the shape of an SB3 model: played through the agents package's model agent
        def predict(self, observation, action_masks=None, deterministic=True):
            return np.array(int(np.flatnonzero(action_masks)[-1])), None

    rules = load_rules("yacht")
    model = SB3Agent(Model(), model_metadata(rules, "dict", "maskable_ppo"), rules)
    env = multi.SeatEnv("yacht", [FirstLegal(), model, lambda obs, mask: int(np.flatnonzero(mask)[0])])
    env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert len(info["scores"]) == 4
    with pytest.raises(ValueError, match="only 'random' is built in"):
        multi.SeatEnv("yacht", ["greedy"])
    with pytest.raises(TypeError, match="is a model .* play it through an agent"):
        multi.SeatEnv("yacht", [Model()])


def test_seat_env_with_greedy_opponent():
    from agents.players import greedy

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
            observation_space = multi.multi_observation_space(compile_rules(load_rules("yacht")), 3, "flat")

    class DictModel:
        observation_space = observation_space(compile_rules(load_rules("yacht")), "dict")

    assert e.observe_for("player_0", Flat())["observation"].shape == single_flat
    assert e.observe_for("player_0", FlatModel())["observation"].shape == multi_flat
    assert set(e.observe_for("player_0", DictModel())["observation"]) == set(DICT_KEYS)
    assert "opponent_total" in e.observe_for("player_0", object())["observation"]


def test_random_seat():
    env = multi.SeatEnv("yacht", ["random", "random"], seat="random")
    seats = set()
    for seed in range(12):
        env.reset(seed=seed)
        seats.add(env.seat)
        assert env.game.agent_selection == env.me
    assert seats == {0, 1, 2}


# ------------------------------------------------------------ issue 11: bad input
BAD_ACTIONS = [99, -1, 44, None, True, 1.5, "3", np.array([3]), np.float64(3), 31]
BAD_IDS = ["99", "-1", "44", "None", "True", "1.5", "str", "array[3]", "float64", "keep-all"]


def _illegal_end(action):
    e = multi.env("yacht", 2, illegal_reward=-4.0)
    e.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(action)
    return e


@pytest.mark.parametrize("action", BAD_ACTIONS, ids=BAD_IDS)
def test_wrapped_env_ends_the_game_for_any_bad_action_of_a_live_agent(action):
    """Issue 11: step(99), step(-1), step(None), step(True), step(np.array([3])) raised
    AssertionError (or ValueError, or wrapped around): now the documented illegal-action handling."""
    e = _illegal_end(action)
    assert all(e.terminations.values())
    assert e.rewards == {"player_0": -4.0, "player_1": 0.0}
    assert e.infos["player_0"]["illegal_action"] and e.infos["player_0"]["illegal_reason"]
    for agent in e.possible_agents:  # nothing is legal any more, as after a normal end
        assert not e.observe(agent)["action_mask"].any()
    assert not e.unwrapped.action_masks().any()
    stepped_out = []
    for agent in e.agent_iter():
        *_, termination, truncation, _ = e.last()
        assert termination or truncation
        stepped_out.append(agent)
        e.step(None)
    assert sorted(stepped_out) == e.possible_agents and not e.agents


@pytest.mark.parametrize("action", BAD_ACTIONS, ids=BAD_IDS)
def test_raw_env_raises_illegal_action_error_for_any_bad_action(action):
    raw = multi.raw_env("yacht", 2)
    raw.reset(seed=0)
    before = [g.roll for g in raw.games]
    with pytest.raises(IllegalActionError, match="yacht, player_0: "):
        raw.step(action)
    assert [g.roll for g in raw.games] == before and raw.agent_selection == "player_0"


def test_numpy_integer_actions_are_actions():
    for action in (np.int64(32), np.uint8(32), np.array(32)):
        e = multi.env("yacht", 2)
        e.reset(seed=0)
        e.step(action)
        assert e.agent_selection == "player_1" and not any(e.terminations.values())


def test_step_before_reset_or_after_the_end_is_reset_needed():
    import gymnasium as gym

    for make in (lambda: multi.env("yacht", 2), lambda: multi.raw_env("yacht", 2)):
        e = make()
        for call in (lambda: e.step(0), lambda: e.observe("player_0")):  # noqa: B023 (called at once)
            with pytest.raises(gym.error.ResetNeeded, match="call reset"):
                call()
        e.reset(seed=0)
        for _agent in e.agent_iter() if hasattr(e, "agent_iter") else []:
            obs, _, termination, truncation, _ = e.last()
            e.step(None if termination or truncation else int(np.flatnonzero(obs["action_mask"])[0]))
        if isinstance(e, multi.raw_env):  # no agent_iter wrapper: play it out by hand
            while e.agents:
                agent = e.agent_selection
                done = e.terminations[agent] or e.truncations[agent]
                e.step(None if done else int(np.flatnonzero(e.observe(agent)["action_mask"])[0]))
        with pytest.raises(gym.error.ResetNeeded, match="the game is over"):
            e.step(0)
        assert not e.unwrapped.action_masks().any()


def test_bad_actions_behave_the_same_under_python_O():
    """No validation is an assert: python -O gives the same outcomes."""
    import json
    import subprocess
    import sys

    code = (
        "import json, warnings, numpy as np\n"
        "from dice_poker_env import multi\n"
        "warnings.simplefilter('ignore')\n"
        "out = []\n"
        "for a in [99, -1, None, True, np.array([3]), 1.5, 31, 32]:\n"
        "    e = multi.env('yacht', 2)\n"
        "    e.reset(seed=0)\n"
        "    e.step(a)\n"
        "    out.append([e.rewards, e.infos['player_0'].get('illegal_reason'), int(e.unwrapped.action_masks().sum())])\n"
        "for call in ('step', 'observe'):\n"
        "    e = multi.env('yacht', 2)\n"
        "    try:\n"
        "        e.step(0) if call == 'step' else e.observe('player_0')\n"
        "    except Exception as error:\n"
        "        out.append(type(error).__name__)\n"
        "print(json.dumps(out))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True
        ).stdout.splitlines()[-1]
        for flags in ([], ["-O"])
    ]
    assert runs[0] == runs[1]
    assert json.loads(runs[0])[-2:] == ["ResetNeeded", "ResetNeeded"]


def test_reset_options_must_be_a_dict_and_dice_sources_must_roll():
    with pytest.raises(ValueError, match="reset options: expected a dict"):
        multi.raw_env("yacht", 2).reset(options=["dice"])
    with pytest.raises(TypeError, match="dice_source must be a dice source"):
        multi.raw_env("yacht", 2, dice_source=3)
    with pytest.raises(ValueError, match="illegal_reward must be a finite number"):
        multi.env("yacht", 2, illegal_reward=float("nan"))


@pytest.mark.parametrize("action", [31, 99, None, np.array([3]), True])
def test_seat_env_masks_are_all_zeros_after_an_illegal_action(action):
    env = multi.SeatEnv("yacht", ["random"])
    env.reset(seed=0)
    _, reward, done, _, info = env.step(action)
    assert done and info["illegal_action"] and reward == -1.0
    assert not env.action_masks().any() and not info["action_mask"].any()


def test_seat_env_rejects_bad_arguments():
    with pytest.raises(ValueError, match="illegal_penalty must be a finite number"):
        multi.SeatEnv("yacht", ["random"], illegal_penalty="x")
    env = multi.SeatEnv("yacht", ["random"])
    with pytest.raises(ValueError, match="reset options"):
        env.reset(options={"dice": [1, 2, 3, 4, 5]})


def test_each_agent_has_its_own_space_objects():
    """As PettingZoo's classic games: seeding one agent's action space leaves the other's sampling alone."""
    e = multi.env("yacht", 2)
    assert e.action_space("player_0") is e.action_space("player_0")
    assert e.action_space("player_0") is not e.action_space("player_1")
    assert e.observation_space("player_0") is not e.observation_space("player_1")
    e.action_space("player_0").seed(1)
    alone = [e.action_space("player_0").sample() for _ in range(5)]
    e.action_space("player_0").seed(1)
    e.action_space("player_1").seed(2)
    assert [e.action_space("player_0").sample() for _ in range(5)] == alone
    with pytest.raises(KeyError, match="no agent 'player_7'"):
        e.action_space("player_7")


@pytest.mark.parametrize("make", [multi.env, multi.raw_env])
def test_last_before_reset_and_after_the_game_is_reset_needed(make):
    import gymnasium as gym

    e = make("yacht", 2)
    with pytest.raises(gym.error.ResetNeeded, match="before last"):
        e.last()
    play_random(e, 0)
    with pytest.raises(gym.error.ResetNeeded, match="the game is over"):
        e.last()


def test_the_raw_envs_own_methods_say_reset_needed_and_name_an_unknown_agent():
    """``scorecard``, ``totals``, ``illegal_reason`` before ``reset()`` are ``ResetNeeded``, as the single env's
    ``scorecard`` (were ``IndexError: list index out of range`` and ``{}``); an unknown agent is named."""
    import gymnasium as gym

    e = multi.raw_env("yacht", 2)
    for name, call in [
        ("scorecard", lambda: e.scorecard("player_0")),
        ("totals", e.totals),
        ("illegal_reason", lambda: e.illegal_reason(0)),
    ]:
        with pytest.raises(gym.error.ResetNeeded, match=f"call reset\\(\\) before {name}\\(\\)"):
            call()
    e.reset(seed=0)
    assert e.totals() == {"player_0": 0, "player_1": 0} and e.scorecard("player_1")["ones"] is None
    with pytest.raises(KeyError, match="no agent 'player_9'; agents: player_0, player_1"):
        e.scorecard("player_9")
    with pytest.raises(KeyError, match="no agent 'player_9'"):
        e.final_info("player_0", "player_9")


@pytest.mark.parametrize("answer", [43.7, True, None, np.array([3]), "3"])
def test_seat_env_refuses_an_opponent_answer_that_is_not_an_action_index(answer):
    env = multi.SeatEnv("yacht", [lambda obs, mask: answer], seat=1)  # the opponent moves first
    with pytest.raises(IllegalActionError, match=r"opponent '<lambda>' at seat 0 returned .*not an action index"):
        env.reset(seed=0)


def test_seat_env_takes_integer_answers_of_numpy():
    env = multi.SeatEnv("yacht", [lambda obs, mask: np.int64(np.flatnonzero(mask)[0])], seat=1)
    env.reset(seed=0)


@pytest.mark.parametrize("obs_mode", ["flat", "dict"])
def test_an_sb3_model_trained_at_a_table_loads_safely_as_an_agent(obs_mode, tmp_path):
    """A model trained with SeatEnv reads the table's observation: the safe loader (nothing unpickled) rebuilds
    that space from the file's description, so `model:PATH` plays it as it plays in the trainer."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.players.registry import make_agent
    from agents.players.sb3_agent import save_model

    env = multi.SeatEnv("yacht", ["random"], obs_mode=obs_mode)
    policy = "MlpPolicy" if obs_mode == "flat" else "MultiInputPolicy"
    model = MaskablePPO(policy, env, n_steps=64, batch_size=64, n_epochs=1, seed=0, policy_kwargs={"net_arch": [16]})
    model.learn(64)
    path = save_model(model, tmp_path / "seat", model_metadata(load_rules("yacht"), obs_mode, "maskable_ppo"))
    agent = make_agent(f"model:{path}", "yacht")  # the safe loader
    assert agent.model.observation_space == env.observation_space
    e = multi.env("yacht", 2)
    e.reset(seed=0)
    obs = e.unwrapped.observe_for("player_0", agent)
    expected, _ = model.predict(obs["observation"], action_masks=obs["action_mask"], deterministic=True)
    assert agent.act(obs["observation"], obs["action_mask"]) == int(expected)
    assert agent.players == 2
    with pytest.raises(ValueError, match=f"reads a 2-player table's {obs_mode} observation"):
        multi.SeatEnv("yacht", [agent, "random"])  # not at a three-player table
    from agents.evaluation.protocol import evaluate

    with pytest.raises(ValueError, match="trained at a 2-player table"):  # nor in the one-player game
        evaluate("yacht", f"model:{path}", games=5)


# ------------------------------------------------------------ mutation round 3: illegal ends, seats, opponents
def test_an_illegal_action_terminates_and_truncates_every_agent():
    """As PettingZoo's TerminateIllegalWrapper: the game ended by an illegal action is both terminated and
    truncated for every agent."""
    e = multi.env("yacht", 3)
    e.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(31)
    assert e.terminations == e.truncations == dict.fromkeys(e.possible_agents, True)


class _Recorder:
    """An opponent that writes its dice into the first legal box and notes the seat it played and its seed."""

    def __init__(self, name: str, table: list):
        self.name, self.table, self.seeds = name, table, []

    def seed(self, seed: int) -> None:
        self.seeds.append(seed)

    def act(self, observation, action_mask):
        self.table.append((self.name, self.env.game.current))
        return 32 + int(np.flatnonzero(action_mask[32:])[0])


def test_seat_env_opponents_take_the_seats_after_the_learner_in_order_with_their_own_seeds():
    """``opponents[k]`` plays the k-th seat after the learner's (here the learner sits in seat 1 of 3: the
    first opponent plays seat 2, the second seat 0), and each seeded opponent gets its own seed."""
    moves: list = []
    first, second = _Recorder("first", moves), _Recorder("second", moves)
    env = multi.SeatEnv("yacht", [first, second], seat=1)
    first.env = second.env = env
    env.reset(seed=0)
    assert moves == [("second", 0)]  # seat 0 moves before the learner
    env.step(32 + int(np.flatnonzero(env.action_masks()[32:])[0]))
    assert moves == [("second", 0), ("first", 2), ("second", 0)]
    assert len(first.seeds) == len(second.seeds) == 1 and second.seeds[0] == first.seeds[0] + 1


def test_seat_env_refuses_a_seat_past_the_table():
    """Seats run 0..players-1: seat 2 of a two-player table is refused when the env is made."""
    with pytest.raises(ValueError, match="seat must be 0..1"):
        multi.SeatEnv("yacht", ["random"], seat=2)


def test_seat_env_names_an_opponent_that_chooses_a_masked_action():
    """An opponent's masked action is an error naming the opponent and its seat, not the raw env's."""
    env = multi.SeatEnv("yacht", [lambda obs, mask: 31], seat=1)
    with pytest.raises(IllegalActionError, match=r"opponent '<lambda>' at seat 0 chose illegal action 31"):
        env.reset(seed=0)


# ------------------------------------------------------------ gym review: end infos, render, options
@pytest.mark.parametrize("seat", [0, 1])
def test_seat_env_an_illegal_end_has_the_end_keys_of_a_normal_end(seat):
    """An episode ended by an illegal action has ``final_score``, ``scores`` and ``rank`` (the totals so far), as
    one ended by the last box has (it had only the illegal keys)."""
    env = multi.SeatEnv("yacht", ["random"], seat=seat)
    env.reset(seed=0)
    _, _, done, _, info = env.step(31)
    assert done and info["illegal_action"]
    assert {"final_score", "scores", "rank"} <= set(info)
    totals = env.game.totals()
    assert info["scores"] == totals and info["final_score"] == totals[env.me] == info["score"]
    assert info["rank"] == 2  # the offender is last, whatever its total (it lost the game)


def _best_box(e) -> int:
    """The selected agent's box action that scores the most now (tried on copies)."""
    mask = e.unwrapped.action_masks()
    agent = e.agent_selection

    def points(action: int) -> int:
        trial = copy.deepcopy(e)
        trial.step(action)
        return trial.unwrapped.totals()[agent]

    return max((a for a in range(32, len(mask)) if mask[a]), key=points)


def test_a_wrapped_game_ended_by_an_illegal_action_gives_every_agent_the_end_keys():
    """Every agent gets the end keys; the offender ranks last though its total leads (its reward says it lost),
    the others by their totals."""
    e = multi.env("yacht", 3)
    e.reset(seed=0)

    def first_box() -> int:
        return next(a for a in range(32, 45) if e.unwrapped.action_masks()[a])

    e.step(_best_box(e))  # player_0 leads after one turn each
    e.step(first_box())
    e.step(first_box())
    totals = e.unwrapped.totals()
    assert e.agent_selection == "player_0" and totals["player_0"] > max(totals["player_1"], totals["player_2"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(99)  # out of range: illegal
    for agent in e.possible_agents:
        assert {"final_score", "scores", "rank"} <= set(e.infos[agent])
        assert e.infos[agent]["scores"] == e.unwrapped.totals()
    assert e.infos["player_0"]["illegal_action"] and "illegal_action" not in e.infos["player_1"]
    totals = e.unwrapped.totals()
    assert e.infos["player_0"]["rank"] == 3
    one, two = totals["player_1"], totals["player_2"]
    assert (e.infos["player_1"]["rank"], e.infos["player_2"]["rank"]) == (
        (1, 1) if one == two else (1, 2) if one > two else (2, 1)
    )


def test_position_reset_options_are_ignored_with_a_warning():
    """``dice``, ``rolls_left`` and the other position keys, which the single env applies, were ignored silently;
    other keys (PettingZoo's api_test passes ``{"options": 1}``) pass silently still."""
    e, plain = multi.env("yacht", 2), multi.env("yacht", 2)
    plain.reset(seed=3)
    with pytest.warns(UserWarning, match=r"reset options: dice, rolls_left ignored; a multi-player game always"):
        e.reset(seed=3, options={"rolls_left": 0, "dice": [6, 6, 6, 6, 6]})
    assert e.unwrapped.games[0].roll == plain.unwrapped.games[0].roll  # ignored: the same dice as without them
    assert e.unwrapped.games[0].rolls_left == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.reset(seed=0, options={"options": 1})
        e.reset(seed=0, options={})
