"""protocol.py: what a worker sends is untrusted (a malformed header or payload, a bad number, a message out of
order is a ProtocolError), and the digests of outputs staged through page-locked memory match the host's."""

from __future__ import annotations

import os
import time

import pytest
import torch


def test_untrusted_payloads_are_protocol_errors():
    from generator.bench.shared import protocol

    r, w = os.pipe()
    os.write(w, (2**40).to_bytes(8, "little") + (0).to_bytes(8, "little"))
    with pytest.raises(protocol.ProtocolError, match="header"):
        protocol.recv(r, deadline=time.monotonic() + 5)
    protocol.send(w, {"op": "outputs"}, b"not safetensors at all")
    header, payload = protocol.recv(r, ("outputs",), deadline=time.monotonic() + 5)
    with pytest.raises(protocol.ProtocolError, match="does not parse"):
        protocol.unpack(payload)
    protocol.send(w, {"op": "done", "ms": -1})
    with pytest.raises(protocol.ProtocolError, match="not a finite"):
        protocol.number(protocol.recv(r, ("done",), deadline=time.monotonic() + 5)[0], "ms")
    protocol.send(w, {"op": "done", "ms": 1})
    with pytest.raises(protocol.ProtocolError, match="out of order"):
        protocol.recv(r, ("outputs",), deadline=time.monotonic() + 5)
    os.close(w)
    with pytest.raises(protocol.Closed):
        protocol.recv(r, deadline=time.monotonic() + 5)
    os.close(r)


def test_tensors_that_share_memory_pack_and_unpack():
    """A sampler's calls share one input set: the inputs revealed for several calls are one tensor (and a view of
    it), which safetensors refuses to save as such (every pair of the v151936 top-k/top-p sampler ended
    NOT_MEASURED on it)."""
    from generator.bench.shared import protocol

    probs = torch.rand(3, 5)
    back = protocol.unpack(protocol.pack({"0/probs": probs, "1/probs": probs, "row": probs[1]}))
    assert torch.equal(back["0/probs"], probs) and torch.equal(back["1/probs"], probs)
    assert torch.equal(back["row"], probs[1])


def test_digest_stages_hold_their_values_with_alignment():
    """_stages packs values as _to_host lays them out (each 64-byte aligned), so no stage overflows its
    page-locked buffer; digest_rows equals digest() value by value on the threaded path."""
    from generator.bench.shared import protocol

    values = [torch.zeros(n, dtype=torch.uint8) for n in (1, 63, 65, 2**20, 7, 3 * 2**20)]
    for stage in protocol._stages(values):
        assert sum(-(-v.numel() // 64) * 64 for v in stage) <= protocol.STAGE_BYTES or len(stage) == 1
    rows = [[torch.randn(2**20), torch.arange(5)], [torch.randn(3, 2**19).to(torch.bfloat16), torch.ones(0)]]
    assert protocol.digest_rows(rows) == [[protocol.digest(v) for v in row] for row in rows]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_device_digests_through_the_page_locked_stage_match_host_digests(monkeypatch):
    from generator.bench.shared import protocol

    monkeypatch.setattr(protocol, "STAGE_BYTES", 2**20)
    monkeypatch.setattr(protocol, "_STAGING", None)
    rows = [[torch.randn(100_003, device="cuda"), torch.arange(77, device="cuda", dtype=torch.int16)],
            [torch.randn(3, 2**18, device="cuda").to(torch.bfloat16), torch.ones(0, device="cuda")],
            [torch.randn(2**19, device="cuda"), torch.ones(3, dtype=torch.bool, device="cuda")]]
    assert protocol.digest_rows(rows) == [[protocol.digest(v.cpu()) for v in row] for row in rows]
