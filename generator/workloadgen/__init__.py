"""Workload generation, the engine: seeded structured generators (core), the Spec a recipe yields (spec),
the kernel-family builders (families, moe), named scenario sets (scenarios) and the reader of the recipe
files, dataset/recipes/<model>.yaml (recipe). Models whose kernels no family covers yet keep a Python
recipe module here that imports the engine only. write renders every recipe into workload files.

Run `kerneltrace workloads [--check]`. Needs the bench extra (numpy, safetensors).
"""
