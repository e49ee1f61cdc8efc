"""KernelTrace: dataset generator for LLM-inference GPU kernels.

Pipeline, one direction: formats -> load -> validate -> bench -> analyse -> site, and analyse ->
export (which publishes). Each stage is a subpackage that imports only from model/ (the contract:
records, schemas, the record-kind registry, dataset layout, dtypes) and from stages before it;
einsum/ (the cascade format) sits beside formats/ below load, workloadgen/ beside validate/.
cli.py calls one stage per command. tests/test_layering.py holds the ranks and checks the imports.
"""

__version__ = "0.1.0"
