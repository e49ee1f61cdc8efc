"""Writes 2 GiB to its /tmp: the sandbox's /tmp is a small tmpfs."""
import os


def run(input, weight, eps):
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "fill"), "wb") as f:
        for _ in range(2048):
            f.write(b"x" * (1 << 20))
    return input
