"""The grade report's replay detail (:mod:`agents.course.replay`): the upper section and the values of the actions."""

from __future__ import annotations

import numpy as np
import pytest

from agents.course.replay import alternatives, detailed_games, replay_detail, upper_section
from agents.evaluation.benchmark import game_seeds, play_games
from dice_poker_env import load_rules
from dice_poker_env.engine.combinatorics import KEEP_OF_ACTION, roll_index

YACHT = load_rules("yacht")
YAHTZEE = load_rules("yahtzee")


@pytest.fixture(scope="module")
def yahtzee_solution():
    from dice_poker_env import solver

    return solver.solve(YAHTZEE)


def test_the_upper_section_of_each_ruleset():
    assert upper_section(YAHTZEE) == {
        "boxes": [0, 1, 2, 3, 4, 5],
        "most": [5, 10, 15, 20, 25, 30],
        "threshold": 63,
        "bonus": 35,
        "on_complete": False,
    }
    yacht = upper_section(YACHT)
    assert yacht["threshold"] is None and yacht["boxes"] == [0, 1, 2, 3, 4, 5]
    school = upper_section(load_rules("school_poker"))
    assert school["on_complete"] and school["threshold"] is not None and min(school["most"]) > 0


def test_detailed_games_are_the_first_ones_and_the_mistakes_games():
    replays = [{"moves": []}] * 50
    mistakes = [{"worst_example": {"game": 33}}, {"worst_example": {"game": 2}}, {"worst_example": {"game": 99}}]
    assert detailed_games(replays, mistakes, 3) == [0, 1, 2, 33]  # 99 is not a recorded game
    assert detailed_games(replays[:2], [], 20) == [0, 1]
    assert detailed_games(replays, [{"worst_example": None}, {}], 0) == []


def test_alternatives_list_distinct_keeps_and_the_move_made():
    roll = roll_index([2, 2, 3, 5, 6])
    values = np.full(32 + YACHT.n_boxes, -np.inf)
    mask = np.zeros(32 + YACHT.n_boxes, dtype=np.int8)
    mask[:31] = 1
    values[:31] = np.arange(31) / 10.0  # a keep's value grows with its bitmask...
    for action in range(31):  # ... but equal keeps must have equal values: the class's largest bitmask
        values[action] = max(values[a] for a in range(31) if KEEP_OF_ACTION[roll, a] == KEEP_OF_ACTION[roll, action])
    listed = alternatives(values, mask, roll, taken=0b00001, so_far=12.0)
    actions = [action for action, _ in listed]
    classes = [int(KEEP_OF_ACTION[roll, a]) for a in actions]
    assert len(set(classes)) == len(classes) == 6  # five distinct keeps, then the move made
    assert [value for _, value in listed[:5]] == sorted((value for _, value in listed[:5]), reverse=True)
    assert actions[-1] == 0b00001  # kept the first 2: not among the best, listed last
    # the second 2 kept (bitmask 0b00010) is the same keep as the first: the move made stands for its class
    assert 0b00010 not in actions
    same = alternatives(values, mask, roll, taken=0b11110, so_far=12.0)  # keeps 2-3-5-6, the best keep
    assert same[0][0] == 0b11110 and len(same) == 5
    illegal = alternatives(values, mask, roll, taken=31, so_far=12.0)
    assert illegal[-1] == [31, 12.0]  # an illegal action: the game ends with the points so far


def test_replay_detail_values_agree_with_the_recorded_losses(yahtzee_solution):
    from agents.players.greedy import GreedyAgent

    seeds = game_seeds(5, 4)
    record: list = []
    play_games(YAHTZEE, GreedyAgent(YAHTZEE), seeds, yahtzee_solution, record)
    detail = replay_detail(YAHTZEE, yahtzee_solution, seeds, record, [{"worst_example": {"game": 3}}], first=2)
    assert detail["upper"] == upper_section(YAHTZEE) and detail["first"] == 2
    assert [entry["game"] for entry in detail["games"]] == [0, 1, 3]
    for entry in detail["games"]:
        moves = record[entry["game"]]["moves"]
        assert len(entry["alternatives"]) == len(moves)
        for move, listed in zip(moves, entry["alternatives"]):
            dice, _, action, best, loss, _, _ = move
            roll = roll_index([int(d) for d in dice])
            chosen = [value for a, value in listed if a == action]
            assert len(chosen) == 1  # the move made is listed once
            assert listed[0][1] - chosen[0] == pytest.approx(loss, abs=0.011)  # values have 2 decimals
            same = action == best or (action < 32 and KEEP_OF_ACTION[roll, action] == KEEP_OF_ACTION[roll, best])
            if same:  # the best move made: listed first (or tied with the first)
                assert chosen[0] == pytest.approx(listed[0][1], abs=0.011)
    with pytest.raises(ValueError, match="the env deals"):
        replay_detail(YAHTZEE, yahtzee_solution, seeds[::-1], record, first=1)


def test_no_games_no_detail(yahtzee_solution):
    detail = replay_detail(YAHTZEE, yahtzee_solution, [], [], first=20)
    assert detail["games"] == [] and detail["upper"]["threshold"] == 63
