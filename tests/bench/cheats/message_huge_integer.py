"""Writes a "done" whose time is a 5000-digit integer to the bench's pipe, then waits to be killed."""
import os
import struct
import time


def run(input, weight, eps):
    head = b'{"op": "done", "ms": [' + b"7" * 5000 + b'], "digests": [[""]]}'
    os.write(4, struct.pack("<QQ", len(head), 0) + head)
    time.sleep(3600)
