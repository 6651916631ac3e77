"""The CI's helper scripts (``.ci/``): the per-package coverage summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
