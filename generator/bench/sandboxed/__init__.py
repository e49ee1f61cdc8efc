"""What runs inside the sandbox, in the solution's own process: the worker (`python -m
generator.bench.sandboxed.worker`), the guards it checks each call with, its clock, the handles it hands out for
outputs copied out on CUDA, and enter.py (the sandbox's first command, before the worker).

Nothing here is trusted: a solution can read and patch all of it. It imports only shared/ and the standard
library, torch and model/ (tests/bench/test_trust_boundary.py), never trusted/. This module imports nothing.
"""
