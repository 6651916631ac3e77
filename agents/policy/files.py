"""The policy file (``.npz`` + JSON metadata) and the ruleset check every trained model passes before it plays.

A policy file holds the actor network's weights (``w0, b0, w1, b1, ...``: ``x @ w + b`` with the
activation between layers; with the heads' options also ``box_points_w``, ``points_w``, ``points_b``) and
one ``metadata`` entry, JSON: the ruleset it was trained on (:func:`ruleset_metadata`: name, options,
fingerprint), the policy's options (:class:`agents.policy.heads.PolicyOptions`), the activation, whether
it saw each distinct keep once, and how it was made (config, command, commit). Loading one never runs
code (``allow_pickle=False``).

:func:`check_ruleset` is shared with the Stable-Baselines3 models (:mod:`agents.players.sb3_agent`): a
model refuses, with :class:`RulesetMismatchError` naming both, a ruleset other than its own (the action
and observation sizes of two rulesets can coincide).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dice_poker_env.engine.combinatorics import N_KEEP_ACTIONS
from dice_poker_env.files import write_whole
from dice_poker_env.rules import Rules

#: file format version of policy files
POLICY_FORMAT = 1


class RulesetMismatchError(ValueError):
    """A model is asked to play a ruleset other than the one it was trained on."""


def ruleset_metadata(rules: Rules) -> dict[str, Any]:
    """What a model's metadata records of its ruleset (checked by :func:`check_ruleset`)."""
    return {
        "rules": rules.name,
        "rules_options": dict(rules.options),
        "rules_source": rules.source,
        "rules_fingerprint": rules.fingerprint,
        "box_names": list(rules.box_names),
        "n_actions": N_KEEP_ACTIONS + rules.n_boxes,
    }


def check_ruleset(metadata: Mapping[str, Any], rules: Rules, source: str = "the model") -> None:
    """Raise :class:`RulesetMismatchError` unless ``rules`` is the model's ruleset."""
    if metadata.get("rules_fingerprint") == rules.fingerprint:
        return

    def text(name: str, options: Mapping[str, Any]) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in options.items())
        return f"{name!r}" + (f" (options {opts})" if opts else "")

    trained = metadata.get("rules", "?")
    if metadata.get("rules_fingerprint") is None:
        raise RulesetMismatchError(
            f"{source} records no ruleset fingerprint, so it cannot be checked against ruleset "
            f"{text(rules.name, rules.options)}: it was not written by this library's training, or is damaged"
        )
    if trained == rules.name and dict(metadata.get("rules_options") or {}) == dict(rules.options):
        raise RulesetMismatchError(
            f"{source} was trained on another ruleset named {trained!r} [fingerprint {metadata.get('rules_fingerprint')}]"
            f" than the one given [fingerprint {rules.fingerprint}]: the same name, different rules (a custom rules "
            "file, or scoring changed); benchmark it on the rules file it was trained on"
        )
    raise RulesetMismatchError(
        f"{source} was trained on ruleset {text(trained, metadata.get('rules_options') or {})} "
        f"[fingerprint {metadata.get('rules_fingerprint')}] and cannot play ruleset "
        f"{text(rules.name, rules.options)} [fingerprint {rules.fingerprint}]: the games differ. "
        f"Benchmark it on {trained!r} with the same options, or train a model for {rules.name!r}."
    )


def save_policy(path: str | os.PathLike, weights: Mapping[str, np.ndarray], metadata: Mapping[str, Any]) -> Path:
    """Write a policy file (``.npz``) atomically: a temporary file renamed into place."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {**metadata, "policy_format": POLICY_FORMAT}
    buffer = io.BytesIO()  # (a policy is small: written whole, dice_poker_env.files.write_whole)
    np.savez(buffer, metadata=np.array(json.dumps(meta, default=str)), **dict(weights))  # type: ignore[arg-type]  # numpy's stub types **kwds as its allow_pickle
    return write_whole(path, buffer.getvalue())


#: the most bytes a policy file may unpack to (a 256 x 256 network is about half a megabyte): a small file
#: that unpacks to gigabytes (a zip bomb) is refused before anything is read
MAX_POLICY_BYTES = 256 * 1024 * 1024
#: the most an SB3 model or a training checkpoint (weights, optimizer state, the games) may unpack to
MAX_CHECKPOINT_BYTES = 1024 * 1024 * 1024


class TooLarge(ValueError):
    """An archive that unpacks to more than a file of its kind holds (:func:`check_unpacked`)."""


def check_unpacked(archive: zipfile.ZipFile, path: str | os.PathLike, what: str, limit: int = MAX_POLICY_BYTES) -> None:
    """Refuse (:class:`TooLarge`, one line) ``archive`` if its members unpack to, or the ``.npy`` arrays in it
    declare, more than ``limit`` bytes, counting the members that are archives themselves (torch's ``.pth``
    weights in an SB3 model, an ``.npz`` in a checkpoint) with what they unpack to: checked before anything
    is read, so that a file of a few megabytes cannot take gigabytes of memory. ``what``: the kind of file,
    as the message names it (``a policy``)."""
    total = _unpacked_bytes(archive, limit, nested=True)
    if total > limit:
        raise TooLarge(
            f"{path}: not {what} file: it unpacks to {total:,} bytes, more than {what} holds ({limit:,} at most)"
        )


def _unpacked_bytes(archive: zipfile.ZipFile, limit: int, *, nested: bool) -> int:
    """What reading ``archive`` may allocate: its members' sizes or the arrays they declare, whichever is
    more; with ``nested``, plus what each member that is an archive unpacks to (one level: its bytes are
    read only while the sizes so far fit ``limit``)."""
    infos = archive.infolist()
    unpacked = sum(info.file_size for info in infos)  # (zipfile reads no more than this)
    total = max(unpacked, sum(_array_bytes(archive, info) for info in infos))  # (what np.load allocates)
    for info in infos if nested else ():
        if total > limit:
            break
        with archive.open(info) as stream:
            if stream.read(4) != b"PK\x03\x04":  # not an archive
                continue
        try:
            with zipfile.ZipFile(io.BytesIO(archive.read(info))) as inner:
                total += _unpacked_bytes(inner, limit, nested=False)
        except zipfile.BadZipFile:
            continue  # (its reader reports it)
    return total


def _array_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """The bytes the ``.npy`` member ``info`` declares in its header (shape times item size; 0 for another
    member or an unreadable header, which the load then reports). A member is an array by its first bytes,
    whatever its name: ``np.load`` reads a member named ``w1`` that starts as a ``.npy`` does as an array."""
    try:
        with archive.open(info) as stream:
            if stream.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
                return 0
            stream.seek(0)
            version = np.lib.format.read_magic(stream)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = reader(stream)
        return int(np.prod(shape, dtype=object)) * dtype.itemsize
    except Exception:  # noqa: BLE001 - a damaged header (numpy's parser raises SyntaxError too): the load reports it
        return 0


class _NotAPolicy(Exception):
    """The metadata is not a policy file's (raised inside :func:`load_policy`, reported as a ``ValueError``)."""


def load_policy(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The weights (name -> array, as :meth:`agents.training.actor_critic.ActorCritic.export` writes them) and the
    metadata of a policy file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: one line naming the file and what is wrong: truncated or damaged (every member's CRC is
            checked), metadata that is not a JSON object, object arrays, weights that are not finite numbers.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    try:
        with zipfile.ZipFile(path) as archive:
            check_unpacked(archive, path, "a policy", MAX_POLICY_BYTES)
            bad = archive.testzip()
        if bad is not None:
            raise ValueError(f"the member {bad} fails its checksum")
        with np.load(path, allow_pickle=False) as data:
            if "metadata" not in data.files:
                raise ValueError("no metadata")
            text = data["metadata"]
            if text.dtype.kind not in "US" or text.shape != ():
                raise ValueError("its metadata is not a text")
            metadata = json.loads(str(text))
            if not isinstance(metadata, dict) or metadata.get("policy_format") != POLICY_FORMAT:
                raise _NotAPolicy  # before any weights are read
            raw = {name: data[name] for name in data.files if name != "metadata"}
    except TooLarge as error:
        raise ValueError(str(error)) from None
    except _NotAPolicy:
        if not isinstance(metadata, dict):
            raise ValueError(f"{path}: not a readable policy file (its metadata is not a JSON object)") from None
        raise ValueError(f"{path}: not a policy file of format {POLICY_FORMAT}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a readable policy file (its metadata is not valid JSON: {error.msg})") from None
    except RecursionError:
        raise ValueError(f"{path}: not a readable policy file (its metadata is nested too deep to read)") from None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError) as error:
        text = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"{path}: not a readable policy file, truncated or damaged ({text})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: not a readable policy file (its metadata is not a JSON object)")
    weights = {}
    for name, array in raw.items():
        if not isinstance(array, np.ndarray):  # a member that is not a .npy array: np.load gives its bytes
            raise ValueError(f"{path}: its member {name[:40]!r} is not an array (a policy file holds only arrays)")
        if array.dtype.kind not in "biuf":
            raise ValueError(f"{path}: weights {name} are not numbers (dtype {array.dtype})")
        weights[name] = array.astype(np.float32)
        if not np.all(np.isfinite(weights[name])):
            raise ValueError(f"{path}: weights {name} are not finite (NaN or infinite values)")
    if "w0" not in weights or metadata.get("policy_format") != POLICY_FORMAT:
        raise ValueError(f"{path}: not a policy file of format {POLICY_FORMAT}")
    return weights, metadata
