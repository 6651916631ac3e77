"""The tournament (agents/course/tournament.py): duplicate dice, forfeits, schedule, ratings, the command.

The acceptance test plays six tiny sandboxed submissions (two of them failing, one that does
not load) with the optimal and greedy anchors on Yacht, one deal a match, and checks the
standings, the files and that every failure stayed inside its own seat.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from agents.course.duplicate import DuplicateDice, deal_faces, forfeit_action, play_game
from agents.course.ratings import ANCHOR_RATING, ELO_PER_LOGIT, Comparisons, fit, rate
from agents.course.tournament import (
    OUTPUT_FILES,
    Match,
    choose_format,
    default_rounds,
    entry_names,
    games_json,
    rotation,
    round_robin_groups,
    standings_csv,
    summary_text,
    swiss_tables,
    table_sizes,
    tournament,
    write_outputs,
)
from agents.players.greedy import GreedyAgent
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, roll_index
from dice_poker_env.multi import raw_env
from dice_poker_env.rules import load_rules

pytest.importorskip("pettingzoo")  # the tables are dice_poker_env.multi's PettingZoo env

YACHT = load_rules("yacht")
TURNS = 12


class FirstBox:
    """Writes the dice into the first legal box at once (no rerolls)."""

    name = "first_box"

    def reset(self) -> None:
        pass

    def act(self, observation, action_mask):
        return forfeit_action(action_mask)


class Broken:
    """Plays like :class:`FirstBox` until decision ``at`` of a game, then fails as told (``reset``: at the start)."""

    name = "broken"

    def __init__(self, at: int, how: str):
        self.at, self.how, self.n = at, how, 0

    def reset(self) -> None:
        self.n = 0
        if self.how == "reset":
            raise RuntimeError("no reset")

    def act(self, observation, action_mask):
        self.n += 1
        if self.n > self.at:
            if self.how == "raise":
                raise RuntimeError("boom")
            return {"illegal": 31, "range": 999, "none": None, "bool": True}[self.how]
        return forfeit_action(action_mask)


# ------------------------------------------------------------------ duplicate dice
def test_deal_faces_are_fixed_per_seed_deal_and_seat():
    faces = deal_faces(3, 7, 4, TURNS)
    assert faces.shape == (4, TURNS, 3, 5) and faces.min() >= 1 and faces.max() <= 6
    assert np.array_equal(deal_faces(3, 7, 2, TURNS), faces[:2])  # seat k's faces at any table size
    assert not np.array_equal(faces[0], faces[1])
    assert not np.array_equal(deal_faces(3, 8, 1, TURNS)[0], faces[0])
    assert not np.array_equal(deal_faces(4, 7, 1, TURNS)[0], faces[0])


def test_duplicate_dice_serve_the_announced_roll_only():
    faces = deal_faces(0, 0, 2, TURNS)
    source = DuplicateDice(faces)
    with pytest.raises(RuntimeError, match="did not announce"):
        source.roll(np.random.default_rng(), (5,))
    source.expect(1, 4, 2)
    assert source.roll(np.random.default_rng(), (3,)).tolist() == faces[1, 4, 2, :3].tolist()
    with pytest.raises(RuntimeError):  # one announcement, one roll
        source.roll(np.random.default_rng(), (3,))


def test_every_roll_comes_from_the_seat_turn_and_roll_table():
    faces = deal_faces(5, 1, 3, TURNS)
    record = play_game(YACHT, [GreedyAgent(YACHT), FirstBox(), GreedyAgent(YACHT)], faces)
    turn = [0, 0, 0]
    previous = None
    for seat, dice, rolls_left, action, points, forfeit in record.moves:
        assert forfeit == 0
        if rolls_left == 2:  # the turn's first roll: all five faces
            assert dice == "".join(map(str, sorted(faces[seat, turn[seat], 0])))
        else:  # a reroll: the kept dice plus the first faces of this roll
            kept = [int(d) for i, d in enumerate(previous[1]) if previous[3] >> i & 1]
            new = faces[seat, turn[seat], 2 - rolls_left, : 5 - len(kept)].tolist()  # roll 1 leaves 1 reroll
            assert dice == "".join(map(str, sorted(kept + new)))
        if action >= N_KEEP_ACTIONS:
            turn[seat] += 1
            assert points is not None
        previous = (seat, dice, rolls_left, action)
    assert turn == [TURNS] * 3
    assert record.scores == [sum(m[4] for m in record.moves if m[0] == s and m[4] is not None) for s in range(3)]


def test_the_same_agent_in_a_seat_gets_the_same_game_whoever_the_opponents_are():
    faces = deal_faces(2, 0, 3, TURNS)
    greedy = GreedyAgent(YACHT)
    a = play_game(YACHT, [greedy, FirstBox(), FirstBox()], faces)
    b = play_game(YACHT, [greedy, GreedyAgent(YACHT), Broken(3, "raise")], faces)
    assert a.scores[0] == b.scores[0]
    assert [m for m in a.moves if m[0] == 0] == [m for m in b.moves if m[0] == 0]
    assert a.scores[1] != b.scores[1] or a.moves != b.moves  # the opponents did play differently


@pytest.mark.parametrize("how", ["raise", "illegal", "range", "none", "bool"])
def test_a_failing_agent_forfeits_its_seat_and_the_others_play_on(how):
    faces = deal_faces(1, 0, 2, TURNS)
    clean = play_game(YACHT, [FirstBox(), GreedyAgent(YACHT)], faces)
    broken = play_game(YACHT, [Broken(4, how), GreedyAgent(YACHT)], faces)
    assert broken.scores[1] == clean.scores[1]  # the other seat's game is untouched
    assert [f.seat for f in broken.forfeits] == [0] and broken.forfeits[0].move > 0
    assert broken.forfeits[0].kind == ("exception" if how == "raise" else "illegal")
    assert broken.results == [0, clean.scores[1]]
    assert broken.ranks() == [2, 1]
    after = [m for m in broken.moves[broken.forfeits[0].move :] if m[0] == 0]
    assert after and all(m[5] == 1 and m[3] >= N_KEEP_ACTIONS for m in after)  # forfeited: boxes, no rerolls


def test_a_failing_reset_forfeits_the_whole_game():
    faces = deal_faces(1, 0, 2, TURNS)
    record = play_game(YACHT, [GreedyAgent(YACHT), Broken(0, "reset")], faces)
    assert [(f.seat, f.move, f.kind) for f in record.forfeits] == [(1, -1, "exception")]
    assert "no reset" in record.forfeits[0].message
    assert all(m[5] == 1 for m in record.moves if m[0] == 1) and record.results[1] == 0


def test_a_failure_whose_message_raises_still_forfeits_with_a_message():
    """An agent's exception whose ``__str__`` raises (or runs for pages) is a forfeit with one short line, not a
    crash of the whole tournament."""

    class Mute(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    class Raises(FirstBox):
        def __init__(self, error: Exception, where: str) -> None:
            self.error, self.where = error, where

        def reset(self) -> None:
            if self.where == "reset":
                raise self.error

        def act(self, observation, mask):
            raise self.error

    faces = deal_faces(1, 0, 2, TURNS)
    for error, shown in ((Mute(), "Mute: <its message raised>"), (ValueError("x" * 100_000), "ValueError: xxx")):
        for where in ("reset", "act"):
            record = play_game(YACHT, [GreedyAgent(YACHT), Raises(error, where)], faces)
            (forfeit,) = record.forfeits
            assert forfeit.seat == 1 and forfeit.message.startswith(f"{where}() raised {shown}")
            assert len(forfeit.message) < 300


def test_ranks_share_ties_and_put_forfeits_last():
    faces = deal_faces(0, 3, 3, TURNS)
    record = play_game(YACHT, [FirstBox(), FirstBox(), Broken(0, "illegal")], faces)
    ranks = record.ranks()
    assert ranks[2] == 3
    assert sorted(ranks[:2]) == ([1, 1] if record.scores[0] == record.scores[1] else [1, 2])


def test_ranks_of_tied_scores_are_the_better_place():
    """Equal results share the better place (1 + the seats ahead), and the next place is skipped."""
    from agents.course.duplicate import Forfeit, GameRecord

    record = GameRecord(seats=[0, 1, 2, 3], scores=[150, 200, 150, 90])
    assert record.ranks() == [2, 1, 2, 4]
    record.forfeits.append(Forfeit(1, 5, "illegal", "x"))  # a forfeit falls behind every other seat
    assert record.ranks() == [1, 4, 1, 3]


def test_a_forfeited_seat_is_last_even_when_every_seat_forfeited():
    """A game every seat forfeited (a submission that did not load beside one that timed out) has no first place:
    games.json's ``ranks`` and the replay agree with the standings, whose wins never count a forfeit."""
    from agents.course.duplicate import Forfeit, GameRecord

    record = GameRecord(
        seats=[4, 7], scores=[75, 58], forfeits=[Forfeit(1, 1, "solver", "x"), Forfeit(0, 14, "timeout", "y")]
    )
    assert record.results == [0, 0] and record.ranks() == [2, 2]
    record = GameRecord(seats=[0, 1, 2], scores=[150, 200, 90], forfeits=[Forfeit(1, 5, "illegal", "x")])
    record.forfeits.append(Forfeit(2, 9, "exception", "y"))
    assert record.ranks() == [1, 3, 3]


# ------------------------------------------------------------------ schedule
@pytest.mark.parametrize("agents", range(2, 20))
@pytest.mark.parametrize("players", range(2, 7))
def test_table_sizes_seat_everyone_at_tables_of_2_to_players_plus_1(agents, players):
    if players > agents:
        return
    sizes = table_sizes(agents, players)
    assert sum(sizes) == agents
    assert all(2 <= s <= 6 for s in sizes)
    assert max(sizes) - min(sizes) <= 1
    # no table further from `players` than every way of seating them at equal tables must be
    possible = [
        max(abs(size - players) for size in [agents // t + 1] * (agents % t) + [agents // t] * (t - agents % t))
        for t in range(1, agents // 2 + 1)
        if agents // t >= 2 and -(-agents // t) <= 6
    ]
    assert max(abs(s - players) for s in sizes) == min(possible), sizes
    assert table_sizes(5, 4) == [5]  # not 3 + 2


def test_table_sizes_take_the_number_of_tables_closest_to_agents_over_players():
    """Among seatings equally far from ``players``, the one whose number of tables is closest to
    ``agents / players``: nine agents at tables of two sit 3 + 2 + 2 + 2, not 3 + 3 + 3."""
    assert table_sizes(9, 2) == [3, 2, 2, 2]
    assert table_sizes(8, 3) == [3, 3, 2]
    assert table_sizes(15, 4) == [4, 4, 4, 3]


def test_round_robin_groups_and_rotations():
    assert len(round_robin_groups(8, 2)) == 28 and len(round_robin_groups(6, 3)) == 20
    group = (4, 1, 7)
    seatings = [rotation(group, k) for k in range(3)]
    for agent in group:  # every agent plays every seat once
        assert sorted(s.index(agent) for s in seatings) == [0, 1, 2]


def test_choose_format_and_rounds():
    assert choose_format(8, 2) == "round-robin"  # 28 groups
    assert choose_format(8, 4) == "swiss"  # 70 groups
    assert choose_format(30, 2) == "swiss"
    assert choose_format(30, 2, "round-robin") == "round-robin"
    assert default_rounds(8) == 5 and default_rounds(9) == 6
    with pytest.raises(ValueError, match="format must be one of"):
        choose_format(8, 2, "knockout")


def test_swiss_tables_seat_by_standing_and_avoid_rematches():
    order = list(range(8))
    met = np.zeros((8, 8), dtype=np.int64)
    assert swiss_tables(order, met, 2) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    for a, b in [(0, 1), (2, 3), (4, 5), (6, 7)]:
        met[a, b] = met[b, a] = 1
    tables = swiss_tables(order, met, 2)
    assert sorted(a for t in tables for a in t) == order
    assert all(met[a, b] == 0 for a, b in tables)
    assert tables[0] == (0, 2)
    odd = swiss_tables(list(range(7)), np.zeros((7, 7), dtype=np.int64), 2)
    assert sorted(len(t) for t in odd) == [2, 2, 3]


def test_rotation_moves_each_agent_one_seat_on_and_swiss_looks_two_tables_ahead():
    """``rotation(group, k)``: the group's agent ``i`` sits in seat ``(i + k) % n``. A Swiss table avoids a
    rematch by looking through the next ``2 x size`` agents left, not only the next ``size``."""
    assert rotation((4, 1, 7), 0) == (4, 1, 7)
    assert rotation((4, 1, 7), 1) == (7, 4, 1) and rotation((4, 1, 7), 2) == (1, 7, 4)
    met = np.zeros((8, 8), dtype=np.int64)
    for a, b in [(0, 1), (0, 2)]:  # the leader met the next two already: the third is within the window
        met[a, b] = met[b, a] = 1
    tables = swiss_tables(list(range(8)), met, 2)
    assert tables[0] == (0, 3) and sorted(a for t in tables for a in t) == list(range(8))


def test_a_match_compares_agents_by_their_totals():
    match = Match(5, 0, 0, (3, 1, 2), totals=[300, 280, 300])
    assert match.comparisons() == [(3, 1, 1.0, 5), (3, 2, 0.5, 5), (1, 2, 0.0, 5)]


def test_a_match_compares_agents_by_games_finished_first_under_the_wins_objective():
    """An agent that wins more of a match's games by small margins and loses one by a lot has fewer points but more
    wins: the objective decides which beats the other."""
    match = Match(2, 0, 0, (0, 4), totals=[520, 450], firsts=[1, 2])
    assert match.comparisons("points") == [(0, 4, 1.0, 2)]
    assert match.comparisons("wins") == [(0, 4, 0.0, 2)]


@pytest.mark.parametrize("objective", ["points", "wins"])
def test_a_tournament_rates_by_its_objective(objective):
    """Each match records both its totals and its games finished first; the ratings are fitted to the comparisons of
    the objective chosen, which the output and the page name."""
    from agents.course.ratings import Comparisons, rate
    from agents.course.tournament_page import render_html

    result = tournament(["random"], YACHT, players=2, games=2, seed=7, bootstrap=0, isolated=False, objective=objective)
    assert result["objective"] == objective
    assert ("of games finished first" in result["rating"]["method"]) == (objective == "wins")
    games = {g["id"]: g for g in result["games_played"]}
    for m in result["matches"]:
        firsts = [0] * len(m["agents"])
        for game in (games[i] for i in m["games"]):
            forfeited = {f["seat"] for f in game["forfeits"]}
            for seat, agent in enumerate(game["seats"]):
                firsts[m["agents"].index(agent)] += game["ranks"][seat] == 1 and seat not in forfeited
        assert m["firsts"] == firsts
    matches = [
        Match(m["id"], m["round"], m["deal"], tuple(m["agents"]), m["games"], m["totals"], m["firsts"])
        for m in result["matches"]
    ]
    fitted = rate(Comparisons.of([r for m in matches for r in m.comparisons(objective)]), 3, 1, bootstrap=0)
    by_name = {row["agent"]: row["rating"] for row in result["standings"]}
    assert all(abs(by_name[name] - round(float(fitted.rating[k]), 1)) < 0.11 for k, name in enumerate(result["agents"]))
    page = render_html(result)
    assert ("of games finished first in a match (objective: wins)" in page) == (objective == "wins")
    # the terminal says it too: the two objectives' standings of one field differ, nothing else telling them apart
    header = summary_text(result).splitlines()[0]
    assert header.endswith(
        "rated by games finished first (--objective wins)" if objective == "wins" else "rated by points"
    )
    with pytest.raises(ValueError, match="objective must be one of points, wins, got 'score'"):
        tournament(["random"], YACHT, objective="score")


def test_bad_arguments_are_refused_before_any_game():
    with pytest.raises(ValueError, match="must be an agent spec"):
        entry_names([""])
    with pytest.raises(ValueError, match="given twice"):
        entry_names(["a.py:A", "a.py:A"])
    with pytest.raises(ValueError, match="anchor"):
        entry_names(["greedy"])
    with pytest.raises(ValueError, match="at least one submission"):
        tournament([], YACHT)
    with pytest.raises(
        ValueError,
        match=r"players must be at most 3, the tournament's agents \(1 submission\(s\) and the anchors optimal and greedy\), got 4",
    ):
        tournament(["a.py:A"], YACHT, players=4)
    with pytest.raises(ValueError, match="games must be an integer >= 1"):
        tournament(["a.py:A"], YACHT, games=0)
    with pytest.raises(ValueError, match="--rounds is for a Swiss") as refused:
        tournament(["a.py:A"], YACHT, rounds=3)
    # auto chose the round-robin, not the user: the error says why, and how to play Swiss rounds
    assert str(refused.value).endswith(
        "(auto: 3 agents at 2 seats make 3 groups, a round-robin up to 60); --format swiss plays Swiss rounds"
    )
    with pytest.raises(ValueError, match="a round-robin has one round$"):
        tournament(["a.py:A"], YACHT, rounds=3, fmt="round-robin")
    # counts past their limits are refused before any game (not after them, out of memory)
    with pytest.raises(ValueError, match="games must be at most 10000000, got 99999999999"):
        tournament(["a.py:A"], YACHT, games=99_999_999_999)
    with pytest.raises(ValueError, match="bootstrap must be at most 100000, got 99999999999"):
        tournament(["a.py:A"], YACHT, bootstrap=99_999_999_999)
    with pytest.raises(ValueError, match="rounds must be at most 1000, got 99999999"):
        tournament(["a.py:A", "b.py:B", "c.py:C"], YACHT, fmt="swiss", rounds=99_999_999)
    # the whole tournament's games: deals per table x the seats of a round x rounds (here 3 x 2 seats x 1)
    with pytest.raises(ValueError, match=r"would play 18,000,000 games \(3,000,000 deal\(s\) x 6 seats x 1 round"):
        tournament(["a.py:A"], YACHT, games=3_000_000)


# ------------------------------------------------------------------ ratings
def _simulated(strengths: np.ndarray, pairs: int, seed: int) -> Comparisons:
    rng = np.random.default_rng(seed)
    rows = []
    n = len(strengths)
    for m in range(pairs):
        a, b = rng.choice(n, size=2, replace=False)
        p = 1 / (1 + 10 ** ((strengths[b] - strengths[a]) / 400))
        rows.append((int(a), int(b), float(rng.random() < p), m))
    return Comparisons.of(rows)


def test_an_agent_that_won_or_lost_every_comparison_is_marked_as_set_by_the_prior():
    """A perfect record puts the likelihood's maximum at infinity: the prior sets the rating (10-0 gave an
    interval of zero width), so the agent is marked ``unbeaten`` (a lower bound) or ``winless``; the
    standings say so in their ``record`` column and the terminal line."""
    from agents.course.tournament import summary_text

    rows = [(0, 1, 1.0, m) for m in range(10)] + [(1, 2, 0.5, 10 + m) for m in range(10)]
    rows += [(0, 2, 1.0, 20 + m) for m in range(5)]
    ratings = rate(Comparisons.of(rows), 3, anchor=1, bootstrap=50, seed=0)
    assert ratings.perfect.tolist() == [1, 0, 0]
    lost = rate(Comparisons.of([(0, 1, 0.0, m) for m in range(4)] + [(1, 2, 1.0, 9)]), 3, anchor=1, bootstrap=0)
    assert lost.perfect.tolist() == [-1, 1, -1]  # 0 and 2 never won; 1 never lost
    result = tournament(["random"], YACHT, players=2, games=1, seed=1, bootstrap=0, isolated=False)
    records = {row["agent"]: row["record"] for row in result["standings"]}
    assert records == {"optimal": "unbeaten", "greedy": "", "random": "winless"}  # two games a pair
    text = summary_text(result)
    assert "(unbeaten: the prior sets its rating, a lower bound)" in text and "(winless: the prior" in text


def test_the_fit_recovers_known_ratings():
    strengths = np.array([0.0, 100.0, 200.0, 400.0])
    ratings = rate(_simulated(strengths, 6000, 1), 4, anchor=0, bootstrap=100, seed=2)
    assert ratings.rating[0] == ANCHOR_RATING
    assert np.abs(ratings.rating - ANCHOR_RATING - strengths).max() < 40
    inside = (ratings.low - 1e-9 <= ratings.rating) & (ratings.rating <= ratings.high + 1e-9)
    assert inside.all()
    assert (ratings.low[1:] <= ANCHOR_RATING + strengths[1:] + 60).all()
    assert (ratings.high[1:] >= ANCHOR_RATING + strengths[1:] - 60).all()
    assert ratings.low[0] == ratings.high[0] == ANCHOR_RATING


def test_the_interval_is_the_2_5th_to_97_5th_percentile_of_the_resampled_ratings():
    """The 95% interval is the central 95% of the bootstrap's refitted ratings: the same resamples (whole
    matches, the same seed), refitted and anchored here, give NumPy's 2.5th and 97.5th percentiles."""
    data = _simulated(np.array([0.0, 150.0, 300.0]), 300, 5)
    data = Comparisons(data.first, data.second, data.result, data.match // 5)  # five comparisons a match
    ratings = rate(data, 3, anchor=1, bootstrap=200, seed=9)
    rng = np.random.default_rng(9)
    matches, index = np.unique(data.match, return_inverse=True)
    samples = []
    for _ in range(200):
        counts = np.bincount(rng.integers(0, len(matches), size=len(matches)), minlength=len(matches))
        refit = fit(data, 3, weights=counts[index])
        samples.append(refit - refit[1] + ANCHOR_RATING)
    np.testing.assert_allclose(ratings.low, np.percentile(samples, 2.5, axis=0), rtol=0, atol=1e-6)
    np.testing.assert_allclose(ratings.high, np.percentile(samples, 97.5, axis=0), rtol=0, atol=1e-6)
    assert ratings.bootstrap == 200 and (ratings.high[[0, 2]] - ratings.low[[0, 2]] > 10).all()


def test_the_fit_is_the_maximum_of_its_objective_and_ignores_order():
    data = _simulated(np.array([0.0, 50.0, 300.0]), 200, 3)
    ratings = fit(data, 3)
    order = np.random.default_rng(0).permutation(len(data))
    shuffled = Comparisons(data.first[order], data.second[order], data.result[order], data.match[order])
    np.testing.assert_allclose(fit(shuffled, 3), ratings, atol=1e-6)

    def objective(r):
        theta = r / ELO_PER_LOGIT
        d = theta[data.first] - theta[data.second]
        loglik = (data.result * -np.log1p(np.exp(-d)) + (1 - data.result) * -np.log1p(np.exp(d))).sum()
        return loglik - 0.5 * ((r / 400.0) ** 2).sum()

    best = objective(ratings)
    for k in range(3):
        for step in (-1.0, 1.0):
            moved = ratings.copy()
            moved[k] += step
            assert objective(moved) < best


def test_draws_rate_equal_and_a_clean_sweep_stays_finite():
    draws = Comparisons.of([(0, 1, 0.5, m) for m in range(20)])
    assert abs(fit(draws, 2)[0] - fit(draws, 2)[1]) < 1e-9
    sweep = Comparisons.of([(0, 1, 1.0, m) for m in range(50)])
    ratings = rate(sweep, 3, anchor=1, bootstrap=50)
    assert math.isfinite(ratings.rating[0]) and ratings.rating[0] > ANCHOR_RATING + 400
    assert ratings.rating[2] == pytest.approx(ANCHOR_RATING + fit(sweep, 3)[2] - fit(sweep, 3)[1])  # no games: prior


def test_no_interval_without_resamples_or_with_a_single_match():
    """Resampling one match gives it back: its interval would have no width, so there is none."""
    one_match = Comparisons.of([(0, 1, 1.0, 7), (0, 2, 1.0, 7), (1, 2, 0.0, 7)])
    several = Comparisons.of([(0, 1, 1.0, m) for m in range(5)] + [(1, 0, 1.0, 9)])
    for data, bootstrap in ((one_match, 100), (several, 0)):
        ratings = rate(data, 3, anchor=0, bootstrap=bootstrap)
        assert ratings.bootstrap == 0 and np.isnan(ratings.low).all() and np.isnan(ratings.high).all()
        assert np.isfinite(ratings.rating).all()
    assert rate(several, 3, anchor=0, bootstrap=20).bootstrap == 20


def test_a_tournament_of_one_match_shows_no_interval():
    result = tournament(["random"], YACHT, players=3, games=1, seed=1, isolated=False)
    assert len(result["matches"]) == 1 and result["rating"]["bootstrap"] == 0
    assert "fewer than two matches" in result["rating"]["interval"]
    assert all(row["rating_low"] is None and row["rating_high"] is None for row in result["standings"])
    text = summary_text(result)
    assert "1 match," in text and "95% intervals: none (fewer than two matches" in text and ".." not in text
    from agents.course.tournament_page import render_html

    page = render_html(result)
    standings = page.split('id="standings"')[1].split("</table>")[0]
    assert "without 95% intervals" in page and '<td class="num">none</td>' in standings
    assert '<td class="num">fixed</td>' in standings and not re.search(r"\d to \d", standings)
    rows = list(csv.DictReader(io.StringIO(standings_csv(result))))
    assert all(row["rating_low"] == "" for row in rows)


def test_the_built_in_random_agent_plays_the_same_moves_for_the_same_seed():
    """Its generator comes from the tournament's seed (it was unseeded: standings moved from run to run)."""
    first, again = (tournament(["random"], YACHT, players=2, games=2, seed=12345, isolated=False) for _ in range(2))
    assert first["matches"] == again["matches"] and first["standings"] == again["standings"]
    other = tournament(["random"], YACHT, players=2, games=2, seed=54321, isolated=False)
    assert other["matches"] != first["matches"]


def test_rate_refuses_bad_arguments():
    data = Comparisons.of([(0, 1, 1.0, 0)])
    with pytest.raises(ValueError, match="anchor"):
        rate(data, 2, anchor=2)
    with pytest.raises(ValueError, match="bootstrap"):
        rate(data, 2, anchor=0, bootstrap=-1)


# ------------------------------------------------------------------ a whole tournament
SUBMISSIONS = '''
import numpy as np


class First:
    def __init__(self, rules):
        pass

    def act(self, observation, action_mask):
        return 32 + int(np.flatnonzero(action_mask[32:])[0])


class Raiser:
    """Raises in its 20th decision of the tournament (once: its process lives on)."""

    def __init__(self, rules):
        self.n = 0

    def act(self, observation, action_mask):
        self.n += 1
        if self.n == 20:
            raise RuntimeError("<b>boom</b>")
        return 32 + int(np.flatnonzero(action_mask[32:])[0])


class Middle:
    def __init__(self, rules):
        pass

    def act(self, observation, action_mask):
        legal = np.flatnonzero(action_mask)
        return int(legal[len(legal) // 2])


class Crasher:
    """Ends its process in the 20th decision of each process: in every second game (12 decisions a game)."""

    def __init__(self, rules):
        self.n = 0

    def act(self, observation, action_mask):
        self.n += 1
        if self.n == 20:
            import os

            os._exit(3)
        return 32 + int(np.flatnonzero(action_mask[32:])[0])


class Illegal:
    def __init__(self, rules):
        pass

    def act(self, observation, action_mask):
        return 31
'''


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    from agents.course.sandbox import Limits

    folder = tmp_path_factory.mktemp("tournament")
    (folder / "subs.py").write_text(SUBMISSIONS)
    (folder / "ev<il>&.py").write_text(SUBMISSIONS)
    names = [
        f"{folder / 'subs.py'}:First",
        f"{folder / 'subs.py'}:Raiser",
        f"{folder / 'ev<il>&.py'}:Middle",
        f"{folder / 'subs.py'}:Crasher",
        f"{folder / 'subs.py'}:Illegal",
        f"{folder / 'subs.py'}:Missing",
    ]
    result = tournament(
        names,
        YACHT,
        players=2,
        games=1,
        seed=4,
        bootstrap=200,
        limits=Limits(decision_seconds=60, game_seconds=600, load_seconds=300, max_failures=2),
    )
    out = folder / "out"
    out.mkdir()
    write_outputs(result, out)
    return names, result, out


def test_a_tournament_of_six_submissions_and_the_anchors(played):
    names, result, _ = played
    rows = {row["agent"]: row for row in result["standings"]}
    assert set(rows) == {"optimal", "greedy", *names}
    assert result["format"] == "round-robin" and len(result["matches"]) == 28
    assert len(result["games_played"]) == 56
    for row in rows.values():
        assert row["games"] == 14  # 7 opponents x 2 rotations
        assert row["rating_low"] <= row["rating"] <= row["rating_high"]
    assert rows["greedy"]["rating"] == ANCHOR_RATING
    assert result["standings"][0]["agent"] == "optimal"
    assert rows["optimal"]["rating_low"] > ANCHOR_RATING - 400
    first, raiser, crasher, illegal, missing = (rows[names[i]] for i in (0, 1, 3, 4, 5))
    assert first["failures"] == 0 and first["status"] == "ok"
    assert raiser["failures"] == 1 and raiser["status"] == "failures"
    # games 1 and 3 crash; after the second failure (max_failures) the 10 games left are forfeited
    assert crasher["failures"] == 2 + 10 and crasher["status"] == "stopped"
    assert illegal["failures"] == 14 and illegal["status"] == "stopped" and illegal["wins"] == 0
    assert missing["failures"] == 14 and missing["status"] == "not_loaded" and missing["mean_score"] == 0
    kinds = {name: [f["kind"] for f in failures] for name, failures in result["failures"].items()}
    assert kinds[names[1]] == ["exception"] and kinds[names[3]] == ["crash"] * 2
    assert kinds[names[4]] == ["illegal"] * 2 and kinds[names[5]] == ["load"]
    assert rows["optimal"]["rating"] > rows["greedy"]["rating"] > rows[names[5]]["rating"]


def test_every_game_is_a_duplicate_of_its_match(played):
    names, result, _ = played
    games = {g["id"]: g for g in result["games_played"]}
    for match in result["matches"]:
        a, b = (games[i] for i in match["games"])
        assert a["deal"] == b["deal"] == match["deal"] and a["seats"] == b["seats"][::-1]
        totals = [sum(g["results"][g["seats"].index(agent)] for g in (a, b)) for agent in match["agents"]]
        assert totals == match["totals"]
    expected = {names[1]: {"exception"}, names[3]: {"crash", "stopped"}, names[4]: {"illegal", "stopped"}}
    expected[names[5]] = {"load"}
    for g in result["games_played"]:  # every forfeit names its own cause
        for forfeit in g["forfeits"]:
            assert forfeit["kind"] in expected[result["agents"][g["seats"][forfeit["seat"]]]], forfeit
    # an agent that did not fail scored the same on the same dice and seat, whoever it played
    by_seat = {}
    for g in result["games_played"]:
        for seat, agent in enumerate(g["seats"]):
            if not any(f["seat"] == seat for f in g["forfeits"]):
                by_seat.setdefault((agent, g["deal"], seat), set()).add(g["scores"][seat])
    assert all(len(scores) == 1 for scores in by_seat.values())


def test_each_failure_names_its_game_in_games_json(played):
    """A failure's ``game`` counts the submission's own games; ``game_id`` is the game in games.json (and the
    replay), where that submission sat and forfeited for that reason."""
    _, result, _ = played
    games = {g["id"]: g for g in result["games_played"]}
    checked = 0
    for name, failures in result["failures"].items():
        agent = result["agents"].index(name)
        own = [g["id"] for g in result["games_played"] if agent in g["seats"]]
        for failure in failures:
            if failure["game"] < 0:
                assert failure["game_id"] is None  # while loading
                continue
            assert failure["game_id"] == own[failure["game"]]
            game = games[failure["game_id"]]
            seat = game["seats"].index(agent)
            assert any(f["seat"] == seat and f["kind"] == failure["kind"] for f in game["forfeits"]), (name, failure)
            checked += 1
    assert checked >= 5


def test_the_files(played):
    names, result, out = played
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
    rows = list(csv.DictReader(io.StringIO((out / "standings.csv").read_text())))
    assert [r["agent"] for r in rows] == [r["agent"] for r in result["standings"]]
    assert all(float(r["rating_low"]) <= float(r["rating"]) <= float(r["rating_high"]) for r in rows)
    data = json.loads((out / "standings.json").read_text())
    assert data["standings"] == result["standings"] and "games_played" not in data
    games = json.loads((out / "games.json").read_text())
    assert games["games"] == json.loads(json.dumps(result["games_played"]))
    page = (out / "leaderboard.html").read_text()
    assert "ev<il>" not in page and "ev&lt;il&gt;&amp;.py" in page
    for marker in ("http://", "https://", "<link", 'src="//', "@import"):
        assert marker not in page
    assert games_json(result).count("\n") == len(result["games_played"]) + 2


def test_the_csv_defuses_formulas():
    result = {
        "standings": [
            dict.fromkeys(["rank", "rating", "rating_low", "rating_high"], 1)
            | {
                "agent": "=HYPERLINK(1)",
                "kind": "submission",
                "games": 1,
                "wins": 0,
                "mean_score": None,
                "failures": 0,
                "status": "ok",
            }
        ]
    }
    assert "'=HYPERLINK(1)" in standings_csv(result)
    for formula in ("+1+1", "-1+1", "@SUM(A1)"):  # each sign a spreadsheet starts a formula with
        result["standings"][0]["agent"] = formula
        rows = list(csv.reader(io.StringIO(standings_csv(result))))
        assert rows[1][rows[0].index("agent")] == "'" + formula


def test_solver_flag_reports_a_submission_that_imports_the_librarys_agents(tmp_path):
    """--solver flag: the standings (CSV, JSON, page, terminal) name what a submission imported."""
    from agents.course.tournament_page import render_html

    sneak = tmp_path / "sneak.py"
    sneak.write_text(
        "import numpy as np\nimport agents.players.greedy  # noqa: F401\n\n\nclass Agent:\n"
        "    def act(self, observation, action_mask):\n        return int(np.flatnonzero(action_mask)[-1])\n"
    )
    result = tournament(
        [f"{sneak}:Agent"], YACHT, players=2, games=1, seed=1, bootstrap=0, isolated=False, solver="flag"
    )
    (row,) = [r for r in result["standings"] if r["kind"] == "submission"]
    assert row["solver_imports"] == "agents.players.greedy"
    assert "[imported agents.players.greedy]" in summary_text(result)
    assert "(imported agents.players.greedy)" in render_html(result)
    assert "agents.players.greedy" in standings_csv(result)


def test_the_command_line_draws_a_seed_no_submission_can_guess(tmp_path, capsys):
    """Without --seed, a random 63-bit seed, said and recorded (a small one could be found from the dice);
    a small --seed is played with a warning."""
    from agents.commands.tournament import main

    assert main(["random", "--rules", "yacht", "--games", "1", "--bootstrap", "0", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    seed = json.loads((tmp_path / "a" / "standings.json").read_text())["seed"]
    assert seed >= 1 << 32 and f"seed {seed}, drawn at random (--seed {seed} plays this tournament again)" in err
    assert main(["random", "--rules", "yacht", "--games", "1", "--bootstrap", "0", "--seed", "3"]) == 0
    err = capsys.readouterr().err
    assert "warning: seed 3 is small" in err
    assert err.index("warning: seed 3 is small") < err.index("round 1 of 1")  # said before the games


def test_a_course_config_gives_the_rules_limits_and_policy_never_the_seed(tmp_path, capsys):
    """--config (a grading's TOML): its rules, options and solver policy, command-line options winning; its seed
    is the grading's secret and its games the grading's: the tournament takes neither."""
    from agents.commands.tournament import main

    config = tmp_path / "grading.toml"
    config.write_text('rules = "yahtzee"\noptions = { joker = "free" }\nseed = 12345\ngames = 2000\nsolver = "flag"\n')
    out = tmp_path / "t"
    assert main(["random", "--config", str(config), "--games", "1", "--bootstrap", "0", "--out", str(out)]) == 0
    standings = json.loads((out / "standings.json").read_text())
    assert standings["rules"] == "yahtzee" and standings["rules_options"] == {"joker": "free"}
    assert standings["isolation"]["solver"] == "flag" and standings["seed"] != 12345 and standings["games"] == 1
    capsys.readouterr()
    config.write_text('rules = "yahtzee"\nsolver = "flag"\n')
    assert main(["random", "--config", str(config), "--rules", "yacht", "--solver", "forbid", "--games", "1",
                 "--bootstrap", "0", "--out", str(tmp_path / "u")]) == 0  # fmt: skip
    standings = json.loads((tmp_path / "u" / "standings.json").read_text())
    assert standings["rules"] == "yacht" and standings["isolation"]["solver"] == "forbid"


def test_a_folder_or_a_bare_file_enters_its_agents_as_grading_finds_them(tmp_path, capsys):
    from agents.commands.tournament import entrants

    agent = "class MyAgent:\n    def act(self, observation, action_mask):\n        return 32\n"
    for name in ("alice", "bob"):
        (tmp_path / f"{name}.py").write_text(agent)
    (tmp_path / "notes.py").write_text("x = 1\n")
    assert entrants([str(tmp_path), "random"]) == [
        f"{tmp_path / 'alice.py'}:MyAgent",
        f"{tmp_path / 'bob.py'}:MyAgent",
        "random",
    ]
    err = capsys.readouterr().err
    assert "notes.py: not entered (no class with an act method" in err
    assert "--class NAME of dice-poker grade and tournament" in err  # (it named grade's flag alone)
    assert entrants([str(tmp_path / "bob.py"), "x.py:Agent"]) == [f"{tmp_path / 'bob.py'}:MyAgent", "x.py:Agent"]
    (tmp_path / "README.md").write_text("# class\n")  # left out without a word before
    entrants([str(tmp_path)])
    assert f"{tmp_path / 'README.md'}: not entered (not a .py file)" in capsys.readouterr().err


def test_a_colon_or_comma_alone_in_a_file_name_is_entered(tmp_path, capsys):
    """The docs said a tournament refuses any file name with ``:`` or ``,``; it refuses those whose spec would
    name another file or agent, and plays ``lee:k.py`` (its spec reads back as itself), as the docs now say."""
    from agents.commands.tournament import entrants

    agent = "class MyAgent:\n    def act(self, observation, action_mask):\n        return 32\n"
    for name in ("lee:k", "smith,j"):
        (tmp_path / f"{name}.py").write_text(agent)
    assert entrants([str(tmp_path)]) == [f"{tmp_path / name}.py:MyAgent" for name in ("lee:k", "smith,j")]
    assert capsys.readouterr().err == ""
    docs = " ".join((Path(__file__).resolve().parents[1] / "docs" / "tournament.md").read_text().split())
    assert "`lee:k.py` and `smith,j.py` read back as themselves and play" in docs


def test_a_folder_per_student_enters_each_students_agent(tmp_path, capsys):
    from agents.commands.tournament import entrants

    agent = "class MyAgent:\n    def act(self, observation, action_mask):\n        return 32\n"
    for name in ("alice", "bob"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "my_agent.py").write_text(agent)
    assert entrants([str(tmp_path)]) == [f"{tmp_path / name / 'my_agent.py'}:MyAgent" for name in ("alice", "bob")]


def test_a_file_that_does_not_parse_is_shown_without_a_made_up_class(tmp_path, capsys):
    """``heidi.py`` (class MyAgent) with a syntax error was entered, graded and checked as ``heidi.py:Agent``, a
    class it never had: a tournament leaves it out saying why, ``grade`` and ``check`` of the bare file refuse it in
    one line; ``--class`` (as grade's) names the class, and the file is entered under it."""
    from agents.commands.grade import resolve_submission
    from agents.commands.tournament import entrants
    from dice_poker_env import cli

    heidi = tmp_path / "heidi.py"
    heidi.write_text("class MyAgent:\n    def act(self, observation, action_mask)\n        return 32\n")
    (tmp_path / "ivan.py").write_text("class Mine:\n    def act(self, observation, action_mask):\n        return 32\n")
    assert entrants([str(tmp_path)]) == [f"{tmp_path / 'ivan.py'}:Mine"]
    err = capsys.readouterr().err
    assert f"{heidi}: not entered (SyntaxError: " in err and "(line 2): it does not parse" in err
    assert ":Agent" not in err
    assert entrants([str(heidi)], "MyAgent") == [f"{heidi}:MyAgent"]  # named: its load failure tells the error
    with pytest.raises(ValueError, match="heidi.py: SyntaxError: .* \\(line 2\\): it does not parse") as error:
        resolve_submission(str(heidi))
    assert ":Agent" not in str(error.value)
    for command in ("check", "grade"):
        assert cli.main([command, str(heidi), "--rules", "yacht", "--games", "1", "--unisolated"]) == 2
        err = capsys.readouterr().err
        assert "it does not parse" in err and ":Agent" not in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(SystemExit):
        cli.main(["tournament", "--help"])
    assert "--class NAME" in capsys.readouterr().out


def test_a_file_named_like_a_spec_is_not_played_as_another_students_agent(tmp_path, capsys, monkeypatch):
    """A ``:`` or ``,`` in a file name could make its spec name another file (``bob.py:BobAgent,note=1.py``
    played Bob's agent under the attacker's name) or a built-in agent (``winning,future=1.py`` in a folder
    given as ``.``): such a file is not entered, saying why in one line; ``grade`` and ``check`` of that one
    file refuse it. A file name's control characters never reach the terminal."""
    from agents.commands.grade import resolve_submission
    from agents.commands.tournament import entrants

    agent = "class {name}:\n    def __init__(self, rules, **options):\n        pass\n    def act(self, o, m):\n        return 32\n"
    (tmp_path / "bob.py").write_text(agent.format(name="BobAgent"))
    hostile = ["bob.py:BobAgent,note=1.py", "winning,future=1.py"]
    for name in hostile:
        (tmp_path / name).write_text(agent.format(name="Mal"))
    (tmp_path / "ev\x1b[2Jil.py").write_text("x = 1\n")  # no agent: its not-entered line is printed
    monkeypatch.chdir(tmp_path)
    assert entrants(["."]) == ["bob.py:BobAgent"]
    err = capsys.readouterr().err
    assert err.count("not entered (its path does not read back as its agent spec") == 2
    assert "ev?[2Jil.py: not entered (no class" in err and "\x1b" not in err
    for name in hostile:
        assert entrants([name]) == []
        with pytest.raises(ValueError, match="does not read back as its agent spec .* rename it"):
            resolve_submission(name)
    capsys.readouterr()


def test_a_load_error_reaches_the_terminal_without_its_control_characters(tmp_path, capsys):
    from agents.course.tournament import tournament

    sneak = tmp_path / "sneak.py"
    sneak.write_text(
        "class Agent:\n    def __init__(self, rules):\n        raise RuntimeError('boom\\x1b[2J\\x1b]0;pwned\\x07')\n"
    )
    tournament([f"{sneak}:Agent"], YACHT, players=2, games=1, seed=1, bootstrap=0, isolated=False, progress=True)
    err = capsys.readouterr().err
    assert "did not load: " in err and "boom?[2J?]0;pwned?" in err and "\x1b" not in err and "\x07" not in err


def test_the_command_line_refuses_bad_input_in_one_line(tmp_path, capsys):
    from agents.commands.tournament import main

    assert main(["a.py:A", "--rules", "yacht", "--players", "7"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "players must be an integer 2 to 6, got 7" in err
    assert main(["a.py:A", "--rules", "yacht", "--players", "4"]) == 2
    assert "players must be at most 3" in capsys.readouterr().err
    assert main(["a.py:A", "a.py:A", "--rules", "yacht"]) == 2
    assert "given twice" in capsys.readouterr().err
    assert main(["a.py:A", "--rules", "nosuchrules"]) == 2
    assert capsys.readouterr().err.startswith("tournament: error:")
    assert main(["a.py:A", "--rules", "yacht", "--overwrite"]) == 2
    assert "--overwrite goes with --out" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("entrant", "said"),
    [
        ("winnig", "unknown agent 'winnig': use one of optimal, greedy, random, trained, winning, model:PATH"),
        ("missing.py:Agent", "agent 'missing.py:Agent': no such file missing.py"),
        ("winning,targt=3", "unknown argument 'targt' (winning takes target, future, tail)"),
    ],
)
def test_an_entrant_that_is_no_agent_is_refused_in_one_line_before_any_game(
    tmp_path, monkeypatch, capsys, entrant, said
):
    """A typo of a built-in or a file that is not there is refused, as grade refuses it, in one line: not said after
    the seed (which promises a tournament), once every earlier submission's sandbox has started, or (a missing
    file) played as a submission forfeiting every game."""
    from agents.commands.tournament import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.py").write_text(SUBMISSIONS)
    assert main(["good.py:First", entrant, "--rules", "yacht", "--games", "1", "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tournament: error: ") and said in err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ the leaderboard in a browser
SHOWN = """(() => {
  const $ = (id) => document.getElementById(id);
  const rows = Array.from(document.querySelectorAll('#replay-table tr'));
  const card = {};
  for (const row of rows) if (row.dataset.box) card[row.dataset.box] = Array.from(row.cells).slice(1).map(c => c.textContent);
  return {position: $('replay-position').textContent, dice: $('replay-dice').dataset.dice,
          held: parseInt($('replay-dice').dataset.held, 10),
          held_dice: document.querySelectorAll('#replay-dice rect.held').length,
          faces: Array.from(document.querySelectorAll('#replay-dice rect')).map(r => r.dataset.face).join(''),
          mover: $('replay-mover').textContent, action: $('replay-action').textContent, card: card,
          totals: Array.from($('replay-totals').cells).slice(1).map(c => c.textContent)};
})()"""


def _describe(action: int, dice: str, boxes: list[str]) -> str:
    if action >= N_KEEP_ACTIONS:
        return f"score {boxes[action - N_KEEP_ACTIONS]}"
    kept = [d for i, d in enumerate(dice) if action >> i & 1]
    return f"keep {'-'.join(kept)}" if kept else "reroll all"


def _expected(result: dict, game: int, move: int) -> dict:
    """What the replay must show at ``move`` of ``game``, from the game record alone."""
    record = result["games_played"][game]
    boxes = result["box_names"]
    seat, dice, _, action, _, forfeit = record["moves"][move]
    players = len(record["seats"])
    card = {name: [""] * players for name in boxes}
    totals = [0] * players
    for s, _, _, a, points, _ in record["moves"][:move]:
        if points is not None:
            card[boxes[a - N_KEEP_ACTIONS]][s] = str(points)
            totals[s] += points
    held = action if action < 31 else -1
    return {
        "dice": dice,
        "held": held,
        "held_dice": bin(held).count("1") if held > 0 else 0,
        "faces": dice,
        "mover": result["agents"][record["seats"][seat]],
        "action": _describe(action, dice, boxes) + (" (forfeited seat)" if forfeit else ""),
        "card": card,
        "totals": [str(t) for t in totals],
    }


def _check(shown: dict, want: dict) -> None:
    for key, value in want.items():
        assert shown[key] == value, (key, shown[key], value)


def test_the_leaderboard_and_its_replays_in_chromium(played, tmp_path):
    import os
    from pathlib import Path

    from test_report_browser import BROWSER, Browser  # the DevTools driver of the grade report's test

    if BROWSER is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium)")
    names, result, out = played
    artifacts = Path(os.environ.get("DICE_POKER_TEST_ARTIFACTS", tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    browser = Browser(tmp_path / "profile")

    def at(game: int, move: int) -> None:  # the replay shows this move (once the last input event has landed)
        browser.until(SHOWN, lambda shown: _check(shown, _expected(result, game, move)))

    try:
        browser.open((out / "leaderboard.html").as_uri())
        shown_rows = browser.evaluate(
            "Array.from(document.querySelectorAll('#standings tr[data-agent]'))"
            ".map(r => [r.dataset.agent, r.querySelector('.rating').textContent])"
        )
        assert shown_rows == [[r["agent"], f"{r['rating']:.1f}"] for r in result["standings"]]
        assert browser.evaluate("document.querySelectorAll('il, b').length") == 0  # names and messages stay text
        moves = result["games_played"][0]["moves"]
        at(0, 0)
        for move in range(1, len(moves)):  # every move of game 0, both players', with the "move" button
            browser.click("replay-next")
            at(0, move)
        browser.click("replay-next")  # past the end: stays at the last move
        at(0, len(moves) - 1)
        browser.key("ArrowLeft", 37)
        at(0, len(moves) - 2)
        # a game with a forfeit, opened from its match's link
        game = next(g for g in result["games_played"] if g["forfeits"] and g["forfeits"][0]["move"] > 0)
        browser.evaluate(f"document.querySelector('a[data-game=\"{game['id']}\"]').click()")
        at(game["id"], 0)
        browser.click("replay-last")
        last = len(game["moves"]) - 1
        at(game["id"], last)
        browser.screenshot(artifacts / "tournament_replay.png")
        for move in range(last - 1, -1, -1):  # back to the start with the keyboard
            browser.key("ArrowLeft", 37)
            if move in (game["forfeits"][0]["move"], game["forfeits"][0]["move"] - 1, 0):
                at(game["id"], move)
    finally:
        browser.close()
    shot = artifacts / "tournament_replay.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000


def test_a_swiss_tournament_seats_everyone_each_round(tmp_path):
    (tmp_path / "subs.py").write_text(SUBMISSIONS)
    names = [f"{tmp_path / 'subs.py'}:{name}" for name in ("First", "Middle", "Raiser")]
    result = tournament(names, YACHT, players=2, games=1, seed=1, fmt="swiss", rounds=2, bootstrap=20, isolated=False)
    assert result["format"] == "swiss" and result["rounds"] == 2
    for round_ in range(2):
        matches = [m for m in result["matches"] if m["round"] == round_]
        seated = sorted(a for m in matches for a in m["agents"])
        assert seated == list(range(5))  # 5 agents: a table of 3 and one of 2
        assert sorted(len(m["agents"]) for m in matches) == [2, 3]
        assert [m["deal"] for m in matches] == [m["id"] for m in matches]  # every match its own deal
        for m in matches:
            assert len(m["games"]) == len(m["agents"])  # one game per rotation
    assert {row["agent"] for row in result["standings"]} == {"optimal", "greedy", *names}
    assert all(row["games"] in (4, 5, 6) for row in result["standings"])
    assert len({m["deal"] for m in result["matches"]}) == len(result["matches"])  # no deal met twice


def test_swiss_rounds_seat_agents_by_their_standing_and_never_repeat_a_pairing(tmp_path):
    """Four agents, three Swiss rounds at tables of two: the anchors (optimal, greedy) beat the two first-box
    submissions in round 1 (seed 1 pairs each anchor with a submission), so round 2 seats the two winners
    together and the two losers together (by the ratings so far, not the first round's shuffle); the three
    rounds then pair every two agents exactly once (the meetings so far steer round 3 off rematches)."""
    (tmp_path / "a.py").write_text(SUBMISSIONS)
    (tmp_path / "b.py").write_text(SUBMISSIONS)
    names = [f"{tmp_path / 'a.py'}:First", f"{tmp_path / 'b.py'}:First"]
    result = tournament(names, YACHT, players=2, games=1, seed=1, fmt="swiss", rounds=3, bootstrap=0, isolated=False)
    rounds = [[frozenset(m["agents"]) for m in result["matches"] if m["round"] == r] for r in range(3)]
    anchors, submissions = frozenset({0, 1}), frozenset({2, 3})
    assert all(len(table & anchors) == 1 for table in rounds[0])  # the precondition: each anchor met a submission
    assert sorted(rounds[1], key=sorted) == [anchors, submissions]
    pairs = [table for tables in rounds for table in tables]
    assert len(set(pairs)) == len(pairs) == 6


def test_the_duplicate_benchmark_measures_what_it_says():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_duplicate.py"
    spec = importlib.util.spec_from_file_location("bench_duplicate", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.measure("yacht", 4, 0)
    assert result["games"] == 8
    for kind, games in (
        ("sd_plain_per_game", "games_needed_plain"),
        ("sd_duplicate_per_deal", "games_needed_duplicate"),
    ):
        factor = 1 if kind == "sd_plain_per_game" else 2  # a deal is 2 games
        assert result[games] == factor * math.ceil(((1.959964 + 0.841621) * result[kind]) ** 2)
    # the variant keeps the lower of two equally common faces; greedy the higher
    env = raw_env(YACHT, 2, dice_source=DuplicateDice(np.ones((2, TURNS, 3, 5), dtype=np.int64)))
    env.dice_source.expect(0, 0, 0)
    env.reset()
    env.games[0] = env.games[0]._replace(roll=roll_index([1, 2, 2, 5, 5]))
    seen = env.observe("player_0")
    assert GreedyAgent(YACHT).act(seen["observation"], seen["action_mask"]) == 0b11000  # keeps 5-5
    assert bench.LowTieGreedy(YACHT).act(seen["observation"], seen["action_mask"]) == 0b00110  # keeps 2-2


def test_the_librarys_own_agents_take_part_in_process(tmp_path):
    """``random`` (or ``winning``, ``trained``, ``model:PATH``) beside a submission: played in the grader's process,
    shown as built-in, never a sandbox's failure."""
    from agents.course.sandbox import Limits
    from agents.course.tournament import is_builtin

    assert is_builtin("random") and is_builtin("winning,future=reach") and is_builtin("model:x.npz")
    assert not is_builtin("subs.py:First") and not is_builtin("optimal")
    (tmp_path / "subs.py").write_text(SUBMISSIONS)
    first = f"{tmp_path / 'subs.py'}:First"
    result = tournament(
        [first, "random"], YACHT, players=2, games=1, seed=4, bootstrap=50, isolated=False,
        limits=Limits(decision_seconds=60, game_seconds=600, load_seconds=300),
    )  # fmt: skip
    rows = {row["agent"]: row for row in result["standings"]}
    assert rows["random"]["kind"] == "builtin" and rows["random"]["status"] == "ok" and rows["random"]["games"] == 6
    assert "random" not in result["failures"]
    from agents.course.tournament_page import render_html

    assert "<code>random</code> (built-in)" in render_html(result)


def test_rules_of_another_game_than_the_configs_drop_its_options(tmp_path, capsys):
    """--config (a yahtzee course, joker=forced) with --rules yacht: yacht takes no joker option (it was
    'unknown rules option'); the same game keeps the config's options."""
    from pathlib import Path

    from agents.commands.tournament import main
    from agents.course.grader import settings

    config = Path(__file__).resolve().parents[1] / "examples" / "course" / "instructor" / "grading.toml"
    assert settings(config, rules="yacht")["options"] == {}
    assert settings(config)["options"] == settings(config, rules=settings(config)["rules"])["options"] != {}
    out = tmp_path / "t"
    args = ["random", "--config", str(config), "--rules", "yacht", "--games", "1", "--seed", "123456789012"]
    assert main([*args, "--bootstrap", "0", "--out", str(out)]) == 0
    standings = json.loads((out / "standings.json").read_text())
    assert standings["rules"] == "yacht"
    assert standings["isolation"]["limits"]["decision_seconds"] > 0  # the limits that applied are recorded


def test_a_missing_folder_entrant_says_so(capsys):
    from agents.commands.tournament import main

    assert main(["no_such_folder/", "--rules", "yacht", "--games", "1", "--seed", "123456789012"]) == 2
    assert "no_such_folder/: no such folder" in capsys.readouterr().err


def _interrupt_at_game(monkeypatch, at: int) -> None:
    """Ctrl-C during the tournament's game number ``at`` (from 0)."""
    import agents.course.tournament as module

    calls = []
    real = module.play_game

    def play(*args, **kwargs):
        calls.append(1)
        if len(calls) > at:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "play_game", play)


def test_an_interrupted_tournament_writes_its_partial_standings(tmp_path, capsys, monkeypatch):
    """Ctrl-C or SIGTERM lost everything without a word (status 130, no folder): the matches complete before it
    give partial standings, printed and written, marked interrupted; a match cut short is left out whole."""
    from agents.commands.tournament import main

    _interrupt_at_game(monkeypatch, 5)  # random, optimal, greedy at 2 seats: 2 games a match; the third cut short
    out = tmp_path / "t"
    args = ["random", "--rules", "yacht", "--games", "3", "--seed", str(2**40), "--bootstrap", "0", "--out", str(out)]
    assert main(args) == 130
    printed = capsys.readouterr().out
    assert printed.startswith("INTERRUPTED: partial standings, from the 2 match(es) complete before it")
    assert "(partial)" in printed
    standings = json.loads((out / "standings.json").read_text())
    assert standings["interrupted"] is True and len(standings["matches"]) == 2
    games = json.loads((out / "games.json").read_text())
    assert games["interrupted"] is True and [g["match"] for g in games["games"]] == [0, 0, 1, 1]
    assert "INTERRUPTED" in (out / "leaderboard.html").read_text()
    assert len(list(csv.reader(io.StringIO((out / "standings.csv").read_text())))) == 4


def test_an_interrupted_tournament_says_so_under_json_too(tmp_path, capsys, monkeypatch):
    """--json prints the standings alone: interrupted, a line on standard error says they are partial (it was the
    exit status alone)."""
    from agents.commands.tournament import main

    _interrupt_at_game(monkeypatch, 5)
    args = ["random", "--rules", "yacht", "--games", "3", "--seed", str(2**40), "--bootstrap", "0", "--json"]
    assert main(args) == 130
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)) == 3
    assert "INTERRUPTED: partial standings, from the 2 match(es) complete before it" in captured.err


def test_a_tournament_interrupted_before_a_match_says_nothing_was_written(tmp_path, capsys, monkeypatch):
    from agents.commands.tournament import main

    _interrupt_at_game(monkeypatch, 1)
    out = tmp_path / "t"
    assert main(["random", "--rules", "yacht", "--games", "2", "--seed", str(2**40), "--out", str(out)]) == 130
    assert "interrupted before any standings: nothing written" in capsys.readouterr().err
    assert not out.exists()


def test_a_tournament_stopped_while_writing_its_files_says_they_are_incomplete(tmp_path, capsys, monkeypatch):
    from agents.commands import tournament as command
    from agents.course import tournament as module

    def stopped(result, out):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "write_outputs", stopped)
    out = tmp_path / "t"
    args = ["random", "--rules", "yacht", "--games", "1", "--seed", str(2**40), "--bootstrap", "0", "--out", str(out)]
    assert command.main(args) == 130
    assert f"stopped while writing the standings: the files in {out} are incomplete" in capsys.readouterr().err
