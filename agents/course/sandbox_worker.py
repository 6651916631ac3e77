"""The process a sandboxed agent runs in: ``python -m agents.course.sandbox_worker FD``.

Started by :class:`agents.course.sandbox.SandboxedAgent`, never by hand. ``FD`` is one end
of a socket pair; messages both ways are length-prefixed JSON (:func:`agents.course.sandbox.send`).
The worker's standard output and error are files the grader reads, so whatever the
agent prints never reaches the protocol. The grader sends the agent spec, the rules, the
limits and the solver policy; before it loads the submission the worker closes every
file descriptor but the socket and its standard streams, sets its hard resource limits
(soft = hard, so the submission cannot raise them: address space, CPU time, processes,
file size, open files, no core files) and installs the solver policy's import hook.
It answers ``{"ok": true, "obs_mode", "name", "has_seed", "track"}`` (``track``: the agent's
``track`` attribute as text, or ``None``) or the load error. Then,
per message:

* ``{"op": "act", "obs": ..., "mask": [...]}``: ``{"ok": true, "action": int}``, or
  ``{"ok": false, "error": "exception" | "malformed", "message", "traceback"}`` (with ``"forbidden": true``
  when the exception is, or comes from, an import the solver policy refused);
* ``{"op": "reset", "seed": int | None}``: calls the agent's ``seed(seed)`` (when it
  has one and a seed is given) and ``reset()``; answers like ``act``;
* ``{"op": "close"}``: exits.

Every answer carries ``"solver": [modules]`` once the submission has imported (or, under
``forbid``, tried to import) the library's solver or agents. The grader decides the failure kinds;
what the worker says is only evidence (the submission runs in this process and could
say anything).
"""

from __future__ import annotations

import os
import socket
import sys
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

#: solver modules the submission imported or tried to (reported in every answer)
SOLVER_SEEN: list[str] = []


def _limit(limits: dict) -> None:
    """Hard resource limits (soft = hard; Linux, macOS): the submission cannot raise them."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no limits
        return

    def hard(which: int, value: int) -> None:
        _, old = resource.getrlimit(which)
        if old != resource.RLIM_INFINITY:
            value = min(value, old)
        resource.setrlimit(which, (value, value))

    megabytes = limits.get("memory_mb")
    if megabytes:
        current = 0
        try:
            with open("/proc/self/status") as handle:
                for line in handle:
                    if line.startswith("VmSize:"):
                        current = int(line.split()[1]) * 1024
        except OSError:  # pragma: no cover - no /proc
            pass
        hard(resource.RLIMIT_AS, current + int(megabytes) * 1024 * 1024)
    cpu = int(limits["cpu_seconds"])
    _, old = resource.getrlimit(resource.RLIMIT_CPU)
    # SIGXCPU at the soft limit, SIGKILL one second later (if the submission ignores SIGXCPU)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1) if old == resource.RLIM_INFINITY else (old, old))
    hard(resource.RLIMIT_FSIZE, int(limits["file_mb"]) << 20)
    hard(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    hard(resource.RLIMIT_CORE, 0)
    if hasattr(resource, "RLIMIT_NPROC") and limits.get("processes"):
        hard(resource.RLIMIT_NPROC, int(limits["processes"]))


class ForbiddenImport(ImportError):
    """An import of the library's solver or agents that the grading's ``forbid`` policy refuses."""


def _from_forbidden_import(error: BaseException | None) -> bool:
    """Whether ``error`` is a refused import or comes from one (its ``__cause__`` or ``__context__`` chain): a
    failure the grader calls ``solver``; any other failure of a submission that once tried such an import (and
    caught the refusal) is its own kind."""
    try:
        for _ in range(100):
            if error is None:
                return False
            if type(error) is ForbiddenImport:
                return True
            error = error.__cause__ or error.__context__
    except BaseException:  # noqa: BLE001 - the submission's exception objects; the worst is its own failure's kind
        pass
    return False


class _SolverWatch:
    """An import hook: notes (``flag``) or refuses (``forbid``) the library's solver and agent modules."""

    def __init__(self, forbid: bool, modules: tuple[str, ...]) -> None:
        self.forbid = forbid
        self.modules = modules

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> None:  # noqa: ARG002 - the MetaPathFinder interface
        module = next((m for m in self.modules if name == m or name.startswith(m + ".")), None)
        if module is not None:
            if module not in SOLVER_SEEN:
                SOLVER_SEEN.append(module)
            if self.forbid:
                raise ForbiddenImport(
                    f"the grading forbids the library's solver and agents: 'import {name}' is not allowed"
                )
        return None

    def find_module(
        self, name: str, path: Sequence[str] | None = None
    ) -> None:  # pragma: no cover - Python < 3.4 interface
        return None


def _failure(kind: str, error: BaseException) -> dict:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    text = "".join(lines)
    message = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()
    # the message from its "Type: ..." line on, on one line: all of a multi-line message, not its last line
    # (a SyntaxError's source excerpt comes before that line and is left out)
    name = type(error).__name__
    start = next(
        (k for k, line in enumerate(message) if line.startswith((name, f"{type(error).__module__}.{name}"))),
        max(len(message) - 1, 0),
    )
    one_line = " / ".join(line.strip() for line in message[start:] if line.strip())
    failure = {
        "ok": False,
        "error": kind,
        "message": (one_line or name)[:2000],
        "traceback": text[-8000:],
    }
    if _from_forbidden_import(error):
        failure["forbidden"] = True
    return failure


def _answer(sock: socket.socket, message: dict) -> None:
    from agents.course.protocol import send

    if SOLVER_SEEN:
        message["solver"] = list(SOLVER_SEEN)
    send(sock, message)


def _declared_track(agent: object) -> str | None:
    """The benchmark track the agent declares (its ``track`` attribute), as text; the grader checks it."""
    track = getattr(agent, "track", None)
    if track is None or type(track) is str:  # (exactly a str, as in process: no method of the agent's runs)
        return None if track is None else track[:100]
    return f"a {type(track).__name__}"[:100]


def main(argv: list[str]) -> int:
    fd = int(argv[0])
    try:  # nothing but the socket and the standard streams reaches the submission
        os.closerange(3, fd)
        os.closerange(fd + 1, 1 << 16)
    except OSError:  # pragma: no cover
        pass
    import numpy as np

    from agents.course.protocol import decode_observation, receive
    from agents.course.sandbox import SOLVER_MODULES
    from agents.players.registry import AgentError, as_action, make_agent
    from dice_poker_env.rules import load_rules

    sock = socket.socket(fileno=fd)
    hello = receive(sock)
    rules = load_rules(hello["rules"], **hello["options"])
    _limit(hello["limits"])
    if hello.get("solver") in ("flag", "forbid"):
        sys.meta_path.insert(0, _SolverWatch(hello["solver"] == "forbid", SOLVER_MODULES))
    if hello.get("workdir"):  # a shared folder: the agent's working folder, now that its limits are set
        os.chdir(hello["workdir"])
    try:
        agent = make_agent(hello["spec"], rules)
    except BaseException as error:  # noqa: BLE001 - everything the submission does is reported
        failure = _failure("load", error)
        if error.__cause__ is not None:  # an AgentLoadError: its message, and the submission's traceback
            failure["traceback"] = _failure("load", error.__cause__)["traceback"]
        _answer(sock, failure)
        return 0
    inner = agent.agent
    try:  # the agent's own attributes: a property or __str__ that raises is a load failure, said as one
        hello = {
            "ok": True,
            "obs_mode": str(agent.obs_mode),
            "name": str(agent.name)[:200],
            "has_seed": callable(getattr(inner, "seed", None)),
            "track": _declared_track(inner),
        }
    except BaseException as error:  # noqa: BLE001 - everything the submission does is reported
        _answer(sock, _failure("load", error))
        return 0
    _answer(sock, hello)
    while True:
        try:
            message = receive(sock)
        except EOFError:
            return 0
        op = message.get("op")
        if op == "close":
            return 0
        try:
            if op == "reset":
                if message.get("seed") is not None:
                    agent.seed(int(message["seed"]))
                agent.reset()
                _answer(sock, {"ok": True})
                continue
            obs = decode_observation(message["obs"])
            mask = np.asarray(message["mask"], dtype=np.int8)
            raw = inner.act(obs, mask)
        except BaseException as error:  # noqa: BLE001 - SystemExit, MemoryError, anything
            if isinstance(error, AgentError) and error.__cause__ is not None:  # seed()/reset(): the agent's own
                error = error.__cause__
            _answer(sock, _failure("exception", error))
            continue
        try:
            action = as_action(raw, "the agent")
            if not -(1 << 62) <= action < 1 << 62:
                raise TypeError(f"the agent returned an int of {action.bit_length()} bits, not an action index")
        except TypeError as error:
            _answer(sock, {"ok": False, "error": "malformed", "message": str(error)[:2000], "traceback": ""})
            continue
        except BaseException as error:  # noqa: BLE001 - a hostile __int__ or __repr__
            _answer(sock, _failure("exception", error))
            continue
        _answer(sock, {"ok": True, "action": action})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
