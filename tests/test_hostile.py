"""Hostile submissions (tests/hostile/, one file per attack) against the isolated grader.

Each is graded on a few games; the test checks that its grade is the true one (the scores
of the honest strategy it also plays, on the same games), that nothing it tried escaped
(no file written outside its scratch folder, no secret in what it printed, no connection,
no process left running) and the kind of every failure. Skipped only where this machine
cannot isolate submissions (no bubblewrap, no user namespaces, not Linux).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from agents.course.grade_report import render_html, render_markdown
from agents.course.grader import grade
from agents.course.isolation import isolation_problem
from agents.course.sandbox import Limits
from agents.evaluation.benchmark import benchmark, load_solution
from agents.players.registry import make_agent
from dice_poker_env import load_rules

PROBLEM = isolation_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"no isolation on this machine: {PROBLEM}")

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "hostile"
RULES = "yacht"
SEED = 5
LIMITS = Limits(
    decision_seconds=10,
    game_seconds=60,
    load_seconds=60,
    total_seconds=120,
    memory_mb=256,
    processes=32,
    output_kb=64,
    max_failures=3,
)


def grade_file(name: str, args: str = "", games: int = 2, **kwargs):
    kwargs.setdefault("limits", LIMITS)
    return grade(f"{HOSTILE / name}:Agent{args}", RULES, games=games, seed=kwargs.pop("seed", SEED), **kwargs)


def honest(games: int = 2, seed: int = SEED) -> list[int]:
    """The true scores: the honest strategy, played in this process on the same games."""
    agent = make_agent(f"{HOSTILE / 'honest.py'}:Agent", RULES)
    return benchmark(RULES, [("x", agent)], games=games, seed=seed, regret=False).scores["x"].tolist()


def scores(report) -> list[int]:
    return [game["score"] for game in report["replays"]]


def processes_with(marker: str, wait: float = 5.0) -> list[str]:
    """Command lines of the processes on this machine that hold ``marker`` (after up to ``wait`` s for
    processes being killed to go)."""
    deadline = time.monotonic() + wait
    while True:
        found = _processes_with(marker)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])  # the field after the state
    except (OSError, ValueError, IndexError):
        return 0


def _another_workers(pid: int) -> bool:
    """Whether ``pid`` descends from another pytest-xdist worker (a sibling of this one, whose hostile tests run
    at the same time); an orphan, reparented away from its worker, is nobody's: it is what the check finds."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return False
    me, controller = os.getpid(), os.getppid()
    ancestor, steps = _parent(pid), 0
    while ancestor > 1 and steps < 64:
        if ancestor == me:
            return False
        if ancestor != controller and _parent(ancestor) == controller:
            return True
        ancestor, steps = _parent(ancestor), steps + 1
    return False


def _processes_with(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                line = handle.read().decode(errors="replace")
        except OSError:
            continue
        if marker in line and not _another_workers(int(pid)):
            found.append(line.replace("\0", " "))
    return found


@pytest.fixture(autouse=True)
def no_worker_survives():
    yield
    # the sandboxes of this file (bubblewrap's command line names the submission; its worker lives in its
    # PID namespace, so it cannot outlive it); other graders on the machine are not this test's business
    assert processes_with(str(HOSTILE)) == []


def test_the_grader_command_line_config_and_environment_are_out_of_reach(tmp_path):
    """proc_spy.py through ``python -m agents.commands.grade --seed ... --config ...`` with a token in its environment."""
    config = tmp_path / "grading.toml"
    config.write_text("rules = 'yacht'\ngames = 2\nseed = 5\ndecision_seconds = 10\nmemory_mb = 256\n")
    env = dict(os.environ, INSTRUCTOR_TOKEN="secret-token-4711", PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "agents.commands.grade",
            f"{HOSTILE / 'proc_spy.py'}:Agent,config={str(config)!r}",
            "--config",
            str(config),
            "--seed",
            str(SEED),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["stdout"]["sample"].startswith("FOUND []"), report["stdout"]["sample"]
    assert report["status"] == "ok" and scores(report) == honest()


def test_the_grader_environment_is_out_of_reach(monkeypatch):
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "secret-token-4712")
    report = grade_file("env_reader.py")
    sample = report["stdout"]["sample"]
    assert sample.startswith("ENV") and "secret-token-4712" not in sample and "INSTRUCTOR" not in sample
    assert report["status"] == "ok" and scores(report) == honest()


def test_the_solver_cache_cannot_be_poisoned():
    cache = Path(os.environ["DICE_POKER_CACHE"])
    expected = load_solution(load_rules(RULES), required=True).expected_score  # solved into the cache
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in cache.iterdir()}
    assert before
    report = grade_file("cache_poison.py", f",cache={str(cache)!r}")
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in cache.iterdir()}
    assert after == before and report["stdout"]["sample"].startswith("POISONED []")
    assert report["optimal_expected_score"] == pytest.approx(expected)
    assert report["status"] == "ok" and scores(report) == honest()


def test_nothing_is_written_outside_the_scratch_folder(tmp_path):
    outside = [ROOT / f"hostile-{uuid.uuid4().hex}.txt", Path.home() / f"hostile-{uuid.uuid4().hex}.txt"]
    outside += [tmp_path / "hostile.txt", Path("/tmp/hostile-scratch.txt")]
    for path in outside:
        assert not path.exists()
    try:
        report = grade_file("writer.py", f",targets={'|'.join(map(str, outside))!r}")
        assert [path for path in outside if path.exists()] == []
    finally:
        for path in outside:
            path.unlink(missing_ok=True)
    # it could write only in its own scratch folder (its /tmp, also its $HOME), gone now
    wrote = report["stdout"]["sample"]
    assert wrote.startswith("WROTE") and "/tmp/hostile-scratch.txt" in wrote and str(ROOT) not in wrote
    assert "/dev/" not in wrote  # /dev is read-only
    assert report["status"] == "ok" and scores(report) == honest()


def test_other_submissions_are_out_of_reach(tmp_path):
    other = tmp_path / "other_student.py"
    other.write_text("SECRET = 'the other student's work 4713'\n")
    report = grade_file("reader.py", f",other={str(other)!r}")
    sample = report["stdout"]["sample"]
    assert "4713" not in sample and "['reader.py']" in sample  # its folder holds only itself
    assert report["status"] == "ok" and scores(report) == honest()


def test_no_network():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        report = grade_file("network.py", f",port={listener.getsockname()[1]}")
        with pytest.raises(BlockingIOError):  # nobody connected
            listener.accept()
    assert report["stdout"]["sample"].startswith("NO NETWORK")
    assert report["status"] == "ok" and scores(report) == honest()


def test_hard_limits_cannot_be_raised():
    report = grade_file("rlimit_raise.py")
    failures = report["failures"]["recorded"]
    assert [f["kind"] for f in failures] == ["exception", "exception"]
    assert all("MemoryError" in f["message"] for f in failures)
    soft_hard, after = report["stdout"]["sample"][len("LIMITS ") :].split(") (")
    assert after.startswith(soft_hard.split(", ")[0].lstrip("("))  # still the limit the worker set


#: limits under which a submission may start processes (by default it may not)
FORKING = dataclasses.replace(LIMITS, child_processes=True)


def test_no_process_outlives_its_worker():
    marker = f"hostile-{uuid.uuid4().hex}"
    report = grade_file("fork_leave.py", f",marker={marker!r}", limits=FORKING)
    assert report["status"] == "ok" and scores(report) == honest()
    assert processes_with(marker) == []


def test_a_fork_bomb_is_stopped_by_the_process_limit():
    marker = f"hostile-{uuid.uuid4().hex}"
    report = grade_file("fork_bomb.py", f",marker={marker!r}", limits=FORKING)
    forked = int(report["stdout"]["sample"].split()[1])
    assert 0 < forked < LIMITS.processes
    assert report["status"] == "ok" and scores(report) == honest()
    assert processes_with(marker) == []


def test_by_default_a_submission_starts_no_process_and_is_told_why():
    """Its one process's ``memory_mb`` is then all it may hold: a process it started would have a limit of its own.
    Its threads run (numpy's, a thread pool's)."""
    marker = f"hostile-{uuid.uuid4().hex}"
    report = grade_file("fork_bomb.py", f",marker={marker!r}")
    assert report["stdout"]["sample"].startswith("FORKED 0")
    assert report["status"] == "ok" and scores(report) == honest()
    report = grade_file("fork_leave.py", f",marker={marker!r}")
    assert report["status"] == "not_loaded", report["status"]
    message = report["failures"]["recorded"][0]["message"]
    assert message.endswith(
        "PermissionError: [Errno 1] Operation not permitted (the sandbox refuses child "
        "processes, memfd_create and System V IPC; threads are allowed)"
    ), message
    assert processes_with(marker) == []


@pytest.mark.parametrize("limits", [LIMITS, FORKING], ids=["default", "child_processes"])
def test_no_memory_is_held_outside_the_address_space_limit(limits):
    """Before the seccomp filter, one process held 4 memfd files of 60 MiB (its file size limit) beside a
    ``memory_mb`` of 100, and could hold ``open_files`` of them."""
    report = grade_file("memory_outside.py", limits=limits)
    assert report["stdout"]["sample"].startswith("HELD nothing"), report["stdout"]["sample"]
    assert report["status"] == "ok" and scores(report) == honest()


def test_huge_ints_floats_and_none_are_malformed():
    report = grade_file("huge_int.py", games=3)
    failures = report["failures"]["recorded"]
    assert [f["kind"] for f in failures] == ["malformed"] * 3
    assert (
        "beyond int64" in failures[0]["message"]
        and "33.0" in failures[1]["message"]
        and "None" in failures[2]["message"]
    )
    assert any("(3 malformed)" in line for line in report["problems"]), report["problems"]
    assert report["agents"]["optimal"]["games"] == 3


@pytest.mark.parametrize(
    "attack, kind",
    [
        ("deep", "protocol"),
        ("deep_object", "protocol"),
        ("bignum", "protocol"),
        ("kind", "exception"),  # a "kind" it sends is not taken: an answer that is not ok is its exception
        ("oversize", "protocol"),
        ("garbage", "protocol"),
        ("nan", "protocol"),
    ],
)
def test_frames_it_writes_itself_are_protocol_failures(attack, kind):
    report = grade_file("raw_frames.py", f",attack={attack!r}", games=1)
    assert [f["kind"] for f in report["failures"]["recorded"]] == [kind]
    assert report["agents"]["optimal"]["games"] == 1


def test_signals_reach_nothing_outside():
    report = grade_file("signal_parent.py", f",grader_pid={os.getpid()}")
    assert report["status"] == "ok" and report["complete"] and scores(report) == honest()
    assert report["stdout"]["sample"].rstrip().endswith("INJECTED []"), report["stdout"]["sample"]


def test_a_stopped_worker_times_out():
    limits = Limits(decision_seconds=1.5, game_seconds=60, load_seconds=60, memory_mb=256, max_failures=3)
    report = grade_file("sigstop.py", limits=limits)
    assert [f["kind"] for f in report["failures"]["recorded"]] == ["timeout", "timeout"]


@pytest.mark.parametrize("stream", [1, 2])
def test_an_output_flood_is_a_failure(stream):
    report = grade_file("flood.py", f",stream={stream}", games=1)
    assert [f["kind"] for f in report["failures"]["recorded"]] == ["output"]
    assert report["stdout"]["bytes"] <= LIMITS.file_mb << 20


def test_the_total_time_budget_ends_a_slow_submission():
    # a budget of 10 s (loading included: a few seconds on a busy machine) against 6 games of 12 decisions of
    # 0.2 s (at least 14.4 s): the budget ends some game part-way (its points so far count, at most a whole
    # game's), and the last game, which could start only after 12 s, never starts
    limits = Limits(decision_seconds=5, game_seconds=60, load_seconds=60, total_seconds=10, memory_mb=256)
    start = time.monotonic()
    report = grade_file("slow.py", games=6, limits=limits)
    assert time.monotonic() - start < 60
    assert report["status"] == "partial" and not report["complete"]
    assert report["failures"]["stopped_because"] == "budget"
    assert [f["kind"] for f in report["failures"]["recorded"]] == ["budget"]
    got, full = scores(report), honest(6)
    assert got[5] == 0 and all(g <= f for g, f in zip(got, full)), (got, full)


def test_the_solver_policy():
    forbidden = grade_file("solver_user.py", solver="forbid", games=1)
    assert forbidden["status"] == "not_loaded"
    assert forbidden["failures"]["recorded"][0]["kind"] == "solver"
    assert "forbids the library's solver and agents" in forbidden["failures"]["recorded"][0]["message"]
    flagged = grade_file("solver_user.py", solver="flag", games=1)
    assert flagged["status"] == "ok" and flagged["solver"]["imported"] == ["dice_poker_env.solver"]
    assert any("solver" in line for line in flagged["problems"])
    honest_flagged = grade_file("honest.py", solver="flag", games=1)
    assert honest_flagged["solver"]["imported"] == [] and honest_flagged["problems"] == []


def test_an_agent_that_guessed_a_small_seed_is_flagged_and_gains_nothing_luck_free():
    """``clairvoyant.py`` finds the grading seed (5) from its first game's dice and then plays knowing every die:
    its percent of optimal passes 100, but the luck-free percent charges its departures from the expected-value
    play, and its luck, far beyond chance, is flagged. An honest agent's luck on the same games is not."""
    from agents.course.classroom import flags, luck_z
    from agents.course.rubric import load_rubric, score_report

    report = grade_file("clairvoyant.py", games=12, solver="forbid")
    row = report["agents"]["submission"]
    assert report["status"] == "ok" and row["percent_of_optimal"] > 100
    assert row["estimated_percent_of_optimal"] < row["percent_of_optimal"] - 30
    assert luck_z(report) > 8 and "luck:+" in flags(report)
    fair = grade_file("honest.py", games=12)
    assert abs(luck_z(fair)) < 4 and "luck" not in flags(fair)
    earned = {e.name: e for e in score_report(load_rubric(ROOT / "examples/course/instructor/rubric.toml"), report)}
    assert earned["luck-free percent of optimal"].points < 30  # its raw percent, past 95%, would earn all 65


def test_forbid_hides_the_compiled_copies_and_the_trained_weights():
    """Under ``forbid`` the sandbox covers the agents' ``__pycache__`` folders (a ``.pyc`` loads without the import
    hook) and ``agents/policies``; ``mode=pyc`` of the hostile agent then finds no compiled copy (see below)."""
    from agents.course.sandbox import CODE_DIR, SandboxedAgent

    agent = SandboxedAgent(str(HOSTILE / "library_agent.py") + ":Agent", RULES, solver="forbid", start=False)
    command = " ".join(agent._command(3)[0])
    for covered in ("agents/players/__pycache__", "agents/policies", "dice_poker_env/solver"):
        assert f"--tmpfs {CODE_DIR}/{covered} " in command
    assert f"--ro-bind /dev/null {CODE_DIR}/agents/players/heuristic.py " in command
    allowed = SandboxedAgent(str(HOSTILE / "library_agent.py") + ":Agent", RULES, solver="allow", start=False)
    assert "__pycache__" not in " ".join(allowed._command(3)[0])


@pytest.mark.parametrize("mode", ["import", "source", "pyc", "policies"])
def test_the_solver_policy_covers_the_librarys_agents(mode):
    """A submission that plays the library's heuristic (or a trained policy) as its own: refused under ``forbid``,
    by the import hook, and by the files' absence from the sandbox."""
    forbidden = grade_file("library_agent.py", f",mode={mode}", solver="forbid", games=1)
    assert forbidden["status"] == "not_loaded"
    failure = forbidden["failures"]["recorded"][0]
    if mode == "import":
        assert failure["kind"] == "solver" and "'import agents.players.heuristic' is not allowed" in failure["message"]
    else:  # the files are not there
        assert ("PermissionError" in failure["message"] or "FileNotFoundError" in failure["message"]) and (
            forbidden["stdout"]["bytes"] == 0
        )
    if mode == "pyc":
        return  # (allowed, it loads where the install compiled the module, which a checkout may not have done)
    allowed = grade_file("library_agent.py", f",mode={mode}", solver="allow", games=1)
    assert allowed["status"] == "ok"


def test_check_reports_a_forbidden_solver_import_the_agent_caught(tmp_path):
    """Under ``solver: forbid`` an agent that catches the refused import plays on; grading lists the attempt, so
    ``dice-poker check`` does too (it said "interface OK")."""
    from agents.course.checker import check, check_json

    sneak = tmp_path / "sneak.py"
    sneak.write_text(
        "try:\n    import dice_poker_env.solver  # noqa: F401\nexcept ImportError:\n    pass\n"
        + (HOSTILE / "honest.py").read_text()
    )
    result = check(f"{sneak}:Agent", RULES, games=1, limits=LIMITS, solver="forbid")
    assert not result.ok and any("forbids" in line and "dice_poker_env.solver" in line for line in result.problems)
    assert check_json(result)["solver_imports"] == ["dice_poker_env.solver"]
    honest = check(f"{HOSTILE / 'honest.py'}:Agent", RULES, games=1, limits=LIMITS, solver="forbid")
    assert honest.ok and check_json(honest)["solver_imports"] == []
    plain = tmp_path / "plain.py"  # the import not caught: it does not load, one problem says so (not two)
    plain.write_text("import dice_poker_env.solver  # noqa: F401\n" + (HOSTILE / "honest.py").read_text())
    failed = check(f"{plain}:Agent", RULES, games=1, limits=LIMITS, solver="forbid")
    assert len(failed.problems) == 1 and "is not allowed" in failed.problems[0]


def test_markup_in_names_messages_and_output_is_escaped(tmp_path):
    evil = tmp_path / "<img src=x onerror=alert('file')>.py"
    evil.write_text((HOSTILE / "injection.py").read_text())
    report = grade(f"{evil}:Agent", RULES, games=1, seed=SEED, limits=LIMITS)
    assert report["failures"]["recorded"][0]["kind"] == "exception"
    markdown, page = render_markdown(report), render_html(report)
    page = page.replace('<script type="application/json" id="replay-data">', "").replace("<script>\n(function", "")
    assert "<script" not in page and "<img" not in page
    # Markdown: the text outside code blocks holds no markup, and no code block ends early
    outside, fence = [], None
    for line in markdown.splitlines():
        if fence is None and line.startswith("```"):
            fence = line[: len(line) - len(line.lstrip("`"))]
        elif fence is not None and line == fence:
            fence = None
        elif fence is None:
            outside.append(line)
        else:
            assert not line.startswith(fence)
    text = "\n".join(outside)
    assert "<script" not in text and "<img" not in text and "](javascript:" not in text and fence is None
    assert "&lt;img src=x onerror=alert" in text  # the name and the message are there, inert


def test_an_interrupted_grading_still_writes_a_report_marked_partial(tmp_path):
    """SIGTERM (as Ctrl-C) to the grader in the middle of a slow submission: a report all the same, status 130."""
    out = tmp_path / "report"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agents.commands.grade",
            f"{HOSTILE / 'slow.py'}:Agent",
            "--rules",
            RULES,
            "--games",
            "50",
            "--memory-mb",
            "256",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        deadline = time.monotonic() + 300
        while not processes_with("/submission/slow.py", wait=0) and time.monotonic() < deadline:  # its sandbox
            time.sleep(0.2)
        time.sleep(1.0)  # a few decisions in
        process.terminate()
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "partial" and report["interrupted"] and not report["complete"]
    assert any("interrupted" in line for line in report["problems"])
    assert (out / "report.html").is_file() and (out / "report.md").is_file()


def test_under_allow_a_submission_may_play_the_librarys_optimal_agent(tmp_path):
    """solver = "allow" (the default): a submission that builds the optimal agent solves inside the sandbox in one
    process (a pool of workers needs /dev/shm, which the sandbox mounts read-only: it failed to load)."""
    player = tmp_path / "player.py"
    player.write_text(
        "from agents.players.registry import make_agent\n\n\nclass Agent:\n    def __init__(self):\n"
        "        self.optimal = make_agent('optimal', 'yacht')\n\n"
        "    def act(self, observation, action_mask):\n        return self.optimal.act(observation, action_mask)\n"
    )
    report = grade(f"{player}:Agent", RULES, games=1, seed=SEED, limits=LIMITS)
    assert report["status"] == "ok", report.get("problems")
