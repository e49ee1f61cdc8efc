"""Writes terminal escape sequences (window title, erased line, a fake PASSED) into the error the bench prints."""
import sys


def run(input, weight, eps):
    sys.stderr.write("\x1b]0;pwned\x07\x1b[2K\rPASSED: all good\n")
    raise RuntimeError("\x1b[1A\x1b[2K\r\u202ePASSED fake \x9b31m")
