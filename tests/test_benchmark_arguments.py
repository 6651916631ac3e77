"""The benchmark scripts refuse an out-of-range number while parsing their arguments (agents/commands/arguments.py).

Each script runs as a user runs it (a new Python process) with one bad option: status 2, argparse's usage and a
one-line error naming the option, the bound and the value, no traceback and no output: nothing was done. The
options checked are those whose bad values crashed, hung or silently measured nothing after minutes of work.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.commands.arguments import at_least, more_than

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

#: (script, arguments, the error after "SCRIPT: error: "): at least one bad value of every script with a checked option
CASES = [
    ("average_checkpoints.py", ["RUN_DIR", "OUT.npz", "--from", "-1"], "argument --from: must be at least 0, got -1"),
    (
        "compare.py",
        ["NAME", "RESULT.json", "--budget", "10M", "--reps", "0"],
        "argument --reps: must be at least 1, got 0",
    ),
    ("bench_activation.py", ["--rows", "0"], "argument --rows: must be at least 1, got 0"),
    ("bench_benchmark.py", ["--games", "0"], "argument --games: must be at least 1, got 0"),
    ("bench_benchmark.py", ["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
    ("bench_class_grading.py", ["--rounds", "0"], "argument --rounds: must be at least 1, got 0"),
    ("bench_dataset.py", ["--episodes", "0"], "argument --episodes: must be at least 1, got 0"),
    ("bench_dataset.py", ["--episodes", "1000001"], "argument --episodes: must be at most 1000000, got 1000001"),
    ("bench_dataset_storage.py", ["--episodes", "0"], "argument --episodes: must be at least 1, got 0"),
    ("bench_duel.py", ["--boxes", "5", "1"], "argument --boxes: must be at least 2, got 1"),
    ("bench_duel.py", ["--boxes", "13"], "argument --boxes: must be at most 12, got 13"),
    ("bench_duel.py", ["--boxes"], "argument --boxes: expected at least one argument"),
    ("bench_duel.py", ["--layout-up-to", "13"], "argument --layout-up-to: must be at most 12, got 13"),
    ("bench_duplicate.py", ["--deals", "1"], "argument --deals: must be at least 2, got 1"),
    ("bench_env.py", ["--rounds", "0"], "argument --rounds: must be at least 1, got 0"),
    ("bench_grading.py", ["--starts", "0"], "argument --starts: must be at least 1, got 0"),
    ("bench_grading.py", ["--games", "-1"], "argument --games: must be at least 0, got -1"),
    (
        "bench_grading.py",
        ["--grades", "isolated,baseline"],
        "--grades: baseline is not one of isolated, unisolated (baseline needs --baseline)",
    ),
    ("bench_keep_points.py", ["--repeats", "0"], "argument --repeats: must be at least 1, got 0"),
    ("bench_match.py", ["--aec-games", "0"], "argument --aec-games: must be at least 2, got 0"),
    ("bench_ray.py", ["--num-cpus", "0"], "argument --num-cpus: must be at least 1, got 0"),
    ("bench_reach.py", ["--workers", "0"], "argument --workers: must be at least 1, got 0"),
    ("bench_sb3.py", ["--games", "0"], "argument --games: must be at least 1, got 0"),
    ("bench_solver.py", ["--repeat", "0"], "argument --repeat: must be at least 1, got 0"),
    ("bench_solver.py", ["--games", "-1"], "argument --games: must be at least 0, got -1"),
    ("bench_train.py", ["--updates", "0"], "argument --updates: must be at least 1, got 0"),
    ("bench_vector.py", ["--rounds", "0"], "argument --rounds: must be at least 1, got 0"),
    ("bench_vector.py", ["--seconds", "0"], "argument --seconds: must be more than 0, got 0"),
    ("bench_winning.py", ["--match", "-2"], "argument --match: must be at least 0, got -2"),
    ("interval_coverage.py", ["--datasets", "0"], "argument --datasets: must be at least 1, got 0"),
    ("interval_coverage.py", ["--reps", "100001"], "argument --reps: must be at most 100000, got 100001"),
    ("leaderboard.py", ["--reps", "0"], "argument --reps: must be at least 1, got 0"),
    ("leaderboard.py", ["--games", "10001"], "argument --games: must be at most 10000, got 10001"),
    ("profile_solver.py", ["--chunk", "0"], "argument --chunk: must be at least 1, got 0"),
    ("profile_train.py", ["--updates", "0"], "argument --updates: must be at least 1, got 0"),
    ("reach_check.py", ["--games", "0"], "argument --games: must be at least 1, got 0"),
]

#: numeric options left as plain ``type=int``, each with why any integer is fine there
UNCHECKED = {
    ("bench_duel.py", "--evaluate-up-to"): "a threshold: sizes up to it are evaluated, any number means some or none",
    ("reach_check.py", "--targets"): "scores: a target outside the reachable scores has probability 1 or 0",
    ("run_baselines.py", "--jobs"): "checked after parsing (--list ignores it)",
    ("run_baselines.py", "--seeds"): "checked against the named suites' seeds after parsing",
}


def _run(script: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # this checkout's packages
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=path),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("script, args, message", CASES, ids=[f"{s} {' '.join(a)}" for s, a, _ in CASES])
def test_a_bad_number_is_a_one_line_usage_error(script, args, message):
    done = _run(script, args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.startswith("usage: ")
    assert [line for line in done.stderr.splitlines() if "error:" in line] == [f"{script}: error: {message}"]


def test_leaderboard_games_goes_with_reference():
    done = _run("leaderboard.py", ["--games", "100"])
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == ""
    assert [line for line in done.stderr.splitlines() if "error:" in line] == [
        "leaderboard.py: error: --games goes with --reference (the games of the reference rows)"
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--option", "foo"], "--option expects NAME=VALUE, got 'foo'"),
        (["--option", "joker=bogus"], "option 'joker' must be one of"),
        (["no_such_ruleset"], "unknown ruleset 'no_such_ruleset'"),
    ],
)
def test_profile_solver_refuses_a_bad_ruleset_in_one_line(args, message):
    done = _run("profile_solver.py", args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], done.stderr


def _numeric_options(path: Path) -> dict[str, ast.expr]:
    """The options of a script's ``add_argument`` calls that have a ``type`` other than ``Path``: name -> type."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            kind = next((k.value for k in node.keywords if k.arg == "type"), None)
            name = next((a.value for a in node.args if isinstance(a, ast.Constant)), None)
            if kind is not None and isinstance(name, str) and ast.unparse(kind) != "Path":
                found[name] = kind
    return found


def _plain(kind: ast.expr) -> bool:
    return isinstance(kind, ast.Name) and kind.id in ("int", "float")


def test_every_numeric_option_of_a_benchmark_script_has_its_range_checked():
    """A new ``type=int`` or ``type=float`` option is noticed: it gets a range (``at_least``) or a reason here."""
    plain = {
        (path.name, name)
        for path in sorted(BENCHMARKS.glob("*.py"))
        for name, kind in _numeric_options(path).items()
        if _plain(kind)
    }
    assert plain == set(UNCHECKED)


def test_every_script_with_a_checked_option_is_run_here():
    checked = {
        path.name
        for path in BENCHMARKS.glob("*.py")
        if any(not _plain(kind) for kind in _numeric_options(path).values())
    }
    assert checked == {script for script, _, _ in CASES}


def test_at_least_returns_the_integer():
    assert at_least(1)("7") == 7 and type(at_least(1)("7")) is int
    assert at_least(0)("0") == 0 and at_least(-3)("-3") == -3  # the minimum itself is accepted
    assert at_least(5, most=12)("12") == 12
    assert at_least(1)(" 1_000 ") == 1000  # what int() accepts, as with type=int


@pytest.mark.parametrize(
    "check, text, message",
    [
        (at_least(1), "0", "must be at least 1, got 0"),
        (at_least(0), "-1", "must be at least 0, got -1"),
        (at_least(5, most=12), "13", "must be at most 12, got 13"),
        (at_least(1), "1.5", "must be an integer, got '1.5'"),
        (at_least(1), "many", "must be an integer, got 'many'"),
        (at_least(1), "", "must be an integer, got ''"),
    ],
)
def test_at_least_refuses_with_a_one_line_message(check, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as error:
        check(text)
    assert str(error.value) == message


def test_at_least_gives_argparse_a_usage_error(capsys):
    parser = argparse.ArgumentParser(prog="bench")
    parser.add_argument("--games", type=at_least(1), default=10)
    assert parser.parse_args([]).games == 10 and parser.parse_args(["--games", "3"]).games == 3
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--games", "0"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "bench: error: argument --games: must be at least 1, got 0"


def test_more_than_returns_the_float():
    assert more_than(0)("0.5") == 0.5 and more_than(0)("2") == 2.0 and type(more_than(0)("2")) is float


@pytest.mark.parametrize(
    "text, message",
    [
        ("0", "must be more than 0, got 0"),
        ("-1.5", "must be more than 0, got -1.5"),
        ("nan", "must be a finite number, got 'nan'"),
        ("inf", "must be a finite number, got 'inf'"),
        ("soon", "must be a number, got 'soon'"),
    ],
)
def test_more_than_refuses_with_a_one_line_message(text, message):
    with pytest.raises(argparse.ArgumentTypeError) as error:
        more_than(0)(text)
    assert str(error.value) == message


def _imports_of_the_project(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and any(
            name.split(".")[0] in ("agents", "dice_poker_env", "benchmarks")
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
        )
    ]


@pytest.mark.parametrize(
    "path", sorted([*BENCHMARKS.glob("*.py"), *(ROOT / "tools").glob("*.py")]), ids=lambda p: p.name
)
def test_a_script_measures_this_checkout_not_an_installed_copy(path):
    """A script that imports the project puts this checkout first on ``sys.path`` before it does, so the figure it
    prints is the code beside it, whatever copy of the package is installed (or none)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    imports = _imports_of_the_project(tree)
    if not imports:
        return
    inserts = [
        node.lineno
        for top in tree.body
        for node in ([top, *top.body] if isinstance(top, ast.If) else [top])
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "sys.path.insert"
    ]
    assert inserts and min(inserts) < min(imports), f"{path.name} imports the project before sys.path.insert(0, ROOT)"
