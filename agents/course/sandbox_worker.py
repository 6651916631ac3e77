"""The process a sandboxed agent runs in: ``python -m agents.course.sandbox_worker FD``.

Started by :class:`agents.course.sandbox.SandboxedAgent`, never by hand. ``FD`` is one end
of a socket pair; messages both ways are length-prefixed JSON (:func:`agents.course.sandbox.send`).
The worker's standard output and error are files the grader reads, so whatever the
agent prints never reaches the protocol. The grader sends the agent spec, the rules and
the memory limit; the worker applies the limit, loads the agent and answers
``{"ok": true, "obs_mode", "name", "has_seed"}`` or the load error. Then, per message:

* ``{"op": "act", "obs": ..., "mask": [...]}``: ``{"ok": true, "action": int}``, or
  ``{"ok": false, "kind": "exception" | "malformed", "message", "traceback"}``;
* ``{"op": "reset", "seed": int | None}``: calls the agent's ``seed(seed)`` (when it
  has one and a seed is given) and ``reset()``; answers like ``act``;
* ``{"op": "close"}``: exits.

The worker never receives the grader's game seeds: only observations, masks, and the
per-game agent seeds derived from them by a one-way hash.
"""

from __future__ import annotations

import socket
import sys
import traceback


def _limit_memory(megabytes: int | None) -> None:
    """Cap the address space at what the process uses now plus ``megabytes`` (Linux, macOS)."""
    if not megabytes:
        return
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no limit
        return
    current = 0
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    current = int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - no /proc
        pass
    limit = current + int(megabytes) * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _failure(kind: str, error: BaseException) -> dict:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    text = "".join(lines)
    message = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()
    return {
        "ok": False,
        "kind": kind,
        "message": message[-1] if message else type(error).__name__,
        "traceback": text[-8000:],
    }


def main(argv: list[str]) -> int:
    import numpy as np

    from agents.course.sandbox import decode_observation, receive, send
    from agents.players.registry import as_action, make_agent
    from dice_poker_env.rules import load_rules

    sock = socket.socket(fileno=int(argv[0]))
    hello = receive(sock)
    rules = load_rules(hello["rules"], **hello["options"])
    _limit_memory(hello.get("memory_mb"))
    try:
        agent = make_agent(hello["spec"], rules)
    except BaseException as error:  # noqa: BLE001 - everything the submission does is reported
        failure = _failure("load", error)
        if error.__cause__ is not None:  # an AgentLoadError: its message, and the submission's traceback
            failure["traceback"] = _failure("load", error.__cause__)["traceback"]
        send(sock, failure)
        return 0
    inner = agent.agent
    send(
        sock,
        {
            "ok": True,
            "obs_mode": str(agent.obs_mode),
            "name": str(agent.name),
            "has_seed": callable(getattr(inner, "seed", None)),
        },
    )
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
                send(sock, {"ok": True})
                continue
            obs = decode_observation(message["obs"])
            mask = np.asarray(message["mask"], dtype=np.int8)
            raw = inner.act(obs, mask)
        except BaseException as error:  # noqa: BLE001 - SystemExit, MemoryError, anything
            send(sock, _failure("exception", error))
            continue
        try:
            action = as_action(raw, "the agent")
        except TypeError as error:
            send(sock, {"ok": False, "kind": "malformed", "message": str(error), "traceback": ""})
            continue
        send(sock, {"ok": True, "action": action})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
