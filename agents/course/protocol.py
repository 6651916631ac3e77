"""The grader <-> worker protocol: length-prefixed JSON objects over a socket pair.

What the worker sends is read as untrusted (the submission runs in the worker's process and
can write anything on the socket): :func:`receive` with ``untrusted=True`` bounds the frame's
size, its nesting depth (a cheap scan before parsing) and the length of its numbers, and
refuses ``NaN``/``Infinity``; anything else is a :class:`ProtocolError`, never a crash.
"""

from __future__ import annotations

import json
import math
import re
import socket
import struct
import time
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

#: largest message the worker accepts from the grader (bytes)
MAX_MESSAGE = 1 << 20
#: largest message the grader accepts from the worker (bytes): answers are small
MAX_REPLY = 1 << 18
#: deepest nesting of arrays and objects the grader accepts from the worker
MAX_DEPTH = 8
#: longest number (characters) the grader accepts from the worker
MAX_NUMBER = 24
_HEADER = struct.Struct("!I")


class ProtocolError(RuntimeError):
    """The other side sent something that is not a message of the protocol."""


def send(sock: socket.socket, message: dict) -> None:
    """Send one JSON object, length-prefixed."""
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(data)} bytes is over the limit of {MAX_MESSAGE}")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
        try:
            chunk = sock.recv(min(n - got, 1 << 16))
        except TimeoutError:
            raise TimeoutError from None
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # an escape (\" among them): removed first, in linear time
_STRING = re.compile(rb'"[^"]*"')  # then a string is quote to quote (no backtracking on a hostile frame)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of JSON arrays and objects in ``data`` (brackets inside strings do not count)."""
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return MAX_DEPTH  # cannot be deeper: skip the scan (every ordinary answer)
    bare = _STRING.sub(b'""', _ESCAPE.sub(b"", data))
    steps = _OPEN[np.frombuffer(bare, dtype=np.uint8)].astype(np.int32)
    return int(steps.cumsum().max(initial=0))


def _bounded_number(kind: type) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        if len(text) > MAX_NUMBER:
            raise ProtocolError(f"a number of {len(text)} characters (the limit is {MAX_NUMBER})")
        value = kind(text)
        if kind is float and not math.isfinite(value):
            raise ProtocolError(f"{text} is not a finite number")
        return value

    return parse


def _no_constant(name: str) -> NoReturn:
    raise ProtocolError(f"{name} is not a number the protocol allows")


def receive(sock: socket.socket, deadline: float | None = None, *, untrusted: bool = False) -> dict:
    """Receive one JSON object; ``TimeoutError`` past ``deadline`` (``time.monotonic()``), ``EOFError`` at the end.

    ``untrusted``: the grader reading the worker (which the submission controls): at most
    :data:`MAX_REPLY` bytes, nesting at most :data:`MAX_DEPTH` deep (checked before parsing),
    numbers at most :data:`MAX_NUMBER` characters, no ``NaN``/``Infinity``.

    Raises:
        ProtocolError: an oversized, too deep or invalid message, or JSON that is not an object.
    """
    limit = MAX_REPLY if untrusted else MAX_MESSAGE
    (size,) = _HEADER.unpack(_read_exact(sock, _HEADER.size, deadline))
    if size > limit:
        raise ProtocolError(f"a message of {size} bytes (the limit is {limit})")
    data = _read_exact(sock, size, deadline)
    try:
        if untrusted:
            depth = nesting_depth(data)
            if depth > MAX_DEPTH:
                raise ProtocolError(f"a message nested {depth} deep (the limit is {MAX_DEPTH})")
            message = json.loads(
                data,
                parse_int=_bounded_number(int),
                parse_float=_bounded_number(float),
                parse_constant=_no_constant,
            )
        else:
            message = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        raise ProtocolError(f"not JSON: {str(error)[:200]}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"not a JSON object: {type(message).__name__}")
    return message


def encode_observation(obs: Any) -> Any:
    """An env observation (dict of arrays and NumPy scalars, or one array) as JSON."""
    if isinstance(obs, dict):
        return {key: encode_observation(value) for key, value in obs.items()}
    array = np.asarray(obs)
    return {"dtype": array.dtype.str, "shape": list(array.shape), "data": array.reshape(-1).tolist()}


def decode_observation(data: Any) -> Any:
    """The inverse of :func:`encode_observation`: the same arrays, dtypes and NumPy scalars."""
    if isinstance(data, dict) and set(data) == {"dtype", "shape", "data"}:
        dtype = np.dtype(data["dtype"])
        if not data["shape"]:
            return dtype.type(data["data"][0])
        return np.asarray(data["data"], dtype=dtype).reshape(data["shape"])
    return {key: decode_observation(value) for key, value in data.items()}
