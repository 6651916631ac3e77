"""docs/rules.md is the project's statement of the rules: its worked examples must
match the engine, and every expected value of the scoring tests must be stated there."""

import re
from pathlib import Path

import pytest
from test_scoring import CASES

from dice_poker_env import RULESET_NAMES, load_rules
from dice_poker_env.engine.tables import score

RULES_MD = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
DICE = r"\d(?:-\d){4}"


def _number(cell: str) -> int:
    """The points a cell states: the number after its last ``=``, parentheses aside."""
    text = re.sub(r"\([^()]*\)", "", cell).replace("×", "*")
    text = text.rsplit("=", 1)[-1].strip()
    return int(re.match(r"[+-]?\d+", text).group())


def parse_examples() -> list[tuple[str, tuple[int, ...], str, bool, int]]:
    """Every ``(ruleset, dice, box, first_roll, points)`` example of the rules' tables."""
    examples = []
    ruleset = None
    header = None
    for line in RULES_MD.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^## `(\w+)`", line)
        if heading:
            ruleset = heading.group(1)
            continue
        if line.startswith("## "):
            ruleset = None
            continue
        if ruleset is None or not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        if header[0] == "box":  # | `box` | dice needed | points | examples |
            box = cells[0].strip("`")
            for dice, points in re.findall(rf"({DICE}) = ([+-]?\d+)", cells[-1]):
                examples.append((ruleset, dice, box, False, int(points)))
            for dice, listing in re.findall(rf"({DICE}): ((?:`\w+` [+-]?\d+(?:, )?)+)", cells[-1]):
                for name, points in re.findall(r"`(\w+)` ([+-]?\d+)", listing):
                    examples.append((ruleset, dice, name, False, int(points)))
        elif header[0] in ("dice (box)", "first roll (box)"):  # | d-d-d-d-d (`box`) | ... = points |
            match = re.match(rf"({DICE}) \(`(\w+)`\)", cells[0])
            examples.append(
                (ruleset, match.group(1), match.group(2), header[0] == "first roll (box)", _number(cells[1]))
            )
    return [(r, tuple(int(d) for d in dice.split("-")), box, first, points) for r, dice, box, first, points in examples]


EXAMPLES = parse_examples()


def test_every_ruleset_has_worked_examples():
    found = {ruleset for ruleset, *_ in EXAMPLES}
    assert found == set(RULESET_NAMES)
    assert len(EXAMPLES) >= 80


@pytest.mark.parametrize("ruleset, dice, box, first_roll, points", EXAMPLES)
def test_worked_examples_of_the_rules_match_the_engine(ruleset, dice, box, first_roll, points):
    assert score(load_rules(ruleset), list(dice), box, first_roll=first_roll) == points


def test_every_scoring_test_value_is_stated_in_the_rules():
    stated = {(r, tuple(sorted(dice)), box, first): points for r, dice, box, first, points in EXAMPLES}
    missing = [case for case in CASES if (case[0], tuple(sorted(case[1])), case[2], case[3]) not in stated]
    assert not missing, f"scoring test cases without a worked example in docs/rules.md: {missing}"
    wrong = [case for case in CASES if stated[(case[0], tuple(sorted(case[1])), case[2], case[3])] != case[4]]
    assert not wrong


def test_every_box_and_option_is_documented():
    from dice_poker_env import ruleset_options

    text = RULES_MD.read_text(encoding="utf-8")
    for ruleset in RULESET_NAMES:
        section = text.split(f"## `{ruleset}`", 1)[1].split("\n## ", 1)[0]
        names = re.search(r"Box names: `([^`]+)`\.", section)
        assert names, ruleset
        listed = names.group(1).split()
        assert tuple(listed) == load_rules(ruleset).box_names
        for option, spec in ruleset_options(ruleset).items():
            assert f"| `{ruleset}` | `{option}` |" in text
            for value in spec["values"]:
                shown = f'"{value}"' if isinstance(value, str) else str(value).lower()
                assert f"`{shown}`" in text, (ruleset, option, value)


def test_no_pointer_outside_the_repository():
    root = Path(__file__).resolve().parents[1]
    offenders = []
    paths = [
        root / "README.md",
        *root.glob("docs/**/*.md"),
        *root.glob("docs/**/*.ipynb"),
        *root.glob("dice_poker_env/**/*.py"),
        *root.glob("agents/**/*.py"),
        *root.glob("tests/*.py"),
    ]
    for path in paths:
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        if "RULES.md" in text or "../shared" in text or "/work/shared" in text:
            offenders.append(str(path.relative_to(root)))
    assert not offenders, f"these files point outside the repository (the rules are docs/rules.md): {offenders}"
