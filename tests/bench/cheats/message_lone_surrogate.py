"""Writes an error whose log holds a lone UTF-16 surrogate to the bench's pipe, then waits to be killed."""
import os
import struct
import time


def run(input, weight, eps):
    head = b'{"op": "error", "log": "boom \\ud800 end"}'
    os.write(4, struct.pack("<QQ", len(head), 0) + head)
    time.sleep(3600)
