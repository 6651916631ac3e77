"""The batched vector env: the single env N times (issue 5)."""

from __future__ import annotations

import pickle
import zlib

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode

import dice_poker_env
from dice_poker_env import ScriptedDice
from dice_poker_env.engine import game
from dice_poker_env.engine.masks import ActionMasks, action_masks
from dice_poker_env.engine.position import PositionError, make_position
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs import DicePokerEnv, IllegalActionError
from dice_poker_env.envs.vector import DicePokerVectorEnv

RULESETS = dice_poker_env.RULESET_NAMES
# every ruleset, and the Yahtzee joker variants (they change the legal actions)
VARIANTS = [(name, {}) for name in RULESETS] + [("yahtzee", {"joker": "free"}), ("yahtzee", {"joker": "none"})]
VARIANT_IDS = [name + "".join(f"-{k}={v}" for k, v in opts.items()) for name, opts in VARIANTS]


def masked_random(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row (0 for rows without legal actions)."""
    noise = rng.random(masks.shape) * masks
    return np.where(masks.any(axis=1), noise.argmax(axis=1), 0)


def face_scripts(seed: int, n: int, length: int = 4000) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(1, 7, size=length).tolist() for _ in range(n)]


def assert_same(batched, single, path="") -> None:
    """Batched value (arrays, dicts of arrays) equals the stacked single values."""
    if isinstance(batched, dict):
        assert set(batched) == set(single), f"{path}: keys {sorted(batched)} != {sorted(single)}"
        for key in batched:
            assert_same(batched[key], single[key], f"{path}.{key}")
        return
    np.testing.assert_array_equal(np.asarray(batched), np.asarray(single), err_msg=path)


def assert_same_info(mine: dict, theirs: dict, path="info") -> None:
    """Gymnasium vector infos agree: same keys and masks, same values where a mask is set."""
    assert set(mine) == set(theirs), f"{path}: {sorted(mine)} != {sorted(theirs)}"
    for key, value in mine.items():
        if key.startswith("_"):
            np.testing.assert_array_equal(value, theirs[key], err_msg=f"{path}.{key}")
        elif isinstance(value, dict):
            assert_same_info(value, theirs[key], f"{path}.{key}")
        else:
            present = mine[f"_{key}"]
            for i in np.flatnonzero(present):
                if isinstance(value[i], dict):
                    assert_same(value[i], theirs[key][i], f"{path}.{key}[{i}]")
                else:
                    np.testing.assert_array_equal(value[i], theirs[key][i], err_msg=f"{path}.{key}[{i}]")


# ---------------------------------------------------------------- construction
@pytest.mark.parametrize("env_id", list(dice_poker_env.ENV_IDS))
def test_make_vec_every_id(env_id):
    kwargs = {"rules": "yatzy"} if dice_poker_env.ENV_IDS[env_id] is None else {}
    envs = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", **kwargs)
    single = gym.make(env_id, **kwargs)
    assert isinstance(envs.unwrapped, DicePokerVectorEnv)
    assert envs.num_envs == 3
    assert envs.single_observation_space == single.observation_space
    assert envs.single_action_space == single.action_space
    assert envs.observation_space == batch_space(single.observation_space, 3)
    assert envs.action_space == batch_space(single.action_space, 3)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    assert envs.observation_space.contains(obs)
    masks = envs.unwrapped.action_masks()
    assert masks.shape == (3, single.action_space.n) and masks.dtype == np.int8
    np.testing.assert_array_equal(info["action_mask"], masks)
    envs.close()


def test_rule_options_and_custom_rules_object():
    envs = gym.make_vec("DicePoker/Yahtzee-v0", num_envs=2, vectorization_mode="vector_entry_point", joker="free")
    assert envs.unwrapped.rules == dice_poker_env.load_rules("yahtzee", joker="free")
    rules = dice_poker_env.load_rules("dice_poker")
    envs = gym.make_vec(
        "DicePoker/Custom-v0", num_envs=2, vectorization_mode="vector_entry_point", rules=rules, obs_mode="flat"
    )
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (2, 45 + 3 * 15) and obs.dtype == np.float32


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_envs"):
        DicePokerVectorEnv(0, "yacht")
    with pytest.raises(ValueError, match=r"comes first, DicePokerVectorEnv\(num_envs, rules\)"):
        DicePokerVectorEnv("yacht")  # the single env's order (its rules first)
    with pytest.raises(ValueError, match="autoreset_mode"):
        DicePokerVectorEnv(2, "yacht", autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="one source per game"):
        DicePokerVectorEnv(2, "yacht", dice_source=[ScriptedDice([1])])
    env = DicePokerVectorEnv(2, "yacht")
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError, match="integers"):
        env.step(np.zeros(2))


# ---------------------------------------------------------- lock-step equivalence
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize(("rules", "options"), VARIANTS, ids=VARIANT_IDS)
def test_lockstep_equals_sync_vector_env_of_single_envs(rules, options, mode):
    """Same dice per game: identical observations, masks, rewards, terminations and infos
    to Gymnasium's SyncVectorEnv over N single envs, over several full games each."""
    n = 6
    scripts = face_scripts(zlib.crc32(f"{rules}{sorted(options.items())}".encode()), n)
    mine = DicePokerVectorEnv(n, rules, dice_source=[ScriptedDice(s) for s in scripts], autoreset_mode=mode, **options)
    theirs = SyncVectorEnv(
        [lambda s=s: DicePokerEnv(rules, dice_source=ScriptedDice(s), **options) for s in scripts],
        autoreset_mode=mode,
    )
    rng = np.random.default_rng(7)
    obs_a, info_a = mine.reset(seed=3)
    obs_b, info_b = theirs.reset(seed=3)
    assert_same(obs_a, obs_b)
    assert_same_info(info_a, info_b)
    episodes = np.zeros(n, dtype=int)
    steps = 0
    while episodes.min() < 3:
        masks = mine.action_masks()
        np.testing.assert_array_equal(masks, np.stack(theirs.call("action_masks")))
        actions = masked_random(rng, masks)
        obs_a, rew_a, term_a, trunc_a, info_a = mine.step(actions)
        obs_b, rew_b, term_b, trunc_b, info_b = theirs.step(actions)
        assert_same(obs_a, obs_b)
        for key, value in obs_a.items():
            assert value.dtype == obs_b[key].dtype, key
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(term_a, term_b)
        np.testing.assert_array_equal(trunc_a, trunc_b)
        assert_same_info(info_a, info_b)
        episodes += term_a
        steps += 1
        assert steps < 1000
    # both consumed exactly the same dice
    assert [s.remaining for s in mine.dice_source] == [e.unwrapped.dice_source.remaining for e in theirs.envs]


@pytest.mark.parametrize("rules", RULESETS)
def test_flat_observations_match_single_env(rules):
    n = 4
    scripts = face_scripts(11, n)
    mine = DicePokerVectorEnv(n, rules, obs_mode="flat", dice_source=[ScriptedDice(s) for s in scripts])
    singles = [DicePokerEnv(rules, obs_mode="flat", dice_source=ScriptedDice(s)) for s in scripts]
    obs, _ = mine.reset()
    np.testing.assert_array_equal(obs, np.stack([e.reset()[0] for e in singles]))
    rng = np.random.default_rng(1)
    for _ in range(3 * 15):
        actions = masked_random(rng, mine.action_masks())
        obs, reward, terminated, _, _ = mine.step(actions)
        results = [e.step(int(a)) for e, a in zip(singles, actions)]
        np.testing.assert_array_equal(obs, np.stack([r[0] for r in results]))
        np.testing.assert_array_equal(reward, [r[1] for r in results])
        if terminated.any():
            break


@pytest.mark.parametrize(("rules", "options"), VARIANTS, ids=VARIANT_IDS)
def test_masks_are_the_engines(rules, options):
    """The mask lookup tables agree with the engine's legal boxes, which rulesets with many boxes use directly."""
    env = DicePokerVectorEnv(64, rules, **options)
    plain = DicePokerVectorEnv(64, rules, **options)
    plain._masks = ActionMasks(plain.tables, use_tables=False)  # the path of rulesets too large for the tables
    engine = ActionMasks(env.tables, use_tables=False)
    env.reset(seed=5)
    plain.reset(seed=5)
    rng = np.random.default_rng(5)
    ended_illegally = np.zeros(64, dtype=bool)
    for _ in range(60):
        expected = engine.of_batch(env.state)
        expected[ended_illegally] = 0  # a game an illegal action ended has no legal action
        np.testing.assert_array_equal(env.action_masks(), expected)
        np.testing.assert_array_equal(env.action_masks(), plain.action_masks())
        actions = masked_random(rng, env.action_masks())
        actions[::7] = 31  # some illegal actions too
        a, b = env.step(actions), plain.step(actions)
        ended_illegally = a[4].get("illegal_action", np.zeros(64, dtype=bool))
        assert_same(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[2], b[2])
        np.testing.assert_array_equal(a[4]["action_mask"], b[4]["action_mask"])


@pytest.mark.parametrize(("rules", "options"), VARIANTS, ids=VARIANT_IDS)
def test_engine_masks_of_one_game_are_explain_illegals_verdicts(rules, options):
    """One game's mask without tables (the path of rulesets too large for them) is exactly the engine's
    legality: an action is legal where ``explain_illegal`` finds nothing against it; keep-all (31) never is,
    and no keep once the rerolls are used up. Positions: two random games, and a joker position."""
    env = DicePokerEnv(rules, **options)
    engine = ActionMasks(env.tables, use_tables=False)
    assert not engine.tabled
    states = []
    rng = np.random.default_rng(3)
    for seed in (0, 1):
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            states.append(env.state)
            _, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    if "yahtzee" in env.rules.box_names:  # five of a kind with its box full: the joker decides the boxes
        states.append(make_position(env.tables, {"yahtzee": 50, "fours": 12}, [4, 4, 4, 4, 4]))
    assert any(state.rolls_left > 0 for state in states) and any(state.rolls_left == 0 for state in states)
    for state in states:
        mask = engine.of_game(state)
        verdicts = [game.explain_illegal(env.tables, state, a) is None for a in range(env.tables.n_actions)]
        np.testing.assert_array_equal(mask, np.array(verdicts, dtype=np.int8), err_msg=str(state))
        assert mask[31] == 0 and (mask[:31].all() if state.rolls_left > 0 else not mask[:31].any())


# ------------------------------------------------------------- random play
def play_batched(rules: str, n_games: int, seed: int) -> np.ndarray:
    """Final scores of n_games random masked games, all played at once (first episode of each game)."""
    env = DicePokerVectorEnv(n_games, rules)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    returns = np.zeros(n_games)
    final = np.full(n_games, -(10**6), dtype=np.int64)
    live = np.ones(n_games, dtype=bool)
    while live.any():
        masks = env.action_masks()
        assert masks[live].any(axis=1).all(), "a live game has no legal action"
        _, reward, terminated, truncated, info = env.step(masked_random(rng, masks))
        assert not truncated.any()
        returns += np.where(live, reward, 0)
        ended = terminated & live
        if ended.any():
            final[ended] = info["final_score"][ended]
            for box in env.rules.box_names:  # every box filled
                assert info["scorecard"][f"_{box}"][ended].all()
        live &= ~terminated
    np.testing.assert_array_equal(returns, final)
    return final


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    grid = np.union1d(a, b)
    cdf_a = np.searchsorted(np.sort(a), grid, side="right") / len(a)
    cdf_b = np.searchsorted(np.sort(b), grid, side="right") / len(b)
    return float(np.abs(cdf_a - cdf_b).max())


def play_single(rules: str, n_games: int, seed: int) -> np.ndarray:
    env = DicePokerEnv(rules)
    rng = np.random.default_rng(seed)
    scores = np.zeros(n_games, dtype=np.int64)
    for g in range(n_games):
        _, info = env.reset(seed=seed + g)
        total, done = 0.0, False
        while not done:
            legal = np.flatnonzero(info["action_mask"])
            _, reward, done, _, info = env.step(int(legal[rng.integers(len(legal))]))
            total += reward
        assert total == info["final_score"]
        scores[g] = info["final_score"]
    return scores


@pytest.mark.parametrize("rules", RULESETS)
def test_100k_random_batched_games_match_single_env(rules):
    batched = play_batched(rules, 100_000, seed=2024)
    single = play_single(rules, 1500, seed=99)
    # same distribution of random-play scores: means within 4 standard errors and a KS test at alpha ~ 1e-4
    se = np.sqrt(batched.var() / len(batched) + single.var() / len(single))
    assert abs(batched.mean() - single.mean()) < 4 * se, (batched.mean(), single.mean(), se)
    critical = 2.15 * np.sqrt((len(batched) + len(single)) / (len(batched) * len(single)))
    assert ks_statistic(batched, single) < critical


# ------------------------------------------------------------- autoreset modes
def test_next_step_autoreset_ignores_action_and_starts_new_game():
    env = DicePokerVectorEnv(3, "yacht")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    while True:
        _, _, terminated, _, info = env.step(masked_random(rng, env.action_masks()))
        if terminated.any():
            break
    ended = terminated.copy()
    assert (env.action_masks()[ended] == 0).all()  # an ended game has no legal action ...
    np.testing.assert_array_equal(info["_final_score"], ended)
    assert set(info["scorecard"]) == {*env.rules.box_names, *(f"_{b}" for b in env.rules.box_names)}
    obs, reward, terminated, _, info = env.step(np.full(3, 44))  # ... and its action is ignored
    assert (reward[ended] == 0).all() and not terminated[ended].any()
    assert (obs["turn"][ended] == 0).all() and (obs["rolls_left"][ended] == 2).all()
    assert (info["score"][ended] == 0).all()


def test_same_step_autoreset_reports_final_obs_and_info():
    env = DicePokerVectorEnv(4, "yatzy", autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    returns = np.zeros(4)
    seen = 0
    for _ in range(200):
        obs, reward, terminated, _, info = env.step(masked_random(rng, env.action_masks()))
        returns += reward
        assert env.action_masks().any(axis=1).all()  # never an ended game in the batch
        if terminated.any():
            np.testing.assert_array_equal(info["_final_obs"], terminated)
            for i in np.flatnonzero(terminated):
                assert info["final_obs"][i]["turn"] == env.tables.turns
                assert obs["turn"][i] == 0
                assert info["final_info"]["final_score"][i] == returns[i]
            returns[terminated] = 0
            seen += terminated.sum()
    assert seen > 0


def test_next_step_reset_step_pays_nothing_whatever_the_ended_game_is_sent():
    """NEXT_STEP: the step that starts an ended game over ignores its action, a score action included
    (one that would score points in a live game): its reward is 0, not what that box would have paid."""
    env = DicePokerVectorEnv(3, "yacht")
    last = env.rules.box_index("choice")
    card = {name: 0 for name in env.rules.box_names if name != "choice"}
    env.reset(seed=0, options={"scorecard": card, "rolls_left": 0, "dice": [6, 6, 6, 6, 6]})
    _, reward, terminated, _, _ = env.step(np.full(3, 32 + last))
    assert terminated.all() and reward.tolist() == [30.0, 30.0, 30.0]
    sixes, yacht = env.rules.box_index("sixes"), env.rules.box_index("yacht")
    obs, reward, terminated, _, info = env.step(np.array([32 + last, 32 + sixes, 32 + yacht]))  # in range, ignored
    assert reward.tolist() == [0.0, 0.0, 0.0] and not terminated.any()
    assert (obs["turn"] == 0).all() and (info["score"] == 0).all()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_new_game_starts_without_the_last_games_bonus(mode):
    """Autoreset starts every field afresh, the bonus paid so far included: a game that earned Yahtzee's
    upper bonus (35) is followed by one whose observation shows a bonus of 0."""
    env = DicePokerVectorEnv(2, "yahtzee", autoreset_mode=mode)
    upper = {"aces": 3, "twos": 6, "threes": 9, "fours": 12, "fives": 15, "sixes": 18}  # 63: the bonus is secured
    card = {**upper, **{name: 0 for name in env.rules.box_names[6:] if name != "chance"}}
    obs, _ = env.reset(seed=0, options={"scorecard": card, "rolls_left": 0, "dice": [1, 2, 3, 4, 6]})
    assert obs["bonus"].ravel().tolist() == [35, 35]
    obs, _, terminated, _, info = env.step(np.full(2, 32 + env.rules.box_index("chance")))
    assert terminated.all()
    if mode == AutoresetMode.SAME_STEP:  # the new games are in this step's observation
        assert [int(final["bonus"][0]) for final in info["final_obs"]] == [35, 35]
    else:  # the new games start in the next step
        assert obs["bonus"].ravel().tolist() == [35, 35]
        obs, *_ = env.step(np.zeros(2, dtype=np.int64))
    assert (obs["turn"] == 0).all() and obs["bonus"].ravel().tolist() == [0, 0]
    assert (obs["upper_total"] == 0).all() and not obs["filled"].any()


def test_disabled_autoreset_needs_masked_reset():
    env = DicePokerVectorEnv(2, "yacht", autoreset_mode="Disabled")
    env.reset(seed=0, options={"reset_mask": np.array([True, True])})
    rng = np.random.default_rng(0)
    terminated = np.zeros(2, dtype=bool)
    while not terminated.any():
        _, _, terminated, _, _ = env.step(masked_random(rng, env.action_masks()))
    with pytest.raises(gym.error.ResetNeeded, match="reset_mask"):
        env.step(np.zeros(2, dtype=np.int64))
    obs, info = env.reset(options={"reset_mask": terminated})
    np.testing.assert_array_equal(info["_action_mask"], terminated)
    assert (obs["turn"][terminated] == 0).all()


# ---------------------------------------------------------------- illegal actions
@pytest.mark.parametrize(("rules", "options"), [("yahtzee", {"joker": "forced"}), ("school_poker", {}), ("yacht", {})])
def test_every_illegal_reason_is_the_single_envs_words_for_that_game(rules, options):
    """Reasons that depend on the action alone are worded once and looked up (they cost 40% of an unmasked
    agent's steps worded game by game); each one is still what the single env says of that game and action,
    the joker's and the upper section's (worded game by game) included. Actions out of range and of the boxes'
    half, many of them filled, at every stage of the game."""
    from dice_poker_env.envs.illegal import illegal_reason

    env = DicePokerVectorEnv(256, rules, **options)
    env.reset(seed=3)
    tables, rng = env.tables, np.random.default_rng(5)
    seen: set[str] = set()  # the kinds of reasons met (KINDS)
    for step in range(120):
        masks = env.action_masks()
        legal = np.argmax(masks * rng.random(masks.shape), axis=1)
        wild = rng.integers(-3, tables.n_actions + 3, env.num_envs)
        actions = np.where(rng.random(env.num_envs) < 0.2, wild, legal)
        before = [field.copy() for field in env.state]
        _, _, _, _, info = env.step(actions)
        if "illegal_reason" not in info:
            continue
        state = type(env.state)(*before)
        for i in np.flatnonzero(info["_illegal_reason"]):
            expected = illegal_reason(tables, state.game(int(i)), int(actions[i]))
            assert info["illegal_reason"][i] == expected, (step, i, actions[i])
            seen |= {kind for kind in KINDS if kind in expected}
        assert all(r is None for r in info["illegal_reason"][~info["_illegal_reason"]])
    # the three looked up, and worded game by game: out of range (and the upper section first in school poker)
    assert seen >= {"keeps all", "no rerolls", "already filled", "out of range"}, seen
    assert ("upper boxes" in seen) == (rules == "school_poker")


KINDS = ("keeps all", "no rerolls", "already filled", "out of range", "upper boxes", "joker")


def test_illegal_action_terminates_only_that_game():
    env = DicePokerVectorEnv(3, "yahtzee", illegal_penalty=-5.0)
    twin = DicePokerVectorEnv(3, "yahtzee")
    obs0, _ = env.reset(seed=4)
    twin.reset(seed=4)
    actions = np.array([0, 31, 999])  # legal, keep-all, out of range
    obs, reward, terminated, _, info = env.step(actions)
    np.testing.assert_array_equal(terminated, [False, True, True])
    np.testing.assert_array_equal(reward[1:], [-5.0, -5.0])
    np.testing.assert_array_equal(info["_illegal_action"], [False, True, True])
    assert "keeps all five dice" in info["illegal_reason"][1]
    assert "out of range" in info["illegal_reason"][2]
    for key in obs:  # the illegal games did not change
        np.testing.assert_array_equal(obs[key][1:], obs0[key][1:])
    # the legal game went on exactly as without the illegal neighbours (same dice stream)
    twin_obs, *_ = twin.step(np.array([0, 0, 0]))
    for key in obs:
        np.testing.assert_array_equal(obs[key][0], twin_obs[key][0])


def test_illegal_action_same_step_reports_it_in_final_info():
    env = DicePokerVectorEnv(3, "yacht", autoreset_mode="SameStep", illegal_penalty=-1.0)
    obs0, info0 = env.reset(seed=2)
    obs, reward, terminated, _, info = env.step(np.array([0, 31, 0]))
    np.testing.assert_array_equal(terminated, [False, True, False])
    assert reward[1] == -1.0
    final = info["final_info"]
    np.testing.assert_array_equal(final["_illegal_action"], [False, True, False])
    assert not final["action_mask"][1].any()  # the game is over: nothing legal, as after a normal end
    assert_same(info["final_obs"][1], {k: v[1] for k, v in obs0.items()})
    assert obs["turn"][1] == 0 and obs["rolls_left"][1] == 2  # a new game already


def test_illegal_action_raise_names_game_and_changes_nothing():
    env = DicePokerVectorEnv(2, "yacht", illegal_action="raise")
    env.reset(seed=0)
    state = env.state
    with pytest.raises(IllegalActionError, match="game 1: action 31"):
        env.step(np.array([0, 31]))
    assert env.state is state
    for _ in range(2):
        env.step(np.array([0, 0]))
    with pytest.raises(IllegalActionError, match="no rerolls left"):
        env.step(np.array([0, 0]))


# ---------------------------------------------------------------- seeding, reset
def rollout(env: DicePokerVectorEnv, seed: int, steps: int = 80):
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(0)
    out = [obs["dice"].copy()]
    for _ in range(steps):
        obs, reward, *_ = env.step(masked_random(rng, env.action_masks()))
        out += [obs["dice"].copy(), reward.copy()]
    return out


def test_seed_fixes_all_games():
    a, b = DicePokerVectorEnv(16, "yahtzee"), DicePokerVectorEnv(16, "yahtzee")
    first, second = rollout(a, 123), rollout(b, 123)
    for x, y in zip(first, second):
        np.testing.assert_array_equal(x, y)
    again = rollout(a, 123)  # reseeding the same env replays it
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    other = rollout(b, 124)
    assert any(not np.array_equal(x, y) for x, y in zip(first, other))
    with pytest.raises(TypeError, match="one seed"):
        a.reset(seed=[1, 2])


def test_reset_options_positions():
    env = DicePokerVectorEnv(3, "yacht")
    obs, info = env.reset(seed=0, options={"scorecard": {"ones": 3}, "dice": [6, 6, 6, 6, 6], "rolls_left": 0})
    assert (obs["dice"] == 6).all() and (obs["rolls_left"] == 0).all()
    np.testing.assert_array_equal(info["score"], [3, 3, 3])
    positions = [None, {"dice": [1, 2, 3, 4, 5], "rolls_left": 1}, {"scorecard": {"yacht": 50}}]
    obs, info = env.reset(seed=0, options={"positions": positions})
    assert obs["turn"].tolist() == [0, 0, 1]
    assert obs["dice"][1].tolist() == [1, 2, 3, 4, 5] and obs["rolls_left"][1] == 1
    np.testing.assert_array_equal(info["score"], [0, 0, 50])
    single = DicePokerEnv("yacht")
    single_obs, _ = single.reset(options=positions[1])
    assert_same({k: v[1] for k, v in obs.items()}, single_obs)
    with pytest.raises(PositionError, match="unknown key"):
        env.reset(options={"dices": [1, 2, 3, 4, 5]})
    before = env.state
    with pytest.raises(PositionError):
        env.reset(options={"positions": [None, None, {"scorecard": {"nope": 1}}]})
    assert env.state is before  # a rejected reset changes nothing
    with pytest.raises(PositionError, match="one entry per game"):
        env.reset(options={"positions": [None]})


# ------------------------------------------------------------ Gymnasium checks
def test_gymnasium_vector_wrappers_and_data_not_reused():
    from gymnasium.wrappers.vector import DictInfoToList, FlattenObservation, RecordEpisodeStatistics

    envs = RecordEpisodeStatistics(
        FlattenObservation(gym.make_vec("DicePoker/Yatzy-v0", num_envs=4, vectorization_mode="vector_entry_point"))
    )
    obs, _ = envs.reset(seed=0)
    assert envs.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    episodes = 0
    previous = obs
    for _ in range(200):
        obs, _, terminated, _, info = envs.step(masked_random(rng, envs.unwrapped.action_masks()))
        assert envs.observation_space.contains(obs)
        assert obs is not previous and not np.shares_memory(obs, previous)
        previous = obs
        episodes += terminated.sum()
        if terminated.any():
            assert (info["episode"]["r"][terminated] == info["final_score"][terminated]).all()
    assert episodes > 0
    listed = DictInfoToList(gym.make_vec("DicePoker/Yacht-v0", num_envs=2, vectorization_mode="vector_entry_point"))
    _, infos = listed.reset(seed=0)
    assert isinstance(infos, list) and infos[0]["action_mask"].shape == (32 + 12,)


def test_scripted_positions_consume_dice_like_the_single_env():
    scripts = face_scripts(3, 2, length=40)
    env = DicePokerVectorEnv(2, "yatzy", dice_source=[ScriptedDice(s) for s in scripts])
    singles = [DicePokerEnv("yatzy", dice_source=ScriptedDice(s)) for s in scripts]
    positions = [{"dice": [6, 6, 6, 6, 6]}, {"scorecard": {"ones": 2}}]
    obs, _ = env.reset(options={"positions": positions})
    for i, single in enumerate(singles):
        single_obs, _ = single.reset(options=positions[i])
        assert_same({k: v[i] for k, v in obs.items()}, single_obs)
    assert [s.remaining for s in env.dice_source] == [e.dice_source.remaining for e in singles] == [40, 35]


def copied(value):
    """A deep copy of arrays, dicts and object arrays of them."""
    if isinstance(value, dict):
        return {k: copied(v) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([copied(v) for v in value] + [None], dtype=object)[:-1]
    return value.copy() if isinstance(value, np.ndarray) else value


def assert_unchanged(value, saved, path="") -> None:
    if isinstance(value, dict):
        for key in value:
            assert_unchanged(value[key], saved[key], f"{path}.{key}")
    elif isinstance(value, np.ndarray) and value.dtype == object:
        for i, (v, s) in enumerate(zip(value, saved)):
            assert_unchanged(v, s, f"{path}[{i}]")
    elif isinstance(value, np.ndarray):
        np.testing.assert_array_equal(value, saved, err_msg=path)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_returned_observations_are_never_changed_later(mode):
    """The env advances its state in place: nothing it handed out may change with it."""
    env = DicePokerVectorEnv(8, "yahtzee", autoreset_mode=mode)
    first, _ = env.reset(seed=0)
    saved = {k: v.copy() for k, v in first.items()}
    rng = np.random.default_rng(0)
    handed_out = []
    for t in range(120):
        result = env.step(masked_random(rng, env.action_masks()))
        if t % 7 == 0:
            handed_out.append((result, copied(result)))
    obs = result[0]
    kept = {k: v.copy() for k, v in obs.items()}
    env.reset(seed=1, options={"positions": [{"scorecard": {"aces": 3}}] * 8})
    assert_same(first, saved)
    assert_same(obs, kept)
    for result, saved_result in handed_out:
        for part, saved_part in zip(result, saved_result):
            assert_unchanged(part, saved_part)


class SequenceDice:
    """Fair dice drawn as the default does (one index into the 6**5 face sequences per game), as faces.

    A dice source that is not ``RandomDice`` takes the env's general path (faces,
    ``game.reroll``); the default takes table lookups by sequence index. Both
    consume the generator alike, so the two must play the same games.
    """

    def roll(self, rng, shape):
        from dice_poker_env.engine.combinatorics import N_SEQUENCES, SEQUENCE_FACES

        assert len(shape) == 2 and shape[1] == 5
        return SEQUENCE_FACES[rng.integers(0, N_SEQUENCES, size=shape[0])].astype(np.int64)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize(("rules", "options"), VARIANTS, ids=VARIANT_IDS)
def test_default_dice_tables_equal_the_engines_faces_path(rules, options, mode):
    fast = DicePokerVectorEnv(50, rules, autoreset_mode=mode, **options)
    plain = DicePokerVectorEnv(50, rules, autoreset_mode=mode, dice_source=SequenceDice(), **options)
    assert fast._fast_dice and not plain._fast_dice
    a, b = fast.reset(seed=9), plain.reset(seed=9)
    assert_same(a[0], b[0])
    rng = np.random.default_rng(9)
    for t in range(200):
        actions = masked_random(rng, fast.action_masks())
        if t % 9 == 0:
            actions[t % 50] = 31  # an illegal action now and then
        a, b = fast.step(actions), plain.step(actions)
        assert_same(a[0], b[0])
        for x, y in zip(a[1:4], b[1:4]):
            np.testing.assert_array_equal(x, y)
        assert_same_info(a[4], b[4])
        np.testing.assert_array_equal(fast.action_masks(), plain.action_masks())
        for x, y in zip(fast.state, plain.state):
            np.testing.assert_array_equal(x, y)


def test_reroll_by_sequence_index_equals_reroll_of_faces():
    from dice_poker_env.engine.combinatorics import N_ROLLS, N_SEQUENCES, SEQUENCE_FACES, reroll_batch, reroll_sequence

    bits = np.repeat(np.arange(32), N_SEQUENCES)
    sequence = np.tile(np.arange(N_SEQUENCES), 32)
    faces = SEQUENCE_FACES[sequence].astype(np.int64)
    for roll in range(N_ROLLS):  # every (roll, keep bits, sequence)
        rolls = np.full(len(bits), roll)
        np.testing.assert_array_equal(reroll_sequence(rolls, bits, sequence), reroll_batch(rolls, bits, faces))


def test_final_obs_hold_the_observation_keys_in_order():
    from dice_poker_env.envs.observation import DICT_KEYS

    env = DicePokerVectorEnv(2, "yacht", autoreset_mode="same_step")
    obs, info = env.reset(
        seed=0,
        options={"scorecard": {name: 0 for name in env.rules.box_names[1:]}, "rolls_left": 0, "dice": [1, 1, 1, 1, 1]},
    )
    assert tuple(obs) == DICT_KEYS and set(env.single_observation_space.spaces) == set(DICT_KEYS)
    _, _, terminated, _, info = env.step(np.array([32, 32]))
    assert terminated.all() and all(tuple(final) == DICT_KEYS for final in info["final_obs"])


def test_roll_index_of_faces_in_any_order():
    from dice_poker_env.engine.combinatorics import SEQUENCE_FACES, roll_index_of_faces, roll_index_of_sorted

    faces = SEQUENCE_FACES.astype(np.int64)  # every ordered sequence of five faces
    np.testing.assert_array_equal(roll_index_of_faces(faces), roll_index_of_sorted(np.sort(faces, axis=1)))


@pytest.mark.parametrize(("rules", "options"), VARIANTS, ids=VARIANT_IDS)
def test_batched_engine_step_equals_step_one(rules, options):
    """game.step_batch (a copy advanced in place by game.advance) is step_one game by game."""
    tables = compile_rules(dice_poker_env.load_rules(rules, **options))
    rng = np.random.default_rng(4)
    n = 300
    state = game.new_batch(tables, rng.integers(0, 252, size=n))
    for _ in range(3 * tables.turns):
        live = ~game.is_over(tables, state)
        if not live.any():
            break
        sub = state.take(live)
        actions = masked_random(rng, action_masks(tables).of_batch(sub))
        faces = rng.integers(1, 7, size=(len(actions), 5))
        before = sub.copy()
        new, reward, over = game.step_batch(tables, sub, actions, faces)
        for field, old in zip(sub, before):
            np.testing.assert_array_equal(field, old)  # the input is not changed
        assert new.roll.dtype == new.rolls_left.dtype == reward.dtype == np.int64 and over.dtype == bool
        for i in range(len(actions)):
            one, r, o = game.step_one(tables, sub.game(i), int(actions[i]), faces[i])
            got = new.game(i)
            assert (got.filled, got.upper_total, got.bonus, got.roll, got.rolls_left) == (
                one.filled,
                one.upper_total,
                one.bonus,
                one.roll,
                one.rolls_left,
            )
            np.testing.assert_array_equal(got.scores, one.scores)
            assert (int(reward[i]), bool(over[i])) == (r, o)
        state = state.copy()
        for full, part in zip(state, new):
            full[live] = part


def test_pickle_round_trip_and_render():
    env = DicePokerVectorEnv(2, "school_poker", render_mode="ansi")
    env.reset(seed=0)
    clone = pickle.loads(pickle.dumps(env))
    actions = np.array([0, 33])
    a, b = env.step(actions), clone.step(actions)
    assert_same(a[0], b[0])
    texts = env.render()
    assert len(texts) == 2 and all("school" in t.lower() or "ones" in t for t in texts)


# ---------------------------------------------------------------- Stable-Baselines3
def test_sb3_adapter_maskable_ppo_learns_a_few_hundred_steps():
    pytest.importorskip("stable_baselines3")
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import VecMonitor

    from dice_poker_env.integrations.sb3 import DicePokerSB3VecEnv, make_sb3_vec_env

    venv = VecMonitor(make_sb3_vec_env("DicePoker/Yacht-v0", n_envs=8, seed=0, obs_mode="flat"))
    assert is_masking_supported(venv)
    obs = venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (8, 44) and obs.shape == (8, 45 + 36)
    model = sb3_contrib.MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert len(model.ep_info_buffer) > 0
    # sb3-contrib's maskable evaluation plays whole games: 12 box choices, at most two rerolls before each
    rewards, lengths = evaluate_policy(model, venv, n_eval_episodes=8, return_episode_rewards=True)
    assert len(rewards) == 8 and all(12 <= n <= 36 for n in lengths)
    assert all(float(r).is_integer() and r >= 0 for r in rewards)  # a game's return is its score
    # SAME_STEP contract: terminal observations in infos, returns equal final scores
    raw = make_sb3_vec_env("DicePoker/Yacht-v0", n_envs=4, seed=1)
    raw.reset()
    rng = np.random.default_rng(0)
    returns = np.zeros(4)
    for _ in range(120):
        _, reward, dones, infos = raw.step(masked_random(rng, get_action_masks(raw)))
        returns += reward
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"]["turn"] == 12
            assert infos[i]["final_score"] == returns[i]
            returns[i] = 0
    with pytest.raises(ValueError, match="SAME_STEP"):
        DicePokerSB3VecEnv(DicePokerVectorEnv(2, "yacht"))


def test_sb3_adapter_distinct_keeps_masks():
    pytest.importorskip("stable_baselines3")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import VecMonitor

    from dice_poker_env.engine.combinatorics import distinct_keep_mask
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    venv = VecMonitor(make_sb3_vec_env("DicePoker/Yahtzee-v0", n_envs=16, seed=0, distinct_keeps=True))
    base = venv.venv.base
    venv.reset()
    rng = np.random.default_rng(1)
    for _ in range(60):
        masks = np.asarray(get_action_masks(venv))
        assert np.array_equal(masks, distinct_keep_mask(base.action_masks(), base.state.roll).astype(bool))
        venv.step(masked_random(rng, masks))


def test_sb3_adapter_infos_are_the_single_envs_as_dummy_vec_env_gives_them():
    """Per game, the infos (reset and step, playing and ended games, illegal ends) are DummyVecEnv's over the
    single env: they had only terminal_observation, TimeLimit.truncated, final_score and illegal_action."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    from dice_poker_env.integrations.sb3 import DicePokerSB3VecEnv

    n, scripts = 3, face_scripts(11, 3, length=20000)
    mine = DicePokerSB3VecEnv(
        DicePokerVectorEnv(
            n, "yacht", obs_mode="flat", autoreset_mode="SAME_STEP", dice_source=[ScriptedDice(s) for s in scripts]
        )
    )
    theirs = DummyVecEnv(
        [lambda s=s: DicePokerEnv("yacht", obs_mode="flat", dice_source=ScriptedDice(s)) for s in scripts]
    )

    def same(a: dict, b: dict) -> None:
        assert set(a) == set(b), f"{sorted(a)} != {sorted(b)}"
        for key in a:
            if isinstance(a[key], np.ndarray):
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)
            else:
                assert a[key] == b[key] and type(a[key]) is type(b[key]), key

    np.testing.assert_array_equal(mine.reset(), theirs.reset())
    for a, b in zip(mine.reset_infos, theirs.reset_infos):
        same(a, b)
    rng, ended, illegal = np.random.default_rng(3), 0, 0
    for step in range(200):
        actions = masked_random(rng, mine.action_masks())
        if step % 50 == 49:
            actions[step % n] = 31  # an illegal action: ends that game
        a, b = mine.step(actions), theirs.step(actions)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[2], b[2])
        for i in range(n):
            mine_info, their_info = dict(a[3][i]), dict(b[3][i])
            if not b[2][i]:
                their_info.pop("TimeLimit.truncated")  # DummyVecEnv's on every game; here on ended games only
            same(mine_info, their_info)
            same(mine.reset_infos[i], theirs.reset_infos[i])
        ended += int(b[2].sum())
        illegal += sum("illegal_reason" in info for info in a[3])
    assert ended > n and illegal == 4


def test_sb3_adapter_infos_masks_are_the_action_masks_with_distinct_keeps():
    """With ``distinct_keeps`` the policy sees each distinct keep once (``action_masks()``); the infos' masks
    were the env's full ones, so a callback reading ``info["action_mask"]`` saw other legal actions."""
    pytest.importorskip("stable_baselines3")
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    v = make_sb3_vec_env("DicePoker/Yacht-v0", n_envs=6, seed=0, distinct_keeps=True)
    v.reset()
    rng = np.random.default_rng(0)
    assert np.array_equal(np.stack([info["action_mask"] for info in v.reset_infos]), v.action_masks())
    full = v.base.action_masks()
    assert full.sum() > v.action_masks().sum()  # (these rolls have repeated faces: fewer distinct keeps)
    for _ in range(40):
        _, _, dones, infos = v.step(masked_random(rng, v.action_masks()))
        playing = [i for i in range(6) if not dones[i]]
        assert all(np.array_equal(infos[i]["action_mask"], v.action_masks()[i]) for i in playing)


def test_sb3_adapter_minimal_infos_and_its_benchmark():
    """``full_infos=False``: only the ended games' keys, the others empty; benchmarks/bench_sb3.py times both."""
    pytest.importorskip("stable_baselines3")
    import importlib.util
    from pathlib import Path

    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    v = make_sb3_vec_env("DicePoker/Yacht-v0", n_envs=4, seed=0, full_infos=False)
    v.reset()
    assert v.reset_infos == [{}] * 4
    rng, ended = np.random.default_rng(0), 0
    for step in range(80):
        actions = masked_random(rng, v.action_masks())
        if step == 5:
            actions[1] = 31
        _, _, dones, infos = v.step(actions)
        for i in range(4):
            keys = {"terminal_observation", "TimeLimit.truncated", "final_score"}
            assert set(infos[i]) == (set() if not dones[i] else keys | ({"illegal_action"} if step == 5 else set()))
        ended += int(dones.sum())
    assert ended > 4
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sb3.py"
    spec = importlib.util.spec_from_file_location("bench_sb3", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.main(["--games", "8", "--steps", "5", "--rounds", "1", "--no-pin", "--json"])
    assert set(result["microseconds_per_step"]) == {"full_infos=True", "full_infos=False", "batched env step"}
    assert result["full_over_minimal"] > 0 and result["command"].startswith("python benchmarks/bench_sb3.py")


def test_sb3_adapter_attributes_and_methods_honour_indices():
    """get_attr, set_attr and env_method act per game (SB3's contract): a setting set for one game changed
    every game, get_attr("score") gave the whole batch once per game, env_method("reset", indices=[0])
    reset every game."""
    pytest.importorskip("stable_baselines3")
    from dice_poker_env.integrations.sb3 import make_sb3_vec_env

    v = make_sb3_vec_env("DicePoker/Yacht-v0", n_envs=3, seed=0, render_mode="ansi")
    v.reset()
    rng = np.random.default_rng(0)
    for _ in range(9):
        v.step(masked_random(rng, v.action_masks()))
    scores = v.base.score.tolist()
    assert v.get_attr("score") == scores and all(type(s) is int for s in v.get_attr("score"))
    assert v.get_attr("score", indices=[2, 0]) == [scores[2], scores[0]] and v.get_attr("score", 1) == [scores[1]]
    assert v.get_attr("observation_space", 0) == [v.observation_space]
    assert v.get_attr("action_space") == [v.action_space] * 3
    assert v.get_attr("illegal_penalty", [1]) == [0.0]
    texts = v.env_method("render", indices=[1, 2])
    assert list(texts) == list(v.base.render()[1:])
    assert v.env_method("action_masks", indices=[2]).shape == (1, 44)
    for call in (
        lambda: v.set_attr("illegal_penalty", -5.0, indices=[0]),
        lambda: v.env_method("reset", indices=[0]),
    ):
        with pytest.raises(ValueError, match=r"applies to all 3 games; give indices=None"):
            call()
    assert v.base.illegal_penalty == 0.0 and v.base.score.tolist() == scores  # nothing changed
    v.set_attr("illegal_penalty", -5.0, indices=[0, 1, 2])
    v.set_attr("illegal_action", "raise")
    assert v.get_attr("illegal_penalty") == [-5.0] * 3 and v.base.illegal_action == "raise"
    with pytest.raises(ValueError, match=r"indices: game indices are 0\.\.2, got 3"):
        v.get_attr("score", indices=[3])


# ------------------------------------------------------------ issue 11: bad input
def test_dice_none_means_fresh_random_dice_as_in_the_single_env():
    env, twin = DicePokerVectorEnv(3, "yacht"), DicePokerVectorEnv(3, "yacht")
    given_none = env.reset(seed=7, options={"dice": None})[0]["dice"]
    np.testing.assert_array_equal(given_none, twin.reset(seed=7)[0]["dice"])
    per_game = env.reset(seed=7, options={"positions": [{"dice": None}, None, {"dice": [6, 6, 6, 6, 6]}]})[0]["dice"]
    np.testing.assert_array_equal(per_game[:2], given_none[:2])
    assert per_game[2].tolist() == [6] * 5
    # per-game dice sources: a game whose dice are None rolls them, as the single env does
    scripts = face_scripts(3, 2)
    mine = DicePokerVectorEnv(2, "yacht", dice_source=[ScriptedDice(s) for s in scripts])
    singles = [DicePokerEnv("yacht", dice_source=ScriptedDice(s)) for s in scripts]
    obs, _ = mine.reset(options={"positions": [{"dice": None}, {"dice": None, "scorecard": {"choice": 20}}]})
    expected = [
        singles[0].reset(options={"dice": None})[0],
        singles[1].reset(options={"dice": None, "scorecard": {"choice": 20}})[0],
    ]
    np.testing.assert_array_equal(obs["dice"], [e["dice"] for e in expected])


@pytest.mark.parametrize("options", [{"bogus": 1}, {"dice": [1, 2, 3, 4, 9]}, {"positions": [None, {"dice": [0] * 5}]}])
def test_a_refused_reset_with_a_seed_leaves_the_dice_to_come_as_they_were(options):
    """The seed is applied, and dice drawn, only once the options pass: the same steps follow as without the
    refused reset, in the vector env and in the single env."""
    plain, refused = DicePokerVectorEnv(2, "yacht"), DicePokerVectorEnv(2, "yacht")
    plain.reset(seed=0)
    refused.reset(seed=0)
    with pytest.raises((PositionError, ValueError)):
        refused.reset(seed=123, options=options)
    stay = np.zeros(2, dtype=np.int64)
    np.testing.assert_array_equal(plain.step(stay)[0]["dice"], refused.step(stay)[0]["dice"])
    if "positions" not in options:
        one, other = DicePokerEnv("yacht"), DicePokerEnv("yacht")
        one.reset(seed=0)
        other.reset(seed=0)
        with pytest.raises(PositionError):
            other.reset(seed=123, options=options)
        np.testing.assert_array_equal(one.step(0)[0]["dice"], other.step(0)[0]["dice"])


def test_a_script_that_runs_out_stops_the_step_before_any_game_draws():
    """One game's script is short: the step raises before the other game's script moves on, so the replay
    stays in step when the short script is refilled and the step is tried again."""
    from dice_poker_env import ScriptedDice
    from dice_poker_env.dice_sources import DiceExhaustedError

    long, short = ScriptedDice([1, 2, 3, 4, 5] * 20), ScriptedDice([6] * 5)
    env = DicePokerVectorEnv(2, "yacht", dice_source=[long, short])
    env.reset()
    before = long.position
    with pytest.raises(DiceExhaustedError, match="game 1: scripted dice exhausted"):
        env.step(np.zeros(2, dtype=np.int64))
    assert long.position == before


@pytest.mark.parametrize("dice", [[1.5, 2, 3, 4, 5], [True, 2, 3, 4, 5], ["1"] * 5])
def test_non_integer_dice_are_rejected(dice):
    env = DicePokerVectorEnv(2, "yacht")
    env.reset(seed=0)
    before = [field.copy() for field in env.state]
    with pytest.raises(PositionError, match="dice: expected 5 integers"):
        env.reset(options={"dice": dice})
    for field, old in zip(env.state, before):  # a rejected reset changes nothing
        np.testing.assert_array_equal(field, old)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"positions": 5}, "'positions' must be a list of one position dict"),
        ({"positions": "ab"}, "'positions' must be a list of one position dict"),
        ({"positions": {"dice": [1, 2, 3, 4, 5]}}, "'positions' must be a list of one position dict"),
        ({"positions": [5, None]}, r"positions\[0\]: expected a dict"),
        ({"positions": [None]}, "needs one entry per game"),
        # a refused position names its game (was only "dice: expected 5 integers in 1..6, got [1, 2]")
        ({"positions": [None, {"dice": [1, 2]}]}, r"^reset options: positions\[1\]: dice: expected 5 integers"),
        ({"positions": [{"scorecard": {"nope": 1}}, None]}, r"^reset options: positions\[0\]: scorecard: yacht has no"),
        ({"bonus": 35}, "cannot have paid 35"),
        (["dice"], "reset options: expected a dict"),
    ],
)
def test_bad_reset_options_are_position_errors(options, message):
    env = DicePokerVectorEnv(2, "yacht")
    with pytest.raises(PositionError, match=message):
        env.reset(seed=0, options=options)


@pytest.mark.parametrize(
    "actions, shown",
    [
        (np.array([2**64 - 1, 0], dtype=np.uint64), "action 18446744073709551615 is out of range"),
        (np.array([2**63, 0], dtype=np.uint64), "action 9223372036854775808 is out of range"),
        (np.array([255, 0], dtype=np.uint8), "action 255 is out of range"),
        (np.array([-1, 0], dtype=np.int8), "action -1 is out of range"),
    ],
)
@pytest.mark.parametrize("mode", ["terminate", "raise"])
def test_out_of_range_actions_are_reported_as_given(actions, shown, mode):
    """A uint64 2**64-1 was reported as "action -1"."""
    env = DicePokerVectorEnv(2, "yacht", illegal_action=mode)
    env.reset(seed=0)
    if mode == "raise":
        with pytest.raises(IllegalActionError, match=shown):
            env.step(actions)
        return
    _, _, terminated, _, info = env.step(actions)
    assert terminated.tolist() == [True, False] and shown in info["illegal_reason"][0]


@pytest.mark.parametrize("penalty", ["x", float("nan"), float("-inf"), True])
def test_illegal_penalty_must_be_a_finite_number(penalty):
    with pytest.raises(ValueError, match="illegal_penalty must be a finite number"):
        DicePokerVectorEnv(2, "yacht", illegal_penalty=penalty)


@pytest.mark.parametrize("source, name", [(3, "dice_source"), ([ScriptedDice([1] * 5), 3], r"dice_source\[1\]")])
def test_dice_sources_must_roll(source, name):
    with pytest.raises(TypeError, match=f"{name} must be a dice source with a roll"):
        DicePokerVectorEnv(2, "yacht", dice_source=source)


@pytest.mark.parametrize("table", [True, False], ids=["mask-table", "engine-masks"])
def test_masks_are_all_zeros_after_an_illegal_action_ends_a_game(table):
    env = DicePokerVectorEnv(3, "yahtzee")
    if not table:  # the path of rulesets too large for the mask table
        env._masks = ActionMasks(env.tables, use_tables=False)
    env.reset(seed=1)
    _, _, terminated, _, info = env.step(np.array([31, 0, 99]))
    assert terminated.tolist() == [True, False, True]
    masks = env.action_masks()
    assert not masks[[0, 2]].any() and masks[1].any()
    np.testing.assert_array_equal(info["action_mask"], masks)
    obs, reward, terminated, _, info = env.step(np.array([0, 0, 0]))  # NEXT_STEP: the ended games start over
    assert env.action_masks()[[0, 2], :31].all() and not terminated.any()


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
@pytest.mark.parametrize("rules", ["yacht", "school_poker"])
def test_snapshot_restores_the_batch_exactly_as_plain_data(rules, mode):
    """A snapshot holds only arrays and plain values (checkpoints outlive module moves) and a fresh batch
    restored from it plays on exactly as the original."""
    env = DicePokerVectorEnv(64, rules, obs_mode="flat", autoreset_mode=mode)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(30):
        env.step(masked_random(rng, env.action_masks()))
    snapshot = pickle.loads(pickle.dumps(env.snapshot()))
    assert b"dice_poker_env" not in pickle.dumps(env.snapshot())
    copy = DicePokerVectorEnv(64, rules, obs_mode="flat", autoreset_mode=mode)
    copy.reset(seed=99)  # other games, other generator: all replaced
    copy.restore(snapshot)
    for _ in range(60):
        actions = masked_random(rng, env.action_masks())
        assert np.array_equal(env.action_masks(), copy.action_masks())
        first, second = env.step(actions), copy.step(actions)
        for a, b in zip(first[:4], second[:4]):
            assert np.array_equal(a, b)
    assert np.array_equal(env.score, copy.score)
    with pytest.raises(ValueError, match="another ruleset or batch size"):
        DicePokerVectorEnv(32, rules).restore(snapshot)
    # a generator name is never looked up in numpy unchecked, and a refused snapshot changes nothing
    before = copy.snapshot()
    bad = {**snapshot, "np_random": {**snapshot["np_random"], "bit_generator": "default_rng"}}
    with pytest.raises(ValueError, match="names no known bit generator"):
        copy.restore(bad)
    # a damaged or hand-made snapshot is a one-line error naming what is wrong (it was a bare KeyError), never a batch
    # of arrays of other shapes that fails at a later step
    damaged = [
        ({k: v for k, v in snapshot.items() if k != "rules_fingerprint"}, "lacks rules_fingerprint"),
        ({**snapshot, "state": {**snapshot["state"], "extra": [0]}}, "the snapshot's state holds"),
        ({**snapshot, "score": snapshot["score"][:3]}, "score is not one integer row a game"),
        ({**snapshot, "state": {**snapshot["state"], "roll": [0.5] * 64}}, "roll is not one integer row a game"),
        ([1, 2], "not a vector-env snapshot of format 1 \\(format 'list'\\)"),
    ]
    for broken, message in damaged:
        with pytest.raises(ValueError, match=message):
            copy.restore(broken)
    assert np.array_equal(copy.snapshot()["state"]["scores"], before["state"]["scores"])


def test_gymnasiums_vector_envs_of_the_single_env_stack_the_end_scorecard_as_the_batched_env():
    """Games cut short (13 turns of 15 boxes) end with open boxes: the single env's end scorecard leaves them
    out (a None broke SyncVectorEnv's int arrays), so both front ends give {box: (N,) int64} with _box masks."""
    import gymnasium as gym

    for mode in ("sync", "vector_entry_point"):
        envs = gym.make_vec("DicePoker/DicePoker-v0", num_envs=3, vectorization_mode=mode, turns=13)
        _, info = envs.reset(seed=0)
        rng, ended = np.random.default_rng(0), 0
        while ended < 3:
            actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in info["action_mask"]])
            _, _, terminated, _, info = envs.step(actions)
            if terminated.any():
                ended += int(terminated.sum())
                card = info["scorecard"]
                assert all(card[k].dtype.kind == "i" for k in card if not k.startswith("_")), mode
                boxes = [b for b in dice_poker_env.load_rules("dice_poker").box_names if f"_{b}" in card]
                for k in np.flatnonzero(terminated):  # 13 boxes written, 2 open: masked out in both
                    assert sum(bool(card[f"_{b}"][k]) for b in boxes) == 13, mode
        envs.close()


def test_make_vec_passes_max_episode_steps_and_a_game_length_one_changes_nothing():
    import gymnasium as gym

    assert gym.make_vec("DicePoker/Yacht-v0", num_envs=2, max_episode_steps=100).num_envs == 2
    with pytest.raises(ValueError, match=r"max_episode_steps=10: the batched env does not cut games short"):
        gym.make_vec("DicePoker/Yacht-v0", num_envs=2, max_episode_steps=10)


def test_a_registered_step_limit_make_truncates_make_vec_refuses_or_plays_whole_games():
    """docs/vector.md: where make and make_vec differ for an id registered with max_episode_steps."""
    import gymnasium as gym

    env_id = "DicePokerTest/YachtLimited-v0"
    gym.register(
        env_id,
        entry_point="dice_poker_env.envs.single:DicePokerEnv",
        vector_entry_point="dice_poker_env.envs.vector:DicePokerVectorEnv",
        kwargs={"rules": "yacht"},
        max_episode_steps=20,
    )
    try:
        env = gym.make(env_id)
        env.reset(seed=0)
        truncated = [env.step(0 if t % 3 < 2 else 32 + t // 3)[3] for t in range(20)]  # 2 rerolls, a box: 7 turns
        assert truncated == [False] * 19 + [True]
        with pytest.raises(ValueError, match=r"max_episode_steps=20: the batched env does not cut games short"):
            gym.make_vec(env_id, num_envs=2)
        assert isinstance(gym.make_vec(env_id, num_envs=2, max_episode_steps=None).unwrapped, DicePokerVectorEnv)
        sync = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync")
        sync.reset(seed=0)
        for t in range(20):
            truncated = sync.step(np.full(2, 0 if t % 3 < 2 else 32 + t // 3))[3]
        assert truncated.all()
    finally:
        del gym.registry[env_id]


def test_illegal_action_and_penalty_are_live_attributes():
    """Set after construction (set_attr, or directly) they take effect at the next step, in every front end."""
    from dice_poker_env.envs import IllegalActionError
    from dice_poker_env.envs.single import DicePokerEnv
    from dice_poker_env.multi import SeatEnv

    for env in (DicePokerEnv("yacht"), DicePokerVectorEnv(2, "yacht"), SeatEnv("yacht", ["random"])):
        env.reset(seed=0)
        env.illegal_action = "raise"
        bad = np.array([31, 31]) if isinstance(env, DicePokerVectorEnv) else 31  # (keep all five: not a roll)
        with pytest.raises(IllegalActionError):
            env.step(bad)
        env.illegal_action, env.illegal_penalty = "terminate", -5.0
        _, reward, terminated, _, _ = env.step(bad)
        assert np.all(terminated) and np.all(np.asarray(reward) == -5.0)
        with pytest.raises(ValueError, match="illegal_action"):
            env.illegal_action = "ignore"
