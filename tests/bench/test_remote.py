"""remote.py, the trusted side of one worker: a captured batch reads only the chosen calls' outputs as the answer
arrives, and an answer of the wrong shape is the pair's failure (for the trusted reference, the capture's)."""

from __future__ import annotations

import os
import time

import pytest
import torch


class _Registry:
    """A stand-in for CUDA IPC on the CPU: 'handles' name tensors registered by a fake worker."""

    def __init__(self):
        self.tensors, self.open_s, self.reads = {}, 0.0, []

    def desc(self, t: torch.Tensor) -> list:
        handle = f"{len(self.tensors):0128x}"
        self.tensors[handle] = t
        return [handle, 0, t.numel() * t.element_size(), str(t.dtype).removeprefix("torch."), list(t.shape)]

    def read(self, desc):
        self.reads.append(desc[0])
        return self.tensors[desc[0]].clone()

    def sync(self):
        pass

    def close(self):
        pass


def _fake_remote(who: str, reply) -> tuple:
    """A Remote whose worker is a thread answering one batch with `reply(calls)`."""
    import threading
    from types import SimpleNamespace

    from generator.bench.shared import protocol
    from generator.bench.trusted.remote import Remote

    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()

    def worker():
        header, _ = protocol.recv(to_r, ("batch",))
        protocol.send(from_w, reply(header))

    threading.Thread(target=worker, daemon=True).start()
    remote = Remote.__new__(Remote)
    remote.who, remote.names, remote.phases = who, ["output"], []
    remote.worker = SimpleNamespace(to_child=to_w, from_child=from_r, kill=lambda: None, how_it_ended=lambda: "killed",
                                    proc=SimpleNamespace(wait=lambda timeout: 0), log=SimpleNamespace(text=lambda: ""), cpu_ms=lambda settle_s=0: None)
    remote.capture = _Registry()
    return remote


def test_a_captured_batch_reads_only_the_chosen_calls_and_refuses_a_malformed_answer():
    """Remote.batch with a capture: the outputs of the chosen calls (and only those) are read the moment the
    answer arrives and come back as host tensors; no digests are asked for; an answer whose outputs are not one
    row per call is the pair's RUNTIME_ERROR, and for the (trusted) reference it marks the capture as broken."""
    from generator.bench.trusted.remote import Failed

    outs = [torch.full((2, 3), float(i)) for i in range(4)]

    def good(header):
        assert header["capture"] == "ipc"
        return {"op": "done", "ms": [0.1] * 4, "outputs": [[remote.capture.desc(t)] for t in outs], "phases": [0, 1, 2, 3]}

    remote = _fake_remote("solution", good)
    b = remote.batch([{}] * 4, time.monotonic() + 30, 30, chosen=[1, 3])
    assert b.digests is None and sorted(b.outputs) == [1, 3] and b.wall > 0
    assert torch.equal(b.outputs[3]["out"]["output"], outs[3]) and len(remote.capture.reads) == 2
    remote = _fake_remote("reference", lambda header: {"op": "done", "ms": [0.1] * 4, "outputs": [[]] * 4})
    with pytest.raises(Failed) as caught:
        remote.batch([{}] * 4, time.monotonic() + 30, 30, chosen=[0])
    assert caught.value.status == "RUNTIME_ERROR" and caught.value.capture_broken
    remote = _fake_remote("solution", lambda header: {"op": "done", "ms": [0.1] * 4, "outputs": [[]] * 4})
    with pytest.raises(Failed) as caught:
        remote.batch([{}] * 4, time.monotonic() + 30, 30, chosen=[0])
    assert not caught.value.capture_broken
