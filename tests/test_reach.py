"""The reach solver: maximum probabilities of reaching a final score, their policy, the optimal policy's distribution.

Checked against an independent exhaustive recursion on tiny rulesets (full game states, the engine's
rules roll by roll, dense transition matrices: no solver code), and on a six-box ruleset with an upper
bonus (yacht's boxes, a few hundred states: fast) for the properties any
correct table has: monotone in the target, 1 at or below the least score, at least the expected-score
policy's probability for every target, action values that average back to the table, the policy's
distribution summing to 1 with the solver's mean.
"""

from __future__ import annotations

import io
import json
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest
from rulesets import SMALL_BONUS_TOML, TINY_JOKER

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
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.solver import CacheWarning, SolverError, solve
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver.reach import ScoreDistribution, final_score_range, solve_reach

TINY = TINY_JOKER
NEGATIVE = {  # negative points, an upper bonus paid on completion, first-roll doubling
    "name": "tiny_negative",
    "sections_in_order": True,
    "boxes": [
        {"name": "fives", "kind": "relative_face", "face": 5, "base": 3},
        {"name": "sixes", "kind": "relative_face", "face": 6, "base": 3},
        {"name": "pair", "kind": "n_of_a_kind", "n": 2, "points": "matching", "first_roll_double": True},
    ],
    "upper_bonus": {"threshold": 0, "points": 50, "timing": "on_complete"},
}
SMALL_TOML = SMALL_BONUS_TOML
#: targets ``LOW .. HIGH`` of the brute force: below every rest (probability 1) and above every rest (0)
LOW, HIGH = -100, 500


# ------------------------------------------------------------------ brute force
def _shift(vector: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``out[..., i] = vector[i - points]`` over the targets ``LOW..HIGH + 1`` (1 below, 0 above)."""
    i = np.arange(vector.shape[-1]) - np.asarray(points)[..., None]
    return vector[np.clip(i, 0, vector.shape[-1] - 1)]


def _brute(rules, policy=None, memo=None) -> np.ndarray:
    """``P(rest >= t)`` from the empty scorecard for ``t = LOW..HIGH + 1``: the best over all policies, or
    under ``policy(filled, upper, full) -> (3, 252) actions`` when given. Full states, no canonical forms.
    ``memo`` (a dict) receives every state's vector, keyed ``(filled, upper, full)``."""
    tables = compile_rules(rules)
    n = tables.n_boxes
    size = HIGH - LOW + 2
    done_vector = (np.arange(size) + LOW <= 0).astype(float)
    memo = {} if memo is None else memo
    rolls = np.arange(N_ROLLS)

    def value(filled: int, upper: int, full: bool) -> np.ndarray:
        key = (filled, upper, full)
        if key in memo:
            return memo[key]
        if bin(filled).count("1") >= tables.turns:
            memo[key] = done_vector
            return done_vector
        # per (first roll?, box, roll): the reach vector of scoring the roll in the box (None: illegal)
        scored = {}
        for first in (False, True):
            table = np.full((n, N_ROLLS, size), -1.0)
            for b in range(n):
                legal = (np.broadcast_to(game.legal_boxes(tables, filled, full, rolls), (N_ROLLS,)) >> b) & 1
                legal_rolls = np.flatnonzero(legal)
                points, bonus, new_upper = (
                    np.broadcast_to(x, legal_rolls.shape)
                    for x in game.score_points(tables, filled, upper, full, legal_rolls, first, b)
                )
                now_full = full | ((b == tables.five_kind_box) & (points > 0))
                moves = np.stack([points + bonus, new_upper, now_full]).T
                for move in np.unique(moves, axis=0):  # each distinct (points, upper total, flag) once
                    after = value(filled | 1 << b, int(move[1]), bool(move[2]))
                    table[b, legal_rolls[(moves == move).all(axis=1)]] = _shift(after, int(move[0]))
            scored[first] = table
        if policy is None:
            W = scored[False].max(axis=0)
            for first in (False, True):
                K = TRANSITION @ W  # (462, targets)
                keeps = K[KEEP_OF_ACTION[:, :KEEP_ALL]].max(axis=1)  # (252, targets): the best keep of each roll
                W = np.maximum(scored[first].max(axis=0), keeps)
        else:
            actions = policy(filled, upper, full)  # (3, 252)
            W = scored[False][actions[0] - N_KEEP_ACTIONS, rolls]
            for rolls_left, first in ((1, False), (2, True)):
                K = TRANSITION @ W
                a = actions[rolls_left]
                keep = KEEP_OF_ACTION[rolls, np.minimum(a, KEEP_ALL - 1)]
                W = np.where(
                    (a < N_KEEP_ACTIONS)[:, None], K[keep], scored[first][np.maximum(a - N_KEEP_ACTIONS, 0), rolls]
                )
        memo[key] = FIRST_ROLL_PROBABILITY @ W
        return memo[key]

    return value(0, 0, False)


def _policy_of(solution):
    def policy(filled: int, upper: int, full: bool) -> np.ndarray:
        rolls_left = np.repeat(np.arange(3), N_ROLLS)
        roll = np.tile(np.arange(N_ROLLS), 3)
        ones = np.ones(3 * N_ROLLS, dtype=np.int64)
        return solution.best_actions(ones * filled, ones * upper, ones.astype(bool) & full, roll, rolls_left).reshape(
            3, N_ROLLS
        )

    return policy


@pytest.mark.parametrize("spec", [TINY, NEGATIVE], ids=["bonus-joker", "negative-doubling"])
def test_matches_exhaustive_recursion_on_tiny_games(spec):
    rules = load_rules(spec)
    reach = solve_reach(rules, cache=False, progress=False, workers=1)
    expected = _brute(rules)
    targets = np.arange(LOW, HIGH + 2)
    got = np.array([reach.probability(int(t)) for t in targets])
    assert np.abs(got - expected).max() < 1e-12
    assert 0.0 < reach.probability(60) < 1.0  # the comparison covers targets that matter
    # the expected-score policy's distribution, against the same recursion following that policy's actions
    solution = solve(rules, cache=False, progress=False, workers=1)
    policy = _brute(rules, _policy_of(solution))
    dist = reach.distribution
    assert dist is not None
    at_least = np.array([dist.at_least(int(t)) for t in targets])
    assert np.abs(at_least - policy).max() < 1e-12
    assert abs(dist.pmf.sum() - 1.0) < 1e-12
    assert abs(dist.mean - solution.expected_score) < 1e-4  # the solver's turn tables are float32 (docs/solver.md)
    # ... and from every other between-turn state: the policy's table (an opponent's rest, for `winning`)
    memo: dict = {}
    _brute(rules, _policy_of(solution), memo)
    games = [k for k in memo if bin(k[0]).count("1") < reach.tables.turns]
    assert len(games) > 5
    for filled, upper, full in games:
        pos = reach._positions(np.array([filled]), np.array([upper]), np.array([full]))
        got_rest = reach.policy_probabilities(np.repeat(pos, len(targets)), targets)
        assert np.abs(got_rest - memo[filled, upper, full]).max() < 1e-12, (filled, upper, full)


def test_mid_game_probability_counts_the_points_and_bonus_so_far():
    rules = load_rules(TINY)
    reach = solve_reach(rules, cache=False, progress=False, workers=1, distribution=False)
    # fives 15 reaches the threshold: 15 + 35 on the scorecard; two turns left
    with_bonus = reach.probability(100, {"fives": 15})
    assert reach.probability(50, {"fives": 15}) == 1.0  # already there
    assert 0.0 < with_bonus < 1.0
    assert reach.probability(100, {"fives": 10}) < with_bonus  # 25 points fewer, no bonus
    with pytest.raises(SolverError, match="target"):
        reach.probability(1.5)
    with pytest.raises(SolverError, match="out of range"):
        reach.probability(10**30)
    with pytest.raises(ValueError, match="fives"):
        reach.probability(10, {"fives": 7})  # not a multiple of 5


# ------------------------------------------------------------------- a small ruleset
@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "small_bonus.toml"
    path.write_text(SMALL_TOML)
    return str(path)


@pytest.fixture(scope="module")
def small(small_file):
    """Six boxes with an upper bonus: every property below on a table of a few hundred states."""
    return solve_reach(small_file, progress=False)


def test_rest_distribution_from_a_scorecard_is_the_expected_score_policys(small):
    solution = solve(small.rules, progress=False)
    for card in ({"fives": 15}, {"fives": 10, "yacht": 50}, {"sixes": 0, "choice": 20, "full_house": 25}):
        dist = small.rest_distribution(card)
        assert abs(dist.pmf.sum() - 1.0) < 1e-12
        assert abs(dist.mean - solution.state_value(card)) < 1e-4  # float32 turn tables (docs/solver.md)
        assert dist.lowest >= sum(card.values())  # the points on the card are part of the final score
    with pytest.raises(SolverError, match="without the expected-score policy"):
        solve_reach(small.rules, cache=False, progress=False, distribution=False, workers=1).rest_distribution()


def test_table_is_monotone_and_one_at_or_below_the_least_score(small):
    prob, offset = small.prob, small.offset
    steps = np.diff(prob)
    inside = np.ones(len(steps), dtype=bool)
    inside[offset[1:-1] - 1] = False  # from one row to the next
    assert steps[inside].max() <= 1e-15
    assert np.all(prob[offset[:-1]] == 1.0) and np.all(prob[offset[1:] - 1] == 0.0)
    assert small.probability(0) == 1.0 and small.probability(-50) == 1.0
    assert small.probability(5) == 1.0 and small.probability(6) < 1.0  # the choice box scores at least 5
    assert small.probability(small.max_score + 1) == 0.0
    assert small.probability(small.max_score) > 0.0


def test_reach_dominates_the_expected_score_policy(small):
    dist = small.distribution
    assert dist is not None
    solution = solve(small.rules, progress=False)
    assert abs(dist.pmf.sum() - 1.0) < 1e-12
    assert abs(dist.mean - solution.expected_score) < 1e-4
    assert abs(dist.std - solution.score_std) < 1e-3
    targets = np.arange(dist.lowest, small.max_score + 2)
    best = np.array([small.probability(int(t)) for t in targets])
    policy = np.array([dist.at_least(int(t)) for t in targets])
    assert np.all(best >= policy - 1e-12)
    assert best[targets == 160][0] > policy[targets == 160][0] + 1e-3  # playing to win pays off high up
    assert dist.quantile(0.5) == dist.median and dist.quantile(0.01) <= dist.median <= dist.quantile(0.99)


@pytest.mark.parametrize("target", [100, 160])
def test_action_probabilities_average_back_to_the_table(small, target):
    """The turn's first roll, best action per roll, averaged: the table's entry (computed per roll class)."""
    total = 0.0
    for r in range(N_ROLLS):
        q = small.action_probabilities({"dice": ROLL_DICE[r].tolist(), "rolls_left": 2}, target)
        total += FIRST_ROLL_PROBABILITY[r] * q.max()
    assert abs(total - small.probability(target)) < 1e-12


def test_best_action_is_legal_and_advise_is_sorted(small):
    situation = {"scorecard": {"fives": 10, "yacht": 0}, "dice": [6, 6, 6, 2, 1], "rolls_left": 1}
    env = DicePokerEnv(small.rules)
    _, info = env.reset(options=situation)
    action = small.best_action(situation, 120)
    assert info["action_mask"][action] == 1
    items = small.advise(situation, 120)
    probabilities = [item["probability"] for item in items]
    assert probabilities == sorted(probabilities, reverse=True)
    assert items[0]["action"] == action or items[0]["probability"] == probabilities[0]
    q = small.action_probabilities(situation, 120)
    assert np.all(np.isfinite(q) == (info["action_mask"] == 1))


def test_distribution_helpers():
    dist = ScoreDistribution(10, np.array([0.25, 0.5, 0.25]))
    assert dist.mean == 11.0 and dist.median == 11 and dist.quantile(0.25) == 10 and dist.quantile(1.0) == 12
    assert abs(dist.std - np.sqrt(0.5)) < 1e-12 and dist.at_least(11) == 0.75
    assert dist.at_least(np.int64(12)) == 0.25 and dist.at_least(10**6) == 0.0 and dist.at_least(-(10**6)) == 1.0
    with pytest.raises(SolverError, match="integer score, got 10.5"):
        dist.at_least(10.5)  # once read as 10: P(score >= 10) = 1 where P(score >= 10.5) is 0.75
    with pytest.raises(SolverError, match="out of range"):
        dist.at_least(10**30)
    assert [row["score"] for row in dist.table()] == [10, 11, 12]
    assert dist.quantile(0.0) == 10
    with pytest.raises(ValueError, match="quantile"):
        dist.quantile(1.5)
    # the extremes are the scores of positive probability, however small (a 1e-12 tolerance once cut them)
    tail = ScoreDistribution(30, np.array([1e-15, 0.5, 0.0, 0.5 - 2e-15, 1e-15]))
    assert tail.quantile(0.0) == 30 and tail.quantile(1.0) == 34


def test_a_distribution_table_gives_each_score_its_probability_of_at_least_that_score():
    """``table()``'s ``at_least`` is ``P(score >= row's score)`` (the tail from the row on), as :meth:`at_least`."""
    dist = ScoreDistribution(10, np.array([0.25, 0.5, 0.0, 0.25]))
    rows = dist.table()
    assert [row["score"] for row in rows] == [10, 11, 13]
    assert np.allclose([row["at_least"] for row in rows], [1.0, 0.75, 0.25])
    assert np.allclose([row["at_least"] for row in rows], [dist.at_least(row["score"]) for row in rows])


# ------------------------------------------------------------------- cache
def test_cache_is_reused_and_a_changed_file_is_rebuilt():
    rules = load_rules(dict(TINY, name="tiny_cache"))
    first = solve_reach(rules, progress=False, workers=1)
    assert not first.from_cache
    again = solve_reach(rules, progress=False, workers=1)
    assert again.from_cache and np.array_equal(again.prob, first.prob)
    path = disk.cache_path(rules.name, rules.fingerprint, kind="reach")
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # one bit of one probability
    path.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="checksum"):
        rebuilt = solve_reach(rules, progress=False, workers=1)
    assert not rebuilt.from_cache and np.array_equal(rebuilt.prob, first.prob)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert solve_reach(rules, progress=False, workers=1).from_cache


def test_a_table_without_the_distribution_is_solved_again_when_it_is_asked_for():
    rules = load_rules(dict(TINY, name="tiny_nodist"))
    plain = solve_reach(rules, distribution=False, progress=False, workers=1)
    assert plain.distribution is None
    assert solve_reach(rules, distribution=False, progress=False, workers=1).from_cache
    full = solve_reach(rules, progress=False, workers=1)
    assert full.distribution is not None and not full.from_cache


# ------------------------------------------------------------------- CLI
def _cli(*argv: str) -> str:
    from dice_poker_env.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def test_cli_solve_target_and_distribution(small, small_file):
    data = json.loads(_cli("solve", small_file, "--target", "120", "--distribution", "--json", "--no-progress"))
    assert abs(data["reach_probability"] - small.probability(120)) < 1e-15
    dist = data["distribution"]
    assert abs(sum(row["probability"] for row in dist["table"]) - 1.0) < 1e-12
    assert dist["median"] == small.distribution.median and abs(dist["mean"] - small.distribution.mean) < 1e-12
    text = _cli("solve", small_file, "--target", "120", "--distribution", "--no-progress")
    assert "P(score >= 120)" in text and "median" in text and "quantiles" in text
    # the same table, cached with its distribution: --target alone prints no distribution (what was asked for)
    assert "distribution" not in json.loads(_cli("solve", small_file, "--target", "120", "--json", "--no-progress"))
    assert "quantiles" not in _cli("solve", small_file, "--target", "120", "--no-progress")


def test_cli_advise_target(small, small_file):
    items = json.loads(_cli("advise", small_file, "--dice", "6", "6", "6", "2", "1", "--target", "150", "--json"))
    assert items == small.advise({"dice": [6, 6, 6, 2, 1], "rolls_left": 2}, 150)
    text = _cli("advise", small_file, "--dice", "6", "6", "6", "2", "1", "--target", "150")
    assert "probability of a final score >= 150" in text and "keep 6 6 6" in text.splitlines()[1]


def test_cli_advise_target_ranks_a_decided_position_by_expected_score(small, small_file):
    """A target sure (or out of reach) whatever is played: every action ties, and the list is the expected-score
    ranking, as the winning agent plays such a game (it led with "keep nothing", rerolling what it could score)."""
    from agents.players.winning import DECIDED as AGENT_DECIDED
    from dice_poker_env.cli.advise import DECIDED
    from dice_poker_env.solver import solve

    assert DECIDED == AGENT_DECIDED
    # inside the final scores still possible (5..145), yet sure with these dice: the reach table says so
    card = {"big_straight": 0, "fives": 0, "full_house": 0}
    situation = {"scorecard": card, "dice": [5, 4, 4, 3, 4], "rolls_left": 1}
    assert final_score_range(small.rules, situation) == (5, 145)
    expected = [item["action"] for item in solve(small_file, progress=False).advise(situation)]
    argv = [
        "advise",
        small_file,
        "--dice",
        "5",
        "4",
        "4",
        "3",
        "4",
        "--rolls-left",
        "1",
        "--scorecard",
        json.dumps(card),
    ]
    assert min(item["probability"] for item in small.advise(situation, 6)) > 1 - DECIDED
    items = json.loads(_cli(*argv, "--target", "6", "--json"))
    assert [item["action"] for item in items] == expected and expected[0] != 0
    assert "(sure whatever you play: ranked by expected final score)" in _cli(*argv, "--target", "6").splitlines()[0]
    text = _cli("advise", small_file, "--dice", "6", "6", "6", "2", "1", "--target", "150")
    assert "ranked by" not in text  # an open target keeps its ranking by probability


def test_cli_a_target_beyond_every_final_score_solves_no_reach_table(small, small_file, monkeypatch):
    """A target below the least final score still possible or above the most is decided: advise and solve say so
    from the range (:func:`final_score_range`, seconds) without the reach table (half an hour on yahtzee), with the answer
    and the order the table gives."""
    from dice_poker_env.solver import reach, solve

    situation = {"dice": [6, 6, 6, 2, 1], "rolls_left": 2}
    expected = [item["action"] for item in solve(small_file, progress=False).advise(situation)]
    tables = {target: small.advise(situation, target) for target in (0, 5, 226, 10**6)}

    def no_solve(*args, **kwargs):
        raise AssertionError("solved the reach table of a decided target")

    monkeypatch.setattr(reach, "solve_reach", no_solve)
    for target, chance, words in ((0, 1.0, "below 5"), (5, 1.0, "below 5"), (226, 0.0, "above 225")):
        argv = ["advise", small_file, "--dice", "6", "6", "6", "2", "1", "--target", str(target)]
        items = json.loads(_cli(*argv, "--json"))
        assert [item["action"] for item in items] == expected
        assert {item["probability"] for item in tables[target]} == {chance}
        assert sorted(items, key=lambda item: item["action"]) == sorted(tables[target], key=lambda i: i["action"])
        first = _cli(*argv).splitlines()[0]
        assert f"whatever you play: no final score is {words}; ranked by expected final score" in first, first
        data = json.loads(_cli("solve", small_file, "--target", str(target), "--json", "--no-progress"))
        assert data["reach_probability"] == small.probability(target) == chance
    assert f"P(score >= {10**6})  0  " in _cli("solve", small_file, "--target", str(10**6), "--no-progress")


def test_final_score_range_is_the_reach_tables(small):
    """The least and the most final score from a position bound the reach table exactly: probability 1 at the
    least, 0 above the most, more than 0 at the most (between turns; inside a turn, the turn's start's range)."""
    rules = small.rules
    assert final_score_range(rules) == (int(small.lo[0]), small.max_score)
    for card in ({}, {"fives": 15}, {"fives": 10, "yacht": 50}, {"sixes": 0, "choice": 20, "full_house": 25}):
        least, most = final_score_range(rules, {"scorecard": card})
        assert small.probability(least, card) == 1.0 and small.probability(most, card) > 0.0
        assert small.probability(most + 1, card) == 0.0
        situation = {"scorecard": card, "dice": [6, 6, 5, 2, 1], "rolls_left": 1}
        assert final_score_range(rules, situation) == (least, most)
        legal = small.action_probabilities(situation, least) > -np.inf
        assert np.all(small.action_probabilities(situation, least)[legal] == 1.0)
        assert np.all(small.action_probabilities(situation, most + 1)[legal] == 0.0)
    with pytest.raises(ValueError, match="can never hold"):
        final_score_range(rules, {"scorecard": {"fives": 7}})


def test_cli_advise_target_checks_the_position_before_any_solve(monkeypatch, capsys):
    """A wrong scorecard or bonus is refused before the reach table is solved (yahtzee's takes half an hour)."""
    from dice_poker_env.cli import main
    from dice_poker_env.solver import reach

    def no_solve(*args, **kwargs):
        raise AssertionError("solved before checking the position")

    monkeypatch.setattr(reach, "solve_reach", no_solve)
    for extra, message in (
        (["--scorecard", '{"yahtzee": 49}'], "'yahtzee' can never hold 49 points"),
        (["--bonus", "7"], "cannot have paid 7 bonus points"),
    ):
        argv = ["advise", "yahtzee", "--dice", "6", "6", "6", "2", "1", "--target", "200", *extra]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_target_out_of_range_is_refused_before_any_solve(monkeypatch, capsys):
    """``solve --target 10**23`` printed the expected-score solution, then the error; ``advise --target 10**23``
    solved the reach table (half an hour on yahtzee) before refusing the target."""
    import dice_poker_env.solver as solver_package
    from dice_poker_env.cli import main
    from dice_poker_env.solver import reach

    def no_solve(*args, **kwargs):
        raise AssertionError("solved before checking the target")

    monkeypatch.setattr(reach, "solve_reach", no_solve)
    monkeypatch.setattr(solver_package, "solve", no_solve)
    huge = str(10**23)
    for argv in (
        ["solve", "yacht", "--target", huge],
        ["advise", "yacht", "--dice", "6", "6", "6", "2", "1", "--target", huge],
    ):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and f"the target {huge} is out of range" in captured.err, captured


def test_worker_processes_give_the_same_table(small, monkeypatch):
    """Layers split between forked workers (small blocks: the pieces' chunks end in other places)."""
    from dice_poker_env.solver import reach_dp

    monkeypatch.setattr(reach_dp, "BLOCK_STATES", 16)
    solution = solve(small.rules, progress=False)
    tables = compile_rules(small.rules)
    one = reach_dp.solve_reach_dp(tables, solution=solution, workers=1)
    two = reach_dp.solve_reach_dp(tables, solution=solution, workers=2)
    # the chunks differ (pieces, blocks): the same up to the rounding of the first-roll sum
    assert np.abs(one.prob - two.prob).max() < 1e-14 and np.abs(one.policy - two.policy).max() < 1e-14
    assert np.abs(one.prob - small.prob).max() < 1e-14 and np.abs(one.policy - small.policy_prob).max() < 1e-14


def test_a_table_too_large_for_the_memory_is_refused_before_it_is_allocated(monkeypatch):
    from dice_poker_env.solver import reach

    monkeypatch.setattr(reach, "_available", lambda: 4096)
    rules = load_rules(dict(TINY, name="tiny_large"))
    with pytest.raises(MemoryError, match="cells"):
        solve_reach(rules, cache=False, progress=False, distribution=False, workers=1)


def test_a_solve_says_its_size_and_cost_before_it_starts(capsys):
    """As the expected-score and two-player solves do: a reach table can take hours (dice_poker: 975 million
    cells, 15 GiB with the policy's table), so the size and an estimate come before the first layer."""
    from dice_poker_env.solver import reach_dp

    rules = load_rules(dict(TINY, name="tiny_said"))
    solve_reach(rules, cache=False, progress=None, distribution=False, workers=1)
    said = [line for line in capsys.readouterr().err.splitlines() if "cells" in line]
    cells = reach_dp.row_layout(*_layout(rules))[1][-1]
    assert len(said) == 1 and f"{cells:,} cells: a " in said[0] and "of CPU" in said[0], said
    solve_reach(rules, cache=False, progress=False, distribution=False, workers=1)
    assert capsys.readouterr().err == ""  # progress=False: silent
    assert reach_dp.estimate_line(359_424, 209_222_464, policy=True) == (
        "359,424 states, 209,222,464 cells: a table of 3.1 GiB (with the expected-score policy's), about 45 min of CPU"
    )


def _layout(rules):
    from dice_poker_env.solver.reachability import reachable_layers
    from dice_poker_env.solver.state_space import StateSpace

    space = StateSpace(compile_rules(rules))
    layers = reachable_layers(space)
    return space, np.concatenate(layers), np.concatenate([[0], np.cumsum([len(layer) for layer in layers])])


def test_cached_arrays_that_do_not_fit_the_rules_are_refused(small):
    """The second line of defence behind the keyed checksum: arrays checked against the rules."""
    from dice_poker_env.solver.reach import REACH_VERSION, _from_cache

    meta = {"fingerprint": small.rules.fingerprint, "reach_version": REACH_VERSION}
    assert _from_cache(small.rules, small.to_arrays(), meta, seconds=0.0).n_cells == small.n_cells
    broken = {
        "rows not starting at 1": ("prob", lambda a: a.__setitem__(0, 0.5)),
        "outside \\[0, 1\\]": ("prob", lambda a: a.__setitem__(1, 1.5)),
        "rows do not partition": ("offset", lambda a: a.__setitem__(-1, a[-1] + 1)),
        "sorted states": ("keys", lambda a: a.__setitem__(slice(1, 3), a[2:0:-1])),
    }
    for message, (name, change) in broken.items():
        arrays = {k: np.array(v) for k, v in small.to_arrays().items()}
        change(arrays[name])
        with pytest.raises(ValueError, match=message):
            _from_cache(small.rules, arrays, meta, seconds=0.0)
    with pytest.raises(ValueError, match="other rules"):
        _from_cache(small.rules, small.to_arrays(), dict(meta, reach_version=0), seconds=0.0)


def test_cached_rows_that_do_not_end_at_0_are_refused(small):
    """A row's last cell (a target above every rest) is 0: a cached table where it is not is refused."""
    from dice_poker_env.solver.reach import REACH_VERSION, _from_cache

    meta = {"fingerprint": small.rules.fingerprint, "reach_version": REACH_VERSION}
    arrays = {k: np.array(v) for k, v in small.to_arrays().items()}
    arrays["prob"][small.offset[1] - 1] = 0.5  # the end of the first row
    with pytest.raises(ValueError, match="rows not ending at 0"):
        _from_cache(small.rules, arrays, meta, seconds=0.0)


def test_an_env_observation_is_a_position(small):
    """The table reads the env's own dict observation, as the solution's action_values does."""
    from dice_poker_env.envs.single import DicePokerEnv

    env = DicePokerEnv(small.rules)
    obs, _ = env.reset(seed=3, options={"scorecard": {"fives": 15}, "dice": [5, 5, 2, 3, 6], "rolls_left": 1})
    by_obs = small.action_probabilities(obs, 120)
    by_position = small.action_probabilities(
        {"scorecard": {"fives": 15}, "dice": [5, 5, 2, 3, 6], "rolls_left": 1}, 120
    )
    assert np.array_equal(by_obs, by_position)
    with pytest.raises(SolverError, match="'filled' and 'scores' must have"):
        small.action_probabilities({**obs, "filled": obs["filled"][:2]}, 120)


def test_a_score_distribution_shows_what_it_is():
    from dice_poker_env.solver.reach import ScoreDistribution

    dist = ScoreDistribution(10, np.array([0.0, 0.25, 0.5, 0.25, 0.0]))
    assert repr(dist) == "ScoreDistribution(mean=12.000000, std=0.7071, scores=11..13)"


def test_a_misspelt_position_key_is_named(small):
    from dice_poker_env.solver.reach import final_score_range

    situation = {"scorecard": {"fives": 15}, "dice": [5, 5, 2, 3, 6], "rolls_lef": 1}
    for query in (
        lambda: small.action_probabilities(situation, 120),
        lambda: small.advise(situation, 120),
        lambda: final_score_range(small.rules, situation),
    ):
        with pytest.raises(SolverError, match=r"unknown key\(s\): \['rolls_lef'\]"):
            query()
    with pytest.raises(SolverError, match="got list"):
        small.action_probabilities([5, 5, 2, 3, 6], 120)


def test_an_observation_s_bonus_is_part_of_its_position(small):
    """The bonus an observation shows (here the upper bonus, 25 fives past 20) is the position's bonus, as given
    by hand."""
    env = DicePokerEnv(small.rules)
    situation = {"scorecard": {"fives": 25}, "dice": [6, 6, 2, 3, 6], "rolls_left": 1}
    obs, _ = env.reset(seed=3, options=situation)
    assert int(obs["bonus"][0]) == 35
    by_obs = small.action_probabilities(obs, 150)
    assert np.array_equal(by_obs, small.action_probabilities({**situation, "bonus": 35}, 150))
