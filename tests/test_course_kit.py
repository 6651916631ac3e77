"""The course kit: the student and instructor folders of examples/course/, the starter agent, ``dice-poker check``,
and every command's ``--help``."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import pytest

from agents.course.grader import read_config
from agents.course.sandbox import isolation_problem
from dice_poker_env import load_rules

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "examples" / "course"
STUDENT = COURSE / "student"
INSTRUCTOR_CONFIG = COURSE / "instructor" / "grading.toml"
ISOLATED = isolation_problem() is None
UNISOLATED = [] if ISOLATED else ["--unisolated"]

SUBMISSIONS = """
import sys
import time

import numpy as np


class Good:
    def __init__(self, rules):
        self.rules = rules

    def act(self, observation, action_mask):
        return 32 + int(np.flatnonzero(action_mask[32:])[0])


class Illegal(Good):
    def act(self, observation, action_mask):
        return 31


class Malformed(Good):
    def act(self, observation, action_mask):
        return 32.0


class Raises(Good):
    def act(self, observation, action_mask):
        raise KeyError("dice")


class Chatty(Good):
    def act(self, observation, action_mask):
        print("hello")
        return super().act(observation, action_mask)


class Logger(Good):
    def act(self, observation, action_mask):
        sys.stderr.write("x" * 999 + "\\n")  # 1,000 bytes a decision: 24 MB over the grading's 2000 games
        return super().act(observation, action_mask)


class LazyLog(Good):
    def act(self, observation, action_mask):
        if not getattr(self, "loaded", False):  # a lazy model load logs once: 2,001 bytes, never again
            sys.stderr.write("x" * 2000 + "\\n")
            self.loaded = True
        return super().act(observation, action_mask)


class LoadLog(Good):
    def __init__(self, rules):
        super().__init__(rules)
        sys.stderr.write("x" * 2000 + "\\n")  # a model's load logs once, in the constructor: 2,001 bytes


class Notes(Good):
    def reset(self):
        sys.stderr.write("new game\\n")  # 9 bytes a game: 18 KB over the grading


class Slow(Good):
    def act(self, observation, action_mask):
        time.sleep(3)
        return super().act(observation, action_mask)


class NoAct:
    def __init__(self, rules):
        pass
"""


# ------------------------------------------------------------------ the two folders
def test_the_student_folder_reveals_nothing_of_the_hidden_set():
    hidden = read_config(INSTRUCTOR_CONFIG)
    files = [path for path in STUDENT.rglob("*") if path.is_file()]
    assert sorted(path.name for path in files) == ["README.md", "my_agent.py", "practice.toml"]
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert str(hidden["seed"]) not in text, path
        for secret in ("instructor", "grading.toml", INSTRUCTOR_CONFIG.name):
            assert secret not in text, (path, secret)
    practice = read_config(STUDENT / "practice.toml")
    assert practice["seed"] != hidden["seed"]
    # the same format and settings: only the seed differs
    assert {k: v for k, v in practice.items() if k != "seed"} == {k: v for k, v in hidden.items() if k != "seed"}


def test_the_docs_say_which_folder_is_handed_out():
    teacher = (COURSE / "README.md").read_text(encoding="utf-8")
    assert "hand this folder out" in teacher and "`student/`" in teacher and "`instructor/`: keep it" in teacher
    grading = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    assert "examples/course/student/" in grading and "examples/course/instructor/grading.toml" in grading
    assert not (COURSE / "grading.toml").exists() and not (COURSE / "my_agent.py").exists()


def test_the_assignment_says_the_constructor_parameter_is_rules():
    """The rules are passed by name: ``def __init__(self, r)`` does not load (it scored 0), and only docs/agents.md
    said so."""
    assignment = (STUDENT / "README.md").read_text(encoding="utf-8")
    assert "`MyAgent(rules=...)`" in assignment and "must be called `rules`" in assignment


# ------------------------------------------------------------------ the starter agent
def test_the_starter_agent_always_plays_legal_actions():
    from agents.evaluation.benchmark import benchmark
    from agents.players.registry import make_agent
    from dice_poker_env.envs.single import DicePokerEnv

    rules = load_rules("yahtzee")
    agent = make_agent(f"{STUDENT / 'my_agent.py'}:MyAgent", rules)
    # five ones with the yahtzee box scratched: the starter's keep would be all five dice (31, never legal)
    env = DicePokerEnv(rules)
    observation, info = env.reset(options={"scorecard": {"yahtzee": 0}, "dice": [1, 1, 1, 1, 1], "rolls_left": 2})
    mask = info["action_mask"]
    action = int(agent.act(observation, mask))
    assert mask[action] and action >= 32, action
    result = benchmark("yahtzee", [("starter", agent)], games=300, seed=1, regret=False)
    row = result.data["agents"]["starter"]
    assert row["illegal_actions"] == 0 and row["failed_games"] == {} and row["games"] == 300


# ------------------------------------------------------------------ dice-poker check
@pytest.fixture(scope="module")
def student(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check")
    (folder / "student.py").write_text(SUBMISSIONS)
    (folder / "slow.toml").write_text('rules = "yacht"\ndecision_seconds = 1.0\nseed = 4\n')
    return folder


def run_check(student, name, *extra, capsys):
    from agents.commands.check import main

    code = main([f"{student / 'student.py'}:{name}", "--rules", "yacht", "--games", "2", *UNISOLATED, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_passes_a_good_submission_without_the_solver(student, capsys, monkeypatch):
    import dice_poker_env.solver as solver

    def no_solver(*args, **kwargs):
        raise AssertionError("check must not solve")

    monkeypatch.setattr(solver, "solve", no_solver)
    code, out, err = run_check(student, "Good", capsys=capsys)
    assert code == 0, out + err
    assert "interface OK" in out and "2 game(s) played, 2 finished" in out
    assert len(out.splitlines()) <= 24  # one screen


@pytest.mark.parametrize(
    "name, expected",
    [
        ("Illegal", "illegal (2 games, first game 1, decision 1): returned 31 (keep all five dice)"),
        ("Illegal", "2 decision(s) answered, the slowest in "),  # an illegal answer is an answer
        ("Raises", "0 decision(s) answered; 2 not answered (2 exception), not in the slowest"),
        ("Malformed", "malformed (2 games, first game 1, decision 1)"),
        ("Raises", "exception (2 games, first game 1, decision 1): KeyError: 'dice' (at student.py:"),
        ("Chatty", "printed 144 bytes to standard output"),  # "hello" and a newline at each of 2 x 12 decisions
        (
            "Logger",
            "wrote 0 bytes to standard output and 24000 to standard error in 2 game(s), 12 KB a game after the "
            "first: at that rate the grading's 2000 games write about 24.0 MB to one of them, past the limit of "
            "1024 KiB",
        ),
        ("NoAct", "load (loading)"),
        ("Missing", "student.py has no 'Missing'"),
    ],
)
def test_check_reports_interface_errors(student, capsys, name, expected):
    code, out, err = run_check(student, name, capsys=capsys)
    assert code == 1, out + err
    assert "interface problem(s)" in out and expected in out, out
    assert "Traceback" not in out + err
    assert "/submission/" not in out and "AgentLoadError" not in out  # the file as the student knows it


def test_check_passes_a_little_standard_error(student, capsys):
    code, out, err = run_check(student, "Notes", capsys=capsys)
    assert code == 0 and "interface OK" in out and "18 bytes on standard error" in out, out + err


def test_check_does_not_multiply_what_is_written_once(student, capsys):
    """2,001 bytes logged once (a lazy load) were projected over the grading's 2000 games as 2 MB, a fatal
    problem; only what grows after the first game is multiplied now."""
    code, out, err = run_check(student, "LazyLog", capsys=capsys)
    assert code == 0 and "interface OK" in out and "2001 bytes on standard error" in out, out + err


def test_check_of_one_game_does_not_multiply_what_loading_wrote(student, capsys):
    """``--games 1`` (the kit's instructor check): what the constructor logged once was taken as the rate of every
    game (2,001 bytes x 2000 games: "about 4.0 MB", a problem, exit status 1); loading's output is counted once."""
    code, out, err = run_check(student, "LoadLog", "--games", "1", capsys=capsys)
    assert code == 0 and "interface OK" in out and "2001 bytes on standard error" in out, out + err


def test_the_output_projection_multiplies_only_what_grows():
    from agents.course.checker import CheckResult

    once = CheckResult("a.py:A", "yacht", 3, "none", loaded=True, games_played=3, stderr_bytes=2001)
    once.first_game_output, once.graded_games = (0, 2001), 2000
    assert once.projected_output == 2001 and once.output_growth == 0 and once.ok
    grows = CheckResult("a.py:A", "yacht", 3, "none", loaded=True, games_played=3, stderr_bytes=1800)
    grows.first_game_output, grows.graded_games = (0, 600), 2000
    assert grows.output_growth == 600 and grows.projected_output == 600 + 600 * 1999
    assert not grows.ok and "600 bytes" not in grows.problems[0] and "1 KB a game after the first" in grows.problems[0]
    alone = CheckResult("a.py:A", "yacht", 1, "none", loaded=True, games_played=1, stderr_bytes=600)
    alone.first_game_output, alone.graded_games = (0, 600), 2000
    assert alone.projected_output == 600 * 2000 and "one game: play more" in alone.problems[0]
    loaded = CheckResult("a.py:A", "yacht", 1, "none", loaded=True, games_played=1, stderr_bytes=2601)
    loaded.load_output, loaded.first_game_output, loaded.graded_games = (0, 2001), (0, 2601), 2000
    assert loaded.projected_output == 2001 + 600 * 2000


def test_check_reports_a_slow_submission_with_the_config_limits(student, capsys):
    code, out, _ = run_check(student, "Slow", "--config", str(student / "slow.toml"), capsys=capsys)
    assert code == 1 and "timeout (2 games, first game 1, decision 1): no answer within 1 s" in out, out  # one line
    assert "0 decision(s) answered; 2 not answered (2 timeout), not in the slowest" in out, out
    code, out, _ = run_check(student, "Good", "--json", capsys=capsys)
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["games_played"] == 2 and data["problems"] == []


def test_check_takes_a_bare_file_as_grading_does(tmp_path, capsys):
    """``dice-poker check my_agent.py``: the file's agent class, found as class grading finds it (it was refused)."""
    from agents.commands.check import main

    mine = tmp_path / "my_agent.py"
    mine.write_text(
        "class Base:\n    def act(self, observation, action_mask):\n        return self.choose(action_mask)\n\n\n"
        "class MyAgent(Base):\n    def choose(self, action_mask):\n        return int(action_mask.nonzero()[0][-1])\n"
    )
    assert main([str(mine), "--rules", "yacht", "--games", "1", *UNISOLATED]) == 0
    assert f"check {mine}:MyAgent on yacht" in capsys.readouterr().out
    two = tmp_path / "two.py"
    two.write_text(
        "class A:\n    def act(self, o, m):\n        return 32\n\n\nclass B:\n    def act(self, o, m):\n        return 32\n"
    )
    assert main([str(two), "--rules", "yacht", *UNISOLATED]) == 2
    err = capsys.readouterr().err
    assert "2 classes with an act method" in err and len(err.strip().splitlines()) == 1


def test_a_module_or_file_beside_the_submission_is_named_as_unseen_by_the_isolated_grader(tmp_path, capsys):
    """An agent that imports ``helpers`` or opens ``weights.txt`` beside its file loads in ``dice-poker bench`` and
    ``play`` (its folder is on ``sys.path``) but not in the grading sandbox, which shows it its own file only; the
    check said ``No module named 'helpers'`` of a module the student could see right there. It says the file is
    beside it and not shown, and what to do."""
    from agents.course.sandbox import unseen_beside

    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "weights.txt").write_text("1 2 3\n")
    mine = str(tmp_path / "my_agent.py")
    hint = unseen_beside("ModuleNotFoundError: No module named 'helpers'", mine)
    assert hint == (
        "; helpers.py is beside my_agent.py, but the submission runs isolated and sees no other file than "
        "my_agent.py: put everything in my_agent.py"
    )
    assert "weights.txt is beside my_agent.py" in unseen_beside(
        "FileNotFoundError: [Errno 2] No such file or directory: 'weights.txt'", mine
    )
    assert unseen_beside("ModuleNotFoundError: No module named 'sklearn'", mine) == ""  # not there: not installed
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_text("")
    elsewhere = str(tmp_path / "weights.txt")
    for probe in (elsewhere, "../" + tmp_path.name + "/weights.txt", "sub/x.txt", ".", ".."):
        # the message is the submission's: a path in it never has the grader say whether a file exists there
        assert unseen_beside(f"No such file or directory: '{probe}'", mine) == "", probe
    if not ISOLATED:
        pytest.skip("isolation is not available here: the sandbox's message is not checked")
    from agents.commands.check import main

    (tmp_path / "my_agent.py").write_text(
        "from helpers import X\n\n\nclass MyAgent:\n    def act(self, observation, action_mask):\n        return 32\n"
    )
    assert main([mine, "--rules", "yacht", "--games", "1"]) == 1
    assert "helpers.py is beside my_agent.py, but the submission runs isolated" in capsys.readouterr().out


def test_the_line_of_a_failure_is_in_the_submissions_own_file_not_a_library_file_of_its_name(tmp_path):
    """A submission ``pool.py`` whose ``multiprocessing.Pool`` failed was shown ``(at pool.py:346 in
    _setup_queues)``, a line of the library's ``multiprocessing/pool.py``: frames were matched by file name. The line
    is the submission's own (its path as the sandbox's messages give it, or the absolute one)."""
    from agents.course.checker import _line_in_submission

    traceback = (
        'Traceback (most recent call last):\n  File "pool.py", line 9, in __init__\n    with Pool(2) as p:\n'
        '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 346, in _setup_queues\n'
        "OSError: [Errno 30] Read-only file system\n"
    )
    assert _line_in_submission(traceback, "pool.py:MyAgent") == "pool.py:9 in __init__"
    mine = tmp_path / "pool.py"
    unisolated = traceback.replace('"pool.py"', f'"{mine}"')
    assert _line_in_submission(unisolated, f"{mine}:MyAgent") == "pool.py:9 in __init__"
    assert _line_in_submission(traceback.replace('"pool.py", line 9', '"other.py", line 9'), "pool.py:A") is None


def test_check_bad_input_is_a_one_line_error(student, capsys):
    code, out, err = run_check(student, "Good", "--games", "0", capsys=capsys)
    assert code == 2 and "games must be an integer from 1" in err and "Traceback" not in err
    from agents.commands.check import main

    assert main(["no_colon_here", "--rules", "yacht", *UNISOLATED]) == 2
    assert "expected FILE.py:NAME" in capsys.readouterr().err


def test_dice_poker_check_through_the_command_entry_point(student, monkeypatch, capsys):
    """``dice-poker check``, found through its entry point as pyproject.toml registers it."""
    from dice_poker_env import cli

    point = importlib.metadata.EntryPoint("check", "agents.commands.check", cli.ENTRY_POINT_GROUP)
    monkeypatch.setattr(cli, "plugin_entry_points", lambda: [point])
    code = cli.main(["check", f"{student / 'student.py'}:Illegal", "--rules", "yacht", "--games", "1", *UNISOLATED])
    assert code == 1 and "illegal" in capsys.readouterr().out
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'check = "agents.commands.check"' in text


# ------------------------------------------------------------------ every command's --help
def _commands() -> dict[str, str]:
    """Every dice-poker command: the core's and those pyproject.toml registers (installed or not)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    from dice_poker_env import cli

    with open(ROOT / "pyproject.toml", "rb") as handle:
        plugins = tomllib.load(handle)["project"]["entry-points"][cli.ENTRY_POINT_GROUP]
    return {**cli.BUILTIN_COMMANDS, **plugins}


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_help_prints_percent_signs_once(name, monkeypatch, capsys):
    """argparse formats help with %: a description or epilog must not show "%%" (nor fail on a lone %)."""
    from dice_poker_env import cli

    points = [
        importlib.metadata.EntryPoint(n, target, cli.ENTRY_POINT_GROUP)
        for n, target in _commands().items()
        if n not in cli.BUILTIN_COMMANDS
    ]
    monkeypatch.setattr(cli, "plugin_entry_points", lambda: points)
    texts = []
    for argv in ([name, "--help"], ["--help"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 0
        texts.append(capsys.readouterr().out)
        assert "%%" not in texts[-1] and "%(" not in texts[-1], texts[-1]
    if name in ("grade", "bench", "evaluate"):
        assert "95% CI" in " ".join(texts[0].split())


def test_train_help_prints_percent_signs_once():
    import subprocess

    result = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--help"], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0 and "%%" not in result.stdout


# ------------------------------------------------------------------ relatives in dice-poker bench's table
def test_the_bench_table_shows_every_part_of_the_regret_and_explains_luck():
    from rich.console import Console

    from agents.evaluation.benchmark import benchmark, render_table

    class Stubborn:
        name = "stubborn"

        def act(self, observation, action_mask):
            return 31  # never legal

    result = benchmark("yacht", [("stubborn", Stubborn()), "greedy"], games=4, seed=3)
    row = result.data["agents"]["stubborn"]
    assert row["illegal_actions"] == 4 and row["failed_games"] == {}
    console = Console(record=True, width=250)
    render_table(result.data, console=console)
    text = console.export_text()
    assert "illegal/failed regret" in text and f"{row['regret_illegal_mean']:.3f}" in text
    assert "luck in the dice" not in text
    result.data["agents"]["greedy"]["percent_of_optimal"] = 100.42
    console = Console(record=True, width=250)
    render_table(result.data, console=console)
    assert "above 100 is luck in the dice" in console.export_text()
