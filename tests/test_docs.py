"""The documentation site: ``mkdocs build --strict`` succeeds (and fails on a broken link or
reference), and every tutorial notebook in docs/tutorials/ runs from top to bottom.

The site builds and the notebooks run in subprocesses whose working folder, Jupyter
runtime and IPython folders are temporary; the solver cache and matplotlib's folder are
the session's temporary ones (conftest.py).
"""

from __future__ import annotations

import json
import os
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


def test_the_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    pytest.importorskip("mkdocs_jupyter")
    site = tmp_path / "site"
    result = _mkdocs(ROOT / "mkdocs.yml", site, tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    for page in (
        "index.html",
        "rules/index.html",
        "getting-started/index.html",
        "agents/index.html",
        "figures/index.html",
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
    text = text[: text.index("\nnav:\n")] + "\nnav:\n  - Home: index.md\n"
    config = tmp_path / "mkdocs.yml"
    config.write_text(text, encoding="utf-8")
    result = _mkdocs(config, tmp_path / "site", tmp_path)
    assert result.returncode != 0
    assert culprit in result.stderr


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


@pytest.mark.parametrize("notebook", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_tutorial_runs(notebook, tmp_path, monkeypatch):
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
    assert not any(work.iterdir()) or all(path.name in (".ipynb_checkpoints",) for path in work.iterdir()), (
        f"{notebook.name} wrote into its working folder: {sorted(p.name for p in work.iterdir())}"
    )
