"""The single Gymnasium env: API conformance, seeding, masks, random play, replays."""

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dice_poker_env
from dice_poker_env import ENV_IDS, PositionError, ScriptedDice, load_rules
from dice_poker_env.envs import DicePokerEnv, IllegalActionError
from dice_poker_env.envs.observation import flat_layout

SHIPPED_IDS = [i for i, r in ENV_IDS.items() if r is not None]
RULESETS = [r for r in ENV_IDS.values() if r is not None]


def make(env_id, **kwargs):
    if env_id == "DicePoker/Custom-v0":
        kwargs.setdefault("rules", "yacht")
    return gym.make(env_id, **kwargs)


@pytest.mark.parametrize("env_id", list(ENV_IDS))
@pytest.mark.parametrize("obs_mode", ["dict", "flat"])
def test_check_env_passes_with_warnings_as_errors(env_id, obs_mode):
    env = make(env_id, obs_mode=obs_mode)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.parametrize("joker", ["forced", "free", "none"])
def test_yahtzee_joker_kwarg(joker):
    env = gym.make("DicePoker/Yahtzee-v0", joker=joker)
    assert env.unwrapped.rules.options == {"joker": joker}


def test_custom_env_takes_rules_file_and_object(tmp_path):
    from dice_poker_env.rules import RULESET_NAMES  # noqa: F401

    path = tmp_path / "mini.toml"
    path.write_text(
        'name = "mini"\nboxes = [{ name = "chance", kind = "chance" }, { name = "sixes", kind = "face_sum", face = 6 }]\n'
    )
    env = gym.make("DicePoker/Custom-v0", rules=str(path))
    assert env.unwrapped.rules.box_names == ("chance", "sixes")
    assert env.action_space.n == 34
    env = gym.make("DicePoker/Custom-v0", rules=load_rules("yatzy"))
    assert env.unwrapped.rules.name == "yatzy"


def rollout(env, seed, steps=200):
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(steps):
        legal = np.flatnonzero(info["action_mask"])
        action = int(rng.choice(legal))
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((action, reward, terminated, obs["dice"].tolist(), info["score"]))
        if terminated:
            obs, info = env.reset()
    return trace


@pytest.mark.parametrize("env_id", SHIPPED_IDS)
def test_same_seed_same_game(env_id):
    assert rollout(gym.make(env_id), 7) == rollout(gym.make(env_id), 7)
    assert rollout(gym.make(env_id), 7) != rollout(gym.make(env_id), 8)


@pytest.mark.parametrize("env_id", SHIPPED_IDS)
def test_pickle_round_trip_continues_the_same_game(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=3)
    for action in (0, 5):
        env.step(action)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.rules == env.rules
    a = [env.step(int(np.flatnonzero(env.action_masks())[-1]))[:3] for _ in range(1)]
    b = [clone.step(int(np.flatnonzero(clone.action_masks())[-1]))[:3] for _ in range(1)]
    assert np.array_equal(a[0][0]["scores"], b[0][0]["scores"]) and a[0][1:] == b[0][1:]


@pytest.mark.parametrize("ruleset", RULESETS)
def test_random_masked_games(ruleset):
    """2,000 games: return == final score == scorecard total, every box once, masks never empty."""
    env = DicePokerEnv(ruleset)
    rules = env.rules
    rng = np.random.default_rng(0)
    n_upper = int(rules.tables.is_upper.sum())
    finals = []
    for game_index in range(2000):
        obs, info = env.reset(seed=game_index)
        total, filled_order = 0.0, []
        while True:
            mask = info["action_mask"]
            assert mask.dtype == np.int8 and mask.any()
            legal = np.flatnonzero(mask)
            action = int(legal[rng.integers(len(legal))])
            obs, reward, terminated, truncated, info = env.step(action)
            assert not truncated and "illegal_action" not in info
            total += reward
            if action >= 32:
                filled_order.append(action - 32)
            if terminated:
                break
        card = info["scorecard"]
        assert total == info["final_score"] == sum(card.values()) + int(obs["bonus"][0])
        assert sorted(filled_order) == list(range(rules.n_boxes))
        assert all(v is not None for v in card.values())
        if rules.sections_in_order:
            assert sorted(filled_order[:n_upper]) == list(range(n_upper))
        finals.append(total)
    assert np.mean(finals) > 0 or ruleset == "school_poker"


def test_yacht_seed_worked_turn_replayed_with_scripted_dice():
    """Seed 004: 1-2-2-4-6, keep the 2s -> 2-2-4-4-6, keep the 4s -> 1-4-4-4-4, Four of a Kind = 17."""
    dice = ScriptedDice([1, 2, 2, 4, 6, 4, 4, 6, 1, 4, 4, 3, 3, 3, 6, 6], then_random=True)
    env = gym.make("DicePoker/Yacht-v0", dice_source=dice)
    obs, info = env.reset(seed=0)
    assert obs["dice"].tolist() == [1, 2, 2, 4, 6]
    keep_twos = 0b00110  # dice 1 and 2 of the sorted roll
    obs, reward, *_ = env.step(keep_twos)
    assert obs["dice"].tolist() == [2, 2, 4, 4, 6] and reward == 0 and obs["rolls_left"] == 1
    keep_fours = 0b01100
    obs, reward, *_ = env.step(keep_fours)
    assert obs["dice"].tolist() == [1, 4, 4, 4, 4] and obs["rolls_left"] == 0
    assert not env.unwrapped.action_masks()[:32].any()  # no rerolls left
    four_of_a_kind = 32 + env.unwrapped.rules.box_index("four_of_a_kind")
    obs, reward, terminated, _, info = env.step(four_of_a_kind)
    assert reward == 17 and info["score"] == 17 and not terminated
    assert obs["dice"].tolist() == [3, 3, 3, 6, 6]  # the next turn's roll
    obs, reward, *_ = env.step(32 + env.unwrapped.rules.box_index("full_house"))
    assert reward == 21


def test_reset_from_a_position():
    env = gym.make("DicePoker/Yahtzee-v0")
    obs, info = env.reset(
        seed=1, options={"scorecard": {"yahtzee": 50, "fours": 12}, "dice": [4, 4, 4, 4, 4], "rolls_left": 0}
    )
    assert obs["rolls_left"] == 0 and obs["turn"] == 2 and obs["five_kind_box"] == 2
    assert not info["action_mask"][:32].any()
    obs, reward, *_ = env.step(32 + env.unwrapped.rules.box_index("large_straight"))
    assert reward == 140


@pytest.mark.parametrize(
    "options, message",
    [
        ({"scorecard": {"yahtzee": 40}}, "can never hold 40"),
        ({"scorecard": {"nope": 1}}, "no box 'nope'"),
        ({"dice": [1, 2, 3]}, "dice"),
        ({"dice": [1, 2, 3, 4, 5], "rolls_left": 3}, "rolls_left"),
        ({"rolls_left": 1}, "needs 'dice'"),
        ({"colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_reset_rejects_inconsistent_positions(options, message):
    env = gym.make("DicePoker/Yahtzee-v0")
    with pytest.raises(PositionError, match=message):
        env.reset(options=options)


def test_reset_rejects_section_order_violation():
    env = gym.make("DicePoker/SchoolPoker-v0")
    with pytest.raises(PositionError, match="sections in order"):
        env.reset(options={"scorecard": {"chance": 20}})


def test_illegal_action_terminates_with_penalty_by_default():
    env = gym.make("DicePoker/Yacht-v0", illegal_penalty=-5)
    env.reset(seed=0, options={"dice": [1, 2, 3, 4, 5], "rolls_left": 0})
    obs, reward, terminated, truncated, info = env.step(3)  # a keep with no rerolls left
    assert terminated and reward == -5 and info["illegal_action"]
    assert "no rerolls left" in info["illegal_reason"]


@pytest.mark.parametrize(
    "action, options, message",
    [
        (31, {}, "keeps all five dice"),
        (99, {}, "out of range"),
        (32, {"scorecard": {"ones": 3}}, "already filled"),
        (3, {"dice": [1, 2, 3, 4, 5], "rolls_left": 0}, "no rerolls left"),
    ],
)
def test_illegal_action_raise_names_the_action(action, options, message):
    env = gym.make("DicePoker/Yacht-v0", illegal_action="raise")
    env.reset(seed=0, options=options or None)
    before = env.unwrapped.state
    with pytest.raises(IllegalActionError, match=message):
        env.step(action)
    assert env.unwrapped.state is before  # nothing lost


def test_forced_joker_illegal_reason():
    env = gym.make("DicePoker/Yahtzee-v0", illegal_action="raise")
    env.reset(options={"scorecard": {"yahtzee": 50}, "dice": [4, 4, 4, 4, 4]})
    with pytest.raises(IllegalActionError, match="joker rule forces one of: fours"):
        env.step(32 + env.unwrapped.rules.box_index("chance"))


def test_school_poker_section_illegal_reason():
    env = gym.make("DicePoker/SchoolPoker-v0", illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match="upper boxes must all be filled first"):
        env.step(32 + env.unwrapped.rules.box_index("chance"))


def test_action_masks_method_matches_info():
    env = gym.make("DicePoker/DicePoker-v0")
    obs, info = env.reset(seed=0)
    assert np.array_equal(env.unwrapped.action_masks(), info["action_mask"])
    assert info["action_mask"][31] == 0 and info["action_mask"][:31].all()


def test_flat_observation_layout():
    env = gym.make("DicePoker/Yacht-v0", obs_mode="flat")
    obs, info = env.reset(options={"dice": [3, 3, 3, 6, 6]})
    n = 12
    assert obs.shape == (45 + 3 * n,) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    counts = obs[:6] * 5
    assert counts.tolist() == [0, 0, 3, 0, 0, 2]
    potential = obs[6 + 3 + 2 * n : 6 + 3 + 3 * n] * 50
    assert round(float(potential[6])) == 21  # full house: the dice sum
    assert round(float(potential[2])) == 9  # threes
    layout = flat_layout(env.unwrapped.rules.tables)
    assert layout["potential_points"] == slice(6 + 3 + 2 * n, 6 + 3 + 3 * n)
    assert layout["dice_one_hot"].stop == obs.shape[0]
    one_hot = obs[layout["dice_one_hot"]].reshape(5, 6)
    assert one_hot.sum(axis=1).tolist() == [1] * 5
    assert (one_hot.argmax(axis=1) + 1).tolist() == [3, 3, 3, 6, 6]  # die i of the sorted dice = keep bit i


def test_ansi_render_shows_dice_and_scorecard():
    env = gym.make("DicePoker/Yahtzee-v0", render_mode="ansi")
    env.reset(options={"scorecard": {"chance": 23}, "dice": [2, 2, 2, 5, 5]})
    text = env.render()
    assert "2 2 2 5 5" in text and "chance" in text and "23" in text and "full_house" in text
    assert "would score 25" in text


def test_info_at_the_end_has_final_score_and_scorecard():
    env = gym.make("DicePoker/Yacht-v0")
    card = {name: 0 for name in env.unwrapped.rules.box_names[:-1]}
    obs, info = env.reset(options={"scorecard": card, "dice": [6, 6, 6, 6, 6]})
    obs, reward, terminated, _, info = env.step(32 + 11)
    assert terminated and reward == 50 and info["final_score"] == 50 and info["scorecard"]["yacht"] == 50
    with pytest.raises(gym.error.ResetNeeded):
        env.unwrapped.step(0)


def test_package_does_not_import_torch():
    import subprocess
    import sys

    code = "import dice_poker_env, gymnasium as gym, sys; gym.make('DicePoker/Yacht-v0'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_version_exposed():
    assert dice_poker_env.__version__
