"""Writes 2 GiB to /dev/shm, then to /dev: the one is a small tmpfs, the other read-only."""


def run(input, weight, eps):
    for where in ("/dev/shm/fill", "/dev/fill"):
        with open(where, "wb") as f:
            for _ in range(2048):
                f.write(b"x" * (1 << 20))
    return input
