"""The package's import structure, read from the source (nothing is imported).

Every ``import`` statement of every module of ``dice_poker_env`` counts, wherever it
stands: at the top, inside a function, or under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "dice_poker_env"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE
#: modules longer than this need a reason written at the top of their docstring
MAX_LINES = 500
LONG_MODULE_NOTE = "Why this module is long:"

#: layers, bottom up: a module imports only from its own part of the package or from lower layers
LAYERS = {
    "rules": 0,
    "dice_sources": 0,
    "engine": 1,
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports (absolute names; ``from a import b`` is ``a.b`` when that is a module)."""
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
                found.add(child if child in MODULES else source)
    return found


GRAPH = {name: {m for m in _imports(name, path) if m in MODULES and m != name} for name, path in MODULES.items()}


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


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


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


def _long_modules(prefixes: tuple[str, ...]) -> list[str]:
    unexplained = []
    for name, path in MODULES.items():
        if not name.startswith(prefixes):
            continue
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_LINES and LONG_MODULE_NOTE not in (ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(f"{name} ({lines} lines)")
    return unexplained


def test_long_modules_say_why():
    """A module over 500 lines says in its docstring why it is one module."""
    assert _long_modules((PACKAGE,)) == _long_modules((f"{PACKAGE}.cli",))  # nothing outside the CLI


def test_long_cli_modules_say_why():
    assert _long_modules((f"{PACKAGE}.cli",)) == []
