"""Connects to a server on 127.0.0.1 (the test listens there) to send what it knows."""

import socket

import numpy as np

from dice_poker_env.engine import score


class Agent:
    def __init__(self, rules, port=0):
        self.rules = rules
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=2) as connection:
                connection.sendall(b"hello from a submission")
            print("CONNECTED", flush=True)
        except OSError as error:
            print("NO NETWORK", error, flush=True)

    def act(self, observation, action_mask):
        dice = observation["dice"].tolist()
        boxes = np.flatnonzero(action_mask[32:])
        return 32 + int(max(boxes, key=lambda k: score(self.rules, dice, int(k))))
