"""Game-level rules: jokers, bonuses and their reward timing, section order, turns."""

import pytest

from dice_poker_env import load_rules
from dice_poker_env.engine import game
from dice_poker_env.engine.masks import action_masks
from dice_poker_env.engine.position import make_position
from dice_poker_env.engine.tables import compile_rules

SCORE = 32


def legal_box_names(rules, state):
    mask = action_masks(compile_rules(rules)).of_game(state)
    return [rules.box_names[k] for k in range(rules.n_boxes) if mask[SCORE + k]]


def play_box(rules, state, box):
    """Score ``box`` and return (reward, new_state) (next dice: 1-2-3-4-6)."""
    action = SCORE + rules.box_index(box)
    assert action_masks(compile_rules(rules)).of_game(state)[action] == 1, (box, legal_box_names(rules, state))
    new, reward, _ = game.step_one(compile_rules(rules), state, action, [1, 2, 3, 4, 6])
    return reward, new


# ------------------------------------------------------------------ yahtzee joker
def test_yahtzee_forced_joker_matching_upper_box_must_be_used():
    rules = load_rules("yahtzee")
    state = make_position(compile_rules(rules), {"yahtzee": 50}, [4, 4, 4, 4, 4])
    assert legal_box_names(rules, state) == ["fours"]
    reward, _ = play_box(rules, state, "fours")
    assert reward == 20 + 100  # box points plus the Yahtzee bonus


def test_yahtzee_forced_joker_lower_box_at_full_value():
    rules = load_rules("yahtzee")
    state = make_position(compile_rules(rules), {"yahtzee": 50, "fours": 12}, [4, 4, 4, 4, 4])
    assert "fours" not in legal_box_names(rules, state)
    assert set(legal_box_names(rules, state)) == {
        "three_of_a_kind",
        "four_of_a_kind",
        "full_house",
        "small_straight",
        "large_straight",
        "chance",
    }
    for box, points in [("full_house", 25), ("small_straight", 30), ("large_straight", 40), ("three_of_a_kind", 20)]:
        reward, new = play_box(rules, state, box)
        assert reward == points + 100
        assert new.scores[rules.box_index(box)] == points


@pytest.mark.parametrize("joker", ["forced", "free"])
def test_a_joker_from_the_first_roll_is_doubled_as_the_pattern_is(joker):
    """First-roll doubling and a joker together (custom rulesets): the joker scores as if the pattern matched, so it
    doubles as the pattern's own points do; from a later roll nothing doubles."""
    rules = load_rules(
        {
            "name": "joker_double",
            "boxes": [
                {"name": "sixes", "kind": "face_sum", "face": 6},
                {"name": "trips", "kind": "n_of_a_kind", "n": 3, "points": "sum", "first_roll_double": True},
                {"name": "house", "kind": "full_house", "points": 25, "first_roll_double": True},
                {"name": "chance", "kind": "chance"},
                {"name": "yacht", "kind": "n_of_a_kind", "n": 5, "points": 50},
            ],
            "five_of_a_kind": {"box": "yacht", "bonus": 0, "joker": joker},
        }
    )
    tables = compile_rules(rules)
    for yacht in ({}, {"yacht": 50}, {"yacht": 0}):
        for rolls_left, factor in ((2, 2), (1, 1), (0, 1)):
            state = make_position(tables, {"sixes": 18, **yacht}, [6, 6, 6, 6, 6], rolls_left=rolls_left)
            assert play_box(rules, state, "trips")[0] == 30 * factor, (yacht, rolls_left)
            if yacht:  # the joker: the full house at its full value
                assert play_box(rules, state, "house")[0] == 25 * factor, (yacht, rolls_left)


def test_a_joker_in_matching_boxes_scores_the_best_combination():
    """A joker scores a lower box as if its pattern matched (docs/rules-format.md); for ``points = "matching"``
    that is the best combination the box can hold: a straight box the sum of its best set (4-5-6: 15, not
    1-2-3: 6), a two-pairs box both pairs of the dice's face (6-6 and 6-6: 24, not one pair's 12)."""
    rules = load_rules(
        {
            "name": "joker_matching",
            "boxes": [
                {"name": "sixes", "kind": "face_sum", "face": 6},
                {"name": "run", "kind": "straight", "sets": [[1, 2, 3], [4, 5, 6]], "points": "matching"},
                {"name": "pairs", "kind": "two_pairs", "points": "matching"},
                {"name": "chance", "kind": "chance"},
                {"name": "yacht", "kind": "n_of_a_kind", "n": 5, "points": 50},
            ],
            "five_of_a_kind": {"box": "yacht", "bonus": 0, "joker": "forced"},
        }
    )
    state = make_position(compile_rules(rules), {"sixes": 18, "yacht": 50}, [6, 6, 6, 6, 6], rolls_left=1)
    assert set(legal_box_names(rules, state)) == {"run", "pairs", "chance"}
    for box, points in [("run", 4 + 5 + 6), ("pairs", 2 * 6 + 2 * 6), ("chance", 30)]:
        reward, new = play_box(rules, state, box)
        assert reward == points and new.scores[rules.box_index(box)] == points, box
    # outside the joker the same dice form neither pattern
    state = make_position(compile_rules(rules), {"sixes": 18}, [6, 6, 6, 6, 6], rolls_left=1)
    assert play_box(rules, state, "run")[0] == 0 and play_box(rules, state, "pairs")[0] == 0


def test_yahtzee_forced_joker_scratched_box_no_bonus_but_joker():
    rules = load_rules("yahtzee")
    state = make_position(compile_rules(rules), {"yahtzee": 0, "fours": 12}, [4, 4, 4, 4, 4])
    reward, _ = play_box(rules, state, "large_straight")
    assert reward == 40  # joker applies with the box at 0, the +100 does not


def test_yahtzee_forced_joker_upper_box_for_zero_when_lower_full():
    rules = load_rules("yahtzee")
    lower = {
        "three_of_a_kind": 10,
        "four_of_a_kind": 0,
        "full_house": 25,
        "small_straight": 30,
        "large_straight": 40,
        "yahtzee": 50,
        "chance": 20,
        "fours": 8,
    }
    state = make_position(compile_rules(rules), lower, [4, 4, 4, 4, 4])
    assert set(legal_box_names(rules, state)) == {"aces", "twos", "threes", "fives", "sixes"}
    reward, _ = play_box(rules, state, "sixes")
    assert reward == 0 + 100  # the +100 is paid wherever the dice go


def test_yahtzee_open_box_five_of_a_kind_scores_normally():
    rules = load_rules("yahtzee")
    state = make_position(compile_rules(rules), {}, [2, 2, 2, 2, 2])
    assert len(legal_box_names(rules, state)) == 13
    reward, _ = play_box(rules, state, "full_house")
    assert reward == 0


def test_yahtzee_free_joker():
    rules = load_rules("yahtzee", joker="free")
    state = make_position(compile_rules(rules), {"yahtzee": 50}, [4, 4, 4, 4, 4])
    assert len(legal_box_names(rules, state)) == 12  # any open box
    reward, _ = play_box(rules, state, "full_house")
    assert reward == 0 + 100  # fours still open: no full value
    state = make_position(compile_rules(rules), {"yahtzee": 50, "fours": 12}, [4, 4, 4, 4, 4])
    reward, _ = play_box(rules, state, "full_house")
    assert reward == 25 + 100


def test_yahtzee_no_joker():
    rules = load_rules("yahtzee", joker="none")
    state = make_position(compile_rules(rules), {"yahtzee": 50, "fours": 12}, [4, 4, 4, 4, 4])
    assert len(legal_box_names(rules, state)) == 11
    reward, _ = play_box(rules, state, "full_house")
    assert reward == 0


# --------------------------------------------------------------- dice_poker joker
def test_dice_poker_joker_needs_fifty_in_poker():
    rules = load_rules("dice_poker")
    state = make_position(compile_rules(rules), {"poker": 0, "threes": 6}, [3, 3, 3, 3, 3])
    assert len(legal_box_names(rules, state)) == 13  # no joker: any open box
    reward, _ = play_box(rules, state, "full_house")
    assert reward == 0
    reward, _ = play_box(rules, state, "two_pair")
    assert reward == 0


def test_dice_poker_joker_with_fifty():
    rules = load_rules("dice_poker")
    state = make_position(compile_rules(rules), {"poker": 50}, [3, 3, 3, 3, 3])
    assert legal_box_names(rules, state) == ["threes"]
    state = make_position(compile_rules(rules), {"poker": 50, "threes": 9}, [3, 3, 3, 3, 3])
    reward, _ = play_box(rules, state, "two_pair")
    assert reward == 15 + 100  # Two Pair scores the sum under the joker
    reward, _ = play_box(rules, state, "small_straight")
    assert reward == 30 + 100


# ------------------------------------------------------------------ upper bonus
def test_upper_bonus_paid_in_the_step_that_reaches_63():
    rules = load_rules("yahtzee")
    card = {"aces": 3, "twos": 6, "threes": 9, "fours": 12, "fives": 15}
    state = make_position(compile_rules(rules), card, [6, 6, 6, 1, 2])
    reward, new = play_box(rules, state, "sixes")
    assert reward == 18 + 35 and new.upper_total == 63 and new.bonus == 35
    state = make_position(compile_rules(rules), card, [6, 6, 1, 1, 2])
    reward, _ = play_box(rules, state, "sixes")
    assert reward == 12


def test_upper_bonus_strict_option():
    card = {"aces": 3, "twos": 6, "threes": 9, "fours": 12, "fives": 15}
    rules = load_rules("dice_poker", upper_bonus_strict=True)
    reward, _ = play_box(rules, make_position(compile_rules(rules), card, [6, 6, 6, 1, 2]), "sixes")
    assert reward == 18  # 63 is not "higher than 63"
    rules = load_rules("dice_poker")
    reward, _ = play_box(rules, make_position(compile_rules(rules), card, [6, 6, 6, 1, 2]), "sixes")
    assert reward == 18 + 35


def test_bonus_reached_early_is_paid_once():
    rules = load_rules("yatzy")
    state = make_position(compile_rules(rules), {"sixes": 30, "fives": 25}, [4, 4, 1, 2, 3])
    reward, new = play_box(rules, state, "fours")
    assert reward == 8 + 50 and new.bonus == 50
    reward, new2 = play_box(rules, GameState_with_roll(new, [3, 3, 1, 2, 2]), "threes")
    assert reward == 6 and new2.bonus == 50


def GameState_with_roll(state, dice):
    from dice_poker_env.engine.combinatorics import roll_index

    return state._replace(roll=roll_index(dice), rolls_left=2)


# ------------------------------------------------------------- school_poker
def test_school_poker_sections_in_order_and_bonus_on_last_upper_box():
    rules = load_rules("school_poker")
    state = make_position(compile_rules(rules), {}, [1, 1, 1, 2, 3])
    assert legal_box_names(rules, state) == ["ones", "twos", "threes", "fours", "fives", "sixes"]
    card = {"ones": 2, "twos": 2, "threes": -3, "fours": 0, "fives": 0}
    reward, new = play_box(rules, make_position(compile_rules(rules), card, [6, 6, 6, 1, 2]), "sixes")
    assert (new.upper_total, reward, new.bonus) == (1, 0 + 50, 50)  # paid when the last upper box is filled
    reward, new = play_box(rules, make_position(compile_rules(rules), {"ones": 2}, [6, 6, 6, 1, 2]), "sixes")
    assert (new.upper_total, reward, new.bonus) == (2, 0, 0)  # not yet: more upper boxes to come


def test_school_poker_bonus_needs_total_zero_or_more():
    rules = load_rules("school_poker")
    card = {"ones": 0, "twos": 2, "threes": -3, "fours": 0, "fives": 0}
    reward, new = play_box(rules, make_position(compile_rules(rules), card, [6, 6, 6, 6, 2]), "sixes")
    assert (new.upper_total, reward, new.bonus) == (5, 6 + 50, 50)
    reward, new = play_box(rules, make_position(compile_rules(rules), card, [6, 6, 1, 1, 2]), "sixes")
    assert (new.upper_total, reward, new.bonus) == (-7, -6, 0)
    # exactly 0 is "zero or more": the bonus is paid (threshold 0, on_complete)
    even = {**card, "ones": 1}  # 1 + 2 - 3 + 0 + 0 = 0, and three sixes score 0
    reward, new = play_box(rules, make_position(compile_rules(rules), even, [6, 6, 6, 1, 2]), "sixes")
    assert (new.upper_total, reward, new.bonus) == (0, 0 + 50, 50)


def test_school_poker_lower_boxes_after_the_school():
    rules = load_rules("school_poker")
    card = {"ones": 0, "twos": 0, "threes": 0, "fours": 0, "fives": 0, "sixes": 0}
    state = make_position(compile_rules(rules), card, [5, 5, 2, 2, 1])
    assert len(legal_box_names(rules, state)) == 9
    reward, _ = play_box(rules, state, "two_pairs")
    assert reward == 2 * 14  # first roll of the turn: doubled
    reward, _ = play_box(rules, state._replace(rolls_left=1), "two_pairs")
    assert reward == 14


def test_turns_option_ends_the_game_early():
    rules = load_rules("dice_poker", turns=13)
    assert rules.turns == 13 and rules.n_boxes == 15
    card = {name: 0 for name in rules.box_names[:12]}
    state = make_position(compile_rules(rules), card, [1, 2, 3, 4, 6])
    _, new = play_box(rules, state, "chance")
    assert game.is_over(compile_rules(rules), new)
    assert not action_masks(compile_rules(rules)).of_game(new).any()


def test_scorecards_only_accept_reachable_points():
    from dice_poker_env import PositionError

    for ruleset, box, points in [
        ("yacht", "full_house", 25),
        ("yatzy", "two_pairs", 24),
        ("school_poker", "poker", 50),
    ]:
        rules = load_rules(ruleset)
        with pytest.raises(PositionError, match="can never hold"):
            make_position(compile_rules(rules), {box: points}, [1, 2, 3, 4, 6])
    rules = load_rules("yahtzee")  # a joker full house is reachable here
    make_position(compile_rules(rules), {"full_house": 25}, [1, 2, 3, 4, 6])
