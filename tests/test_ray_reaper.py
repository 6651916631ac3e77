"""Ray's helper processes do not outlive a killed driver (agents/training/ray_reaper.py), and the Ray of the tests
listens on the loopback only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="Linux /proc")

DRIVER = """
import json, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); time.sleep(300)"])
time.sleep(1.0)
from agents.training.ray_reaper import descendants, reap_on_exit
tree = descendants(__import__("os").getpid())
reap_on_exit()
print(json.dumps([pid for pid, _ in tree]), flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def _wait_gone(pids, seconds=20.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


def test_the_descendants_of_a_killed_driver_are_ended():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        tree = json.loads(driver.stdout.readline())
        assert len(tree) == 2 and all(_alive(p) for p in tree)  # a child and a grandchild
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        assert _wait_gone(tree) == []
    finally:
        if driver.poll() is None:
            driver.kill()


def test_a_normal_exit_ends_them_too_and_never_hits_a_reused_pid():
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER.replace("time.sleep(300)\n", "sys.exit(0)\n", 1)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    tree = json.loads(driver.stdout.readline())
    driver.wait(timeout=60)
    assert _wait_gone(tree) == []


def loopback_only() -> list[str]:
    """A command prefix running a process in a network namespace with only the loopback (bubblewrap), or []."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return []
    probe = subprocess.run([bwrap, "--dev-bind", "/", "/", "--unshare-net", "true"], capture_output=True)
    return [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent"] if probe.returncode == 0 else []


RAY_DRIVER = """
import json, os, time, ray
ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
         _node_ip_address="127.0.0.1")
from agents.training.ray_reaper import descendants, reap_on_exit
time.sleep(2)
tree = descendants(os.getpid())
reap_on_exit()
print(json.dumps({"driver": os.getpid(), "tree": [pid for pid, _ in tree]}), flush=True)
time.sleep(600)
"""


def test_ray_processes_end_with_a_killed_driver(tmp_path):
    pytest.importorskip("ray")
    folder = tempfile.mkdtemp(prefix="rayr")  # Ray's socket paths must be short
    env = {**os.environ, "RAY_TMPDIR": folder, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [*loopback_only(), sys.executable, "-c", RAY_DRIVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        started = json.loads(driver.stdout.readline())
        tree = started["tree"]
        assert tree, "ray.init started no process"
        names = {Path(f"/proc/{p}/comm").read_text().strip() for p in tree if _alive(p)}
        assert any("raylet" in n or "gcs" in n for n in names), names
        os.kill(started["driver"], signal.SIGKILL)
        assert _wait_gone(tree, 60) == []
    finally:
        if driver.poll() is None:
            driver.kill()
        shutil.rmtree(folder, ignore_errors=True)
