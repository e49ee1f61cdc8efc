"""Failures of the tool itself (bad arguments, missing programs), as opposed to problems in
the dataset, which are diagnostics. The CLI prints these as one line and exits 2."""


class KernelTraceError(Exception):
    """A failure the user can fix; str(e) says what and how."""
