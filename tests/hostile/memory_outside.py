"""Holds memory that no address space counts (so no ``memory_mb`` limit): memfd files, System V shared memory
and message queues. Prints what it got: the seccomp filter must refuse every one."""

import ctypes
import os

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, megabytes=32):
        self.rules = rules
        self.held = []
        got = []
        try:
            fd = os.memfd_create("hoard")
            os.write(fd, b"x" * (int(megabytes) << 20))
            self.held.append(fd)
            got.append("memfd")
        except OSError:
            pass
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.shmget(0, int(megabytes) << 20, 0o1600) >= 0:  # IPC_PRIVATE, IPC_CREAT | 0600
            got.append("shm")
        if libc.msgget(0, 0o1600) >= 0:
            got.append("msg")
        print("HELD", " ".join(got) or "nothing", flush=True)

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
