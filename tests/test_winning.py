"""The winning agent: its utility against brute force, exact last turns, its special modes, batching, two-player turns.

Small rulesets only (a three-box ruleset with an upper bonus, a joker and a five-of-a-kind bonus, and
a six-box one with an upper bonus): their reach tables take a second or two.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from rulesets import SMALL_BONUS, TINY_JOKER

from agents.players.optimal import OptimalAgent
from agents.players.registry import is_batch_agent, make_agent
from agents.players.winning import WinningAgent
from dice_poker_env import load_rules
from dice_poker_env.engine import game
from dice_poker_env.engine.combinatorics import (
    KEEP_ALL,
    KEEP_OF_ACTION,
    N_KEEP_ACTIONS,
    N_ROLLS,
    TRANSITION,
    roll_index_of_faces,
)
from dice_poker_env.engine.position import make_position
from dice_poker_env.envs.observation import observe_dict
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.multi import env as multi_env
from dice_poker_env.solver import SolverError, solve
from dice_poker_env.solver.reach import solve_reach

TINY, SMALL = TINY_JOKER, SMALL_BONUS


@pytest.fixture(scope="module")
def tiny():
    rules = load_rules(TINY)
    return WinningAgent(
        rules,
        reach=solve_reach(rules, cache=False, progress=False, workers=1),
        solution=solve(rules, cache=False, progress=False, workers=1),
    )


@pytest.fixture(scope="module")
def small():
    rules = load_rules(SMALL)
    return WinningAgent(
        rules,
        reach=solve_reach(rules, cache=False, progress=False, workers=1),
        solution=solve(rules, cache=False, progress=False, workers=1),
    )


def _variant(agent: WinningAgent, **kwargs) -> WinningAgent:
    return WinningAgent(agent.rules, reach=agent.reach, solution=agent.solution, **kwargs)


# ------------------------------------------------------------------ the utility
def _pmf(agent: WinningAgent, pos: int, points: int) -> dict[int, float]:
    """An opponent's final-score distribution from the policy table, as ``{score: probability}``."""
    reach = agent.reach
    x = np.arange(reach.lo[pos] - 1, reach.lo[pos] + reach.width[pos] + 1)
    at_least = reach.policy_probabilities(np.full(len(x), pos), x)
    pmf = at_least[:-1] - at_least[1:]
    return {int(points + x[i]): float(p) for i, p in enumerate(pmf) if p > 0}


def _brute_utility(pmfs: list[dict[int, float]], xs: np.ndarray) -> np.ndarray:
    """My expected win share with each final score ``x``: every combination of the opponents' finals."""
    combos = list(itertools.product(*(p.items() for p in pmfs)))
    finals = np.array([[f for f, _ in c] for c in combos])  # (combos, opponents)
    prob = np.array([np.prod([p for _, p in c]) for c in combos])
    best = finals.max(axis=1)
    out = []
    for x in xs:
        share = np.where(x > best, 1.0, np.where(x == best, 1.0 / (1 + (finals == x).sum(axis=1)), 0.0))
        out.append(float(prob @ share))
    return np.array(out)


@pytest.mark.parametrize("opponents", [2, 3])
def test_utility_and_weights_match_a_brute_force_over_the_opponents_finals(small, opponents):
    policy = small.policy
    rng = np.random.default_rng(opponents)
    # late states (four or five boxes filled: short enough for the brute force) and points that make ties likely
    layer = small.reach.layer_start
    states = np.arange(int(layer[4]), int(layer[6]))
    assert len(states) > opponents
    pos = rng.choice(states, size=opponents, replace=False)
    points = np.array([0, 5, 10][:opponents])
    tlo, u = policy.utility(pos[None, :], points[None, :])
    pmfs = [_pmf(small, int(p), int(q)) for p, q in zip(pos, points)]
    xs = np.arange(int(tlo[0]) - 3, int(tlo[0]) + u.shape[1] + 3)
    brute = _brute_utility(pmfs, xs)
    got = np.concatenate([np.zeros(3), u[0], np.ones(3)])
    assert np.abs(got - brute).max() < 1e-12
    assert np.any((brute > 0) & (brute < 1))
    ties = [x for x in xs if sum(x in p for p in pmfs) >= 2]
    assert ties  # the comparison covers tied finals
    start, w, below = policy.weights(pos[None, :], points[None, :])
    assert np.all(w >= -1e-15)
    # U(x) = below + sum of the weights up to x, to within the dropped tails
    rebuilt = below[0] + np.concatenate([[0.0], np.cumsum(w[0])])
    at = np.clip(xs - start[0] + 1, 0, w.shape[1])
    assert np.abs(rebuilt[at] - brute).max() < 3 * policy.tail + 1e-12


# ------------------------------------------------------------------ the last turn is exact
def _finished(agent: WinningAgent, scorecard: dict[str, int]) -> dict[str, np.ndarray]:
    names = agent.rules.box_names
    scores = np.array([scorecard[n] for n in names], dtype=np.int64)
    upper = int(scores @ agent.tables.is_upper.astype(np.int64))
    bonus = agent.tables.upper_bonus_points if upper >= agent.tables.upper_bonus_threshold else 0
    return {"filled": np.ones(len(names), dtype=np.int64), "scores": scores, "upper": upper, "bonus": int(bonus)}


def _observation(agent, scorecard, dice, rolls_left, opponents, bonus=None):
    state = make_position(agent.tables, scorecard, dice, rolls_left, bonus)
    obs = observe_dict(agent.tables, state)
    if opponents:
        obs["opponent_filled"] = np.stack([o["filled"] for o in opponents])
        obs["opponent_scores"] = np.stack([o["scores"] for o in opponents])
        obs["opponent_upper_total"] = np.array([o["upper"] for o in opponents])
        obs["opponent_bonus"] = np.array([o["bonus"] for o in opponents])
        obs["opponent_total"] = np.array([o["scores"].sum() + o["bonus"] for o in opponents])
    return obs, state


def _brute_last_turn(agent, state, opponent_totals) -> np.ndarray:
    """Win share of every action of a game's last turn against finished opponents: the engine scores every
    roll, rerolls average through the dice's transition matrix (no solver code)."""
    tables = agent.tables
    n = tables.n_boxes
    full = bool(game.five_kind_box_full(tables.one_game, state.filled, state.scores))
    so_far = int(state.scores.sum()) + int(state.bonus)
    best = max(opponent_totals)

    def share(final: np.ndarray) -> np.ndarray:
        ties = sum((final == t).astype(float) for t in opponent_totals)
        return np.where(final > best, 1.0, np.where(final == best, 1.0 / (1.0 + ties), 0.0))

    rolls = np.arange(N_ROLLS)
    score = {}
    for first in (False, True):
        table = np.full((N_ROLLS, n), -np.inf)
        for b in range(n):
            legal = (np.broadcast_to(game.legal_boxes(tables, state.filled, full, rolls), (N_ROLLS,)) >> b) & 1 == 1
            points, bonus, _ = game.score_points(tables, state.filled, state.upper_total, full, rolls, first, b)
            table[:, b] = np.where(legal, share(so_far + np.broadcast_to(points + bonus, (N_ROLLS,))), -np.inf)
        score[first] = table
    q = np.full((3, N_ROLLS, N_KEEP_ACTIONS + n), -np.inf)
    q[0, :, N_KEEP_ACTIONS:] = score[False]
    w = score[False].max(axis=1)
    for rolls_left, first in ((1, False), (2, True)):
        keep = TRANSITION @ w
        q[rolls_left, :, :KEEP_ALL] = keep[KEEP_OF_ACTION[:, :KEEP_ALL]]
        q[rolls_left, :, N_KEEP_ACTIONS:] = score[first]
        w = q[rolls_left].max(axis=1)
    return q[state.rolls_left, state.roll]


@pytest.mark.parametrize(
    "mine, others",
    [
        ({"fives": 10, "full_house": 25}, [{"fives": 15, "full_house": 25, "yahtzee": 0}]),
        (
            {"fives": 15, "yahtzee": 50},
            [{"fives": 10, "full_house": 25, "yahtzee": 50}, {"fives": 15, "full_house": 0, "yahtzee": 50}],
        ),
        ({"full_house": 0, "yahtzee": 0}, [{"fives": 5, "full_house": 0, "yahtzee": 0}] * 2),
    ],
)
@pytest.mark.parametrize("rolls_left", [0, 1, 2])
def test_the_last_players_last_turn_is_exact(tiny, mine, others, rolls_left):
    opponents = [_finished(tiny, o) for o in others]
    totals = [int(o["scores"].sum() + o["bonus"]) for o in opponents]
    checked = 0
    for dice in ([5, 5, 5, 2, 2], [1, 2, 3, 5, 5], [4, 4, 4, 4, 4], [5, 5, 5, 5, 5], [6, 6, 1, 2, 3]):
        obs, state = _observation(tiny, mine, dice, rolls_left, opponents)
        got = tiny.action_values(obs)
        want = _brute_last_turn(tiny, state, totals)
        assert np.array_equal(np.isfinite(got), np.isfinite(want))
        legal = np.isfinite(want)
        assert np.abs(got[legal] - want[legal]).max() < 1e-12
        checked += int(np.ptp(want[legal]) > 0)
    assert checked or rolls_left == 0  # some decision where the actions differ (no choice when scoring the last box)


# ------------------------------------------------------------------ the special modes
def _play_single(agent, games: int, seed: int, check) -> int:
    env = DicePokerEnv(rules=agent.rules)
    decisions = 0
    for g in range(games):
        obs, info = env.reset(seed=seed + g)
        done = False
        while not done:
            action = check(obs, info["action_mask"])
            decisions += 1
            obs, _, done, _, info = env.step(action)
    return decisions


def test_a_target_plays_the_reach_policy(small):
    agent = _variant(small, target=150)
    names = small.rules.box_names

    def check(obs, mask):
        card = {names[k]: int(obs["scores"][k]) for k in np.flatnonzero(obs["filled"])}
        situation = {"scorecard": card, "dice": obs["dice"].tolist(), "rolls_left": int(obs["rolls_left"])}
        situation["bonus"] = int(obs["bonus"][0])
        want = small.reach.action_probabilities(situation, 150)
        got = agent.action_values(obs)
        legal = np.isfinite(want)
        assert np.array_equal(np.isfinite(got), legal)
        assert np.abs(got[legal] - want[legal]).max() < 1e-12
        action = agent.act(obs, mask)
        assert got[action] == got[legal].max() and mask[action] == 1
        return action

    assert _play_single(agent, 4, 0, check) > 20


def test_a_first_roll_scores_its_doubled_points():
    """On a turn's first roll a box with first-roll doubling scores double, in the agent's values as in the reach
    table's (its candidates of the first roll, not the later rolls')."""
    rules = load_rules(
        {
            "name": "tiny_doubled",
            "boxes": [
                {"name": "fives", "kind": "face_sum", "face": 5},
                {"name": "pair", "kind": "n_of_a_kind", "n": 2, "points": "matching", "first_roll_double": True},
                {"name": "yacht", "kind": "n_of_a_kind", "n": 5, "points": 50},
            ],
        }
    )
    reach = solve_reach(rules, cache=False, progress=False, workers=1)
    agent = WinningAgent(rules, target=30, reach=reach, solution=solve(rules, cache=False, progress=False, workers=1))
    env = DicePokerEnv(rules)
    pair = N_KEEP_ACTIONS + rules.box_names.index("pair")
    for dice in ([6, 6, 1, 2, 3], [4, 4, 5, 5, 1], [2, 3, 4, 6, 6]):
        for rolls_left in (2, 1):
            situation = {"dice": dice, "rolls_left": rolls_left}
            obs, _ = env.reset(options=situation)
            want = reach.action_probabilities(situation, 30)
            got = agent.action_values(obs)
            assert np.array_equal(np.isfinite(got), np.isfinite(want))
            assert np.abs(got[np.isfinite(want)] - want[np.isfinite(want)]).max() < 1e-12
    first, later = (reach.action_probabilities({"dice": [6, 6, 1, 2, 3], "rolls_left": r}, 30) for r in (2, 1))
    assert first[pair] > later[pair]  # 24 points for the pair now, 12 after a reroll: the doubling counts


def test_without_opponents_or_target_it_is_the_optimal_agent(small):
    optimal = OptimalAgent(small.solution)

    def check(obs, mask):
        action = small.act(obs, mask)
        assert action == optimal.act(obs, mask)
        return action

    assert _play_single(small, 3, 10, check) > 15


@pytest.mark.parametrize("opponent_total", [0, 999])
def test_a_decided_game_is_played_for_points(small, opponent_total):
    """Surely won (the opponent finished with 0) or surely lost (999: out of reach): every action has the same
    win share, and the agent plays the expected-score action (scores its straight), not the tie's first (action 0,
    rerolling it); so does its target mode once the target is reached (its whole-turn table: the test below)."""
    optimal = OptimalAgent(small.solution)
    card = {"fives": 15, "sixes": 18, "full_house": 25, "choice": 20}  # big_straight and yacht open
    opponent = _finished(small, dict.fromkeys(small.rules.box_names, 0))
    opponent["scores"][-1] = opponent_total  # (a lost game needs no reachable opponent: only its total counts)
    obs, _ = _observation(small, card, [2, 3, 4, 5, 6], 2, [opponent])
    values = small.action_values(obs)
    legal = np.isfinite(values)
    assert values[legal].max() - values[legal].min() < 1e-9  # decided
    straight = N_KEEP_ACTIONS + small.rules.box_names.index("big_straight")
    assert optimal.act(obs, legal.astype(np.int8)) == straight
    assert small.act(obs, legal.astype(np.int8)) == straight
    assert small.act_batch(obs, legal.astype(np.int8)[None]).tolist() == [straight]  # one unbatched observation
    assert _variant(small, target=10).act(obs, legal.astype(np.int8)) == straight  # 78 already: reached


# ------------------------------------------------------------------ batching, legality, two-player turns
def _multi_observations(agent, players: int, games: int, seed: int):
    """Observations and masks met in multi-player games played by ``agent`` (through the PettingZoo env)."""
    env = multi_env(rules=agent.rules, num_players=players)
    seen = []
    for g in range(games):
        env.reset(seed=seed + g)
        for _name in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            action = agent.act(obs["observation"], obs["action_mask"])
            assert obs["action_mask"][action] == 1
            seen.append((obs["observation"], obs["action_mask"]))
            env.step(action)
    return seen


@pytest.mark.parametrize("players", [2, 4])
def test_act_equals_act_batch_and_is_legal(small, players):
    seen = _multi_observations(small, players, 2, 100 * players)
    fresh = _variant(small)  # an empty memo: the answers do not depend on it
    batch = {key: np.stack([o[key] for o, _ in seen]) for key in seen[0][0]}
    masks = np.stack([m for _, m in seen])
    actions = fresh.act_batch(batch, masks)
    assert masks[np.arange(len(seen)), actions].all()
    assert actions.tolist() == [small.act(o, m) for o, m in seen]
    q = fresh.action_values(batch)
    assert np.all((q[np.isfinite(q)] >= -1e-12) & (q[np.isfinite(q)] <= 1 + 1e-12))


def test_turn_actions_agree_with_act(small):
    seen = _multi_observations(small, 2, 3, 7)
    policy = small.policy
    space = small.reach.space
    tables = small.tables
    rows = []
    for obs, _ in seen:
        filled = int((obs["filled"] << np.arange(tables.n_boxes)).sum())
        opp_filled = int((obs["opponent_filled"][0] << np.arange(tables.n_boxes)).sum())
        my_key = space.key(filled, space.canonical_upper(filled, int(obs["upper_total"][0])), False)
        opp_key = space.key(opp_filled, space.canonical_upper(opp_filled, int(obs["opponent_upper_total"][0])), False)
        diff = int(obs["scores"].sum() + obs["bonus"][0]) - int(obs["opponent_total"][0])
        rows.append((int(my_key), int(opp_key), diff, int(obs["rolls_left"]), obs))
    table = small.turn_actions(
        np.array([r[0] for r in rows]), np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    )
    assert table.shape == (len(rows), 3, N_ROLLS)
    for i, (_, _, _, rolls_left, obs) in enumerate(rows):
        roll = int(roll_index_of_faces(np.asarray(obs["dice"])[None])[0])
        assert table[i, rolls_left, roll] == small.act(obs)
    with pytest.raises(ValueError, match="reachable|range"):
        policy.turn_actions(np.array([-1]), np.array([0]), np.array([0]))


def test_bad_observations_and_arguments_are_one_line_errors(small):
    obs, _ = _observation(small, {}, [1, 2, 3, 4, 5], 2, [_finished(small, dict.fromkeys(small.rules.box_names, 0))])
    obs["opponent_scores"] = obs["opponent_scores"] + 1
    with pytest.raises(SolverError, match="opponent"):
        small.act(obs)
    with pytest.raises(SolverError, match="observation must be a dict"):
        small.act(np.zeros(10), np.ones(45, dtype=np.int8))  # a flat observation
    with pytest.raises(ValueError, match="future"):
        _variant(small, future="hope")
    with pytest.raises(ValueError, match="target"):
        _variant(small, target=1.5)
    with pytest.raises(ValueError, match=r"target 100000000000000000000000 is out of range"):
        _variant(small, target=10**23)  # beyond int64: an OverflowError deep in NumPy at the first decision
    assert _variant(small, target=-(2**62)).target == -(2**62)  # the largest allowed: accepted


def test_registry_builds_it_by_name(small, monkeypatch):
    import agents.players.winning as module

    monkeypatch.setattr(module, "solve_reach", lambda rules, **kw: small.reach)
    monkeypatch.setattr(module, "solve", lambda rules, **kw: small.solution)
    agent = make_agent("winning,future=reach", small.rules)
    assert isinstance(agent, WinningAgent) and agent.future == "reach"
    assert make_agent("winning", small.rules).future == "expected"
    assert make_agent("winning,target=120", small.rules).target == 120
    assert is_batch_agent("winning") and is_batch_agent(agent)
    # a misspelt argument is named as the agent's, not as an unknown rules option
    with pytest.raises(ValueError, match=r"unknown argument 'taget' \(winning takes target, future, tail\)"):
        make_agent("winning,taget=120", small.rules)


def test_a_bad_tail_is_refused_before_any_table_is_solved(small, monkeypatch):
    import agents.players.winning as module

    def never(*args, **kwargs):
        raise AssertionError("solved before the arguments were checked")

    monkeypatch.setattr(module, "solve_reach", never)
    monkeypatch.setattr(module, "solve", never)
    for bad in (0.7, -0.1, "x", None):
        with pytest.raises(ValueError, match=r"tail must be a number in \[0, 0.5\)"):
            WinningAgent(small.rules, tail=bad)
    with pytest.raises(ValueError, match="tail must be a number"):
        make_agent("winning,tail=0.5", small.rules)


# ------------------------------------------------------------------ head to head
def test_it_wins_at_least_as_often_as_the_optimal_agent_head_to_head(small):
    """Through the PettingZoo env, seats alternating: a broken agent (one that loses on purpose, reads the
    opponents wrongly or plays for the wrong score) falls far below half."""
    optimal = OptimalAgent(small.solution)
    env = multi_env(rules=small.rules, num_players=2)
    shares = []
    for g in range(300):
        env.reset(seed=g)
        players = {"player_0": small, "player_1": optimal} if g % 2 == 0 else {"player_0": optimal, "player_1": small}
        for name in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else players[name].act(obs["observation"], obs["action_mask"]))
        me = "player_0" if g % 2 == 0 else "player_1"
        scores = env.unwrapped.totals()
        other = scores["player_1" if me == "player_0" else "player_0"]
        shares.append(1.0 if scores[me] > other else 0.5 if scores[me] == other else 0.0)
    assert np.mean(shares) >= 0.45, np.mean(shares)


def test_bench_winning_times_the_projects_match(small):
    """benchmarks/bench_winning.py's self-play is the project's match of the agent against itself: the same
    deals and scores, every decision counted, and the agent left as it was."""
    import importlib.util
    from pathlib import Path

    from agents.evaluation.match import play_deals

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_winning.py"
    spec = importlib.util.spec_from_file_location("bench_winning", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = bench.speed(small.rules, small, 6, seed=3)
    assert "act_batch" not in vars(small)  # the timing wrapper is gone
    scores = play_deals(small.rules, [small, small], 3, 3)
    assert row["games"] == 6 and row["mean_score"] == pytest.approx(scores.mean())
    turns = 2 * 6 * small.tables.turns  # every turn of both seats of every game: a box, after up to two rerolls
    assert turns <= row["decisions"] <= 3 * turns
    assert row["games_per_cpu_second"] > 0 and 0 < row["act_seconds"] <= row["wall_seconds"]
