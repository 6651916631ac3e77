"""Writing a file whole: what every results, report, checkpoint and policy file of the project is written by.

:func:`write_whole` writes into a new hidden temporary file beside the target (``.NAME.<pid>.<random>.partial``,
never an existing file or link), then renames it into place: a reader sees the old file or the new one, never
half of one, and an interrupted write leaves the old file as it was. The temporary file is created as ``open``
creates files (``0666`` less the umask), so the result has the permissions a plain write would give it; a
failed write removes it.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

#: ``os.open`` flags of a new file: created here or not at all, never through a symbolic link
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def partial_path(path: Path, suffix: str = ".partial") -> Path:
    """A new temporary name beside ``path`` (``.NAME.<pid>.<random><suffix>``) that no one can guess: a user
    who may write in the folder cannot plant a symbolic link there for this process to write through."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}{suffix}")


def write_whole(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole, through a temporary file renamed into place.

    Returns:
        The path written.

    Raises:
        OSError: the folder is missing or not writable, the disk is full, ...: nothing is left behind.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    partial = partial_path(path)
    try:
        with os.fdopen(os.open(partial, _NEW_FILE, 0o666), "wb") as handle:  # (never an existing file or link)
            handle.write(raw)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


def cannot_write(folder: str | os.PathLike[str]) -> str | None:
    """Why no file can be written in ``folder`` (the system's reason, ``Permission denied``), or ``None`` when a
    probe file could be made and was removed. A probe, not ``os.access``: root passes that on a read-only
    filesystem, and then the real write fails after the work it was to keep."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            return None
    except OSError as error:
        return str(error.strerror or error)
