"""Grading a class (``python -m agents.commands.grade FOLDER --out DIR``): the references played once,
every student graded as the single grade grades them, the gradebook, the rubric's points, Gradescope's
results and the class page."""

from __future__ import annotations

import csv
import html
import html.parser
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest

from agents.course import grader
from agents.course.classroom import find_agent_class, find_class, find_submissions, grade_class
from agents.course.gradebook import _cell, gradebook_csv, write_class
from agents.course.rubric import curve_fraction, failed_games, parse_rubric, score_report
from agents.course.sandbox import Limits, isolation_problem

ROOT = Path(__file__).resolve().parents[1]
ISOLATED = isolation_problem() is None
UNISOLATED = [] if ISOLATED else ["--unisolated"]
GAMES = 6
SEED = 5
FAST = Limits(decision_seconds=20, game_seconds=120, load_seconds=120, max_failures=3)
SCRIPT_NAME = "<script>alert(1)<script>"

#: plays like the greedy agent without rerolling (one of the example class)
GOOD = (ROOT / "examples" / "course" / "instructor" / "class_example" / "curie.py").read_text()

STUDENTS = {
    "good": GOOD,
    SCRIPT_NAME: GOOD,
    "weak": """
import numpy as np


class Weak:
    def act(self, observation, action_mask):
        return 32 + int(np.flatnonzero(action_mask[32:])[0])  # the first open box, whatever the dice
""",
    "illegal": """
class Illegal:
    def act(self, observation, action_mask):
        return 31  # keep all five dice: never legal
""",
    "two": GOOD + "\n\nclass Other(Agent):\n    def act(self, observation, action_mask):\n        return 32\n",
}

RUBRIC = {
    "title": "test rubric",
    "criterion": [
        {"name": "legal play", "kind": "legal_play", "points": 10},
        {"name": "beats greedy", "kind": "beats_greedy", "points": 10},
        {
            "name": "percent of optimal",
            "kind": "percent_of_optimal",
            "points": 70,
            "thresholds": [[0, 0.0], [100, 1.0]],
        },
        {"name": "upper bonus", "kind": "upper_bonus", "points": 10, "thresholds": [[0, 0.0], [50, 1.0]]},
    ],
}


def _flaky_source() -> str:
    """A flaky agent: plays like GOOD, but raises on turn three of games 1 and 3."""
    return GOOD.replace("class Agent:", "class Flaky:").replace(
        "    def act(self, observation, action_mask):\n",
        "    def reset(self):\n        self.game = getattr(self, 'game', -1) + 1\n\n"
        "    def act(self, observation, action_mask):\n"
        "        if self.game in (1, 3) and observation['turn'] == 2:\n"
        "            raise ValueError('turn three of an odd game')\n",
    )


STUDENTS["flaky"] = _flaky_source()
#: plays like GOOD, half a second a decision
SLOW = GOOD.replace("class Agent:", "class Slow:").replace(
    "    def act(self, observation, action_mask):\n",
    "    def act(self, observation, action_mask):\n        __import__('time').sleep(0.5)\n",
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("class")
    for name, source in STUDENTS.items():
        (path / f"{name}.py").write_text(source)
    return path


@pytest.fixture(scope="module")
def graded(folder, tmp_path_factory):
    """The class graded in this process (jobs=1), counting the benchmark's calls."""
    out = tmp_path_factory.mktemp("grades")
    calls = []
    real = grader.benchmark

    def spy(rules, agents, **kwargs):
        calls.append([a if isinstance(a, str) else a[0] for a in agents])
        return real(rules, agents, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grader, "benchmark", spy)
        result = grade_class(
            find_submissions([str(folder)]),
            "yacht",
            out,
            games=GAMES,
            seed=SEED,
            limits=FAST,
            isolated=ISOLATED,
            jobs=1,
            rubric=parse_rubric(RUBRIC),
        )
    write_class(result, out)
    return result, out, calls


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_the_references_are_played_once_for_the_class(graded):
    result, _, calls = graded
    assert calls.count(["optimal", "greedy"]) == 1
    assert calls[0] == ["optimal", "greedy"]  # first, before any student
    assert all(names in (["submission"], []) for names in calls[1:])
    graded_students = [s for s in result.students if s.report is not None]
    assert len(calls) == 1 + len(graded_students)
    for student in graded_students:  # every report holds the same reference rows
        assert student.report["agents"]["optimal"] == result.baselines.rows["optimal"]
        assert student.report["agents"]["greedy"] == result.baselines.rows["greedy"]


def test_a_students_report_is_the_single_grades(graded, folder):
    _, out, _ = graded
    single = grader.grade(
        f"{folder / 'good.py'}:Agent", "yacht", games=GAMES, seed=SEED, limits=FAST, isolated=ISOLATED
    )
    assert (out / "good" / "report.json").read_text(encoding="utf-8") == grader.report_json(single)


def test_the_gradebook_has_a_row_per_student(graded):
    result, out, _ = graded
    rows = _rows(out)
    assert sorted(rows) == sorted(STUDENTS)
    assert [row["student"] for row in csv.DictReader(io.StringIO(gradebook_csv(result)))] == sorted(STUDENTS)
    status = {name: row["status"] for name, row in rows.items()}
    assert status == {
        "good": "ok",
        SCRIPT_NAME: "ok",
        "weak": "ok",
        "flaky": "failures",
        "illegal": "partial",
        "two": "no_agent",
    }
    assert rows["flaky"]["failed_games"] == "2" and rows["flaky"]["failure_kinds"] == "exception:2"
    assert rows["illegal"]["flags"].startswith("stopped:") and rows["weak"]["flags"] == ""
    # the same code under other names (flaky: good's with a few lines added): each names the others
    assert rows["good"]["flags"].split(";") == [  # the names as in the student column, not the folders
        f"similar:{SCRIPT_NAME}(100%)",
        "similar:two(100%)",
        "similar:flaky(81%)",
    ]
    assert rows["two"]["flags"].startswith(f"similar:{SCRIPT_NAME}(100%);similar:good(100%)")
    assert rows["illegal"]["failed_games"] == str(GAMES)
    assert "2 classes with an act method" in rows["two"]["failure_kinds"] and rows["two"]["report"] == ""
    good = json.loads((out / "good" / "report.json").read_text())["agents"]["submission"]
    assert float(rows["good"]["percent_of_optimal"]) == pytest.approx(good["percent_of_optimal"], rel=1e-5)
    assert float(rows["good"]["percent_of_optimal_ci95"]) == pytest.approx(good["percent_of_optimal_ci95"], rel=1e-5)
    assert float(rows["good"]["regret_keep"]) + float(rows["good"]["regret_box"]) == pytest.approx(
        float(rows["good"]["regret"]), abs=1e-4
    )
    assert rows["good"]["upper_bonus_rate"] == ""  # yacht has no upper bonus
    assert float(rows["weak"]["mean"]) < float(rows["good"]["mean"])
    assert rows["good"]["report"] == "good/report.html"


def test_the_rubric_gives_points_with_partial_credit(graded):
    result, out, _ = graded
    rows = _rows(out)
    greedy = result.baselines.rows["greedy"]["estimated_expected_score"]
    for name in ("good", "weak", "flaky"):
        row = rows[name]
        assert float(row["points: legal play"]) == pytest.approx(
            10 * (GAMES - int(row["failed_games"])) / GAMES, abs=0.01
        )
        (student,) = [s for s in result.students if s.submission.student == name]
        worth = student.report["agents"]["submission"]["estimated_expected_score"]  # luck-free, as greedy's
        assert float(row["points: beats greedy"]) == (10.0 if worth > greedy else 0.0)
        assert float(row["points: percent of optimal"]) == pytest.approx(
            0.7 * float(row["percent_of_optimal"]), abs=0.01
        )
        assert float(row["points: upper bonus"]) == 10.0  # no upper bonus in yacht: full points
        parts = [float(row[f"points: {c['name']}"]) for c in RUBRIC["criterion"]]
        assert float(row["points"]) == pytest.approx(sum(parts), abs=0.01)
        assert row["max_points"] == "100"
    assert float(rows["flaky"]["points: legal play"]) == pytest.approx(6.67)  # 4 of 6 games without a failure
    for name in ("illegal", "two"):
        assert float(rows[name]["points: legal play"]) == 0.0
    assert float(rows["two"]["points"]) == 0.0


def _no_nan(text: str):
    def refuse(name):
        raise ValueError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_gradescope_results_follow_the_format(graded):
    result, out, _ = graded
    for student in result.students:
        data = _no_nan((out / student.submission.folder / "results.json").read_text(encoding="utf-8"))
        assert set(data) <= {"score", "output", "tests", "leaderboard", "extra_data"}
        assert isinstance(data["score"], (int, float)) and isinstance(data["output"], str)
        assert "seed" not in json.dumps(data).lower()  # students may see it before the deadline
        assert data["tests"], student.submission.student
        for test in data["tests"]:
            assert set(test) == {"name", "score", "max_score", "status", "output", "visibility"}
            assert isinstance(test["name"], str) and isinstance(test["output"], str)
            assert 0 <= test["score"] <= test["max_score"]
            assert test["status"] == ("passed" if test["score"] == test["max_score"] else "failed")
            assert test["visibility"] == "visible"
        assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]), abs=0.01)
        assert data["extra_data"]["max_score"] == 100
        if student.report is not None and student.report["agents"].get("submission"):
            names = [entry["name"] for entry in data["leaderboard"]]
            assert names == [
                "luck-free percent of optimal",
                "percent of optimal",
                "mean score",
                "regret (points a game)",
            ]
            assert all(isinstance(entry["value"], (int, float)) for entry in data["leaderboard"])
            assert data["leaderboard"][3]["order"] == "asc"
        else:
            assert "leaderboard" not in data and data["score"] == 0
    two = _no_nan((out / "two" / "results.json").read_text())
    assert "2 classes with an act method" in two["output"] and "--class" not in two["output"]  # for the student


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.tags, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "a":
            self.links.append(dict(attrs)["href"])

    def handle_data(self, data):
        self.text.append(data)


def test_the_class_page_links_every_report_and_escapes_names(graded):
    result, out, _ = graded
    page = (out / "index.html").read_text(encoding="utf-8")
    parsed = _Links()
    parsed.feed(page)
    assert "script" not in parsed.tags and "<script" not in page.lower()
    assert SCRIPT_NAME in "".join(parsed.text)  # shown as text
    assert "<th>illegal and failed</th>" in page  # the regret's other parts: a row's parts add up
    illegal = next(s for s in result.students if s.submission.student == "illegal")
    part = illegal.report["agents"]["submission"]
    lost = (part["regret_illegal_mean"] or 0) + (part["regret_failure_mean"] or 0)
    assert f'<td class="num">{lost:.2f}</td>' in page.split('data-student="illegal"')[1].split("</tr>")[0]
    reports = [s for s in result.students if s.files]
    assert parsed.links[-2:] == ["gradebook.csv", "class.json"]
    assert len(reports) == len(STUDENTS) - 1  # "two" has no report
    assert set(parsed.links[:-2]) == {f"{s.submission.folder}/report.html" for s in reports}
    similar = page.split("<h2>Similar code</h2>")[1].split("</table>")[0]  # the copies, file names escaped
    assert (
        similar.count("<tr>") == 1 + len(result.similar)
        and html.escape(SCRIPT_NAME) + ".py" in similar
        and "two.py</td>" in similar
    )
    from urllib.parse import unquote

    for link in parsed.links:
        assert (out / unquote(link)).is_file(), link
        assert not link.startswith(("http:", "https:", "/", "javascript:"))
    assert 'href="_script_alert_1__script_/report.html"' in page
    for marker in ("http://", "https://", "<link", "@import"):
        assert marker not in page


def test_the_class_page_shows_the_luck_free_percent_as_the_gradebook_does(graded):
    """The kit's criterion is the luck-free percent: the page showed only the percent of optimal, so its ranking
    looked inverted against the points. It is a column of its own, first, with the bar."""
    result, out, _ = graded
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<th>luck-free percent of optimal</th><th>percent of optimal (95% CI)</th>" in page
    rows = _rows(out)
    for student in result.students:
        if student.report is None or not student.report["agents"].get("submission"):
            continue
        row = student.report["agents"]["submission"]
        cells = page.split(f'data-student="{html.escape(student.submission.folder)}"')[1].split("</tr>")[0]
        luck_free, percent = re.findall(r'<td class="num">(.*?)</td>', cells)[:2]
        assert luck_free.endswith(f"{row['estimated_percent_of_optimal']:.1f}%") and 'class="bar"' in luck_free
        assert percent.startswith(f"{row['percent_of_optimal']:.1f}%") and "bar" not in percent
        assert math.isclose(float(rows[student.submission.student]["luck_free_percent"]),
                            row["estimated_percent_of_optimal"], rel_tol=1e-5)  # fmt: skip


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_grade_with_timeouts_among_others_is_graded_again_alone(tmp_path, monkeypatch, jobs):
    """Time limits are wall-clock time: graded alongside a classmate who busy-loops in 64 processes, a grade can
    time out through no fault of its own. Such a grade is graded again alone at the end, and its report says so;
    graded one at a time, nothing is graded twice."""
    from types import SimpleNamespace

    from agents.course import classroom
    from agents.course.classroom import StudentResult

    for name in ("busy", "calm", "slow"):
        (tmp_path / f"{name}.py").write_text(GOOD)
    submissions = find_submissions([str(tmp_path)])
    first = {"busy": {}, "calm": {"timeout": 3}, "slow": {"budget": 1}}  # graded in parallel (faked below)
    graded = []

    def fake_report(kinds):
        return {"status": "failures" if kinds else "ok", "failures": {"by_kind": kinds}, "problems": [], "agents": {}}

    def in_parallel(submissions, specs, rules, options, baselines, rubric, out, jobs, results, note):
        for i, s in enumerate(submissions):
            results[i] = StudentResult(s, "ok", fake_report(first[s.student]))
        return False

    def grade(spec, rules, **kwargs):
        graded.append(Path(spec.split(":")[0]).stem)
        return fake_report({})

    monkeypatch.setattr(classroom, "_grade_parallel", in_parallel)
    monkeypatch.setattr(classroom, "grade", grade)
    monkeypatch.setattr(classroom, "write_report", lambda report, folder: [])
    monkeypatch.setattr(classroom, "load_solution", lambda rules, required: SimpleNamespace(expected_score=1.0))
    monkeypatch.setattr(classroom, "reference_games", lambda *args, **kwargs: None)
    lines = []
    result = grade_class(
        submissions, "yacht", tmp_path / "out", games=2, jobs=jobs, isolated=False, progress=lines.append
    )
    students = {s.submission.student: s for s in result.students}
    if jobs == 1:  # (one at a time: the fake grade is the only one, once each)
        assert graded == ["busy", "calm", "slow"] and not any("again" in line for line in lines)
        return
    assert graded == ["calm", "slow"]  # the timeouts and the spent budget, not the clean grade
    assert "calm: time limit failures: graded again alone" in lines
    assert students["calm"].report["failures"]["by_kind"] == {}  # the second grade counts
    assert students["calm"].report["problems"][-1].startswith("graded again alone: its first grading, 2 submissions")
    assert students["busy"].report["problems"] == []


#: a submission whose failures name files it guesses are beside it: the hint would tell its report which are there
PROBE = """class Agent:
    def act(self, observation, action_mask):
        raise ModuleNotFoundError("No module named 'nothere' No module named 'alice' No such file or directory: 'notes.txt'")
"""


@pytest.mark.skipif(not ISOLATED, reason="the hint is for an isolated submission")
def test_a_submission_cannot_ask_the_grader_which_files_are_beside_it_in_a_class_folder(tmp_path):
    """Red team: a failure's message is the submission's own words, and the grader looked up every module or file it
    named beside the submission's file to add ``helpers.py is beside ...``. In a class folder of one file per
    student the files beside it are the classmates' and the instructor's: a student raising ``No module named
    'alice'`` (and ``No such file or directory: 'notes.txt'``) read in their report whether alice handed in and
    what else the folder holds. The hint is given where the folder is the student's own (a platform's export)."""
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "alice.py").write_text(GOOD)
    (flat / "probe.py").write_text(PROBE)
    (flat / "notes.txt").write_text("the instructor's notes\n")
    result = grade_class(find_submissions([str(flat)]), "yacht", tmp_path / "out", games=2, jobs=1, limits=FAST)
    probe = next(s for s in result.students if s.submission.student == "probe")
    messages = json.dumps(probe.report["failures"])
    assert "No module named 'alice'" in messages and "is beside" not in messages
    export = tmp_path / "export"
    (export / "carol").mkdir(parents=True)
    (export / "carol" / "agent.py").write_text(PROBE.replace("'alice'", "'helpers'"))
    (export / "carol" / "helpers.py").write_text("X = 1\n")
    result = grade_class(find_submissions([str(export)]), "yacht", tmp_path / "out2", games=2, jobs=1, limits=FAST)
    assert "helpers.py is beside agent.py" in json.dumps(result.students[0].report["failures"])


@pytest.mark.skipif(not ISOLATED, reason="the hint is for an isolated submission")
@pytest.mark.parametrize("command", ["grade", "check"])
def test_one_file_of_a_class_folder_graded_or_checked_alone_gets_no_hint_of_its_classmates(tmp_path, command, capsys):
    """``dice-poker grade class/probe.py`` (or check) graded one file as if its folder were its own: the probe read in
    its report that alice.py is beside it. A folder where another file has an agent class is a class's; a
    student's own folder of helpers still gets the hint."""
    from dice_poker_env import cli

    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "alice.py").write_text(GOOD)
    (flat / "probe.py").write_text(PROBE)
    extra = ["--games", "2"] + (["--unisolated"] if not ISOLATED else [])
    cli.main([command, f"{flat / 'probe.py'}:Agent", "--rules", "yacht", "--seed", "7", "--json", *extra])
    out = capsys.readouterr().out
    assert "No module named 'alice'" in out and "is beside" not in out
    own = tmp_path / "own"
    own.mkdir()
    (own / "agent.py").write_text(PROBE.replace("'alice'", "'helpers'"))
    (own / "helpers.py").write_text("X = 1\n")
    cli.main([command, f"{own / 'agent.py'}:Agent", "--rules", "yacht", "--seed", "7", "--json", *extra])
    assert "helpers.py is beside agent.py" in capsys.readouterr().out


def test_with_a_class_name_a_file_without_it_or_that_does_not_parse_is_not_loaded(tmp_path):
    """docs/grading.md: without ``--class`` such a file is ``no_agent`` (parsed, not run); with ``--class NAME`` it is
    loaded as it is, and its load failure (no ``NAME``, the syntax error) is the student's ``not_loaded``."""
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "ivan.py").write_text(GOOD)  # its class is Agent
    (flat / "judy.py").write_text("class MyAgent:\n    def act(self, observation, action_mask)\n        return 0\n")
    result = grade_class(
        find_submissions([str(flat)], "MyAgent"), "yacht", tmp_path / "out", games=1, jobs=1, limits=FAST
    )
    students = {s.submission.student: s for s in result.students}
    assert {name: s.status for name, s in students.items()} == {"ivan": "not_loaded", "judy": "not_loaded"}
    assert "has no 'MyAgent' (did you mean 'Agent'?)" in students["ivan"].report["problems"][0]
    assert "SyntaxError" in students["judy"].report["problems"][0]
    without = grade_class(find_submissions([str(flat)]), "yacht", tmp_path / "out2", games=1, jobs=1, limits=FAST)
    assert {s.submission.student: s.status for s in without.students} == {"ivan": "ok", "judy": "no_agent"}


def test_student_folders_are_safe_and_unique(tmp_path):
    for name in ("a b", "a_b", "A-B", "..", "x:y,z"):
        (tmp_path / f"{name}.py").write_text(GOOD)
    submissions = find_submissions([str(tmp_path)])
    folders = [s.folder for s in submissions]
    assert len({f.lower() for f in folders}) == len(folders)
    assert all(f and f.strip(".") == f and all(c.isalnum() or c in "._-" for c in f) for f in folders)


def test_a_symbolic_link_in_a_class_folder_is_not_followed(tmp_path):
    """A link could point at any file the grader reads (its first line would reach the report) or at another
    student's file (the class would stop: given twice): it is that student's problem, and the class goes on."""
    (tmp_path / "alice.py").write_text("class Agent:\n    def act(self, o, m):\n        return 32\n")
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0\n")
    (tmp_path / "mallory.py").symlink_to(secret)
    (tmp_path / "zed.py").symlink_to(tmp_path / "alice.py")
    found = {s.student: s for s in find_submissions([str(tmp_path)])}
    assert found["alice"].spec is not None and found["alice"].problem is None
    for name in ("mallory", "zed"):
        assert found[name].spec is None and "symbolic link, not followed" in found[name].problem


def test_a_folder_with_files_and_folders_of_them_is_refused_in_one_line(tmp_path):
    (tmp_path / "alice.py").write_text("class Agent:\n    def act(self, o, m):\n        return 32\n")
    (tmp_path / "leo").mkdir()
    (tmp_path / "leo" / "my_agent.py").write_text("class Agent:\n    def act(self, o, m):\n        return 32\n")
    with pytest.raises(ValueError, match="holds \\*.py files and folders of them \\(leo\\): a class folder holds one"):
        find_submissions([str(tmp_path)])
    assert [
        s.student for s in find_submissions([str(tmp_path / "alice.py"), str(tmp_path / "leo" / "my_agent.py")])
    ] == [
        "alice",
        "my_agent",
    ]


AGENT = "class Agent:\n    def act(self, o, m):\n        return 32\n"


def test_files_of_one_name_are_told_apart_by_their_folders(tmp_path):
    """``export/*/my_agent.py`` (what refusing a folder per student advised) gave three students ``my_agent``, the
    gradebook's file column ``my_agent.py`` three times: the student is the folder's name, the file ``folder/name``."""
    for student in ("alice", "bob"):
        (tmp_path / "export" / student).mkdir(parents=True)
        (tmp_path / "export" / student / "my_agent.py").write_text(AGENT)
    (tmp_path / "late" / "alice").mkdir(parents=True)
    (tmp_path / "late" / "alice" / "my_agent.py").write_text(AGENT)
    (tmp_path / "zoe.py").write_text(AGENT)
    found = find_submissions([*sorted(str(p) for p in tmp_path.glob("export/*/my_agent.py")), str(tmp_path / "zoe.py")])
    assert [(s.student, s.file, s.folder) for s in found] == [
        ("alice", "alice/my_agent.py", "alice"),
        ("bob", "bob/my_agent.py", "bob"),
        ("zoe", "zoe.py", "zoe"),
    ]
    again = find_submissions(
        [str(tmp_path / "export" / "alice" / "my_agent.py"), str(tmp_path / "late" / "alice" / "my_agent.py")]
    )
    assert [(s.student, s.file, s.folder) for s in again] == [  # folders of one name: as much as tells them apart
        ("export/alice", "export/alice/my_agent.py", "export_alice"),
        ("late/alice", "late/alice/my_agent.py", "late_alice"),
    ]


def test_a_folder_per_student_is_graded_under_the_folders_names(tmp_path):
    """A learning platform's export, ``export/<student>/<file>.py``: each folder one student (was refused); of
    several files the one with the agent class (or ``--class``); a folder without one is that student's
    problem; every file not graded is named."""
    export = tmp_path / "export"
    for student, files in {
        "alice": {"my_agent.py": AGENT, "notes.txt": "hi"},
        "bob": {"agent.py": AGENT, "helper.py": "X = 1\n"},
        "carol": {"a.py": AGENT, "b.py": AGENT},
        "dan": {"agent.txt": AGENT, "src/agent.py": AGENT},
    }.items():
        for name, text in files.items():
            (export / student / name).parent.mkdir(parents=True, exist_ok=True)
            (export / student / name).write_text(text)
    (export / "manifest.csv").write_text("alice\n")
    found, skipped = find_class([str(export)])
    rows = {s.student: (s.file, s.spec is not None, s.problem) for s in found}
    assert rows["alice"] == ("alice/my_agent.py", True, None)
    assert rows["bob"] == ("bob/agent.py", True, None)
    assert rows["carol"][:2] == ("carol/", False) and "2 *.py files in carol/ (a.py, b.py)" in rows["carol"][2]
    assert rows["dan"] == ("dan/", False, "no *.py file in dan/")
    assert {Path(s.path).name: s.why for s in skipped} == {
        "notes.txt": "not graded: not a .py file",
        "helper.py": "not graded: bob's agent is in agent.py",
        "agent.txt": "not graded: not a .py file",
        "src": "not graded: a folder in a student's folder (only the files beside it are read)",
        "manifest.csv": "not graded: not a folder of a student",
    }
    (export / "carol" / "b.py").write_text(AGENT.replace("Agent", "Other"))
    chosen = {s.student: s.spec for s in find_submissions([str(export)], "Agent")}
    assert chosen["carol"] == f"{export / 'carol' / 'a.py'}:Agent"


def test_every_file_of_a_class_folder_not_graded_is_named(tmp_path):
    """``Alice.PY`` and ``bob.py.txt`` were skipped without a word: each is named, with why."""
    (tmp_path / "alice.py").write_text(AGENT)
    (tmp_path / "Alice.PY").write_text(AGENT)
    (tmp_path / "bob.py.txt").write_text(AGENT)
    found, skipped = find_class([str(tmp_path)])
    assert [s.student for s in found] == ["alice"]
    assert [(Path(s.path).name, s.why) for s in skipped] == [
        ("Alice.PY", "not graded: its name ends in .PY, not .py: rename it Alice.py to grade it"),
        ("bob.py.txt", "not graded: not a .py file"),
    ]
    (tmp_path / "alice.py").unlink()
    with pytest.raises(
        ValueError, match="no \\*.py file in this folder \\(it holds Alice.PY, bob.py.txt: a submission"
    ):
        find_class([str(tmp_path)])


def test_a_name_made_safe_never_takes_another_students_own_name(tmp_path):
    """``alice .py`` (a space) took ``alice_/``, and the student ``alice_`` got ``alice_-2/``."""
    for name in ("alice ", "alice_", "bob-2", "bob", "bob?"):
        (tmp_path / f"{name}.py").write_text(AGENT)
    folders = {s.student: s.folder for s in find_submissions([str(tmp_path)])}
    assert folders == {"alice ": "alice_-2", "alice_": "alice_", "bob": "bob", "bob-2": "bob-2", "bob?": "bob_"}


def test_the_command_names_the_files_it_does_not_grade(tmp_path):
    """A folder per student through the command: the terminal, class.json and the class page name every file not
    graded; the gradebook's file column tells the students' files apart."""
    export = tmp_path / "export"
    for student in ("alice", "bob"):
        (export / student).mkdir(parents=True)
        (export / student / "my_agent.py").write_text(GOOD)
    (export / "bob" / "notes.txt").write_text("hi")
    out = tmp_path / "grades"
    done = _command(str(export), "--rules", "yacht", "--games", "1", "--out", str(out), "--jobs", "1", *UNISOLATED)
    assert done.returncode == 0, done.stderr
    assert f"{export / 'bob' / 'notes.txt'}: not graded: not a .py file" in done.stderr
    assert [(r["student"], r["file"]) for r in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))] == [
        ("alice", "alice/my_agent.py"),
        ("bob", "bob/my_agent.py"),
    ]
    data = json.loads((out / "class.json").read_text())
    assert data["skipped"] == [{"path": str(export / "bob" / "notes.txt"), "why": "not graded: not a .py file"}]
    assert "notes.txt" in (out / "index.html").read_text()


def test_a_student_named_like_a_class_file_gets_another_folder(tmp_path):
    """``gradebook.csv.py`` must not take the folder name of the class's gradebook (it crashed the class)."""
    for name in ("gradebook.csv", "index.html", "Class.json", "alice"):
        (tmp_path / f"{name}.py").write_text("class A:\n    def act(self, o, m):\n        return 32\n")
    folders = {s.student: s.folder for s in find_submissions([str(tmp_path)])}
    assert folders == {
        "Class.json": "Class.json-2",
        "alice": "alice",
        "gradebook.csv": "gradebook.csv-2",
        "index.html": "index.html-2",
    }


def test_finding_the_agent_class(tmp_path):
    one = tmp_path / "one.py"
    one.write_text("class Helper:\n    pass\n\n\nclass Agent:\n    def act(self, o, m):\n        return 32\n")
    assert find_agent_class(one) == ("Agent", None)
    none = tmp_path / "none.py"
    none.write_text("def act(o, m):\n    return 32\n")
    name, why = find_agent_class(none)
    assert name is None and "no class with an act method" in why and "--class" in why
    assert find_agent_class(none, "Mine") == ("Mine", None)
    broken = tmp_path / "broken.py"
    broken.write_text("class Agent(:\n")
    name, why = find_agent_class(broken)  # no class to name (it was graded as broken.py:Agent, a class made up)
    assert name is None and why.startswith("SyntaxError: ") and "(line 1): it does not parse" in why, why
    assert find_agent_class(broken, "MyAgent") == ("MyAgent", None)  # named: graded, its report shows the error
    deep = tmp_path / "deep.py"  # the parser runs out of stack (RecursionError) or memory, not out of syntax
    for expression in ("1+" * 100_000 + "1", "-" * 200_000 + "1"):
        deep.write_text(f"class Agent:\n    pass\n_x = {expression}\n")
        assert find_agent_class(deep) == ("Agent", None)  # graded: its report shows the failure, the class goes on
    runs = tmp_path / "runs.py"
    runs.write_text(
        f"open({str(tmp_path / 'ran')!r}, 'w').close()\nclass A:\n    def act(self, o, m):\n        return 32\n"
    )
    assert find_agent_class(runs) == ("A", None)
    assert not (tmp_path / "ran").exists()  # parsed, never run in the grader
    inherits = tmp_path / "inherits.py"  # act inherited within the file: the class derived from the others
    inherits.write_text(
        "class Base:\n    def act(self, o, m):\n        return self.choose(o, m)\n\n\n"
        "class Middle(Base):\n    pass\n\n\nclass MyAgent(Middle):\n    def choose(self, o, m):\n        return 32\n"
    )
    assert find_agent_class(inherits) == ("MyAgent", None)
    outside = tmp_path / "outside.py"  # act from another module: not knowable without running the file
    outside.write_text("from somewhere import Agent\n\n\nclass MyAgent(Agent):\n    pass\n")
    name, why = find_agent_class(outside)
    assert name is None and "MyAgent may inherit one from outside the file" in why and "--class" in why
    two = tmp_path / "two.py"  # two agents of one base, each with the base's act, stay a choice for the instructor
    two.write_text(
        "class A:\n    def act(self, o, m):\n        return 32\n\n\nclass B(A):\n    pass\n\n\nclass C(A):\n    pass\n"
    )
    name, why = find_agent_class(two)
    assert name is None and "2 classes with an act method" in why and "B, C" in why


def test_a_file_saved_with_a_byte_order_mark_or_a_coding_line_has_its_agent_class(tmp_path):
    """Python imports a file that starts with a UTF-8 byte-order mark (Windows editors write one) or declares its
    encoding, and `dice-poker check FILE.py:MyAgent` passed it; class grading read it as UTF-8 text, found U+FEFF
    or mangled names, and gave the student `no_agent` (0 points). It reads the file as Python does."""
    agent = "class MyAgent:\n    def act(self, o, m):\n        return 32\n"
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + agent.replace("\n", "\r\n").encode())
    assert find_agent_class(bom) == ("MyAgent", None)
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n" + agent.replace("MyAgent", "Agent\xe9").encode("latin-1"))
    assert find_agent_class(latin) == ("Agent\u00e9", None)
    (tmp_path / "plain.py").write_text("x = 1\n")
    submissions, skipped = find_class([str(tmp_path)])
    assert {s.student: s.spec for s in submissions}["bom"] == f"{bom}:MyAgent" and not skipped


def test_a_coding_line_that_does_not_decode_or_decodes_slowly_stops_no_class(tmp_path):
    """Red team: ``# coding: punycode`` on a file that is not punycode raised punycode's own ``UnicodeError`` (not a
    ``UnicodeDecodeError``) out of the class search: one student's two-line file stopped the class's grading, and
    ``dice-poker tournament``, before anything was graded. On a file of one long number punycode's decoding grows
    faster than the file (320 kB: 20 s; a megabyte: minutes), in the grader's own process, before any time limit
    (and in one grade's parse of the file). Such a file is read as UTF-8 (the import in the sandbox says what is wrong, under its load time limit)."""
    (tmp_path / "alice.py").write_text(GOOD)
    (tmp_path / "mallory.py").write_bytes(b"# coding: punycode\naaaa-99999\n")
    (tmp_path / "slow.py").write_bytes(b"# coding: punycode\n" + b"a" * 10 + b"-" + b"9" * 160_000)
    start = time.perf_counter()
    submissions, _ = find_class([str(tmp_path)])
    assert time.perf_counter() - start < 2  # (4 s and then the error before)
    found = {s.student: s for s in submissions}
    assert found["alice"].spec is not None
    assert found["mallory"].spec is None and "no class with an act method" in (found["mallory"].problem or "")
    assert found["slow"].spec is None
    from agents.commands.grade import resolve_submission  # one grade, a check, a tournament: parsed as it is read

    start = time.perf_counter()
    with pytest.raises(ValueError, match="slow.py: SyntaxError"):  # (as UTF-8: a number of 160,000 digits)
        resolve_submission(str(tmp_path / "slow.py"))
    assert time.perf_counter() - start < 2


def test_finding_the_agent_class_of_a_hostile_class_graph(tmp_path):
    """A chain of 3,000 derived classes crashed the class grade (RecursionError, nobody graded) and a lattice of
    bases hung it (each class's bases searched again, 4x a level): the search is linear, without recursion. Run
    in a process of its own with a time limit, so that a regression fails instead of hanging the suite."""
    chain = tmp_path / "chain.py"
    chain.write_text(
        "class C0:\n    def act(self, o, m):\n        return 32\n"
        + "".join(f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, 3000))
    )
    lattice = tmp_path / "lattice.py"
    lattice.write_text(
        "class Agent:\n    def act(self, o, m):\n        return 32\nclass A0:\n    pass\nclass B0:\n    pass\n"
        + "".join(
            f"class A{i}(A{i - 1}, B{i - 1}):\n    pass\nclass B{i}(A{i - 1}, B{i - 1}):\n    pass\n"
            for i in range(1, 60)
        )
    )
    probe = (
        "import sys\nfrom agents.course.classroom import find_agent_class\n"
        "print(find_agent_class(sys.argv[1]), find_agent_class(sys.argv[2]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(chain), str(lattice)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "('C2999', None) ('Agent', None)"


def test_rubric_curves_and_failed_games():
    steps = ((10.0, 0.5), (30.0, 1.0))
    assert [curve_fraction(x, steps, "steps") for x in (5, 10, 29.9, 30, 99)] == [0.0, 0.5, 0.5, 1.0, 1.0]
    line = ((60.0, 0.0), (85.0, 0.75), (95.0, 1.0))
    assert curve_fraction(50, line) == 0.0 and curve_fraction(100, line) == 1.0
    assert math.isclose(curve_fraction(72.5, line), 0.375) and math.isclose(curve_fraction(90, line), 0.875)
    report = {"games": 200, "status": "partial", "failures": {"count": 10, "stopped_at_game": 149}}
    assert failed_games(report) == 10 + 50  # the 50 games after game 149 were not asked for
    assert failed_games({"games": 200, "status": "not_loaded", "failures": {"count": 1}}) == 200


def test_upper_bonus_and_margin_criteria():
    rubric = parse_rubric(
        {
            "criterion": [
                {
                    "name": "bonus",
                    "kind": "upper_bonus",
                    "points": 10,
                    "thresholds": [[10, 0.5], [30, 1]],
                    "curve": "steps",
                },
                {"name": "greedy", "kind": "beats_greedy", "points": 5, "margin": 3},
                {"name": "legal", "kind": "legal_play", "points": 4, "partial": False},
            ]
        }
    )
    row = {"mean": 200.0, "upper_bonus_rate": 0.2, "percent_of_optimal": 80.0}
    report = {
        "games": 10,
        "status": "failures",
        "failures": {"count": 1, "stopped_at_game": None},
        "agents": {"submission": row, "greedy": {"mean": 198.0}},
    }
    earned = {e.name: e.points for e in score_report(rubric, report)}
    assert earned == {"bonus": 5.0, "greedy": 0.0, "legal": 0.0}  # 20% of games: step 10; 200 < 198 + 3; a failure
    # with regret figures, what the play is worth decides, not the dice: luckier mean, worse play
    row.update(mean=210.0, estimated_expected_score=196.0)
    report["agents"]["greedy"].update(estimated_expected_score=197.0)
    (greedy,) = [e for e in score_report(rubric, report) if e.name == "greedy"]
    assert greedy.points == 0.0 and "luck-free expected score 196.00 against greedy's 197.00 + 3" in greedy.detail
    row.update(estimated_expected_score=199.0)  # above greedy's 197, but not by the margin of 3
    assert [e.points for e in score_report(rubric, report) if e.name == "greedy"] == [0.0]
    row.update(estimated_expected_score=200.5)
    assert [e.points for e in score_report(rubric, report) if e.name == "greedy"] == [5.0]


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "no [[criterion]]"),
        ({"criterion": [{"name": "x", "kind": "style", "points": 1}]}, "kind must be one of"),
        ({"criterion": [{"name": "x", "kind": "legal_play", "points": 0}]}, "points must be a number > 0"),
        ({"criterion": [{"name": "x", "kind": "percent_of_optimal", "points": 1}]}, "thresholds must be a list"),
        (
            {"criterion": [{"name": "x", "kind": "percent_of_optimal", "points": 1, "thresholds": [[90, 1], [80, 0]]}]},
            "must increase",
        ),
        (
            {"criterion": [{"name": "x", "kind": "upper_bonus", "points": 1, "thresholds": [[90, 1.5]]}]},
            "between 0 and 1",
        ),
        (
            {"criterion": [{"name": "x", "kind": "legal_play", "points": 1, "thresholds": [[1, 1]]}]},
            "takes no thresholds",
        ),
        ({"criterion": [{"name": "x", "kind": "legal_play", "points": 1, "bonus": 2}]}, "unknown key(s) bonus"),
        (  # fractions, as the gradebook's upper_bonus_rate: bob with no bonus got half the points
            {"criterion": [{"name": "x", "kind": "upper_bonus", "points": 10, "thresholds": [[0.1, 0.5], [0.3, 1]]}]},
            "values are percents (0 to 100), and every one given is at most 1, as if written as fractions "
            "(the gradebook's upper_bonus_rate is one); write thresholds = [[10, 0.5], [30, 1]]",
        ),
        (
            {"criterion": [{"name": "x", "kind": "luck_free_percent", "points": 1, "thresholds": [[0.6, 0], [1, 1]]}]},
            "every one given is at most 1",
        ),
        ({"criterion": [{"name": "x", "kind": "legal_play", "points": 1}] * 2}, "distinct names"),
    ],
)
def test_rubric_errors_are_one_line(data, message):
    with pytest.raises(ValueError, match=None) as error:
        parse_rubric(data)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_example_rubric_loads():
    from agents.course.rubric import load_rubric

    rubric = load_rubric(ROOT / "examples" / "course" / "instructor" / "rubric.toml")
    assert rubric.max_points == 100


def test_without_a_rubric_the_score_is_the_luck_free_percent():
    from agents.course.gradebook import _percent_only

    row = {"percent_of_optimal": 112.0, "estimated_percent_of_optimal": 71.5}  # lucky dice, or dice known ahead
    assert (_percent_only(row).name, _percent_only(row).points) == ("luck-free percent of optimal", 71.5)
    plain = _percent_only({"percent_of_optimal": 64.25})  # no regret computed: the percent itself
    assert (plain.name, plain.points) == ("percent of optimal", 64.25) and _percent_only(None).points == 0.0
    # the score is out of 100: a luck-free percent estimated above 100 scores 100, not more
    capped = _percent_only({"percent_of_optimal": 95.0, "estimated_percent_of_optimal": 112.0})
    assert (capped.points, capped.max_points) == (100.0, 100.0) and "112.00% of optimal" in capped.detail


def test_csv_cells_never_start_a_formula():
    assert _cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert _cell("+1") == "'+1" and _cell("@x") == "'@x" and _cell("-2") == "'-2"
    assert _cell(-2.5) == "-2.5" and _cell(None) == "" and _cell("alice") == "alice"


def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agents.commands.grade", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_the_command_grades_a_class_in_parallel(graded, folder, tmp_path):
    """Two workers, a list of files (one with ``:`` and ``,`` in its name, graded from a copy): the same rows."""
    odd = tmp_path / "odd:name,x.py"
    odd.write_text(GOOD)
    out = tmp_path / "grades"
    files = [str(folder / "good.py"), str(folder / "flaky.py"), str(odd)]
    done = _command(
        *files, "--rules", "yacht", "--games", str(GAMES), "--seed", str(SEED), "--out", str(out), "--jobs", "2",
        "--decision-seconds", "20", "--game-seconds", "120", "--load-seconds", "120", "--max-failures", "3", *UNISOLATED,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "graded 3 submissions" in done.stdout and "(2 at a time)" in done.stdout
    assert "similar code: good and odd:name,x (100% of the first is in the second" in done.stdout
    rows = _rows(out)
    before = _rows(graded[1])
    keys = ("status", "failed_games", "percent_of_optimal", "mean", "regret", "failure_kinds")
    for name in ("good", "flaky"):
        assert {k: rows[name][k] for k in keys} == {k: before[name][k] for k in keys}
    assert {k: rows["odd:name,x"][k] for k in keys} == {k: before["good"][k] for k in keys}
    assert json.loads((out / "odd_name_x" / "report.json").read_text())["submission"] == f"{odd}:Agent"
    assert (out / "index.html").is_file() and (out / "good" / "results.json").is_file()
    # --overwrite with a smaller class (one file: a class through --jobs): the folders of the students gone go too,
    # nothing else does
    (out / "notes").mkdir()
    (out / "notes" / "report.json").write_text("{}")  # not a folder class.json names
    again = _command(
        files[0], "--jobs", "1", "--rules", "yacht", "--games", "2", "--out", str(out), "--overwrite", "--decision-seconds", "20",
        "--game-seconds", "120", "--load-seconds", "120", *UNISOLATED,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["good", "notes"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--games", "2"], "needs --out DIR"),
        (["--out", "OUT", "--jobs", "0"], "jobs must be an integer >= 1"),
        (["--out", "OUT", "--rubric", "missing.toml"], "--rubric missing.toml: cannot read it"),
        (["--out", "OUT", "--starter", "missing.py"], "--starter missing.py: no such file"),
        (["--out", "OUT", "--similarity", "1.5"], "--similarity must be a share in (0, 1], got 1.5"),
        (["--out", "OUT", "--similarity", "nan"], "--similarity must be a share in (0, 1], got nan"),
    ],
)
def test_class_command_errors_are_one_line(folder, tmp_path, args, message):
    args = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    done = _command(str(folder), "--rules", "yacht", *args, *UNISOLATED)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_class_without_jobs_is_graded_on_every_core(folder, tmp_path):
    """The kit's commands give no --jobs (default: the cores); a check of the value must not refuse its absence."""
    out = tmp_path / "grades"
    done = _command(str(folder), "--rules", "yacht", "--games", "2", "--out", str(out), *UNISOLATED)
    assert done.returncode == 0, done.stderr
    assert (out / "gradebook.csv").is_file()
    assert "warning: seed 0 is small" in done.stderr  # a class's grades: the seed must not be guessable


def test_a_folder_that_is_not_there_is_named_as_one(folder, tmp_path, capsys):
    """A typo in a class's folder, or an autograder's ``/autograder/submission`` where there is none: one line saying
    the folder is not there, as the tournament says it. It was refused as a malformed agent spec (``expected
    FILE.py:NAME or MODULE:NAME``) or, with ``--class``, as a class option given without a class; ``check`` of a
    folder that is there says it takes one submission."""
    from agents.commands.check import main as check
    from agents.commands.grade import main as grade

    gone = str(tmp_path / "submisions")
    good = str(folder / "good.py")
    out = ["--out", str(tmp_path / "grades"), "--rules", "yacht", "--games", "1", *UNISOLATED]
    for command, args, message in [
        (grade, [gone + "/", *out], f"{gone}/: no such folder"),
        (grade, [gone, "--class", "MyAgent", *out], f"{gone}: no such folder"),
        (grade, [gone, *out], f"{gone}: no such folder"),
        (grade, [gone + "/", good, *out], f"{gone}/: no such folder"),
        (check, [gone + "/", "--rules", "yacht"], f"{gone}/: no such folder"),
        (check, [str(folder), "--rules", "yacht"], f"{folder}: a folder; give one submission"),
    ]:
        assert command(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(message) or message in err and len(err.splitlines()) == 1, (args, err)
    assert not (tmp_path / "grades").exists()
    # a spec that is not a path is refused as before
    assert grade(["no_such_agent", *out]) == 2
    assert "expected FILE.py:NAME or MODULE:NAME" in capsys.readouterr().err


def test_one_bare_file_is_one_students_grade(folder, tmp_path):
    """``grade my_agent.py --out DIR`` (as ``check my_agent.py``): the single grade of its agent class, its report in
    DIR, not a class of one; a missing file is refused before anything runs."""
    out = tmp_path / "report"
    done = _command(str(folder / "good.py"), "--rules", "yacht", "--games", "2", "--out", str(out), *UNISOLATED)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    assert json.loads((out / "report.json").read_text())["submission"] == f"{folder / 'good.py'}:Agent"
    for missing in ("nope.py", "nope.py:Agent"):
        done = _command(missing, "--rules", "yacht", "--games", "2", *UNISOLATED)
        assert done.returncode == 2 and done.stderr.strip().endswith("nope.py: no such file"), done.stderr


def test_single_grade_options_are_refused_for_one_submission(folder):
    for option in (["--jobs", "2"], ["--starter", str(folder / "good.py")], ["--similarity", "0.5"]):
        done = _command("agents.players.greedy:GreedyAgent", "--rules", "yacht", *option, *UNISOLATED)
        assert done.returncode == 2 and "grade a class" in done.stderr, option


def test_a_file_and_its_class_with_a_rubric_is_a_class_of_one(folder, tmp_path):
    """FILE.py:NAME --rubric (how the docs and the kit name a submission): a class of one, NAME its agent class;
    it was refused as 'not a folder or several submissions'."""
    out = tmp_path / "one"
    rubric = str(ROOT / "examples/course/instructor/rubric.toml")
    done = _command(f"{folder / 'good.py'}:Agent", "--rules", "yacht", "--games", "2", "--rubric", rubric,
                    "--out", str(out), *UNISOLATED)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "gradebook.csv").is_file() and _rows(out)["good"]["points"] != ""
    clash = _command(f"{folder / 'good.py'}:Agent", "--class", "Other", "--rubric", rubric, *UNISOLATED)
    assert clash.returncode == 2 and "names the class Agent, --class Other" in clash.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigterm_ends_the_class_with_partial_reports(folder, tmp_path, jobs):
    """SIGTERM (as Ctrl-C): the grade in progress ends partial, the class files are written, status 130."""
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "a_good.py").write_text(GOOD)
    (slow / "b_slow.py").write_text(SLOW)
    out = tmp_path / "grades"
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.commands.grade", str(slow), "--rules", "yacht", "--games", "200", "--out",
         str(out), "--jobs", jobs, "--load-seconds", "120", "--rubric", str(ROOT / "examples/course/instructor/rubric.toml"),
         *UNISOLATED],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not (out / "a_good" / "report.json").is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # the slow one is playing its games
        process.send_signal(signal.SIGTERM)
        printed, stderr = process.communicate(timeout=240)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    rows = _rows(out)
    assert rows["a_good"]["status"] == "ok"
    assert rows["b_slow"]["status"] == "interrupted"  # not a max-failures partial grade
    assert not (out / "b_slow" / "results.json").exists() and (out / "a_good" / "results.json").is_file()
    assert rows["b_slow"]["points"] == "" and rows["a_good"]["points"] != ""  # no grade is not a zero
    last = printed.strip().splitlines()[-1]  # not "graded 3 submissions": who has no grade, and what to do
    assert (
        last.startswith("INTERRUPTED after") and "b_slow" in last and "a_good" not in last and "no results.json" in last
    )
    report = json.loads((out / "b_slow" / "report.json").read_text())
    assert report["interrupted"] is True
    assert "interrupted" in (out / "index.html").read_text()


def test_a_grade_the_interrupt_cut_short_is_interrupted_not_partial(monkeypatch, tmp_path):
    """A grade cut short by Ctrl-C read ``partial``, as a genuine max-failures partial grade: it is ``interrupted``,
    no grade."""
    from agents.course import classroom

    report = {"status": "partial", "interrupted": True, "agents": {}}
    monkeypatch.setattr(classroom, "grade", lambda spec, rules, **options: dict(report))
    monkeypatch.setattr(classroom, "write_report", lambda report, folder: [folder / "report.json"])
    (tmp_path / "alice.py").write_text(AGENT)
    alice = find_submissions([str(tmp_path / "alice.py")])[0]
    done = classroom._grade_one(alice, alice.spec, None, {}, None, None, str(tmp_path / "out"))
    assert done.status == "interrupted" and not done.graded
    assert classroom._line(done) == "alice: interrupted, no grade"
    report["interrupted"] = False  # a partial grade of its own (too many failures): a grade
    assert classroom._grade_one(alice, alice.spec, None, {}, None, None, str(tmp_path / "out")).status == "partial"


def test_a_student_without_a_grade_gets_no_gradescope_score(graded, tmp_path):
    """results.json said ``"score": 0.0`` for a student the interrupt left ungraded (Gradescope reads a zero):
    a student without a grade has no results.json, and blank points."""
    import dataclasses

    result = graded[0]
    good = next(s for s in result.students if s.submission.student == "good")
    students = [
        dataclasses.replace(good, status=status, submission=dataclasses.replace(good.submission, folder=status))
        for status in ("interrupted", "not_graded", "error", "ok")  # (error: the grader's failure, not the student's)
    ]
    write_class(dataclasses.replace(result, students=students, similar=[]), tmp_path)
    assert [(tmp_path / s / "results.json").is_file() for s in ("interrupted", "not_graded", "error", "ok")] == [
        False,
        False,
        False,
        True,
    ]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "gradebook.csv").read_text())))
    assert [(r["status"], r["points"] == "") for r in rows] == [
        ("interrupted", True),
        ("not_graded", True),
        ("error", True),
        ("ok", False),
    ]


def test_an_interrupted_regrade_leaves_the_class_as_it_was(tmp_path):
    """``--overwrite`` stopped by SIGTERM replaced a complete gradebook with a partial one and left a student not yet
    regraded with the old report beside a new results.json: the regrade is written beside the class and swapped in
    only once complete; interrupted, the class is untouched, and the command says where the partial grade is."""
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "a_good.py").write_text(GOOD)
    (slow / "b_slow.py").write_text(GOOD)
    out = tmp_path / "grades"
    first = _command(str(slow), "--rules", "yacht", "--games", "2", "--out", str(out), "--jobs", "1", *UNISOLATED)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (slow / "b_slow.py").write_text(SLOW)  # (resubmitted)
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.commands.grade", str(slow), "--rules", "yacht", "--games", "200", "--out",
         str(out), "--overwrite", "--jobs", "1", "--load-seconds", "120", *UNISOLATED],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob("grades.regrade-*/a_good/report.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # the slow one is playing its games
        process.send_signal(signal.SIGTERM)
        printed, stderr = process.communicate(timeout=240)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # every byte of the old grade
    [partial] = tmp_path.glob("grades.regrade-*")
    last = printed.strip().splitlines()[-1]
    assert f"The class in {out} is as it was: this grading's partial grades are in {partial}" in last
    assert json.loads((partial / "b_slow" / "report.json").read_text())["interrupted"] is True
    assert _rows(partial)["b_slow"]["status"] == "interrupted"


@pytest.mark.parametrize("regrade", [True, False], ids=["regrade", "first_grade"])
def test_a_grade_stopped_while_its_files_are_written_says_so_and_leaves_no_staged_folder(
    regrade, tmp_path, monkeypatch, capsys
):
    """Ctrl-C (or SIGTERM) after the grading, while the class files were written into a regrade's staging folder,
    left ``OUT.regrade-XXXX`` behind without a word; now it goes (the class is as it was) and the command says so."""
    from agents.commands import grade
    from agents.course import gradebook

    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "alice.py").write_text(GOOD)
    out = tmp_path / "grades"
    args = [str(tmp_path / "class"), "--rules", "yacht", "--games", "1", "--out", str(out), "--jobs", "1"]
    args += UNISOLATED
    if regrade:
        assert grade.main(args) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    real = gradebook.write_class

    def stopped(result, where):
        (Path(where) / "gradebook.csv").write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(gradebook, "write_class", stopped)
    assert grade.main([*args, "--overwrite"] if regrade else args) == 130
    stderr = capsys.readouterr().err
    assert not list(tmp_path.glob("grades.regrade-*"))
    if regrade:
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
        assert f"stopped while writing the grades: the class in {out} is as it was" in stderr
    else:
        assert f"stopped while writing the grades: the files in {out} are incomplete" in stderr
    monkeypatch.setattr(gradebook, "write_class", real)
    assert grade.main([*args, "--overwrite"]) == 0  # and grading it again mends it
    assert (out / "gradebook.csv").read_text().startswith("student")


def test_a_complete_regrade_replaces_every_file_of_the_earlier_one(tmp_path):
    """Swapped in: a student who now has no agent keeps no earlier report; a student gone is named and removed."""
    for name in ("alice", "bob", "carol"):
        (tmp_path / "class" / f"{name}.py").parent.mkdir(exist_ok=True)
        (tmp_path / "class" / f"{name}.py").write_text(GOOD)
    out = tmp_path / "grades"
    args = ("--rules", "yacht", "--games", "1", "--out", str(out), "--jobs", "1", *UNISOLATED)
    assert _command(str(tmp_path / "class"), *args).returncode == 0
    (tmp_path / "class" / "bob.py").write_text("x = 1\n")
    (tmp_path / "class" / "carol.py").unlink()
    again = _command(str(tmp_path / "class"), *args, "--overwrite")
    assert again.returncode == 0, again.stderr
    assert (
        "1 student folder(s) of the class in" in again.stderr and "removed once it is complete: carol" in again.stderr
    )
    assert "removed 1 student folder(s) of the earlier grade: carol" in again.stdout
    assert sorted(p.name for p in out.iterdir()) == ["alice", "bob", "class.json", "gradebook.csv", "index.html"]
    assert sorted(p.name for p in (out / "bob").iterdir()) == ["results.json"]  # no_agent now: no old report
    assert not list(tmp_path.glob("grades.regrade-*"))


def test_a_regrade_leaves_no_earlier_grade_to_a_student_the_grader_failed_on(tmp_path):
    """A student the grader failed on (``error``) has no staged folder: the swap walked the staged folders only, so
    their earlier report and results.json stayed beside a gradebook row saying ``error``, and went to Gradescope."""
    from agents.course.gradebook import replace_class

    out, new = tmp_path / "grades", tmp_path / "grades.regrade-x"
    for folder in ("alice", "bob"):
        (out / folder).mkdir(parents=True)
        for name in ("report.json", "report.md", "report.html", "results.json"):
            (out / folder / name).write_text("earlier")
    (new / "alice").mkdir(parents=True)
    for name in ("report.json", "report.md", "report.html", "results.json"):
        (new / "alice" / name).write_text("new")
    students = [{"folder": "alice", "status": "ok"}, {"folder": "bob", "status": "error"}]
    for name in ("class.json", "gradebook.csv", "index.html"):
        (new / name).write_text(json.dumps({"students": students}) if name == "class.json" else "new")
    real_replace = os.replace

    def replace_and_interrupt(source, target):  # a Ctrl-C in the middle of the swap
        real_replace(source, target)
        os.kill(os.getpid(), signal.SIGINT)

    with mock.patch("os.replace", replace_and_interrupt):
        arrived = replace_class(new, out, gone=[])  # no KeyboardInterrupt once the swap is done
    assert arrived == {signal.SIGINT}
    assert {p.read_text() for p in (out / "alice").iterdir()} == {"new"}
    assert list((out / "bob").iterdir()) == []  # no grade: none of the earlier one either
    assert not new.exists()


def test_a_single_report_never_goes_into_a_class_or_a_students_folder(folder, tmp_path):
    """``grade bob.py --out grades/alice --overwrite`` made alice's report bob's while her results.json and gradebook
    row stayed hers; ``grade alice.py --out grades --overwrite`` dropped a report beside the gradebook."""
    out = tmp_path / "grades"
    (out / "alice").mkdir(parents=True)
    (out / "alice" / "results.json").write_text("{}")
    (out / "class.json").write_text(json.dumps({"students": [{"folder": "alice"}]}))
    for target in (out / "alice", out):
        done = _command(str(folder / "good.py"), "--rules", "yacht", "--games", "1", "--out", str(target),
                        "--overwrite", *UNISOLATED)  # fmt: skip
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "to regrade a resubmission, grade it into another folder" in done.stderr
    assert sorted(p.name for p in out.rglob("*")) == ["alice", "class.json", "results.json"]
    into = _command(str(folder), "--rules", "yacht", "--games", "1", "--out", str(out / "alice"), *UNISOLATED)
    assert into.returncode == 2 and "is a student's folder of the class graded in" in into.stderr


def test_flags_name_printing_solver_use_and_a_stop():
    from agents.course.classroom import flags

    assert flags({}) == ""
    report = {
        "stdout": {"bytes": 1039},
        "solver": {"policy": "flag", "imported": ["dice_poker_env.solver"]},
        "failures": {"stopped_because": "failures"},
    }
    assert flags(report) == "stdout:1039;solver:flag;stopped:failures"
    allowed = {"solver": {"policy": "allow", "imported": ["dice_poker_env.solver"]}}
    assert flags(allowed) == ""  # allowed: nothing to flag
