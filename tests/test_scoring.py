"""Table-driven scoring tests: every worked example of docs/rules.md, plus edge cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_rules import NAIVE

from dice_poker_env import load_rules
from dice_poker_env.engine.tables import compile_rules, score

# (ruleset, dice, box, first_roll, expected). Comments name the source.
CASES = [
    # --- yacht: worked examples of the original rule text (docs/rules.md)
    ("yacht", [4, 4, 4, 4, 1], "four_of_a_kind", False, 17),
    ("yacht", [6, 6, 6, 6, 6], "four_of_a_kind", False, 30),
    ("yacht", [3, 3, 3, 6, 6], "full_house", False, 21),
    # yacht edge cases
    ("yacht", [5, 5, 5, 5, 5], "full_house", False, 0),  # five of a kind is not a full house
    ("yacht", [5, 5, 5, 5, 5], "yacht", False, 50),
    ("yacht", [1, 2, 3, 4, 5], "little_straight", False, 30),
    ("yacht", [1, 2, 3, 4, 5], "big_straight", False, 0),
    ("yacht", [2, 3, 4, 5, 6], "big_straight", False, 30),
    ("yacht", [1, 2, 3, 4, 4], "little_straight", False, 0),
    ("yacht", [4, 4, 4, 1, 1], "full_house", False, 14),
    ("yacht", [4, 4, 4, 1, 2], "four_of_a_kind", False, 0),
    ("yacht", [2, 3, 5, 6, 6], "choice", False, 22),
    ("yacht", [6, 6, 1, 2, 6], "sixes", False, 18),
    ("yacht", [6, 6, 1, 2, 6], "ones", False, 1),
    ("yacht", [6, 6, 1, 2, 6], "fours", False, 0),
    # --- dice_poker: worked examples of the original rule text (docs/rules.md)
    ("dice_poker", [5, 5, 3, 2, 1], "pair", False, 16),
    ("dice_poker", [2, 2, 5, 5, 1], "two_pair", False, 15),
    ("dice_poker", [5, 5, 5, 2, 5], "three_of_a_kind", False, 22),  # seed says 21: an arithmetic slip
    ("dice_poker", [1, 1, 1, 1, 3], "four_of_a_kind", False, 7),
    ("dice_poker", [2, 2, 2, 3, 3], "full_house", False, 25),
    ("dice_poker", [2, 3, 4, 5, 5], "small_straight", False, 30),
    ("dice_poker", [2, 3, 4, 5, 6], "large_straight", False, 40),
    ("dice_poker", [3, 3, 3, 3, 3], "poker", False, 50),
    ("dice_poker", [2, 3, 5, 6, 6], "chance", False, 22),
    # dice_poker edge cases
    ("dice_poker", [4, 4, 4, 4, 2], "two_pair", False, 0),  # four of a kind is one face, not two pairs
    ("dice_poker", [4, 4, 4, 2, 2], "two_pair", False, 16),  # a full house holds two pairs
    ("dice_poker", [3, 3, 3, 3, 3], "full_house", False, 0),  # five of a kind scores 0 as full house
    ("dice_poker", [3, 3, 3, 3, 3], "two_pair", False, 0),
    ("dice_poker", [3, 3, 3, 3, 3], "four_of_a_kind", False, 15),
    ("dice_poker", [1, 2, 3, 4, 6], "small_straight", False, 30),
    ("dice_poker", [1, 2, 3, 4, 6], "large_straight", False, 0),
    ("dice_poker", [1, 3, 4, 5, 6], "small_straight", False, 30),
    ("dice_poker", [1, 2, 4, 5, 6], "small_straight", False, 0),
    ("dice_poker", [1, 2, 3, 4, 5], "large_straight", False, 40),
    ("dice_poker", [1, 2, 3, 4, 5], "pair", False, 0),
    ("dice_poker", [6, 6, 6, 6, 5], "sixes", False, 24),
    # --- school_poker: worked examples of the original rule text (docs/rules.md)
    ("school_poker", [1, 3, 5, 4, 6], "chance", False, 19),
    ("school_poker", [3, 3, 1, 5, 6], "pair", False, 6),  # pair of threes = 6
    ("school_poker", [6, 6, 6, 6, 6], "sixes", False, 12),  # five sixes: (5 - 3) * 6; the rule text's 10 contradicts it
    # school_poker relative upper scores
    ("school_poker", [5, 1, 2, 3, 4], "fives", False, -10),  # one five: -10
    ("school_poker", [1, 1, 2, 3, 4], "fives", False, -15),  # no five: -15
    ("school_poker", [6, 6, 6, 6, 1], "sixes", False, 6),  # four sixes: +6
    ("school_poker", [2, 2, 2, 1, 1], "twos", False, 0),  # exactly three: 0
    ("school_poker", [2, 2, 2, 1, 1], "twos", True, 0),  # no doubling in part one
    # school_poker lower boxes: sum of the dice forming the combination
    ("school_poker", [6, 6, 5, 5, 1], "pair", False, 12),  # best pair
    ("school_poker", [6, 6, 5, 5, 1], "two_pairs", False, 22),
    ("school_poker", [6, 6, 6, 6, 1], "two_pairs", False, 0),
    ("school_poker", [4, 4, 4, 2, 1], "three_of_a_kind", False, 12),
    ("school_poker", [4, 4, 4, 4, 1], "three_of_a_kind", False, 12),
    ("school_poker", [4, 4, 4, 4, 1], "four_of_a_kind", False, 16),
    ("school_poker", [1, 2, 3, 4, 5], "small_straight", False, 15),
    ("school_poker", [2, 3, 4, 5, 6], "large_straight", False, 20),
    ("school_poker", [1, 2, 3, 4, 6], "small_straight", False, 0),
    ("school_poker", [5, 5, 5, 2, 2], "full_house", False, 19),
    ("school_poker", [5, 5, 5, 5, 5], "full_house", False, 0),
    ("school_poker", [3, 3, 3, 3, 3], "poker", False, 65),  # 5f + 50
    # first-roll doubling (plain score doubled; the Poker's +50 is not)
    ("school_poker", [6, 6, 5, 5, 1], "pair", True, 24),
    ("school_poker", [5, 5, 5, 2, 2], "full_house", True, 38),
    ("school_poker", [1, 2, 3, 4, 5], "small_straight", True, 30),
    ("school_poker", [3, 3, 3, 3, 3], "poker", True, 80),  # 2 * 15 + 50
    ("school_poker", [1, 2, 3, 4, 6], "pair", True, 0),  # no pattern, nothing to double
    ("school_poker", [1, 3, 5, 4, 6], "chance", True, 19),  # chance never doubles
    # --- yahtzee
    ("yahtzee", [3, 3, 3, 2, 2], "full_house", False, 25),
    ("yahtzee", [3, 3, 3, 3, 3], "full_house", False, 0),  # outside the joker: 0
    ("yahtzee", [3, 3, 3, 3, 3], "yahtzee", False, 50),
    ("yahtzee", [3, 3, 3, 4, 1], "three_of_a_kind", False, 14),
    ("yahtzee", [3, 3, 3, 4, 1], "four_of_a_kind", False, 0),
    ("yahtzee", [1, 3, 4, 5, 6], "small_straight", False, 30),
    ("yahtzee", [1, 3, 4, 5, 6], "large_straight", False, 0),
    ("yahtzee", [6, 5, 4, 3, 2], "large_straight", False, 40),
    ("yahtzee", [6, 5, 4, 3, 2], "chance", False, 20),
    # --- yatzy
    ("yatzy", [6, 6, 4, 4, 1], "one_pair", False, 12),
    ("yatzy", [6, 6, 4, 4, 1], "two_pairs", False, 20),
    ("yatzy", [6, 6, 6, 6, 1], "two_pairs", False, 0),  # two different faces needed
    ("yatzy", [6, 6, 6, 4, 4], "two_pairs", False, 20),
    ("yatzy", [5, 5, 5, 5, 2], "three_of_a_kind", False, 15),
    ("yatzy", [5, 5, 5, 5, 2], "four_of_a_kind", False, 20),
    ("yatzy", [1, 2, 3, 4, 5], "small_straight", False, 15),
    ("yatzy", [2, 3, 4, 5, 6], "large_straight", False, 20),
    ("yatzy", [2, 3, 4, 5, 6], "small_straight", False, 0),
    ("yatzy", [2, 2, 2, 6, 6], "full_house", False, 18),
    ("yatzy", [2, 2, 2, 2, 2], "full_house", False, 0),
    ("yatzy", [2, 2, 2, 2, 2], "yatzy", False, 50),
    ("yatzy", [2, 2, 2, 2, 2], "chance", False, 10),
]


@pytest.mark.parametrize("ruleset, dice, box, first_roll, expected", CASES)
def test_worked_examples_and_edge_cases(ruleset, dice, box, first_roll, expected):
    assert score(load_rules(ruleset), dice, box, first_roll=first_roll) == expected


BOX_NAMES = {
    "yacht": "ones twos threes fours fives sixes full_house four_of_a_kind little_straight big_straight choice yacht",
    "dice_poker": "aces twos threes fours fives sixes pair two_pair three_of_a_kind four_of_a_kind full_house "
    "small_straight large_straight poker chance",
    "school_poker": "ones twos threes fours fives sixes pair two_pairs three_of_a_kind small_straight large_straight "
    "full_house four_of_a_kind poker chance",
    "yahtzee": "aces twos threes fours fives sixes three_of_a_kind four_of_a_kind full_house small_straight "
    "large_straight yahtzee chance",
    "yatzy": "ones twos threes fours fives sixes one_pair two_pairs three_of_a_kind four_of_a_kind small_straight "
    "large_straight full_house chance yatzy",
}


@pytest.mark.parametrize("ruleset", list(BOX_NAMES))
def test_box_names_follow_rules_md(ruleset):
    assert load_rules(ruleset).box_names == tuple(BOX_NAMES[ruleset].split())


dice_strategy = st.lists(st.integers(1, 6), min_size=5, max_size=5)


@settings(max_examples=300, deadline=None)
@given(dice=dice_strategy, ruleset=st.sampled_from(sorted(NAIVE)), first_roll=st.booleans())
def test_score_table_matches_naive_implementation(dice, ruleset, first_roll):
    rules = load_rules(ruleset)
    for box in rules.box_names:
        if ruleset == "school_poker":
            expected = NAIVE[ruleset](dice, box, first_roll)
        else:
            expected = NAIVE[ruleset](dice, box)
        assert score(rules, dice, box, first_roll=first_roll) == expected, (dice, box, first_roll)


def test_every_roll_matches_naive_implementation():
    """Exhaustive over the 252 rolls too (cheap, and hypothesis may not hit every roll)."""
    from dice_poker_env.engine.combinatorics import ROLL_DICE

    for ruleset, naive in NAIVE.items():
        tables = compile_rules(load_rules(ruleset))
        for r, dice in enumerate(ROLL_DICE.tolist()):
            for k, box in enumerate(tables.rules.box_names):
                assert tables.score[r, k] == (
                    naive(dice, box) if ruleset != "school_poker" else naive(dice, box, False)
                )
                if ruleset == "school_poker":
                    assert tables.score_first_roll[r, k] == naive(dice, box, True)


def test_score_accepts_dice_in_any_order_and_rejects_bad_dice():
    rules = load_rules("yacht")
    assert score(rules, [1, 4, 4, 4, 4], "four_of_a_kind") == score(rules, [4, 4, 1, 4, 4], 7) == 17
    with pytest.raises(ValueError, match="dice"):
        score(rules, [1, 2, 3, 4, 7], "choice")
    with pytest.raises(ValueError, match="dice"):
        score(rules, [1, 2, 3, 4], "choice")
    with pytest.raises(KeyError, match="no box 'yahtzee'"):
        score(rules, [1, 2, 3, 4, 5], "yahtzee")


def test_upper_bonus_strict_option_changes_threshold():
    assert load_rules("dice_poker").upper_bonus.threshold == 63
    assert load_rules("dice_poker", upper_bonus_strict=True).upper_bonus.threshold == 64


def test_school_poker_extra_doubling_option():
    rules = load_rules("school_poker", double_poker_extra=True)
    assert score(rules, [3, 3, 3, 3, 3], "poker", first_roll=True) == 130
    assert score(rules, [3, 3, 3, 3, 3], "poker", first_roll=False) == 65


def test_tables_are_read_only_lookups_of_the_right_shape():
    tables = compile_rules(load_rules("yatzy"))
    assert tables.score.shape == (252, 15)
    assert np.array_equal(tables.score, tables.score_first_roll)  # no doubling in yatzy


def test_full_house_allowing_five_of_a_kind_is_still_not_four_of_a_kind():
    """``allow_five_of_a_kind`` (docs/rules-format.md) adds five of a kind to the full house's patterns and
    nothing else: four of a kind plus another die is neither three and two nor five of a kind, so it scores 0."""
    rules = load_rules(
        {
            "name": "house_or_five",
            "boxes": [
                {"name": "house", "kind": "full_house", "points": 25, "allow_five_of_a_kind": True},
                {"name": "chance", "kind": "chance"},
            ],
        }
    )
    assert score(rules, [3, 3, 3, 3, 3], "house") == 25  # five of a kind: allowed
    assert score(rules, [3, 3, 3, 5, 5], "house") == 25  # three and two
    assert score(rules, [3, 3, 3, 3, 5], "house") == 0  # four and one: not a full house
    assert score(rules, [6, 6, 6, 6, 1], "house") == 0
