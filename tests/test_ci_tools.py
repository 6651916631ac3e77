"""The CI's helper scripts (``.ci/``): the per-package coverage summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_coverage_summary_counts_lines_per_package(tmp_path):
    """Two packages with known executed and missed lines: the summary's figures are theirs."""
    (tmp_path / "dice_poker_env").mkdir()
    (tmp_path / "agents").mkdir()
    # core: 4 statements, the function body (1) never runs -> 3 of 4; agents: 2 of 2
    (tmp_path / "dice_poker_env" / "core_mod.py").write_text("A = 1\n\n\ndef unused():\n    return A\n\n\nB = 2\n")
    (tmp_path / "agents" / "agent_mod.py").write_text("C = 3\nD = C + 1\n")
    script = (
        "import sys, coverage\n"
        "sys.path.insert(0, '.')\n"
        "cov = coverage.Coverage(data_file='cov.data', source=['dice_poker_env', 'agents'])\n"
        "cov.start()\n"
        "import dice_poker_env.core_mod, agents.agent_mod\n"
        "cov.stop()\n"
        "cov.save()\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True, timeout=120)
    summary = ROOT / ".ci" / "coverage_summary.py"
    result = subprocess.run(
        [sys.executable, str(summary), "cov.data", "--fail-under", "agents=100"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = {line.split(":")[0].split()[-1]: line.split(":")[1].split() for line in result.stdout.splitlines()}
    assert lines["dice_poker_env"][:3] == ["3", "of", "4"]
    assert lines["agents"][:3] == ["2", "of", "2"]
    assert lines["total"][:3] == ["5", "of", "6"]
    below = subprocess.run(
        [sys.executable, str(summary), "cov.data", "--fail-under", "dice_poker_env=95"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert below.returncode == 1 and "below 95%" in below.stderr


SCRIPTS = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_script_answers_help_without_running(script):
    """``--help`` prints the usage and exits 0: it never starts the benchmark (bench_cache_key.py once solved
    a ruleset called '--help')."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / script), "--help"],
        capture_output=True, text=True, timeout=120, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower() or "python" in done.stdout, done.stdout[:500]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["bench_reach.py", "nosuch"],
        ["reach_check.py", "nosuch"],
        ["bench_winning.py", "nosuch"],
        ["bench_benchmark.py", "--rules", "nosuch"],
    ],
)
def test_a_benchmark_scripts_user_error_is_one_line(argv, tmp_path):
    """benchmarks/ end with dice_poker_env.cli.run_script: an unknown ruleset is `SCRIPT: error: ...`, status 2."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / argv[0]), *argv[1:]],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1].startswith(f"{argv[0]}: error: unknown ruleset 'nosuch'")
    assert "Traceback" not in done.stderr
