"""The two state types and their explicit conversions, and the one-game table form."""

import numpy as np

from dice_poker_env import load_rules
from dice_poker_env.engine import game
from dice_poker_env.engine.position import make_position
from dice_poker_env.engine.state import BatchState
from dice_poker_env.engine.tables import OneGameTables, RuleTables, compile_rules


def _positions():
    tables = compile_rules(load_rules("yahtzee"))
    return tables, [
        make_position(tables, {"yahtzee": 50, "fours": 12}, [4, 4, 4, 4, 4], rolls_left=1),
        make_position(tables, {"yahtzee": 0}, [1, 2, 3, 4, 5], rolls_left=0),
        game.new_game(tables, 17),
    ]


def test_games_and_batches_convert_both_ways():
    tables, games = _positions()
    batch = BatchState.of_games(games)
    assert batch.size == 3 and batch.scores.shape == (3, tables.n_boxes)
    assert all(field.dtype == np.int64 for field in batch)
    for i, one in enumerate(games):
        back = batch.game(i)
        assert isinstance(back.filled, int) and isinstance(back.roll, int)
        assert back._replace(scores=None) == one._replace(scores=None)
        np.testing.assert_array_equal(back.scores, one.scores)
        np.testing.assert_array_equal(one.as_batch().scores, one.scores[None, :])
    assert batch.total.tolist() == [g.total for g in games] == [62, 0, 0]
    assert batch.turn.tolist() == [g.turn for g in games] == [2, 1, 0]
    part = batch.take(np.array([False, True, True]))
    assert part.size == 2 and part.game(0).filled == games[1].filled
    copy = batch.copy()
    copy.scores[0, 0] = 99
    assert batch.scores[0, 0] == 0  # a copy owns its arrays


def test_rule_functions_agree_for_one_game_and_for_a_batch():
    """The rules are written once: the one-game tables and the array tables give the same answers."""
    tables, games = _positions()
    one = tables.one_game
    assert isinstance(one, OneGameTables) and isinstance(tables, RuleTables) and tables.one_game is one
    batch = BatchState.of_games(games)
    full = game.five_kind_box_full(tables, batch.filled, batch.scores)
    state = game.five_kind_box_state(tables, batch.filled, batch.scores)
    legal = game.legal_boxes(tables, batch.filled, full, batch.roll)
    assert state.tolist() == [2, 1, 0] and full.tolist() == [True, False, False]
    for i, g in enumerate(games):
        assert game.five_kind_box_state(one, g.filled, g.scores) == state[i]
        assert game.five_kind_box_full(one, g.filled, g.scores) == full[i]
        assert game.legal_boxes(one, g.filled, bool(full[i]), g.roll) == legal[i]
        for box in range(tables.n_boxes):
            args = (g.filled, g.upper_total, bool(full[i]), g.roll, g.rolls_left == 2, box)
            batch_args = (
                batch.filled[i : i + 1],
                batch.upper_total[i : i + 1],
                full[i : i + 1],
                batch.roll[i : i + 1],
                batch.rolls_left[i : i + 1] == 2,
                np.array([box]),
            )
            assert game.score_points(one, *args) == tuple(int(v[0]) for v in game.score_points(tables, *batch_args))
    # five fours, fours filled, yahtzee full: the forced joker offers the open lower boxes only
    lower = sum(1 << k for k in range(tables.n_boxes) if not tables.is_upper[k]) & ~games[0].filled
    assert legal[0] == lower
