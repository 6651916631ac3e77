"""The exact solver: published optima, self-consistency, a brute-force check, the agent, cache and CLI.

Every published optimum runs by default (about a minute in all on two cores).
The remaining 20,000-game means (yahtzee free/none, dice_poker) are marked
``slow``: run them with ``pytest -m slow tests/test_solver.py``.
"""

from __future__ import annotations

import io
import json
import warnings
from contextlib import redirect_stdout
from functools import cache

import numpy as np
import pytest

from dice_poker_env import load_rules
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import (
    FIRST_ROLL_PROBABILITY,
    KEEP_ALL,
    KEEP_OF_ACTION,
    N_KEEP_ACTIONS,
    N_ROLLS,
    ROLL_DICE,
    TRANSITION,
    roll_index_of_sorted,
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.solver import CacheWarning, SolverError, solve
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.reachability import reachable_layers
from dice_poker_env.solver.state_space import StateSpace

TOLERANCE = 0.0005


@cache
def solved(name: str, **options):
    return solve(load_rules(name, **options), progress=False)


def _solved(spec: str):
    name, _, joker = spec.partition(":")
    return solved(name, joker=joker) if joker else solved(name)


# ------------------------------------------------------------ published optima
@pytest.mark.parametrize(
    "spec, expected, std",
    [
        ("yahtzee:forced", 254.587729, 59.6076),
        ("yahtzee:free", 254.589609, None),
        ("yahtzee:none", 245.870775, None),
        ("yatzy", 248.4399894, None),
    ],
)
def test_published_optimum(spec, expected, std):
    solution = _solved(spec)
    assert abs(solution.expected_score - expected) < TOLERANCE
    if std is not None:  # published to 4 decimals; tighter than TOLERANCE, so a change in tie-breaking shows
        assert abs(solution.score_std - std) < 1e-4


# --------------------------------------------------- brute force on a tiny game
TINY = {
    "name": "tiny",
    "boxes": [
        {"name": "fives", "kind": "face_sum", "face": 5},
        {"name": "sixes", "kind": "face_sum", "face": 6},
        {"name": "full_house", "kind": "full_house", "points": 25},
        {"name": "yahtzee", "kind": "n_of_a_kind", "n": 5, "points": 50},
    ],
    "upper_bonus": {"threshold": 20, "points": 35},
    "five_of_a_kind": {"box": "yahtzee", "bonus": 100, "joker": "forced"},
}


def _brute_force(rules) -> tuple[float, float]:
    """Expectimax over the full game state with dense transition matrices (no solver code).

    Returns the expected final score and its second moment, the policy maximizing
    the mean (ties broken towards the first maximum).
    """
    tables = compile_rules(rules)
    memo: dict = {}
    n = tables.n_boxes

    def value(filled: int, upper: int, full: bool) -> tuple[float, float]:
        key = (filled, upper, full)
        if key in memo:
            return memo[key]
        if bin(filled).count("1") >= tables.turns:
            memo[key] = (0.0, 0.0)
            return memo[key]
        score = {}
        for first in (True, False):
            best = np.full(N_ROLLS, -np.inf)
            best2 = np.zeros(N_ROLLS)
            for r in range(N_ROLLS):
                legal = int(game.legal_boxes(tables, filled, full, r))
                for b in range(n):
                    if not legal >> b & 1:
                        continue
                    points, bonus, new_upper = game.score_points(tables, filled, upper, full, r, first, b)
                    x = float(points + bonus)
                    now_full = full or (b == tables.five_kind_box and points > 0)
                    v, v2 = value(filled | 1 << b, int(new_upper), bool(now_full))
                    if x + v > best[r]:
                        best[r], best2[r] = x + v, x * x + 2 * x * v + v2
            score[first] = (best, best2)
        W, W2 = score[False]
        for first in (False, True):  # two rerolls: W1 from W0, then W2 from W1
            K, K2 = TRANSITION @ W, TRANSITION @ W2
            S, S2 = score[first]
            newW, newW2 = S.copy(), S2.copy()
            for r in range(N_ROLLS):
                for a in range(KEEP_ALL):
                    k = KEEP_OF_ACTION[r, a]
                    if K[k] > newW[r]:
                        newW[r], newW2[r] = K[k], K2[k]
            W, W2 = newW, newW2
        memo[key] = (float(FIRST_ROLL_PROBABILITY @ W), float(FIRST_ROLL_PROBABILITY @ W2))
        return memo[key]

    return value(0, 0, False)


@pytest.mark.parametrize("joker", ["forced", "free", "none"])
def test_matches_brute_force_on_a_tiny_game(joker):
    spec = json.loads(json.dumps(TINY))
    spec["five_of_a_kind"]["joker"] = joker
    rules = load_rules(spec)
    mean, second = _brute_force(rules)
    solution = solve(rules, cache=False, progress=False)
    assert abs(solution.expected_score - mean) < 1e-4
    assert abs(solution.score_std - np.sqrt(second - mean * mean)) < 1e-3


# ----------------------------------------------------------- self-consistency
def _state_obs(rules, scorecard, dice, rolls_left, bonus=None):
    env = DicePokerEnv(rules)
    options = {"scorecard": scorecard, "dice": dice, "rolls_left": rolls_left}
    if bonus is not None:
        options["bonus"] = bonus
    obs, info = env.reset(options=options)
    return obs, info["action_mask"]


@pytest.mark.parametrize(
    "spec, scorecard",
    [
        ("yacht", {}),
        ("yacht", {"ones": 2, "yacht": 0, "choice": 23}),
        ("school_poker", {"ones": -2, "twos": 0, "threes": 3}),
        ("yahtzee:forced", {"aces": 3, "sixes": 24, "yahtzee": 50, "chance": 22}),
        ("yahtzee:forced", {"fours": 16, "fives": 20, "sixes": 30, "threes": 0, "yahtzee": 0}),
    ],
)
def test_action_values_agree_with_state_values_and_transitions(spec, scorecard):
    """V(scorecard) = E_first roll max Q; Q(keep, 2 left) = E over the dense transition of max Q(1 left)."""
    solution = _solved(spec)
    rules = solution.rules
    q = {
        rl: np.array(
            [
                solution.action_values({"scorecard": scorecard, "dice": ROLL_DICE[r].tolist(), "rolls_left": rl})
                for r in range(N_ROLLS)
            ]
        )
        for rl in (2, 1)
    }
    best2 = q[2].max(axis=1)
    assert abs(FIRST_ROLL_PROBABILITY @ best2 - solution.state_value(scorecard)) < 1e-3
    best1 = q[1].max(axis=1)
    rng = np.random.default_rng(0)
    for r in rng.choice(N_ROLLS, 8, replace=False):
        for a in range(KEEP_ALL):
            expect = TRANSITION[KEEP_OF_ACTION[r, a]] @ best1
            assert abs(q[2][r, a] - expect) < 1e-3
    del rules


@pytest.mark.parametrize("spec", ["yacht", "school_poker", "yahtzee:forced"])
def test_action_values_match_the_env_mask_and_bitmask_equivalence(spec):
    solution = _solved(spec)
    rules = solution.rules
    rng = np.random.default_rng(1)
    env = DicePokerEnv(rules)
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            q = solution.action_values(obs)
            mask = info["action_mask"]
            assert q.shape == (N_KEEP_ACTIONS + rules.n_boxes,)
            np.testing.assert_array_equal(np.isfinite(q), mask == 1)
            roll = roll_index_of_sorted(np.asarray(obs["dice"]))
            if obs["rolls_left"] > 0:
                keeps = KEEP_OF_ACTION[int(roll), :KEEP_ALL]
                for k in np.unique(keeps):
                    same = q[:KEEP_ALL][keeps == k]
                    assert np.all(same == same[0])
            action = int(rng.choice(np.flatnonzero(mask)))
            obs, _, done, _, info = env.step(action)


def test_values_are_expected_final_scores():
    solution = _solved("yahtzee:forced")
    rules = solution.rules
    names = rules.box_names
    # one box left, last roll: the score action's value is exactly the final score
    card = {name: 0 for name in names if name != "chance"}
    card.update({"aces": 3, "twos": 6, "threes": 9, "fours": 16, "fives": 15, "sixes": 18})  # 67: bonus secured
    obs, mask = _state_obs(rules, card, [2, 3, 4, 6, 6], 0)
    q = solution.action_values(obs)
    assert q[N_KEEP_ACTIONS + names.index("chance")] == pytest.approx(67 + 35 + 21)
    assert solution.best_action(obs) == N_KEEP_ACTIONS + names.index("chance")
    # between turns: written points + secured bonus + the expected rest
    assert solution.state_value(card) == pytest.approx(67 + 35 + 23.33, abs=0.01)  # chance alone: 23.33 optimally
    env = DicePokerEnv(rules)
    obs, info = env.reset(options={"scorecard": card, "dice": [2, 3, 4, 6, 6], "rolls_left": 0})
    before = env.unwrapped.score if hasattr(env, "unwrapped") else env.score
    _, reward, done, _, info = env.step(N_KEEP_ACTIONS + names.index("chance"))
    assert done and before + reward == info["final_score"] == pytest.approx(q[N_KEEP_ACTIONS + names.index("chance")])
    # the five-of-a-kind bonus already paid counts (passed as bonus)
    card = {"yahtzee": 50, "aces": 5}  # five aces after the yahtzee box: the one way to have 100 paid here
    assert solution.state_value(card, bonus=100) == pytest.approx(solution.state_value(card) + 100)
    # the empty scorecard is the expected score
    assert solution.state_value({}) == pytest.approx(solution.expected_score)


def test_queries_reject_bad_input():
    solution = _solved("yacht")
    with pytest.raises(SolverError):
        solution.action_values([1, 2, 3])
    with pytest.raises(ValueError, match="rolls_left"):
        solution.action_values({"dice": [1, 2, 3, 4, 5], "rolls_left": 3})
    with pytest.raises(SolverError, match="over"):
        solution.future_action_values(compile_rules(solution.rules).all_bits, 0, False, 0, 0)
    with pytest.raises(ValueError):
        solution.action_values({"dice": [1, 2, 3, 4, 9]})
    with pytest.raises(ValueError):
        solution.state_value({"full_house": 31})


# ------------------------------------------------ decomposition = the engine
def _engine_moves(space: StateSpace, filled, upper, full, box: int, first: bool):
    """Straight from the engine, ``(252, m)`` each: legality, points, bonus and next state key
    of writing every roll (from the first roll or not) into ``box``, for states ``(filled, upper, full)``."""
    tables = space.tables
    rolls = np.arange(N_ROLLS)[:, None]
    legal = ((np.asarray(game.legal_boxes(tables, filled[None, :], full[None, :], rolls)) >> box) & 1) == 1
    points, bonus, new_upper = game.score_points(
        tables, filled[None, :], upper[None, :], full[None, :], rolls, first, box
    )
    new_filled = filled | (1 << box)
    new_full = full[None, :] | ((box == space.five_box) & (points > 0) & (space.n_full == 2))
    keys = space.key(new_filled[None, :], space.canonical_upper(new_filled[None, :], new_upper), new_full)
    shape = (N_ROLLS, len(filled))
    return tuple(np.broadcast_to(a, shape) for a in (legal, points, bonus, keys))


@pytest.mark.parametrize(
    "spec, plain",
    [
        ("yahtzee:forced", False),
        ("yahtzee:free", False),
        ("dice_poker", False),
        ("school_poker", False),
        ("yatzy", False),
        ("yahtzee:forced", True),
        ("yahtzee:free", True),
        ("dice_poker", True),
    ],
)
def test_roll_classes_reproduce_the_engine_exactly(spec, plain):
    """The solver's per-class / per-pair evaluation equals direct engine calls on every roll.

    ``plain``: the class system without five-of-a-kind singletons, on states whose
    five-of-a-kind box is open (where the solver uses it).
    """
    name, _, joker = spec.partition(":")
    rules = load_rules(name, **({"joker": joker} if joker else {}))
    tables = compile_rules(rules)
    space = StateSpace(tables)
    rng = np.random.default_rng(5)
    m = 60
    filled = rng.integers(0, 1 << tables.n_boxes, size=m)
    filled &= np.where(rng.random(m) < 0.5, tables.all_bits, tables.upper_bits)  # many partial upper sections
    if plain:
        filled &= ~(1 << space.five_box)
        assert space.for_block(filled) is space.plain is not None
        space = space.plain
    if tables.sections_in_order:
        filled = np.where((filled & tables.upper_bits) != tables.upper_bits, filled & tables.upper_bits, filled)
    keep = tables.popcount(filled) < tables.turns
    filled = filled[keep]
    upper = space.canonical_upper(filled, rng.integers(-20, 70, size=len(filled)))
    full = (rng.random(len(filled)) < 0.5) & (space.n_full == 2) & ((filled >> max(space.five_box, 0)) & 1 == 1)
    moves = space.chunk_moves(filled, upper, full)
    for b in range(tables.n_boxes):
        cls = space.box_classes[b]
        for first, of in ((False, cls.of_last), (True, cls.of_first)):
            legal, points, bonus, keys = _engine_moves(space, filled, upper, full, b, first)
            if b not in moves.open_boxes:
                assert not legal.any()
                continue
            if tables.is_upper[b]:
                upper_moves = moves.upper_moves(b)
                c_legal, c_reward, c_keys = upper_moves.legal[of], upper_moves.reward[of], upper_moves.next_key[of]
            else:
                lower_moves = moves.lower_moves(b)
                pair = moves.pair_of_state
                c_legal, c_reward = lower_moves.legal[of][:, pair], lower_moves.reward[of][:, pair]
                becomes = lower_moves.becomes_full[of][:, pair]
                c_keys = np.where(becomes, lower_moves.key_full[None, :], lower_moves.key_same[None, :])
            np.testing.assert_array_equal(c_legal, np.broadcast_to(legal, c_legal.shape))
            np.testing.assert_array_equal(np.where(legal, c_reward, 0), np.where(legal, points + bonus, 0))
            np.testing.assert_array_equal(np.where(legal, c_keys, 0), np.where(legal, keys, 0))


def _reachable_by_states(space: StateSpace) -> list[np.ndarray]:
    """Reference forward pass: every state, every roll, every box, straight from the engine."""
    tables = space.tables
    layers = [np.array([int(space.key(0, space.canonical_upper(np.int64(0), np.int64(0)), False))])]
    for _ in range(tables.turns):
        filled, upper, full = space.decode(layers[-1])
        found = set()
        for b in range(tables.n_boxes):
            for first in (False, True):
                legal, _, _, keys = _engine_moves(space, filled, upper, full, b, first)
                found.update(keys[legal].tolist())
        layers.append(np.array(sorted(found), dtype=np.int64))
    return layers


MINI = {  # six upper boxes and the bonus, two lower boxes: every upper total matters
    "name": "mini",
    "boxes": [{"name": f"face{f}", "kind": "face_sum", "face": f} for f in range(1, 7)]
    + [{"name": "chance", "kind": "chance"}, {"name": "yahtzee", "kind": "n_of_a_kind", "n": 5, "points": 50}],
    "upper_bonus": {"threshold": 63, "points": 35},
    "five_of_a_kind": {"box": "yahtzee", "bonus": 100, "joker": "free"},
}


@pytest.mark.parametrize("spec", ["yacht", "school_poker", "tiny:forced", "tiny:free", "tiny:none", "mini"])
def test_forward_pass_finds_exactly_the_reachable_states(spec):
    """The pair-and-bitset forward pass equals a state-by-state search with the engine."""
    name, _, joker = spec.partition(":")
    if name == "tiny":
        rules_spec = json.loads(json.dumps(TINY))
        rules_spec["five_of_a_kind"]["joker"] = joker
        rules = load_rules(rules_spec)
    elif name == "mini":
        rules = load_rules(MINI)
    else:
        rules = load_rules(name)
    space = StateSpace(compile_rules(rules))
    fast, reference = reachable_layers(space), _reachable_by_states(space)
    assert len(fast) == len(reference) == compile_rules(rules).turns + 1
    for t, (got, want) in enumerate(zip(fast, reference)):
        np.testing.assert_array_equal(got, want, err_msg=f"layer {t}")


# ------------------------------------------------------- the optimal agent
GAME_MEANS = [
    "yacht",
    "school_poker",
    "yahtzee:forced",
    pytest.param("yahtzee:free", marks=pytest.mark.slow),
    pytest.param("yahtzee:none", marks=pytest.mark.slow),
    "yatzy",
    pytest.param("dice_poker", marks=pytest.mark.slow),  # 1.4 million states: ~10 s to solve on two cores
]


@pytest.mark.parametrize("spec", GAME_MEANS)
def test_mean_of_20000_games_matches_expected_score(spec):
    from agents.players.optimal import OptimalAgent, play_games

    solution = _solved(spec)
    scores = play_games(OptimalAgent(solution), 20_000, seed=11)
    standard_error = scores.std() / np.sqrt(len(scores))
    assert abs(scores.mean() - solution.expected_score) < 3 * standard_error
    assert abs(scores.std() - solution.score_std) < 0.05 * solution.score_std


@pytest.mark.parametrize("spec", ["yacht", "school_poker", "yahtzee:forced"])
def test_optimal_agent_plays_the_env(spec):
    from agents.players.optimal import OptimalAgent

    solution = _solved(spec)
    agent = OptimalAgent(solution)
    env = DicePokerEnv(solution.rules, illegal_action="raise")
    for seed in range(10):
        agent.reset()
        obs, info = env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            action = agent.act(obs, info["action_mask"])
            assert isinstance(action, int) and info["action_mask"][action] == 1
            assert action == solution.best_action(obs)
            obs, reward, done, _, info = env.step(action)
            total += reward
        assert total == info["final_score"]


# --------------------------------------------------------------------- cache
def test_cache_is_reused_and_damage_is_detected(tmp_path, monkeypatch):
    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path))
    rules = load_rules("yacht")
    first = solve(rules, progress=False)
    assert not first.from_cache
    path = disk.cache_path(rules.name, rules.fingerprint)
    assert path.parent == tmp_path and path.exists()
    second = solve(rules, progress=False)
    assert second.from_cache  # read, not solved again (no timing: a loaded machine may take any time)
    assert second.expected_score == first.expected_score and second.score_std == first.score_std
    # a flipped byte in the payload
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="checksum"):
        third = solve(rules, progress=False)
    assert not third.from_cache and third.expected_score == first.expected_score
    # a truncated file, then garbage
    path.write_bytes(path.read_bytes()[:-1000])
    with pytest.warns(CacheWarning, match="truncated"):
        assert not solve(rules, progress=False).from_cache
    path.write_bytes(b"garbage")
    with pytest.warns(CacheWarning):
        assert not solve(rules, progress=False).from_cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert solve(rules, progress=False).from_cache


def test_cache_keys_differ_by_rules():
    a, b = load_rules("yahtzee", joker="free"), load_rules("yahtzee", joker="none")
    assert disk.cache_path(a.name, a.fingerprint) != disk.cache_path(b.name, b.fingerprint)


# ----------------------------------------------------------------------- CLI
def _cli(*argv) -> str:
    from dice_poker_env.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def test_cli_solve_json_is_one_object():
    text = _cli("solve", "yacht", "--json", "--no-progress")
    data = json.loads(text)
    solution = _solved("yacht")
    assert data["rules"] == "yacht" and data["options"] == {} and data["states"] == solution.n_states
    assert data["expected_score"] == pytest.approx(solution.expected_score)
    assert data["score_std"] == pytest.approx(solution.score_std) and data["seconds"] >= 0


def test_cli_solve_text_and_options():
    text = _cli("solve", "yacht", "--no-progress")
    solution = _solved("yacht")
    assert f"expected score  {solution.expected_score:.6f}\n" in text
    assert f"std deviation   {solution.score_std:.4f}\n" in text and f"states          {solution.n_states:,}\n" in text
    with pytest.raises(SystemExit):
        _cli("solve", "yacht", "--option")


def test_cli_advise_lists_distinct_actions_best_first():
    text = _cli("advise", "yacht", "--dice", "1", "2", "2", "4", "6", "--rolls-left", "2", "--json")
    items = json.loads(text)
    values = [item["value"] for item in items]
    assert values == sorted(values, reverse=True)
    keeps = [tuple(item["keep"]) for item in items if item["kind"] == "keep"]
    assert len(keeps) == len(set(keeps)) == 23  # distinct proper sub-multisets of 1 2 2 4 6 (incl. nothing)
    assert sum(item["kind"] == "score" for item in items) == 12
    text = _cli(
        "advise", "yacht", "--dice", "6", "6", "6", "6", "6", "--rolls-left", "0", "--scorecard", '{"yacht": 0}'
    )
    lines = [line for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert len(lines) == 11 and "four_of_a_kind" in lines[0]  # 30 points, sixes kept open


def test_small_turn_cache_plays_the_same_games():
    """The agent's per-state turn cache may be emptied mid-batch without changing any decision."""
    from agents.players.optimal import OptimalAgent, play_games

    big = _solved("yacht")
    small = solve(big.rules, progress=False)
    small._turn_cache_size = 300
    small._clear_turn_cache()
    a = play_games(OptimalAgent(big), 3000, seed=4)
    b = play_games(OptimalAgent(small), 3000, seed=4)
    np.testing.assert_array_equal(a, b)


def test_fast_best_actions_agree_with_action_values():
    solution = _solved("yahtzee:forced")
    env = DicePokerEnv(solution.rules)
    rng = np.random.default_rng(3)
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            q = solution.action_values(obs)
            best = solution.best_action(obs)
            assert q[best] >= q.max() - 1e-4
            obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))


def test_worker_processes_give_the_same_values():
    from dice_poker_env.solver.backward import solve_dp

    tables = compile_rules(load_rules("yacht"))
    one = solve_dp(tables, workers=1, chunk=128)
    two = solve_dp(tables, workers=2, chunk=128)
    np.testing.assert_array_equal(one.keys, two.keys)
    np.testing.assert_array_equal(one.value, two.value)
    np.testing.assert_array_equal(one.value2, two.value2)


def test_act_batch_obeys_the_mask_it_is_given():
    from agents.players.optimal import OptimalAgent
    from dice_poker_env.engine.masks import action_masks
    from dice_poker_env.envs.observation import observe_dict_batch

    solution = _solved("yacht")
    agent = OptimalAgent(solution)
    tables = compile_rules(solution.rules)
    state = game.new_batch(tables, np.arange(0, N_ROLLS, 9, dtype=np.int64))
    obs = observe_dict_batch(tables, state)
    masks = action_masks(tables).of_batch(state)
    best = agent.act_batch(obs, masks)
    masks[np.arange(len(best)), best] = 0  # forbid the solver's choice
    second = agent.act_batch(obs, masks)
    q = solution.action_values(obs)
    q = np.where(masks == 1, q, -np.inf)
    np.testing.assert_array_equal(second, np.argmax(q, axis=1))


def test_vectorized_dice_tables_equal_the_loop_definitions():
    """engine/combinatorics.py builds its tables with array operations; the plain loops give the same bits."""
    import itertools
    from math import factorial

    from dice_poker_env.engine import combinatorics as d

    rows = [c for c in itertools.product(range(d.N_DICE + 1), repeat=d.N_FACES) if sum(c) <= d.N_DICE]
    rows.sort(key=lambda c: (sum(c), tuple(-x for x in c)))
    counts = np.array(rows, dtype=np.int8)
    assert counts.dtype == d.KEEP_COUNTS.dtype
    np.testing.assert_array_equal(counts, d.KEEP_COUNTS)
    index_of_code = {int(c): i for i, c in enumerate(d.encode_counts(counts))}

    keep_of_action = np.empty((d.N_ROLLS, d.N_KEEP_ACTIONS), dtype=np.int16)
    bits = (np.arange(d.N_KEEP_ACTIONS)[:, None] >> np.arange(d.N_DICE)) & 1
    for r, dice in enumerate(d.ROLL_DICE):
        kept = bits * dice
        kept_counts = np.stack([(kept == f).sum(axis=1) for f in d.FACES], axis=1)
        keep_of_action[r] = [index_of_code[int(c)] for c in d.encode_counts(kept_counts)]
    assert d.KEEP_OF_ACTION.dtype == keep_of_action.dtype
    np.testing.assert_array_equal(d.KEEP_OF_ACTION, keep_of_action)

    canonical = np.zeros((d.N_ROLLS, d.N_KEEP_ACTIONS), dtype=bool)
    for r in range(d.N_ROLLS):
        _, first = np.unique(keep_of_action[r, : d.KEEP_ALL], return_index=True)
        canonical[r, first] = True
    np.testing.assert_array_equal(d.CANONICAL_KEEP_ACTION, canonical)

    def probability(c):
        n = int(c.sum())
        ways = factorial(n)
        for x in c:
            ways //= factorial(int(x))
        return ways / d.N_FACES**n

    transition = np.zeros((d.N_KEEPS, d.N_ROLLS), dtype=np.float64)
    for k, keep in enumerate(counts):
        added = d.ROLL_COUNTS - keep
        for r in np.flatnonzero((added >= 0).all(axis=1)):
            transition[k, r] = probability(added[r])
    assert d.TRANSITION.dtype == transition.dtype
    assert d.TRANSITION.tobytes() == transition.tobytes()  # bit for bit

    plus = np.full((d.N_KEEPS, d.N_FACES), -1, dtype=np.int16)
    for k, keep in enumerate(counts):
        if d.KEEP_SIZE[k] < d.N_DICE:
            for f in range(d.N_FACES):
                grown = keep.copy()
                grown[f] += 1
                plus[k, f] = d.keep_index(grown)
    assert d.KEEP_PLUS_FACE.dtype == plus.dtype
    np.testing.assert_array_equal(d.KEEP_PLUS_FACE, plus)


def test_a_solution_reach_and_duel_show_their_rules_options():
    """Two solutions of one ruleset under other options looked the same (``Solution('tiny_joker', ...)``)."""
    from rulesets import TINY_JOKER

    from dice_poker_env.solver.duel import solve_duel
    from dice_poker_env.solver.reach import solve_reach

    patch = {"five_of_a_kind.joker": "free"}
    spec = dict(
        TINY_JOKER, options={"joker": {"doc": "d", "default": "forced", "values": {"forced": {}, "free": patch}}}
    )
    rules = load_rules(spec, joker="free")
    assert rules.label() == "'tiny_joker', joker='free'"
    assert load_rules("yacht").label() == "'yacht'"
    solution = solve(rules, cache=False, progress=False, workers=1)
    assert repr(solution).startswith("Solution('tiny_joker', joker='free', expected_score=")
    assert repr(solve_reach(rules, cache=False, progress=False, workers=1)).startswith(
        "Reach('tiny_joker', joker='free', "
    )
    assert repr(solve_duel(rules, cache=False, progress=False)).startswith("Duel('tiny_joker', joker='free', ")
