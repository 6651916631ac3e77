"""The documented installs give what they promise: ``.[cli]`` plays ``dice-poker play``, ``.[tutorials]`` runs
every tutorial, ``dice-poker play`` without PettingZoo says so in one line, and ``SeatEnv`` plays without it."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "dice-poker-env"
FIRST_PARTY = {"dice_poker_env", "agents", "train"}


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def extra_closure(extra: str) -> tuple[set[str], set[str]]:
    """(the extras an extra of pyproject.toml includes, itself among them; the distributions they install
    besides the core's dependencies)."""
    extras = PYPROJECT["optional-dependencies"]
    found: set[str] = set()
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        assert name in extras, f"pyproject.toml has no extra {name!r}"
        for line in extras[name]:
            requirement = Requirement(line)
            if _normalize(requirement.name) == PROJECT:
                todo.extend(requirement.extras)
            else:
                found.add(_normalize(requirement.name))
    return seen, found


def extra_distributions(extra: str) -> set[str]:
    """The distributions ``pip install -e ".[EXTRA]"`` installs directly (the core's dependencies included)."""
    return extra_closure(extra)[1] | {_normalize(Requirement(line).name) for line in PYPROJECT["dependencies"]}


def test_the_cli_extra_installs_what_play_needs():
    # dice-poker play's table is dice_poker_env.multi's PettingZoo env (issue 29: it crashed after .[cli])
    assert "pettingzoo" in extra_distributions("cli")
    assert {"rich", "pettingzoo"} <= extra_distributions("cli")


def test_the_train_extras_floors_admit_the_cores_gymnasium():
    """A floor is a version that works with the core: Stable-Baselines3 and sb3-contrib support Gymnasium 1.1 from
    2.6.0 (their release notes; 2.3 to 2.5 cap it below 1.1, the core's floor), and SB3 2.5 needs torch 2.3."""
    from packaging.version import Version

    def floor(requirements: list[str], name: str) -> Version:
        (requirement,) = [Requirement(line) for line in requirements if _normalize(Requirement(line).name) == name]
        (low,) = [Version(spec.version) for spec in requirement.specifier if spec.operator == ">="]
        return low

    assert floor(PYPROJECT["dependencies"], "gymnasium") >= Version("1.1")
    train = PYPROJECT["optional-dependencies"]["train"]
    assert floor(train, "stable-baselines3") >= Version("2.6") and floor(train, "sb3-contrib") >= Version("2.6")
    assert floor(train, "torch") >= Version("2.3")


def test_play_without_pettingzoo_is_a_one_line_error():
    """With PettingZoo hidden, ``dice-poker play`` stops before the game with a line naming the install."""
    pytest.importorskip("rich")
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pettingzoo"] = None  # as if it were not installed
        from dice_poker_env.cli import main
        sys.exit(main(["play", "yacht", "--opponents", "greedy", "--seed", "0"]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, input="quit\n", capture_output=True, text=True, timeout=120
    )
    if "unavailable" in result.stderr or "cannot import" in result.stderr:
        pytest.skip(f"the play command is not installed here: {result.stderr.strip()}")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "PettingZoo is not installed" in lines[0] and "dice-poker-env[cli]" in lines[0]
    assert "Traceback" not in result.stderr


SEAT_GAMES = """
import json, sys
if sys.argv[1] == "hidden":
    sys.modules["pettingzoo"] = None  # as if it were not installed
import numpy as np
from dice_poker_env.multi import SeatEnv
trace = []
for seat, reward_mode in ((0, "score"), (1, "relative")):
    env = SeatEnv("yacht", opponents=["random", "random"], seat=seat, reward_mode=reward_mode)
    rng = np.random.default_rng(seat)
    obs, info = env.reset(seed=seat)
    done = False
    while not done:
        obs, reward, done, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        trace.append([float(reward), obs["dice"].tolist(), bool(done)])
print(json.dumps([trace, "pettingzoo" in sys.modules and sys.modules["pettingzoo"] is not None]))
"""


def test_seat_env_plays_without_pettingzoo():
    """``SeatEnv`` (and the tournament's tables) play ``raw_env`` games without PettingZoo, exactly as with it
    (it raised AttributeError: 'raw_env' object has no attribute '_clear_rewards' at the first step)."""
    pytest.importorskip("pettingzoo")
    runs = {}
    for mode in ("hidden", "installed"):
        result = subprocess.run(
            [sys.executable, "-c", SEAT_GAMES, mode], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        runs[mode] = json.loads(result.stdout)
    assert runs["hidden"][1] is False and runs["installed"][1] is True
    assert len(runs["hidden"][0]) > 20 and runs["hidden"][0] == runs["installed"][0]


def _notebook_imports(path: Path) -> set[str]:
    """The top-level modules a notebook's code cells import."""
    names: set[str] = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_the_tutorials_extra_installs_every_tutorials_imports():
    notebooks = sorted((ROOT / "docs" / "tutorials").glob("*.ipynb"))
    assert notebooks
    installed = extra_distributions("tutorials")
    assert {"ipykernel", "nbclient", "matplotlib", "torch"} <= installed  # a kernel, jupyter execute, the plots
    owners = importlib.metadata.packages_distributions()
    missing = {}
    for notebook in notebooks:
        for module in sorted(_notebook_imports(notebook) - FIRST_PARTY - set(sys.stdlib_module_names)):
            if not {_normalize(d) for d in owners.get(module, [module])} & installed:
                missing.setdefault(notebook.name, []).append(module)
    assert not missing, f"imported by the tutorials but not installed by the tutorials extra: {missing}"


def test_ci_installs_the_tutorials_extra():
    # .ci/run installs .[test], and the test suite runs every tutorial (tests/test_docs.py)
    assert "tutorials" in extra_closure("test")[0]
    assert 'pip install -e ".[test]"' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
