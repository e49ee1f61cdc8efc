"""KernelTrace: dataset generator for LLM-inference GPU kernels.

Pipeline, one direction: load -> validate -> bench -> analyse -> render -> export.
"""

__version__ = "0.1.0"
