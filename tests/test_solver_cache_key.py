"""The solver cache cannot be poisoned: its checksum is keyed with a secret of the user (HMAC-SHA256), so a
file rewritten with a recomputed (unkeyed or foreign-keyed) checksum is detected, reported in one line and
rebuilt; the key lives outside the cache folder, mode 0600."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import warnings

import numpy as np
import pytest

from dice_poker_env.rules import load_rules
from dice_poker_env.solver import CacheWarning, solve
from dice_poker_env.solver import cache as disk

TINY = "yacht"


@pytest.fixture
def private(tmp_path, monkeypatch):
    """A cache and key folder of this test."""
    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DICE_POKER_KEY_DIR", str(tmp_path / "key"))
    return tmp_path


def _quiet(rules, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solution = solve(rules, progress=False, workers=1, **kwargs)
    return solution, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def _poison(path, body_edit, checksum):
    """Rewrite a cache file as an attacker would: values changed, a checksum recomputed with ``checksum``."""
    data = path.read_bytes()
    start = len(disk.MAGIC) + 65
    body = body_edit(bytearray(data[start:]))
    path.write_bytes(disk.MAGIC + checksum(bytes(body)) + b"\n" + bytes(body))


def _scale_values(body: bytearray) -> bytearray:
    """Every stored value times 0.7 (the issue's attack: 169.77 -> 118.84 for Yacht)."""
    end = body.index(b"\n")
    header = json.loads(body[:end])
    payload = body[end + 1 :]
    for entry in header["arrays"]:
        if entry["name"] == "value":
            lo, hi = entry["offset"], entry["offset"] + entry["nbytes"]
            values = np.frombuffer(bytes(payload[lo:hi]), dtype="<f8") * 0.7
            payload[lo:hi] = values.tobytes()
    return body[: end + 1] + payload


@pytest.mark.parametrize(
    "checksum",
    [
        lambda body: hashlib.sha256(body).hexdigest().encode(),  # the old unkeyed checksum, recomputed
        lambda body: disk.digest(b"\0" * disk.KEY_BYTES, body),  # keyed, with a key the attacker chose
    ],
    ids=["sha256", "other-key"],
)
def test_a_rewritten_cache_with_a_recomputed_checksum_is_detected_and_rebuilt(private, checksum):
    rules = load_rules(TINY)
    fresh, _ = _quiet(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    _poison(path, _scale_values, checksum)
    solution, messages = _quiet(rules)
    assert not solution.from_cache and solution.expected_score == pytest.approx(fresh.expected_score, rel=1e-12)
    assert len(messages) == 1 and "checksum" in messages[0] and "\n" not in messages[0]
    again, messages = _quiet(rules)  # rebuilt: the next solve loads it silently
    assert again.from_cache and not messages and again.expected_score == pytest.approx(fresh.expected_score)


def test_the_key_is_created_once_private_and_outside_the_cache(private):
    rules = load_rules(TINY)
    _quiet(rules)
    key = private / "key" / "cache.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == disk.KEY_BYTES
    assert not key.is_relative_to(disk.cache_dir())
    first = key.read_bytes()
    _quiet(rules)
    assert key.read_bytes() == first and disk.cache_key() == first


def test_the_default_key_folder_is_the_users_config_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("DICE_POKER_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert disk.key_dir() == tmp_path / "config" / "dice_poker_env"


def test_a_key_others_can_read_is_not_trusted_and_the_values_are_still_exact(private):
    rules = load_rules(TINY)
    fresh, _ = _quiet(rules)
    key = private / "key" / "cache.key"
    os.chmod(key, 0o644)
    solution, messages = _quiet(rules)
    assert not solution.from_cache and solution.expected_score == pytest.approx(fresh.expected_score)
    assert any("readable or writable by others" in m for m in messages)


def test_a_new_key_invalidates_every_file_of_the_old_one(private):
    rules = load_rules(TINY)
    _quiet(rules)
    (private / "key" / "cache.key").unlink()
    solution, messages = _quiet(rules)
    assert not solution.from_cache and any("checksum" in m for m in messages)


def test_dice_poker_solve_says_in_one_line_that_it_rebuilds_a_changed_cache(private, capsys):
    from dice_poker_env.cli import main

    rules = load_rules(TINY)
    fresh, _ = _quiet(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    _poison(path, _scale_values, lambda body: hashlib.sha256(body).hexdigest().encode())
    assert main(["solve", TINY]) == 0
    out, err = capsys.readouterr()
    assert f"{fresh.expected_score:.2f}" in out and "118.84" not in out
    lines = [line for line in err.splitlines() if "cache" in line]
    assert len(lines) == 1 and "checksum" in lines[0] and "solving again" in lines[0], err


@pytest.mark.parametrize("size", [0, 16, disk.KEY_BYTES + 1])
def test_a_key_file_of_the_wrong_length_is_refused(private, size):
    """A key file of another length than KEY_BYTES (cut short, or not this library's) is an error, never
    used as a weaker key."""
    key = private / "key" / "cache.key"
    key.parent.mkdir(mode=0o700)
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"k" * size)
    os.close(fd)
    with pytest.raises(OSError, match=f"{size} bytes, not {disk.KEY_BYTES}"):
        disk.cache_key()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes: POSIX")
def test_a_named_pipe_at_the_key_path_is_refused_not_waited_on(private):
    """A FIFO planted where the key lives: refused at once as not a regular file (opening it blocked forever)."""
    key = private / "key" / "cache.key"
    key.parent.mkdir(mode=0o700)
    os.mkfifo(key, 0o600)
    import signal

    def hung(*_):
        raise TimeoutError("cache_key waited on the named pipe")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)  # a regression fails the test instead of hanging the suite
    try:
        with pytest.raises(OSError, match="not a regular file"):
            disk.cache_key()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
