"""The repository's import structure, read from the source (nothing is imported).

Every ``import`` statement of every module counts, wherever it stands: at the top, inside a
function, or under ``if TYPE_CHECKING:``. The core package ``dice_poker_env`` and the
``agents`` package each have layers (imports point down), the whole repository has no import
circle, and a module over 500 lines says why in its docstring.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "dice_poker_env"
REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / PACKAGE
#: modules longer than this need a reason: a line of their docstring that starts with SIZE_NOTE
MAX_LINES = 500
SIZE_NOTE = "Size:"

#: layers of the core, bottom up: a module imports only from its own part of the package or from lower layers
LAYERS = {
    "files": 0,  # writing a file whole (dice_poker_env.files): the standard library only
    "rules": 0,
    "engine": 1,
    "dice_sources": 1.5,  # where the envs' dice come from (duplicate deals use the engine's dice constants)
    "envs": 2,
    "players": 2,
    "multi": 3,
    "solver": 3,
    "integrations": 4,
    "registration": 5,  # the env ids and make(): above the envs they name
    "cli": 5,
    "__main__": 6,
    "": 6,  # the package's own __init__ (the public names)
}

#: layers of ``agents`` (above the whole core), bottom up; docs: agents/__init__.py. Parts of one layer
#: never import each other (training and course are independent), and nothing in ``agents`` imports ``train``.
AGENT_LAYERS = {
    "policy": 1,  # the trained policy's file format and the NumPy player: the core and NumPy only
    "players": 2,
    "": 2.5,  # agents/__init__.py: re-exports the players' Agent for everything above the players
    "evaluation": 3,
    "training": 4,
    "course": 4,
    "commands": 5,
}
TRAIN_LAYER = 6  # train.py, the top

#: imports the layers above forbid that are still in the code, each with who removes it. The tests fail
#: when one is gone (delete its line) as well as when a new one appears.
KNOWN_WRONG: set[tuple[str, str]] = set()

#: libraries a module of these parts of ``agents`` may import only inside a function (players load fast)
LAZY_ONLY = {"torch", "stable_baselines3", "sb3_contrib", "ray"}
LAZY_PARTS = ("agents.policy", "agents.players")


def _module_name(path: Path) -> str:
    """``dice_poker_env/engine/game.py`` -> ``dice_poker_env.engine.game``; a script outside a package is its stem."""
    rel = path.relative_to(REPO).with_suffix("")
    if not (path.parent / "__init__.py").is_file():
        return rel.name
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _repo_files() -> list[Path]:
    skip = {".git", "results", "site", "build", "dist", "runs", "artifacts", ".venv", "node_modules"}
    return sorted(
        p
        for p in REPO.rglob("*.py")
        if not any(part in skip or part.startswith("runs-") for part in p.relative_to(REPO).parts[:-1])
    )  # runs-*: other run folders (git-ignored), which may hold a copy of the code a run was started from


def _modules(files: list[Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in files:
        found.setdefault(_module_name(path), path)  # a script name used twice: the first one (sorted paths)
    return found


ALL_MODULES = _modules(_repo_files())
MODULES = {name: path for name, path in ALL_MODULES.items() if name.split(".")[0] == PACKAGE}


def _imports(name: str, path: Path, modules: dict[str, Path] | None = None) -> set[str]:
    """Every module ``name`` imports (absolute names; ``from a import b`` is ``a.b`` when that is a module)."""
    modules = ALL_MODULES if modules is None else modules
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                child = f"{source}.{alias.name}"
                found.add(child if child in modules else source)
    return found


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (``import a.b.c`` counts as importing ``a.b.c``)."""
    graph = {}
    for name, path in modules.items():
        edges = set()
        for target in _imports(name, path, modules):
            while target and target not in modules:  # ``from a.b import f`` where a.b is a module
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


REPO_GRAPH = _graph(ALL_MODULES)
GRAPH = {name: {m for m in REPO_GRAPH[name] if m in MODULES} for name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _part(module: str) -> str:
    """The part of the package a module belongs to (``dice_poker_env.engine.game`` -> ``engine``)."""
    rest = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    return rest.split(".")[0]


def test_the_checker_sees_imports_of_every_kind(tmp_path):
    """Guards the checks below: relative, function-level and TYPE_CHECKING imports are all edges."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import game\n"
        "if TYPE_CHECKING:\n    from dice_poker_env.rules.spec import Rules\n"
        "def f():\n    import agents.players.greedy\n    from ..envs import single\n"
    )
    found = _imports(f"{PACKAGE}.engine.probe", probe)
    assert {
        f"{PACKAGE}.engine.game",
        f"{PACKAGE}.rules.spec",
        "agents.players.greedy",
        f"{PACKAGE}.envs.single",
    } <= found
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_checker_sees_every_part_of_the_repository():
    """The graph holds the core, every agents subpackage, train.py, the tests and the benchmarks."""
    assert {"train", "agents", "agents.commands.grade", "test_architecture", "bench_train"} <= set(ALL_MODULES)
    assert {part for name in ALL_MODULES if (part := _agent_part(name)) is not None} == set(AGENT_LAYERS)
    assert "agents.players.base" in REPO_GRAPH["agents"]  # from agents.players.base import Agent
    assert "agents.training.run" in REPO_GRAPH["train"]
    assert "agents.evaluation.benchmark" in REPO_GRAPH["agents.training.run"]  # a function-level import


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_no_import_cycles_anywhere_in_the_repository():
    """dice_poker_env, agents, train.py, tests, benchmarks, examples: no circle (KNOWN_WRONG edges aside)."""
    graph = {name: {m for m in edges if (name, m) not in KNOWN_WRONG} for name, edges in REPO_GRAPH.items()}
    assert _cycles(graph) == []


def test_imports_point_downwards():
    """rules -> engine -> envs (and the random player) -> multi / solver -> integrations -> cli."""
    wrong = []
    for module, imported in GRAPH.items():
        here = _part(module)
        for target in imported:
            there = _part(target)
            if there != here and LAYERS[there] >= LAYERS[here]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def _agent_part(module: str) -> str | None:
    """``agents.training.ppo`` -> ``training``; ``agents`` -> ``""``; None outside agents."""
    if module == "agents":
        return ""
    return module.split(".")[1] if module.startswith("agents.") else None


def _layer(module: str) -> float | None:
    """The layer of a module of agents, train.py (top) or the core (0: below all of agents)."""
    if module == "train":
        return TRAIN_LAYER
    if module.split(".")[0] == PACKAGE:
        return 0
    part = _agent_part(module)
    return None if part is None else AGENT_LAYERS[part]


def _wrong_agent_imports() -> set[tuple[str, str]]:
    """(module, imported) pairs of agents and train.py that import upwards or sideways to another part."""
    wrong = set()
    for module, imported in REPO_GRAPH.items():
        here = _layer(module)
        if here is None or module.split(".")[0] == PACKAGE:
            continue
        for target in imported:
            there = _layer(target)
            if there is None:
                continue
            same_part = _agent_part(module) is not None and _agent_part(module) == _agent_part(target)
            if there > here or (there == here and not same_part):
                wrong.add((module, target))
    return wrong


def test_agents_import_downwards():
    """policy < players < evaluation < training, course < commands < train.py; training and course apart."""
    assert sorted(_wrong_agent_imports() - KNOWN_WRONG) == []


def test_known_wrong_imports_are_still_there():
    """A KNOWN_WRONG import removed from the code is removed from the list, so it cannot come back unseen."""
    assert sorted(KNOWN_WRONG - _wrong_agent_imports()) == []


def test_the_agent_layer_checker_fails_on_a_wrong_import():
    """Guards the check above: a training <-> course or upward edge is reported."""
    saved = {key: set(value) for key, value in REPO_GRAPH.items()}
    try:
        REPO_GRAPH["agents.players.base"] = {"agents.evaluation.benchmark"}
        REPO_GRAPH["agents.course.grader"] = {"agents.training.trainer", "agents.evaluation.benchmark"}
        assert {
            ("agents.players.base", "agents.evaluation.benchmark"),
            ("agents.course.grader", "agents.training.trainer"),
        } <= _wrong_agent_imports()
        assert ("agents.course.grader", "agents.evaluation.benchmark") not in _wrong_agent_imports()
    finally:
        REPO_GRAPH.clear()
        REPO_GRAPH.update(saved)


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported when ``path`` is imported: outside functions and ``if TYPE_CHECKING:``."""
    found: set[str] = set()

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                walk(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found.add(node.module or "")
            for field in ("body", "orelse", "finalbody", "handlers"):
                walk(getattr(node, field, []))

    walk(ast.parse(path.read_text(), filename=str(path)).body)
    return found


def test_policy_and_players_load_without_torch_or_sb3():
    """The policy file format, the NumPy player and the players import torch, SB3 and Ray only when used."""
    heavy = sorted(
        f"{name} imports {module}"
        for name, path in ALL_MODULES.items()
        if name.startswith(LAZY_PARTS)
        for module in _top_level_imports(path)
        if module.split(".")[0] in LAZY_ONLY
    )
    assert heavy == []


def _foreign_imports(prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{name} imports {module}"
        for name, path in MODULES.items()
        if name.startswith(prefixes)
        for module in _imports(name, path)
        if module.split(".")[0] in ("agents", "train")
    )


def test_the_core_never_imports_agents_or_train():
    """Nothing in the package outside the CLI imports the top-level ``agents`` or ``train``."""
    assert _foreign_imports((PACKAGE,)) == _foreign_imports((f"{PACKAGE}.cli",))


def test_the_cli_never_imports_agents_or_train():
    assert _foreign_imports((f"{PACKAGE}.cli",)) == []


def _long_modules() -> list[str]:
    """Modules of dice_poker_env, agents and train.py over MAX_LINES lines without a ``Size:`` line."""
    unexplained = []
    for name, path in ALL_MODULES.items():
        if name.split(".")[0] not in (PACKAGE, "agents", "train"):
            continue
        text = path.read_text()
        lines = len(text.splitlines())
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if lines > MAX_LINES and not any(line.startswith(SIZE_NOTE) for line in docstring.splitlines()):
            unexplained.append(f"{name} ({lines} lines)")
    return unexplained


def test_long_modules_say_why():
    """A module over 500 lines says in its docstring, on a line starting ``Size:``, why it is one module."""
    assert _long_modules() == []
