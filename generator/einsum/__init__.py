"""Einsum cascades in the workload-and-renames format (seed 003): render, parse, resolve, count.

A cascade file is a jinja2 template; rendered with a workload's axis values it is YAML that
describes Einsums over named ranks. This package turns that YAML (already checked against
schema/einsum.json) into a `Cascade` of plain values, reports everything it cannot make sense
of as `Problem`s (JSON pointer, message, hint) rather than exceptions, and counts MACs, FLOPs
and minimum bytes. Other stages import from here, not from the modules:

    expressions.py  index expressions over rank variables (k // 128, kh * 4 + g)
    constraints.py  iteration-space constraints ("0 <= m < 128") and counting their points
    sets.py         set expressions (Inputs & Intermediates, ~(a | b)) for renames and bits keys
    model.py        the cascade model: Cascade, Einsum, Access, Rename
    builder.py      rendered document -> Cascade, with every problem found
    renames.py      evaluating renames, checking expected counts
    bits.py         bits per value of every access; the plain document with them written out
    render.py       the jinja2 template: rendering, and render + read + parse in one call
    precision.py    the dtype a contraction runs at; the check that it is no wider than its operands
    counting.py     MACs, FLOPs, minimum bytes per workload
    problems.py     Problem, CascadeProblem, JSON pointers
"""

from .bits import BITS_DTYPE, DEFAULT_BITS, DTYPE_BITS, access_bits, bits_problems, plain_document
from .builder import parse_cascade
from .constraints import Constraint, count_points, parse_constraints
from .counting import Counts, EinsumCount, TensorBytes, check_countable, count, workload_counts
from .expressions import Expr, ExprError, parse_expr
from .model import Access, Cascade, Einsum, Rename, RenameBlock
from .precision import contraction_dtype, precision_problems
from .problems import CascadeProblem, Problem
from .renames import RenameResult, resolve_renames
from .render import axis_values, load_cascade, read_rendered, render_template, template_error_location, tensor_dtypes
from .sets import KEYWORDS, SetError, parse_set_expression

__all__ = [
    "BITS_DTYPE", "DEFAULT_BITS", "DTYPE_BITS", "KEYWORDS",
    "Access", "Cascade", "CascadeProblem", "Constraint", "Counts", "Einsum", "EinsumCount", "Expr", "ExprError",
    "Problem", "Rename", "RenameBlock", "RenameResult", "SetError", "TensorBytes",
    "access_bits", "axis_values", "bits_problems", "check_countable", "contraction_dtype", "count", "count_points", "load_cascade", "parse_cascade", "read_rendered",
    "parse_constraints", "parse_expr", "parse_set_expression", "plain_document", "precision_problems", "render_template",
    "resolve_renames", "template_error_location", "tensor_dtypes", "workload_counts",
]
