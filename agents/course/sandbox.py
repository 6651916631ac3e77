"""Run an untrusted agent (a student's submission) in a separate process, with limits.

:class:`SandboxedAgent` looks like any agent (``act``, ``reset``, ``obs_mode``) to the
benchmark, but the submission itself (``FILE.py:NAME`` or ``MODULE:NAME``, as in
:mod:`agents.players.registry`) runs in a child process (:mod:`agents.course.sandbox_worker`):

* **Limits**: a time limit per decision and per game, a time limit to load, and an
  address-space limit (``memory_mb`` above what the worker uses before loading it).
* **Failures never escape**: an exception (with its traceback), a hang (the worker
  is killed), a crash or a killed process, a malformed answer (not an ``int``), an
  illegal action, or a broken protocol each end the current game as an illegal
  action does in the env (the points so far count) and are recorded as a
  :class:`Failure`. The next game starts a fresh worker where needed. After
  ``max_failures`` failures no more decisions are asked for: the remaining games
  end at once and score 0.
* **Output is captured**: the worker's standard output and error go to files, never
  into the protocol; anything printed to stdout is reported (:attr:`printed`).
* **No seeds leak**: the worker receives only observations and masks, and per game
  an agent seed derived from the grading seed and the game number by SHA-256, from
  which neither the seed nor the dice can be recovered. The dice are drawn in the
  grader's process after each decision.

Messages between the processes are length-prefixed JSON objects (at most
:data:`MAX_MESSAGE` bytes); nothing from the worker is unpickled or evaluated.
The worker inherits the grader's user, environment and working folder. It shares
no Python objects with the grader, but like any process of the same user it could
inspect the grader through the operating system (``/proc``, a debugger), and the
grader's command line (``--seed``) is visible to every process on the machine: for
adversarial settings run the grader in a container or as another user, and keep
the grading seed out of reach. (``python -m agents.commands.grade`` marks its process
non-dumpable on Linux, which keeps other processes of its user without root out of
its memory.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS
from dice_poker_env.rules import Rules

#: largest message either side accepts (bytes)
MAX_MESSAGE = 1 << 20
#: failures recorded in full (with tracebacks); later ones are only counted
MAX_RECORDED_FAILURES = 20
_HEADER = struct.Struct("!I")


class ProtocolError(RuntimeError):
    """The other side sent something that is not a message of the protocol."""


# ------------------------------------------------------------------ messages
def send(sock: socket.socket, message: dict) -> None:
    """Send one JSON object, length-prefixed."""
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(data)} bytes is over the limit of {MAX_MESSAGE}")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
        try:
            chunk = sock.recv(min(n - got, 1 << 16))
        except TimeoutError:
            raise TimeoutError from None
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, deadline: float | None = None) -> dict:
    """Receive one JSON object; ``TimeoutError`` past ``deadline`` (``time.monotonic()``), ``EOFError`` at the end.

    Raises:
        ProtocolError: an oversized message, invalid JSON, or JSON that is not an object.
    """
    (size,) = _HEADER.unpack(_read_exact(sock, _HEADER.size, deadline))
    if size > MAX_MESSAGE:
        raise ProtocolError(f"a message of {size} bytes (the limit is {MAX_MESSAGE})")
    try:
        message = json.loads(_read_exact(sock, size, deadline))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ProtocolError(f"not JSON: {error}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"not a JSON object: {type(message).__name__}")
    return message


def encode_observation(obs: Any) -> Any:
    """An env observation (dict of arrays and NumPy scalars, or one array) as JSON."""
    if isinstance(obs, dict):
        return {key: encode_observation(value) for key, value in obs.items()}
    array = np.asarray(obs)
    return {"dtype": array.dtype.str, "shape": list(array.shape), "data": array.reshape(-1).tolist()}


def decode_observation(data: Any) -> Any:
    """The inverse of :func:`encode_observation`: the same arrays, dtypes and NumPy scalars."""
    if isinstance(data, dict) and set(data) == {"dtype", "shape", "data"}:
        dtype = np.dtype(data["dtype"])
        if not data["shape"]:
            return dtype.type(data["data"][0])
        return np.asarray(data["data"], dtype=dtype).reshape(data["shape"])
    return {key: decode_observation(value) for key, value in data.items()}


def agent_seed(seed: int, game: int) -> int:
    """The seed the submission gets for game ``game`` of a grading with ``seed`` (a one-way hash of both)."""
    digest = hashlib.sha256(f"dice-poker agent seed/{int(seed)}/{int(game)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# ------------------------------------------------------------------ the agent
@dataclass(frozen=True)
class Limits:
    """What a sandboxed submission may use.

    Attributes:
        decision_seconds: wall-clock time for one decision (one ``act`` call).
        game_seconds: wall-clock time for all the decisions of one game.
        load_seconds: time to start the process and load the submission.
        memory_mb: address space the submission may add to the worker's (``None``: no limit).
        max_failures: failed games after which no more decisions are asked for.
    """

    decision_seconds: float = 5.0
    game_seconds: float = 120.0
    load_seconds: float = 60.0
    memory_mb: int | None = 4096
    max_failures: int = 10

    def __post_init__(self) -> None:
        for name in ("decision_seconds", "game_seconds", "load_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.memory_mb is not None and (
            isinstance(self.memory_mb, bool) or not isinstance(self.memory_mb, int) or self.memory_mb < 16
        ):
            raise ValueError(f"memory_mb must be an integer >= 16 (or None), got {self.memory_mb!r}")
        if isinstance(self.max_failures, bool) or not isinstance(self.max_failures, int) or self.max_failures < 1:
            raise ValueError(f"max_failures must be an integer >= 1, got {self.max_failures!r}")


@dataclass
class Failure:
    """One failed game (or a submission that did not load: ``game`` is -1).

    Attributes:
        game: the game's number (0-based) in the grading.
        decision: the decision's number within the game (0-based; -1 at the game's start).
        kind: ``load``, ``exception``, ``timeout``, ``crash``, ``malformed``, ``illegal`` or ``protocol``.
        message: one line saying what happened.
        traceback: the submission's traceback, or the tail of its standard error for a crash.
    """

    game: int
    decision: int
    kind: str
    message: str
    traceback: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Printed:
    """What the submission wrote to standard output (it should print nothing)."""

    bytes: int = 0
    first_game: int | None = None
    first_decision: int | None = None
    sample: str = ""


class SandboxedAgent:
    """An agent spec played in a separate process under :class:`Limits` (module docstring).

    Args:
        spec: ``FILE.py:NAME[,key=value...]`` or ``MODULE:NAME[,...]``.
        rules: the ruleset played (given to the submission's constructor as ``rules``).
        seed: the grading seed; the submission gets :func:`agent_seed` of it per game.
        limits: the limits.

    Attributes:
        load_error: the :class:`Failure` of a submission that could not be loaded, else None.
        failures: the recorded failures (at most :data:`MAX_RECORDED_FAILURES`).
        failure_count: all failures, recorded or not.
        stopped_at_game: the game at which ``max_failures`` was reached, else None.
        printed: what the submission wrote to standard output.
    """

    name = "submission"

    def __init__(self, spec: str, rules: Rules, *, seed: int = 0, limits: Limits | None = None):
        from agents.players.registry import parse_agent_spec

        parsed = parse_agent_spec(spec)
        if parsed is None:
            raise ValueError(f"submission {spec!r}: expected FILE.py:NAME or MODULE:NAME (with ,key=value arguments)")
        if parsed.is_file:  # the worker resolves it the same wherever it starts
            spec = os.path.abspath(parsed.source) + spec[len(parsed.source) :]
        self.spec = spec
        self.rules = rules
        self.limits = limits or Limits()
        self.seed_base = int(seed)
        self.obs_mode = "dict"
        self.agent_name = spec
        self.has_seed = False
        self.load_error: Failure | None = None
        self.failures: list[Failure] = []
        self.failure_count = 0
        self.stopped_at_game: int | None = None
        self.printed = Printed()
        self.game = -1
        self._decision = 0
        self._game_time = 0.0
        self._game_failed = False
        self._dir = tempfile.mkdtemp(prefix="dice-poker-sandbox-")
        self._stdout = os.path.join(self._dir, "stdout")
        self._stderr = os.path.join(self._dir, "stderr")
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        failure = self._start()
        if failure is not None:
            self.load_error = failure

    # ------------------------------------------------------------ process
    def _start(self) -> Failure | None:
        """Start a worker and load the submission; the failure if it does not load."""
        parent, child = socket.socketpair()
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        with open(self._stdout, "ab") as out, open(self._stderr, "ab") as err:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "agents.course.sandbox_worker", str(child.fileno())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                env=env,
            )
        child.close()
        self._sock = parent
        hello = {
            "spec": self.spec,
            "rules": dict(self.rules.raw_spec),
            "options": dict(self.rules.options),
            "memory_mb": self.limits.memory_mb,
        }
        reply, failure = self._request(hello, self.limits.load_seconds, "loading the submission")
        if failure is not None:
            return failure
        if not reply.get("ok"):
            self._kill()
            return Failure(
                self.game,
                -1,
                "load",
                str(reply.get("message", "the submission did not load"))[:2000],
                str(reply.get("traceback", ""))[-8000:],
            )
        obs_mode = reply.get("obs_mode")
        self.obs_mode = obs_mode if obs_mode in ("dict", "flat") else "dict"
        self.agent_name = str(reply.get("name", self.spec))[:200]
        self.has_seed = bool(reply.get("has_seed"))
        return None

    def _kill(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._process is not None:
            if self._process.poll() is None:
                try:
                    os.killpg(self._process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):  # pragma: no cover - already gone
                    pass
            self._process.wait()
            self._process = None

    def _stderr_tail(self, limit: int = 4000) -> str:
        try:
            with open(self._stderr, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - limit))
                return handle.read().decode(errors="replace")
        except OSError:  # pragma: no cover
            return ""

    def _request(self, message: dict, seconds: float, what: str) -> tuple[dict, Failure | None]:
        """Send ``message`` and wait at most ``seconds`` for the answer; a failure kills the worker."""
        deadline = time.monotonic() + seconds
        try:
            send(self._sock, message)
            return receive(self._sock, deadline), None
        except TimeoutError:
            self._kill()
            return {}, Failure(self.game, self._decision, "timeout", f"no answer within {seconds:g} s ({what})")
        except ProtocolError as error:
            self._kill()
            return {}, Failure(self.game, self._decision, "protocol", f"{what}: {error}")
        except (EOFError, OSError):
            code = self._process.wait() if self._process is not None else None
            self._process = None
            self._kill()
            if code is not None and code < 0:
                how = (
                    f"was killed by signal {-code} ({signal.Signals(-code).name})"
                    if -code in signal.valid_signals()
                    else f"was killed by signal {-code}"
                )
            else:
                how = f"exited with status {code}"
            return {}, Failure(
                self.game, self._decision, "crash", f"the submission's process {how} ({what})", self._stderr_tail()
            )

    def _fail(self, failure: Failure) -> None:
        self._game_failed = True
        self.failure_count += 1
        if len(self.failures) < MAX_RECORDED_FAILURES:
            self.failures.append(failure)
        if self.failure_count >= self.limits.max_failures and self.stopped_at_game is None:
            self.stopped_at_game = self.game
            self._kill()

    def _check_stdout(self) -> None:
        try:
            size = os.path.getsize(self._stdout)
        except OSError:  # pragma: no cover
            return
        if size > self.printed.bytes:
            if self.printed.first_game is None:
                self.printed.first_game, self.printed.first_decision = self.game, self._decision
            self.printed.bytes = size

    # ------------------------------------------------------------ agent interface
    @property
    def playing(self) -> bool:
        """Whether decisions are still asked for (loaded, and fewer than ``max_failures`` failures)."""
        return self.load_error is None and self.stopped_at_game is None

    def seed(self, game_seed: int | None) -> None:
        """Ignored: the grader's game seeds are never forwarded (the submission gets :func:`agent_seed`)."""

    def reset(self) -> None:
        """Start the next game: a fresh worker after a hang or a crash, the agent's ``seed`` and ``reset``."""
        self.game += 1
        self._decision = -1
        self._game_time = 0.0
        self._game_failed = False
        if not self.playing:
            return
        if self._process is None:
            failure = self._start()
            if failure is not None:
                failure.game = self.game
                self._fail(failure)
                return
        seed = agent_seed(self.seed_base, self.game) if self.has_seed else None
        start = time.monotonic()
        reply, failure = self._request(
            {"op": "reset", "seed": seed}, self.limits.decision_seconds, "the agent's seed()/reset()"
        )
        self._game_time += time.monotonic() - start
        if failure is None and not reply.get("ok"):
            failure = Failure(
                self.game,
                -1,
                str(reply.get("kind", "exception"))[:20],
                str(reply.get("message", ""))[:2000],
                str(reply.get("traceback", ""))[-8000:],
            )
        if failure is not None:
            self._fail(failure)
        self._decision = 0
        self._check_stdout()

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        """The submission's action, or ``-1`` (an illegal action: the game ends) once this game has failed."""
        if self._game_failed or not self.playing or self._process is None:
            return -1
        left = self.limits.game_seconds - self._game_time
        seconds, what = (
            (self.limits.decision_seconds, "decision time limit")
            if self.limits.decision_seconds <= left
            else (max(left, 1e-3), "game time limit")
        )
        mask = np.asarray(action_mask)
        start = time.monotonic()
        reply, failure = self._request(
            {"op": "act", "obs": encode_observation(observation), "mask": mask.tolist()},
            seconds,
            f"{what}, decision {self._decision} of game {self.game}",
        )
        self._game_time += time.monotonic() - start
        self._check_stdout()
        if failure is None and not reply.get("ok"):
            failure = Failure(
                self.game,
                self._decision,
                str(reply.get("kind", "exception"))[:20],
                str(reply.get("message", ""))[:2000],
                str(reply.get("traceback", ""))[-8000:],
            )
        action = reply.get("action") if failure is None else None
        if failure is None and (isinstance(action, bool) or not isinstance(action, int)):
            failure = Failure(self.game, self._decision, "protocol", f"the worker answered {action!r}, not an action")
        if failure is not None:
            self._fail(failure)
            return -1
        if not (0 <= action < len(mask) and mask[action]):
            self._fail(Failure(self.game, self._decision, "illegal", self._explain_illegal(observation, mask, action)))
        self._decision += 1
        return action

    def _explain_illegal(self, observation: Any, mask: np.ndarray, action: int) -> str:
        if not 0 <= action < len(mask):
            return f"returned the action {action}, outside 0..{len(mask) - 1}"
        rolls_left = int(observation["rolls_left"]) if isinstance(observation, dict) else None
        if action < N_KEEP_ACTIONS:
            if rolls_left == 0:
                return f"returned the keep action {action} with no rerolls left (it must score a box)"
            if action == N_KEEP_ACTIONS - 1:
                return "returned 31 (keep all five dice), which is never legal: to stop, score a box"
            return f"returned the illegal keep action {action}"
        box = self.rules.box_names[action - N_KEEP_ACTIONS]
        if isinstance(observation, dict) and int(np.asarray(observation["filled"])[action - N_KEEP_ACTIONS]):
            return f"returned the action {action}: box {box!r} is already filled"
        return f"returned the action {action}: box {box!r} may not be chosen now (section order or the joker)"

    def stdout_sample(self, limit: int = 2000) -> str:
        """The start of what the submission printed to standard output."""
        try:
            with open(self._stdout, "rb") as handle:
                return handle.read(limit).decode(errors="replace")
        except OSError:  # pragma: no cover
            return ""

    def close(self) -> None:
        """Stop the worker and remove its folder (the captured output is read before)."""
        if self._sock is not None and self._process is not None and self._process.poll() is None:
            try:
                send(self._sock, {"op": "close"})
                self._process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired, ProtocolError):
                pass
        self._kill()
        self.printed.sample = self.stdout_sample() if self.printed.bytes else ""
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> SandboxedAgent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # a worker never outlives its grader
        try:
            self._kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
