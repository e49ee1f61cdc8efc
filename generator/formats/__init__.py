"""Foreign formats -> canonical records, one module per format.

flashinfer_trace (FlashInfer-Trace, flashinfer-bench 0.1.x), kernel_signature (seed 001),
schema_set (seed 002), benchmark_result (seed 002's result records); `dialects` recognises a
record's format and dispatches, `importer` rewrites whole files as canonical dataset files.
"""
