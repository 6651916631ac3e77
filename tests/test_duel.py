"""The exact two-player solution (``dice_poker_env.solver.duel``).

Checked against an independent exhaustive recursion over full two-player game states (the engine's
rules roll by roll, dense transition matrices, no solver code) on a 1-box and a 2-box ruleset, for the
optimal value and for a policy's evaluation; on small rulesets for the properties any correct table has;
and on the shipped six-box ``mini_yacht`` against Monte Carlo play of the solitaire agent against the
duel-optimal agent through the engine.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

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
    TRANSITION,
)
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.solver import SolverError, solve
from dice_poker_env.solver.duel import Duel, play_duels, solitaire_policy, solve_duel
from dice_poker_env.solver.state_space import StateSpace

ROOT = Path(__file__).resolve().parents[1]
MINI_YACHT = ROOT / "examples" / "rules" / "mini_yacht.toml"

ONE = {"name": "duel_one", "boxes": [{"name": "choice", "kind": "chance"}]}
TWO = {  # an upper bonus through the fives, a five-of-a-kind box with joker and bonus
    "name": "duel_two",
    "boxes": [
        {"name": "fives", "kind": "face_sum", "face": 5},
        {"name": "yahtzee", "kind": "n_of_a_kind", "n": 5, "points": 50},
    ],
    "upper_bonus": {"threshold": 15, "points": 35},
    "five_of_a_kind": {"box": "yahtzee", "bonus": 100, "joker": "forced"},
}
THREE = {  # three of yacht's boxes: fast, for the properties
    "name": "duel_three",
    "boxes": [
        {"name": "sixes", "kind": "face_sum", "face": 6},
        {"name": "full_house", "kind": "full_house", "points": "sum"},
        {"name": "yacht", "kind": "n_of_a_kind", "n": 5, "points": 50},
    ],
}
#: point differences ``-D..D`` of the brute force, beyond every final score of these rules (so the ends
#: are decided: clipping there is exact)
D = 260


# ------------------------------------------------------------------ brute force
def _brute(rules, policies=None) -> np.ndarray:
    """Seat 0's value from the start for every head start ``d = -D..D``.

    Optimal play of both when ``policies`` is None; else ``policies[seat](me, other, ds) -> (len(ds), 3,
    252)`` actions of every (rolls left, roll) for full states ``(filled, upper, full)``. Full states, no
    canonical forms; the engine scores every (box, roll).
    """
    tables = compile_rules(rules)
    n = tables.n_boxes
    ds = np.arange(-D, D + 1)
    size = len(ds)
    done = np.where(ds > 0, 1.0, np.where(ds == 0, 0.5, 0.0))
    rolls = np.arange(N_ROLLS)
    memo: dict = {}

    def value(me: tuple, other: tuple) -> np.ndarray:
        """The mover's value per ``d`` (its points minus the other's)."""
        key = (me, other)
        if key in memo:
            return memo[key]
        filled, upper, full = me
        if bin(filled).count("1") >= tables.turns:  # the mover is done: so is the other (seat 0 moves first)
            memo[key] = done
            return done
        scored = {}
        for first in (False, True):
            table = np.full((n, N_ROLLS, size), -1.0)
            legal_bits = np.broadcast_to(game.legal_boxes(tables, filled, full, rolls), (N_ROLLS,))
            for b in range(n):
                legal_rolls = np.flatnonzero((legal_bits >> b) & 1)
                points, bonus, new_upper = (
                    np.broadcast_to(x, legal_rolls.shape)
                    for x in game.score_points(tables, filled, upper, full, legal_rolls, first, b)
                )
                now_full = full | ((b == tables.five_kind_box) & (points > 0))
                moves = np.stack([points + bonus, new_upper, now_full]).T
                for move in np.unique(moves, axis=0):
                    after = value(other, (filled | 1 << b, int(move[1]), bool(move[2])))
                    # the other's difference is -(d + p): index D - d - p, clipped (decided beyond D)
                    cells = np.clip(D - ds - int(move[0]), 0, size - 1)
                    table[b, legal_rolls[(moves == move).all(axis=1)]] = 1.0 - after[cells]
            scored[first] = table
        if policies is None:
            W = scored[False].max(axis=0)
            for first in (False, True):
                keeps = (TRANSITION @ W)[KEEP_OF_ACTION[:, :KEEP_ALL]].max(axis=1)
                W = np.maximum(scored[first].max(axis=0), keeps)
        else:
            seat = 0 if bin(filled).count("1") == bin(other[0]).count("1") else 1  # seat 1 has one fewer
            act = np.asarray(policies[seat](me, other, ds)).transpose(1, 2, 0)  # (3, 252, size)
            col = np.arange(size)[None, :]
            W = scored[False][act[0] - N_KEEP_ACTIONS, rolls[:, None], col]
            for rolls_left, first in ((1, False), (2, True)):
                K = TRANSITION @ W  # (462, size)
                a = act[rolls_left]
                keep = KEEP_OF_ACTION[rolls[:, None], np.minimum(a, KEEP_ALL - 1)]
                box = scored[first][np.maximum(a - N_KEEP_ACTIONS, 0), rolls[:, None], col]
                W = np.where(a < N_KEEP_ACTIONS, K[keep, col], box)
        memo[key] = FIRST_ROLL_PROBABILITY @ W
        return memo[key]

    start = (0, 0, False)
    return value(start, start)


def _key_policy(rules, turn_actions):
    """A brute-force policy (full states) from a key policy (what the solver's policies take)."""
    space = StateSpace(compile_rules(rules))

    def key(state: tuple) -> int:
        filled, upper, full = state
        return int(space.key(filled, space.canonical_upper(filled, upper), full and space.n_full == 2))

    def policy(me: tuple, other: tuple, ds: np.ndarray) -> np.ndarray:
        m = len(ds)
        return turn_actions(np.full(m, key(me)), np.full(m, key(other)), ds)

    return policy


@pytest.mark.parametrize("spec", [ONE, TWO], ids=["one-box", "two-box-bonus-joker"])
def test_matches_exhaustive_recursion(spec):
    rules = load_rules(spec)
    duel = solve_duel(rules, progress=False)
    expected = _brute(rules)
    diffs = np.arange(-D, D + 1)
    got = np.array([duel.value(int(d)) for d in diffs])
    assert np.abs(got - expected).max() < 1e-9
    assert 0.0 < duel.value() < 1.0 and 0.0 < duel.value(20) < 1.0  # the comparison covers undecided values
    # a policy's evaluation: seat 0 (then seat 1) plays the solitaire policy, the other the duel's policy
    solitaire = solitaire_policy(solve(rules, cache=False, progress=False, workers=1))
    for seat in (0, 1):
        policies = [_key_policy(rules, duel.turn_actions), _key_policy(rules, duel.turn_actions)]
        policies[seat] = _key_policy(rules, solitaire)
        v0 = _brute(rules, policies)[D]
        assert abs(duel.evaluate(solitaire, seat) - (v0 if seat == 0 else 1.0 - v0)) < 1e-9


# ------------------------------------------------------------------ properties
@pytest.fixture(scope="module")
def three():
    return solve_duel(load_rules(THREE), progress=False)


def test_values_are_probabilities_monotone_in_the_difference(three):
    table, offset = three.table[:-1], three.offset
    assert table.min() >= 0.0 and table.max() <= 1.0
    assert np.all(table[offset[:-1]] == 0.0) and np.all(table[offset[1:] - 1] == 1.0)
    steps = np.diff(table)
    inside = np.ones(len(steps), dtype=bool)
    inside[offset[1:-1] - 1] = False  # from one row to the next
    assert steps[inside].min() >= -1e-12  # more points never hurt
    start = three.keys[0]
    assert three.values(start, start, 10**6)[0] == 1.0 and three.values(start, start, -(10**6))[0] == 0.0
    assert three.value(10**6) == 1.0 and three.value(-(10**6)) == 0.0
    # a finished game: 1, 1/2, 0
    end = three.keys[-1]
    assert three.values(end, end, [3, 0, -3]).tolist() == [1.0, 0.5, 0.0]


def test_the_last_turn_agrees_with_the_reach_solver(three):
    """Seat 1's last turn, seat 0 done: to win it needs a rest above ``-d``, so its value lies between the
    reach solver's maximum probabilities of a rest of at least ``1 - d`` and of at least ``-d``."""
    from dice_poker_env.solver.reach import solve_reach

    reach = solve_reach(three.rules, distribution=False, cache=False, progress=False, workers=1)
    assert np.array_equal(reach.keys, three.keys)
    turns = three.turns
    movers = np.arange(three.layer_start[turns - 1], three.layer_start[turns])
    ends = np.arange(three.layer_start[turns], three.layer_start[turns + 1])
    d = np.arange(-120, 121)
    m, o, dd = (a.reshape(-1) for a in np.meshgrid(movers, ends, d, indexing="ij"))
    w = three.values(three.keys[m], three.keys[o], dd)
    above, at_least = reach.state_probabilities(m, 1 - dd), reach.state_probabilities(m, -dd)
    assert np.all(above <= w + 1e-12) and np.all(w <= at_least + 1e-12)
    assert np.any((above < w - 1e-3) & (w < at_least - 1e-3))  # strictly between somewhere: ties count half


def test_optimal_policy_evaluates_to_the_value_and_solitaire_is_below(three):
    value = three.value()
    assert abs(three.evaluate(three.turn_actions, 0) - value) < 1e-9
    assert abs(three.evaluate(three.turn_actions, 1) - (1.0 - value)) < 1e-9
    solitaire = three.solitaire_policy(solve(three.rules, cache=False, progress=False))
    assert three.evaluate(solitaire, 0) <= value + 1e-12
    assert three.evaluate(solitaire, 1) <= 1.0 - value + 1e-12


def test_bad_queries_and_policies_are_refused(three):
    start = three.keys[0]
    with pytest.raises(SolverError, match="outside"):
        three.values(-1, start, 0)
    with pytest.raises(SolverError, match="duel position"):
        three.values(three.keys[-1], start, 0)
    with pytest.raises(SolverError, match="no turn left"):
        three.turn_actions(three.keys[-1], three.keys[-1], 0)
    for head_start in (1.5, True, "a", None):  # not truncated to value(1), nor a deep error
        with pytest.raises(SolverError, match="a points difference must be an integer"):
            three.value(head_start)
    with pytest.raises(SolverError, match="a state key must be an integer"):
        three.values(float(start), start, 0)
    for head_start in (10**30, [0, -(10**30)]):  # integers: named out of range, not "must be an integer"
        with pytest.raises(SolverError, match="a points difference is out of range"):
            three.values(start, start, head_start)
    assert three.value(10**6) == 1.0 and three.value(-(10**6)) == 0.0  # beyond every score, inside int64
    assert three.value(np.int64(1)) == three.value(1)
    with pytest.raises(ValueError, match="seat"):
        three.evaluate(three.turn_actions, 2)

    def wrong_shape(my, opp, d):
        return np.zeros((len(d), 3), dtype=np.int64)

    def keep_all(my, opp, d):
        out = three.turn_actions(my, opp, d)
        out[:, 1] = KEEP_ALL
        return out

    def closed_box(my, opp, d):  # always box 0, filled after the first turn
        return np.full((len(d), 3, N_ROLLS), N_KEEP_ACTIONS, dtype=np.int64)

    for policy, message in ((wrong_shape, "integer actions"), (keep_all, "never legal"), (closed_box, "illegal")):
        with pytest.raises(ValueError, match=message):
            three.evaluate(policy, 0)


def test_a_table_too_large_for_the_memory_is_refused():
    with pytest.raises(MemoryError, match="pairs of states need at least"):  # before the layout's arrays
        Duel(load_rules(THREE), memory=1024)
    small = Duel(load_rules(THREE), solve=False)
    room = 24 * small.n_pairs + 8 * small.n_pairs * 2  # past the first check, short of the whole table
    if 8 * small.n_cells + 16 * small.max_stage_cells > room:
        with pytest.raises(MemoryError, match="cells"):
            Duel(load_rules(THREE), memory=room)


def test_a_solve_says_its_size_and_cost_before_it_starts():
    lines = []
    duel = Duel(load_rules(THREE), announce=lines.append)
    assert len(lines) == 1 and f"{duel.n_cells:,} cells" in lines[0] and "of CPU on one core" in lines[0]
    assert Duel(load_rules(THREE), solve=False, announce=lines.append) and len(lines) == 1  # no solve: no cost


def test_yahtzee_s_two_player_table_is_refused_before_anything_is_allocated():
    """1.6 TiB: the check comes before the layout (which alone would take hundreds of GiB)."""
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(MemoryError, match="pairs of states need at least"):
        Duel(load_rules("yahtzee"), memory=64 << 30)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 30, peak


# ------------------------------------------------------------------ the shipped small ruleset
@pytest.fixture(scope="module")
def mini():
    return solve_duel(MINI_YACHT, progress=False)


def test_monte_carlo_play_agrees_with_the_evaluation(mini):
    """The solitaire agent (seat 0) against the duel-optimal agent, played through the engine."""
    solitaire = mini.solitaire_policy()
    exact = mini.evaluate(solitaire, 0)
    assert exact < mini.value() - 1e-3  # solitaire play gives something away
    games = 20_000
    diff = play_duels(MINI_YACHT, solitaire, mini.turn_actions, games, seed=7)
    score = np.where(diff > 0, 1.0, np.where(diff == 0, 0.5, 0.0))
    half = 4.0 * score.std() / np.sqrt(games)  # 4 standard errors: a fixed seed, a wide interval
    assert abs(score.mean() - exact) < half


def test_play_duels_refuses_illegal_plans_naming_the_seat_and_game(mini):
    """A plan that scores a box already filled, an action out of range or a plan of the wrong shape: a one-line
    ValueError (the first played on silently, the second raised an IndexError in the engine)."""
    legal = mini.solitaire_policy()

    def always(action):
        return lambda my, opp, d: np.full((len(my), 3, 252), action, dtype=np.int64)

    with pytest.raises(ValueError, match=r"seat 1's policy chose the illegal action 32 in game \d+, turn 2"):
        play_duels(MINI_YACHT, legal, always(32), 8, seed=1)  # box 0 again on the second turn
    with pytest.raises(ValueError, match="seat 0's policy chose the illegal action 99"):
        play_duels(MINI_YACHT, always(99), legal, 8, seed=1)
    with pytest.raises(ValueError, match=r"expected \(8, 3, 252\) integer actions"):
        play_duels(MINI_YACHT, lambda my, opp, d: np.zeros((len(my), 252)), legal, 8, seed=1)


def test_cli_two_player(three, tmp_path):
    from dice_poker_env.cli import main

    path = tmp_path / "duel_three.json"
    path.write_text(json.dumps(THREE))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["solve", str(path), "--two-player", "--json", "--no-progress", "--no-cache"]) == 0
    data = json.loads(out.getvalue())["two_player"]
    assert abs(data["value"] - three.value()) < 1e-12
    assert data["pairs"] == three.n_pairs and data["cells"] == three.n_cells
    assert data["solitaire"]["seat_0"] <= data["value"] + 1e-12
    assert data["solitaire"]["seat_1"] <= 1.0 - data["value"] + 1e-12
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["solve", str(path), "--two-player", "--no-progress", "--no-cache"]) == 0
    text = out.getvalue()
    assert f"seat 0 wins {three.value():.9f}" in text and "solitaire play" in text


# ------------------------------------------------------------------ cache
def test_cache_is_reused_and_a_changed_file_is_rebuilt(three):
    from dice_poker_env.solver import CacheWarning
    from dice_poker_env.solver import cache as disk

    rules = load_rules(dict(THREE, name="duel_cache"))
    first = solve_duel(rules, progress=False)
    assert not first.from_cache and np.array_equal(first.table, three.table)
    again = solve_duel(rules, progress=False)
    assert again.from_cache and np.array_equal(again.table, first.table)
    assert again.value() == first.value() and np.array_equal(again.offset, first.offset)
    path = disk.cache_path(rules.name, rules.fingerprint, kind="duel")
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # one bit of one value
    path.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="checksum"):
        rebuilt = solve_duel(rules, progress=False)
    assert not rebuilt.from_cache and np.array_equal(rebuilt.table, first.table)
    assert solve_duel(rules, progress=False).from_cache


def test_cached_tables_that_do_not_fit_the_rules_are_refused(three):
    """The second line of defence behind the keyed checksum: the table checked against the rules' layout."""
    from dice_poker_env.solver.duel import DUEL_VERSION, _from_cache

    meta = {"fingerprint": three.rules.fingerprint, "duel_version": DUEL_VERSION}
    table = three.table[:-1]
    assert _from_cache(three.rules, {"table": table.copy()}, meta).value() == three.value()
    broken = {
        "cells where": table[:-1],
        "outside": np.where(np.arange(len(table)) == 5, 1.5, table),
        "from 0 to 1": np.where(np.arange(len(table)) == 0, 0.25, table),
        "arrays": table.astype(np.float32),
    }
    for message, bad in broken.items():
        with pytest.raises(ValueError, match=message):
            _from_cache(three.rules, {"table": bad}, meta)
    with pytest.raises(ValueError, match="other rules"):
        _from_cache(three.rules, {"table": table}, dict(meta, duel_version=0))
