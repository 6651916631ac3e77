"""The grader (``python -m agents.commands.grade`` / ``dice-poker grade``): hostile submissions, reports, reproducibility."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.course.grade_report import describe, render_html, render_markdown, summary_text
from agents.course.grader import grade
from agents.course.sandbox import (
    Limits,
    SandboxedAgent,
    agent_seed,
    decode_observation,
    encode_observation,
    isolation_problem,
)
from agents.evaluation.benchmark import game_seeds
from dice_poker_env import load_rules

ROOT = Path(__file__).resolve().parents[1]
#: grade isolated where this machine can (Linux with bubblewrap), else unisolated (trusted test code)
ISOLATED = isolation_problem() is None
UNISOLATED = [] if ISOLATED else ["--unisolated"]
GAMES = 4
FAST = Limits(decision_seconds=20, game_seconds=120, load_seconds=120, max_failures=3)

SUBMISSIONS = '''
import os
import sys
import time

import numpy as np

from dice_poker_env.engine import score


class Good:
    """Writes the dice into the open box that scores most now."""

    def __init__(self, rules):
        self.rules = rules

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))


class Seeded(Good):
    def __init__(self, rules):
        super().__init__(rules)
        self.seeds = []

    def seed(self, seed):
        self.seeds.append(seed)
        print("seed", seed, file=sys.stderr)


class Raises(Good):
    def act(self, observation, action_mask):
        if observation["turn"] == 2:
            raise ValueError("no idea what to do on turn three")
        return super().act(observation, action_mask)


class ResetRaises(Good):
    def reset(self):
        raise RuntimeError("cannot reset")


class Hangs(Good):
    def act(self, observation, action_mask):
        if observation["turn"] == 1:
            while True:
                time.sleep(0.01)
        return super().act(observation, action_mask)


class Illegal(Good):
    def act(self, observation, action_mask):
        return 31  # keep all five dice: never legal


class OutOfRange(Good):
    def act(self, observation, action_mask):
        return 1000


class Huge(Good):
    def act(self, observation, action_mask):
        return 2**40  # beyond int32: the mistakes list still names it


class Malformed(Good):
    def act(self, observation, action_mask):
        return "32"


class Chatty(Good):
    def act(self, observation, action_mask):
        print("thinking about", observation["dice"].tolist())
        return super().act(observation, action_mask)


class Crashes(Good):
    def act(self, observation, action_mask):
        os._exit(3)


class Greedy(Good):
    def act(self, observation, action_mask):
        self.hog = bytearray(64 * 1024 * 1024 * 1024)  # 64 GiB: over any memory limit
        return super().act(observation, action_mask)


class Exits(Good):
    def act(self, observation, action_mask):
        sys.exit("bye")


class BrokenInit:
    def __init__(self):
        raise RuntimeError("constructor fails")


class Spy(Good):
    """Looks for the grader's game seeds everywhere it can reach from its own process."""

    def act(self, observation, action_mask):
        import gc

        found = set()
        for obj in gc.get_objects():
            if isinstance(obj, np.random.Generator):
                found.add(("generator", repr(obj)))
        frame = sys._getframe()
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.size > 3:
                    found.update(int(v) for v in value.reshape(-1)[:100000])
            frame = frame.f_back
        print(repr(sorted(str(f) for f in found if not isinstance(f, int) or f > 1 << 20)))
        return super().act(observation, action_mask)
'''

SLOW_BROKEN_IMPORT = "import time\ntime.sleep(600)\n"


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("course")
    (folder / "student.py").write_text(SUBMISSIONS)
    (folder / "syntax_error.py").write_text("class Agent(:\n")
    (folder / "slow_import.py").write_text(SLOW_BROKEN_IMPORT)
    return folder


def run_grade(submissions, name, **kwargs):
    kwargs.setdefault("games", GAMES)
    kwargs.setdefault("seed", 3)
    kwargs.setdefault("limits", FAST)
    kwargs.setdefault("isolated", ISOLATED)
    return grade(f"{submissions / 'student.py'}:{name}", "yacht", **kwargs)


def test_messages_round_trip_observations():
    rules = load_rules("yacht")
    from dice_poker_env.envs.single import DicePokerEnv

    for mode in ("dict", "flat"):
        obs, _ = DicePokerEnv(rules, obs_mode=mode).reset(seed=1)
        back = decode_observation(json.loads(json.dumps(encode_observation(obs))))
        if mode == "dict":
            assert set(back) == set(obs)
            for key in obs:
                assert type(back[key]) is type(obs[key]) and np.asarray(back[key]).dtype == np.asarray(obs[key]).dtype
                assert np.array_equal(back[key], obs[key])
        else:
            assert back.dtype == obs.dtype and np.array_equal(back, obs)


def test_agent_seeds_do_not_reveal_the_game_seeds():
    seeds = game_seeds(3, 10)
    given = [agent_seed(i) for i in range(10)]
    assert len(set(given)) == 10 and not set(given) & {int(s) for s in seeds}
    assert given == [agent_seed(i) for i in range(10)]  # the same for every run, whatever the grading seed


def test_a_good_submission_is_graded_like_the_same_agent_in_process(submissions):
    report = run_grade(submissions, "Good")
    assert report["status"] == "ok" and report["problems"] == [] and report["failures"]["count"] == 0
    row = report["agents"]["submission"]
    assert row["games"] == GAMES and row["illegal_actions"] == 0
    assert set(report["agents"]) == {"submission", "optimal", "greedy"}
    assert 0 < row["percent_of_optimal"] < 100 and row["regret_mean"] > 0
    assert row["regret_mean"] == pytest.approx(
        row["regret_keep_mean"] + row["regret_box_mean"] + row["regret_illegal_mean"] + row["regret_failure_mean"]
    )
    assert row["failed_games"] == {} and row["regret_failure_mean"] == 0
    # the replays hold every move; the moves' rewards add up to each game's score
    assert len(report["replays"]) == GAMES
    for game, score in zip(report["replays"], np.asarray([g["score"] for g in report["replays"]])):
        assert sum(move[5] for move in game["moves"]) == score
    # the same games, played in this process by the same code, give the same scores
    from agents.evaluation.benchmark import benchmark
    from agents.players.registry import make_agent

    direct = benchmark(
        "yacht", [("x", make_agent(f"{submissions / 'student.py'}:Good", "yacht"))], games=GAMES, seed=3, regret=False
    )
    assert [g["score"] for g in report["replays"]] == direct.scores["x"].tolist()
    # the replay's detail: every game here (fewer than 20) with the values of each move's best actions
    detail = report["replay_detail"]
    assert [entry["game"] for entry in detail["games"]] == list(range(GAMES))
    for entry, record in zip(detail["games"], report["replays"]):
        assert len(entry["alternatives"]) == len(record["moves"])
        for listed, move in zip(entry["alternatives"], record["moves"]):
            chosen = [value for action, value in listed if action == move[2]]
            assert listed[0][1] - chosen[0] == pytest.approx(move[4], abs=0.011)
    for mistake in row["mistakes"]:  # each listed mistake names its game and move
        example = mistake["worst_example"]
        move = report["replays"][example["game"]]["moves"][example["move"]]
        assert move[2] == example["taken_action"] and move[4] == example["loss"]


def test_the_same_seed_gives_the_same_report(submissions, tmp_path):
    first = run_grade(submissions, "Good")
    second = run_grade(submissions, "Good")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert render_html(first) == render_html(second) and render_markdown(first) == render_markdown(second)
    other = run_grade(submissions, "Good", seed=4)
    assert other["replays"] != first["replays"]


def test_the_submission_gets_its_own_seeds_never_the_games(submissions):
    report = run_grade(submissions, "Seeded")
    assert report["status"] == "ok"
    # (its seed() prints to stderr, which is not reported as stdout)
    assert report["stdout"]["bytes"] == 0
    # ... but counted toward the output limit, and so recorded (the report said nothing of it, check did)
    from agents.course.sandbox import agent_seed

    written = sum(len(f"seed {agent_seed(game)}\n") for game in range(report["games"]))
    assert report["stderr"] == {"bytes": written}
    assert f"## Standard error\n\n{written} bytes, not kept; they count toward the output limit of 1024 KiB" in (
        render_markdown(report)
    )
    assert f'<p id="stderr">{written} bytes, not kept' in render_html(report)
    quiet = run_grade(submissions, "Good", games=1)
    assert quiet["stderr"] == {"bytes": 0} and "Standard error" not in render_markdown(quiet)


def test_the_submission_cannot_find_the_game_seeds(submissions):
    report = run_grade(submissions, "Spy", games=2)
    assert report["status"] == "ok"
    seen = report["stdout"]["sample"]  # what it found, printed
    assert seen.startswith("[")
    assert "generator" not in seen  # no random generator exists in its process
    for seed in game_seeds(3, 2):
        assert f"'{int(seed)}'" not in seen


@pytest.mark.parametrize(
    "name, kind, message",
    [
        ("Raises", "exception", "ValueError: no idea what to do on turn three"),
        ("Illegal", "illegal", "keep all five dice"),
        ("OutOfRange", "illegal", "outside 0..43"),
        ("Malformed", "malformed", "returned '32' (str), not an action index"),
        ("Crashes", "crash", "exited with status 3"),
        ("Exits", "exception", "SystemExit: bye"),
        ("Greedy", "exception", "MemoryError"),
        # the agent's own exception (not the AgentError wrapper of in-process play), with its traceback
        ("ResetRaises", "exception", "RuntimeError: cannot reset"),
    ],
)
def test_hostile_submissions_get_a_report_that_says_so(submissions, name, kind, message):
    report = run_grade(submissions, name)
    # every game fails: after max_failures (3 of 4 games) it is no longer asked, so the run is partial
    assert report["status"] in ("failures", "partial") and report["complete"] == (report["status"] != "partial")
    failures = report["failures"]["recorded"]
    assert failures and failures[0]["kind"] == kind, failures
    assert message in failures[0]["message"] and "AgentError" not in failures[0]["message"]
    if kind == "exception":
        assert "Traceback" in failures[0]["traceback"] and "student.py" in failures[0]["traceback"]
    assert report["agents"]["optimal"]["games"] == GAMES  # the references are graded all the same
    assert report["problems"]
    html = render_html(report)
    assert f'data-kind="{kind}"' in html


def test_max_failures_stops_asking(submissions):
    report = run_grade(submissions, "Raises", games=6, limits=Limits(max_failures=2, load_seconds=120))
    assert report["failures"]["count"] == 2 and report["failures"]["stopped_at_game"] == 1
    assert report["failures"]["stopped_at_game_number"] == 2  # what people read: games from 1
    scores = [game["score"] for game in report["replays"]]
    assert scores[2:] == [0, 0, 0, 0]  # not played
    assert any(
        "(game 2) no more decisions" in line and "remaining game(s) score 0" in line for line in report["problems"]
    )
    # failed games are failures of their kind, never illegal actions or mistakes
    row = report["agents"]["submission"]
    assert row["illegal_actions"] == 0 and row["failed_games"] == {"exception": 2, "stopped": 4}
    assert [game["failure"] for game in report["replays"]] == ["exception"] * 2 + ["stopped"] * 4
    assert not any("illegal" in m["mistake"] for m in row["mistakes"])
    assert row["regret_illegal_mean"] == 0 and row["regret_failure_mean"] > 100  # the 4 unplayed games lose it all
    parts = sum(row[f"regret_{part}_mean"] for part in ("keep", "box", "illegal", "failure"))
    assert row["regret_mean"] == pytest.approx(parts)
    summary = summary_text(report)
    assert "illegal action -1" not in summary and "illegal actions 2000" not in summary
    assert "failed games 6 (2 exception, 4 stopped); illegal actions 0" in summary
    for text in (summary, render_markdown(report), render_html(report)):
        assert "illegal action -1" not in text
    failure = report["failures"]["recorded"][0]
    assert failure["game_number"] == failure["game"] + 1 and failure["decision_number"] == failure["decision"] + 1
    where = f"game {failure['game'] + 1}, decision {failure['decision'] + 1}"
    assert f"exception ({where})" in render_markdown(report) and f"exception ({where})" in render_html(report)


def test_a_hanging_submission_is_killed_and_the_next_game_starts_a_new_one(submissions):
    limits = Limits(decision_seconds=3, game_seconds=60, load_seconds=120, max_failures=3)
    report = run_grade(submissions, "Hangs", games=2, limits=limits)
    failures = report["failures"]["recorded"]
    assert [f["kind"] for f in failures] == ["timeout", "timeout"]
    assert [f["game"] for f in failures] == [0, 1]  # a fresh worker played game 1 up to its hang
    assert [f["game_number"] for f in failures] == [1, 2]
    assert (
        "no answer within 3 s" in failures[0]["message"] and "decision 2 of game 1" in failures[0]["message"]
    )  # turn 2
    assert report["agents"]["submission"]["failed_games"] == {"timeout": 2}


def test_a_decision_gets_only_what_is_left_of_the_game_time(submissions):
    """A decision may use the decision time limit only while the game has that much left: past it, what is
    left of the game time limit (a hang is cut after about 2 s, not the 30 s of a decision)."""
    import time

    limits = Limits(decision_seconds=30, game_seconds=2, load_seconds=120, max_failures=3)
    start = time.monotonic()
    report = run_grade(submissions, "Hangs", games=1, limits=limits)
    assert time.monotonic() - start < 25
    failures = report["failures"]["recorded"]
    assert [f["kind"] for f in failures] == ["timeout"]
    assert "what was left of the game time limit of 2 s" in failures[0]["message"]


def test_printing_to_stdout_is_reported(submissions):
    report = run_grade(submissions, "Chatty", games=2)
    assert report["status"] == "ok"  # printing does not fail a game, it is reported
    assert report["stdout"]["bytes"] > 0 and report["stdout"]["first_game"] == 0
    assert report["stdout"]["first_game_number"] == 1 and report["stdout"]["first_decision_number"] == 1
    assert any("first in game 1, decision 1" in line for line in report["problems"])
    assert report["stdout"]["sample"].startswith("thinking about")
    assert any("printed" in line for line in report["problems"])


@pytest.mark.parametrize(
    "spec, message",
    [
        ("student.py:BrokenInit", "RuntimeError: constructor fails"),
        ("student.py:Missing", "has no 'Missing'"),
        ("syntax_error.py:Agent", "SyntaxError"),
        ("nothing_here.py:Agent", "no such file"),
    ],
)
def test_a_submission_that_does_not_load_gets_a_report(submissions, spec, message):
    report = grade(str(submissions / spec), "yacht", games=2, seed=1, limits=FAST, isolated=ISOLATED)
    assert report["status"] == "not_loaded"
    assert report["failures"]["recorded"][0]["kind"] == "load"
    assert message in report["failures"]["recorded"][0]["message"] + report["failures"]["recorded"][0]["traceback"]
    assert "submission" not in report["agents"] and report["replays"] == []
    assert "did not load" in report["problems"][0]
    assert "0.0%" in render_markdown(report)


def test_a_submission_that_takes_too_long_to_load(submissions):
    limits = Limits(load_seconds=2, decision_seconds=5, game_seconds=60)
    report = grade(
        f"{submissions / 'slow_import.py'}:Agent", "yacht", games=1, seed=1, limits=limits, isolated=ISOLATED
    )
    assert report["status"] == "not_loaded"
    assert report["failures"]["recorded"][0]["kind"] == "timeout"


def test_sandboxed_agent_never_forwards_the_benchmark_seed(submissions):
    with SandboxedAgent(
        f"{submissions / 'student.py'}:Seeded", load_rules("yacht"), seed=5, limits=FAST, isolated=ISOLATED
    ) as agent:
        assert agent.has_seed and agent.load_error is None
        agent.seed(123456)  # what the benchmark would pass: ignored
        agent.reset()
        assert agent.failure_count == 0


def test_limits_are_validated():
    for bad in (
        dict(decision_seconds=0),
        dict(game_seconds=-1),
        dict(memory_mb=1),
        dict(max_failures=0),
        dict(load_seconds=float("inf")),
    ):
        with pytest.raises(ValueError):
            Limits(**bad)


def test_describe_actions():
    boxes = list(load_rules("yacht").box_names)
    assert describe(0b10110, "12246", boxes) == "keep 2-2-6"
    assert describe(0, "12246", boxes) == "reroll all"
    assert describe(38, "12246", boxes) == "score full house"
    assert describe(38, "12246", boxes, 0) == "scratch full house (0 points)"
    assert describe(38, "22266", boxes, 18) == "score full house (18 points)"
    assert describe(32, "12246", boxes, 1) == "score ones (1 point)"  # was "(1 points)"
    from agents.evaluation.benchmark import _describe  # the benchmark's mistakes say it the same way

    assert _describe(load_rules("yacht"), [1, 2, 2, 4, 6], 32, 1) == "score ones (1 point)"
    assert _describe(load_rules("yacht"), [1, 1, 2, 4, 6], 32, 2) == "score ones (2 points)"
    assert describe(31, "12246", boxes) == "illegal action 31"


def test_html_escapes_what_the_submission_wrote(submissions):
    report = run_grade(submissions, "Good", games=1)
    report = json.loads(json.dumps(report))
    report["stdout"] = {"bytes": 10, "first_game": 0, "first_decision": 0, "sample": "<script>alert(1)</script>"}
    report["failures"]["recorded"] = [
        {"game": 0, "decision": 0, "kind": "exception", "message": "<b>x</b>", "traceback": "</pre><img src=x>"}
    ]
    report["replays"][0]["moves"][0][0] = "12345</script><script>alert(2)//"
    page = render_html(report)
    assert "<script>alert(1)" not in page and "<b>x</b>" not in page and "<img src=x>" not in page
    assert "</script><script>alert(2)" not in page


def test_command_line_writes_three_files_and_refuses_to_overwrite(submissions, tmp_path):
    out = tmp_path / "grades" / "alice"
    command = [
        sys.executable,
        "-m",
        "agents.commands.grade",
        f"{submissions / 'student.py'}:Good",
        "--rules",
        "yacht",
        "--games",
        "2",
        "--seed",
        "9",
        "--out",
        str(out),
        *UNISOLATED,
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    first = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert first.returncode == 0, first.stderr
    assert "of optimal" in first.stdout
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
    data = json.loads((out / "report.json").read_text())
    assert data["games"] == 2 and data["seed"] == 9
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "http://" not in page and "https://" not in page
    again = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert again.returncode == 2 and "holds a report already" in again.stderr and "Traceback" not in again.stderr
    bad = subprocess.run([*command[:6], "--games", "0"], capture_output=True, text=True, timeout=900, env=env)
    assert bad.returncode == 2 and "games must be an integer >= 1" in bad.stderr


def test_the_course_template_grades_its_starter_agent(tmp_path):
    """examples/course/: the students' starter agent, graded with the instructor's config (fewer games)."""
    course = ROOT / "examples" / "course"
    out = tmp_path / "report"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.commands.grade",
            f"{course / 'student' / 'my_agent.py'}:MyAgent",
            "--config",
            str(course / "instructor" / "grading.toml"),
            "--games",
            "3",
            "--decision-seconds",
            "30",
            "--game-seconds",
            "300",
            "--out",
            str(out),
            *UNISOLATED,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "report.json").read_text())
    assert data["status"] == "ok" and data["rules"] == "yahtzee" and data["seed"] == 759597655150152821
    assert data["rules_options"] == {"joker": "forced"} and data["limits"]["memory_mb"] == 2048
    assert 30 < data["agents"]["submission"]["percent_of_optimal"] < 100
    assert data["agents"]["submission"]["illegal_actions"] == 0


def test_grading_config_errors(tmp_path):
    from agents.course.grader import read_config

    path = tmp_path / "grading.toml"
    for text, message in [
        ("games = 'many'", "games must be int"),
        ("sead = 3", "unknown setting"),
        ("rules = [", "not valid TOML"),
        (
            "games = " + "[" * 100_000 + "]" * 100_000,
            r"grading.toml: not valid TOML: nested too deep",
        ),  # was a traceback
        ("games = " + "9" * 5000, r"grading.toml: not valid TOML: Exceeds the limit \(4300 digits\)"),  # named no file
    ]:
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_config(path)
    with pytest.raises(ValueError, match="cannot read it"):
        read_config(tmp_path / "missing.toml")
    path.write_bytes(b"\x9d\x00\x01")  # a binary file: tomllib's UnicodeDecodeError, one line naming the file
    with pytest.raises(ValueError, match="grading.toml: not a TOML file"):
        read_config(path)
    path.write_text("games = 5\ndecision_seconds = 2\nrules = 'yacht'\n")
    assert read_config(path) == {"games": 5, "decision_seconds": 2, "rules": "yacht"}


@pytest.mark.parametrize("command", ["grade", "tournament", "check"])
def test_a_bad_limit_is_named_as_it_was_given(command, submissions, tmp_path, capsys):
    """A limit out of range is named by its flag when given on the command line, by its key after the config's
    name when set in a grading config: the user finds what to mend (before any submission runs)."""
    from dice_poker_env import cli

    agent = str(submissions / "student.py")
    agents = [agent, agent] if command == "tournament" else [agent]
    config = tmp_path / "grading.toml"
    config.write_text("memory_mb = 3\n")
    cases = [(["--config", str(config)], f"--config {config}: memory_mb must be an integer in 16..2**40")]
    if command != "check":  # (check takes its limits from a config only)
        cases += [
            (["--decision-seconds", "-1"], "--decision-seconds must be a positive number of seconds, got -1.0"),
            (["--max-failures", "0"], "--max-failures must be an integer in 1..2**40, got 0"),
            # the flag wins over the config, and its bad value is the flag's
            (["--config", str(config), "--memory-mb", "2"], "--memory-mb must be an integer in 16..2**40"),
        ]
    for args, message in cases:
        assert cli.main([command, *agents, *args]) != 0
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("command", ["grade", "class", "tournament", "check"])
def test_a_bad_setting_is_named_as_it_was_given(command, submissions, tmp_path, capsys):
    """Games, seed and jobs out of range are named as the limits are: by the flag given on the command line, by the
    key after the config's name when set in a grading config (``seed = -5`` said only ``seed must be ...``)."""
    from dice_poker_env import cli

    agent = f"{submissions / 'student.py'}:Good"
    given = {
        "grade": [agent],
        "class": [str(submissions), "--out", str(tmp_path / "out")],
        "tournament": [agent, f"{submissions / 'student.py'}:Illegal"],
        "check": [agent],
    }[command]
    config = tmp_path / "grading.toml"
    config.write_text("seed = -5\n")
    games = tmp_path / "games.toml"
    games.write_text("games = 0\n")
    cases = [
        (["--seed", "-5"], "--seed must be an integer >= 0, got -5"),
        (["--games", "0"], "--games must be an integer " + ("from 1 to 10000" if command == "check" else ">= 1")),
    ]
    if command != "tournament":  # (a tournament takes neither its seed nor its games from a config)
        cases += [
            (["--config", str(config)], f"--config {config}: seed must be an integer >= 0, got -5"),
            (["--config", str(games)], f"--config {games}: games must be an integer >= 1, got 0"),
        ]
    if command == "class":
        cases.append((["--jobs", "0"], "--jobs must be an integer >= 1, got 0"))
    if command == "tournament":
        cases.append((["--players", "9"], "--players must be an integer 2 to 6, got 9"))
    for args, message in cases:
        assert cli.main([command if command != "class" else "grade", *given, *args, *UNISOLATED]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_dice_poker_grade_through_the_command_entry_point(submissions, tmp_path, monkeypatch, capsys):
    """``dice-poker grade``: the command found through its entry point (as pyproject.toml registers it)."""
    import importlib.metadata

    from dice_poker_env import cli

    point = importlib.metadata.EntryPoint("grade", "agents.commands.grade", cli.ENTRY_POINT_GROUP)
    monkeypatch.setattr(cli, "plugin_entry_points", lambda: [point])
    out = tmp_path / "report"
    code = cli.main(
        [
            "grade",
            f"{submissions / 'student.py'}:Good",
            "--rules",
            "yacht",
            "--games",
            "2",
            "--seed",
            "2",
            "--out",
            str(out),
            "--json",
            *UNISOLATED,
        ]
    )
    assert code == 0
    printed = capsys.readouterr()
    data = json.loads(printed.out)
    assert data["status"] == "ok" and data["games"] == 2 and (out / "report.html").is_file()
    assert "warning" not in printed.err  # one student's grade is practice: the seed warning is the class's
    code = cli.main(
        ["grade", f"{submissions / 'student.py'}:Good", "--rules", "yacht", "--games", "2", "--out", str(out)]
        + UNISOLATED
    )
    err = capsys.readouterr().err
    assert code == 2 and "holds a report already" in err and len(err.strip().splitlines()) == 1
    from agents.commands.grade import warn_guessable_seed

    warn_guessable_seed(759597655150152821)  # the kit's: 63 random bits
    assert capsys.readouterr().err == ""
    assert cli.main(["grade", "student.py:Good", "--rules", "no_such_rules"]) == 2


def test_the_markdown_score_distribution_has_no_empty_rows(submissions):
    report = grade(f"{submissions / 'student.py'}:Good", "yacht", games=4, seed=1, limits=FAST, isolated=ISOLATED)
    table = render_markdown(report).split("## Score distribution")[1].split("\n\n")[1]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| ")]
    assert rows and all(any(cell.strip() not in ("", "0") for cell in row.split("|")[2:-1]) for row in rows)


def test_terminal_lines_replace_control_and_bidirectional_characters():
    """An escape sequence, a line break, or U+202E (right-to-left override: ``evil\u202eyp.txt`` shows as
    ``eviltxt.py``) in what a submission wrote reaches the terminal as ``?``."""
    from agents.course.grade_report import summary_text_line

    assert summary_text_line("a\x1b[2Jb\nc\u202ed\u2066e\u200ff é") == "a?[2Jb?c?d?e?f é"


def test_settings_merge_defaults_config_and_command_line(tmp_path):
    from agents.course.grader import settings

    config = tmp_path / "grading.toml"
    config.write_text("rules = 'my_rules.toml'\ngames = 50\noptions = { joker = 'free' }\nseed = 4\n")
    chosen = settings(config, games=7, seed=None, options={"x": "1"})
    assert chosen["games"] == 7 and chosen["seed"] == 4  # given wins, None is not given
    assert chosen["rules"] == str(tmp_path / "my_rules.toml")  # next to the config
    assert chosen["options"] == {"joker": "free", "x": "1"} and chosen["decision_seconds"] == 5.0
    assert settings()["rules"] == "yahtzee"


def test_report_json_reads_back_as_the_report(submissions):
    from agents.course.grader import report_json

    report = run_grade(submissions, "Good", games=2)
    text = report_json(report)
    assert json.loads(text) == json.loads(json.dumps(report))
    lines = [line for line in text.splitlines() if '"moves"' in line]
    assert len(lines) == len(report["replays"]) == 2  # the replays take one line a game
    lines = [line for line in text.splitlines() if '"alternatives"' in line]
    assert len(lines) == len(report["replay_detail"]["games"]) == 2  # so do the detailed games' values


def test_frames_from_the_worker_are_parsed_defensively():
    """Whatever the submission writes on the socket is a ProtocolError, never a crash of the grader."""
    import socket
    import struct

    from agents.course.protocol import ProtocolError, nesting_depth, receive

    def frame(data: bytes) -> bytes:
        return struct.pack("!I", len(data)) + data

    bad = [
        frame(b"[" * 100_000 + b"]" * 100_000),
        frame(b'{"a":' * 30_000 + b"1" + b"}" * 30_000),
        frame(b'{"ok":true,"action":1' + b"0" * 5000 + b"}"),
        frame(b'{"ok":true,"action":1e999999}'),
        frame(b'{"ok":true,"action":NaN}'),
        frame(b"\xff\xfe"),
        frame(b"[1,2]"),
        struct.pack("!I", 1 << 30),
    ]
    for data in bad:
        left, right = socket.socketpair()
        with left, right:
            left.sendall(data)
            with pytest.raises(ProtocolError):
                receive(right, untrusted=True)
    left, right = socket.socketpair()
    with left, right:
        left.sendall(frame(b'{"ok":true,"action":35,"message":"[[[[[[[[[[[[[[[[[[[["}'))
        assert receive(right, untrusted=True)["action"] == 35  # brackets in strings do not count
    assert nesting_depth(b'{"a":[[1],{"b":"]]]]"}]}') == 8  # small: not scanned
    assert nesting_depth(b'[[[[[[[[["x"]]]]]]]]]') == 9
    assert nesting_depth(b'[[[[[[[[["a\\"[[[[[[[[[[[[[[[[[[[[\\\\"]]]]]]]]]') == 9  # escaped quotes stay in the string
    # an unterminated string of escaped quotes: quadratic for a backtracking pattern (minutes at this size)
    assert nesting_depth(b"[" * 9 + b'"' + b'\\"' * 128_000) == 9


def test_grading_untrusted_code_needs_isolation_or_an_explicit_flag(submissions, monkeypatch):
    import agents.course.sandbox as sandbox

    monkeypatch.setattr(sandbox, "isolation_problem", lambda: "isolating submissions needs Linux; this is plan9")
    with pytest.raises(ValueError, match="plan9; to grade without isolation .* pass --unisolated"):
        run_grade(submissions, "Good", isolated=True)
    report = run_grade(submissions, "Good", games=1, isolated=False)
    assert report["isolation"] == {"isolated": False, "method": "none"}
    assert report["status"] == "ok" and any("UNISOLATED" in line for line in report["problems"])


def test_a_really_illegal_action_is_an_illegal_action_not_a_failed_game(submissions):
    report = run_grade(submissions, "Illegal", games=2)
    row = report["agents"]["submission"]
    assert row["illegal_actions"] == 2 and row["failed_games"] == {}
    assert [m["mistake"] for m in row["mistakes"]] == ["illegal action 31"]
    assert row["regret_failure_mean"] == 0 and row["regret_illegal_mean"] == pytest.approx(row["regret_mean"])
    assert [game["failure"] for game in report["replays"]] == [None, None]
    assert "illegal actions 0.00" not in summary_text(report)


def test_an_action_beyond_int32_is_named_as_it_was_answered(submissions):
    report = run_grade(submissions, "Huge", games=1)
    row = report["agents"]["submission"]
    assert row["illegal_actions"] == 1
    assert [m["mistake"] for m in row["mistakes"]] == [f"illegal action {2**40}"]


def test_the_regret_parts_shown_add_up_to_the_total_shown():
    from agents.course.grade_report import regret_split, split_shown

    rng = np.random.default_rng(0)
    for _ in range(2000):
        parts = (rng.random(4) * rng.choice([0.01, 1, 100], size=4)).tolist()
        total, shown = split_shown(parts)
        assert sum(round(float(part) * 100) for part in shown) == round(float(total) * 100)
        assert abs(float(total) - sum(parts)) <= 0.005 + 1e-9
        assert all(abs(float(a) - b) < 0.01 + 1e-9 for a, b in zip(shown, parts))
    row = {
        "regret_mean": 0.005 + 0.005 + 0.005,
        "regret_keep_mean": 0.005,
        "regret_box_mean": 0.005,
        "regret_illegal_mean": 0.005,
        "regret_failure_mean": 0.0,
    }
    total, split = regret_split(row)  # naive rounding would show 0.01 + 0.01 + 0.01 = 0.02
    assert [label for label, _ in split] == ["keeps", "boxes", "illegal actions", "failed games"]
    assert sum(float(v) for _, v in split) == pytest.approx(float(total))


def test_the_report_explains_luck(submissions):
    from agents.course.grade_report import LUCK_NOTE

    report = json.loads(json.dumps(run_grade(submissions, "Good", games=1)))
    assert "luck-free" in summary_text(report)
    report["agents"]["optimal"]["percent_of_optimal"] = 100.42
    report["agents"]["optimal"]["estimated_percent_of_optimal"] = 100.0
    assert "above 100 is luck" not in summary_text(report)  # the summary shows only the submission's row
    report["agents"]["submission"]["percent_of_optimal"] = 100.42
    summary = summary_text(report)
    assert "above 100 is luck in the dice" in summary
    report["agents"]["submission"]["percent_of_optimal"] = 90.0
    page = render_html(report)
    assert "100.4%" in page and "100.00%" in page
    import html as html_module

    assert html_module.escape(LUCK_NOTE) in page and "never exceeds 100%" in LUCK_NOTE
    assert "it can exceed 100%" in render_markdown(report)
    report["agents"]["optimal"]["percent_of_optimal"] = 99.0
    assert "above 100 is luck" not in summary_text(report)


def test_mistakes_word_a_scratch_as_a_scratch():
    from agents.evaluation.benchmark import _mistake_label, benchmark

    rules = load_rules("yahtzee")
    yahtzee, large = 32 + rules.box_index("yahtzee"), 32 + rules.box_index("large_straight")
    label, kind = _mistake_label(rules, [1, 1, 2, 3, 5], large, yahtzee, {large: 0, yahtzee: 0})
    assert (label, kind) == ("scratched large straight (0 points) instead of scratching yahtzee", "box")
    label, _ = _mistake_label(rules, [2, 3, 4, 5, 6], yahtzee, large, {large: 40, yahtzee: 0})
    assert label == "scratched yahtzee (0 points) instead of scoring large straight"
    # random play scratches often: the labels say so, with the boxes' names as people write them
    result = benchmark("yacht", ["random"], games=30, seed=2, top_mistakes=50)
    labels = [m["mistake"] for m in result.data["agents"]["random"]["mistakes"]]
    assert any(label.startswith("scratched ") and "(0 points)" in label for label in labels), labels
    assert not any("_" in label for label in labels)
    examples = [m["worst_example"]["taken"] for m in result.data["agents"]["random"]["mistakes"]]
    assert any(text.startswith("scratch ") for text in examples)


def naive_mistakes(rules, calls):
    """The mistakes table built one mistake at a time with the one-game scorer: the reference of ``_tally``."""
    from agents.evaluation.benchmark import _describe, _mistake_label
    from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS, ROLL_DICE
    from dice_poker_env.engine.game import five_kind_box_full, score_points
    from dice_poker_env.engine.tables import compile_rules

    one = compile_rules(rules).one_game
    table: dict = {}
    for per_game, actions, legal, best, losses, rolls, _, _, observations in calls:
        game = np.repeat(np.arange(len(per_game)), per_game)
        for i in np.flatnonzero(losses > 0):
            filled = sum(1 << k for k, flag in enumerate(observations["filled"][i]) if flag)
            scores = [int(v) for v in observations["scores"][i]]
            first = int(observations["rolls_left"][i]) == 2
            upper, roll = int(np.ravel(observations["upper_total"][i])[0]), int(rolls[i])
            full = five_kind_box_full(one, filled, scores)
            taken, top, dice = int(actions[i]), int(best[i]), ROLL_DICE[rolls[i]]
            points = {
                a: int(score_points(one, filled, upper, full, roll, first, a - N_KEEP_ACTIONS)[0])
                for a in ((taken, top) if legal[i] else (top,))
                if a >= N_KEEP_ACTIONS
            }
            label, kind = (
                _mistake_label(rules, dice, taken, top, points) if legal[i] else (f"illegal action {taken}", "illegal")
            )
            entry = table.setdefault(label, [0.0, 0, kind, -1.0, None])
            entry[0] += float(losses[i])
            entry[1] += 1
            if losses[i] > entry[3]:
                entry[3] = float(losses[i])
                taken_text = _describe(rules, dice, taken, points.get(taken)) if legal[i] else label
                entry[4] = (taken_text, _describe(rules, dice, top, points.get(top)), int(game[i]))
    return table


@pytest.mark.parametrize("rules_name", ["yahtzee", "school_poker"])
def test_the_mistakes_table_is_the_one_built_one_mistake_at_a_time(rules_name, monkeypatch):
    """``_tally`` groups the mistakes by label with array operations: its table (labels in order, sums to the
    last bit, counts, worst examples) is the one a plain loop over the mistakes builds, over two calls (the
    second adds to the first's entries) and with illegal actions among them."""
    import agents.evaluation.benchmark as bench
    from agents.players.registry import make_agent

    rules = load_rules(rules_name)
    solution = bench.load_solution(rules, True)
    seen = []
    real = bench._tally
    monkeypatch.setattr(bench, "_tally", lambda *args: seen.append(args) or real(*args))
    bench.play_games(rules, make_agent("greedy", rules), list(range(120)), solution)
    (_, _, per_game, actions, legal, best, losses, rolls, rolls_left, turns, _, observations) = seen[0]
    actions, legal = actions.copy(), legal.copy()
    odd = np.flatnonzero(losses > 0)[::7]  # some mistakes made illegal moves (their loss stays)
    actions[odd], legal[odd] = 999, False
    half = int(per_game[:60].sum())
    calls = [
        (per_game[:60], *(a[:half] for a in (actions, legal, best, losses, rolls, rolls_left, turns))),
        (per_game[60:], *(a[half:] for a in (actions, legal, best, losses, rolls, rolls_left, turns))),
    ]
    obs = [{k: v[:half] for k, v in observations.items()}, {k: v[half:] for k, v in observations.items()}]
    out = bench._Partial()
    for call, part in zip(calls, obs):
        real(rules, out, *call, None, part)
    expected = naive_mistakes(rules, [(*call, part) for call, part in zip(calls, obs)])
    assert list(out.mistakes) == list(expected) and len(expected) > 50
    for label, (total, count, kind, worst, example) in out.mistakes.items():
        assert (total, count, kind, worst) == tuple(expected[label][:4]), label  # the same floats, in order
        assert (example["taken"], example["best"]) == expected[label][4][:2], label


def test_a_failure_message_keeps_all_of_a_multi_line_message_on_one_line():
    """A submission's exception is reported from its ``Type: ...`` line on, joined on one line (its last line
    alone hid the start of the message); a SyntaxError leaves its source excerpt out."""
    from agents.course.sandbox_worker import _failure

    try:
        raise ValueError("first line\nsecond line\nlast line")
    except ValueError as error:
        assert _failure("exception", error)["message"] == "ValueError: first line / second line / last line"
    try:
        compile("class Agent(:\n", "student.py", "exec")
    except SyntaxError as error:
        assert _failure("load", error)["message"].startswith("SyntaxError: ")
    try:
        raise KeyError
    except KeyError as error:
        assert _failure("exception", error)["message"] == "KeyError"


def _run_bpf(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """What a classic BPF seccomp program returns for one system call (the instructions the sandbox's filter uses)."""
    import struct

    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack_from("=HBBI", program, 8 * k) for k in range(len(program) // 8)]
    pc, acc = 0, 0
    for _ in range(len(code)):  # the kernel allows forward jumps only: at most one pass
        op, jt, jf, k = code[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]  # JEQ, JGE, JSET
            pc += jt if taken else jf
        pc += 1
    raise AssertionError("the program ran off its end")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_seccomp_filter_refuses_memory_outside_the_address_space_and_child_processes(machine):
    """Checked by running the program (a small BPF interpreter): the calls refused with EPERM, clone3 with ENOSYS (the
    C library then makes threads with clone), clone allowed for a thread only unless child processes are, another
    ABI (32-bit, x32) refused whole; an unknown architecture gets no filter."""
    from agents.course.isolation import _SYSCALLS, seccomp_filter

    allow, eperm, enosys = 0x7FFF0000, 0x00050001, 0x00050026
    arch, numbers = _SYSCALLS[machine]
    thread, process = 0x003D0F00, 0x01200011  # pthread_create's clone flags, fork's
    for child_processes in (False, True):
        program = seccomp_filter(child_processes, machine)
        assert program is not None and len(program) % 8 == 0

        def verdict(nr: int, arg0: int = 0, abi: int = arch, prog: bytes = program) -> int:
            return _run_bpf(prog, abi, nr, arg0)

        for name in ("memfd_create", "memfd_secret", "shmget", "msgget", "io_uring_setup", "userfaultfd", "bpf"):
            assert verdict(numbers[name]) == eperm, name
        assert verdict(numbers["clone3"]) == enosys
        assert verdict(numbers["clone"], thread) == allow
        assert verdict(numbers["clone"], process) == (allow if child_processes else eperm)
        for name in ("fork", "vfork"):
            if name in numbers:
                assert verdict(numbers[name]) == (allow if child_processes else eperm), name
        for name in ("read", "write", "mmap"):  # a few everyday calls: x86-64's 0, 1, 9; AArch64's 63, 64, 222
            nr = {"x86_64": {"read": 0, "write": 1, "mmap": 9}, "aarch64": {"read": 63, "write": 64, "mmap": 222}}
            assert verdict(nr[machine][name]) == allow, name
        assert verdict(0, abi=0x40000003) == eperm  # i386
        if machine == "x86_64":
            assert verdict(0x40000000 | 319) == eperm  # x32's memfd_create
    assert seccomp_filter(False, "riscv64") is None


def test_child_processes_is_a_grading_setting_that_must_be_true_or_false(tmp_path):
    from agents.course.grader import read_config

    path = tmp_path / "grading.toml"
    path.write_text("child_processes = true\n")
    assert read_config(path) == {"child_processes": True}
    assert Limits(child_processes=True).child_processes
    path.write_text("child_processes = 1\n")
    with pytest.raises(ValueError, match="child_processes must be bool, got 1"):
        read_config(path)
    with pytest.raises(ValueError, match="child_processes must be true or false, got 1"):
        Limits(child_processes=1)  # type: ignore[arg-type]


#: tries the solver, catches the refusal and plays on; then a bug of its own (``bug``), or the import again, in act
CAUTIOUS = """try:
    from dice_poker_env.solver import solve
except ImportError:
    solve = None


class Agent:
    def __init__(self, rules, mode="bug"):
        self.mode = mode

    def act(self, observation, action_mask):
        if self.mode == "bug":
            raise IndexError("an index bug of its own")
        from dice_poker_env.solver import solve  # noqa: F401 - under forbid: refused here
        return 32
"""


@pytest.mark.parametrize("mode, kind", [("bug", "exception"), ("import", "solver")])
def test_under_forbid_only_the_refused_import_is_a_solver_failure(tmp_path, mode, kind):
    """A submission that tried the solver once, caught the refusal and played on, then failed of a bug of its own:
    the failure is its kind (``exception``), not ``solver`` as it was (every later failure was called ``solver``:
    'the submission did not load (solver)' for a constructor's own error); the attempt is still in the problems. The
    refused import itself (or an error raised from it) is ``solver``."""
    path = tmp_path / "cautious.py"
    path.write_text(CAUTIOUS)
    report = grade(
        f"{path}:Agent,mode={mode!r}", "yacht", games=1, seed=1, limits=FAST, isolated=ISOLATED, solver="forbid"
    )
    assert [failure["kind"] for failure in report["failures"]["recorded"]] == [kind]
    assert report["solver"]["imported"] == ["dice_poker_env.solver"]
    assert any("tried to import (forbidden)" in line for line in report["problems"])
