"""Workload generation: seeded structured generators (core), the Spec a recipe yields (spec), and
one recipe module per model (examples, llama, qwen, deepseek; scenarios shared by Llama and Qwen).

Run `python -m generator.workloadgen --help`. Needs the bench extra (numpy, safetensors).
"""
