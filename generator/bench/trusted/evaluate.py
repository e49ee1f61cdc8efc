"""How a pair's outputs are judged, chosen once per pair: element by element against the reference's (Elementwise),
or, for samplers, as distributions (Sampling). pair.py runs the batches and asks its evaluator what differs: how
many calls the first batch holds and whether they share an input set, which inputs the reference shows, how a
batch's outputs are compared, how large a timed batch is, and what is left to check after the timed batches."""

from __future__ import annotations

from typing import Optional, Protocol

from ...model.status import TraceStatus
from ..shared.inputs import count_elements
from .check import (
    SAMPLES_P_VALUE,
    Verdict,
    check_support,
    chi2_sf,
    compare,
    compare_samples,
    draw_ranks,
    sampling_draws,
    two_sample_chi2,
)


class WorkloadRun(Protocol):
    """What an evaluator reads of its pair (pair.WorkloadRun), and where it records each verdict."""

    definition: dict
    axes: dict
    scalars: dict
    outs: list

    def record(self, v: Verdict, what: str) -> None: ...


class Elementwise:
    """Every compared call's outputs against the reference's on the same inputs (check.compare)."""

    first_calls = 1  # then CORRECTNESS_CALLS - 1 more, unless the calls are slow (pair.run)
    more_correctness_calls = True
    reveals_every_call = False  # the batch's outputs are revealed whole only when small (pair.REVEAL_ALL_BYTES)

    def __init__(self, run: WorkloadRun):
        self.run = run

    def one_set(self, first: bool) -> bool:
        return False

    def shown_inputs(self, chosen: list[int], first: bool) -> list[int]:
        return []  # the comparison needs no inputs

    def verify(self, solution_out: dict, ref_out: dict, chosen: list[int], label: str, n: int, first: bool) -> None:
        for i in chosen:
            self.run.record(compare(self.run.definition, solution_out[i]["out"], ref_out[i]["out"], self.run.axes),
                            f"{label}, call {i + 1} of {n}")

    def batch_size(self, min_batches: int) -> Optional[int]:
        return None  # sized by memory and time (pair.batch_size)

    def after_timed(self) -> None:
        pass


class Sampling:
    """A sampler's draws: the first (untimed) batch is many calls on one input set, whose draws
    (check.sampling_draws) are compared with the reference's as a distribution; in the timed batches every call has
    its own input set, each draw must lie in the filters' support on it, and the ranks of the drawn tokens in their
    rows (check.draw_ranks) are pooled over the batches into one more test (after_timed)."""

    more_correctness_calls = False
    reveals_every_call = True

    def __init__(self, run: WorkloadRun):
        self.run = run
        self.first_calls = sampling_draws(count_elements(run.outs[0]["shape"]))  # draws per compared input set
        self.pooled = (0.0, 0, 0, 0)  # the timed batches: chi-square, dof, draws, batches

    def one_set(self, first: bool) -> bool:
        return first

    def shown_inputs(self, chosen: list[int], first: bool) -> list[int]:
        """The reference's worker (trusted) shows the inputs, for the support check and the draws' ranks (the first
        batch's calls share one set: shown once)."""
        return chosen[:1] if first else chosen

    def verify(self, solution_out: dict, ref_out: dict, chosen: list[int], label: str, n: int, first: bool) -> None:
        shown = self.shown_inputs(chosen, first)
        inputs = [{**self.run.scalars, **ref_out[i if i in shown else shown[0]]["in"]} for i in chosen]
        solution_draws, ref_draws = [solution_out[i]["out"] for i in chosen], [ref_out[i]["out"] for i in chosen]
        d = self.run.definition
        if first:
            self.run.record(compare_samples(d, solution_draws, ref_draws, inputs[0]), label)
            return
        for k, draw in enumerate(solution_draws):  # shape, dtype, range, probability and the filters
            self.run.record(check_support(d, draw, inputs[k]), f"{label}, draw {k + 1}")
        stat, dof = two_sample_chi2(draw_ranks(d, solution_draws, inputs), draw_ranks(d, ref_draws, inputs))
        p = self.pooled
        self.pooled = (p[0] + stat, p[1] + dof, p[2] + len(solution_draws), p[3] + 1)

    def batch_size(self, min_batches: int) -> Optional[int]:
        return max(16, -(-self.first_calls // min_batches))  # the timed draws pool into a test as strong as the first

    def after_timed(self) -> None:
        stat, dof, draws, batches = self.pooled
        p_value = chi2_sf(stat, dof)
        if p_value < SAMPLES_P_VALUE:
            self.run.record(Verdict(TraceStatus.INCORRECT_NUMERICAL,
                                    f"the timed calls' draws ({draws} in {batches} batches, each on its own input set; "
                                    f"their tokens' ranks) do not follow the reference's distribution (chi-square "
                                    f"{stat:.1f} on {dof} dof, p = {p_value:.2g})", matched_ratio=0.0),
                            "the timed batches")


def evaluator_for(run: WorkloadRun) -> Elementwise | Sampling:
    return Sampling(run) if run.definition["type"] == "sampling" else Elementwise(run)
