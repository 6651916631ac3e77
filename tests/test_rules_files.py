"""Custom rulesets as data: files in TOML/YAML/JSON, options, and clear errors for bad files."""

import json
import pickle

import pytest

from dice_poker_env import RULESET_NAMES, RulesError, load_rules, ruleset_options
from dice_poker_env.rules import build_rules

MINI = """
name = "mini"
title = "Mini"
boxes = [
  { name = "sixes", kind = "face_sum", face = 6 },
  { name = "trips", kind = "n_of_a_kind", n = 3, points = "matching", extra = 5 },
  { name = "run", kind = "straight", sets = [[1, 2, 3], [4, 5, 6]], points = "matching" },
  { name = "house", kind = "full_house", points = 25, allow_five_of_a_kind = true },
  { name = "chance", kind = "chance" },
]
upper_bonus = { threshold = 12, points = 10 }
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_custom_toml_file_composes_primitives(tmp_path):
    rules = load_rules(write(tmp_path, "mini.toml", MINI))
    assert rules.name == "mini" and rules.box_names == ("sixes", "trips", "run", "house", "chance")
    assert rules.score([2, 2, 2, 5, 6], "trips") == 6 + 5
    assert rules.score([4, 5, 6, 1, 1], "run") == 15
    assert rules.score([1, 2, 3, 4, 5], "run") == 6  # best matching set: 1-2-3 (4-5-6 incomplete)
    assert rules.score([3, 3, 3, 3, 3], "house") == 25  # five of a kind allowed here
    assert rules.upper_bonus.threshold == 12


def test_yaml_and_json_files(tmp_path):
    yaml = pytest.importorskip("yaml")
    spec = {"name": "tiny", "boxes": [{"name": "chance", "kind": "chance"}]}
    y = load_rules(write(tmp_path, "tiny.yaml", yaml.safe_dump(spec)))
    j = load_rules(write(tmp_path, "tiny.json", json.dumps(spec)))
    assert y == j and y.box_names == ("chance",)


@pytest.mark.parametrize("name", RULESET_NAMES)
def test_shipped_rulesets_are_files_of_the_same_format(name):
    from importlib import resources

    path = resources.files("dice_poker_env.rules").joinpath("data", f"{name}.toml")
    assert load_rules(str(path)) == load_rules(name)


def test_options_listed_and_switchable():
    options = ruleset_options("yahtzee")
    assert options["joker"]["default"] == "forced" and options["joker"]["values"] == ["forced", "free", "none"]
    assert load_rules("yahtzee", joker="none").five_of_a_kind.bonus == 0
    assert set(ruleset_options("dice_poker")) == {"upper_bonus_strict", "turns"}
    assert set(ruleset_options("school_poker")) == {"double_poker_extra"}


def test_rules_pickle_and_hash_by_content():
    rules = load_rules("yahtzee", joker="free")
    clone = pickle.loads(pickle.dumps(rules))
    assert clone == rules and hash(clone) == hash(rules) and clone.options == {"joker": "free"}
    assert load_rules("yahtzee") != rules
    assert load_rules(rules, joker="none").options == {"joker": "none"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("boxes = []", "missing required field 'name'"),
        ('name = "x"', "missing required field 'boxes'"),
        ('name = "x"\nboxes = []', "field 'boxes': expected at least one box"),
        ('name = "x"\nboxes = [{ name = "a", kind = "pair" }]', "field 'boxes[0].kind': expected one of face_sum"),
        ('name = "x"\nboxes = [{ name = "a", kind = "face_sum", face = 7 }]', "'boxes[0].face': expected an integer 1..6"),
        ('name = "x"\nboxes = [{ name = "a", kind = "face_sum" }]', "missing required field 'boxes[0].face'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance", colour = 1 }]', "unknown field 'boxes[0].colour'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "n_of_a_kind", n = 3, points = "lots" }]', "'boxes[0].points'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "straight", sets = [[0, 1]] }]', "'boxes[0].sets'"),
        ('name = "x"\nboxes = [{ name = "A b", kind = "chance" }]', "snake_case"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" }, { name = "a", kind = "chance" }]', "appears twice"),
        ('name = "x"\nturns = 5\nboxes = [{ name = "a", kind = "chance" }]', "field 'turns'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" }]\nfive_of_a_kind = { box = "a" }', "n_of_a_kind with n = 5"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" }]\nupper_bonus = { threshold = 1, points = 1 }', "no upper boxes"),
        (
            'name = "x"\nboxes = [{ name = "a", kind = "relative_face", face = 1, base = 3 }]\n'
            "upper_bonus = { threshold = 0, points = 1 }",
            "on_complete",
        ),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" }]\nupper_bonus = 3', "'upper_bonus': expected Mapping"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" ', "not a valid TOML file"),
    ],
)
def test_malformed_files_name_file_field_and_expectation(tmp_path, text, message):
    path = write(tmp_path, "bad.toml", text)
    with pytest.raises(RulesError) as error:
        load_rules(path)
    assert str(path) in str(error.value)
    assert message in str(error.value)


def test_unknown_ruleset_file_type_and_missing_file(tmp_path):
    with pytest.raises(RulesError, match="unknown ruleset 'yahtzeee'"):
        load_rules("yahtzeee")
    with pytest.raises(RulesError, match="no such rules file"):
        load_rules(tmp_path / "missing.toml")
    with pytest.raises(RulesError, match="unknown rules file type"):
        load_rules(write(tmp_path, "rules.txt", "x"))


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(RulesError, match=r"unknown rules option 'jokers'.*joker \('forced', 'free', 'none'\)"):
        load_rules("yahtzee", jokers="free")
    with pytest.raises(RulesError, match="must be one of"):
        load_rules("dice_poker", turns=14)


def test_build_rules_from_mapping():
    rules = build_rules({"name": "m", "boxes": [{"name": "c", "kind": "chance"}]})
    assert rules.turns == 1 and rules.score([1, 1, 1, 1, 2], "c") == 6
