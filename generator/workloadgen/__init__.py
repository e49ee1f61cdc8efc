"""Workload generation: seeded structured generators (core) and per-model recipes (recipes + modules).

Run `python -m generator.workloadgen --help`. Needs the bench extra (numpy, safetensors).
"""
