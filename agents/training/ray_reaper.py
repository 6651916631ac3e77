"""Ray's helper processes end with the driver that started them, even when it is killed.

``ray.init(address="local")`` starts a node (``gcs_server``, ``raylet``, log
monitors, ``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) as children of
the driver. ``ray.shutdown()`` (and Python's exit) stops them; a driver killed
with SIGKILL (or OOM-killed) runs neither, and with Ray 2.60 the two agents then
outlive it, reparented to init (measured: still there minutes later). The raylet
and the GCS notice their parent's death; the agents do not.

:func:`reap_on_exit` starts a small watchdog right after ``ray.init``: a Python
process in its own session (Ctrl-C and the terminal's signals do not reach it)
that reads a pipe from the driver. When the driver ends, however it ends, the
pipe closes; the watchdog then sends SIGTERM to the processes that were the
driver's descendants when it started (each identified by pid *and* start time,
so a reused pid is never hit) and to their own descendants, and SIGKILL to any
left after 5 s. Linux only (``/proc``); elsewhere it does nothing, and
``ray stop`` stops every Ray process of the user (docs/training.md).

:func:`unreachable` is the other check made before ``ray.init``: whether a
cluster's ``HOST:PORT`` answers at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: the watchdog: argv[1] = JSON [[pid, start time], ...]; waits for EOF on stdin, then ends those processes
_WATCHDOG = r"""
import json, os, signal, sys, time

def stat(pid):
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])  # ppid, start time

def descendants(roots):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = stat(int(name))
            if info:
                children.setdefault(info[0], []).append(int(name))
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found

recorded = [(pid, start) for pid, start in json.loads(sys.argv[1])]
try:
    while sys.stdin.buffer.read(65536):
        pass
except OSError:
    pass
alive = [pid for pid, start in recorded if (stat(pid) or (0, None))[1] == start]
targets = descendants(alive)
for pid in targets:
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
deadline = time.monotonic() + 5
while time.monotonic() < deadline and any(stat(pid) for pid in targets):
    time.sleep(0.1)
for pid in targets:
    if stat(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""

_watchdog: subprocess.Popen | None = None


def _stat(pid: int) -> tuple[int, int] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def descendants(pid: int) -> list[tuple[int, int]]:
    """``(pid, start time)`` of every process below ``pid`` (Linux ``/proc``; empty elsewhere)."""
    if not Path("/proc/self/stat").is_file():
        return []
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := _stat(int(entry))) is not None:
            children.setdefault(info[0], []).append(int(entry))
            starts[int(entry)] = info[1]
    found: list[tuple[int, int]] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append((child, starts[child]))
        todo.extend(children.get(child, []))
    return found


def reap_on_exit() -> subprocess.Popen | None:
    """Start the watchdog over this process's current descendants (call right after a local ``ray.init``).

    Returns the watchdog process (``None`` off Linux, or when it cannot start). Calling it again replaces
    the earlier watchdog's list (the old watchdog ends its processes when this driver ends, like the new one).
    """
    global _watchdog
    recorded = descendants(os.getpid())
    if not recorded:
        return None
    try:
        _watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, json.dumps(recorded)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    return _watchdog


def unreachable(address: str, timeout: float = 5.0) -> str | None:
    """Why no Ray cluster answers at ``address`` (``HOST:PORT``: a TCP connection to its GCS refused or timed
    out), or ``None`` (it answers, or the address has another form, ``auto`` or ``ray://...``, which Ray resolves
    itself). Asked before ``ray.init``: Ray 2.60 retries an unreachable GCS 20 times, about 40 s each, with a
    warning every few seconds: a mistyped port was an error only after many minutes."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not host or "://" in address or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return None
    except (OSError, OverflowError) as error:
        why = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return f"nothing answers there ({why}); is a Ray head node started there (ray start --head)?"
