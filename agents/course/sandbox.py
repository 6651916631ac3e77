"""Run an untrusted agent (a student's submission) in a separate, isolated process, with limits.

:class:`SandboxedAgent` looks like any agent (``act``, ``reset``, ``obs_mode``) to the
benchmark, but the submission itself (``FILE.py:NAME`` or ``MODULE:NAME``, as in
:mod:`agents.players.registry`) runs in a child process (:mod:`agents.course.sandbox_worker`).

* **Isolation** (Linux, with bubblewrap: :mod:`agents.course.isolation`): its own user,
  mount, PID, network, IPC and UTS namespaces, an empty environment, an unprivileged user,
  a read-only view of only the Python environment, the project's packages and its own
  file, and a private scratch folder. Without isolation, grading refuses to run unless
  asked to run unisolated (``isolated=False``: the worker is an ordinary child process).
* **Limits**: a time limit per decision, per game, to load, and in total (per
  submission); hard resource limits the submission cannot raise, set by the worker
  before it loads the submission (:class:`Limits`): address space, CPU time, processes,
  file size, open files, no core files; standard output and error are captured to
  files and capped. Isolated, a seccomp filter keeps its memory in its address space and,
  unless ``child_processes`` allows them, refuses child processes: ``memory_mb`` is then
  the total it may hold.
* **Failures never escape**: everything the submission does wrong ends the current
  game as an illegal action does in the env (the points so far count) and is recorded
  as a :class:`Failure` whose kind comes from the fixed list :class:`FailureKind`,
  decided by the grader (never a string the submission sends). After
  ``max_failures`` failures, or once the total time is spent, no more decisions are
  asked for: the remaining games end at once and score 0.
* **Solver policy**: ``solver="allow" | "flag" | "forbid"``: the worker watches imports
  of the library's solver and its agents (:data:`SOLVER_MODULES`); under ``flag`` they
  are reported, under ``forbid`` they fail (and the files, their compiled copies and the
  trained policies' weights, :data:`SOLVER_DATA`, are not in the sandbox).
* **No seeds leak**: the worker receives only observations and masks, and per game a
  seed for its own randomness that depends on the game's number only
  (:func:`agent_seed`), never on the grading seed. The dice are drawn in the grader.
  (``forward_seeds``, for a public game set only: ``dice-poker evaluate --isolated``
  gives the agent the per-game seed an agent in process gets.)

Messages between the processes are length-prefixed JSON objects; what the worker
sends is parsed defensively (size, nesting depth, number length: :func:`receive`),
nothing from it is unpickled or evaluated (:mod:`agents.course.protocol`).

Size: one class, the grader's side of one worker (start, requests under every limit, the
failure kinds, the output cap, the agent interface); the protocol and the isolation are
their own modules.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.course.isolation import (
    CODE_DIR,
    SUBMISSION_DIR,
    isolation_problem,
    project_dirs,
    sandbox_command,
    sandbox_environment,
    seccomp_fd,
)
from agents.course.protocol import (  # noqa: F401 - decode_observation is re-exported
    ProtocolError,
    decode_observation,
    encode_observation,
    receive,
    send,
)
from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS
from dice_poker_env.rules import Rules

#: failures recorded in full (with tracebacks); later ones are only counted
MAX_RECORDED_FAILURES = 20
#: modules of the library that hold or use the exact solver, and the library's own agents (a heuristic at 92.7% of
#: optimal, trained policies at 98%: a submission that imports one plays the library's game, not its own); the
#: ``solver`` policy watches them. The worker's own modules (``agents.players.registry``, ``agents.course``) and the
#: rules engine (``dice_poker_env.engine``, what the starter agent scores dice with) are not among them.
SOLVER_MODULES = (
    "dice_poker_env.solver",
    "agents.players.optimal",
    "agents.players.heuristic",
    "agents.players.winning",
    "agents.players.greedy",
    "agents.players.random_agent",
    "agents.players.sb3_agent",
    "agents.policy",
    "agents.training",
    "agents.evaluation",
)
#: folders of data the library's agents play from, hidden with :data:`SOLVER_MODULES` under ``forbid``
SOLVER_DATA = ("agents/policies",)
#: the solver policies of a grading
SOLVER_POLICIES = ("allow", "flag", "forbid")
#: ``game_failure`` of a game the grader no longer asked for (after ``max_failures`` failures or the total time)
STOPPED = "stopped"


class FailureKind(str, enum.Enum):
    """What went wrong, decided by the grader from what it saw (never sent by the submission)."""

    LOAD = "load"  #: the submission did not load (import or constructor failed)
    EXCEPTION = "exception"  #: act, seed or reset raised
    MALFORMED = "malformed"  #: act returned something that is not an int (a float, None, a string, 2**100)
    ILLEGAL = "illegal"  #: act returned an action the mask forbids
    TIMEOUT = "timeout"  #: a decision, game or load time limit passed without an answer
    BUDGET = "budget"  #: the submission's total time was spent
    CRASH = "crash"  #: the worker died (exit, signal, killed by a limit)
    RESOURCE = "resource"  #: the worker was killed for CPU time or file size
    OUTPUT = "output"  #: it wrote more than the limit to standard output or error
    PROTOCOL = "protocol"  #: a frame that is not a message of the protocol (too big, too deep, not JSON)
    SOLVER = "solver"  #: it imported the library's solver or agents where the grading forbids it

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


def agent_seed(game: int) -> int:
    """The seed the submission gets for game ``game``: a hash of the game's number only.

    It does not depend on the grading seed, so nothing about the dice can be learned from it
    (a hash of the grading seed could be inverted by trying every small seed).
    """
    digest = hashlib.sha256(f"dice-poker agent seed/{int(game)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# ------------------------------------------------------------------ the agent
@dataclass(frozen=True)
class Limits:
    """What a sandboxed submission may use.

    Attributes:
        decision_seconds: wall-clock time for one decision (one ``act`` call).
        game_seconds: wall-clock time for all the decisions of one game.
        load_seconds: time to start the process and load the submission.
        total_seconds: wall-clock time for everything the submission does in a grading (loads,
            resets and decisions); once spent, the remaining games score 0.
        memory_mb: address space the submission may add to the worker's (``None``: no limit). Isolated, this bounds
            all the memory it holds (module docstring of :mod:`agents.course.isolation`), unless ``child_processes``
            lets it start processes: each then has this limit.
        cpu_seconds: CPU time of one worker process (a hard limit: the process is killed).
        processes: processes and threads the submission may have at once (isolated).
        child_processes: isolated, whether the submission may start processes (``subprocess``,
            ``multiprocessing``, ``os.fork``); by default it may start threads only.
        file_mb: largest file it may write (its scratch files, standard output and error).
        scratch_mb: size of its private scratch folder (``/tmp``, isolated only).
        open_files: files it may have open at once.
        output_kb: standard output or error beyond this is an ``output`` failure.
        max_failures: failed games after which no more decisions are asked for.
    """

    decision_seconds: float = 5.0
    game_seconds: float = 120.0
    load_seconds: float = 60.0
    total_seconds: float = 3600.0
    memory_mb: int | None = 4096
    cpu_seconds: int = 3600
    processes: int = 64
    child_processes: bool = False
    file_mb: int = 64
    scratch_mb: int = 64
    open_files: int = 256
    output_kb: int = 1024
    max_failures: int = 10

    def __post_init__(self) -> None:
        for name in ("decision_seconds", "game_seconds", "load_seconds", "total_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.memory_mb is not None and (
            isinstance(self.memory_mb, bool)
            or not isinstance(self.memory_mb, int)
            or not 16 <= self.memory_mb <= 1 << 40  # (its bytes must fit the kernel's limit, 2**63)
        ):
            raise ValueError(f"memory_mb must be an integer in 16..2**40 (or None), got {self.memory_mb!r}")
        for name, least in (
            ("cpu_seconds", 1),
            ("processes", 4),
            ("file_mb", 1),
            ("scratch_mb", 1),
            ("open_files", 32),
            ("output_kb", 1),
            ("max_failures", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= 1 << 40:
                raise ValueError(f"{name} must be an integer in {least}..2**40, got {value!r}")
        if not isinstance(self.child_processes, bool):
            raise ValueError(f"child_processes must be true or false, got {self.child_processes!r}")

    def for_worker(self, isolated: bool = True) -> dict[str, Any]:
        """The hard limits the worker sets on itself before it loads the submission.

        Unisolated, the process limit would count every process of the grader's user: it is not set.
        """
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "processes": self.processes if isolated else None,
            "file_mb": self.file_mb,
            "open_files": self.open_files,
        }


@dataclass
class Failure:
    """One failed game (or a submission that did not load: ``game`` is -1).

    Attributes:
        game: the game's index (0-based: game ``i`` is played with the ``i``-th seed; reports show ``i + 1``).
        decision: the decision's index within the game (0-based; -1 at the game's start; reports show it + 1).
        kind: a :class:`FailureKind`.
        message: one line saying what happened.
        traceback: the submission's traceback, or the tail of its standard error for a crash.
    """

    game: int
    decision: int
    kind: FailureKind
    message: str
    traceback: str = ""

    def to_json(self) -> dict[str, Any]:
        """The failure as JSON, with the numbers people read: ``game_number`` and ``decision_number``, from 1
        (None while loading, and for the decision at the game's start)."""
        data = asdict(self)
        data["kind"] = FailureKind(self.kind).value
        data["game_number"] = self.game + 1 if self.game >= 0 else None
        data["decision_number"] = self.decision + 1 if self.decision >= 0 else None
        return data


@dataclass
class Printed:
    """What the submission wrote to standard output (it should print nothing), and how much to standard error."""

    bytes: int = 0
    stderr_bytes: int = 0
    first_game: int | None = None
    first_decision: int | None = None
    sample: str = ""


def _text(value: Any, limit: int, tail: bool = False) -> str:
    """A string from the worker, whatever it sent, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else ("" if value is None else json.dumps(value)[: limit + 1])
    return text[-limit:] if tail else text[:limit]


def unseen_beside(message: str, submission: str) -> str:
    """``"; helpers.py is beside my_agent.py, but ..."`` where an isolated submission's failure ``message`` names a
    module (``No module named 'helpers'``) or a file (``No such file or directory: 'weights.txt'``) that is beside
    its file ``submission``, which the sandbox does not show it; else ``""``. Only a plain name is looked up beside
    it (the message is the submission's own words: a path in it, ``/home/...`` or ``../x``, would have the grader
    tell it whether a file exists elsewhere)."""
    folder, name = os.path.dirname(os.path.abspath(submission)), os.path.basename(submission)
    modules = [module.split(".")[0] for module in re.findall(r"No module named '([\w.]+)'", message)]
    missing = [f"{module}.py" for module in modules] + modules
    missing += re.findall(r"No such file or directory: '([^']+)'", message)
    for other in missing:
        plain = other not in ("", ".", "..") and "/" not in other and os.sep not in other and "\0" not in other
        if plain and os.path.exists(os.path.join(folder, other)):
            return (
                f"; {other} is beside {name}, but the submission runs isolated and sees no other file than "
                f"{name}: put everything in {name}"
            )
    return ""


def shared_folder_problem(folder: Path) -> str | None:
    """Why ``folder`` must not be shown to a submission whole (``share_folder``), or ``None``: it holds (or is)
    the root, the home folder, the library's packages or the solver's cache."""
    from dice_poker_env.solver.cache import cache_dir

    folder = folder.resolve()
    guarded = {"the home folder": Path.home(), "the solver's cache": cache_dir()}
    guarded |= {f"the package {name}": Path(path) for name, path in project_dirs().items()}
    for what, path in guarded.items():
        path = path.resolve()
        if path == folder or folder in path.parents:
            return f"the folder {folder} holds {what}: put the submission in a folder of its own"
    if folder == Path(folder.anchor):
        return f"the folder {folder} is the root: put the submission in a folder of its own"
    return None


#: what a submission's ``Operation not permitted`` (with no file named) may come from, isolated
REFUSED_CALLS = "the sandbox refuses memfd_create, System V shared memory and message queues"
REFUSED_CALLS_AND_PROCESSES = "the sandbox refuses child processes, memfd_create and System V IPC; threads are allowed"


class SandboxedAgent:
    """An agent spec played in a separate process under :class:`Limits` (module docstring).

    Args:
        spec: ``FILE.py:NAME[,key=value...]`` or ``MODULE:NAME[,...]``.
        rules: the ruleset played (given to the submission's constructor as ``rules``).
        seed: the grading seed (kept here: the submission gets :func:`agent_seed` per game).
        limits: the limits.
        isolated: run the worker isolated (module docstring); ``False`` runs it as an ordinary
            child process (only for trusted code).
        solver: ``allow``, ``flag`` or ``forbid`` the library's solver in the submission.
        start: start the worker now (else call :meth:`start`).
        forward_seeds: give the agent's ``seed`` what the benchmark gives :meth:`seed` (an agent in process
            gets the same), not :func:`agent_seed`: for a public game set (``dice-poker evaluate``), where a
            randomized agent then plays as it does in process; never for a grading, whose seed is secret.
        share_folder: isolated, show the submission its whole folder (read-only, its working folder): the
            sibling modules and data files (``NAME,weights=w.npz``) of an agent of several files. Everything
            in the folder is then readable to it: for a folder that holds the submission alone.
        own_folder: whether the files beside the submission's file are its author's (a student's own folder): a
            failure's message then says where one it misses is there (:func:`unseen_beside`). ``False`` for a class
            folder of many students' files (or staged copies): the submission's message would have the grader tell
            its report whether a classmate's file, or any file of the instructor's, is there.

    Raises:
        ValueError: a bad spec or solver policy, or ``isolated`` where isolation is not available.

    Attributes:
        load_error: the :class:`Failure` of a submission that could not be loaded, else None.
        track: the benchmark track the submission declares (its ``track`` attribute, as text), else None.
        failures: the recorded failures (at most :data:`MAX_RECORDED_FAILURES`).
        failure_count: all failures, recorded or not.
        stopped_at_game: the game at which no more decisions were asked for, else None.
        stopped_because: ``max_failures`` or ``budget`` (with ``stopped_at_game``).
        printed: what the submission wrote to standard output.
        solver_imports: the solver modules the submission imported (or tried to, under ``forbid``).
        seconds: the wall-clock time the submission has used (its total budget's part spent).
        game_failure: what ended the current game, for the benchmark (``agents.evaluation.benchmark``): a
            :class:`FailureKind` value, :data:`STOPPED` for a game no longer asked for, or None.
    """

    name = "submission"

    def __init__(
        self,
        spec: str,
        rules: Rules,
        *,
        seed: int = 0,
        limits: Limits | None = None,
        isolated: bool = True,
        solver: str = "allow",
        start: bool = True,
        forward_seeds: bool = False,
        share_folder: bool = False,
        own_folder: bool = True,
    ) -> None:
        from agents.players.registry import parse_agent_spec

        parsed = parse_agent_spec(spec)
        if parsed is None:
            raise ValueError(f"submission {spec!r}: expected FILE.py:NAME or MODULE:NAME (with ,key=value arguments)")
        if solver not in SOLVER_POLICIES:
            raise ValueError(f"solver must be one of {', '.join(SOLVER_POLICIES)}, got {solver!r}")
        if isolated:
            problem = isolation_problem()
            if problem is not None:
                raise ValueError(f"{problem}; to grade without isolation (trusted code only) pass --unisolated")
        self._file: str | None = None
        #: the submission's path inside the sandbox and as given: messages name the file as given
        self._shown: tuple[str, str] | None = None
        if parsed.is_file:  # the worker resolves it the same wherever it starts
            self._file = os.path.abspath(parsed.source)
            inside = f"{SUBMISSION_DIR}/{os.path.basename(self._file)}" if isolated else self._file
            spec = inside + spec[len(parsed.source) :]
            self._shown = (inside, parsed.source) if isolated else None
        self.spec = spec
        self.rules = rules
        self.limits = limits or Limits()
        self.isolated = bool(isolated)
        self.solver = solver
        self.seed_base = int(seed)
        self.forward_seeds = bool(forward_seeds)
        self.share_folder = bool(share_folder)
        self.own_folder = bool(own_folder)
        if share_folder:
            if not isolated or not parsed.is_file:
                raise ValueError("share_folder shows an isolated agent file its folder: isolated, FILE.py:NAME")
            problem = shared_folder_problem(Path(os.path.abspath(parsed.source)).parent)
            if problem is not None:
                raise ValueError(problem)
        self._given_seed: int | None = None  # the benchmark's seed of the next game (forward_seeds)
        self.obs_mode = "dict"
        self.agent_name = spec
        self.has_seed = False
        #: the benchmark track the submission declares (its ``track`` attribute, as text), once loaded
        self.track: str | None = None
        self.load_error: Failure | None = None
        self.failures: list[Failure] = []
        self.failure_count = 0
        self.stopped_at_game: int | None = None
        self.stopped_because: str | None = None
        self.printed = Printed()
        self.solver_imports: list[str] = []
        self.seconds = 0.0
        self.game_failure: str | None = None
        self.game = -1
        self._decision = 0
        self._game_time = 0.0
        self._game_failed = False
        self._output_seen = 0
        self._dir = tempfile.mkdtemp(prefix="dice-poker-sandbox-")
        self._stdout = os.path.join(self._dir, "stdout")
        self._stderr = os.path.join(self._dir, "stderr")
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the worker and load the submission (the constructor does, unless ``start=False``)."""
        failure = self._start()
        if failure is not None:
            self.load_error = failure

    # ------------------------------------------------------------ process
    def _command(self, fd: int, seccomp: int | None = None) -> tuple[list[str], dict[str, str] | None, str | None]:
        """The worker's command line, environment and working folder (``seccomp``: the filter's descriptor)."""
        argv = [sys.executable, "-m", "agents.course.sandbox_worker", str(fd)]
        if not self.isolated:
            env = dict(os.environ, **{k: v for k, v in sandbox_environment().items() if k.endswith("_THREADS")})
            env["PYTHONUNBUFFERED"] = "1"
            return argv, env, None
        hidden: list[str] = []
        if self.solver == "forbid":
            for name, folder in project_dirs().items():
                for module in SOLVER_MODULES:
                    head, _, rest = module.partition(".")
                    if head != name:
                        continue
                    path = Path(folder, *rest.split("."))
                    if path.is_dir():
                        hidden.append(f"{CODE_DIR}/{name}/{'/'.join(rest.split('.'))}")
                    elif path.with_suffix(".py").is_file():
                        hidden.append(f"{CODE_DIR}/{name}/{'/'.join(rest.split('.'))}.py")
                        # its compiled copy too: a .pyc loads without the import system's watch
                        cache = path.parent / "__pycache__"
                        with contextlib.suppress(OSError):  # made now, so that none appears uncovered later
                            cache.mkdir(exist_ok=True)
                        if cache.is_dir():
                            hidden.append(f"{CODE_DIR}/{name}/{'/'.join(rest.split('.')[:-1] + ['__pycache__'])}")
                for data in SOLVER_DATA:  # the trained policies' weights: a submission could play them itself
                    head, _, rest = data.partition("/")
                    if head == name and Path(folder, rest).is_dir():
                        hidden.append(f"{CODE_DIR}/{data}")
        hidden = list(dict.fromkeys(hidden))
        command = sandbox_command(
            argv,
            self._file,
            scratch_mb=self.limits.scratch_mb,
            hidden=tuple(hidden),
            share_folder=self.share_folder,
            seccomp_fd=seccomp,
        )
        # bubblewrap's own environment is visible to the sandbox (/proc/1/environ): give it nothing
        return command, {"PATH": "/usr/bin:/bin"}, "/"

    def _start(self) -> Failure | None:
        """Start a worker and load the submission; the failure if it does not load."""
        parent, child = socket.socketpair()
        seccomp = seccomp_fd(self.limits.child_processes) if self.isolated else None
        command, env, cwd = self._command(child.fileno(), seccomp)
        try:
            with open(self._stdout, "ab") as out, open(self._stderr, "ab") as err:
                self._process = subprocess.Popen(
                    command,
                    pass_fds=(child.fileno(),) if seccomp is None else (child.fileno(), seccomp),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    env=env,
                    cwd=cwd,
                )
        finally:
            child.close()
            if seccomp is not None:
                os.close(seccomp)
        self._sock = parent
        hello = {
            "spec": self.spec,
            "rules": dict(self.rules.raw_spec),
            "options": dict(self.rules.options),
            "limits": self.limits.for_worker(self.isolated),
            "solver": self.solver,
            # its working folder once its limits are set (never where it starts: module docstring of isolation)
            "workdir": SUBMISSION_DIR if self.share_folder else None,
        }
        reply, failure = self._request(
            hello,
            self.limits.load_seconds,
            "loading the submission",
            f"the load time limit of {self.limits.load_seconds:g} s",
        )
        if failure is not None:
            failure.kind = FailureKind.LOAD if failure.kind == FailureKind.EXCEPTION else failure.kind
            return failure
        if reply.get("ok") is not True:
            self._kill()
            forbidden = self.solver == "forbid" and self.solver_imports and reply.get("forbidden") is True
            return Failure(
                self.game,
                -1,
                FailureKind.SOLVER if forbidden else FailureKind.LOAD,
                self._message(reply, "the submission did not load"),
                self._as_given(_text(reply.get("traceback", ""), 8000, tail=True)),
            )
        obs_mode = reply.get("obs_mode")
        self.obs_mode = obs_mode if obs_mode in ("dict", "flat") else "dict"
        self.agent_name = _text(reply.get("name", self.spec), 200)
        self.has_seed = reply.get("has_seed") is True
        track = reply.get("track")  # checked by whoever reads it (agents.evaluation.protocol.agent_track)
        self.track = _text(track, 100) if isinstance(track, str) else None
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

    def _request(
        self, message: dict, seconds: float, what: str, limit: str | None = None
    ) -> tuple[dict, Failure | None]:
        """Send ``message`` and wait at most ``seconds`` (and what is left of the total) for the answer.

        ``what`` says when (every failure's message ends with it), ``limit`` which limit ``seconds`` is (a
        timeout's message names it). A failure kills the worker; an answer that is not ``ok`` is returned as it is
        (no failure).
        """
        left = self.limits.total_seconds - self.seconds
        budget = left < seconds
        seconds = max(min(seconds, left), 1e-3)
        start = time.monotonic()
        assert self._sock is not None, "_request runs only with a started worker"
        try:
            send(self._sock, message)
            reply = receive(self._sock, start + seconds, untrusted=True)
            failure = None
        except TimeoutError:
            self._kill()
            reply, failure = (
                {},
                (
                    Failure(
                        self.game,
                        self._decision,
                        FailureKind.BUDGET,
                        f"the submission's total time of {self.limits.total_seconds:g} s is spent ({what})",
                    )
                    if budget
                    else Failure(
                        self.game,
                        self._decision,
                        FailureKind.TIMEOUT,
                        f"no answer within {seconds:.3g} s ({limit + ', ' if limit else ''}{what})",
                    )
                ),
            )
        except ProtocolError as error:
            self._kill()
            reply, failure = {}, Failure(self.game, self._decision, FailureKind.PROTOCOL, f"{what}: {error}")
        except (EOFError, OSError):
            code = self._process.wait() if self._process is not None else None
            self._process = None
            self._kill()
            reply, failure = {}, self._ended(code, what)
        finally:
            self.seconds += time.monotonic() - start
        imports = reply.get("solver")
        if isinstance(imports, list):
            for name in imports[:10]:
                if isinstance(name, str) and name not in self.solver_imports and len(self.solver_imports) < 10:
                    self.solver_imports.append(name[:100])
        output = self._check_output(what)
        if output is not None:
            self._kill()
            failure = output
        return reply, failure

    def _ended(self, code: int | None, what: str) -> Failure:
        """The failure of a worker that ended with ``code`` (bubblewrap reports a signal N as 128 + N)."""
        signum = (
            -code if code is not None and code < 0 else (code - 128 if self.isolated and code and code > 128 else 0)
        )
        if signum in (signal.SIGXCPU, signal.SIGXFSZ):
            which = "CPU time" if signum == signal.SIGXCPU else "file size"
            return Failure(
                self.game,
                self._decision,
                FailureKind.RESOURCE,
                f"the submission's process went over its {which} limit ({what})",
                self._stderr_tail(),
            )
        if signum:
            name = signal.Signals(signum).name if signum in signal.valid_signals() else str(signum)
            how = f"was killed by signal {signum} ({name})"
        else:
            how = f"exited with status {code}"
        return Failure(
            self.game,
            self._decision,
            FailureKind.CRASH,
            f"the submission's process {how} ({what})",
            self._stderr_tail(),
        )

    def _check_output(self, what: str) -> Failure | None:
        """Note what it printed; an ``output`` failure once stdout or stderr grows past the limit."""
        try:
            out, err = os.path.getsize(self._stdout), os.path.getsize(self._stderr)
        except OSError:  # pragma: no cover
            return None
        if out > self.printed.bytes:
            if self.printed.first_game is None:
                self.printed.first_game, self.printed.first_decision = self.game, self._decision
            self.printed.bytes = out
        self.printed.stderr_bytes = err
        total = out + err
        if total > self._output_seen and max(out, err) > self.limits.output_kb * 1024:
            self._output_seen = total
            return Failure(
                self.game,
                self._decision,
                FailureKind.OUTPUT,
                f"the submission wrote {out} bytes to standard output and {err} to standard error, over the "
                f"limit of {self.limits.output_kb} KiB ({what})",
            )
        self._output_seen = total
        return None

    def _fail(self, failure: Failure) -> None:
        self._game_failed = True
        self.game_failure = FailureKind(failure.kind).value
        self.failure_count += 1
        if len(self.failures) < MAX_RECORDED_FAILURES:
            self.failures.append(failure)
        if failure.kind == FailureKind.BUDGET and self.stopped_at_game is None:
            self.stopped_at_game, self.stopped_because = self.game, "budget"
            self._kill()
        elif self.failure_count >= self.limits.max_failures and self.stopped_at_game is None:
            self.stopped_at_game, self.stopped_because = self.game, "max_failures"
            self._kill()

    def _reply_failure(self, reply: dict, decision: int) -> Failure:
        """The failure an answer that is not ``ok`` reports (its kind decided here)."""
        forbidden = self.solver == "forbid" and self.solver_imports and reply.get("forbidden") is True
        kind = (
            FailureKind.SOLVER
            if forbidden
            else FailureKind.MALFORMED
            if reply.get("error") == "malformed"
            else FailureKind.EXCEPTION
        )
        return Failure(
            self.game,
            decision,
            kind,
            self._message(reply, ""),
            self._as_given(_text(reply.get("traceback", ""), 8000, tail=True)),
        )

    def _message(self, reply: dict, default: str) -> str:
        """A failure's message from the worker, as given (:meth:`_as_given`), with what to do where it misses a file
        beside the submission that isolation does not show (:func:`unseen_beside`)."""
        message = self._as_given(_text(reply.get("message", default), 2000))
        if self.isolated and not self.share_folder and self.own_folder and self._file is not None:
            message += unseen_beside(message, self._file)
        if self.isolated and message.endswith("PermissionError: [Errno 1] Operation not permitted"):
            message += f" ({REFUSED_CALLS if self.limits.child_processes else REFUSED_CALLS_AND_PROCESSES})"
        return message

    def _as_given(self, text: str) -> str:
        """A message from the worker as its reader knows the file: the path given, not the sandbox's, and no internal
        exception class before a load error's own words."""
        text = text.replace("agents.players.registry.AgentLoadError: ", "")
        return text.replace(*self._shown) if self._shown is not None else text

    # ------------------------------------------------------------ agent interface
    @property
    def playing(self) -> bool:
        """Whether decisions are still asked for (loaded, fewer than ``max_failures`` failures, time left)."""
        return self.load_error is None and self.stopped_at_game is None

    def seed(self, game_seed: int | None) -> None:
        """Kept for the next game's reset with ``forward_seeds``; else ignored: a grader's game seeds are never
        forwarded (the submission gets :func:`agent_seed`)."""
        if self.forward_seeds:
            self._given_seed = None if game_seed is None else int(game_seed)

    def reset(self) -> None:
        """Start the next game: a fresh worker after a hang or a crash, the agent's ``seed`` and ``reset``."""
        self.game += 1
        self._decision = -1
        self._game_time = 0.0
        self._game_failed = False
        self.game_failure = None
        if not self.playing:
            self.game_failure = STOPPED
            return
        if self._process is None:
            failure = self._start()
            if failure is not None:
                failure.game = self.game
                self._fail(failure)
                return
        seed = (self._given_seed if self.forward_seeds else agent_seed(self.game)) if self.has_seed else None
        self._given_seed = None
        start = time.monotonic()
        reply, failure = self._request(
            {"op": "reset", "seed": seed},
            self.limits.decision_seconds,
            f"the agent's seed()/reset() before game {self.game + 1}",
            f"the decision time limit of {self.limits.decision_seconds:g} s",
        )
        self._game_time += time.monotonic() - start
        if failure is None and reply.get("ok") is not True:
            failure = self._reply_failure(reply, -1)
        if failure is not None:
            self._fail(failure)
        self._decision = 0

    def act(self, observation: Any, action_mask: np.ndarray) -> int:
        """The submission's action, or ``-1`` (an illegal action: the game ends) once this game has failed."""
        if self._game_failed or not self.playing or self._process is None:
            self.game_failure = self.game_failure or STOPPED
            return -1
        left = self.limits.game_seconds - self._game_time
        seconds, limit = (
            (self.limits.decision_seconds, f"the decision time limit of {self.limits.decision_seconds:g} s")
            if self.limits.decision_seconds <= left
            else (max(left, 1e-3), f"what was left of the game time limit of {self.limits.game_seconds:g} s")
        )
        mask = np.asarray(action_mask)
        start = time.monotonic()
        reply, failure = self._request(
            {"op": "act", "obs": encode_observation(observation), "mask": mask.tolist()},
            seconds,
            f"decision {self._decision + 1} of game {self.game + 1}",
            limit,
        )
        self._game_time += time.monotonic() - start
        if failure is None and reply.get("ok") is not True:
            failure = self._reply_failure(reply, self._decision)
        action = reply.get("action") if failure is None else None
        if failure is None and (isinstance(action, bool) or not isinstance(action, int)):
            failure = Failure(
                self.game, self._decision, FailureKind.PROTOCOL, f"the worker answered {action!r:.100}, not an action"
            )
        if failure is not None:
            self._fail(failure)
            return -1
        assert isinstance(action, int)  # checked above: a failure otherwise
        if not (0 <= action < len(mask) and mask[action]):
            self._fail(
                Failure(
                    self.game, self._decision, FailureKind.ILLEGAL, self._explain_illegal(observation, mask, action)
                )
            )
            action = action if -(1 << 63) <= action < 1 << 63 else -1  # the benchmark records it (int64)
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
