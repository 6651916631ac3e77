"""Writing a file whole: what every results, report, checkpoint and policy file of the project is written by.

:func:`write_whole` writes into a hidden temporary file beside the target (``.NAME.<pid>.partial``), then
renames it into place: a reader sees the old file or the new one, never half of one, and an interrupted write
leaves the old file as it was. The temporary file is created as ``open`` creates files (``0666`` less the
umask), so the result has the permissions a plain write would give it; a failed write removes it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_whole(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole, through a temporary file renamed into place.

    Returns:
        The path written.

    Raises:
        OSError: the folder is missing or not writable, the disk is full, ...: nothing is left behind.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as handle:
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
