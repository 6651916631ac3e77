"""Custom rulesets as data: files in TOML/YAML/JSON, options, and clear errors for bad files."""

import json
import os
import pickle

import numpy as np
import pytest

from dice_poker_env import RULESET_NAMES, RulesError, load_rules, ruleset_options
from dice_poker_env.engine.tables import compile_rules, score
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
    assert score(rules, [2, 2, 2, 5, 6], "trips") == 6 + 5
    assert score(rules, [4, 5, 6, 1, 1], "run") == 15
    assert score(rules, [1, 2, 3, 4, 5], "run") == 6  # best matching set: 1-2-3 (4-5-6 incomplete)
    assert score(rules, [3, 3, 3, 3, 3], "house") == 25  # five of a kind allowed here
    assert rules.upper_bonus.threshold == 12


def test_yaml_and_json_files(tmp_path):
    yaml = pytest.importorskip("yaml")
    spec = {"name": "tiny", "boxes": [{"name": "chance", "kind": "chance"}]}
    y = load_rules(write(tmp_path, "tiny.yaml", yaml.safe_dump(spec)))
    j = load_rules(write(tmp_path, "tiny.json", json.dumps(spec)))
    assert y == j and y.box_names == ("chance",)


def test_ruleset_names_are_the_shipped_files():
    from importlib import resources

    shipped = {
        p.name.removesuffix(".toml")
        for p in resources.files("dice_poker_env.rules").joinpath("data").iterdir()
        if p.name.endswith(".toml")
    }
    assert sorted(shipped) == sorted(RULESET_NAMES) and len(RULESET_NAMES) == len(shipped)


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
        (
            'name = "x"\nboxes = [{ name = "a", kind = "face_sum", face = 7 }]',
            "'boxes[0].face': expected an integer 1..6",
        ),
        ('name = "x"\nboxes = [{ name = "a", kind = "face_sum" }]', "missing required field 'boxes[0].face'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance", colour = 1 }]', "unknown field 'boxes[0].colour'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "n_of_a_kind", n = 3, points = "lots" }]', "'boxes[0].points'"),
        ('name = "x"\nboxes = [{ name = "a", kind = "straight", sets = [[0, 1]] }]', "'boxes[0].sets'"),
        ('name = "x"\nboxes = [{ name = "A b", kind = "chance" }]', "snake_case"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" }, { name = "a", kind = "chance" }]', "appears twice"),
        ('name = "x"\nturns = 5\nboxes = [{ name = "a", kind = "chance" }]', "field 'turns'"),
        (
            'name = "x"\nboxes = [{ name = "a", kind = "chance" }]\nfive_of_a_kind = { box = "a" }',
            "n_of_a_kind with n = 5",
        ),
        (
            'name = "x"\nboxes = [{ name = "a", kind = "chance" }]\nupper_bonus = { threshold = 1, points = 1 }',
            "no upper boxes",
        ),
        (
            'name = "x"\nboxes = [{ name = "a", kind = "relative_face", face = 1, base = 3 }]\n'
            "upper_bonus = { threshold = 0, points = 1 }",
            "on_complete",
        ),
        (  # a condition of a joker the rules do not have: it was silently ignored
            'name = "x"\nboxes = [{ name = "y", kind = "n_of_a_kind", n = 5, points = 50 }]\n'
            'five_of_a_kind = { box = "y", bonus = 100, joker_needs_full_box = true }',
            "'five_of_a_kind.joker_needs_full_box': a condition of the joker, but the rules have no joker",
        ),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" }]\nupper_bonus = 3', "'upper_bonus': expected Mapping"),
        ('name = "x"\nboxes = [{ name = "a", kind = "chance" ', "not a valid TOML file"),
        (  # a misspelt key: named as such, not only as the field that is missing
            'name = "x"\nboxes = [{ name = "ones", kind = "face_sum", face = 1 }]\n'
            "upper_bonus = { treshold = 3, points = 5 }",
            "missing required field 'upper_bonus.threshold' (is 'upper_bonus.treshold' a misspelling of it?)",
        ),
        (  # one turn fills one of the two upper boxes: at most 30, never 40
            'name = "x"\nturns = 1\nupper_bonus = { threshold = 40, points = 35 }\nboxes = [\n'
            '{ name = "fives", kind = "face_sum", face = 5 }, { name = "sixes", kind = "face_sum", face = 6 }]',
            "'upper_bonus.threshold': expected an integer in 1..30",
        ),
        (
            'name = "x"\nturns = 1\nupper_bonus = { threshold = 0, points = 35, timing = "on_complete" }\n'
            'boxes = [{ name = "fives", kind = "face_sum", face = 5 }, { name = "sixes", kind = "face_sum", face = 6 }]',
            "turns = 1 fill at most 1 of the 2 upper boxes",
        ),
    ],
)
def test_malformed_files_name_file_field_and_expectation(tmp_path, text, message):
    path = write(tmp_path, "bad.toml", text)
    with pytest.raises(RulesError) as error:
        compile_rules(load_rules(path))  # (the last case: compiling finds what needs the score tables)
    assert str(path) in str(error.value)
    assert message in str(error.value)


def test_every_option_value_is_checked_when_the_rules_load():
    """A typo in the patch of a value nobody chose yet is found at once, naming the option (it surfaced only when
    the value was chosen, as an error that did not say which option made it)."""
    spec = {
        "name": "t",
        "boxes": [{"name": "c", "kind": "chance"}, {"name": "y", "kind": "n_of_a_kind", "n": 5, "points": 50}],
        "options": {
            "big": {
                "doc": "x",
                "default": False,
                "values": {False: {"boxes.y.points": 50}, True: {"boxes.y.pionts": 100}},
            }
        },
    }
    with pytest.raises(RulesError, match=r"option 'big' = True: unknown field 'boxes\[1\].pionts'"):
        load_rules(spec)
    spec["options"]["big"]["values"][True] = {"boxes.y.points": "lots"}
    with pytest.raises(RulesError, match=r"option 'big' = True: field 'boxes\[1\].points'"):
        load_rules(spec)
    spec["options"]["big"]["values"][True] = {"boxes.y.points": 100}
    assert load_rules(spec, big=True).boxes[1].points == 100 and load_rules(spec).boxes[1].points == 50


def test_an_unknown_top_level_field_lists_every_known_one_and_the_likely_spelling(tmp_path):
    """A misspelt optional table (upper_bonuss) was refused with a list of known fields that left out
    upper_bonus, five_of_a_kind and options (only fields read so far were listed)."""
    path = write(tmp_path, "typo.toml", MINI.replace("upper_bonus =", "upper_bonuss ="))
    with pytest.raises(RulesError) as error:
        load_rules(path)
    message = str(error.value)
    assert message.startswith(f"{path}: unknown field 'upper_bonuss' (known: ")
    for field in ("upper_bonus", "five_of_a_kind", "options", "turns", "boxes"):
        assert f" {field}," in message or f" {field})" in message
    assert message.endswith("is it a misspelling of 'upper_bonus'?") and "\n" not in message
    with pytest.raises(RulesError, match=r"unknown field 'dice' \(known: .*upper_bonus\)$"):
        load_rules({"name": "x", "dice": 6, "boxes": [{"name": "c", "kind": "chance"}]})


def test_an_option_value_whose_upper_bonus_play_never_reaches_is_named_when_the_rules_compile():
    """An option value's threshold the upper boxes cannot total was found only when someone chose the value,
    as an error that did not name the option (its 'got 40' was nowhere in the file's upper_bonus)."""
    spec = {
        "name": "t",
        "boxes": [_face_box(6), {"name": "c", "kind": "chance"}],
        "upper_bonus": {"threshold": 20, "points": 5},
        "options": {
            "strict": {"default": False, "values": {False: {}, True: {"upper_bonus.threshold": 40}}},
            "joker": {"default": "x", "values": {"x": {}, "y": {"title": "T"}}},
        },
    }
    with pytest.raises(
        RulesError, match=r"^<mapping>: option 'strict' = True: field 'upper_bonus.threshold': .*got 40$"
    ):
        compile_rules(load_rules(spec))
    with pytest.raises(
        RulesError, match=r"^<mapping>: with option strict = True, joker = 'y': field 'upper_bonus.threshold'"
    ):
        compile_rules(load_rules(spec, strict=True, joker="y"))
    spec["options"]["strict"]["values"][True] = {"upper_bonus.threshold": 30}
    assert compile_rules(load_rules(spec, strict=True)).upper_bonus_threshold == 30
    assert compile_rules(load_rules(spec)).upper_bonus_threshold == 20


def test_a_yaml_syntax_error_is_one_line(tmp_path):
    pytest.importorskip("yaml")
    path = write(tmp_path, "bad.yaml", "name: x\nboxes: [ {name: c, kind: chance\n")
    with pytest.raises(RulesError) as error:
        load_rules(path)
    assert "not a valid YAML file" in str(error.value) and "line 3" in str(error.value)
    assert len(str(error.value).splitlines()) == 1


def test_unknown_ruleset_file_type_and_missing_file(tmp_path):
    with pytest.raises(RulesError, match="unknown ruleset 'yahtzeee' \\(did you mean 'yahtzee'\\?\\): use one of"):
        load_rules("yahtzeee")
    for given, meant in (("Yacht", "yacht"), ("Dice Poker", "dice_poker"), ("school-poker", "school_poker")):
        with pytest.raises(RulesError, match=f"did you mean '{meant}'"):
            load_rules(given)
    with pytest.raises(RulesError, match="^unknown ruleset 'chess': use one of"):  # nothing near: no guess
        load_rules("chess")
    with pytest.raises(RulesError, match="no such rules file"):
        load_rules(tmp_path / "missing.toml")
    with pytest.raises(RulesError, match="unsupported rules file type '.txt'"):
        load_rules(write(tmp_path, "rules.txt", "x"))


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(RulesError, match=r"unknown rules option 'jokers'.*joker \('forced', 'free', 'none'\)"):
        load_rules("yahtzee", jokers="free")
    with pytest.raises(RulesError, match="must be one of"):
        load_rules("dice_poker", turns=14)


def test_build_rules_from_mapping():
    rules = build_rules({"name": "m", "boxes": [{"name": "c", "kind": "chance"}]})
    assert rules.turns == 1 and score(rules, [1, 1, 1, 1, 2], "c") == 6


# ------------------------------------------------------------ issue 11: bad input
def _face_box(face: int = 1, **extra) -> dict:
    return {"name": f"f{face}", "kind": "face_sum", "face": face, **extra}


@pytest.mark.parametrize(
    "bonus, message",
    [
        ({"threshold": 0, "points": 5}, r"'upper_bonus.threshold': expected an integer in 1..5 "),
        ({"threshold": -3, "points": 5}, r"'upper_bonus.threshold': expected an integer in 1..5 "),
        ({"threshold": 6, "points": 5}, r"'upper_bonus.threshold': expected an integer in 1..5 "),
        ({"threshold": 10**30, "points": 5}, r"'upper_bonus.threshold': expected an integer in 1..5 "),
        (
            {"threshold": -1, "points": 5, "timing": "on_complete"},
            r"expected an integer in 0..5 \(the upper boxes total 0..5\)",
        ),
        ({"threshold": 3, "points": -5}, r"'upper_bonus.points': expected an integer in 0..1000000"),
    ],
)
def test_upper_bonus_threshold_must_be_a_total_play_reaches(bonus, message):
    """Issue 11 item 4: an on_reach threshold <= 0 is met before any play; the env never paid it
    while the solver counted it as earned. Now compiling the rules rejects it (and any threshold
    outside the totals the upper boxes reach), so env and solver always agree: every front end
    compiles the rules on construction."""
    from dice_poker_env.envs import DicePokerEnv

    spec = {"name": "b", "boxes": [_face_box(1), {"name": "c", "kind": "chance"}], "upper_bonus": bonus}
    with pytest.raises(RulesError, match=message):
        compile_rules(build_rules(spec))
    with pytest.raises(RulesError, match=message):
        DicePokerEnv(spec)


def test_on_complete_bonus_with_threshold_at_or_below_zero_is_paid_at_completion_by_env_and_solver(
    tmp_path, monkeypatch
):
    """A threshold at the least upper total is always met: paid in the step that fills the last
    upper box, by the env, the position builder and the solver alike."""
    from dice_poker_env.engine.position import make_position
    from dice_poker_env.envs import DicePokerEnv
    from dice_poker_env.solver import solve

    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path))
    spec = {
        "name": "always",
        "boxes": [{"name": "low", "kind": "relative_face", "face": 2, "base": 1}, {"name": "c", "kind": "chance"}],
        "upper_bonus": {"threshold": -2, "points": 10, "timing": "on_complete"},
    }
    rules = build_rules(spec)
    env = DicePokerEnv(rules)
    obs, info = env.reset(seed=0, options={"dice": [1, 1, 1, 1, 1], "rolls_left": 0})
    _, reward, *_ = env.step(32)  # no twos: (0 - 1) * 2 = -2, the last upper box: the bonus is paid now
    assert reward == -2 + 10
    assert make_position(compile_rules(rules), {"low": -2}, [1, 2, 3, 4, 5]).bonus == 10
    assert make_position(compile_rules(rules), {"c": 15}, [1, 2, 3, 4, 5]).bonus == 0
    solution = solve(rules, progress=False, workers=1)
    low_alone = solve(build_rules({"name": "low_alone", "boxes": spec["boxes"][:1]}), progress=False, workers=1)
    # the bonus is counted once: secured after the upper box, still to come before it
    assert solution.state_value({"low": -2}) == pytest.approx(-2 + 10 + 23.33, abs=0.01)  # chance alone: 23.33
    assert solution.state_value({"c": 15}) == pytest.approx(15 + low_alone.expected_score + 10, abs=1e-6)
    with pytest.raises(RulesError, match="expected an integer in 1..10"):  # on_reach: 0 or less is rejected
        compile_rules(
            build_rules(
                {**spec, "boxes": [_face_box(2), spec["boxes"][1]], "upper_bonus": {"threshold": 0, "points": 10}}
            )
        )


def test_on_reach_needs_upper_boxes_that_never_score_negative():
    """Not only relative_face: any upper box that can score negative (here fixed points -5)."""
    boxes = [_face_box(1), {"name": "neg", "kind": "n_of_a_kind", "n": 2, "points": -5, "section": "upper"}]
    with pytest.raises(RulesError, match=r"'upper_bonus.timing': expected 'on_complete'"):
        compile_rules(build_rules({"name": "n", "boxes": boxes, "upper_bonus": {"threshold": 3, "points": 5}}))
    tables = compile_rules(
        build_rules(
            {"name": "n", "boxes": boxes, "upper_bonus": {"threshold": 3, "points": 5, "timing": "on_complete"}}
        )
    )
    assert tables.upper_bonus_on_complete and tables.min_upper_total == -5


@pytest.mark.parametrize("value", [10**9, -(10**9), 10**20, 2**63 - 1, -(2**63)])
@pytest.mark.parametrize(
    "make",
    [
        lambda v: {"boxes": [{"name": "a", "kind": "n_of_a_kind", "n": 2, "points": v}]},
        lambda v: {"boxes": [{"name": "a", "kind": "straight", "sets": [[1, 2]], "extra": v}]},
        lambda v: {"boxes": [{"name": "a", "kind": "relative_face", "face": 6, "base": v}]},
        lambda v: {"boxes": [_face_box(1)], "upper_bonus": {"threshold": 1, "points": v}},
        lambda v: {"boxes": [{"name": "y", "kind": "n_of_a_kind", "n": 5}], "five_of_a_kind": {"box": "y", "bonus": v}},
    ],
    ids=["points", "extra", "base", "upper_bonus.points", "five_of_a_kind.bonus"],
)
def test_points_outside_the_supported_range_are_rejected_when_the_rules_load(make, value):
    """Issue 11 item 7: 10**9 lost precision in state_value, 10**20 overflowed inside gymnasium."""
    with pytest.raises(RulesError, match=r"expected an integer in -?\d+..1000000 \(the supported range\)"):
        build_rules({"name": "huge", **make(value)})


def test_points_at_the_supported_limit_load_and_stay_exact():
    from dice_poker_env.rules.spec import POINTS_LIMIT

    rules = build_rules(
        {
            "name": "edge",
            "boxes": [
                {
                    "name": "a",
                    "kind": "n_of_a_kind",
                    "n": 2,
                    "points": POINTS_LIMIT,
                    "extra": POINTS_LIMIT,
                    "first_roll_double": True,
                },
                {"name": "b", "kind": "relative_face", "face": 6, "base": -POINTS_LIMIT},
            ],
            "double_extra": True,
        }
    )
    tables = compile_rules(rules)
    assert tables.max_box_score == 6 * (POINTS_LIMIT + 5) and tables.max_total == 4 * POINTS_LIMIT + 6 * (
        POINTS_LIMIT + 5
    )
    assert tables.max_total < 2**31 and float(tables.max_total) == tables.max_total


def test_a_directory_or_a_special_file_is_not_a_rules_file(tmp_path):
    (tmp_path / "x.toml").mkdir()
    with pytest.raises(RulesError, match="is a directory, not a rules file"):
        load_rules(tmp_path / "x.toml")
    with pytest.raises(RulesError, match="is a directory, not a rules file"):
        load_rules(str(tmp_path / "x.toml"))
    if hasattr(os, "mkfifo"):  # a FIFO is refused without being opened (which would block)
        os.mkfifo(tmp_path / "fifo.toml")
        with pytest.raises(RulesError, match="not a regular file"):
            load_rules(tmp_path / "fifo.toml")


def test_a_rules_file_of_another_type_is_unsupported_not_an_unknown_ruleset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "rules.txt", "x")
    for given in ("rules.txt", tmp_path / "rules.txt", "missing.txt"):
        with pytest.raises(RulesError, match="unsupported rules file type '.txt'|no such rules file"):
            load_rules(given)
    with pytest.raises(RulesError, match=r"rules.txt: unsupported rules file type '.txt' \(use .toml"):
        load_rules("rules.txt")


@pytest.mark.parametrize("rules", [None, 123, 1.5, b"yacht", ["yacht"]])
def test_rules_of_the_wrong_type_name_what_is_expected(rules):
    with pytest.raises(
        RulesError,
        match=r"rules: expected a ruleset name \(yacht, .*\), a rules-file path, a Rules object or a mapping",
    ):
        load_rules(rules)


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"boxes.s.sets.x": 1}, r"patches 'boxes.s.sets.x', but 'boxes.s.sets' is a list"),
        ({"boxes.s.sets.x.y": 1}, r"patches 'boxes.s.sets.x.y', but 'boxes.s.sets' is a list"),
        ({"turns.x": 1}, r"patches 'turns.x', but 'turns' is not a table"),
        ({"boxes.nope.points": 1}, "there is no box 'nope'"),
        ({"boxes.s": {}}, r"patches 'boxes.s', but 'boxes' is a list"),
    ],
)
def test_option_patches_into_lists_and_scalars_are_rules_errors(patch, message):
    spec = {
        "name": "m",
        "turns": 1,
        "boxes": [{"name": "s", "kind": "straight", "sets": [[1, 2, 3]]}],
        "options": {"o": {"default": False, "values": {"false": {}, "true": patch}}},
    }
    with pytest.raises(RulesError, match=message):
        load_rules(spec, o=True)


@pytest.mark.parametrize("box", [True, 1.5, "1"])
def test_box_index_takes_a_name_or_an_integer(box):
    rules = load_rules("yacht")
    with pytest.raises((TypeError, KeyError)):
        score(rules, [1, 1, 1, 1, 1], box)


@pytest.mark.parametrize(
    "dice", [[1.5, 2, 3, 4, 5], [True, 2, 3, 4, 5], "12345", ["1", "2", "3", "4", "5"], [0, 1, 2, 3, 4]]
)
def test_rules_score_rejects_dice_that_are_not_five_faces(dice):
    with pytest.raises(ValueError, match="dice must be 5 integers in 1..6"):
        score(load_rules("yacht"), dice, "choice")


def test_points_at_the_supported_limit_solve_with_relative_precision(tmp_path, monkeypatch):
    """Scaling every box's points by the limit scales every value (same policy): the solver keeps
    its relative precision at the limit (docs/rules-format.md, "Supported range")."""
    from dice_poker_env.envs import DicePokerEnv
    from dice_poker_env.rules.spec import POINTS_LIMIT
    from dice_poker_env.solver import solve

    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path))

    def scaled(points):
        return build_rules(
            {
                "name": f"scaled_{points}",
                "boxes": [
                    {"name": "trips", "kind": "n_of_a_kind", "n": 3, "points": points},
                    {"name": "run", "kind": "straight", "sets": [[1, 2, 3, 4]], "points": points},
                    {"name": "house", "kind": "full_house", "points": points, "first_roll_double": True},
                    {"name": "five", "kind": "n_of_a_kind", "n": 5, "points": points},
                ],
            }
        )

    one, big = (solve(scaled(p), progress=False, workers=1) for p in (1, POINTS_LIMIT))
    assert big.expected_score == pytest.approx(POINTS_LIMIT * one.expected_score, rel=1e-6)
    obs, _ = DicePokerEnv(scaled(1)).reset(seed=1)
    q_one, q_big = one.action_values(obs), big.action_values(obs)
    legal = np.isfinite(q_one)
    np.testing.assert_array_equal(legal, np.isfinite(q_big))
    np.testing.assert_allclose(q_big[legal], POINTS_LIMIT * q_one[legal], rtol=1e-6)


def test_a_forced_joker_scores_matching_boxes_as_docs_rules_format_says():
    """docs/rules-format.md: under the joker a "matching" straight scores the largest sum of its sets and a
    "matching" two_pairs four times the face (the doc named only fixed values and "sum" boxes)."""
    import gymnasium as gym

    import dice_poker_env  # noqa: F401  (registers the envs)

    spec = {
        "name": "j",
        "boxes": [
            _face_box(6),
            {"name": "run", "kind": "straight", "sets": [[1, 2, 3], [3, 4, 5]], "points": "matching"},
            {"name": "pairs", "kind": "two_pairs", "points": "matching"},
            {"name": "yam", "kind": "n_of_a_kind", "n": 5, "points": 50},
        ],
        "five_of_a_kind": {"box": "yam", "bonus": 100, "joker": "forced"},
    }
    env = gym.make("DicePoker/Custom-v0", rules=spec)
    for box, points in (("run", 12 + 100), ("pairs", 24 + 100)):
        env.reset(options={"scorecard": {"yam": 50, "f6": 18}, "dice": [6] * 5, "rolls_left": 0})
        assert env.step(32 + env.unwrapped.rules.box_index(box))[1] == points
    assert score(load_rules(spec), [6] * 5, "run") == 0  # outside the joker: no set of the straight
