"""On-disk cache of solutions, keyed by the rules' fingerprint and checksum-verified.

Folder: ``$DICE_POKER_CACHE`` if set, else ``$XDG_CACHE_HOME/dice_poker_env`` (if
absolute), else ``~/.cache/dice_poker_env``. One file per ruleset, kind and solver version:
``solution-<name>-<fingerprint>-v<version>.bin`` (the expected-score solution) and
``reach-<name>-<fingerprint>-v<version>.bin`` (the reach table, :mod:`.reach`).

File layout: a magic line naming the format, a line with the HMAC-SHA256 of
everything after it, one JSON header line (array names, dtypes, shapes, byte
offsets, metadata), then the raw array bytes. The checksum covers the header and
the arrays, so a change to any byte of the file is detected; it is keyed with a
secret of this user (:func:`cache_key`: 32 random bytes in a file created with
mode 0600 outside the cache folder, ``$DICE_POKER_KEY_DIR/cache.key``, default
``$XDG_CONFIG_HOME/dice_poker_env`` or ``~/.config/dice_poker_env``), so a file
rewritten by anyone without the key, with a recomputed checksum, fails it too
(an unkeyed hash would verify any rewrite). Computing it costs what the unkeyed
SHA-256 cost (``docs/solver.md``, "Cache"). The header is then
checked field by field (every offset, dtype and shape), and the solver checks the
arrays against the rules (:func:`dice_poker_env.solver.solve`). A file that fails
any check, or is not a regular file, is reported with a :class:`CacheWarning`
and rebuilt, never used.

Files are written to a temporary file in the same folder and renamed over the
old one, so readers see either the old file or the new one, never a partial one.
A write killed midway leaves its temporary file
(``solution-...bin.<host>-<pid>.<random>.tmp``), locked (``flock``) while it is written: the next write
removes those whose process is gone (same host) or that are older than :data:`STALE_SECONDS`, but never
one whose lock is still held (a writer in another PID namespace or container with the same host name).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import stat
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

try:  # the lock a cache write holds on its temporary file (POSIX)
    import fcntl
except ImportError:  # pragma: no cover - Windows: temporary files are judged by name and age
    fcntl = None  # type: ignore[assignment]

#: first line of a file; the number is the file format (bump when the layout changes)
MAGIC = b"DICE-POKER-SOLUTION 3\n"
#: first lines of the files of earlier formats (2: an unkeyed SHA-256; 1: a checksum over the arrays only)
_OLD_MAGICS = (b"DICE-POKER-SOLUTION 2\n", b"DICE-POKER-SOLUTION\n")
#: bytes of the secret key
KEY_BYTES = 32
#: bump when the DP's output format or meaning changes (invalidates old files)
SOLVER_VERSION = 3
#: dtypes a cache file may hold (the solver's int64 keys and float64 values)
_DTYPES = {"<i8", "<f8"}
#: temporary files of interrupted writes older than this are removed by the next write
STALE_SECONDS = 3600.0
_DIGEST_LINE = 64 + 1  # hex SHA-256 and a newline


T = TypeVar("T")


class CacheWarning(UserWarning):
    """A cache file was unusable (damaged, changed, another format, not a file) and is rebuilt."""


def cache_dir() -> Path:
    """The cache folder (see the module docstring); not created here."""
    env = os.environ.get("DICE_POKER_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else None
    if base is None or not base.is_absolute():  # the XDG specification: a relative path is ignored
        base = Path.home() / ".cache"
    return base / "dice_poker_env"


def key_dir() -> Path:
    """The folder of the cache's secret key: ``$DICE_POKER_KEY_DIR``, else ``$XDG_CONFIG_HOME/dice_poker_env``
    (if absolute), else ``~/.config/dice_poker_env``; outside the cache folder, so that whoever may empty the
    cache need not see the key."""
    env = os.environ.get("DICE_POKER_KEY_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else None
    if base is None or not base.is_absolute():
        base = Path.home() / ".config"
    return base / "dice_poker_env"


def cache_key() -> bytes:
    """This user's secret key for the cache's checksums, created on first use (mode 0600, folder 0700).

    Raises:
        OSError: the key cannot be read or created, or its file is not a regular file of this user that
            only this user can read (then the cache is neither trusted nor written).
    """
    path = key_dir() / "cache.key"
    for _ in range(3):
        try:
            return _read_key(path)
        except FileNotFoundError:
            pass
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".cache.key.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(KEY_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
            os.link(tmp, path)  # never replaces a key another process created meanwhile
        except FileExistsError:
            pass
        finally:
            Path(tmp).unlink(missing_ok=True)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    # (O_NONBLOCK: a named pipe planted there is refused below, not waited on)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"cache key {path}: not a regular file")
        if os.name == "posix" and (info.st_mode & 0o077 or info.st_uid != os.getuid()):
            raise OSError(f"cache key {path}: readable or writable by others (mode {stat.filemode(info.st_mode)})")
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise OSError(f"cache key {path}: {len(key)} bytes, not {KEY_BYTES}")
    return key


#: kinds of cache file: the expected-score solution, the reach table (:mod:`.reach`) and the two-player
#: table (:mod:`.duel`)
KINDS = ("solution", "reach", "duel")


def cache_path(name: str, fingerprint: str, kind: str = "solution") -> Path:
    """The cache file of one ruleset (``name`` is only there for humans); ``kind`` one of :data:`KINDS`."""
    if kind not in KINDS:
        raise ValueError(f"cache kind must be one of {KINDS}, got {kind!r}")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]
    return cache_dir() / f"{kind}-{safe}-{fingerprint}-v{SOLVER_VERSION}.bin"


def save(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write ``arrays`` and ``meta`` atomically (temporary file, then rename).

    Removes the temporary files that interrupted writes left in the folder first
    (see the module docstring). Raises ``OSError`` when the file cannot be written;
    the old file, if any, is then untouched.
    """
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(folder)
    entries = []
    offset = 0
    blobs = []  # the arrays' own bytes: hashed and written without copies
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        if data.dtype.str not in _DTYPES:
            raise TypeError(
                f"solver cache: array {name!r} has dtype {data.dtype.str}, expected one of {sorted(_DTYPES)}"
            )
        raw = data.data.cast("B") if data.nbytes else b""
        entries.append(
            {"name": name, "dtype": data.dtype.str, "shape": list(data.shape), "offset": offset, "nbytes": data.nbytes}
        )
        blobs.append(raw)
        offset += data.nbytes
    header = json.dumps({"version": SOLVER_VERSION, "meta": meta, "arrays": entries, "size": offset}).encode() + b"\n"
    mac = hmac.new(cache_key(), header, hashlib.sha256)
    for raw in blobs:
        mac.update(raw)
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.{_writer_tag()}.", suffix=".tmp", dir=folder)
    if fcntl is not None:  # held while it is written: how another process tells a live write (_being_written)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with os.fdopen(fd, "wb") as handle:  # (renamed while still open: its lock holds through the rename)
            handle.write(MAGIC)
            handle.write(mac.hexdigest().encode() + b"\n")
            handle.write(header)
            for raw in blobs:
                handle.write(raw)
            handle.flush()
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(
    path: Path, then: str = "solving again", stacklevel: int = 3
) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Read a cache file; ``None`` if absent. An unusable file warns (``then``: what happens next;
    ``stacklevel`` as :func:`warnings.warn`'s, counted from this function's caller's caller) and returns ``None``.

    Never blocks: a FIFO or device at ``path`` is opened without waiting and
    rejected as not a regular file.
    """
    try:
        data = _read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        warnings.warn(f"solver cache {path}: unreadable ({error}); {then}", CacheWarning, stacklevel=stacklevel)
        return None
    try:
        key = cache_key()
    except OSError as error:
        warnings.warn(f"solver cache {path} cannot be verified ({error}); {then}", CacheWarning, stacklevel=stacklevel)
        return None
    try:
        return _parse(data, key)
    except _OtherVersion as error:  # not damaged: written by another version of the library
        warnings.warn(f"solver cache {path} is {error}; {then}", CacheWarning, stacklevel=stacklevel)
        return None
    except Exception as error:  # noqa: BLE001 - whatever is wrong with the file, it is not used
        warnings.warn(f"solver cache {path} is damaged ({error}); {then}", CacheWarning, stacklevel=stacklevel)
        return None


def load_as(path: Path, build: Callable[..., T], what: str, then: str = "solving again") -> T | None:
    """The cache file at ``path`` made into an object by ``build(arrays, meta)``; ``None`` where there is none
    or it cannot be used: a file that fails a check (:func:`load`), or that ``build`` refuses (written for
    other rules), warns (``what`` names the cache, ``then`` says what happens next) on the caller's caller."""
    loaded = load(path, then=then, stacklevel=4)
    if loaded is None:
        return None
    try:
        return build(*loaded)
    except Exception as error:  # noqa: BLE001 - whatever is wrong with the file, it is not used
        warnings.warn(f"{what} {path} does not fit these rules ({error}); {then}", CacheWarning, stacklevel=3)
        return None


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file (``OSError`` otherwise), without blocking."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file (mode {stat.filemode(info.st_mode)})")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        return handle.read()


def digest(key: bytes, body: bytes | memoryview) -> bytes:
    """The hex HMAC-SHA256 of a file's body (everything after its checksum line) under ``key``."""
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode()


class _OtherVersion(ValueError):
    """A cache file of another format or solver version: not damaged, only not this version's."""


def _parse(data: bytes, key: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays and metadata of a file's bytes; ``ValueError`` (or another error) if anything is off."""
    if data.startswith(_OLD_MAGICS):
        raise _OtherVersion("written by an older version of the cache format (an unkeyed checksum)")
    if not data.startswith(MAGIC):
        raise ValueError("not a solution file")
    digest_end = len(MAGIC) + _DIGEST_LINE
    digest_line = data[len(MAGIC) : digest_end]
    if len(digest_line) != _DIGEST_LINE or digest_line[-1:] != b"\n":
        raise ValueError("truncated: no checksum line")
    body = memoryview(data)[digest_end:]
    if not hmac.compare_digest(digest(key, body), digest_line[:-1]):
        raise ValueError(
            "keyed checksum mismatch (the file was changed, truncated or written under another user's key)"
        )
    end = data.index(b"\n", digest_end)
    header = json.loads(data[digest_end:end])
    payload = memoryview(data)[end + 1 :]
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    if header.get("version") != SOLVER_VERSION:
        raise _OtherVersion(f"written by solver version {header.get('version')!r}, not {SOLVER_VERSION}")
    size, meta, entries = header.get("size"), header.get("meta"), header.get("arrays")
    if not _is_int(size) or size != len(payload):
        raise ValueError(f"truncated: {len(payload)} payload bytes, header says {size!r}")
    if not isinstance(meta, dict) or not isinstance(entries, list):
        raise ValueError("header lacks 'meta' or 'arrays'")
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != {"name", "dtype", "shape", "offset", "nbytes"}:
            raise ValueError(f"malformed array entry {entry!r}")
        name, dtype, shape = entry["name"], entry["dtype"], entry["shape"]
        if not isinstance(name, str) or name in arrays:
            raise ValueError(f"bad or repeated array name {name!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"array {name!r}: unexpected dtype {dtype!r}")
        if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
            raise ValueError(f"array {name!r}: bad shape {shape!r}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if entry["offset"] != offset or entry["nbytes"] != nbytes or not _is_int(entry["offset"]):
            raise ValueError(
                f"array {name!r}: offset {entry['offset']!r} / size {entry['nbytes']!r} do not follow the layout"
            )
        arrays[name] = np.frombuffer(payload[offset : offset + nbytes], dtype=np.dtype(dtype)).reshape(shape).copy()
        offset += nbytes
    if offset != size:
        raise ValueError(f"arrays cover {offset} of {size} payload bytes")
    return arrays, meta


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _writer_tag() -> str:
    """``<host>-<pid>`` of this process, as it appears in the names of its temporary files."""
    host = "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:32]
    return f"{host}-{os.getpid()}"


#: our temporary files: ``<cache file name>.<host>-<pid>.<random>.tmp``
_TEMP_NAME = re.compile(rf"^(?:{'|'.join(KINDS)})-[\w-]+\.bin\.(?P<host>\w*)-(?P<pid>\d+)\.[\w-]+\.tmp$")
#: temporary files of the previous cache version: ``<cache file name><random>.tmp``
_OLD_TEMP_NAME = re.compile(r"^solution-[\w-]+\.bin[\w-]+\.tmp$")


def remove_stale_temporaries(folder: Path, *, now: float | None = None) -> list[Path]:
    """Remove the temporary files interrupted writes left in ``folder``; the paths removed.

    Only files named like this module's temporary files are considered, and only
    regular files: those written by a process of this host that no longer runs,
    and those older than :data:`STALE_SECONDS` (whoever wrote them). A write in
    progress keeps its file. Errors (a file vanishing, no permission) are ignored.
    """
    now = time.time() if now is None else now
    host = _writer_tag().rsplit("-", 1)[0]
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None and not _OLD_TEMP_NAME.match(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue
            if _being_written(entry.path):  # its writer holds its lock (whatever its host name or process id)
                continue
            gone = match is not None and match["host"] == host and not _process_alive(int(match["pid"]))
            if gone or now - info.st_mtime > STALE_SECONDS:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _being_written(path: str) -> bool:
    """Whether a temporary file's writer still holds its lock on it: a write going on, in another PID namespace
    or container with the same host name too (where its process id tells nothing). ``False`` when the lock is
    free or cannot tell (no flock; a writer of an earlier version, which took none): the name and age decide."""
    return lock_state(path) == "held"


def lock_state(path: str | os.PathLike[str]) -> Literal["held", "free", "absent", "unknown"]:
    """Whether another process holds an ``flock`` on the file ``path``: ``"held"`` (its writer still runs, in
    any PID namespace or container), ``"free"``, ``"absent"`` (no such file) or ``"unknown"``: no flock (Windows),
    a filesystem that refuses it, no permission, a symlink or anything but a regular file. The probe takes a
    shared lock (NFS emulates flock with byte-range locks, and an exclusive one needs a writable file) and lets
    it go at once; it never creates, follows or waits on the file (a FIFO or a device does not block or act).
    The solver cache's temporary files and the dataset writers' lock files are judged by it."""
    if fcntl is None:
        return "unknown"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "unknown"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "unknown"
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return "held"
    except OSError:  # ENOLCK and the like
        return "unknown"
    finally:
        os.close(fd)
    return "free"


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (``True`` when it cannot be told, e.g. off POSIX)."""
    if pid == os.getpid():
        return True
    if os.name != "posix" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True
