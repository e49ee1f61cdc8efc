"""Workload generation, the engine: seeded structured generators (core), the Spec a recipe yields (spec),
the kernel-family builders (families, state, dsa, mla, moe, cascade, logits, lora, alltoall, specdec), named
scenario sets (scenarios), the reader of the recipe files, dataset/recipes/<model>.yaml (recipe), and the
runners of the newer families (runners).
Every model's recipe is such a file (data); write renders every recipe into workload files.

Run `kerneltrace workloads [--check]`. Needs the bench extra (numpy, safetensors).
"""
