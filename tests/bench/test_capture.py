"""capture.py: outputs copied out of a worker's device memory (CUDA IPC). What a worker says about them is
untrusted; the first reference worker is probed once and a "no" falls back to digests for the run."""

from __future__ import annotations

import pytest
import torch

from generator.bench import run_bench

from dataset_factory import write_dataset
from planted import add_solution, target_hardware, workloads


def test_output_descriptors_from_a_worker_are_untrusted_input():
    """capture.Capture.read refuses every malformed descriptor before it touches device memory: wrong arity or
    types, a dtype no definition uses, a byte count that is not the shape's, a range outside what the handle maps;
    and protocol.rows refuses a reply of the wrong shape. Each is the pair's RUNTIME_ERROR (ProtocolError)."""
    from generator.bench.shared import protocol
    from generator.bench.trusted.capture import Capture

    cap = Capture.__new__(Capture)
    handle = "ab" * 64
    cap.opened = {handle: (0x7000_0000, 4096)}  # as if opened: 4 KiB mapped
    good = [handle, 0, 256 * 2, "bfloat16", [256]]
    bad = {"arity": good[:4], "handle type": [7] + good[1:], "short handle": ["ab" * 10] + good[1:],
           "negative offset": [handle, -1] + good[2:], "bool offset": [handle, True] + good[2:],
           "dtype": good[:3] + ["complex128", [256]], "bytes": good[:2] + [100, "bfloat16", [256]],
           "empty with bytes": good[:2] + [2, "bfloat16", [0]], "outside": [handle, 4000, 512, "bfloat16", [256]],
           "huge shape": good[:3] + ["bfloat16", [1 << 41]], "not a list": {"h": handle}}
    for what, desc in bad.items():
        with pytest.raises(protocol.ProtocolError):
            cap.read(desc)
        assert what
    cap.device = torch.device("cpu")
    empty = cap.read(["", 0, 0, "float32", [0, 3]])  # an empty output: nothing to open or copy
    assert empty.shape == (0, 3) and empty.dtype == torch.float32
    # A handle's 64 bytes survive the trip through hex whatever they hold (NUL bytes included).
    from generator.bench.shared.cuda_ipc import handle_bytes, make_handle

    for raw in (bytes(64), bytes(range(64)), b"\x01" + bytes(62) + b"\xff"):
        assert handle_bytes(make_handle(raw)) == raw and len(handle_bytes(make_handle(raw)).hex()) == 128
    with pytest.raises(protocol.ProtocolError):
        protocol.rows({"outputs": [[good]] * 3}, "outputs", 4, 1)
    with pytest.raises(protocol.ProtocolError):
        protocol.rows({"outputs": [[good, good]] * 4}, "outputs", 4, 1)
    assert protocol.rows({"outputs": [[good]] * 4}, "outputs", 4, 1) == [[good]] * 4


def test_capture_is_probed_once_on_the_reference_worker_and_falls_back_to_digests(monkeypatch, capsys):
    """On CUDA the first reference worker is asked whether the trusted process can read its memory; a "no"
    makes the whole run commit by digest (said on stderr, and in each trace's environment.outputs), a "yes"
    gives every worker a capture; the CPU never probes."""
    from types import SimpleNamespace

    from generator.bench.trusted import capture, runner

    class FakeRemote:
        answer = None

        def __init__(self, opts, load, who, worker=None):
            self.who, self.capture, self.probed = who, None, 0

        def probe_capture(self, device):
            self.probed += 1
            return FakeRemote.answer

    monkeypatch.setattr(runner, "Remote", FakeRemote)
    monkeypatch.setattr(capture, "Capture", lambda device: ("capture", device))
    FakeRemote.answer = "cuIpcOpenMemHandle failed (CUDA driver error 201)"
    opts = runner.Options(device="cuda")
    ref = runner._reference({}, {}, opts, [])
    assert opts.capture == "digest" and ref.capture is None and ref.probed == 1
    assert "CUDA IPC did not work here" in capsys.readouterr().err and runner.output_mode(opts) == "digest"
    FakeRemote.answer = None
    opts = runner.Options(device="cuda")
    ref = runner._reference({}, {}, opts, [])
    assert opts.capture == "ipc" and ref.capture == ("capture", "cuda") and runner.output_mode(opts) == "cuda_ipc"
    again = runner._reference({}, {}, opts, [])  # decided: no second probe
    assert again.probed == 0 and again.capture == ("capture", "cuda")
    # A trusted reference whose outputs then fail to copy out: the rest of the run commits by digest.
    closed = []
    ref.capture = SimpleNamespace(close=lambda: closed.append(1))
    capture.give_up(opts, ref, None)
    assert opts.capture == "digest" and ref.capture is None and closed == [1]
    assert "commits outputs by digest" in capsys.readouterr().err
    opts = runner.Options(device="cpu")
    ref = runner._reference({}, {}, opts, [])
    assert ref.probed == 0 and ref.capture is None and runner.output_mode(opts) == "digest"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_outputs_are_copied_out_of_the_workers_memory_on_cuda(tmp_path):
    """The trusted process reads the outputs through CUDA IPC (capture.py): an honest solution passes and its
    trace says so; one whose answers are written by a thread of its own after the batch ended (started at import,
    so the left-thread guard does not see it) is read before that thread writes them."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(2))
    add_solution(root, "honest", "honest/rmsnorm")
    add_solution(root, "late_writer", "writes_outputs_late")
    target_hardware(root, ["H100_SXM"])
    summary = run_bench(root, device="cuda", solutions=["honest", "late_writer"], progress=False)
    by = {(o.pair.solution.name, o.pair.workload.uuid): o for o in summary.outcomes}
    for (name, uuid), o in by.items():
        if name == "honest":
            assert o.status == "PASSED", o.log
            assert o.record["evaluation"]["environment"]["outputs"] == "cuda_ipc"
        elif o.status == "PASSED":
            # Its thread may write while the batch still runs (its kernels queue behind the timed calls, inside the
            # clock): then the answer is right and its number is not below the honest one's by much. What it must
            # not get is a number for work it did after the copy.
            honest = by[("honest", uuid)].record["evaluation"]["performance"]["latency_ms"]
            assert o.record["evaluation"]["performance"]["latency_ms"] >= 0.5 * honest, (o.log, honest)
