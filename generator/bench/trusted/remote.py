"""The trusted side of one worker process: every reply is parsed as untrusted input, every write has a
deadline, and every way a worker can fail becomes a Failed (the pair's status) or a HarnessError (the run's).
"""

from __future__ import annotations

import time
from typing import NamedTuple, Optional, Sequence

import torch

from ...model.errors import KernelTraceError
from ...model.status import TraceStatus
from ..shared import protocol
from .capture import Capture, CaptureUnavailable
from .options import Options
from .sandbox import Worker

STARTUP_S = 300.0


class HarnessError(KernelTraceError):
    """The harness or its environment failed (not the solution): the run stops, no trace is written."""


class Failed(Exception):
    """The pair ends with this status; `worker_lost` when the worker must be replaced."""

    def __init__(self, status: str, log: str, worker_lost: bool = True, correctness: Optional[dict] = None):
        super().__init__(log)
        self.status, self.log, self.worker_lost, self.correctness = status, log, worker_lost, correctness
        self.capture_broken = False  # the reference's outputs could not be copied out (capture.py)


class ReferenceFailed(Failed):
    pass


class Remote:
    """The trusted side of one worker: every reply is parsed as untrusted input, every write has a deadline."""

    def __init__(self, opts: Options, load: dict, who: str, worker: Optional[Worker] = None):
        self.who = who
        self.phases: list[float] = []  # the worker's own account of its last batch (diagnostics only)
        self.capture: Optional[Capture] = None  # set when outputs are read from the worker's memory (capture.py)
        self.worker = worker or Worker(opts.device, opts.sandbox)
        try:
            # Starting Python and importing torch is not the solution's time: a generous limit of its own.
            # No solution code has run yet: a worker that cannot get this far is the environment's failure.
            self.recv(("hello",), time.monotonic() + STARTUP_S, "starting (Python and torch, before any "
                      "solution code)", timeout_s=STARTUP_S)
        except Failed as exc:
            self.worker.kill()
            raise HarnessError(f"a worker process could not start, so nothing can be measured here: {exc.log}\n"
                               "Check that this Python can import torch (and, with the sandbox, that bwrap can "
                               "run it); no trace was written for this pair.") from None
        self.load(load, opts)

    def load(self, load: dict, opts: Options) -> None:
        """Build the solution (or the reference) of `load` in this worker; a reference's worker is told to load
        the next definition's reference the same way. A failure kills the worker (_fail, or here)."""
        self.names = list(load["output_names"])
        self.fresh = True  # no call since the load: the next pair's first call pays the compile (pair.py)
        self.send(load, deadline=time.monotonic() + 60)
        header, _ = self.recv(("loaded", "compile_error"), time.monotonic() + opts.timeout_s,
                              f"building the {self.who}", timeout_s=opts.timeout_s)
        if header["op"] == "compile_error":
            self.kill()
            raise (ReferenceFailed if self.who == "reference" else Failed)(TraceStatus.COMPILE_ERROR, protocol.text(header.get("log")))

    def _fail(self, exc: Exception, doing: str, timeout_s: float = 0) -> Failed:
        cls = ReferenceFailed if self.who == "reference" else Failed
        if isinstance(exc, protocol.Timeout):
            self.kill()
            return cls(TraceStatus.TIMEOUT, f"{doing} ran past the {timeout_s:g} s limit\n{self.worker.log.text()}")
        try:
            self.worker.proc.wait(timeout=2)  # it may be exiting: let it say how
        except Exception:  # noqa: BLE001 - still running: it is killed below
            pass
        self.kill()
        how = self.worker.how_it_ended()
        if isinstance(exc, protocol.Closed):
            why = f"the {self.who}'s process ended ({how}) while {doing}"
        else:
            why = f"the {self.who}'s process sent a bad message ({exc}); it was killed"
        return cls(TraceStatus.RUNTIME_ERROR, f"{why}\n{self.worker.log.text()}")

    def recv(self, expect: tuple, deadline: float, doing: str, max_payload: int = 0, timeout_s: float = 0):
        try:
            return protocol.recv(self.worker.from_child, expect, deadline=deadline, max_payload=max_payload)
        except (protocol.ProtocolError, protocol.Timeout) as exc:
            raise self._fail(exc, doing, timeout_s) from None

    def send(self, header: dict, payload: bytes = b"", deadline: float = 0.0, timeout_s: float = 0) -> None:
        try:
            protocol.send(self.worker.to_child, header, payload, deadline=deadline)
        except protocol.Timeout as exc:  # it stopped reading its pipe
            raise self._fail(exc, "reading its input", timeout_s) from None
        except OSError as exc:  # the worker is gone: its pipe is closed
            raise self._fail(protocol.Closed(str(exc)), "reading its input") from None

    def workload(self, header: dict, payload: bytes, deadline: float, timeout_s: float) -> None:
        self.send(header, payload, deadline, timeout_s)
        self.recv(("ready",), deadline, "receiving the workload", timeout_s=timeout_s)

    def batch(self, calls: list, deadline: float, timeout_s: float, chosen: list[int] = (), inline: int = 0,
              marks: bool = False, drawn: Sequence[bytes] = ()) -> Batch:
        """Run a batch. With a capture (CUDA IPC), the outputs of the `chosen` calls are copied out of the
        worker's memory as soon as it answers, and the wall clock ends when that copy has; else, when `inline`
        (every call is compared; its value: the most bytes the answer may carry), every output comes with the
        answer; else the worker commits to every output by digest and `reveal` shows the chosen ones later. With
        `marks` (the CPU), the worker marks the start and end of each call and this process timestamps each mark as
        it arrives: Batch.marks, ms since the batch was sent; then each call's random tensors are `drawn` here (packed,
        one per call: made before the batch, so both workers wait alike) and sent with it."""
        # The CPU (marks): the sandbox's CPU time before the batch exists for it (the worker waits on its pipe).
        cpu0 = self.worker.cpu_ms() if marks else None
        own0 = time.process_time()
        t0 = time.perf_counter()
        mode = "ipc" if self.capture else "inline" if inline else "digest"
        if marks:  # each call's inputs sent when the call before it has ended (its end mark), none ahead
            self.send({"op": "batch", "n": len(calls), "capture": mode, "marks": True}, deadline=deadline,
                      timeout_s=timeout_s)
            self._call(calls, drawn, 0, deadline, timeout_s)
        else:
            self.send({"op": "batch", "calls": calls, "capture": mode}, deadline=deadline, timeout_s=timeout_s)
        stamps: list[float] = []
        while True:
            reply, payload = self.recv(("mark", "done", "error", "cheat"), deadline, "running a batch of calls",
                                       max_payload=inline if mode == "inline" else 0, timeout_s=timeout_s)
            if reply["op"] != "mark":
                break
            stamps.append((time.perf_counter() - t0) * 1e3)
            if not marks or len(stamps) > 2 * len(calls):
                raise self._call_failed(TraceStatus.REWARD_HACK, {"log": f"its process sent more marks than the "
                                                                         f"{2 * len(calls) if marks else 0} its calls make"},
                                        worker_lost=True)
            if len(stamps) % 2 == 0 and len(stamps) // 2 < len(calls):
                self._call(calls, drawn, len(stamps) // 2, deadline, timeout_s)
        wall = (time.perf_counter() - t0) * 1e3
        if reply["op"] != "done":
            raise self._call_failed(TraceStatus.REWARD_HACK if reply["op"] == "cheat" else TraceStatus.RUNTIME_ERROR, reply)
        # Its answer is in: every output it commits to is computed by now. It goes back to waiting on its pipe, where
        # the slice it ran last is counted (5 ms at most: a thread that keeps running is counted at the next tick).
        # After `wall`: the wait is not the batch's (on CUDA, where nothing is read here, the wall ends later).
        cpu1 = self.worker.cpu_ms(settle_s=0.005) if marks else None
        marked = stamps if marks else None
        own = ((time.process_time() - own0) * 1e3, (time.perf_counter() - t0) * 1e3)
        used = _used(cpu0, cpu1, self._call_cpu(reply, len(calls)), own)
        try:
            self.phases = protocol.numbers(reply, "phases", 4) if "phases" in reply else []  # diagnostics only
        except protocol.ProtocolError:
            self.phases = []
        try:
            ms = protocol.numbers(reply, "ms", len(calls))
            if marks and len(stamps) != 2 * len(calls):  # a well-formed answer, so a cheat's, not a broken message
                raise self._call_failed(TraceStatus.REWARD_HACK, {"log": f"its process sent {len(stamps)} marks for "
                                                                         f"{len(calls)} calls (one before and one "
                                                                         "after each)"}, worker_lost=True)
            if mode == "inline":
                return Batch(ms, None, wall, self._tensors(payload, range(len(calls)), "running a batch of calls"), marked, used)
            if self.capture is None:
                return Batch(ms, protocol.digests(reply, len(calls), len(self.names)), wall, None, marked, used)
            descs = protocol.rows(reply, "outputs", len(calls), len(self.names))
            opening = self.capture.open_s
            copies = {i: dict(zip(self.names, (self.capture.read(d) for d in descs[i]))) for i in chosen}
            self.capture.sync()
            # Opening a handle is this process's driver work (once per allocation of the worker), not the worker's.
            wall = (time.perf_counter() - t0 - (self.capture.open_s - opening)) * 1e3
        except (protocol.ProtocolError, RuntimeError) as exc:  # RuntimeError: torch refusing a copy it was pointed at
            if not isinstance(exc, protocol.ProtocolError):
                exc = protocol.ProtocolError(f"its outputs could not be copied out ({type(exc).__name__}: {str(exc)[:300]})")
            failed = self._fail(exc, "running a batch of calls")
            # The reference's worker is trusted code: its outputs failing to copy out is the capture's failure here,
            # and the run goes on with digests (runner.py).
            failed.capture_broken = self.who == "reference" and self.capture is not None
            raise failed from None
        # The comparisons run on the CPU (check.py), after the clock.
        outputs = {i: {"out": {n: t.cpu() for n, t in outs.items()}, "in": {}} for i, outs in copies.items()}
        return Batch(ms, None, wall, outputs, marked, used)

    def _call(self, calls: list, drawn: Sequence[bytes], i: int, deadline: float, timeout_s: float) -> None:
        """Send call i of a marked batch: its blob rows, and its random tensors (`drawn`; none where it repeats the
        call before, a sampler's one input set: "same")."""
        if i and calls[i] is calls[i - 1]:
            self.send({"op": "call", "call": {}, "same": True}, deadline=deadline, timeout_s=timeout_s)
        elif drawn:
            call = {k: v for k, v in calls[i].items() if k != "recipes"}
            self.send({"op": "call", "call": call, "drawn": True}, drawn[i], deadline=deadline, timeout_s=timeout_s)
        else:  # its seeds: the worker draws them
            self.send({"op": "call", "call": calls[i]}, deadline=deadline, timeout_s=timeout_s)

    def _call_cpu(self, reply: dict, n: int) -> Optional[list[float]]:
        """Each call's CPU time as the reference's worker measured it (trusted code; cpufloor.py subtracts the rest of
        its batch's CPU as the harness's), or None: a solution's account of its own calls is never read."""
        if self.who != "reference" or "cpu" not in reply:
            return None
        try:
            return protocol.numbers(reply, "cpu", n)
        except protocol.ProtocolError:
            return None

    def probe_capture(self, device: str) -> Optional[str]:
        """None if this process can read the worker's device memory (capture.py), else why not."""
        self.send({"op": "probe"}, deadline=time.monotonic() + 60)
        reply, _ = self.recv(("probed",), time.monotonic() + 60, "answering the capture probe", timeout_s=60)
        if "error" in reply:
            return protocol.text(reply["error"], 500)
        try:
            capture = Capture(device)
        except CaptureUnavailable as exc:
            return str(exc)
        try:
            seen = capture.read(reply.get("desc"))
            capture.sync()
            ok = torch.equal(seen.cpu(), torch.arange(4096, dtype=torch.int32))
            return None if ok else "the probe's pattern read back wrong"
        except (protocol.ProtocolError, CaptureUnavailable, RuntimeError) as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            capture.close()

    def reveal(self, calls: list[int], inputs: list[int], max_payload: int, deadline: float,
               timeout_s: float) -> dict[int, dict[str, dict]]:
        """{call: {"out": {name: tensor}, "in": {name: tensor}}} of the calls asked for."""
        self.send({"op": "reveal", "calls": calls, "inputs": inputs}, deadline=deadline, timeout_s=timeout_s)
        _, payload = self.recv(("revealed",), deadline, "revealing outputs", max_payload=max_payload,
                               timeout_s=timeout_s)
        return self._tensors(payload, calls, "revealing outputs")

    def _tensors(self, payload: bytes, calls, doing: str) -> dict[int, dict[str, dict]]:
        """{call: {"out": {name: tensor}, "in": {name: tensor}}} from a payload of the calls asked for."""
        out: dict[int, dict[str, dict]] = {i: {"out": {}, "in": {}} for i in calls}
        try:
            tensors = protocol.unpack(payload)
            for key, value in tensors.items():
                index, kind, name = key.split("/", 2)
                if int(index) not in out or kind not in ("out", "in"):
                    raise protocol.ProtocolError(f"a tensor {key[:80]!r} that was not asked for")
                out[int(index)][kind][name] = value
        except (protocol.ProtocolError, ValueError) as exc:
            raise self._fail(exc if isinstance(exc, protocol.ProtocolError) else protocol.ProtocolError(str(exc)),
                             doing) from None
        return out

    def _call_failed(self, status: str, reply: dict, worker_lost: bool = False) -> Failed:
        """`worker_lost`: the worker's marks went astray, so it may hold a call message, or a patch of its own
        messages, the same author's next solution must not inherit: the runner replaces it."""
        cls = ReferenceFailed if self.who == "reference" else Failed
        output = self.worker.log.text()
        return cls(status, protocol.text(reply.get("log")) + (f"\noutput of the process:\n{output}" if output else ""),
                   worker_lost=worker_lost)

    def kill(self) -> None:
        """Kill the worker; first close the handles this process opened into its memory."""
        if self.capture is not None:
            try:
                self.capture.close()
            except CaptureUnavailable:
                pass
        self.worker.kill()

    def close(self) -> None:
        try:
            protocol.send(self.worker.to_child, {"op": "exit"}, deadline=time.monotonic() + 1)
        except (OSError, protocol.Timeout):
            pass
        self.kill()


class Batch(NamedTuple):
    ms: list[float]  # reported per call
    digests: Optional[list[list[str]]]  # committed per call and output (digest mode)
    wall: float  # ms from sending the batch to its answer (and, with a capture, the copy of the outputs)
    outputs: Optional[dict[int, dict[str, dict]]] = None  # captured: {call: {"out": {name: tensor}, "in": {}}}
    marks: Optional[list[float]] = None  # ms since sending: when each call's start and end mark arrived (the CPU)
    used: Optional[Used] = None  # the CPU time its sandbox used from sending the batch to its answer (a CPU cgroup)


class Used(NamedTuple):
    """CPU time (ms) of a worker's sandbox over one batch, read from its cgroup by this process."""
    cpu: float  # every thread of every process of the sandbox, from just before sending the batch to its answer
    calls: Optional[list[float]]  # the reference's worker only: each call's own CPU, as it measured it
    serial: float  # the busiest thread's, plus that of threads that ended meanwhile (known only in sum)
    second: float = 0.0  # the next busiest thread's (of those still running at its end)
    # CPUs' worth of other work on the host meanwhile (the cgroup the worker's was made in, less the sandbox and this
    # process): what makes the same work cost more CPU time (shared caches, a busy sibling core). None: unknown.
    others: Optional[float] = None


def _used(before: Optional[tuple], after: Optional[tuple], calls: Optional[list[float]],
          own: tuple[float, float] = (0.0, 0.0)) -> Optional[Used]:
    """`own`: this process's CPU ms over the batch, and the batch's wall ms."""
    if before is None or after is None:
        return None
    cpu = after[0] - before[0]
    threads = sorted((ms - before[1].get(tid, 0.0) for tid, ms in after[1].items()), reverse=True) + [0.0, 0.0]
    ended = max(cpu - sum(threads), 0.0)
    others = None
    if len(before) > 2 and before[2] is not None and after[2] is not None and own[1] > 0:
        others = max(after[2] - before[2] - cpu - own[0], 0.0) / own[1]
    return Used(cpu, calls, threads[0] + ended, threads[1], others)
