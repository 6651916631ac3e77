"""Isolating a submission on Linux with bubblewrap (``bwrap``): the command that starts the worker.

The worker runs in its own user, mount, PID, network, IPC and UTS namespaces (no network at
all, no view of the grader's processes), in a new session (no terminal to inject into, no
signal to the grader's session), with an empty environment, as an unprivileged user, on a
read-only root that holds only: the system's ``/usr``, the Python environment (its prefixes
and site-packages) and the project's packages ``agents`` and ``dice_poker_env``
(:data:`CODE_DIR`), all read-only; the submission's file read-only (:data:`SUBMISSION_DIR`);
a fresh ``/proc`` of its own PID namespace, a minimal ``/dev``; and a private, size-limited
tmpfs scratch folder (:data:`SCRATCH_DIR`, also its ``$HOME``). Nested user namespaces are
disabled inside.

Run as root, a privileged bubblewrap builds that view first (it can read what root can,
e.g. a Python under ``/root``), drops to the unprivileged :data:`SANDBOX_UID` with
``setpriv`` and starts an unprivileged bubblewrap from that view: the submission's
processes are then never root outside their namespace (for root the kernel does not
enforce the process limit). Run as another user, bubblewrap is started directly.

A seccomp filter (:func:`seccomp_filter`, x86-64 and AArch64) keeps the submission's memory
inside its address space, which its ``memory_mb`` limit bounds: it may not create
memory that no address space counts (``memfd_create``, ``memfd_secret``, System V shared
memory and message queues), nor, unless its limits allow child processes, start a process
(threads only): its one process's limit is then the total. It also refuses
``io_uring_setup``, ``userfaultfd``, ``bpf`` and ``perf_event_open`` (attack surface a
dice agent never needs) and every system call of another ABI (x32, 32-bit).
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import struct
import subprocess
import sys
from pathlib import Path

#: the user (outside its namespace) the submission runs as when the grader runs as root
SANDBOX_UID = 65534
#: the user and group ids the submission sees inside its namespace
INSIDE_UID = 1000
#: where the project's packages, the submission and the scratch folder are inside the sandbox
CODE_DIR, SUBMISSION_DIR, SCRATCH_DIR = "/sandbox/code", "/submission", "/tmp"


#: per architecture: its seccomp ``AUDIT_ARCH``, its system call numbers the filter refuses (``fork``/``vfork``/``clone``
#: without ``CLONE_THREAD`` only where child processes are not allowed), and those of clone, clone3, fork and vfork
_SYSCALLS: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "memfd_create": 319,
            "memfd_secret": 447,
            "shmget": 29,
            "msgget": 68,
            "io_uring_setup": 425,
            "userfaultfd": 323,
            "bpf": 321,
            "perf_event_open": 298,
            "clone": 56,
            "clone3": 435,
            "fork": 57,
            "vfork": 58,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "memfd_create": 279,
            "memfd_secret": 447,
            "shmget": 194,
            "msgget": 186,
            "io_uring_setup": 425,
            "userfaultfd": 282,
            "bpf": 280,
            "perf_event_open": 241,
            "clone": 220,
            "clone3": 435,
        },
    ),
}
_REFUSED = (
    "memfd_create",
    "memfd_secret",
    "shmget",
    "msgget",
    "io_uring_setup",
    "userfaultfd",
    "bpf",
    "perf_event_open",
)
_CLONE_THREAD, _X32_BIT = 0x00010000, 0x40000000
_EPERM, _ENOSYS = 1, 38


def seccomp_filter(child_processes: bool = False, machine: str | None = None) -> bytes | None:
    """The sandbox's seccomp filter (module docstring) as a classic BPF program, for ``bwrap --seccomp``.

    A refused call fails with ``EPERM`` (``clone3`` with ``ENOSYS``: the C library then makes threads with
    ``clone``, whose flags the filter can read). ``None`` on an architecture it does not know (``machine``:
    :func:`platform.machine`'s, by default).
    """
    known = _SYSCALLS.get(machine or platform.machine())
    if known is None or struct.calcsize("P") != 8:
        return None
    arch, numbers = known
    refused = [numbers[name] for name in _REFUSED]
    if not child_processes:
        refused += [numbers[name] for name in ("fork", "vfork") if name in numbers]
    load, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JSET/JGE|K, BPF_RET|K
    allow, deny, nosys = 0x7FFF0000, 0x00050000 | _EPERM, 0x00050000 | _ENOSYS  # SECCOMP_RET_ALLOW, _ERRNO
    checks = [(number, "deny") for number in refused] + [(numbers["clone3"], "nosys")]
    if not child_processes:
        checks.append((numbers["clone"], "clone"))
    program = [
        (load, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, arch),  # the native ABI goes on; another is refused
        (ret, 0, 0, deny),
        (load, 0, 0, 0),  # seccomp_data.nr
        (jge, 0, 1, _X32_BIT),  # x32's numbers have this bit
        (ret, 0, 0, deny),
    ]
    # after the checks: allow, then clone's flags check (2), allow, deny, nosys; a jump counts from the next one
    after = {"clone": 1, "deny": 4, "nosys": 5}
    program += [(jeq, len(checks) - 1 - k + after[label], 0, number) for k, (number, label) in enumerate(checks)]
    program += [
        (ret, 0, 0, allow),
        (load, 0, 0, 16),  # seccomp_data.args[0], its low 32 bits: clone's flags
        (jset, 0, 1, _CLONE_THREAD),
        (ret, 0, 0, allow),
        (ret, 0, 0, deny),
        (ret, 0, 0, nosys),
    ]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def seccomp_fd(child_processes: bool = False) -> int | None:
    """A file descriptor to read :func:`seccomp_filter` from (the read end of a pipe that holds it; the caller
    passes it to bubblewrap and closes it), or ``None`` where there is no filter for this architecture."""
    program = seccomp_filter(child_processes)
    if program is None:
        return None
    read, write = os.pipe()  # (a few hundred bytes: the write never waits for a reader)
    try:
        os.write(write, program)
    finally:
        os.close(write)
    return read


def project_dirs() -> dict[str, str]:
    """The project's package folders the worker imports, by package name."""
    import agents
    import dice_poker_env

    return {
        "agents": str(Path(agents.__file__).resolve().parent),
        "dice_poker_env": str(Path(dice_poker_env.__file__).resolve().parent),
    }


def _python_dirs() -> list[str]:
    """The Python environment's folders (prefixes and site-packages), outermost first, without repeats."""
    import site

    found: list[str] = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    candidates += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    candidates.append(str(Path(sys.executable).resolve().parent.parent))
    for path in sorted({str(Path(p).resolve()) for p in candidates if p and os.path.isdir(p)}, key=len):
        if path == "/" or any(path == f or path.startswith(f.rstrip("/") + "/") for f in found):
            continue
        found.append(path)
    return found


def _parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _mounts(binds: list[tuple[str, str]], hidden: list[str], scratch_mb: int) -> list[str]:
    """bubblewrap arguments for a root with /usr, ``binds`` (read-only, ``(source, target)``), /proc, /dev and /tmp."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "bin", "sbin", "lib32", "libx32"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            args += ["--ro-bind", f"/{name}", f"/{name}"]
    made = {"/usr", "/tmp", "/proc", "/dev"}
    for source, target in binds:
        for parent in _parents(target):
            if parent not in made and not parent.startswith("/usr/"):
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        args += ["--ro-bind-try", source, target]
        made.add(target)
    for path in hidden:  # files and folders the submission must not see (the solver, under ``forbid``)
        args += ["--ro-bind", "/dev/null", path] if path.endswith(".py") else ["--tmpfs", path]
    args += ["--dev", "/dev", "--perms", "1777", "--size", str(int(scratch_mb) << 20), "--tmpfs", SCRATCH_DIR]
    return args


_READ_ONLY_ROOT = ["--remount-ro", "/", "--remount-ro", "/dev"]  # /dev: bubblewrap makes it a writable tmpfs (/dev/shm)


def sandbox_environment() -> dict[str, str]:
    """The whole environment of the worker (nothing of the grader's)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": SCRATCH_DIR,
        "TMPDIR": SCRATCH_DIR,
        "LANG": "C.UTF-8",
        "PYTHONPATH": CODE_DIR,
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLCONFIGDIR": SCRATCH_DIR,
        # a solve inside the sandbox (solver = "allow": a submission may play the library's optimal agent) runs
        # in its one process: a pool of workers needs /dev/shm, which the sandbox mounts read-only
        "DICE_POKER_SOLVER_WORKERS": "1",
    }


def sandbox_command(
    argv: list[str],
    submission: str | None,
    *,
    scratch_mb: int = 64,
    hidden: tuple = (),
    share_folder: bool = False,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The command that runs ``argv`` isolated (module docstring), the submission file at ``/submission/``.

    ``hidden``: module paths inside the sandbox to cover (empty file or folder). ``share_folder``: the
    submission's whole folder at ``/submission`` (read-only; ``dice-poker evaluate --isolated --share-folder``:
    an agent of several files), else the file alone. The process starts in ``/tmp`` either way: ``python -m``
    puts its working folder first on ``sys.path``, where a shared folder's ``agents`` package would replace the
    worker (the worker moves to ``/submission`` itself once its limits are set). ``seccomp_fd``: a file
    descriptor the caller passes on, from which bubblewrap reads the filter to run ``argv`` under
    (:func:`seccomp_filter`).
    """
    bwrap = shutil.which("bwrap") or "bwrap"
    binds = [(d, d) for d in _python_dirs()]
    binds += [(source, f"{CODE_DIR}/{name}") for name, source in project_dirs().items()]
    if submission is not None and share_folder:
        binds.append((os.path.dirname(os.path.abspath(submission)), SUBMISSION_DIR))
    elif submission is not None:
        binds.append((submission, f"{SUBMISSION_DIR}/{os.path.basename(submission)}"))
    env: list[str] = ["--clearenv"]
    for key, value in sandbox_environment().items():
        env += ["--setenv", key, value]
    inner_flags = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_UID),
        "--hostname",
        "sandbox",
        *env,
        "--chdir",
        SCRATCH_DIR,
    ]
    if seccomp_fd is not None:
        inner_flags += ["--seccomp", str(seccomp_fd)]
    if os.geteuid() != 0:  # bubblewrap as this user: the submission's processes are this user outside
        mounts = _mounts(binds, list(hidden), scratch_mb)
        return [bwrap, *inner_flags, *mounts, "--proc", "/proc", *_READ_ONLY_ROOT, "--", *argv]
    # As root: a privileged bubblewrap builds the same view (it can read what root can), then
    # drops to an unprivileged user that starts the sandbox as above, from that view.
    setpriv = shutil.which("setpriv") or "setpriv"
    same = [(target, target) for _, target in binds]
    outer = [bwrap, "--unshare-pid", "--die-with-parent", *_mounts(binds, [], scratch_mb), "--bind", "/proc", "/proc"]
    drop = [
        setpriv,
        f"--reuid={SANDBOX_UID}",
        f"--regid={SANDBOX_UID}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]
    mounts = _mounts(same, list(hidden), scratch_mb)
    inner = [bwrap, *inner_flags, *mounts, "--proc", "/proc", *_READ_ONLY_ROOT, "--", *argv]
    return [*outer, "--", *drop, *inner]


@functools.lru_cache(maxsize=1)
def isolation_problem() -> str | None:
    """Why submissions cannot be isolated on this machine (one line), or ``None`` when they can."""
    if not sys.platform.startswith("linux"):
        return f"isolating submissions needs Linux with bubblewrap; this is {sys.platform}"
    if shutil.which("bwrap") is None:
        return "isolating submissions needs bubblewrap (bwrap), which is not installed (apt-get install bubblewrap)"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "isolating submissions as root needs setpriv (util-linux), which is not installed"
    # the probe also checks that the kernel applies the filter (memfd_create refused, a thread allowed)
    code = "import numpy, os, threading; t = threading.Thread(target=int); t.start(); t.join()"
    fd = seccomp_fd()
    if fd is not None:
        code += "\ntry: os.memfd_create('probe')\nexcept PermissionError: pass\nelse: raise SystemExit('no seccomp')"
    probe = sandbox_command([sys.executable, "-c", code], None, scratch_mb=1, seccomp_fd=fd)
    try:
        result = subprocess.run(
            probe,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            capture_output=True,
            timeout=120,
            pass_fds=() if fd is None else (fd,),
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not start a sandbox here ({error})"
    finally:
        if fd is not None:
            os.close(fd)
    if result.returncode != 0:
        why = result.stderr.decode(errors="replace").strip().splitlines()
        return f"bubblewrap could not start a sandbox here ({why[-1] if why else f'status {result.returncode}'})"
    return None


def isolation_method() -> str:
    """The tool and version that isolates submissions, and the seccomp filter where there is one
    (``bubblewrap 0.8.0, seccomp``)."""
    filtered = ", seccomp" if seccomp_filter() is not None else ""
    try:
        out = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.TimeoutExpired):  # pragma: no cover
        return "bubblewrap" + filtered
    return (" ".join(out[:2]) if out else "bubblewrap") + filtered
