"""The solver under bad input and faults: damaged caches, invalid positions, too-large rulesets, CLI misuse.

Every test solves into its own temporary cache folder (``DICE_POKER_CACHE``),
mostly a tiny four-box ruleset (66 states, a tenth of a second) and yacht.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from dice_poker_env import PositionError, load_rules
from dice_poker_env.engine.tables import compile_rules
from dice_poker_env.envs.single import DicePokerEnv
from dice_poker_env.solver import CacheWarning, SolverError, SolveTooLargeError, budget, solve
from dice_poker_env.solver import cache as disk
from dice_poker_env.solver import solution as solution_module
from dice_poker_env.solver.state_space import StateSpace

REPO = Path(__file__).resolve().parents[1]

#: four boxes with an upper bonus and a five-of-a-kind bonus and joker: every cache array and flag in use
TINY = {
    "name": "tiny",
    "boxes": [
        {"name": "ones", "kind": "face_sum", "face": 1},
        {"name": "sixes", "kind": "face_sum", "face": 6},
        {"name": "five", "kind": "n_of_a_kind", "n": 5, "points": 50},
        {"name": "chance", "kind": "chance"},
    ],
    "upper_bonus": {"threshold": 20, "points": 10},
    "five_of_a_kind": {"box": "five", "bonus": 100, "joker": "free"},
}

TINY_TOML = """name = "tiny"
boxes = [
  { name = "ones", kind = "face_sum", face = 1 },
  { name = "sixes", kind = "face_sum", face = 6 },
  { name = "five", kind = "n_of_a_kind", n = 5, points = 50 },
  { name = "chance", kind = "chance" },
]
upper_bonus = { threshold = 20, points = 10 }
five_of_a_kind = { box = "five", bonus = 100, joker = "free" }
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test solves into its own folder (never the user's cache); no worker setting leaks in."""
    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DICE_POKER_SOLVER_WORKERS", raising=False)


@pytest.fixture(scope="module")
def tiny():
    """The tiny ruleset's solution, solved without the disk cache."""
    return solve(load_rules(TINY), cache=False, progress=False, workers=1)


@pytest.fixture(scope="module")
def yacht():
    return solve(load_rules("yacht"), cache=False, progress=False, workers=1)


def _solve_quietly(rules, **kwargs):
    """``(solution, [warning messages])`` of one solve."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        solution = solve(rules, progress=False, workers=1, **kwargs)
    return solution, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def _same_solution(a, b) -> bool:
    """Bit for bit: both come from this machine (a fresh solve and its cache file), so any
    difference at all is a damaged cache served as good."""
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("keys", "layer_start", "value", "value2"))


# ------------------------------------------------------------- cache: item 1
def test_every_single_byte_change_of_a_cache_file_is_caught_or_harmless(tiny, monkeypatch):
    """The mutation test: each byte of the file changed in turn (header, checksum line and arrays).

    A change is either detected (a CacheWarning, and the solution is the fresh one)
    or harmless (the same values); never a different value. The rebuild reuses the
    fresh solve's result (``solve_dp`` memoized), so each of the ~2,200 mutations
    costs a few milliseconds (mostly the file system); what is tested is what the cache lets through.
    """
    rules = load_rules(TINY)
    fresh, _ = _solve_quietly(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    original = path.read_bytes()
    assert _same_solution(fresh, tiny)
    result = solution_module.solve_dp(compile_rules(rules), workers=1)
    monkeypatch.setattr(solution_module, "solve_dp", lambda *args, **kwargs: result)
    served = detected = 0
    for i in range(len(original)):
        damaged = bytearray(original)
        damaged[i] ^= 0xFF  # every bit of the byte
        path.write_bytes(bytes(damaged))
        solution, messages = _solve_quietly(rules)
        assert _same_solution(solution, fresh), f"byte {i} changed: other values served"
        assert solution.expected_score == fresh.expected_score and solution.score_std == fresh.score_std
        if solution.from_cache:
            served += 1
        else:
            detected += 1
            assert messages, f"byte {i} changed: rebuilt without a warning"
    assert detected == len(original) and served == 0  # a checksum over every byte catches them all
    # the file is healthy again after the last rebuild: the next solve loads it, silently
    solution, messages = _solve_quietly(rules)
    assert solution.from_cache and not messages and _same_solution(solution, fresh)


def _rewrite_header(path: Path, edit, extra: bytes = b"") -> None:
    """Apply ``edit(header_dict)`` to a cache file (and append ``extra`` bytes after its arrays) and write it back
    with a *valid* keyed checksum (what a bug, or a hand edit by the key's owner, could produce): the checks
    after the checksum must catch it."""
    data = path.read_bytes()
    start = len(disk.MAGIC) + 65
    end = data.index(b"\n", start)
    header = json.loads(data[start:end])
    payload = data[end + 1 :] + extra
    edit(header)
    line = json.dumps(header).encode() + b"\n"
    body = line + payload
    path.write_bytes(disk.MAGIC + disk.digest(disk.cache_key(), body) + b"\n" + body)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda h: h["arrays"][2].update(offset=h["arrays"][2]["offset"] + 8), "layout"),  # the issue's shifted 'value'
        (lambda h: h["arrays"][0].update(name="kees"), "arrays"),  # KeyError 'keys' before
        (lambda h: h.pop("arrays"), "arrays"),
        (lambda h: h["arrays"][2].update(dtype="<f4", shape=[h["arrays"][2]["shape"][0] * 2]), "dtype"),
        (lambda h: h["arrays"][2].update(dtype="<i8"), "arrays"),  # values read as integers
        (lambda h: h["arrays"][2].update(dtype=">f8"), "dtype"),
        (lambda h: h["arrays"][0].update(shape=[1, h["arrays"][0]["shape"][0]]), "shapes"),
        (lambda h: h["meta"].update(fingerprint="0" * 16), "other rules"),
        (lambda h: h.update(version=2), "version"),
        (lambda h: h.update(size=h["size"] - 8), "payload"),
        (lambda h: h["arrays"].reverse(), "layout"),
        (lambda h: h["arrays"][0].update(note="x"), "malformed array entry"),  # a key no entry has
        (lambda h: h["arrays"][1].update(name=h["arrays"][0]["name"]), "repeated array name"),
        (lambda h: h["arrays"][0].update(shape=[-1]), "bad shape"),
    ],
)
def test_a_consistent_but_wrong_header_is_rejected_and_rebuilt(tiny, edit, message):
    rules = load_rules(TINY)
    _solve_quietly(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    _rewrite_header(path, edit)
    solution, messages = _solve_quietly(rules)
    assert not solution.from_cache and _same_solution(solution, tiny)
    assert any(message in m for m in messages), messages
    again, messages = _solve_quietly(rules)  # never broken for good: the rebuilt file is used
    assert again.from_cache and not messages


@pytest.mark.parametrize(
    "size_covers_them, message", [(False, "payload bytes, header says"), (True, "arrays cover")], ids=["size", "arrays"]
)
def test_bytes_after_the_last_array_are_rejected(tiny, size_covers_them, message):
    """Eight bytes appended after the arrays (checksum recomputed with the key): refused whether the header's
    ``size`` counts them (then the arrays do not cover the payload) or not (then the payload is longer)."""
    rules = load_rules(TINY)
    _solve_quietly(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    _rewrite_header(path, lambda h: h.update(size=h["size"] + 8) if size_covers_them else None, extra=bytes(8))
    solution, messages = _solve_quietly(rules)
    assert not solution.from_cache and _same_solution(solution, tiny)
    assert any(message in m for m in messages), messages


def test_cache_paths_have_a_known_kind_and_a_short_safe_name():
    """The file name keeps 40 characters of the ruleset's name, each outside ``[A-Za-z0-9_-]`` replaced; a kind
    other than solution, reach and duel is refused."""
    path = disk.cache_path("a/b" + "x" * 300, "abcd", kind="reach")
    assert path.parent == disk.cache_dir()
    assert path.name == f"reach-a_b{'x' * 37}-abcd-v{disk.SOLVER_VERSION}.bin"
    with pytest.raises(ValueError, match="cache kind must be one of"):
        disk.cache_path("yacht", "abcd", kind="policy")


def test_arrays_that_do_not_fit_the_rules_are_rejected(tiny):
    """Well-formed files with a valid checksum whose arrays are wrong for the rules."""
    rules = load_rules(TINY)
    path = disk.cache_path(rules.name, rules.fingerprint)
    meta = {"fingerprint": rules.fingerprint}
    good = tiny.to_arrays()
    bad_arrays = [
        {**good, "keys": good["keys"][::-1].copy()},  # unsorted layers
        {**good, "keys": good["keys"] + 10**9},  # outside the state space
        {**good, "keys": good["keys"] - good["keys"].max() - 1},  # negative
        {**good, "value": np.where(np.arange(len(good["value"])) == 3, np.nan, good["value"])},
        {**good, "layer_start": good["layer_start"][:-1].copy()},
        {**good, "layer_start": good["layer_start"][::-1].copy()},
        {k: v for k, v in good.items() if k != "value2"},
        {**good, "value": good["value"][:-1].copy()},
    ]
    for arrays in bad_arrays:
        disk.save(path, arrays, meta)
        solution, messages = _solve_quietly(rules)
        assert not solution.from_cache and _same_solution(solution, tiny), messages
        assert any("does not fit these rules" in m for m in messages), messages


def test_truncated_garbage_empty_and_old_format_files_are_rebuilt(tiny):
    rules = load_rules(TINY)
    path = disk.cache_path(rules.name, rules.fingerprint)
    _solve_quietly(rules)
    good = path.read_bytes()
    cases = {
        "truncated": good[: len(good) // 2],
        "checksum line cut": good[: len(disk.MAGIC) + 10],
        "empty": b"",
        "garbage": os.urandom(3000),
        "older version": b"DICE-POKER-SOLUTION\n" + good[len(disk.MAGIC) + 65 :],
    }
    for name, data in cases.items():
        path.write_bytes(data)
        solution, messages = _solve_quietly(rules)
        assert not solution.from_cache and _same_solution(solution, tiny), name
        assert messages, name
        # a file of another version is not called damaged; a damaged one is
        assert any(("older version" in m) == (name == "older version") for m in messages), (name, messages)
        assert any(("damaged" in m) == (name != "older version") for m in messages), (name, messages)


def test_the_issue_case_a_shifted_value_offset_in_yachts_cache(yacht):
    """Changing the 'value' offset in the header served 160.08 instead of 169.77: now detected."""
    rules = load_rules("yacht")
    _solve_quietly(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    data = path.read_bytes()
    start = data.index(b'"name": "value"')
    old = data[start : data.index(b"}", start)]
    offset = json.loads(b"{" + old + b"}")["offset"]
    path.write_bytes(data.replace(old, old.replace(b'"offset": %d' % offset, b'"offset": %d' % (offset + 8))))
    solution, messages = _solve_quietly(rules)
    assert not solution.from_cache and any("checksum" in m for m in messages)
    assert solution.expected_score == yacht.expected_score


def test_a_fifo_at_the_cache_path_does_not_block():
    """A named pipe where the cache file should be: warned about and replaced, never waited on."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    rules = load_rules(TINY)
    path = disk.cache_path(rules.name, rules.fingerprint)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    code = (
        "from dice_poker_env.solver import solve; import sys; sys.path.insert(0, 'tests'); "
        "from test_solver_faults import TINY; print(solve(TINY, progress=False, workers=1).from_cache)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False" and "not a regular file" in result.stderr
    assert path.is_file()  # the solve's write replaced the pipe
    solution, messages = _solve_quietly(rules)
    assert solution.from_cache and not messages


def test_a_link_to_a_device_at_the_cache_path_is_not_read():
    """``/dev/zero`` would never end (and ``/dev/stdin`` could block): only regular files are read."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    rules = load_rules(TINY)
    path = disk.cache_path(rules.name, rules.fingerprint)
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/zero")
    solution, messages = _solve_quietly(rules)
    assert not solution.from_cache and any("not a regular file" in m for m in messages)
    assert path.is_file() and not path.is_symlink()  # the write replaced the link, not /dev/zero
    assert _solve_quietly(rules)[0].from_cache


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DICE_POKER_CACHE", str(tmp_path / "mine"))
    assert disk.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("DICE_POKER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk.cache_dir() == tmp_path / "xdg" / "dice_poker_env"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # invalid by the XDG specification: ignored
    assert disk.cache_dir() == Path.home() / ".cache" / "dice_poker_env"


def test_a_folder_at_the_cache_path_or_a_file_as_cache_folder_still_solves(tiny, tmp_path, monkeypatch):
    rules = load_rules(TINY)
    path = disk.cache_path(rules.name, rules.fingerprint)
    path.mkdir(parents=True)
    solution, messages = _solve_quietly(rules)
    assert _same_solution(solution, tiny) and any("not a regular file" in m for m in messages)
    assert any("could not write" in m for m in messages)
    # DICE_POKER_CACHE naming a regular file
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    monkeypatch.setenv("DICE_POKER_CACHE", str(target))
    solution, messages = _solve_quietly(rules)
    assert _same_solution(solution, tiny) and any("not a folder" in m for m in messages)
    assert target.read_text() == "not a folder"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="permissions do not bind root")
def test_an_unreadable_cache_folder_still_solves(tiny, tmp_path):
    rules = load_rules(TINY)
    _solve_quietly(rules)
    folder = disk.cache_dir()
    folder.chmod(0)
    try:
        solution, messages = _solve_quietly(rules)
    finally:
        folder.chmod(0o755)
    assert _same_solution(solution, tiny) and messages


def test_an_interrupted_write_leaves_nothing_harmful(tiny, monkeypatch):
    """An exception midway through a write keeps the old file and removes the temporary one."""
    rules = load_rules(TINY)
    _solve_quietly(rules)
    path = disk.cache_path(rules.name, rules.fingerprint)
    before = path.read_bytes()

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(disk.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        disk.save(path, tiny.to_arrays(), {"fingerprint": rules.fingerprint})
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == [path.name]


# ------------------------------------------------------ stale temporaries: item 12
def test_a_killed_write_leaves_a_temporary_file_that_the_next_write_removes():
    """``kill -9`` during a write, simulated by a process that exits at the rename."""
    rules = load_rules(TINY)
    folder = disk.cache_dir()
    code = (
        "import os, sys; sys.path.insert(0, 'tests'); from test_solver_faults import TINY\n"
        "from dice_poker_env.solver import cache, solve\n"
        "cache.os.replace = lambda *a: os._exit(9)\n"
        "solve(TINY, progress=False, workers=1)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 9, result.stderr
    left = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and not disk.cache_path(rules.name, rules.fingerprint).exists()
    _solve_quietly(rules)
    assert [p.name for p in folder.iterdir()] == [disk.cache_path(rules.name, rules.fingerprint).name]


def test_only_our_stale_temporary_files_are_removed():
    folder = disk.cache_dir()
    folder.mkdir(parents=True)
    host = disk._writer_tag().rsplit("-", 1)[0]
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    name = "solution-tiny-0123456789abcdef-v3.bin"
    hour_ago = time.time() - 2 * disk.STALE_SECONDS
    files = {
        f"{name}.{host}-{finished.pid}.abc_123.tmp": ("new", True),  # its writer is gone
        f"{name}.{host}-{os.getpid()}.def456.tmp": ("new", False),  # being written (by us)
        f"{name}.{host}-{os.getpid()}.ghi789.tmp": ("old", True),  # ours, but a day old
        f"{name}.otherhost-{finished.pid}.jkl012.tmp": ("new", False),  # another machine's: cannot tell
        f"{name}.otherhost-1.mno345.tmp": ("old", True),
        f"{name}xyz_987.tmp": ("new", False),  # the previous version's naming, recent
        f"{name}uvw_654.tmp": ("old", True),
        "notes.tmp": ("old", False),  # not ours
        "solution-precious.txt": ("old", False),
        name: ("old", False),  # a cache file, not a temporary one
    }
    for file, (age, _) in files.items():
        (folder / file).write_bytes(b"x")
        if age == "old":
            os.utime(folder / file, (hour_ago, hour_ago))
    (folder / f"{name}.{host}-{finished.pid}.dir.tmp").mkdir()  # not a regular file: left alone
    for kind in ("reach", "duel"):  # every kind's writes: a two-player table's too
        files[f"{kind}-tiny-0123456789abcdef-v3.bin.{host}-{finished.pid}.stu901.tmp"] = ("new", True)
        (folder / f"{kind}-tiny-0123456789abcdef-v3.bin.{host}-{finished.pid}.stu901.tmp").write_bytes(b"x")
    removed = disk.remove_stale_temporaries(folder)
    assert sorted(p.name for p in removed) == sorted(f for f, (_, gone) in files.items() if gone)
    assert (folder / f"{name}.{host}-{finished.pid}.dir.tmp").is_dir()
    # a writer in another PID namespace with this host name: its process id is not one of ours, but it holds
    # the file's lock while it writes, so the file stays (until the lock is free)
    import fcntl

    other = folder / f"{name}.{host}-{finished.pid}.pqr678.tmp"
    with open(other, "wb") as writing:
        fcntl.flock(writing, fcntl.LOCK_EX)
        os.utime(other, (hour_ago, hour_ago))
        assert disk.remove_stale_temporaries(folder) == [] and other.exists()
    assert disk.remove_stale_temporaries(folder) == [other]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only (flock, FIFOs)")
def test_lock_state_tells_held_free_absent_and_what_it_cannot_judge(tmp_path):
    """The one probe the cache's temporary files and the dataset writers' lock files are judged by."""
    import fcntl

    path = tmp_path / "lock"
    assert disk.lock_state(path) == "absent"
    path.write_bytes(b"")
    assert disk.lock_state(path) == "free"
    with open(path, "rb") as holder:  # another open file: as another process's, even in this one
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert disk.lock_state(path) == "held"
    assert disk.lock_state(path) == "free"  # and the probe took nothing: the lock is free again
    os.mkfifo(tmp_path / "fifo")  # never blocks, never judged
    assert disk.lock_state(tmp_path / "fifo") == "unknown"
    (tmp_path / "link").symlink_to(path)  # never followed
    assert disk.lock_state(tmp_path / "link") == "unknown"
    (tmp_path / "folder").mkdir()
    assert disk.lock_state(tmp_path / "folder") == "unknown"


# ------------------------------------------------------ invalid positions: item 6
def _obs(solution, **position):
    """An env observation of a position (a fresh env of the solution's rules)."""
    env = DicePokerEnv(solution.rules)
    obs, _ = env.reset(seed=0, options=position or None)
    return obs


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("dice", np.array([0, 0, 0, 0, 0]), "dice"),
        ("dice", np.array([9, 1, 1, 1, 1]), "dice"),
        ("dice", np.array([-1, 1, 1, 1, 1]), "dice"),
        ("dice", np.array([1, 1, 1, 1]), "shape"),
        ("dice", np.array([1.5, 1, 1, 1, 1]), "integers"),
        ("dice", [True, 1, 1, 1, 1], "booleans"),
        ("dice", np.array(["1", "1", "1", "1", "1"]), "integers"),
        ("rolls_left", np.int64(3), "rolls_left"),
        ("rolls_left", np.int64(-1), "rolls_left"),
        ("rolls_left", True, "integers"),
        ("filled", np.array([2] + [0] * 11, dtype=np.int8), "0 or 1"),
        ("filled", np.zeros(11, dtype=np.int8), "shape"),
        ("scores", np.full(12, 999), "open"),  # 999 in every (open) box
        ("upper_total", np.array([999]), "upper_total"),
        ("bonus", np.array([-5]), "bonus"),
        ("five_kind_box", np.int64(2), "five_kind_box"),
        ("turn", np.int64(7), "turn"),
    ],
)
def test_invalid_observations_are_rejected_by_every_query(yacht, field, value, error):
    obs = dict(_obs(yacht))
    obs[field] = value
    for query in (yacht.action_values, yacht.best_action, yacht.advise):
        with pytest.raises(ValueError, match=error):
            query(obs)


def test_a_full_scorecard_of_impossible_points_is_rejected(yacht):
    obs = dict(_obs(yacht))
    obs["filled"] = np.ones(12, dtype=np.int8)
    obs["filled"][-1] = 0
    obs["scores"] = np.where(obs["filled"] == 1, 999, 0)
    obs["turn"] = np.int64(11)
    with pytest.raises(PositionError, match="can never hold 999"):
        yacht.action_values(obs)
    with pytest.raises(PositionError, match="can never hold 999"):
        yacht.best_action(obs)


def test_observation_errors_name_the_row_of_a_batch(yacht):
    rows = [dict(_obs(yacht)) for _ in range(4)]
    batch = {k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]}
    assert yacht.action_values(batch).shape == (4, 32 + 12)
    batch["dice"][2] = [1, 2, 3, 4, 7]
    with pytest.raises(PositionError, match=r"observation\[2\]: dice"):
        yacht.best_action(batch)
    batch["dice"][2] = [1, 2, 3, 4, 5]
    batch["upper_total"][3] = 4
    with pytest.raises(SolverError, match=r"observation\[3\]: 'upper_total' is 4"):
        yacht.action_values(batch)


def test_the_agents_fast_path_checks_what_it_reads(yacht):
    """``_situation(points=False)`` (OptimalAgent.act_batch) skips the scores, not the dice or flags."""
    obs = dict(_obs(yacht))
    for field, value in [
        ("dice", np.array([0, 1, 1, 1, 1])),
        ("rolls_left", np.int64(5)),
        ("filled", np.full(12, 3, dtype=np.int8)),
    ]:
        bad = {**obs, field: value}
        with pytest.raises(ValueError):
            yacht._situation(bad, points=False)
        batch = {k: np.stack([np.asarray(v)] * 3) for k, v in bad.items()}
        with pytest.raises(ValueError):
            yacht._situation(batch, points=False)


def test_valid_observations_keep_their_values(tiny):
    """Validation changes no value: env observations, batches and scorecards agree, five-of-a-kind bonus included."""
    card = {"five": 50, "ones": 5}  # five 1s scored after the five-of-a-kind box: the bonus was paid
    obs = _obs(tiny, scorecard=card, dice=[6, 6, 6, 6, 6], rolls_left=0, bonus=100)
    assert obs["bonus"][0] == 100 and obs["five_kind_box"] == 2
    q = tiny.action_values(obs)
    same = tiny.action_values({"scorecard": card, "dice": [6, 6, 6, 6, 6], "rolls_left": 0, "bonus": 100})
    assert np.array_equal(q, same)
    batch = {k: np.stack([np.asarray(obs[k])] * 2) for k in obs}
    assert np.array_equal(tiny.action_values(batch)[1], q)
    assert q[tiny.best_action(obs)] == pytest.approx(q.max(), abs=1e-4)  # float32 fast path
    assert tiny.advise(obs)[0]["value"] == pytest.approx(q.max())


def test_a_five_of_a_kind_bonus_is_checked_in_a_batch_and_a_bonus_no_play_pays_names_its_row(tiny):
    """The batched check accepts every bonus play can have paid (one per other box five equal dice filled
    while the five-of-a-kind box held points) and sends only a bonus beyond them to the engine's message."""
    card = {"five": 50, "ones": 5}  # one other box five equal dice could fill: at most one bonus
    rows = [_obs(tiny, scorecard=card, dice=[6, 6, 6, 6, 6], rolls_left=0, bonus=b) for b in (0, 100, 100, 0)]
    batch = {k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]}
    q = tiny.action_values(batch)
    assert np.array_equal(q[1], tiny.action_values(rows[1])) and not np.array_equal(q[0], q[1])
    batch["bonus"][2] = 200  # two bonuses: no play pays them with this scorecard
    with pytest.raises(PositionError, match=r"^observation\[2\]: bonus: .* cannot have paid 200"):
        tiny.action_values(batch)
    batch["bonus"][2] = 50  # not a multiple of the bonus
    with pytest.raises(PositionError, match=r"^observation\[2\]: bonus: .* cannot have paid 50"):
        tiny.action_values(batch)


def test_every_observation_of_real_games_is_accepted(tiny):
    """The checks never reject what the env produces: seeded games, mostly optimal moves
    (five-of-a-kind bonuses and jokers included), one observation at a time and all of them as one batch."""
    env = DicePokerEnv(tiny.rules)
    rng = np.random.default_rng(7)
    seen = []
    for game in range(150):
        obs, info = env.reset(seed=game)
        done = False
        while not done:
            seen.append(obs)
            q = tiny.action_values(obs)
            assert np.array_equal(np.isfinite(q), info["action_mask"] == 1)
            best = tiny.best_action(obs)  # mostly optimal play: it chases five of a kind
            action = best if rng.random() < 0.8 else int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, _, done, _, info = env.step(action)
    assert any(o["bonus"][0] >= 100 for o in seen)  # five-of-a-kind bonuses were paid
    batch = {k: np.stack([np.asarray(o[k]) for o in seen]) for k in seen[0]}
    values = tiny.action_values(batch)
    assert values.shape == (len(seen), 32 + 4)
    assert np.array_equal(tiny.best_action(batch), tiny.best_actions(*tiny._situation(batch, points=False)[0][:5]))


@pytest.mark.parametrize("bonus", [-1, 1.5, True, "10"])
def test_state_value_validates_the_bonus_like_reset(tiny, bonus):
    with pytest.raises(PositionError, match="bonus"):
        tiny.state_value({"ones": 3}, bonus=bonus)


def test_state_value_rejects_what_reset_rejects(tiny):
    for card in (
        "",
        [1, 2],
        {"ones": 999},
        {"nosuch": 1},
        {"ones": 1.0},
        {"ones": 3, "sixes": 6, "five": 0, "chance": 20},
    ):
        with pytest.raises(PositionError):
            tiny.state_value(card)
    assert tiny.state_value({}) == pytest.approx(tiny.expected_score)
    assert tiny.state_value(None) == pytest.approx(tiny.expected_score)


def test_the_array_api_rejects_out_of_range_indices(tiny):
    for roll, filled in [(252, 0), (-1, 0), (0, -1), (0, 1 << 4)]:
        with pytest.raises(SolverError):
            tiny.best_actions(filled, 0, False, roll, 2)
        with pytest.raises(SolverError):
            tiny.future_action_values(filled, 0, False, roll, 2)


# ----------------------------------------------------------- resources: item 13
def _two_column_yahtzee() -> dict:
    """The issue's valid 26-box ruleset (two columns of Yahtzee boxes)."""
    spec = {"name": "yahtzee2", "upper_bonus": {"threshold": 126, "points": 70}}
    faces = ["aces", "twos", "threes", "fours", "fives", "sixes"]
    boxes = []
    for column in (1, 2):
        boxes += [{"name": f"{f}_{column}", "kind": "face_sum", "face": i + 1} for i, f in enumerate(faces)]
        boxes += [
            {"name": f"three_kind_{column}", "kind": "n_of_a_kind", "n": 3, "points": "sum"},
            {"name": f"four_kind_{column}", "kind": "n_of_a_kind", "n": 4, "points": "sum"},
            {"name": f"full_house_{column}", "kind": "full_house", "points": 25},
            {
                "name": f"small_{column}",
                "kind": "straight",
                "sets": [[1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
                "points": 30,
            },
            {"name": f"large_{column}", "kind": "straight", "sets": [[1, 2, 3, 4, 5], [2, 3, 4, 5, 6]], "points": 40},
            {"name": f"yahtzee_{column}", "kind": "n_of_a_kind", "n": 5, "points": 50},
            {"name": f"chance_{column}", "kind": "chance"},
        ]
    spec["boxes"] = boxes
    spec["five_of_a_kind"] = {"box": "yahtzee_1", "bonus": 100, "joker": "free"}
    return spec


def test_the_budget_mirrors_the_solvers_state_space_and_bounds_its_states(tiny, yacht):
    specs = ["yacht", "yahtzee", "yatzy", "dice_poker", "school_poker", TINY, _two_column_yahtzee()]
    for spec in specs:
        tables = compile_rules(load_rules(spec))
        if tables.n_boxes <= 16:
            space = StateSpace(tables)
            assert budget.space_shape(tables) == (space.n_masks, space.n_slots, space.n_full)
    for solution in (tiny, yacht):
        bound = budget.state_bound(solution.tables)
        assert solution.n_states <= bound <= 1.5 * solution.n_states
    yahtzee = budget.state_bound(compile_rules(load_rules("yahtzee")))
    assert 359_424 <= yahtzee <= 1.2 * 359_424  # its published state count


def test_estimates_grow_with_the_boxes_and_the_26_box_ruleset_needs_far_too_much():
    big = budget.estimate(compile_rules(load_rules(_two_column_yahtzee())))
    assert big.n_boxes == 26 and big.memory_bytes > 64 * budget.GiB and big.seconds > 3600
    small = budget.estimate(compile_rules(load_rules("yahtzee")))
    assert 60 * budget.MiB < small.memory_bytes < 512 * budget.MiB and small.seconds < 60
    assert "26 boxes" in big.describe() and "GiB" in big.describe()
    solver_md = (Path(__file__).resolve().parents[1] / "docs" / "solver.md").read_text()
    assert f"solving {big.describe()}, but only" in solver_md  # the page's example is today's estimate


def test_the_box_limits_and_the_estimates_margin_in_the_docs_are_todays():
    """docs/solver.md's box limits are what :func:`budget.estimate` says today of the rulesets
    ``benchmarks/bench_limits.py`` builds (its 18-box yahtzee said 1.6 GiB after the estimate said 1.5), and
    the memory estimate's margin over the measured peaks, quoted in solver.md and reliability.md, is the one of
    ``results/bench/bench_limits.json`` (reliability.md said 1.0-1.9 where the table gives 1.06-1.6)."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("bench_limits", root / "benchmarks" / "bench_limits.py")
    bench_limits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_limits)
    solver_md = " ".join((root / "docs" / "solver.md").read_text().split())

    def gib(name: str, boxes: int) -> float:
        extra = boxes - load_rules(name).n_boxes
        return budget.estimate(compile_rules(load_rules(bench_limits.bigger(name, extra)))).memory_bytes / budget.GiB

    yacht = [f"{gib('yacht', n):.0f}" for n in (20, 22, 24)]  # the page rounds these to whole GiB
    yahtzee = [f"{gib('yahtzee', n):.1f}".removesuffix(".0") for n in (18, 20, 22)]
    assert (
        f"(yacht-like) a 20-box ruleset needs about {yacht[0]} GiB, 22 boxes {yacht[1]} GiB, 24 boxes {yacht[2]} "
        f"GiB; with an upper bonus and a five-of-a-kind bonus (yahtzee-like) 18 boxes need about {yahtzee[0]} GiB, "
        f"20 boxes {yahtzee[1]} GiB, 22 boxes {yahtzee[2]} GiB" in solver_md
    ), (yacht, yahtzee)
    rows = json.loads((root / "results" / "bench" / "bench_limits.json").read_text())["rows"]
    ratios = [row["estimate_mib"] / row["peak_mib"] for row in rows]
    margin = f"{min(ratios):.2f}-{max(ratios):.1f} times the measured peak, never below"
    assert margin == "1.06-1.6 times the measured peak, never below"
    reliability_md = " ".join((root / "docs" / "reliability.md").read_text().split())
    assert margin in solver_md and margin in reliability_md


def test_a_solve_beyond_the_available_memory_is_refused_before_allocating(monkeypatch):
    """The 26-box ruleset used to die after 50 s with a raw numpy MemoryError."""

    def must_not_run(*args, **kwargs):
        raise AssertionError("the solve started")

    monkeypatch.setattr(solution_module, "solve_dp", must_not_run)
    monkeypatch.setattr(budget, "available_memory", lambda: 16 * budget.GiB)
    start = time.perf_counter()
    with pytest.raises(SolveTooLargeError) as caught:
        solve(_two_column_yahtzee(), progress=False)
    assert time.perf_counter() - start < 10
    error = caught.value
    assert isinstance(error, MemoryError) and isinstance(error, SolverError) and isinstance(error, ValueError)
    text = str(error)
    assert "26 boxes" in text and "GiB of memory" in text and "16.0 GiB is available" in text and "force" in text


def test_force_solves_anyway_and_a_real_memory_error_is_explained(tiny, monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 1 << 20)
    with pytest.raises(SolveTooLargeError, match="1 MiB is available"):
        solve(TINY, cache=False, progress=False)
    forced = solve(TINY, cache=False, progress=False, workers=1, force=True)
    assert _same_solution(forced, tiny)

    def out_of_memory(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(solution_module, "solve_dp", out_of_memory)
    with pytest.raises(SolveTooLargeError, match="ran out of memory"):
        solve(TINY, cache=False, progress=False, force=True)


def test_a_cached_solution_needs_no_memory_check(tiny, monkeypatch):
    _solve_quietly(load_rules(TINY))
    monkeypatch.setattr(budget, "available_memory", lambda: 1)
    solution, messages = _solve_quietly(load_rules(TINY))
    assert solution.from_cache and not messages


def test_available_memory_is_known_here():
    available = budget.available_memory()
    assert available is None or available > 0
    if Path("/proc/meminfo").exists():
        assert available is not None


# ------------------------------------------------------------------ workers
@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2", 100_000])
def test_workers_must_be_an_integer_from_1_to_the_limit(workers):
    with pytest.raises(SolverError, match="workers must be an integer from 1 to 256"):
        solve(TINY, cache=False, progress=False, workers=workers)


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "100000"])
def test_the_workers_variable_must_be_an_integer_from_1_to_the_limit(monkeypatch, value):
    monkeypatch.setenv("DICE_POKER_SOLVER_WORKERS", value)
    with pytest.raises(SolverError, match="DICE_POKER_SOLVER_WORKERS must be (a positive integer|an integer from 1)"):
        solve(TINY, cache=False, progress=False)


# ---------------------------------------------------------------------- CLI
def _cli(*argv) -> tuple[int, str, str]:
    from dice_poker_env.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue(), err.getvalue()


def _one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


def test_cli_rejects_bad_worker_counts(monkeypatch):
    for value in ("0", "-3", "100000"):  # (100,000 forked processes were accepted)
        _one_line_error(*_cli("solve", "yacht", "--workers", value)[::2], "--workers must be an integer from 1 to 256")
    monkeypatch.setenv("DICE_POKER_SOLVER_WORKERS", "0")
    _one_line_error(*_cli("solve", "yacht", "--no-cache")[::2], "DICE_POKER_SOLVER_WORKERS")
    monkeypatch.setenv("DICE_POKER_SOLVER_WORKERS", "100000")
    _one_line_error(*_cli("solve", "yacht", "--no-cache")[::2], "DICE_POKER_SOLVER_WORKERS must be an integer from 1")


def test_cli_rejects_huge_and_invalid_integers_in_one_line():
    _one_line_error(
        *_cli("advise", "yacht", "--dice", 1, 2, 3, 4, 5, "--bonus", "99999999999999999999999")[::2],
        "--bonus",
        "out of range",
    )
    _one_line_error(*_cli("advise", "yacht", "--dice", 1, 2, 3, 4, 10**30)[::2], "--dice", "out of range")
    _one_line_error(*_cli("advise", "yacht", "--dice", 1, 2, 3, 4, 9)[::2], "dice")
    _one_line_error(*_cli("advise", "yacht", "--dice", 1, 2, 3, 4, 5, "--bonus", -1)[::2], "bonus")
    _one_line_error(
        *_cli("advise", "yacht", "--dice", 1, 2, 3, 4, 5, "--scorecard", '{"ones": 99999999999999999999}')[::2],
        "can never hold",
    )


def test_cli_scorecard_that_is_not_json_says_how_to_type_it():
    """``--scorecard {"aces":3}`` without single quotes reaches the command as ``{aces:3}``: the error shows what
    arrived and how to quote it (it gave only the JSON parser's "Expecting property name ... (char 1)")."""
    code, _, err = _cli("advise", "yacht", "--dice", 1, 2, 3, 4, 5, "--scorecard", "{ones:3}")
    _one_line_error(code, err, "--scorecard is not valid JSON", "{ones:3}", "single quotes", """'{"aces": 3""")


def test_cli_refuses_a_too_large_solve_in_one_line_and_force_overrides(tmp_path, monkeypatch):
    rules_file = tmp_path / "tiny.toml"
    rules_file.write_text(TINY_TOML)
    monkeypatch.setattr(budget, "available_memory", lambda: 1 << 20)
    code, _, err = _cli("solve", rules_file, "--no-progress", "--workers", 1)
    _one_line_error(code, err, "MiB of memory", "--force")
    code, out, err = _cli("solve", rules_file, "--no-progress", "--workers", 1, "--json", "--force")
    assert code == 0 and json.loads(out)["states"] == 66
    code, out, _ = _cli("advise", rules_file, "--dice", 1, 1, 1, 1, 1, "--json")
    assert code == 0 and json.loads(out)  # cached now: no memory check


def test_cli_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """``dice-poker advise ... | head -3``: no "[Errno 32] Broken pipe", no traceback."""
    rules_file = tmp_path / "tiny.toml"
    rules_file.write_text(TINY_TOML)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for argv in (
        ["advise", rules_file, "--dice", "1", "2", "3", "4", "5"],
        ["advise", "yacht", "--dice", "1", "2", "3", "4", "5", "--json"],
    ):
        command = f"{sys.executable} -m dice_poker_env {' '.join(map(str, argv))} | head -1"
        result = subprocess.run(
            ["bash", "-c", command + "; exit ${PIPESTATUS[0]}"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert len(result.stdout.splitlines()) == 1
        assert result.stderr == "" and result.returncode in (0, 1), result.stderr
    # the write failing for sure: stdout closed before the command writes anything
    process = subprocess.Popen(
        [sys.executable, "-m", "dice_poker_env", "advise", str(rules_file), "--dice", "1", "2", "3", "4", "5"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1 and err == b"", err


def test_solver_pool_workers_end_on_terminate_even_under_a_raising_sigterm_handler():
    """A caller that turns SIGTERM into KeyboardInterrupt (``dice-poker dataset``) must not hang the solver's
    pool shutdown: its forked workers put SIGTERM back to the default (end at once)."""
    import multiprocessing
    import signal

    from dice_poker_env.solver.backward import end_pool, worker_pool

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        pool = worker_pool(multiprocessing.get_context("fork"), 2)
        try:
            handlers = pool.map(signal.getsignal, [signal.SIGTERM] * 4)
        finally:
            started = time.perf_counter()
            end_pool(pool)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert all(h == signal.SIG_DFL for h in handlers)
    assert time.perf_counter() - started < 30


def test_solver_pool_ended_before_its_workers_start_never_waits_on_a_lost_sigterm():
    """Ending a pool at once, before its workers have run their initializer: a SIGTERM that reaches a
    worker while it still has the parent's raising handler must not be dropped (it was, about once in a
    hundred pools (this tries 40), and ``Pool.terminate()`` then waited forever). Workers fork with SIGTERM blocked, so
    it waits for the default action; each pool ends well inside ``end_pool``'s two-second grace."""
    import multiprocessing
    import signal

    from dice_poker_env.solver.backward import end_pool, worker_pool

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    slowest = 0.0
    try:
        for _ in range(40):
            pool = worker_pool(multiprocessing.get_context("fork"), 2)
            started = time.perf_counter()
            end_pool(pool, grace=60.0)
            slowest = max(slowest, time.perf_counter() - started)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert slowest < 30, f"a pool took {slowest:.1f} s to end: a worker's SIGTERM was lost"


def test_end_pool_kills_a_worker_that_outlives_sigterm():
    """Whatever keeps a worker alive through SIGTERM, ``end_pool`` returns: after its grace, SIGKILL."""
    import multiprocessing
    import signal

    from dice_poker_env.solver.backward import end_pool, worker_pool

    pool = worker_pool(multiprocessing.get_context("fork"), 1)
    pool.apply(signal.signal, (signal.SIGTERM, signal.SIG_IGN))  # the one worker now ignores SIGTERM
    pool.apply_async(time.sleep, (600,))  # and is busy: it will not take the stop sentinel either
    (worker,) = pool._pool
    time.sleep(0.2)
    started = time.perf_counter()
    end_pool(pool, grace=0.5)
    assert 0.5 <= time.perf_counter() - started < 30
    assert worker.exitcode == -signal.SIGKILL


def test_a_solve_ended_by_sigterm_takes_its_workers_with_it_quietly(tmp_path):
    """``timeout``, a scheduler or ``kill`` end the solving process: its forked workers end too (Linux), without
    a BrokenPipeError traceback each, and none is left running."""
    import signal
    import subprocess
    import sys
    import time
    import uuid

    if not sys.platform.startswith("linux"):
        pytest.skip("the workers follow their parent on Linux")
    marker = f"solve-{uuid.uuid4().hex}"
    script = (
        "import sys; from dice_poker_env.solver import solve\n"
        f"# {marker}\n"
        "print('started', flush=True); solve('yatzy', cache=False, workers=2, progress=False)\n"
    )
    env = {**os.environ, "DICE_POKER_CACHE": str(tmp_path / "cache")}
    process = subprocess.Popen(
        [sys.executable, "-c", script, marker], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "started"
    time.sleep(1.5)  # the workers are forked and busy
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(marker):
        time.sleep(0.2)
    assert not _running(marker)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def _running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` (forked workers keep their parent's)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found
