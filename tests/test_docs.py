"""The documentation site: ``mkdocs build --strict`` succeeds (and fails on a broken link or
reference), and every tutorial notebook in docs/tutorials/ runs from top to bottom and prints what it shows.

The site builds and the notebooks run in subprocesses whose working folder, Jupyter
runtime and IPython folders are temporary; the solver cache and matplotlib's folder are
the session's temporary ones (conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.ipynb"))


def _mkdocs(config: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DICE_POKER_DOCS_EXECUTE="false")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=cwd,  # mkdocs-jupyter writes its cache (.cache/) in the working folder
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for the tests of this module with ``mkdocs build --strict``."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("mkdocs_jupyter")
    work = tmp_path_factory.mktemp("docs")
    site = work / "site"
    result = _mkdocs(ROOT / "mkdocs.yml", site, work)
    assert result.returncode == 0, result.stderr[-4000:]
    return site


def test_the_site_builds_strict(site):
    for page in (
        "index.html",
        "rules/index.html",
        "getting-started/index.html",
        "agents/index.html",
        "figures/index.html",
        "results/index.html",
        "archive/index.html",
        "api/agents/index.html",
        "api/solver/index.html",
    ):
        assert (site / page).is_file(), page
    for tutorial in TUTORIALS:
        assert (site / "tutorials" / tutorial.stem / "index.html").is_file(), tutorial.name
    # the API reference is generated from the docstrings, the figures come from the README
    assert 'id="agents.players.registry.make_agent"' in (site / "api/agents/index.html").read_text(encoding="utf-8")
    assert 'id="dice_poker_env.solver.solve"' in (site / "api/solver/index.html").read_text(encoding="utf-8")
    assert "bench_env.py" in (site / "figures/index.html").read_text(encoding="utf-8")


# A load from outside the site: a script, stylesheet, font, image or frame fetched from another host.
EXTERNAL_LOAD = re.compile(
    r"""<(?:script|img|iframe|audio|video|source|embed)\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?//"""
    r"""|<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?//"""
    r"""|@import\s+(?:url\()?\s*["']?(?:https?:)?//"""
    r"""|url\(\s*["']?(?:https?:)?//"""
    r"""|import\(\s*["'](?:https?:)?//""",
    re.IGNORECASE,
)
RAW_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):(?:`|<code)"
)  # `...` rendered as <code>


def test_the_site_loads_nothing_from_outside(site):
    """Every page and stylesheet reads offline: no web fonts, CDN scripts or remote stylesheets.

    (Links to other sites, ``<a href>``, are followed only when clicked.) The theme's JavaScript
    would load Mermaid from a CDN for a page with a Mermaid diagram; the site has none.
    """
    files = sorted(site.rglob("*.html")) + sorted(site.rglob("*.css"))
    assert len(files) > 20
    loads = {}
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [match.group(0) for match in EXTERNAL_LOAD.finditer(text)]
        if found:
            loads[str(path.relative_to(site))] = found[:3]
        if path.suffix == ".html":
            assert 'class="mermaid"' not in text, path
    assert not loads, loads


# A link or a picture of a page (the address as written in the HTML).
SITE_LINK = re.compile(r'\s(?:href|src)="([^"]*)"')


def test_every_link_of_the_site_leads_to_a_page_and_anchor_of_the_site(site):
    """Every relative link and picture of every page (the tutorials' too) names a file of the built site, and
    its anchor an id of that page. mkdocs' own validation covers the Markdown pages only: the tutorial
    notebooks' links (``../grading.md#...``, ``02_custom_ruleset.ipynb``) were left as the notebook's file
    names, which the site does not have. (404.html links from the site's root, wherever it is served.)"""
    import html
    from urllib.parse import unquote, urlsplit

    pages = [path for path in sorted(site.rglob("*.html")) if path.name != "404.html"]
    ids = {path: set(re.findall(r'\sid="([^"]+)"', path.read_text(encoding="utf-8"))) for path in pages}
    broken = []
    for path in pages:
        for address in SITE_LINK.findall(path.read_text(encoding="utf-8")):
            url = urlsplit(html.unescape(address))
            if url.scheme or url.netloc or not (url.path or url.fragment):
                continue  # another site, mailto:, data:
            target = (path.parent / unquote(url.path)).resolve() if url.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or (url.fragment and unquote(url.fragment) not in ids.get(target, {url.fragment})):
                broken.append(f"{path.relative_to(site)}: {address}")
    assert len(pages) > 20
    assert not broken, broken


def test_the_site_shows_no_raw_sphinx_roles_and_links_them(site):
    pages = sorted(site.rglob("*.html"))
    assert any("api" in page.parts for page in pages)
    raw = {}
    for path in pages:
        text = path.read_text(encoding="utf-8")
        if RAW_ROLE.search(text) or "<autoref" in text or "&lt;autoref" in text:
            raw[str(path.relative_to(site))] = RAW_ROLE.findall(text)[:3]
    assert not raw, raw
    # ":class:`~dice_poker_env.solver.Solution`" in the solver's docstrings is a link to its entry
    solver = (site / "api/solver/index.html").read_text(encoding="utf-8")
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#dice_poker_env\.solver\.Solution"', solver)


def test_the_sphinx_roles_extension_resolves_names(tmp_path):
    griffe = pytest.importorskip("griffe")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import sphinx_roles
    finally:
        sys.path.remove(str(ROOT / "tools"))
    folder = str(tmp_path)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""See :class:`~pkg.mod.Thing` and :mod:`pkg.mod`."""\n')
    (package / "mod.py").write_text(
        "from os.path import join\n\n\n"
        "class Thing:\n"
        '    """A :func:`join`, a :meth:`.go`, :class:`Thing`, :exc:`the error <ValueError>`, :data:`!x`."""\n\n'
        "    def go(self):\n"
        '        """Itself: :meth:`go`."""\n'
    )
    loaded = griffe.load("pkg", search_paths=[folder], extensions=griffe.load_extensions(sphinx_roles.SphinxRoles))
    ref = '<autoref identifier="{}" optional>`{}`</autoref>'
    assert (
        loaded.docstring.value == f"See {ref.format('pkg.mod.Thing', 'Thing')} and {ref.format('pkg.mod', 'pkg.mod')}."
    )
    thing = loaded["mod.Thing"]
    assert thing.docstring.value == (
        f"A {ref.format('os.path.join', 'join')}, a {ref.format('pkg.mod.Thing.go', 'go')}, "
        f"{ref.format('pkg.mod.Thing', 'Thing')}, {ref.format('ValueError', 'the error')}, {ref.format('x', 'x')}."
    )
    assert thing["go"].docstring.value == f"Itself: {ref.format('pkg.mod.Thing.go', 'go')}."


@pytest.mark.parametrize(
    "page, culprit",
    [
        ("See [the missing page](missing-page.md).", "missing-page.md"),
        ("See [a missing section](#no-such-section).", "no-such-section"),
        ("::: dice_poker_env.no_such_module", "no_such_module"),
    ],
    ids=["link", "anchor", "reference"],
)
def test_a_broken_link_or_reference_fails_the_build(tmp_path, page, culprit):
    """The site's own configuration on a one-page site with one broken link or API reference."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("mkdocs_jupyter")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Home\n\n{page}\n")
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "\ndocs_dir: docs\n" in text and "\nnav:\n" in text and 'paths: ["."]' in text
    text = text.replace("\ndocs_dir: docs\n", f"\ndocs_dir: {json.dumps(str(docs))}\n")
    text = text.replace('paths: ["."]', f"paths: [{json.dumps(str(ROOT))}]")
    assert "- tools/" in text  # the hooks and the docstring extension, relative to the config file
    text = text.replace("- tools/", f"- {ROOT.as_posix()}/tools/")
    text = text[: text.index("\nnav:\n")] + "\nnav:\n  - Home: index.md\n"
    config = tmp_path / "mkdocs.yml"
    config.write_text(text, encoding="utf-8")
    result = _mkdocs(config, tmp_path / "site", tmp_path)
    assert result.returncode != 0
    assert culprit in result.stderr


@pytest.mark.parametrize(
    "link, culprit",
    [("../missing-page.md", "missing-page.md"), ("../index.md#no-such-section", "no-such-section")],
    ids=["page", "anchor"],
)
def test_a_tutorials_broken_link_fails_the_build(tmp_path, link, culprit):
    """A notebook links by the file names of the pages (as Jupyter and GitHub follow them): the site points them at
    the pages' URLs (``tools/mkdocs_hooks.py``), and one that leads nowhere fails ``--strict`` as on a Markdown page."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("mkdocs_jupyter")
    docs = tmp_path / "docs"
    (docs / "tutorials").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\n## A section\n")
    notebook = {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["[home](../index.md#a-section)"]}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (docs / "tutorials" / "other.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    notebook["cells"][0]["source"] = [f"[the other](other.ipynb), [{culprit}]({link})"]
    (docs / "tutorials" / "one.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    text = text.replace("\ndocs_dir: docs\n", f"\ndocs_dir: {json.dumps(str(docs))}\n")
    text = text.replace('paths: ["."]', f"paths: [{json.dumps(str(ROOT))}]")
    text = text.replace("- tools/", f"- {ROOT.as_posix()}/tools/")
    nav = "\nnav:\n  - Home: index.md\n  - One: tutorials/one.ipynb\n  - Other: tutorials/other.ipynb\n"
    text = text[: text.index("\nnav:\n")] + nav
    (tmp_path / "mkdocs.yml").write_text(text, encoding="utf-8")
    result = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site", tmp_path)
    assert result.returncode != 0
    assert culprit in result.stderr and "tutorials/one.ipynb" in result.stderr, result.stderr[-2000:]
    # the links that lead somewhere are the pages' URLs
    assert 'href="../../#a-section"' in (tmp_path / "site/tutorials/other/index.html").read_text(encoding="utf-8")
    assert 'href="../other/"' in (tmp_path / "site/tutorials/one/index.html").read_text(encoding="utf-8")


def test_there_are_four_tutorials_in_the_site_nav():
    names = [path.name for path in TUTORIALS]
    assert len(names) >= 4
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in names:
        assert f"tutorials/{name}" in nav, name


def _kernel(tmp_path: Path) -> str:
    """A kernel spec for this interpreter (not whatever ``python`` is on PATH), in a temporary folder."""
    name = "dice-poker-tests"
    spec = tmp_path / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "dice-poker tests",
                "language": "python",
            }
        )
    )
    return name


# The cells whose stored outputs come from a trained policy: seeded, so one machine repeats them, but another CPU or
# torch may train a slightly different one (tutorial 3 says so). Every other cell prints the same on every machine.
MACHINE_DEPENDENT_CELLS = {"03-01", "03-03", "03-05", "03-07"}
# A folder of tempfile.mkdtemp() (its name is "tmp" and 8 characters), with whatever leads to it
TEMPORARY_FOLDER = re.compile(r"[^\s'\"]*/tmp[a-z0-9_]{8}(?![a-z0-9_])")


def _printed(cell) -> str:
    """What a code cell printed (standard output) and its value's text, its temporary folders named TMPDIR."""
    text = "".join(
        "".join(output.get("text", "")) if output.output_type == "stream" else "".join(output["data"]["text/plain"])
        for output in cell.get("outputs", [])
        if (output.output_type == "stream" and output.name == "stdout")
        or (output.output_type in ("execute_result", "display_data") and "text/plain" in output.get("data", {}))
    )
    return TEMPORARY_FOLDER.sub("TMPDIR", text)


@pytest.mark.parametrize("notebook", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_tutorial_runs(notebook, tmp_path, monkeypatch):
    """Every cell runs, and prints what the notebook shows: a stored output that today's code no longer gives (tutorial
    3 showed a mistake wording two releases old, tutorial 4 an error without its "did you mean") fails here."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    for name, folder in (
        ("IPYTHONDIR", "ipython"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_DATA_DIR", "jupyter-data"),
        ("TMPDIR", "tmp"),
    ):
        (tmp_path / folder).mkdir()
        monkeypatch.setenv(name, str(tmp_path / folder))
    kernel = _kernel(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    work = tmp_path / "work"
    work.mkdir()
    nb = nbformat.read(notebook, as_version=4)
    stored = {cell.id: _printed(cell) for cell in nb.cells if cell.cell_type == "code"}
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name=kernel, record_timing=False, resources={"metadata": {"path": str(work)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and the traceback, if any cell fails
    errors = [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.id not in MACHINE_DEPENDENT_CELLS:
            assert _printed(cell) == stored[cell.id], (
                f"{notebook.name} cell {cell.id} prints something else now: rerun the notebook and save it, "
                f"jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.record_timing=False "
                f"docs/tutorials/{notebook.name}"
            )
    assert not any(work.iterdir()) or all(path.name in (".ipynb_checkpoints",) for path in work.iterdir()), (
        f"{notebook.name} wrote into its working folder: {sorted(p.name for p in work.iterdir())}"
    )


def test_the_fourth_tutorials_agent_plays_legally_and_its_check_command_runs(tmp_path, capsys):
    """Tutorial 4's ``KeepMostCommon`` kept all five dice (action 31, never legal) on five of a kind with the box
    for it filled, which ended 1 game in 30 (the tutorial's own benchmark had one): a student who copied it lost
    the legal-play points. And its ``dice-poker check my_agent.py`` stopped at the two agent classes of the
    tutorial's file (exit status 2). The file's agent plays that position legally, and the command as written
    checks it."""
    from agents.commands.check import main
    from agents.course.sandbox import isolation_problem
    from agents.players.registry import make_agent
    from dice_poker_env import load_rules
    from dice_poker_env.envs.single import DicePokerEnv

    cells = json.loads((ROOT / "docs" / "tutorials" / "04_your_own_agent.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells]
    agent_file = next(s for s in sources if s.startswith("%%writefile {workdir}/my_agent.py"))
    (tmp_path / "my_agent.py").write_text(agent_file.split("\n", 1)[1])
    rules = load_rules("yacht")
    agent = make_agent(f"{tmp_path / 'my_agent.py'}:KeepMostCommon,chance_penalty=5", rules)
    observation, info = DicePokerEnv(rules).reset(
        options={"scorecard": {"yacht": 0}, "dice": [1, 1, 1, 1, 1], "rolls_left": 2}
    )
    action = int(agent.act(observation, info["action_mask"]))
    assert info["action_mask"][action] and action >= 32, action
    command = re.search(r"`dice-poker check ([^`]*)`", "".join(sources)).group(1).split()
    assert command[0].startswith("my_agent.py"), command
    isolation = [] if isolation_problem() is None else ["--unisolated"]
    code = main([str(tmp_path / command[0]), *command[1:], *isolation])
    assert code == 0, capsys.readouterr()


def _results_page_module():
    spec = importlib.util.spec_from_file_location("results_page", ROOT / "tools" / "results_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_results_page_and_the_readme_table_are_up_to_date():
    """docs/results.md and the README's headline table are what ``python tools/results_page.py`` writes."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "results_page.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_the_results_page_shows_the_data():
    results_page = _results_page_module()
    rows = json.loads((ROOT / "results" / "training.json").read_text(encoding="utf-8"))
    shipped = json.loads((ROOT / "results" / "bench" / "shipped_policies_10k.json").read_text(encoding="utf-8"))
    for rules, (config, _group) in results_page.RECIPES.items():
        assert (ROOT / config).is_file(), config
        assert rules in shipped
    recipe = results_page.recipe_rows(rows)[0][2]
    recipe["percent_of_optimal_mean"] = 12.3456
    page = results_page.page(rows, shipped)
    assert "**12.35**" in page
    # the README's table is the protocol's: reference rows on the fixed evaluation set, baselines' IQM
    reference = json.loads((ROOT / "results" / "benchmark" / "reference.json").read_text(encoding="utf-8"))
    aggregate = json.loads((ROOT / "results" / "benchmark" / "aggregate.json").read_text(encoding="utf-8"))
    shipped_row = next(r for r in reference if r["agent"] == "trained" and r["rules"] == "yacht")
    shipped_row["luck_free_percent"] = 12.3456
    complete = [r for r in aggregate if r["track"] == "raw" and r["ruleset"] == "yacht" and r["runs"] >= 10]
    best = max(complete, key=lambda r: r["iqm"])
    best["iqm"] = 99.9876
    recipe = next(r for r in aggregate if r["suite"] == "rules_ppo_10m" and r["ruleset"] == "yacht")
    recipe.update(iqm=77.7777, runs=6, iqm_ci95_low=70.0, iqm_ci95_high=80.0)
    readme = results_page.readme_text((ROOT / "README.md").read_text(encoding="utf-8"), reference, aggregate)
    assert "| 12.35 ± " in readme and "99.99 [" in readme and readme != (ROOT / "README.md").read_text(encoding="utf-8")
    # the headline in bold is the recipe's IQM over its seeds on the protocol, never one (the best) seed's policy
    assert "**12.35**" not in readme and "| **77.78** [70.00, 80.00] (rules_ppo_10m, 6 of 10 seeds) |" in readme
    assert "dice-poker-eval-v1" in readme
    # a baseline complete at 3 seeds (100M, not yahtzee) has no interval: its range is shown
    three = {**best, "suite": "raw_three_100m", "budget": 100_000_000, "runs": 3, "iqm": 99.99}
    three.update(iqm_ci95_low=None, iqm_ci95_high=None, min=99.5, max=100.0)
    readme = results_page.readme_text(readme, reference, [*aggregate, three])
    assert "99.99 (range 99.50 - 100.00) (raw_three_100m, 3 seeds)" in readme
    # the recipe's larger budget once it has seeds enough for an interval; its range while it has fewer
    big = {**recipe, "suite": "rules_ppo_100m", "budget": 100_000_000, "runs": 4, "iqm": 55.5}
    big.update(iqm_ci95_low=None, iqm_ci95_high=None, min=50.0, max=60.0)
    assert results_page.recipe_on_protocol([recipe, big], "yacht").startswith("**77.78** [70.00, 80.00]")
    big["runs"] = 5
    assert results_page.recipe_on_protocol([recipe, big], "yacht") == (
        "**55.50** (range 50.00 - 60.00) (rules_ppo_100m, 5 seeds)"
    )
    assert page.count("\n### ") == len({row["rules"] for row in rows})  # every ruleset's groups


def test_the_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 230
    # the two set-up commands, exactly
    assert 'pip install torch==2.13.0 && pip install -e ".[train]" && python train.py' in readme
    test_command = "python -m pytest -q -n logical --maxprocesses 4"
    assert f'pip install torch==2.13.0 && pip install -e ".[test]" && {test_command}\n' in readme
    assert test_command.replace("python", "python3", 1) in (ROOT / ".ci" / "run").read_text()  # CI runs it
    assert readme.count("results-table:start") == 1


def test_the_citation_file_is_valid_and_cites_this_version():
    """CITATION.cff (GitHub's "Cite this repository", Zenodo) has the fields CFF 1.2.0 requires and the
    package's version and license."""
    yaml = pytest.importorskip("yaml")
    try:
        import tomllib
    except ImportError:  # Python 3.10: the core's dependency tomli
        import tomli as tomllib

    import dice_poker_env

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["message"] and citation["title"] and citation["authors"][0]["name"]
    assert str(citation["version"]) == project["version"] == dice_poker_env.__version__
    assert citation["license"] == project["license"] and "MIT License" in (ROOT / "LICENSE").read_text()


def test_the_readme_examples_run_one_after_another(capsys):
    """The README's 30-second example and its solver snippet, run in order as a reader pastes them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## 30-second example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the project's own README
    assert "final score" in capsys.readouterr().out
    values = namespace["solution"].action_values(namespace["gym"].make("DicePoker/Yahtzee-v0").reset(seed=7)[0])
    assert values.max() > 200


@pytest.mark.parametrize("page", ["getting-started.md", "solver.md", "environments.md", "winning.md", "multiplayer.md"])
def test_a_pages_python_snippets_run_one_after_another_as_pasted(page, capsys):
    """Each page's Python blocks, in order, in one namespace: a reader pastes them so (getting started's solver
    block once ran on the finished game of the block before it)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, page, "exec"), namespace)  # noqa: S102 - the project's own docs
