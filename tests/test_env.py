"""The single Gymnasium env: API conformance, seeding, masks, random play, replays."""

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dice_poker_env
from dice_poker_env import ENV_IDS, PositionError, ScriptedDice, load_rules
from dice_poker_env.engine.tables import compile_rules
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


@pytest.mark.parametrize("vector", [False, True])
def test_snapshots_share_the_read_only_tables_and_pickles_hold_only_the_rules(vector):
    """copy.deepcopy(env) is the documented snapshot of a game: it copied every table of the ruleset (tens of
    milliseconds, megabytes pickled); the tables and masks are read-only and shared, the copy plays on the same."""
    import copy

    from dice_poker_env.envs.vector import DicePokerVectorEnv

    env = DicePokerVectorEnv(3, "yatzy") if vector else DicePokerEnv("yatzy")
    env.reset(seed=3)
    clones = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for clone in clones:
        assert clone.tables is env.tables and clone._masks is env._masks  # (compile_rules' shared tables)
    assert len(pickle.dumps(env)) < 200_000  # the tables were 7 MB
    masks = env.action_masks()
    action = np.argmax(masks, axis=-1) if vector else int(np.flatnonzero(masks)[-1])
    ours = env.step(action)
    for clone in clones:
        theirs = clone.step(action)
        for key in ours[0]:
            np.testing.assert_array_equal(ours[0][key], theirs[0][key])
        np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("ruleset", RULESETS)
def test_random_masked_games(ruleset):
    """2,000 games: return == final score == scorecard total, every box once, masks never empty."""
    env = DicePokerEnv(ruleset)
    rules = env.rules
    rng = np.random.default_rng(0)
    n_upper = int(compile_rules(rules).is_upper.sum())
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
        assert set(card) == set(rules.box_names)  # a whole game: every box written
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


def test_a_script_that_runs_out_mid_roll_ends_in_its_last_faces_and_never_comes_back():
    """then_random=True: a roll needing five faces with three left drew five fair dice and left the three in the
    script, so the next reroll replayed them after the fair dice; "no" read as True."""
    dice = ScriptedDice([6, 6, 6, 6, 6, 1, 1, 1], then_random=True)
    env = gym.make("DicePoker/Yacht-v0", dice_source=dice)
    env.reset(seed=0)
    obs, *_ = env.step(32 + env.unwrapped.rules.box_index("yacht"))  # the next turn's five: 1 1 1, then two fair
    assert dice.remaining == 0 and obs["dice"].tolist().count(1) >= 3
    env.step(0)  # a reroll of all five: fair dice (it took the script's three 1s, left behind, and two fair dice)
    assert dice.remaining == 0
    with pytest.raises(TypeError, match="then_random must be True or False"):
        ScriptedDice([1], then_random="no")


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
    layout = flat_layout(compile_rules(env.unwrapped.rules))
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


def test_human_render_prints_the_first_position_and_every_step(capsys):
    """As Gymnasium's own envs: ``render_mode="human"`` shows the position after ``reset`` too."""
    env = gym.make("DicePoker/Yahtzee-v0", render_mode="human")
    env.reset(options={"scorecard": {"chance": 23}, "dice": [2, 2, 2, 5, 5]})
    assert "2 2 2 5 5" in capsys.readouterr().out
    env.step(32 + env.unwrapped.rules.box_names.index("full_house"))
    assert "full_house" in capsys.readouterr().out


def test_info_at_the_end_has_final_score_and_scorecard():
    env = gym.make("DicePoker/Yacht-v0")
    card = {name: 0 for name in env.unwrapped.rules.box_names[:-1]}
    obs, info = env.reset(options={"scorecard": card, "dice": [6, 6, 6, 6, 6]})
    obs, reward, terminated, _, info = env.step(32 + 11)
    assert terminated and reward == 50 and info["final_score"] == 50 and info["scorecard"]["yacht"] == 50
    with pytest.raises(gym.error.ResetNeeded):
        env.unwrapped.step(0)


def test_a_game_reset_from_a_scorecard_counts_its_points():
    """``score`` and ``info["score"]`` start at the points already on a reset scorecard; the final score is the
    whole card's."""
    env = gym.make("DicePoker/Yacht-v0")
    card = {name: 0 for name in env.unwrapped.rules.box_names[:-1]} | {"sixes": 24, "choice": 27}
    obs, info = env.reset(options={"scorecard": card, "dice": [6, 6, 6, 6, 6]})
    assert info["score"] == 51 and env.unwrapped.score == 51
    obs, reward, terminated, _, info = env.step(32 + 11)
    assert terminated and reward == 50
    assert info["final_score"] == 101 == sum(info["scorecard"].values())


def test_package_does_not_import_torch():
    import subprocess
    import sys

    code = "import dice_poker_env, gymnasium as gym, sys; gym.make('DicePoker/Yacht-v0'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ------------------------------------------------------------ issue 11: bad input
YAHTZEE_UPPER_105 = {"aces": 5, "twos": 10, "threes": 15, "fours": 20, "fives": 25, "sixes": 30}


def test_dice_none_means_fresh_random_dice():
    """Issue 11 item 2: ``"dice": None`` dealt 1-1-1-1-1 on every seed; None now means not given."""
    env = DicePokerEnv("yahtzee")
    rolls = set()
    for seed in range(6):
        plain = env.reset(seed=seed)[0]["dice"].tolist()
        given_none = env.reset(seed=seed, options={"dice": None})[0]["dice"].tolist()
        with_card = env.reset(seed=seed, options={"dice": None, "scorecard": {"chance": 20}, "rolls_left": None})[0]
        assert given_none == plain == with_card["dice"].tolist() and with_card["rolls_left"] == 2
        rolls.add(tuple(plain))
    assert len(rolls) > 1
    with pytest.raises(PositionError, match="'rolls_left' needs 'dice'"):
        env.reset(options={"dice": None, "rolls_left": 1})


@pytest.mark.parametrize(
    "dice",
    [
        [1.5, 2, 3, 4, 5],
        [True, 2, 3, 4, 5],
        [1, 2, 3, 4, np.True_],
        np.array([1.0, 2, 3, 4, 5]),
        np.array([True] * 5),
        "12345",
        ["1", "2", "3", "4", "5"],
        [0, 1, 2, 3, 4],
        [1, 2, 3, 4, 7],
        [1, 2, 3, 4, 10**30],
        [1, 2, 3, 4],
        5,
    ],
)
def test_dice_that_are_not_five_integer_faces_are_rejected_not_truncated(dice):
    env = DicePokerEnv("yacht")
    with pytest.raises(PositionError, match=r"dice: expected 5 integers in 1..6"):
        env.reset(options={"dice": dice})


def test_dice_as_numpy_integers_are_accepted():
    env = DicePokerEnv("yacht")
    for dice in (np.array([6, 5, 4, 3, 2], dtype=np.uint8), [np.int64(6)] * 5, (1, 1, 2, 2, 3)):
        assert sorted(env.reset(options={"dice": dice})[0]["dice"].tolist()) == sorted(int(d) for d in dice)


@pytest.mark.parametrize(
    "ruleset, scorecard, bonus",
    [
        ("yahtzee", {}, 7),  # not a sum of bonuses the rules pay
        ("yahtzee", {}, 1000),
        ("yahtzee", {}, 10**30),  # was an OverflowError
        ("yahtzee", {}, -100),
        ("yacht", {}, 35),  # yacht has no bonus at all
        ("yahtzee", {"yahtzee": 0, "chance": 30}, 100),  # the Yahtzee box scratched: no Yahtzee bonus
        ("yahtzee", {"yahtzee": 50}, 100),  # no other box filled: no further five of a kind yet
        ("yahtzee", {"yahtzee": 50, "aces": 2}, 100),  # two aces are not five of a kind
        ("yahtzee", YAHTZEE_UPPER_105, 0),  # 105 in the upper boxes: the 35 is certain
        ("yahtzee", YAHTZEE_UPPER_105, 135),
        ("yahtzee", {"aces": 3}, 35),  # the upper bonus is not reached
        ("school_poker", {"ones": 0, "twos": 0, "threes": 0, "fours": 0, "fives": 0}, 50),  # paid on completion only
        ("dice_poker", {"poker": 50, "chance": 30, "aces": 5}, 300),  # two bonuses need two other boxes
    ],
)
def test_unreachable_bonus_is_rejected(ruleset, scorecard, bonus):
    """Issue 11 item 3: the bonus is validated against the scorecard like every other field."""
    env = DicePokerEnv(ruleset)
    with pytest.raises(PositionError, match=r"^bonus: .* cannot have paid"):
        env.reset(options={"scorecard": scorecard, "bonus": bonus})


@pytest.mark.parametrize("bonus", [True, 35.0, "35", [35]])
def test_bonus_must_be_an_integer(bonus):
    with pytest.raises(PositionError, match="bonus: expected an integer"):
        DicePokerEnv("yahtzee").reset(options={"scorecard": YAHTZEE_UPPER_105, "bonus": bonus})


@pytest.mark.parametrize(
    "ruleset, scorecard, bonus",
    [
        ("yahtzee", YAHTZEE_UPPER_105, None),  # default: the secured upper bonus, 35
        ("yahtzee", YAHTZEE_UPPER_105, np.int64(35)),
        ("yahtzee", {"yahtzee": 50, "aces": 5}, 100),  # five aces after the Yahtzee: +100
        ("yahtzee", {**YAHTZEE_UPPER_105, "yahtzee": 50}, 35 + 600),  # six further five of a kind
        ("yahtzee", {"yahtzee": 50, "chance": 30, "full_house": 25}, 200),  # joker in full house, chance 6-6-6-6-6
        ("dice_poker", {"poker": 50, "chance": 30, "aces": 5}, 200),
        ("school_poker", {"ones": 0, "twos": 0, "threes": 0, "fours": 0, "fives": 0, "sixes": 0}, 50),
    ],
)
def test_reachable_bonus_is_accepted(ruleset, scorecard, bonus):
    env = DicePokerEnv(ruleset)
    obs, _ = env.reset(options={"scorecard": scorecard, "bonus": bonus})
    expected = 35 if bonus is None else int(bonus)
    assert obs["bonus"][0] == expected and env.observation_space.contains(obs)


def test_scorecard_points_far_outside_any_box_are_a_position_error():
    env = DicePokerEnv("yahtzee")
    for points in (10**30, -(10**30), 2**63):
        with pytest.raises(PositionError, match="can never hold"):
            env.reset(options={"scorecard": {"chance": points}})


@pytest.mark.parametrize("penalty", ["x", float("nan"), float("inf"), None, True, [1]])
def test_illegal_penalty_must_be_a_finite_number(penalty):
    with pytest.raises(ValueError, match="illegal_penalty must be a finite number"):
        DicePokerEnv("yacht", illegal_penalty=penalty)
    assert DicePokerEnv("yacht", illegal_penalty=np.float32(-2)).illegal_penalty == -2.0


@pytest.mark.parametrize("source", [3, "dice", [1, 2, 3]])
def test_dice_source_must_roll(source):
    with pytest.raises(TypeError, match="dice_source must be a dice source with a roll"):
        DicePokerEnv("yacht", dice_source=source)


def test_an_env_of_a_rules_object_survives_its_specs_json():
    """EnvSpec.to_json writes a Rules object field by field (dataclasses.asdict); gymnasium.make of the spec read
    back (what Minari's recover_environment does) plays the same ruleset, options included."""
    from gymnasium.envs.registration import EnvSpec

    rules = load_rules("yahtzee", joker="free")
    env = dice_poker_env.make(rules)
    again = gym.make(EnvSpec.from_json(env.spec.to_json()))
    assert again.unwrapped.rules == rules and again.unwrapped.rules.options == {"joker": "free"}
    assert again.unwrapped.rules.fingerprint == rules.fingerprint


def test_one_random_dice_given_to_several_envs_plays_as_the_default():
    """gymnasium.make_vec hands the same kwargs to every sub-env: one RandomDice, whose block of faces belongs
    to one generator, made the sync envs' dice differ from the default's and from async's."""
    from dice_poker_env import RandomDice

    def dice(mode, **kwargs):
        envs = gym.make_vec("DicePoker/Yacht-v0", 2, vectorization_mode=mode, **kwargs)
        seen = [envs.reset(seed=0)[0]["dice"].copy()]
        seen += [envs.step(np.zeros(2, dtype=np.int64))[0]["dice"].copy() for _ in range(3)]
        envs.close()
        return np.array(seen)

    np.testing.assert_array_equal(dice("sync", dice_source=RandomDice()), dice("sync"))


@pytest.mark.parametrize("rules", [None, 123])
def test_custom_env_with_rules_of_the_wrong_type_is_a_rules_error(rules):
    with pytest.raises(dice_poker_env.RulesError, match="rules: expected a ruleset name"):
        gym.make("DicePoker/Custom-v0", rules=rules)


def test_custom_env_without_rules_is_a_rules_error_not_yacht():
    with pytest.raises(dice_poker_env.RulesError, match="got None"):
        gym.make("DicePoker/Custom-v0")


@pytest.mark.parametrize("options", [["dice"], "dice", 5, [("dice", [1, 2, 3, 4, 5])]])
def test_reset_options_must_be_a_dict(options):
    env = DicePokerEnv("yacht")
    with pytest.raises(PositionError, match="reset options: expected a dict"):
        env.reset(options=options)


@pytest.mark.parametrize("seed", [True, 1.5, "0"])
def test_reset_seed_must_be_an_int(seed):
    with pytest.raises((TypeError, gym.error.Error)):
        DicePokerEnv("yacht").reset(seed=seed)
    assert (
        DicePokerEnv("yacht").reset(seed=np.int64(3))[0]["dice"].tolist()
        == DicePokerEnv("yacht").reset(seed=3)[0]["dice"].tolist()
    )


def test_a_0d_integer_tensor_is_an_action_as_in_the_vector_env():
    """A torch policy's ``torch.tensor(3)`` plays action 3 (Gymnasium's ``Discrete`` takes 0-d integers); a 1-d,
    float or bool tensor is not an action."""
    torch = pytest.importorskip("torch")
    for action, legal in ((torch.tensor(3), True), (torch.tensor(3, dtype=torch.uint8), True), (torch.tensor([3]), False),
                          (torch.tensor(3.0), False), (torch.tensor(True), False)):  # fmt: skip
        env = DicePokerEnv("yacht")
        env.reset(seed=0)
        expected = DicePokerEnv("yacht")
        expected.reset(seed=0)
        obs, _, _, _, info = env.step(action)
        assert (not info.get("illegal_action")) == legal, action
        if legal:
            assert obs["dice"].tolist() == expected.step(3)[0]["dice"].tolist()


@pytest.mark.parametrize("action", [31, 99, -1, None, True, 3.0, np.array([3]), np.float64(3), "3"])
def test_masks_are_all_zeros_after_an_illegal_action_ends_the_episode(action):
    env = DicePokerEnv("yacht")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(action)
    assert terminated and info["illegal_action"]
    assert not env.action_masks().any() and not info["action_mask"].any()
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    assert env.reset(seed=0)[1]["action_mask"].any()


@pytest.mark.parametrize(
    "boxes, dice, action_box, rolls_left",
    [
        # relative_face with a negative base next to one with a positive base: partial totals below the sum of minima
        (
            [
                {"name": "a", "kind": "relative_face", "face": 5, "base": -1},
                {"name": "b", "kind": "relative_face", "face": 6, "base": 5},
            ],
            [1, 1, 1, 1, 1],
            1,
            2,
        ),
        # an upper-section chance plus a negative box
        (
            [
                {"name": "c", "kind": "chance", "section": "upper"},
                {"name": "n", "kind": "n_of_a_kind", "n": 2, "points": -9, "section": "upper"},
            ],
            [2, 2, 3, 4, 5],
            1,
            2,
        ),
        # an upper box with first-roll doubling: 58 > the 35 of Box(0, 35) before
        (
            [
                {"name": "c", "kind": "chance", "section": "upper", "first_roll_double": True},
                {"name": "x", "kind": "chance"},
            ],
            [5, 6, 6, 6, 6],
            0,
            2,
        ),
    ],
    ids=["negative-base", "upper-chance-and-negative-box", "upper-first-roll-double"],
)
@pytest.mark.parametrize("obs_mode", ["dict", "flat"])
def test_upper_total_stays_in_its_space(boxes, dice, action_box, rolls_left, obs_mode):
    """Issue 11 item 5: the three valid rulesets whose upper_total left Box(lo, hi)."""
    env = DicePokerEnv({"name": "space", "boxes": boxes}, obs_mode=obs_mode)
    obs, _ = env.reset(options={"dice": dice, "rolls_left": rolls_left})
    assert env.observation_space.contains(obs)
    obs, *_ = env.step(32 + action_box)
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("seed", range(4))
def test_observations_stay_in_their_spaces_on_random_valid_rulesets(seed):
    """Property test: random masked games on random valid rulesets (all box kinds in either section,
    negative points and bases, first-roll doubling, jokers, bonuses, points up to the supported
    limit); every observation, dict and flat, lies in the declared space."""
    from random_rules import random_rules

    rng = np.random.default_rng(1000 + seed)
    for case in range(25):
        rules = random_rules(rng, max_boxes=8)
        for obs_mode in ("dict", "flat"):
            env = DicePokerEnv(rules, obs_mode=obs_mode)
            obs, info = env.reset(seed=case)
            done = False
            while True:
                assert env.observation_space.contains(obs), (rules.spec, obs)
                if done:
                    break
                obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))


# ------------------------------------------------------------ mutation round 3: reset, dice, illegal ends
def test_a_refused_position_leaves_the_seed_and_the_game_as_they_were():
    """A position that reset() refuses changes nothing: it is checked before the seed reseeds the generator."""
    env = DicePokerEnv("yacht")
    env.reset(seed=3)
    state, generator = env.state, env.np_random.bit_generator.state
    with pytest.raises(PositionError, match="dice"):
        env.reset(seed=99, options={"dice": [1, 2, 3]})
    assert env.state is state and env.np_random.bit_generator.state == generator


def test_given_dice_and_the_games_last_box_roll_no_dice():
    """reset() with given dice rolls none, and writing the last box ends the game without a roll: a scripted
    source holding exactly one reroll's faces serves that reroll and is never asked for more."""
    dice = ScriptedDice([2, 3, 4, 5, 6])
    env = DicePokerEnv("yacht", dice_source=dice)
    card = {name: 0 for name in env.rules.box_names[:-1]}
    env.reset(seed=0, options={"scorecard": card, "dice": [6, 6, 6, 6, 6]})
    assert dice.remaining == 5
    obs, *_ = env.step(0)  # reroll all five
    assert obs["dice"].tolist() == [2, 3, 4, 5, 6] and dice.remaining == 0
    obs, reward, terminated, _, info = env.step(32 + env.rules.box_index("yacht"))
    assert terminated and reward == 0 and info["final_score"] == 0


def test_an_illegal_end_reports_the_final_score_and_only_the_filled_boxes():
    """An illegal action ends the game with ``final_score`` (the points so far) and ``scorecard`` holding the
    filled boxes only: the open ones are left out, not written as 0."""
    env = DicePokerEnv("yacht")
    env.reset(seed=0, options={"scorecard": {"sixes": 24, "choice": 27}})
    _, reward, terminated, _, info = env.step(31)
    assert terminated and reward == 0 and info["illegal_action"]
    assert info["final_score"] == 51 == info["score"]
    assert info["scorecard"] == {"sixes": 24, "choice": 27}


def test_setting_illegal_action_keeps_the_penalty_and_a_bad_penalty_is_refused():
    """The live attributes: ``illegal_action`` changes the mode only; ``illegal_penalty`` is validated and the
    refused value leaves the old one in place."""
    env = DicePokerEnv("yacht", illegal_penalty=-3)
    env.illegal_action = "raise"
    assert env.illegal_action == "raise" and env.illegal_penalty == -3
    env.reset(seed=0)
    with pytest.raises(IllegalActionError):
        env.step(31)
    env.illegal_action = "terminate"
    for bad in (float("nan"), "x", None):
        with pytest.raises(ValueError, match="illegal_penalty must be a finite number"):
            env.illegal_penalty = bad
    assert env.illegal_penalty == -3
    env.reset(seed=0)
    assert env.step(31)[1] == -3


def test_reset_refuses_a_finished_scorecard_and_a_boolean_rolls_left():
    """A scorecard with every box filled leaves no turn to play; ``rolls_left=True`` is not the integer 1."""
    env = DicePokerEnv("yacht")
    with pytest.raises(PositionError, match="already over"):
        env.reset(options={"scorecard": dict.fromkeys(env.rules.box_names, 0)})
    with pytest.raises(PositionError, match="rolls_left"):
        env.reset(options={"dice": [1, 2, 3, 4, 5], "rolls_left": True})


def test_a_scorecard_box_given_as_none_stays_open():
    """``{box: None}`` in a reset scorecard is an open box (as a key given as None counts as not given)."""
    env = DicePokerEnv("yacht")
    obs, info = env.reset(seed=0, options={"scorecard": {"ones": None, "twos": 4}})
    assert env.scorecard()["ones"] is None and env.scorecard()["twos"] == 4
    assert info["action_mask"][32 + env.rules.box_index("ones")] == 1 and info["score"] == 4
