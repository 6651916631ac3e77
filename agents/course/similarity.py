"""Hints of shared code in a class: pairs of submissions whose code is largely the same.

Graded agents are rarely copied verbatim: a copy gets new names, other comments, a new layout.
So each file is compared as a stream of *tokens* in which every name, string and number is
replaced by its kind (``total_points = 0  # sum`` and ``s = 1`` read the same); comments, blank
lines and line breaks inside brackets are dropped. Every run of :data:`K` such tokens is hashed,
and *winnowing* keeps the smallest hash of every :data:`WINDOW` consecutive ones (the idea behind
Stanford's MOSS: Schleimer, Wilkerson and Aiken, SIGMOD 2003), so that any shared run of at least
``K + WINDOW - 1`` tokens leaves at least one shared fingerprint, wherever it sits in the files.

A pair is reported when at least :data:`DEFAULT_SHARE` of one file's fingerprints appear in the
other (functions reordered or code added around the copy still show), after removing the
fingerprints of the starter code every student was given (``starter``), and when they share at
least :data:`MIN_SHARED` fingerprints (tiny files are not compared). It is a hint for a person
to read the two files, never a verdict: independent solutions of a small task can look alike,
and rewritten logic is not caught.
"""

from __future__ import annotations

import codecs
import importlib.util
import io
import itertools
import keyword
import os
import tokenize
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: tokens per hashed run
K = 10
#: winnowing window: one fingerprint kept per this many consecutive runs
WINDOW = 6
#: share of a file's fingerprints found in the other file from which a pair is reported
DEFAULT_SHARE = 0.8
#: fingerprints a pair must share to be reported at all
MIN_SHARED = 15

_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.TYPE_COMMENT}
#: an f-string's first and last tokens (Python 3.12+ splits f-strings into tokens; before, one STRING)
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass(frozen=True)
class SimilarPair:
    """Two submissions that share much of their code.

    Attributes:
        first, second: the two students' folders (the class's names for them), ``first < second``.
        share_first: the share of ``first``'s fingerprints found in ``second`` (0 to 1).
        share_second: the share of ``second``'s fingerprints found in ``first``.
        shared: how many fingerprints they share.
    """

    first: str
    second: str
    share_first: float
    share_second: float
    shared: int

    @property
    def share(self) -> float:
        """The larger of the two shares: how much of one file is in the other."""
        return max(self.share_first, self.share_second)


def normalized_tokens(source: str) -> list[str]:
    """The tokens compared: names (keywords kept), strings and numbers as their kind; comments, blank lines and
    breaks inside brackets dropped. A file that does not tokenize gives the tokens before the error."""
    out: list[str] = []
    depth = 0  # inside an f-string: all of it reads as one string
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = token.type
            if kind == _FSTRING_START:
                depth += 1
                if depth == 1:
                    out.append("S")
            elif kind == _FSTRING_END:
                depth -= 1
            elif depth or kind in _DROPPED:
                continue
            elif kind == tokenize.STRING:
                out.append("S")
            elif kind == tokenize.NUMBER:
                out.append("0")
            elif kind == tokenize.NAME:
                out.append(token.string if keyword.iskeyword(token.string) else "N")
            elif kind == tokenize.NEWLINE:
                out.append(";")
            elif kind == tokenize.INDENT:
                out.append("{")
            elif kind == tokenize.DEDENT:
                out.append("}")
            else:
                out.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def fingerprints(source: str) -> set[int]:
    """The winnowed hashes of a source's runs of :data:`K` normalized tokens (module docstring)."""
    tokens = normalized_tokens(source)
    hashes = [zlib.crc32(" ".join(tokens[i : i + K]).encode()) for i in range(len(tokens) - K + 1)]
    if len(hashes) <= WINDOW:
        return set(hashes)
    kept = set()
    for start in range(len(hashes) - WINDOW + 1):
        window = hashes[start : start + WINDOW]
        kept.add(min(window))
    return kept


def similar_pairs(
    sources: Mapping[str, str],
    starter: Iterable[str] = (),
    *,
    share: float = DEFAULT_SHARE,
    min_shared: int = MIN_SHARED,
) -> list[SimilarPair]:
    """The pairs of ``sources`` (name -> source text) that share much of their code, most similar first.

    Args:
        sources: each submission's name and source.
        starter: the sources every student was given; their fingerprints are not counted.
        share: report a pair when this share of one file's fingerprints is in the other (0 < share <= 1).
        min_shared: and when they share at least this many fingerprints.

    Raises:
        ValueError: ``share`` outside (0, 1], ``min_shared`` below 1.
    """
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 < share <= 1.0:
        raise ValueError(f"share must be a number in (0, 1], got {share!r}")
    if isinstance(min_shared, bool) or not isinstance(min_shared, int) or min_shared < 1:
        raise ValueError(f"min_shared must be an integer >= 1, got {min_shared!r}")
    given: set[int] = set().union(*(fingerprints(text) for text in starter))
    prints = {name: fingerprints(text) - given for name, text in sources.items()}
    pairs = []
    for first, second in itertools.combinations(sorted(prints), 2):
        a, b = prints[first], prints[second]
        common = len(a & b)
        if common < min_shared:
            continue
        pair = SimilarPair(first, second, common / len(a), common / len(b), common)
        if pair.share >= share:
            pairs.append(pair)
    return sorted(pairs, key=lambda p: (-p.share, p.first, p.second))


#: codecs written in Python whose decoding time grows faster than the file (``# coding: punycode`` on a file of one
#: long number: minutes for a megabyte), read as UTF-8 in the grader's process (the import in the sandbox has its
#: load time limit)
SLOW_CODECS = ("punycode", "idna")


def python_source(path: str | os.PathLike) -> str:
    """The text of a Python file as Python reads it when it imports the file: decoded as its byte-order mark or
    ``# coding`` line says (UTF-8 without one, or one of :data:`SLOW_CODECS`), a BOM dropped, line ends made
    ``\\n``; bytes that do not decode are replaced (the import's own error is the submission's load failure).
    ``OSError`` if it cannot be read; never an error of the submission's bytes (the grader reads every file of a
    class with it, before any sandbox)."""
    data = Path(path).read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if codecs.lookup(encoding).name not in SLOW_CODECS:
            return importlib.util.decode_source(data)
    except (SyntaxError, ValueError, LookupError):  # an unknown or wrong coding line, bytes it cannot decode
        pass  # (a codec's UnicodeError too, a ValueError: punycode's 'Invalid extended code point')
    return data.decode("utf-8", errors="replace")


def read_sources(paths: Mapping[str, str | os.PathLike[str]]) -> dict[str, str]:
    """``{name: text}`` of the files that can be read, decoded as Python reads them (:func:`python_source`: a copy
    written in another ``# coding``, UTF-7's base64 say, is compared as the code Python runs); unreadable ones are
    left out."""
    out = {}
    for name, path in paths.items():
        try:
            out[name] = python_source(path)
        except OSError:
            continue
    return out
