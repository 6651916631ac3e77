"""On-disk cache of solutions, keyed by the rules' fingerprint and checksum-verified.

Folder: ``$DICE_POKER_CACHE`` if set, else ``$XDG_CACHE_HOME/dice_poker_env``, else
``~/.cache/dice_poker_env``. One file per ruleset and solver version:
``solution-<name>-<fingerprint>-v<version>.bin``.

File layout: a magic line, one JSON header line (array names, dtypes, shapes,
byte offsets, metadata and the SHA-256 of the payload), then the raw array bytes.
A file whose checksum, header or size does not match is reported with a warning
and rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"DICE-POKER-SOLUTION\n"
#: bump when the DP's output format or meaning changes (invalidates old files)
SOLVER_VERSION = 2


class CacheWarning(UserWarning):
    """A cache file was unreadable (truncated, corrupted, wrong format) and is rebuilt."""


def cache_dir() -> Path:
    """The cache folder (see the module docstring); not created here."""
    env = os.environ.get("DICE_POKER_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "dice_poker_env"


def cache_path(name: str, fingerprint: str) -> Path:
    """The cache file of one ruleset (``name`` is only there for humans)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]
    return cache_dir() / f"solution-{safe}-{fingerprint}-v{SOLVER_VERSION}.bin"


def save(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write ``arrays`` and ``meta`` atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = []
    offset = 0
    blobs = []  # the arrays' own bytes: hashed and written without copies
    digest = hashlib.sha256()
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        raw = memoryview(data).cast("B") if data.nbytes else b""
        entries.append({"name": name, "dtype": data.dtype.str, "shape": list(data.shape), "offset": offset, "nbytes": data.nbytes})
        blobs.append(raw)
        digest.update(raw)
        offset += data.nbytes
    header = {"version": SOLVER_VERSION, "meta": meta, "arrays": entries, "sha256": digest.hexdigest(), "size": offset}
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(MAGIC)
            handle.write(json.dumps(header).encode() + b"\n")
            for raw in blobs:
                handle.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Read a cache file; ``None`` if absent. A damaged file warns and returns ``None``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        warnings.warn(f"solver cache {path}: unreadable ({error}); solving again", CacheWarning, stacklevel=3)
        return None
    try:
        if not data.startswith(MAGIC):
            raise ValueError("not a solution file")
        end = data.index(b"\n", len(MAGIC))
        header = json.loads(data[len(MAGIC) : end])
        payload = memoryview(data)[end + 1 :]
        if header.get("version") != SOLVER_VERSION:
            raise ValueError(f"solver version {header.get('version')} != {SOLVER_VERSION}")
        if len(payload) != header["size"]:
            raise ValueError(f"truncated: {len(payload)} of {header['size']} payload bytes")
        if hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise ValueError("checksum mismatch")
        arrays = {}
        for entry in header["arrays"]:
            raw = payload[entry["offset"] : entry["offset"] + entry["nbytes"]]
            arrays[entry["name"]] = np.frombuffer(raw, dtype=np.dtype(entry["dtype"])).reshape(entry["shape"]).copy()
        return arrays, header["meta"]
    except (ValueError, KeyError, TypeError) as error:
        warnings.warn(f"solver cache {path} is damaged ({error}); solving again", CacheWarning, stacklevel=3)
        return None
