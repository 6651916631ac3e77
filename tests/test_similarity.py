"""Hints of shared code in a class (:mod:`agents.course.similarity`): a disguised copy is found, independent
agents and the starter code everyone was given are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.course.similarity import WINDOW, K, fingerprints, normalized_tokens, similar_pairs

ROOT = Path(__file__).resolve().parents[1]
STARTER = (ROOT / "examples" / "course" / "student" / "my_agent.py").read_text()

#: a student's agent: the starter with its own keep rule and box choice
ORIGINAL = STARTER.replace(
    """        # TODO: a better keep. This one keeps the dice of the most common face (the highest on ties).
        counts = np.bincount(dice, minlength=7)
        face = max(range(1, 7), key=lambda f: (counts[f], f))
        keep = sum(1 << i for i, d in enumerate(dice) if d == face)
""",
    """        counts = np.bincount(dice, minlength=7)
        if counts.max() >= 3 or observation["rolls_left"] == 2:
            face = max(range(1, 7), key=lambda f: (counts[f], f))
            keep = sum(1 << i for i, d in enumerate(dice) if d == face)
        else:
            run = self.longest_run(dice)
            keep = 0
            for i, d in enumerate(dice):
                if d in run:
                    keep |= 1 << i
                    run = run - {d}
""",
).replace(
    """    def reset(self):""",
    '''    @staticmethod
    def longest_run(dice):
        """The faces of the longest run of consecutive faces among the dice."""
        faces = sorted(set(int(d) for d in dice))
        best, current = [faces[0]], [faces[0]]
        for face in faces[1:]:
            current = current + [face] if face == current[-1] + 1 else [face]
            if len(current) > len(best):
                best = current
        return set(best)

    def reset(self):''',
)

#: the same agent disguised: names changed, comments and docstrings rewritten, reformatted, methods reordered
DISGUISED = '''"""My dice agent, written for the assignment."""

import numpy as np
from dice_poker_env.engine import score

KEEPS = 32


class Player:
    # plays the game

    def reset(self):
        """new game"""

    def __init__(self, r, threshold=25):
        self.r = r
        self.threshold = threshold

    def act(self, obs, legal):
        d = obs["dice"]
        open_boxes = np.flatnonzero(legal[KEEPS:])
        pts = {int(b): score(self.r, d.tolist(), int(b)) for b in open_boxes}
        top = max(pts, key=pts.get)
        if obs["rolls_left"] == 0 or pts[top] >= self.threshold:
            return KEEPS + top
        c = np.bincount(d, minlength=7)
        if c.max() >= 3 or obs["rolls_left"] == 2:
            f = max(range(1, 7), key=lambda x: (c[x], x))
            mask = sum(1 << j for j, v in enumerate(d) if v == f)
        else:
            seq = self.longest_run(d)
            mask = 0
            for j, v in enumerate(d):
                if v in seq:
                    mask |= 1 << j
                    seq = seq - {v}
        if not legal[mask]:
            return KEEPS + top
        return mask

    @staticmethod
    def longest_run(d):
        s = sorted(set(int(v) for v in d))
        longest, cur = [s[0]], [s[0]]
        for x in s[1:]:
            cur = cur + [x] if x == cur[-1] + 1 else [x]
            if len(cur) > len(longest):
                longest = cur
        return set(longest)
'''

#: an agent written independently, from the same starter (the starter's code kept where it was)
INDEPENDENT = STARTER.replace(
    """        # TODO: a better keep. This one keeps the dice of the most common face (the highest on ties).
        counts = np.bincount(dice, minlength=7)
        face = max(range(1, 7), key=lambda f: (counts[f], f))
        keep = sum(1 << i for i, d in enumerate(dice) if d == face)
""",
    """        upper = [k for k in boxes if self.rules.box_names[k].endswith("s") and k < 6]
        wanted = {k + 1 for k in upper}
        keep = 0
        for position, face in enumerate(dice.tolist()):
            if face in wanted and face >= 4:
                keep += 2**position
        if keep == 0:
            keep = int(np.argmax([action_mask[k] * k for k in range(N_KEEP_ACTIONS)]))
""",
)


def _pairs(sources, starter=(STARTER,)):
    return {(p.first, p.second): p for p in similar_pairs(sources, starter)}


def test_names_comments_and_layout_do_not_count():
    a = "total = max(0, 1)  # the sum\n\nfor die in dice:\n    total += die\n"
    b = "s = max(\n    0,\n    1)\nfor x in d:\n    s += x   # add\n"
    assert normalized_tokens(a) == normalized_tokens(b)
    assert normalized_tokens("x = 1") != normalized_tokens("x = 'one'") != normalized_tokens("if x: pass")
    assert normalized_tokens("def f(:\n") == ["def", "N", "(", ":"]  # what tokenizes before the error


def test_a_disguised_copy_is_found_and_independent_work_is_not():
    pairs = _pairs({"alice": ORIGINAL, "bob": DISGUISED, "carol": INDEPENDENT})
    assert set(pairs) == {("alice", "bob")}
    copy = pairs["alice", "bob"]
    assert copy.share_first >= 0.8 and copy.share_second >= 0.8 and copy.shared >= 15


def test_the_starter_code_is_not_shared_code():
    """Two students who changed little of the starter: alike only through it."""
    light = STARTER.replace("enough=25", "enough=20")
    lighter = STARTER.replace("self.enough = enough", "self.enough = enough + 1")
    assert _pairs({"a": light, "b": lighter}, starter=()) != {}  # without the starter: the same code
    assert _pairs({"a": light, "b": lighter}) == {}
    assert fingerprints(STARTER) and not fingerprints(light) - fingerprints(STARTER) - fingerprints(lighter)


def test_tiny_files_and_bad_code_are_not_reported():
    tiny = "class A:\n    def act(self, o, m):\n        return 32\n"
    assert similar_pairs({"a": tiny, "b": tiny}) == []
    broken = ORIGINAL + "\n    def broken(:\n"
    assert [(p.first, p.second) for p in similar_pairs({"a": ORIGINAL, "b": broken}, [STARTER])] == [("a", "b")]


def test_a_copy_in_another_coding_is_compared_as_the_code_python_runs(tmp_path):
    """Red team: a copy written as ``# coding: utf-7`` with all of its code in UTF-7's base64 (``+AGkAbQ...-``)
    imports and plays as the original, but was compared as the UTF-8 text of its bytes, one long word: the copy
    was never reported. Files are compared as Python decodes them; the starter files too."""
    import base64

    from agents.course.similarity import read_sources

    (tmp_path / "alice.py").write_text(ORIGINAL)
    hidden = base64.b64encode(ORIGINAL.encode("utf-16-be")).decode().rstrip("=")
    (tmp_path / "bob.py").write_text(f"# coding: utf-7\n+{hidden}-\n")
    (tmp_path / "carol.py").write_bytes(b"\xef\xbb\xbf" + INDEPENDENT.encode())
    sources = read_sources({name: tmp_path / f"{name}.py" for name in ("alice", "bob", "carol")})
    assert sources["bob"].replace("# coding: utf-7\n", "", 1).rstrip("\n") == ORIGINAL.rstrip("\n")
    assert sources["carol"] == INDEPENDENT  # (a byte-order mark dropped)
    assert set(_pairs(sources)) == {("alice", "bob")}


def test_a_copy_inside_a_longer_file_shows_as_the_shorter_files_share():
    longer = ORIGINAL + "\n\n" + INDEPENDENT.split("class MyAgent")[1].join(["class Extra", ""])
    pair = _pairs({"copy": longer, "original": ORIGINAL})["copy", "original"]
    assert pair.share_second >= 0.9 > pair.share_first


def test_winnowing_keeps_the_smallest_hash_of_every_window_the_last_one_included():
    """Every window of WINDOW consecutive run hashes, up to the file's last, leaves its smallest hash: the
    guarantee that a shared run of K + WINDOW - 1 tokens shows wherever it sits (at the file's end too)."""
    import zlib

    lines = ORIGINAL.splitlines(keepends=True)
    for end in range(20, len(lines), 3):  # many files: some end in a window whose smallest hash is its last
        source = "".join(lines[:end])
        tokens = normalized_tokens(source)
        hashes = [zlib.crc32(" ".join(tokens[i : i + K]).encode()) for i in range(len(tokens) - K + 1)]
        assert len(hashes) > WINDOW
        windows = {min(hashes[i : i + WINDOW]) for i in range(len(hashes) - WINDOW + 1)}
        assert fingerprints(source) == windows, end


def test_a_pair_sharing_exactly_min_shared_fingerprints_is_reported():
    """``min_shared`` is the least number of shared fingerprints reported: a pair at it is, one below not."""
    common = len(fingerprints(ORIGINAL) & fingerprints(DISGUISED))
    sources = {"alice": ORIGINAL, "bob": DISGUISED}
    assert [p.shared for p in similar_pairs(sources, share=0.01, min_shared=common)] == [common]
    assert similar_pairs(sources, share=0.01, min_shared=common + 1) == []


@pytest.mark.parametrize("share", [0, 1.5, float("nan"), True, "0.8"])
def test_a_bad_share_is_refused(share):
    with pytest.raises(ValueError, match="share must be a number in"):
        similar_pairs({}, share=share)


def test_the_grading_pages_similar_lines_are_what_the_kits_example_class_gives():
    """docs/grading.md quotes the class grade's similar-code lines on the kit's example class: they are every
    pair :func:`similar_pairs` finds there with the kit's starter, in its order (the page showed one pair of
    the seven and called the other two files the only copies)."""
    import re

    root = Path(__file__).resolve().parents[1]
    kit = root / "examples" / "course"
    sources = {path.stem: path.read_text() for path in sorted((kit / "instructor" / "class_example").glob("*.py"))}
    found = [
        (p.first, p.second, f"{p.share_first:.0%}", f"{p.share_second:.0%}")
        for p in similar_pairs(sources, [(kit / "student" / "my_agent.py").read_text()])
    ]
    page = (root / "docs" / "grading.md").read_text()
    quoted = re.findall(
        r"^similar code: (\w+) and (\w+) \((\d+%) of the first is in the second, (\d+%) of the second in the "
        r"first\): read both \(docs/grading\.md\)$",
        page,
        re.M,
    )
    assert quoted == found and len(found) == 7, (quoted, found)
