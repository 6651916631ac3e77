"""Writes its own frames on the grader's socket: deeply nested JSON, a 5,000-digit number, a chosen failure kind,
an oversized frame, bytes that are not JSON."""

import json
import struct
import sys


def frame(data: bytes) -> bytes:
    return struct.pack("!I", len(data)) + data


ATTACKS = {
    "deep": frame(b"[" * 200_000 + b"]" * 200_000),
    "deep_object": frame(b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    "bignum": frame(b'{"ok": true, "action": 1' + b"0" * 5000 + b"}"),
    "kind": frame(json.dumps({"ok": False, "kind": "timeout", "error": "budget", "message": "x"}).encode()),
    "oversize": struct.pack("!I", 1 << 30) + b"{}",
    "garbage": frame(b"\xff\xfe not json"),
    "nan": frame(b'{"ok": true, "action": NaN}'),
}


class Agent:
    def __init__(self, rules, attack="deep"):
        self.attack = attack

    def act(self, observation, action_mask):
        import os
        import socket

        fd = int(sys.argv[-1])  # the worker's socket
        sock = socket.socket(fileno=os.dup(fd))
        sock.sendall(ATTACKS[self.attack])
        import time

        time.sleep(60)
