"""Writes a message nested 100,000 deep to the bench's pipe where "done" is due, then waits to be killed."""
import os
import struct
import time


def run(input, weight, eps):
    head = b'{"op": "error", "log": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    os.write(4, struct.pack("<QQ", len(head), 0) + head)
    time.sleep(3600)
