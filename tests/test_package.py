"""``import dice_poker_env``: the public names, env registration, and what the import loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dice_poker_env

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the core's tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its stdout (a failure shows its stderr)."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_version_is_the_project_version():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert dice_poker_env.__version__ == declared


def test_the_first_names_a_user_needs_are_top_level():
    from dice_poker_env.envs.illegal import IllegalActionError
    from dice_poker_env.envs.single import DicePokerEnv
    from dice_poker_env.envs.vector import DicePokerVectorEnv
    from dice_poker_env.solver import Solution, SolverError, solve

    assert dice_poker_env.solve is solve and dice_poker_env.Solution is Solution
    assert dice_poker_env.SolverError is SolverError
    assert dice_poker_env.DicePokerEnv is DicePokerEnv and dice_poker_env.IllegalActionError is IllegalActionError
    assert dice_poker_env.DicePokerVectorEnv is DicePokerVectorEnv
    assert set(dice_poker_env.__all__) <= set(dir(dice_poker_env))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        dice_poker_env.no_such_name  # noqa: B018


def test_import_registers_the_env_ids_and_stays_light():
    """The ids work with gymnasium.make after the import alone; the envs and the solver load on first use."""
    out = run_python(
        "import sys, dice_poker_env, gymnasium\n"
        "print(sorted(k for k in ('dice_poker_env.solver', 'dice_poker_env.envs.single', 'dice_poker_env.multi', "
        "'torch', 'pettingzoo') if k in sys.modules))\n"
        "print(sorted(i for i in gymnasium.registry if i.startswith('DicePoker/')) == sorted(dice_poker_env.ENV_IDS))\n"
        "print(gymnasium.make('DicePoker/Yatzy-v0').unwrapped.rules.name)\n"
    )
    assert out.splitlines() == ["[]", "True", "yatzy"]


def test_gymnasium_imports_the_package_from_a_module_prefixed_id():
    out = run_python(
        "import gymnasium\nprint(gymnasium.make('dice_poker_env:DicePoker/Yacht-v0').unwrapped.rules.name)"
    )
    assert out == "yacht"


def test_star_import_needs_no_optional_extra():
    out = run_python("import sys\nfrom dice_poker_env import *\nprint(solve.__name__, 'pettingzoo' in sys.modules)")
    assert out == "solve False"


def test_make_plays_the_named_ruleset_like_gymnasium_make(tmp_path):
    import gymnasium as gym

    env = dice_poker_env.make("yahtzee", joker="free", obs_mode="flat")
    same = gym.make("DicePoker/Yahtzee-v0", joker="free", obs_mode="flat")
    assert env.spec.id == "DicePoker/Yahtzee-v0" and env.unwrapped.rules.options == {"joker": "free"}
    for seed in (0, 7):
        (a, info_a), (b, info_b) = env.reset(seed=seed), same.reset(seed=seed)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(info_a["action_mask"], info_b["action_mask"])
    rules_file = tmp_path / "mine.toml"
    rules_file.write_text((ROOT / "dice_poker_env" / "rules" / "data" / "yacht.toml").read_text())
    custom = dice_poker_env.make(str(rules_file))
    assert custom.spec.id == "DicePoker/Custom-v0" and custom.unwrapped.rules.box_names == env_box_names("yacht")
    from_object = dice_poker_env.make(dice_poker_env.load_rules("yatzy"))
    assert from_object.spec.id == "DicePoker/Custom-v0" and from_object.unwrapped.rules.name == "yatzy"


def env_box_names(ruleset: str) -> tuple[str, ...]:
    return dice_poker_env.load_rules(ruleset).box_names


def test_every_entry_point_taking_rules_accepts_a_rules_file_path_and_is_typed_so(tmp_path):
    """A ``pathlib.Path`` works wherever a ruleset is taken (load_rules reads it), so the type hints say so:
    a type-checked caller passing one was told it may not."""
    import inspect

    from agents.course.grader import grade
    from agents.evaluation.benchmark import benchmark
    from agents.evaluation.match import match
    from agents.evaluation.protocol import evaluate
    from agents.players.greedy import GreedyAgent
    from agents.players.heuristic import LookaheadAgent
    from agents.players.registry import make_agent
    from dice_poker_env.multi import SeatEnv, env, raw_env
    from dice_poker_env.solver import solve, solve_reach

    entry_points = [
        dice_poker_env.make,
        dice_poker_env.make_vec,
        dice_poker_env.load_rules,
        dice_poker_env.DicePokerEnv,
        dice_poker_env.DicePokerVectorEnv,
        raw_env,
        env,
        SeatEnv,
        solve,
        solve_reach,
        make_agent,
        GreedyAgent,
        LookaheadAgent,
        benchmark,
        evaluate,
        match,
        grade,
    ]
    for entry in entry_points:
        annotation = str(inspect.signature(entry).parameters["rules"].annotation)
        assert "PathLike" in annotation, f"{entry.__qualname__}: rules: {annotation}"
    rules_file = tmp_path / "mine.toml"
    rules_file.write_text((ROOT / "dice_poker_env" / "rules" / "data" / "yacht.toml").read_text())
    assert dice_poker_env.DicePokerEnv(rules_file).rules.box_names == env_box_names("yacht")
    assert GreedyAgent(rules_file).rules.box_names == env_box_names("yacht")


def test_make_vec_is_the_batched_env():
    envs = dice_poker_env.make_vec("yacht", 3, obs_mode="flat")
    assert isinstance(envs.unwrapped, dice_poker_env.DicePokerVectorEnv) and envs.num_envs == 3
    obs, info = envs.reset(seed=1)
    assert obs.shape[0] == 3 and info["action_mask"].shape == (3, 32 + 12)
    envs.close()


def test_the_wheel_ships_the_typed_marker_and_the_data(tmp_path):
    """``dice_poker_env/py.typed`` (PEP 561) is in the built wheel, so users' type checkers read the hints, and its
    metadata says so (the ``Typing :: Typed`` classifier)."""
    import shutil
    import zipfile

    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("dice_poker_env", "agents"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    out.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.build_wheel({str(out)!r}))"
    result = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    wheel = out / result.stdout.strip().splitlines()[-1]
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "dice_poker_env/py.typed" in names
    assert "dice_poker_env/rules/data/yahtzee.toml" in names  # the package data next to it
    assert not any(name.startswith("tests/") for name in names)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    assert "Classifier: Typing :: Typed" in zipfile.ZipFile(wheel).read(metadata).decode()  # what PyPI shows of it


def test_the_sdist_is_the_repository(tmp_path):
    """The source distribution holds every tracked file (MANIFEST.in), so its test suite runs: setuptools alone
    shipped tests/test*.py without conftest.py, the test helpers and data, nor the docs, configs and results
    the tests read."""
    import shutil
    import tarfile

    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    except OSError:
        pytest.skip("git is not installed")
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an unpacked sdist, say)")
    tracked = {name for name in listed.stdout.decode().split("\0") if name and (ROOT / name).is_file()}
    source = tmp_path / "source"
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    out = tmp_path / "dist"
    out.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))"
    result = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    with tarfile.open(out / result.stdout.strip().splitlines()[-1]) as sdist:
        shipped = {member.name.split("/", 1)[1] for member in sdist.getmembers() if member.isfile()}
    assert {"tests/conftest.py", "tests/naive_rules.py", "train.py", "CITATION.cff"} <= shipped
    assert sorted(tracked - shipped) == [".gitignore"]


def test_write_whole_gives_a_plain_files_permissions_and_leaves_nothing_on_failure(tmp_path):
    """dice_poker_env.files.write_whole: the permissions open() gives (a temporary file from mkstemp made
    match --out files 0600), the old file kept when the write fails."""
    import os
    import stat

    from dice_poker_env.files import write_whole

    umask = os.umask(0o022)
    os.umask(umask)
    path = write_whole(tmp_path / "a.json", "{}\n")
    assert path.read_text() == "{}\n" and stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    write_whole(path, b"new")
    assert path.read_bytes() == b"new"
    try:
        write_whole(tmp_path / "missing" / "b.json", "x")
    except OSError:
        pass
    else:
        raise AssertionError("wrote into a missing folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no partial file left


def test_write_whole_writes_text_as_utf8_and_removes_its_temporary_file_when_the_rename_fails(tmp_path):
    """Text is written as UTF-8 (names and rules titles are not ASCII); a write whose rename fails (a folder
    at the target) raises and leaves no hidden temporary file beside it."""
    from dice_poker_env.files import write_whole

    path = write_whole(tmp_path / "names.txt", "Zoë ✓ 骰子\n")
    assert path.read_bytes() == "Zoë ✓ 骰子\n".encode()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "inside").write_text("kept")
    with pytest.raises(OSError):
        write_whole(tmp_path / "taken", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["names.txt", "taken"]
    assert (tmp_path / "taken" / "inside").read_text() == "kept"


def test_write_whole_never_writes_through_a_planted_link(tmp_path, monkeypatch):
    """A user who may write in an output folder (one shared with TAs) planted links at the temporary names
    write_whole would use (``.NAME.<pid>.partial``): the grader wrote its file through them into the link's
    target. The temporary name is now unguessable and created only where nothing is."""
    import os

    from dice_poker_env import files
    from dice_poker_env.files import write_whole

    victim = tmp_path / "victim.txt"
    victim.write_text("theirs")
    for pid in range(os.getpid() - 50, os.getpid() + 50):
        (tmp_path / f".standings.csv.{pid}.partial").symlink_to(victim)
    write_whole(tmp_path / "standings.csv", "rank,agent\n")
    assert victim.read_text() == "theirs"
    assert not (tmp_path / "standings.csv").is_symlink() and (tmp_path / "standings.csv").read_text() == "rank,agent\n"
    # were the name guessed, the file is still created only where nothing is: the link is refused, not followed
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: "guessed")
    (tmp_path / f".report.html.{os.getpid()}.guessed.partial").symlink_to(victim)
    with pytest.raises(FileExistsError):
        write_whole(tmp_path / "report.html", "<html>")
    assert victim.read_text() == "theirs" and not (tmp_path / "report.html").exists()
