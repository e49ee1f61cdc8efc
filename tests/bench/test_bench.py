"""kerneltrace bench: inputs, tolerances, isolation, atomic append and resume, every planted cheat,
sharding and merge, and the schema of every trace written. Runs on the CPU; GPU-only paths have
their own tests that skip without CUDA (they are not faked)."""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from generator.bench import merge, run_bench
from generator.bench.check import chi2_sf, compare, compare_samples, tolerance_for
from generator.bench.inputs import make_inputs
from generator.bench.plan import make_plan, parse_shard, shard_of
from generator.bench.store import append_line, read_traces
from generator.load import load
from generator.model.errors import KernelTraceError
from generator.validate import validate_path

from dataset_factory import DEFINITION, WORKLOAD, dump, dump_lines, write_dataset

DATASET = Path(__file__).resolve().parents[2] / "dataset"
FAST = {"min_samples": 3, "max_samples": 10, "budget_s": 0.05, "min_batches": 3}
BUNDLED = Path(__file__).resolve().parents[2] / "dataset"
CORRECT = (
    "import torch\n\n"
    "def compute(input, weight, eps):\n"
    "    x = input.float()\n"
    "    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(input.dtype)\n\n"
)


def add_solution(root: Path, name: str, source: str, author: str = "cheat", dps: bool = False,
                 definition: str = "rmsnorm_h128") -> None:
    dump(root / f"solutions/{author}/norm/{definition}/{name}.json", {
        "name": name, "definition": definition, "author": author, "description": f"planted: {name}",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": dps, "dependencies": ["torch"]},
        "sources": [{"path": "main.py", "content": source}]})


def workloads(n: int) -> list[dict]:
    out = []
    for i in range(n):
        w = json.loads(json.dumps(WORKLOAD))
        w["workload"].update(uuid=f"wl-{i:04d}", axes={"batch_size": 1 + 3 * i}, seed=100 + i)
        out.append(w)
    return out


# A solution that writes one raw message to the bench's pipe (fd 4 in the worker), then waits to be killed.
RAW = ("import os, struct, time\n\ndef _raw(head):\n    os.write(4, struct.pack('<QQ', len(head), 0) + head)\n\n"
       "def run(input, weight, eps):\n")
WAIT = "    time.sleep(3600)\n"
HONEST = ("PASSED",)  # a sniffing cheat that finds nothing to sniff computes honestly every call
# A cached answer is wrong in its values, or, when the address was last used by another workload's input, in
# its shape.
CAUGHT_OR_HONEST = ("PASSED", "INCORRECT_NUMERICAL", "INCORRECT_SHAPE")
GARBAGE = "        return torch.empty_like(input).fill_(7.0)\n"
CHEATS = {
    # name: (source, allowed statuses, words the log must contain when not PASSED)
    "mutates_input": (CORRECT + "def run(input, weight, eps):\n    out = compute(input, weight, eps)\n"
                      "    weight.zero_()\n    return out\n", ("REWARD_HACK",), "modified its input"),
    # Caching: every call gets fresh input tensors with new values; an address reused by the allocator
    # returns a stale answer, which a checked call catches.
    "caches_on_data_ptr": (CORRECT + "_cache = {}\n\ndef run(input, weight, eps):\n    key = input.data_ptr()\n"
                           "    if key not in _cache:\n        _cache[key] = compute(input, weight, eps)\n"
                           "    return _cache[key]\n", CAUGHT_OR_HONEST, ("within atol", "has shape")),
    "caches_on_values": (CORRECT + "_cache = {}\n\ndef run(input, weight, eps):\n"
                         "    key = (input.data_ptr(), input._version, float(input[0, 0]), float(input[-1, -1]))\n"
                         "    if key not in _cache:\n        _cache[key] = compute(input, weight, eps)\n"
                         "    return _cache[key]\n", CAUGHT_OR_HONEST, ("within atol", "has shape")),
    # The sandbox holds no dataset: the definition file (with the reference) and the workloads (seeds)
    # are not there to read.
    "calls_reference_file": (
        "import json, pathlib\n\ndef run(input, weight, eps):\n"
        "    d = json.loads(pathlib.Path(DEFINITION_PATH).read_text())\n    ns = {}\n"
        "    exec(d['reference'], ns)\n    return ns['run'](input, weight, eps)\n",
        ("RUNTIME_ERROR",), "No such file"),
    "regenerates_inputs_from_job": (
        "import json, pathlib\n_lines = pathlib.Path(WORKLOADS_PATH).read_text().splitlines()  # seeds, at import\n"
        "def run(input, weight, eps):\n    return input\n", ("COMPILE_ERROR",), "No such file"),
    # The reference lives in another process: no object to find, no frame holding expected outputs.
    "calls_reference_through_gc": (
        "import gc\n\ndef run(input, weight, eps):\n"
        "    ref = next(o for o in gc.get_objects() if callable(o) and getattr(o, '__name__', '') in ('reference', 'run')"
        " and 'kt_reference' in getattr(o, '__module__', ''))\n"
        "    return ref(input, weight, eps)\n", ("RUNTIME_ERROR",), "StopIteration"),
    "reads_expected_from_frame": (
        "import sys, torch\n\ndef run(input, weight, eps):\n    f = sys._getframe(1)\n    while f is not None:\n"
        "        for k in ('expected', 'ref', 'ref_out', 'reference_outputs'):\n"
        "            v = f.f_locals.get(k)\n            if isinstance(v, dict) and 'output' in v:\n"
        "                return v['output']\n        f = f.f_back\n    return torch.zeros_like(input)\n",
        ("INCORRECT_NUMERICAL",), "within atol"),
    # Telling timed calls from checked ones: every call is the same call, so these compute honestly
    # or, where their guess says "timed", return garbage that a randomly checked timed call catches.
    "sniffs_frame": (CORRECT + "import sys\n_first = None\n\ndef run(input, weight, eps):\n    global _first\n"
                     "    sig = []\n    f = sys._getframe(1)\n    while f is not None:\n"
                     "        sig.append((f.f_code.co_name, f.f_lineno))\n        f = f.f_back\n"
                     "    if _first is None:\n        _first = sig\n    if sig != _first:\n" + GARBAGE +
                     "    return compute(input, weight, eps)\n", CAUGHT_OR_HONEST, "within atol"),
    "sniffs_version_identity": (CORRECT + "_seen = set()\n\ndef run(input, weight, eps):\n"
                                "    key = (id(input), input._version)\n    if key in _seen:\n" + GARBAGE +
                                "    _seen.add(key)\n    return compute(input, weight, eps)\n",
                                CAUGHT_OR_HONEST, "within atol"),
    "sniffs_nan_poison": (CORRECT + "def run(input, weight, eps, output):\n    if not torch.isnan(output).all():\n"
                          "        return  # not poisoned: a timed call, skip the work\n"
                          "    output.copy_(compute(input, weight, eps))\n", HONEST, ""),
    # Its error reaches the bench's terminal summary: escape sequences there would change the window title, erase
    # the line and print a fake PASSED line.
    "injects_terminal_escapes": ("import sys\n\ndef run(input, weight, eps):\n"
                                 "    sys.stderr.write('\\x1b]0;pwned\\x07\\x1b[2K\\rPASSED: all good\\n')\n"
                                 "    raise RuntimeError('\\x1b[1A\\x1b[2K\\r\\u202ePASSED fake \\x9b31m')\n",
                                 ("RUNTIME_ERROR",), "PASSED fake"),
    "counts_calls": (CORRECT + "_n = 0\n\ndef run(input, weight, eps):\n    global _n\n    _n += 1\n"
                     "    if _n > 4:\n        return torch.zeros_like(input)\n    return compute(input, weight, eps)\n",
                     ("INCORRECT_NUMERICAL",), "within atol"),
    # Patching the harness from inside: the comparison is not in this process; the clock is bounded
    # from outside (asserted in test_patched_timing_function_is_bounded_by_the_outside_clock).
    "patches_comparison_and_timing": (
        CORRECT + "import generator.bench.check as _c, generator.bench.timing as _t\n"
        "_c.compare = lambda *a, **k: _c.Verdict('PASSED')\n_real = _t.time_calls\n"
        "def _fast(*args, **kwargs):\n    ms, r = _real(*args, **kwargs)\n    return [x / 1000 for x in ms], r\n"
        "_t.time_calls = _fast\n\ndef run(input, weight, eps):\n    import time\n    time.sleep(0.01)\n"
        "    return compute(input, weight, eps)\n", ("PASSED", "REWARD_HACK"), "generator.bench.timing.time_calls"),
    # The worker's own clock (timing.py binds time.perf_counter at import, so patching time.perf_counter does nothing):
    # stopped, every call reads 0.5 us. Plainly patched, the guard names it; patched for the one read that ends each
    # call and restored by it, the guard sees the original, and the outside bound charges the work (10 ms a call).
    "stops_the_workers_clock": (
        CORRECT + "import generator.bench.timing as _t\n_ticks = [0.0]\n\ndef _stopped():\n"
        "    _ticks[0] += 5e-7\n    return _ticks[0]\n\n_t._perf_counter = _stopped\n\n"
        "def run(input, weight, eps):\n    return compute(input, weight, eps)\n", ("REWARD_HACK",),
        "generator.bench.timing._perf_counter"),
    "stops_the_clock_for_one_read": (
        CORRECT + "import time, generator.bench.timing as _t\n_real = _t._perf_counter\n\n"
        "def run(input, weight, eps):\n    start = _real()\n    time.sleep(0.01)\n    out = compute(input, weight, eps)\n"
        "    def _once():\n        _t._perf_counter = _real\n        return start + 5e-7\n"
        "    _t._perf_counter = _once\n    return out\n", HONEST, ""),
    "writes_fake_results_and_exits": (
        "import os\n\ndef run(input, weight, eps):\n"
        "    os.write(4, b'{\"event\": \"result\", \"status\": \"PASSED\", \"performance\": {\"latency_ms\": 1e-9}}\\n')\n"
        "    os._exit(0)\n", ("RUNTIME_ERROR",), "bad message"),
    "forges_messages": (
        CORRECT + "import generator.bench.protocol as p\n\ndef run(input, weight, eps):\n"
        "    out = compute(input, weight, eps)\n"
        "    p.send(4, {'op': 'done', 'ms': 1e-9})\n    p.send(4, {'op': 'outputs'}, p.pack({'output': out}))\n"
        "    return out\n", ("RUNTIME_ERROR",), "bad message"),
    # Outputs that come with the answer (every call compared) are untrusted too: a tensor for a call that was not
    # in the batch is a bad message, not a crash of the run.
    "forges_inline_outputs": (
        CORRECT + "import generator.bench.protocol as p\n_pack = p.pack\n"
        "p.pack = lambda tensors: _pack({'99/out/output': t for t in tensors.values()})\n\n"
        "def run(input, weight, eps):\n    return compute(input, weight, eps)\n", ("RUNTIME_ERROR",),
        ("bad message", "not asked for")),
    # Slowing the reference: it runs in its own process, timed in the same loop.
    "slows_reference_via_torch_op": (
        CORRECT + "import sys, time\n_rsqrt = torch.rsqrt\n\ndef _slow(*a, **k):\n"
        "    if 'reference' in sys._getframe(1).f_globals.get('__name__', ''):\n        time.sleep(0.3)\n"
        "    return _rsqrt(*a, **k)\n\ntorch.rsqrt = _slow\n\ndef run(input, weight, eps):\n"
        "    return compute(input, weight, eps)\n", HONEST, ""),
    # The grandchild leaves the worker's session; the worker then never returns (sleeping: its TIMEOUT
    # and kill are the same as a spinning one's, without 8 CPU-seconds; `hangs` spins).
    "setsid_grandchild": (
        "import subprocess, sys, time\n\ndef run(input, weight, eps):\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', ORPHAN_MARKER],"
        " start_new_session=True)\n    while True:\n        time.sleep(1)\n", ("TIMEOUT",), "limit"),
    "huge_stdout": ("import sys\n\ndef run(input, weight, eps):\n    block = 'x' * (1 << 20) + '\\n'\n"
                    "    for _ in range(64):\n        sys.stdout.write(block)\n    raise RuntimeError('after 64 MiB of output')\n",
                    ("RUNTIME_ERROR",), "earlier bytes of output not kept"),
    "subclassed_output": (CORRECT + "class Lazy(torch.Tensor):\n    def __eq__(self, other):\n        return True\n\n"
                          "def run(input, weight, eps):\n    return compute(input, weight, eps).as_subclass(Lazy)\n",
                          ("REWARD_HACK",), "not a plain torch.Tensor"),
    "lazy_output": (CORRECT + "class Later:\n    def __init__(self, f):\n        self.f = f\n\n"
                    "def run(input, weight, eps):\n    return {'output': Later(lambda: compute(input, weight, eps))}\n",
                    ("REWARD_HACK",), "not a plain torch.Tensor"),
    "patches_timer": (CORRECT + "import time\n_real = time.perf_counter\n\n"
                      "def run(input, weight, eps):\n    time.perf_counter = lambda: _real() / 1000\n"
                      "    return compute(input, weight, eps)\n", ("REWARD_HACK",), "time.perf_counter"),
    "patches_synchronize": (CORRECT + "def run(input, weight, eps):\n"
                            "    torch.cuda.synchronize = lambda *args, **kwargs: None\n"
                            "    return compute(input, weight, eps)\n", ("REWARD_HACK",), "torch.cuda.synchronize"),
    "outlives_call_thread": (CORRECT + "import threading, time\n\ndef run(input, weight, eps):\n"
                             "    out = torch.zeros_like(input)\n"
                             "    def work():\n        time.sleep(0.01)\n        out.copy_(compute(input, weight, eps))\n"
                             "    threading.Thread(target=work).start()\n    return out\n",
                             ("REWARD_HACK",), "left thread"),
    "leaves_outputs_unwritten": (CORRECT + "def run(input, weight, eps, output):\n"
                                 "    output[:-1] = compute(input, weight, eps)[:-1]\n",
                                 ("INCORRECT_NUMERICAL",), "NaN"),
    "wrong_answer": (CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps) * 1.05\n",
                     ("INCORRECT_NUMERICAL",), "within atol"),
    "wrong_shape": (CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)[:, :64]\n",
                    ("INCORRECT_SHAPE",), "shape"),
    "wrong_dtype": (CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps).float()\n",
                    ("INCORRECT_DTYPE",), "dtype"),
    "raises": ("def run(input, weight, eps):\n    raise RuntimeError('boom in the kernel')\n",
               ("RUNTIME_ERROR",), "boom in the kernel"),
    "exits": ("import os\n\ndef run(input, weight, eps):\n    os._exit(3)\n", ("RUNTIME_ERROR",), "exit code 3"),
    "segfaults": ("import ctypes\n\ndef run(input, weight, eps):\n    ctypes.string_at(0)\n", ("RUNTIME_ERROR",), "signal"),
    "hangs": ("def run(input, weight, eps):\n    while True:\n        pass\n", ("TIMEOUT",), "limit"),
    "does_not_compile": ("def run(input, weight, eps:\n    return input\n", ("COMPILE_ERROR",), "SyntaxError"),
    # -- work outside the clock (each sleeps 10 ms where it does the work; a latency under 5 ms is unearned:
    # test_work_outside_the_clock_is_charged_or_caught) --
    # Computes every answer while the worker draws the inputs, before the timed calls.
    "computes_before_the_calls": (
        CORRECT + "import sys, time\n_w = sys.modules['__main__']  # the worker runs as python -m generator.bench.worker\n_answers = {}\n_inputs = _w.Session.inputs\n"
        "def _early(self, *a):\n    args = _inputs(self, *a)\n    time.sleep(0.01)\n"
        "    _answers[id(args[0])] = compute(*args)\n    return args\n_w.Session.inputs = _early\n\n"
        "def run(input, weight, eps):\n    return _answers.pop(id(input))\n", HONEST, ""),
    # Returns garbage fast and computes the real answers only for the calls the harness asks to see,
    # after the batch answered (the commitment made then does not match).
    "computes_after_done_when_revealed": (
        # Where every call's outputs come with the answer (the first batch, small outputs) it computes honestly:
        # at these sizes that is every batch (test_an_answer_changed_after_its_commitment_is_caught forces digests).
        CORRECT + "import sys, time\n_w = sys.modules['__main__']\n_reveal, _batch = _w.Session.reveal, _w.Session.batch\n"
        "_mode = {}\ndef _watch(self, header):\n    _mode['capture'] = header.get('capture')\n    return _batch(self, header)\n"
        "_w.Session.batch = _watch\n"
        "def _late(self, header):\n    for i in header['calls']:\n        call = self.kept[i]\n"
        "        a = call['inputs']\n        time.sleep(0.01)\n"
        "        call['outputs'] = {'output': compute(a['input'], a['weight'], a['eps'])}\n"
        "    return _reveal(self, header)\n_w.Session.reveal = _late\n\n"
        "def run(input, weight, eps):\n    if _mode.get('capture') == 'inline':\n        return compute(input, weight, eps)\n"
        "    return torch.zeros_like(input)\n", ("REWARD_HACK", "PASSED"), "committed"),
    # A Mapping whose item access computes: read when the harness reads the result.
    "lazy_mapping_computes_on_read": (
        CORRECT + "import time\nfrom collections.abc import Mapping\n\nclass Lazy(Mapping):\n"
        "    def __init__(self, f):\n        self.f = f\n    def __getitem__(self, k):\n"
        "        time.sleep(0.01)\n        return self.f()\n    def __iter__(self):\n        return iter(['output'])\n"
        "    def __len__(self):\n        return 1\n\ndef run(input, weight, eps):\n"
        "    return Lazy(lambda: compute(input, weight, eps))\n", HONEST, ""),
    "lazy_list_computes_on_read": (
        CORRECT + "import time\n\nclass Lazy(list):\n    def __init__(self, f):\n        super().__init__([None])\n"
        "        self.f = f\n    def __iter__(self):\n        time.sleep(0.01)\n        return iter([self.f()])\n"
        "    def __len__(self):\n        return 1\n\ndef run(input, weight, eps):\n"
        "    return Lazy(lambda: compute(input, weight, eps))\n", HONEST, ""),
    # Work on a thread that outlives the call (one worker thread, calls queued in order), joined before the
    # worker digests the outputs. (Work overlapped across calls on parallel threads is throughput, not a
    # call's latency: the thread guard names it, and the charge sees only its share per call.)
    "finishes_on_a_thread_before_digest": (
        CORRECT + "import queue, sys, threading, time, generator.bench.protocol as _p\n_jobs = queue.Queue()\n"
        "def _serve():\n    while True:\n        out, args = _jobs.get()\n        time.sleep(0.01)\n"
        "        out.copy_(compute(*args))\n        _jobs.task_done()\n"
        "threading.Thread(target=_serve, daemon=True).start()\n_digest, _pack = _p.digest, _p.pack\n"
        "def _wait(value):\n    _jobs.join()\n    return _digest(value)\n_p.digest = _wait\n"
        "def _wait_pack(tensors):  # small outputs go with the answer: wait before they are packed\n"
        "    _jobs.join()\n    return _pack(tensors)\n_p.pack = _wait_pack\n"
        "_w = sys.modules['__main__']\n_w._threads_left = lambda before: None\n\n"
        "def run(input, weight, eps):\n    out = torch.empty_like(input)\n    _jobs.put((out, (input, weight, eps)))\n"
        "    return out\n", HONEST, ""),
    # -- precomputation from the public seeds: a table of every input set the workload's seed makes --
    "precomputes_from_public_seeds": (
        CORRECT + "from generator.bench.inputs import make_inputs\n_table = {}\nfor seed in (100, 101):\n"
        "    for rows in (1, 4):\n        for index in range(400):\n"
        "            d = {'axes': {'batch_size': {'type': 'var'}, 'hidden_size': {'type': 'const', 'value': 128}},\n"
        "                 'inputs': {'input': {'shape': ['batch_size', 'hidden_size'], 'dtype': 'float16'},\n"
        "                            'weight': {'shape': ['hidden_size'], 'dtype': 'float16'},\n"
        "                            'eps': {'shape': [], 'dtype': 'float32'}}}\n"
        "            w = {'axes': {'batch_size': rows}, 'seed': seed, 'inputs': {'input': {'type': 'random'},\n"
        "                 'weight': {'type': 'random'}, 'eps': {'type': 'scalar', 'value': 1e-5}}}\n"
        "            x = make_inputs(d, w, None, index)\n"
        "            _table[x['input'].numpy().tobytes()] = compute(x['input'], x['weight'], 1e-5)\n\n"
        "def run(input, weight, eps):\n    hit = _table.get(input.numpy().tobytes())\n"
        "    return hit if hit is not None else torch.zeros_like(input)\n",
        ("INCORRECT_NUMERICAL",), "within atol"),
    # -- statistics: wrong answers on every call after the first batch --
    "zeros_after_the_first_batch": (
        CORRECT + "_n = 0\n\ndef run(input, weight, eps):\n    global _n\n    _n += 1\n"
        "    return compute(input, weight, eps) if _n <= 3 else torch.zeros_like(input)\n",
        ("INCORRECT_NUMERICAL",), "within atol"),
    # -- untrusted messages: each writes one bad message where "done" is due, then waits to be killed --
    "message_nested_deep": (RAW + "    _raw(b'{\"op\": \"error\", \"log\": ' + b'[' * 100000 + b']' * 100000 + b'}')\n"
                            + WAIT, ("RUNTIME_ERROR",), "nested too deep"),
    "message_huge_float": (RAW + "    _raw(b'{\"op\": \"done\", \"ms\": [1' + b'0' * 400 + b'], \"digests\": [[\"\"]]}')\n"
                           + WAIT, ("RUNTIME_ERROR",), "bad message"),
    "message_huge_integer": (RAW + "    _raw(b'{\"op\": \"done\", \"ms\": [' + b'7' * 5000 + b'], \"digests\": [[\"\"]]}')\n"
                             + WAIT, ("RUNTIME_ERROR",), "not JSON we accept"),
    "message_lone_surrogate": (RAW + "    _raw(b'{\"op\": \"error\", \"log\": \"boom \\\\ud800 end\"}')\n" + WAIT,
                               ("RUNTIME_ERROR",), "boom"),
    # Stops reading its input pipe: the workload's blob (256 KiB) does not fit the pipe; the bench's
    # write has a deadline.
    "stops_reading_its_pipe": (
        "import time, generator.bench.protocol as _p\n_p.recv = lambda *a, **k: time.sleep(3600)\n\n"
        "def run(input, weight, eps):\n    return input\n", ("TIMEOUT",), "limit"),
    # -- disclosure: what the sandbox lets a solution read goes into its error text, and so into the trace --
    "reads_the_bench_environment": (
        "import os\n\ndef _read(path):\n    try:\n        return open(path, 'rb').read().decode('utf-8', 'replace')\n"
        "    except OSError as e:\n        return f'<{e.strerror}>'\n\n"
        "def run(input, weight, eps):\n    raise RuntimeError('environ: ' + repr(dict(os.environ)) + ' pid1: '\n"
        "                       + _read('/proc/1/environ') + ' shadow: ' + _read('/etc/shadow'))\n",
        ("RUNTIME_ERROR",), "pid1:"),
    # -- resources: memory and /tmp are limited; the pair fails, the bench goes on --
    "fills_tmp": ("import os\n\ndef run(input, weight, eps):\n    with open(os.path.join(os.environ.get('TMPDIR', '/tmp'),"
                  " 'fill'), 'wb') as f:\n        for _ in range(2048):\n            f.write(b'x' * (1 << 20))\n"
                  "    return input\n", ("RUNTIME_ERROR",), "Error"),
    "fills_dev_shm": ("def run(input, weight, eps):\n    for where in ('/dev/shm/fill', '/dev/fill'):\n"
                      "        with open(where, 'wb') as f:\n            for _ in range(2048):\n"
                      "                f.write(b'x' * (1 << 20))\n    return input\n", ("RUNTIME_ERROR",), "Error"),
    "allocates_too_much": ("import torch\n\ndef run(input, weight, eps):\n"
                           "    return torch.empty(1 << 38, dtype=torch.uint8).fill_(1)\n", ("RUNTIME_ERROR",), "Error"),
}
DPS_CHEATS = {"leaves_outputs_unwritten", "sniffs_nan_poison"}
# Cheats that change nothing outside their own module (no patched function, thread, process, file or exit):
# one author runs them all, in one worker, in turn (a worker start is ~1.2 s of this module's time each). What one
# leaves is dropped when the next loads (its module and sys.path entry), so each is still caught on its own;
# the others, which patch, spawn, crash or hang, stand for an attacker each.
PLAIN_CHEATS = {"mutates_input", "injects_terminal_escapes", "caches_on_data_ptr", "caches_on_values", "reads_expected_from_frame", "sniffs_frame",
                "sniffs_version_identity", "counts_calls", "subclassed_output", "lazy_output",
                "leaves_outputs_unwritten", "wrong_answer", "wrong_shape", "wrong_dtype", "raises",
                "does_not_compile", "lazy_mapping_computes_on_read", "lazy_list_computes_on_read",
                "precomputes_from_public_seeds", "zeros_after_the_first_batch"}
# Cheats that lose their worker on the first call run on a copy of the definition with one workload:
# a second workload would only show again that a fresh worker takes the remaining ones (one more
# Python+torch start each, and 4 s more for a timeout). `exits` keeps two workloads and shows it.
ONCE_DEFINITION = "rmsnorm_h128_once"
ONCE = {"forges_messages", "forges_inline_outputs", "writes_fake_results_and_exits", "segfaults", "setsid_grandchild",
        "message_nested_deep", "message_huge_float", "message_huge_integer", "message_lone_surrogate",
        "reads_the_bench_environment", "fills_tmp", "fills_dev_shm", "allocates_too_much", "computes_after_done_when_revealed"}
# These run on a definition whose one workload has a 256 KiB blob input (more than a pipe holds).
BLOB_ONCE = {"stops_reading_its_pipe"}
# Each sleeps 10 ms per call where it does its work, outside the calls' reported time.
OUTSIDE_THE_CLOCK = ("patches_comparison_and_timing", "stops_the_clock_for_one_read", "computes_before_the_calls", "lazy_mapping_computes_on_read",
                     "lazy_list_computes_on_read", "finishes_on_a_thread_before_digest")


def copy_definition(root: Path, name: str, workload: dict) -> None:
    """A copy of rmsnorm_h128 (definition and Einsum cascade) named `name`, with this one workload."""
    d = json.loads((root / "definitions/norm/rmsnorm_h128.json").read_text())
    dump(root / f"definitions/norm/{name}.json", {**d, "name": name})
    dump_lines(root / f"workloads/norm/{name}.jsonl", [{**workload, "definition": name}])
    einsum = root / "einsums/norm/rmsnorm_h128.yaml"
    (einsum.parent / f"{name}.yaml").write_text(einsum.read_text(encoding="utf-8"), encoding="utf-8")


def add_once_definition(root: Path) -> None:
    [w] = workloads(1)
    w["workload"].update(uuid="wl-once", seed=200)
    copy_definition(root, ONCE_DEFINITION, w)


BLOB_DEFINITION = "rmsnorm_h128_blob"


def add_blob_definition(root: Path) -> None:
    """A copy of the definition whose one workload reads its input from a 256 KiB blob."""
    from safetensors.torch import save_file

    blob = f"blob/workloads/norm/{BLOB_DEFINITION}/wl-blob.safetensors"
    (root / blob).parent.mkdir(parents=True, exist_ok=True)
    save_file({"input": torch.randn(1024, 128).half()}, str(root / blob))
    [w] = workloads(1)
    w["workload"].update(uuid="wl-blob", axes={"batch_size": 1024}, seed=300)
    w["workload"]["inputs"]["input"] = {"type": "safetensors", "path": blob, "tensor_key": "input"}
    copy_definition(root, BLOB_DEFINITION, w)


def definition_of(name: str) -> str:
    return BLOB_DEFINITION if name in BLOB_ONCE else ONCE_DEFINITION if name in ONCE else "rmsnorm_h128"


# Run on two workloads, it times out on the first and is not run on the second (one timeout, not one per workload).
SKIPPED_AFTER_TIMEOUT = {"hangs"}


def expected_pairs(name: str) -> int:
    return 1 if name in ONCE | BLOB_ONCE | SKIPPED_AFTER_TIMEOUT else 2
NEEDS_SANDBOX = {"calls_reference_file", "regenerates_inputs_from_job", "setsid_grandchild", "fills_dev_shm",
                 "reads_the_bench_environment", "fills_tmp"}
SECRET = f"kt-bench-secret-{os.getpid()}"  # in the bench's environment during the run: never in a trace
ORPHAN_MARKER = f"kt-orphan-marker-{os.getpid()}"


def marked_processes(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def kt_temp_folders() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("kt-worker-*")}


@pytest.fixture(scope="module")
def benched(tmp_path_factory):
    """One bench run over a dataset with a correct solution and every planted cheat."""
    from generator.bench.sandbox import sandbox_mode

    root = write_dataset(tmp_path_factory.mktemp("bench"), traces=[], workloads=workloads(2))
    add_once_definition(root)
    add_blob_definition(root)
    for name, (source, _, _) in CHEATS.items():
        source = (source.replace("DEFINITION_PATH", repr(str(root / "definitions/norm/rmsnorm_h128.json")))
                  .replace("WORKLOADS_PATH", repr(str(root / "workloads/norm/rmsnorm_h128.jsonl")))
                  .replace("ORPHAN_MARKER", repr(ORPHAN_MARKER)))
        # One worker serves an author's solutions in turn: a cheat that could reach the next stands for an attacker.
        author = "cheat-plain" if name in PLAIN_CHEATS else f"cheat-{name}"
        add_solution(root, name, source, author=author, dps=name in DPS_CHEATS, definition=definition_of(name))
    temps = kt_temp_folders()
    os.environ["KT_BENCH_SECRET"] = SECRET  # what a leak of the bench's environment would show
    try:
        summary = run_bench(root, device="cpu", timeout_s=4, timing=FAST, progress=False, prefetch=True)
    finally:
        del os.environ["KT_BENCH_SECRET"]
    return root, summary, sandbox_mode("cpu")[0], temps


def statuses(summary, solution):
    return [o for o in summary.outcomes if o.pair.solution.name == solution]


def test_correct_solution_passes_with_full_trace(benched):
    root, summary, mode, _ = benched
    good = statuses(summary, "rmsnorm_h128_torch")
    assert [o.status for o in good] == ["PASSED", "PASSED"]
    ev = good[0].record["evaluation"]
    assert ev["correctness"]["input_sets"] >= 3 + 2 and ev["correctness"]["matched_ratio"] == 1.0
    perf = ev["performance"]
    assert perf["timer"] in ("host_perf_counter", "wall_clock_outside_process") and perf["samples"] >= 3
    assert perf["min_ms"] <= perf["latency_ms"] <= perf["max_ms"]
    assert perf["speedup_factor"] == pytest.approx(perf["reference_latency_ms"] / perf["latency_ms"])
    assert ev["environment"]["hardware"].startswith("CPU_") and ev["environment"]["libs"]["torch"] == torch.__version__
    assert ev["environment"]["sandbox"] == mode
    assert "seed" not in ev  # inputs come from secret seeds drawn per call, not from the workload's seed


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_planted_problem_is_caught(benched, name):
    _, summary, mode, _ = benched
    if name in NEEDS_SANDBOX and mode != "bwrap":
        pytest.skip("bubblewrap is missing or refused here: without the sandbox the dataset is readable "
                    "and a setsid grandchild can escape (the bench says so and records sandbox: none)")
    _, allowed, words = CHEATS[name]
    outcomes = statuses(summary, name)
    assert len(outcomes) == expected_pairs(name), "every pair gets a trace, whatever happened"
    for o in outcomes:
        log = o.record["evaluation"]["log"] or ""
        assert o.status in allowed, f"{name}: {o.status} ({log[-500:]})"
        if o.status != "PASSED":  # `words`: what the log says (one of them, where a cheat can be caught two ways)
            assert any(w in log for w in ((words,) if isinstance(words, str) else words)), \
                f"{name}: log does not say {words!r}: {log[-500:]}"


def test_a_hang_costs_one_timeout_and_the_solutions_other_workloads_are_skipped_saying_why(benched):
    _, summary, _, _ = benched
    [o] = statuses(summary, "hangs")
    assert o.status == "TIMEOUT" and o.seconds - o.setup_s < 4 + 3, o  # --timeout 4 in this run, paid once
    skipped = [(what, why) for what, why in summary.plan.skipped if what.startswith("hangs on ")]
    assert len(skipped) == 1 and "ran past the 4 s timeout on workload" in skipped[0][1], skipped
    assert not [p for p in summary.plan.pairs if p.solution.name == "hangs" and p is not o.pair]


def test_nothing_a_solution_wrote_reaches_a_terminal_with_control_characters(benched, capsys):
    """Every pair's log (what the CLI's summary prints) and trace log is free of the characters a terminal acts on
    (escape sequences, carriage returns, C1 controls, bidirectional overrides): injects_terminal_escapes wrote them."""
    from generator.cli import _failure_reason

    _, summary, _, _ = benched
    control = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u202a-\\u202e\\u2066-\\u2069]")
    [o] = [o for o in statuses(summary, "injects_terminal_escapes")][:1]
    assert "PASSED fake" in o.log  # the text is kept, its controls are not
    for o in summary.outcomes:
        for text in (o.log, (o.record or {}).get("evaluation", {}).get("log") or "", _failure_reason(o)):
            assert not control.search(text), (o.pair.solution.name, repr(text[-300:]))


def test_one_worker_serves_an_authors_solutions_in_turn_and_never_another_authors(tmp_path):
    """An author's solutions run one after the other in one worker (one Python and torch start for them all),
    each importing its own files (both have a helper.py: the first's, still imported, would lack `compute`);
    another author's solution gets a worker of its own and sees nothing they left. Each solution raises at
    import where what it finds says otherwise."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    mark = "import os, tempfile\nMARK = os.path.join(tempfile.gettempdir(), 'kt-test-mark')\n"
    solutions = {  # name: (author, main.py, helper.py); they run in this order (author, definition, name)
        "a_first": ("alice", mark + "open(MARK, 'w').close()\nfrom helper import compute_a as compute\n",
                    CORRECT.replace("def compute(", "def compute_a(")),
        "b_second": ("alice", mark + "assert os.path.exists(MARK), 'not in the worker of a_first'\n"
                     "from helper import compute\n", CORRECT),
        "c_other": ("bob", mark + "assert not os.path.exists(MARK), 'in a worker another author used'\n"
                    "from helper import compute\n", CORRECT),
    }
    for name, (author, main, helper) in solutions.items():
        dump(root / f"solutions/{author}/norm/rmsnorm_h128/{name}.json", {
            "name": name, "definition": "rmsnorm_h128", "author": author, "description": "worker reuse",
            "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                     "dependencies": ["torch"]},
            "sources": [{"path": "main.py", "content": main + "\ndef run(input, weight, eps):\n"
                                                             "    return compute(input, weight, eps)\n"},
                        {"path": "helper.py", "content": helper}]})
    summary = run_bench(root, device="cpu", solutions=list(solutions), timeout_s=10, timing=FAST, progress=False)
    assert [(o.pair.solution.name, o.status) for o in summary.outcomes] == [
        ("a_first", "PASSED"), ("b_second", "PASSED"), ("c_other", "PASSED")], [o.log[-300:] for o in summary.outcomes]
    # b_second's worker was a_first's: no start of its own (its setup is its load); c_other's started.
    assert summary.outcomes[1].setup_s < summary.outcomes[2].setup_s


def test_a_file_cannot_claim_another_authors_worker_or_the_baseline(tmp_path, capsys):
    """Workers are shared by author folder, never by the `author` field: a file stored under mallory/ naming
    "author": "baseline" (at import it patches torch.rsqrt to sleep, which in the baselines' worker made the real
    baseline 5x-50x slower) is refused by the bench and by validate, and the leaderboard's baseline is still the
    folder's. A later solution of one author finds nothing of the earlier one's folder."""
    from generator.analyse.leaderboard import definition_leaderboards

    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    claim = ("import time, torch\n_real = torch.rsqrt\n"
             "torch.rsqrt = lambda *a, **k: (time.sleep(0.05), _real(*a, **k))[1]\n" + CORRECT
             + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
    add_solution(root, "claims_the_baseline", claim, author="baseline")
    target = root / "solutions/mallory/norm/rmsnorm_h128/claims_the_baseline.json"
    target.parent.mkdir(parents=True)
    (root / "solutions/baseline/norm/rmsnorm_h128/claims_the_baseline.json").rename(target)
    peek = ("import os\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
            "assert os.listdir(os.path.dirname(HERE)) == [os.path.basename(HERE)], os.listdir(os.path.dirname(HERE))\n"
            + CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
    add_solution(root, "zz_later_baseline", peek, author="baseline")  # runs after rmsnorm_h128_torch, in its worker
    assert any(d.is_error and "is stored in the folder solutions/mallory/" in d.message for d in validate_path(root))
    summary = run_bench(root, device="cpu", timeout_s=10, timing=FAST, progress=False)
    got = {o.pair.solution.name: o for o in summary.outcomes}
    assert set(got) == {"rmsnorm_h128_torch", "zz_later_baseline"}, [o.log[-300:] for o in summary.outcomes]
    assert all(o.status == "PASSED" for o in got.values()), [o.log[-300:] for o in got.values()]
    assert got["zz_later_baseline"].setup_s < 1.0  # it shared the baseline folder's worker (no start of its own)
    [(what, why)] = [x for x in summary.plan.skipped if x[0] == "claims_the_baseline"]
    assert "refused" in why and "solutions/mallory/" in why, why
    perf = got["rmsnorm_h128_torch"].record["evaluation"]["performance"]
    assert perf["latency_ms"] < 25, perf  # no 50 ms sleep of the claimer's in the baseline's calls
    # The leaderboard's baseline is the folder's, whatever a file claims (here: the claimer's traces, planted).
    trace = dict(got["rmsnorm_h128_torch"].record, solution="claims_the_baseline")
    trace["evaluation"] = dict(trace["evaluation"], performance=dict(perf, latency_ms=perf["latency_ms"] * 50))
    dump_lines(root / "traces/mallory/norm/rmsnorm_h128.jsonl", [trace])
    (board,) = definition_leaderboards(load(root), "rmsnorm_h128")
    assert board.baseline in ("rmsnorm_h128_torch", "zz_later_baseline"), board.baseline


def test_a_blob_only_definition_gives_every_call_fresh_rows(tmp_path):
    """A definition whose inputs are all blobs (a captured routing) handed every call the same tensors, so computing
    once gained 13x-110x. Each call now takes the blob's rows (tokens) in a secret order of its own: an answer
    computed once is wrong for the next call, while an honest solution passes."""
    import shutil

    name = "moe_pack_bitmatrix_e32_topk4"
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    for rel in (f"definitions/routing/{name}.json", f"einsums/routing/{name}.yaml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BUNDLED / rel, root / rel)
    lines = [json.loads(x) for x in (BUNDLED / f"workloads/routing/{name}.jsonl").read_text().splitlines()]
    [w] = sorted(lines, key=lambda w: -w["workload"]["axes"]["num_tokens"])[:1]
    blob = w["workload"]["inputs"]["topk_ids"]["path"]
    (root / blob).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(BUNDLED / blob, root / blob)
    dump_lines(root / f"workloads/routing/{name}.jsonl", [w])
    honest = json.loads((BUNDLED / f"solutions/baseline/routing/{name}/{name}_torch.json").read_text())
    body = honest["sources"][0]["content"]
    entry = honest["spec"]["entry_point"].split("::")[1]
    once = body + (f"\n_kept = []\n\ndef once(*args):\n    if not _kept:\n        _kept.append({entry}(*args))\n"
                   "    import copy\n    return copy.deepcopy(_kept[0])\n")
    for sol, src, ep in (("honest_rows", body, entry), ("computes_once", once, "once")):
        data = json.loads(json.dumps(honest))
        data.update(name=sol, author="rows")
        data["sources"][0]["content"] = src
        data["spec"]["entry_point"] = data["spec"]["entry_point"].split("::")[0] + "::" + ep
        data["spec"]["target_hardware"] = ["cpu"]
        dump(root / f"solutions/rows/routing/{name}/{sol}.json", data)
    summary = run_bench(root, device="cpu", definitions=[name], timeout_s=30, timing=FAST, progress=False)
    got = {o.pair.solution.name: o for o in summary.outcomes}
    assert got["honest_rows"].status == "PASSED", got["honest_rows"].log[-400:]
    assert got["computes_once"].status == "INCORRECT_NUMERICAL", (got["computes_once"].status, got["computes_once"].log[-400:])


def test_a_slow_reference_makes_one_correctness_call_and_the_timed_calls_check_the_rest(tmp_path, monkeypatch):
    """Where the reference's first call shows the calls are slow (a timed batch then holds one call), the first
    batch is that one call and the timed batches, every call compared, check the rest: fewer calls for the
    slowest pairs, and a solution wrong after its first call still fails; fast calls get CORRECTNESS_CALLS."""
    from generator.bench.pair import CORRECTNESS_CALLS, WorkloadRun

    untimed = []  # (solution, calls) of each batch whose times are dropped
    real = WorkloadRun.batch

    def batch(self, n, reveal_all, solution_first):
        if reveal_all:
            untimed.append((self.pair.solution.name, n))
        return real(self, n, reveal_all, solution_first)
    monkeypatch.setattr(WorkloadRun, "batch", batch)

    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    d = json.loads((root / "definitions/norm/rmsnorm_h128.json").read_text())
    d["reference"] = d["reference"].replace("def run(input, weight, eps):\n",
                                            "def run(input, weight, eps):\n    import time\n    time.sleep(0.03)\n")
    dump(root / "definitions/norm/rmsnorm_h128.json", d)
    add_solution(root, "wrong_after_first", CORRECT + "_n = 0\n\ndef run(input, weight, eps):\n    global _n\n"
                 "    _n += 1\n    return compute(input, weight, eps) if _n == 1 else torch.zeros_like(input)\n")
    timing = {**FAST, "budget_s": 0.1}  # slow: a reference call over budget_s / 4
    summary = run_bench(root, device="cpu", timeout_s=20, timing=timing, progress=False)
    outcomes = {o.pair.solution.name: o for o in summary.outcomes}
    honest = outcomes["rmsnorm_h128_torch"].record["evaluation"]
    assert outcomes["rmsnorm_h128_torch"].status == "PASSED"
    assert ("rmsnorm_h128_torch", 1) in untimed and ("rmsnorm_h128_torch", CORRECTNESS_CALLS - 1) not in untimed
    assert honest["correctness"]["input_sets"] >= 1 + FAST["min_batches"], honest  # the timed calls were compared
    assert outcomes["wrong_after_first"].status == "INCORRECT_NUMERICAL", outcomes["wrong_after_first"].log
    untimed.clear()
    fast = write_dataset(tmp_path / "fast", traces=[], workloads=workloads(1))  # the reference as it is: fast
    run_bench(fast, device="cpu", timeout_s=20, timing=FAST, progress=False)
    assert untimed == [("rmsnorm_h128_torch", 1), ("rmsnorm_h128_torch", CORRECTNESS_CALLS - 1)]


def test_an_answer_changed_after_its_commitment_is_caught(tmp_path, monkeypatch):
    """Where a batch's outputs are too large to come with its answer, the worker commits to each by digest and
    reveals the chosen calls later: an output computed only when revealed is not the one committed."""
    import generator.bench.pair as pair

    monkeypatch.setattr(pair, "REVEAL_ALL_BYTES", 0)  # every timed batch commits by digest
    monkeypatch.setattr(pair, "MIN_CHECKED", 1)  # and reveals one call of its four
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    name = "computes_after_done_when_revealed"
    add_solution(root, name, CHEATS[name][0])
    [o] = run_bench(root, device="cpu", solutions=[name], timeout_s=10, timing=FAST, progress=False).outcomes
    assert o.status == "REWARD_HACK" and "not the one committed" in o.log, (o.status, o.log[-500:])


@pytest.mark.parametrize("name", OUTSIDE_THE_CLOCK)
def test_work_outside_the_clock_is_charged(benched, name):
    """Each of these does 10 ms of work per call where the worker's clock does not see it: before the
    calls (while the inputs are drawn), in a patched clock, when the harness reads a lazy result, on a
    thread joined before the digests. The batch's wall clock outside the process, less the harness's
    own work measured on the reference's worker, charges it back beyond the tolerance for a busy host's noise
    (on the CPU 5 ms a batch, 2.5 ms a call at these batch sizes): no latency under 5 ms."""
    _, summary, _, _ = benched
    outcomes = statuses(summary, name)
    assert outcomes
    for o in outcomes:
        ev = o.record["evaluation"]
        if o.status == "PASSED":
            assert ev["performance"]["latency_ms"] >= 5.0, (name, ev["performance"], ev["log"])
        else:
            assert o.status == "REWARD_HACK", (name, o.status, ev["log"])


# Every input set of a batch is drawn before its first call: this one finds the batch's other sets (its caller's
# frame holds them), answers them all in the first call and returns those answers at once in the others. The first
# call of a batch is no sample and the median of the others is nothing. Each answer costs WORK_MS (its honest twin
# spends it in every call).
WORK_MS = 2
BATCH_IN_ONE_CALL = (
    CORRECT + "import sys, time\n_answers = {}  # id -> (the input, kept alive so that its id is not reused; answer)\n\n"
    "def _batch():\n    f = sys._getframe(2)\n    while f is not None:\n        sets = f.f_locals.get('sets')\n"
    "        if isinstance(sets, list):\n            return sets\n        f = f.f_back\n    return []\n\n"
    "def run(input, weight, eps):\n"
    "    held = _answers.pop(id(input), None)\n    if held is not None and held[0] is input:\n        return held[1]\n"
    "    _answers.clear()\n    for args in _batch():\n        if args[0] is not input:\n"
    f"            time.sleep({WORK_MS / 1e3})\n            _answers[id(args[0])] = (args[0], compute(*args))\n"
    f"    time.sleep({WORK_MS / 1e3})\n    return compute(input, weight, eps)\n")


# A batch's elementwise inputs were windows of one stream drawn once per batch: this one finds a 1-D tensor longer than
# its input in its callers' frames (a few containers deep), pays WORK_MS once per such stream and answers cheaply.
STREAM_ONCE = (
    CORRECT + "import sys, time\n_done = {}  # id -> the stream it paid for (kept alive)\n\n"
    "def _stream(input):\n    todo, f = [], sys._getframe(2)\n    while f is not None:\n"
    "        todo += list(f.f_locals.values())\n        f = f.f_back\n    for _ in range(3):\n        deeper = []\n"
    "        for v in todo:\n            if isinstance(v, torch.Tensor) and v.dim() == 1 and v.numel() > input.numel():\n"
    "                return v\n            if isinstance(v, dict):\n                deeper += list(v.values())\n"
    "            elif isinstance(v, (list, tuple)):\n                deeper += list(v)\n        todo = deeper\n"
    "    return None\n\n"
    "def run(input, weight, eps):\n    s = _stream(input)\n    if s is None or id(s) not in _done:\n"
    f"        time.sleep({WORK_MS / 1e3})\n        _done.clear()\n        if s is not None:\n            _done[id(s)] = s\n"
    "    return compute(input, weight, eps)\n")


def test_a_batch_answered_in_one_call_is_charged(tmp_path):
    """The batch's time beyond n times its median call, beyond the reference's spread and the harness's work, is
    charged: the cheat's latency is its honest twin's (WORK_MS a call), not the nothing of its median call. In the
    same run, a solution that computes a batch's stream of elementwise inputs once (they were windows of one stream
    per batch: 2.8x to 7.5x) finds no stream (each call draws from seeds of its own) and pays its twin's cost."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    add_solution(root, "batch_in_one_call", BATCH_IN_ONE_CALL, author="cheater")
    add_solution(root, "computes_the_stream_once", STREAM_ONCE, author="streamer")
    add_solution(root, "honest_twin", CORRECT + "import time\n\ndef run(input, weight, eps):\n"
                 f"    time.sleep({WORK_MS / 1e3})\n    return compute(input, weight, eps)\n", author="honest")
    timing = {"min_samples": 5, "max_samples": 30, "budget_s": 0.5, "min_batches": 3}  # batches of ten calls or so
    summary = run_bench(root, device="cpu", timeout_s=20, timing=timing, progress=False,
                        solutions=["batch_in_one_call", "honest_twin", "computes_the_stream_once"])
    got = {o.pair.solution.name: o for o in summary.outcomes}
    honest = got["honest_twin"].record["evaluation"]["performance"]["latency_ms"]
    assert got["honest_twin"].status == "PASSED" and honest >= WORK_MS
    stream = got["computes_the_stream_once"]
    assert stream.status == "PASSED", stream.log[-400:]
    assert stream.record["evaluation"]["performance"]["latency_ms"] >= 0.8 * honest, stream.record["evaluation"]
    cheat = got["batch_in_one_call"]
    assert cheat.status in ("PASSED", "REWARD_HACK"), cheat.log
    if cheat.status == "PASSED":
        # Each call's input set is drawn just before it: the first call finds no later set to answer ahead, so the
        # cheat pays its honest twin's cost call by call (before, it found them all and the bound charged ~2/3 back).
        assert cheat.record["evaluation"]["performance"]["latency_ms"] >= 0.8 * honest, cheat.record["evaluation"]


def test_a_stopped_clock_cannot_hide_a_millisecond_a_call_at_the_cpu_default_timing(tmp_path):
    """The CPU's slack for a busy host is 5 ms a batch: in batches of 5 calls it forgave 1 ms a call, so a kernel under
    that which stops the worker's clock for the one read that ends each call reported what it liked. Batches as long as
    a quarter of the budget allows (CPU_TIMING, the default here) charge it back: judged against its honest twin."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    work = "    time.sleep(0.001)\n    out = compute(input, weight, eps)\n"
    add_solution(root, "honest_ms", CORRECT + "import time\n\ndef run(input, weight, eps):\n" + work + "    return out\n",
                 author="honest")
    add_solution(root, "stops_the_clock_ms", CORRECT + "import time, generator.bench.timing as _t\n_real = _t._perf_counter\n\n"
                 "def run(input, weight, eps):\n    start = _real()\n" + work +
                 "    def _once():\n        _t._perf_counter = _real\n        return start + 5e-7\n"
                 "    _t._perf_counter = _once\n    return out\n", author="stopper")
    summary = run_bench(root, device="cpu", timeout_s=30, progress=False, solutions=["honest_ms", "stops_the_clock_ms"])
    got = {o.pair.solution.name: o.record["evaluation"] for o in summary.outcomes}
    honest, cheat = (got[n]["performance"]["latency_ms"] for n in ("honest_ms", "stops_the_clock_ms"))
    assert honest >= 1.0 and cheat >= 0.5 * honest, (honest, cheat, got["stops_the_clock_ms"]["log"])


def test_the_outside_bound_charges_beyond_the_harness_noise_only():
    """charge() on GPU-like numbers: a harness whose work varies by milliseconds a call (copying and hashing
    large outputs) charges no honest batch, while work hidden in every batch beyond that noise is charged."""
    from types import SimpleNamespace

    from generator.bench.pair import WorkloadRun

    run = SimpleNamespace(opts=SimpleNamespace(device="cuda"), notes=[])
    harness = [6.6, 9.0, 7.7, 8.3, 7.1]  # the reference's gaps, ms a call
    calls = [[0.08] * 40 for _ in harness]  # an 80 us kernel
    honest = WorkloadRun.charge(run, calls, [8.9, 6.9, 9.2, 7.4, 8.0], harness)
    assert statistics.median(honest) == pytest.approx(0.08) and not run.notes
    hiding = WorkloadRun.charge(run, calls, [g + 5.0 for g in (8.9, 6.9, 9.2, 7.4, 8.0)], harness)
    assert statistics.median(hiding) > 1.0 and "charged" in run.notes[-1]
    # On the CPU one slow reference batch does not widen the bound: 5 ms hidden a call is charged nearly whole.
    run = SimpleNamespace(opts=SimpleNamespace(device="cpu"), notes=[])
    steady = [1.0, 1.0, 1.1, 1.0, 9.0]  # one reference batch slowed by the host
    hidden = WorkloadRun.charge(run, calls, [6.0] * 5, steady)
    assert statistics.median(hidden) > 4.5 and "charged" in run.notes[-1]


def test_no_reported_time_breaks_the_dataset(tmp_path):
    """On hardware without a spec there is no speed-of-light floor: a call reported as 5e-324 ms made the speedup
    infinite and the trace was written with Infinity, which every later kerneltrace run refused. Reported calls are
    raised to MIN_CALL_MS, and the store writes no NaN or Infinity."""
    import math
    from types import SimpleNamespace

    from generator.bench.pair import MIN_CALL_MS, WorkloadRun
    from generator.bench.store import append_line

    run = SimpleNamespace(opts=SimpleNamespace(device="cpu"), notes=[], floor_ms=0.0)
    solution, ref = WorkloadRun.stats(run, [5e-324] * 5, [0.02] * 5)
    assert solution["latency_ms"] >= MIN_CALL_MS and math.isfinite(ref["latency_ms"] / solution["latency_ms"])
    assert "raised" in run.notes[-1]
    with pytest.raises(ValueError):
        append_line(tmp_path / "t.jsonl", {"speedup_factor": math.inf})
    assert not (tmp_path / "t.jsonl").exists()


def test_cuda_batches_start_with_the_warm_up_and_both_workers_get_it(tmp_path):
    """Every worker's load message carries the timing's warm-up (the reference's and the solution's alike, so
    both are timed with the clocks up), and the flush repeated for it keeps the device busy at least that long
    at a full-speed write rate; the CPU gets none."""
    from types import SimpleNamespace

    from generator.bench import CPU_TIMING, CUDA_TIMING
    from generator.bench.runner import Options, _load_message
    from generator.bench.timing import WRITE_BYTES_PER_MS, L2Flusher

    root = write_dataset(tmp_path)
    pair = make_plan(load(root), "cpu").pairs[0]
    for reference in (True, False):
        assert _load_message(pair, Options(device="cuda", timing=CUDA_TIMING), reference)["warmup_ms"] == 10.0
        assert _load_message(pair, Options(device="cpu", timing=CPU_TIMING), reference)["warmup_ms"] == 0.0
    flusher = L2Flusher.__new__(L2Flusher)
    flusher.buffer = torch.empty(256 * 2**20 // 4, dtype=torch.int32)
    n = flusher.launches(30.0)
    assert n * 256 * 2**20 / WRITE_BYTES_PER_MS >= 30.0 > (n - 1) * 256 * 2**20 / WRITE_BYTES_PER_MS
    assert flusher.launches(0.0) == 0
    calls = []
    flusher.buffer = SimpleNamespace(numel=lambda: 2**26, zero_=lambda: calls.append(1))
    flusher.warm(30.0)
    assert len(calls) == flusher.launches(30.0) > 0


def test_digest_stages_hold_their_values_with_alignment():
    """_stages packs values as _to_host lays them out (each 64-byte aligned), so no stage overflows its
    page-locked buffer; digest_rows equals digest() value by value on the threaded path."""
    from generator.bench import protocol

    values = [torch.zeros(n, dtype=torch.uint8) for n in (1, 63, 65, 2**20, 7, 3 * 2**20)]
    for stage in protocol._stages(values):
        assert sum(-(-v.numel() // 64) * 64 for v in stage) <= protocol.STAGE_BYTES or len(stage) == 1
    rows = [[torch.randn(2**20), torch.arange(5)], [torch.randn(3, 2**19).to(torch.bfloat16), torch.ones(0)]]
    assert protocol.digest_rows(rows) == [[protocol.digest(v) for v in row] for row in rows]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_device_digests_through_the_page_locked_stage_match_host_digests(monkeypatch):
    from generator.bench import protocol

    monkeypatch.setattr(protocol, "STAGE_BYTES", 2**20)
    monkeypatch.setattr(protocol, "_STAGING", None)
    rows = [[torch.randn(100_003, device="cuda"), torch.arange(77, device="cuda", dtype=torch.int16)],
            [torch.randn(3, 2**18, device="cuda").to(torch.bfloat16), torch.ones(0, device="cuda")],
            [torch.randn(2**19, device="cuda"), torch.ones(3, dtype=torch.bool, device="cuda")]]
    assert protocol.digest_rows(rows) == [[protocol.digest(v.cpu()) for v in row] for row in rows]


def test_output_descriptors_from_a_worker_are_untrusted_input():
    """capture.Capture.read refuses every malformed descriptor before it touches device memory: wrong arity or
    types, a dtype no definition uses, a byte count that is not the shape's, a range outside what the handle maps;
    and protocol.rows refuses a reply of the wrong shape. Each is the pair's RUNTIME_ERROR (ProtocolError)."""
    from generator.bench import protocol
    from generator.bench.capture import Capture

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
    from generator.bench.capture import handle_bytes, make_handle

    for raw in (bytes(64), bytes(range(64)), b"\x01" + bytes(62) + b"\xff"):
        assert handle_bytes(make_handle(raw)) == raw and len(handle_bytes(make_handle(raw)).hex()) == 128
    with pytest.raises(protocol.ProtocolError):
        protocol.rows({"outputs": [[good]] * 3}, "outputs", 4, 1)
    with pytest.raises(protocol.ProtocolError):
        protocol.rows({"outputs": [[good, good]] * 4}, "outputs", 4, 1)
    assert protocol.rows({"outputs": [[good]] * 4}, "outputs", 4, 1) == [[good]] * 4


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

    from generator.bench import protocol
    from generator.bench.remote import Remote

    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()

    def worker():
        header, _ = protocol.recv(to_r, ("batch",))
        protocol.send(from_w, reply(header))

    threading.Thread(target=worker, daemon=True).start()
    remote = Remote.__new__(Remote)
    remote.who, remote.names, remote.phases = who, ["output"], []
    remote.worker = SimpleNamespace(to_child=to_w, from_child=from_r, kill=lambda: None, how_it_ended=lambda: "killed",
                                    proc=SimpleNamespace(wait=lambda timeout: 0), log=SimpleNamespace(text=lambda: ""))
    remote.capture = _Registry()
    return remote


def test_a_captured_batch_reads_only_the_chosen_calls_and_refuses_a_malformed_answer():
    """Remote.batch with a capture: the outputs of the chosen calls (and only those) are read the moment the
    answer arrives and come back as host tensors; no digests are asked for; an answer whose outputs are not one
    row per call is the pair's RUNTIME_ERROR, and for the (trusted) reference it marks the capture as broken."""
    from generator.bench.remote import Failed

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


def test_the_runner_compares_captured_outputs_without_asking_the_solution_to_reveal(tmp_path):
    """WorkloadRun.batch with captures on both sides: the captured outputs are compared as they are (the
    solution is never asked to reveal), the same choice of calls is passed to both, and a wrong captured
    answer fails the pair."""
    import random
    from types import SimpleNamespace

    from generator.bench.pair import WorkloadRun
    from generator.bench.remote import Batch, Failed
    from generator.bench.runner import Options

    root = write_dataset(tmp_path, workloads=workloads(1))
    pair = make_plan(load(root), "cpu").pairs[0]
    shape = (int(pair.workload.axes["batch_size"]), 128)
    right = torch.randn(shape).to(torch.float16)
    seen = {}

    def fake(who, value):
        def batch(calls, deadline, timeout_s, chosen=(), inline=0, marks=False):
            seen[who] = list(chosen)
            return Batch([0.01] * len(calls), None, 0.1 * len(calls),
                         {i: {"out": {"output": value.clone()}, "in": {}} for i in chosen})

        def reveal(*args):
            raise AssertionError(f"{who} was asked to reveal")
        return SimpleNamespace(who=who, batch=batch, reveal=reveal)

    run = WorkloadRun(pair, Options(device="cpu"), root, fake("solution", right), fake("reference", right), random.Random(1))
    run.batch(12, False, True)
    assert seen["solution"] == seen["reference"] and len(seen["solution"]) in (4, 12)
    wrong = WorkloadRun(pair, Options(device="cpu"), root, fake("solution", torch.zeros(shape, dtype=torch.float16)),
                        fake("reference", right), random.Random(1))
    with pytest.raises(Failed) as caught:
        wrong.batch(12, False, True)
    assert caught.value.status == "INCORRECT_NUMERICAL" and "copied out as it answered" in caught.value.log


def test_capture_is_probed_once_on_the_reference_worker_and_falls_back_to_digests(monkeypatch, capsys):
    """On CUDA the first reference worker is asked whether the trusted process can read its memory; a "no"
    makes the whole run commit by digest (said on stderr, and in each trace's environment.outputs), a "yes"
    gives every worker a capture; the CPU never probes."""
    from types import SimpleNamespace

    from generator.bench import capture, runner

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


def test_honest_solutions_are_not_distorted(tmp_path):
    """The outside bound charges only work hidden from the clock: honest solutions (the reference's own
    code, and a different correct one) keep medians near the reference's, in a run as the CLI makes it on
    the CPU (no worker started alongside the timed batches). A charge of the harness's own work would
    add ~0.3 ms per call here, several times these kernels' time."""
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    add_solution(root, "honest_other", CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
    summary = run_bench(root, device="cpu", timing={**FAST, "max_samples": 20}, progress=False)
    assert len(summary.outcomes) == 4
    for o in summary.outcomes:
        perf = o.record["evaluation"]["performance"]
        assert o.status == "PASSED" and perf["latency_ms"] < 3 * perf["reference_latency_ms"] + 0.05, \
            (o.pair.solution.name, perf, o.record["evaluation"]["log"])


@pytest.mark.parametrize("stalled", ["first pass", "every pass"])
def test_a_host_that_stalls_some_batches_is_re_measured_then_marked(tmp_path, monkeypatch, stalled):
    """A host that stalls a process slows a whole batch: its calls agree with each other (a tight spread), not with
    the other batches. Simulated here by slowing one timed batch of the solution in six 20-fold (its calls and its wall
    clock), too few samples for the spread rule to see: the jump between batches has the pair measured again; where
    the stall is gone the second measurement is ranked, where it stays the trace is marked unstable (issue 37: four
    disturbed baseline traces, 17x to 71x their reference, were ranked)."""
    from generator.bench.pair import WorkloadRun
    from generator.model.stability import batches_jump

    assert batches_jump([1.0, 1.2, 0.9]) is False and batches_jump([1.0, 48.0, 1.1]) is True
    assert batches_jump([1.0], [2.0, 2.2], [0.5, 0.45]) is False and batches_jump([1.0, 1.1], [1.0, 0.0]) is True
    real_batch, real_timed, passes = WorkloadRun.batch, WorkloadRun.timed, []

    def timed(self, n):
        passes.append(self.batches + 2)  # the second timed batch of this pass
        return real_timed(self, n)

    def batch(self, n, reveal_all, solution_first):
        s, r, s_wall, r_wall = real_batch(self, n, reveal_all, solution_first)
        if passes and self.batches == passes[-1] and (stalled == "every pass" or len(passes) == 1):
            return [x * 20 for x in s], r, s_wall + 19 * sum(s), r_wall
        return s, r, s_wall, r_wall
    monkeypatch.setattr(WorkloadRun, "batch", batch)
    monkeypatch.setattr(WorkloadRun, "timed", timed)
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    [o] = run_bench(root, device="cpu", timing={**FAST, "min_batches": 6, "max_samples": 12}, progress=False).outcomes
    perf, log = o.record["evaluation"]["performance"], o.record["evaluation"]["log"]
    # (On a busy host the spread rule may see the host's own noise first; either way the pair is measured again.)
    assert o.status == "PASSED" and "measured again" in log, log
    if stalled == "every pass":
        assert perf.get("unstable") is True and "not ranked" in log, (perf, log)
    elif not perf.get("unstable"):  # ranked: the stall is not in the number
        assert perf["latency_ms"] < 3 * perf["reference_latency_ms"] + 0.05, (perf, log)


def test_no_committed_stable_baseline_trace_is_far_slower_than_the_reference_beside_it():
    """A baseline is the definition's reference in eager torch: timed beside it in one pair, it cannot be several
    times slower unless the host disturbed the pair. Such a trace must be re-measured or marked unstable (issue 37)."""
    from generator.model.contender_kinds import BASELINE_AUTHOR
    from generator.model.evaluation import performance_is_unstable

    far = []
    for path in sorted((BUNDLED / "traces" / BASELINE_AUTHOR).rglob("*.jsonl")):
        for t in read_traces(path):
            perf = t["evaluation"].get("performance")
            if t["evaluation"]["status"] == "PASSED" and perf and not performance_is_unstable(perf) \
                    and perf["latency_ms"] > 5 * perf["reference_latency_ms"]:
                far.append(f"{path.relative_to(BUNDLED)}: {t['solution']} {t['workload']['axes']} {perf['latency_ms']:.3g} ms "
                           f"vs reference {perf['reference_latency_ms']:.3g} ms")
    assert not far, "\n".join(far)


def test_no_trace_holds_the_bench_environment_or_host_secrets(benched):
    root, summary, mode, _ = benched
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "traces").rglob("*.jsonl")))
    assert SECRET not in text, "the bench's environment reached a trace"
    if mode == "bwrap":
        [o] = statuses(summary, "reads_the_bench_environment")
        log = o.record["evaluation"]["log"]
        assert "pid1:" in log and "shadow: <No such file" in log, log[-600:]


def test_slowed_reference_does_not_fake_a_speedup(benched):
    _, summary, _, _ = benched
    for o in statuses(summary, "slows_reference_via_torch_op"):
        perf = o.record["evaluation"]["performance"]
        assert perf["reference_latency_ms"] < 150, perf  # the 300 ms sleep per reference call is not there


def test_no_process_or_temp_folder_is_left(benched):
    _, _, mode, temps_before = benched
    assert kt_temp_folders() <= temps_before
    if mode == "bwrap":
        deadline = time.monotonic() + 10
        while marked_processes(ORPHAN_MARKER) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not marked_processes(ORPHAN_MARKER), "a setsid grandchild outlived its sandbox"


def test_every_trace_written_is_valid(benched):
    root, summary, _, _ = benched
    assert len(summary.outcomes) == 2 + sum(expected_pairs(name) for name in CHEATS)
    # (The validator rightly rejects the planted solution that does not compile; traces must be clean.)
    errors = [d for d in validate_path(root) if d.is_error and d.file.startswith("traces/")]
    assert not errors, "\n".join(str(d) for d in errors[:5])
    lines = [r for p in sorted((root / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    assert len(lines) == len(summary.outcomes)


# --------------------------------------------------------------------------------------------------
# Inputs and tolerances
# --------------------------------------------------------------------------------------------------

def test_inputs_are_seeded_and_sets_differ(tmp_path):
    root = write_dataset(tmp_path)
    d, w = DEFINITION, WORKLOAD["workload"]
    a, b = make_inputs(d, w, root, 0, "cpu"), make_inputs(d, w, root, 0, "cpu")
    c = make_inputs(d, w, root, 1, "cpu")
    assert torch.equal(a["input"], b["input"]) and not torch.equal(a["input"], c["input"])
    assert a["input"].dtype == torch.float16 and a["input"].shape == (4, 128) and a["eps"] == 1e-5
    blob_w = json.loads((root / "workloads/norm/rmsnorm_h128.jsonl").read_text().splitlines()[1])["workload"]
    blob = make_inputs(d, blob_w, root, 0, "cpu")
    assert torch.equal(blob["input"], make_inputs(d, blob_w, root, 2, "cpu")["input"])  # blobs do not vary


def test_special_input_distributions(tmp_path):
    d = {"name": "x", "axes": {"b": {"type": "const", "value": 3}, "v": {"type": "const", "value": 50}},
         "inputs": {"probs": {"shape": ["b", "v"], "dtype": "float32"},
                    "a_scale": {"shape": ["b"], "dtype": "float32"},
                    "q": {"shape": ["b", "v"], "dtype": "float8_e4m3"}}}
    w = {"axes": {}, "inputs": {k: {"type": "random"} for k in d["inputs"]}, "seed": 1}
    x = make_inputs(d, w, tmp_path, 0, "cpu")
    assert torch.allclose(x["probs"].sum(-1), torch.ones(3)) and (x["probs"] >= 0).all()
    assert (x["a_scale"] > 0).all()
    assert torch.isfinite(x["q"].float()).all()


def test_tolerance_is_per_dtype():
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "bfloat16"}}}
    e = torch.linspace(1, 2, 64)
    one_ulp = (e * (1 + 2**-8)).to(torch.bfloat16)  # within half an ulp of bf16 rounding
    assert compare(d, {"o": one_ulp}, {"o": e}, {"n": 64}).ok
    assert not compare(d, {"o": (e * 1.05).to(torch.bfloat16)}, {"o": e}, {"n": 64}).ok
    d16 = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float16"}}}
    assert not compare(d16, {"o": (e * 1.01).half()}, {"o": e}, {"n": 64}).ok  # fine for bf16, not for fp16
    assert tolerance_for("t", "o", "float16").rtol < tolerance_for("t", "o", "bfloat16").rtol
    di = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "int32"}}}
    ids = torch.arange(64, dtype=torch.int32)
    assert compare(di, {"o": ids}, {"o": ids}, {"n": 64}).ok
    assert not compare(di, {"o": ids + (ids == 5).int()}, {"o": ids}, {"n": 64}).ok


def test_nan_where_reference_is_finite_fails_and_matched_ratio_is_recorded():
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "float32"}}}
    e = torch.ones(10)
    a = e.clone()
    a[3] = float("nan")
    v = compare(d, {"o": a}, {"o": e}, {"n": 10})
    assert v.status == "INCORRECT_NUMERICAL" and "NaN" in v.message and v.matched_ratio == pytest.approx(0.9)


def test_sampling_is_checked_statistically():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(4, 20, generator=g) * 2, -1)
    d = {"name": "s", "outputs": {"samples": {"shape": ["b"], "dtype": "int64"}}}

    def draws(fn, n=400):
        return [{"samples": fn()} for _ in range(n)]

    ref = draws(lambda: torch.multinomial(probs, 1, generator=g).squeeze(1))
    same = draws(lambda: torch.multinomial(probs, 1, generator=g).squeeze(1))
    greedy = draws(lambda: probs.argmax(-1))
    assert compare_samples(d, same, ref, probs).ok
    assert compare_samples(d, greedy, ref, probs).status == "INCORRECT_NUMERICAL"
    zero = probs.clone()
    zero[:, 0] = 0
    forced = draws(lambda: torch.zeros(4, dtype=torch.int64))
    assert "probability 0" in compare_samples(d, forced, ref, zero).message
    assert chi2_sf(10.0, 10) == pytest.approx(0.44, abs=0.02)  # table value 0.4405


def test_draws_on_a_fresh_input_set_each_are_compared_by_their_ranks():
    """Timed sampler calls each have an input set of their own: the ranks of the drawn tokens in their rows follow one
    distribution for the reference and a right sampler over the same sets; greedy, or a sampler that flattens the row
    (sampling p^0.5), does not."""
    from generator.bench.check import draw_ranks, two_sample_chi2

    g = torch.Generator().manual_seed(1)
    d = {"name": "s", "outputs": {"samples": {"shape": ["b"], "dtype": "int64"}}}
    sets = [{"probs": torch.softmax(torch.randn(4, 50, generator=g) * 2, -1)} for _ in range(300)]

    def p_value(pick):
        draws = [{"samples": pick(s["probs"])} for s in sets]
        ref = [{"samples": torch.multinomial(s["probs"], 1, generator=g).squeeze(1)} for s in sets]
        return chi2_sf(*two_sample_chi2(draw_ranks(d, draws, sets), draw_ranks(d, ref, sets)))

    assert p_value(lambda p: torch.multinomial(p, 1, generator=g).squeeze(1)) > 1e-3
    assert p_value(lambda p: p.argmax(-1)) < 1e-6
    assert p_value(lambda p: torch.multinomial(p.sqrt(), 1, generator=g).squeeze(1)) < 1e-3


# --------------------------------------------------------------------------------------------------
# Atomic append, kill and resume
# --------------------------------------------------------------------------------------------------

def test_append_cuts_a_torn_last_line(tmp_path):
    path = tmp_path / "t.jsonl"
    append_line(path, {"a": 1})
    with open(path, "ab") as f:
        f.write(b'{"a": 2, "half')  # what a kill during a write would leave
    assert append_line(path, {"a": 3}) == len(b'{"a": 2, "half')
    assert [json.loads(x) for x in path.read_text().splitlines()] == [{"a": 1}, {"a": 3}]


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_kill_9_of_the_bench_leaves_no_process_and_resume_finishes(tmp_path):
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(8))
    add_solution(root, "slow", CORRECT + "import time\n\ndef run(input, weight, eps):\n    time.sleep(0.05)\n"
                 "    return compute(input, weight, eps)\n", author="baseline")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "generator.cli", "bench", "--dataset", str(root), "--out", str(out),
           "--solutions", "slow", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trace_file = out / "traces/baseline/norm/rmsnorm_h128.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if trace_file.is_file() and len(trace_file.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    workers = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)  # the bench alone, mid-run: its workers must follow it
    proc.wait()
    assert workers, "the bench had no worker to kill: the test proves nothing"
    deadline = time.monotonic() + 20
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in workers if alive(p)], "a worker outlived the bench's kill -9"
    first = trace_file.read_text(encoding="utf-8").splitlines()
    assert 2 <= len(first) < 8, "killed too late to test anything"
    assert all(json.loads(line)["evaluation"]["status"] == "PASSED" for line in first)
    summary = run_bench(root, out=out, solutions=["slow"], resume=True, timing=FAST, progress=False)
    assert summary.plan.already_done == len(first) and len(summary.outcomes) == 8 - len(first)
    uuids = [json.loads(x)["workload"]["uuid"] for x in trace_file.read_text().splitlines()]
    assert sorted(uuids) == [f"wl-{i:04d}" for i in range(8)]  # each pair exactly once


def test_without_bubblewrap_the_bench_warns_runs_and_says_so(tmp_path, monkeypatch, capsys):
    from generator.bench.sandbox import sandbox_mode

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(1))
    monkeypatch.setenv("KERNELTRACE_SANDBOX", "none")
    sandbox_mode.cache_clear()
    temps = kt_temp_folders()
    try:
        summary = run_bench(root, timing=FAST, progress=False)
    finally:
        sandbox_mode.cache_clear()
    [o] = summary.outcomes
    assert o.status == "PASSED" and o.record["evaluation"]["environment"]["sandbox"] == "none"
    assert "WITHOUT the bubblewrap sandbox" in capsys.readouterr().err
    assert kt_temp_folders() <= temps, "the unsandboxed worker's temporary folder was left behind"


def test_a_gpu_run_refuses_to_run_without_the_sandbox_unless_told_to(tmp_path, monkeypatch):
    """The GPU run fails closed: without bubblewrap it stops before starting a worker, saying why and how to opt in
    (KERNELTRACE_SANDBOX=none, whose traces the site never ranks); the CPU run only warns (the test above)."""
    import generator.bench.run as bench
    from generator.bench import sandbox

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(1))
    monkeypatch.setattr(bench, "_check_device", lambda device: None)
    monkeypatch.setattr(sandbox, "sandbox_mode", lambda device="cpu": ("none", "bubblewrap (bwrap) is not installed"))
    monkeypatch.setattr(sandbox, "Worker", lambda *a: pytest.fail("a worker started"))
    monkeypatch.delenv("KERNELTRACE_SANDBOX", raising=False)
    with pytest.raises(KernelTraceError, match="WITHOUT the bubblewrap sandbox.*KERNELTRACE_SANDBOX=none"):
        run_bench(root, device="cuda", progress=False)
    monkeypatch.setenv("KERNELTRACE_SANDBOX", "none")  # told to: it goes on (and here stops at the missing CUDA)
    monkeypatch.setattr(sandbox, "Worker", lambda *a: (_ for _ in ()).throw(KernelTraceError("no CUDA here")))
    with pytest.raises(KernelTraceError, match="no CUDA here"):
        run_bench(root, device="cuda", progress=False)


def test_the_sandbox_sizes_every_writable_filesystem_and_stays_under_the_machines_memory():
    """/tmp and /dev/shm are tmpfs of TMP_BYTES, /dev is read-only (bwrap's own /dev is an unsized tmpfs: 300 MiB
    were written to /dev/shm before), and a CPU worker's address space is under this machine's memory."""
    from generator.bench.sandbox import SHM_BYTES, TMP_BYTES, bwrap_command, memory_bytes, sandbox_mode

    total = next(int(x.split()[1]) * 1024 for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
    assert memory_bytes() < total
    if sandbox_mode("cpu")[0] != "bwrap":
        pytest.skip("bubblewrap is missing or refused here")
    probe = "df -B1 --output=size,target /tmp /dev/shm | tail -2; (echo x > /dev/planted) 2>&1 || true"
    out = subprocess.run(bwrap_command(["/bin/sh", "-c", probe], "cpu"), capture_output=True, text=True, timeout=60).stdout
    sizes = {target: int(size) for size, target in (line.split() for line in out.splitlines()[:2])}
    assert sizes == {"/tmp": TMP_BYTES, "/dev/shm": SHM_BYTES} and "Read-only file system" in out, out


WRITER = r"""
import sys
from pathlib import Path
from generator.bench.store import write_trace
path, who, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    write_trace(path, {"solution": who, "workload": {"uuid": f"w{i:05d}"}, "evaluation": {
        "environment": {"hardware": "HW"}, "pad": "x" * (i % 700), "writer": sys.argv[4]}})
"""


def test_concurrent_writers_lose_and_duplicate_nothing(tmp_path):
    """Four processes write one trace file at once; two of them write the same keys (as two --resume
    runs of one plan would): every key ends up there exactly once and every line parses."""
    path = tmp_path / "traces/a/norm/d.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"s{k % 2}", "300", str(k)])
             for k in range(4)]
    assert all(p.wait(timeout=240) == 0 for p in procs)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    keys = [(r["solution"], r["workload"]["uuid"]) for r in records]
    assert len(keys) == len(set(keys)) == 600


def test_concurrent_resume_benches_write_each_pair_once(tmp_path):
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    script = ("import sys; from pathlib import Path; from generator.bench import run_bench; "
              f"run_bench(Path(sys.argv[1]), resume=True, timing={FAST!r}, progress=False)")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(root)], stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=280)
        assert p.returncode == 0, err.decode()[-2000:]
    lines = (root / "traces/baseline/norm/rmsnorm_h128.jsonl").read_text().splitlines()
    keys = [(r["solution"], r["workload"]["uuid"]) for r in map(json.loads, lines)]
    assert sorted(keys) == [("rmsnorm_h128_torch", f"wl-{i:04d}") for i in range(2)]


def test_untrusted_payloads_are_protocol_errors():
    from generator.bench import protocol

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


def test_tolerance_scales_with_the_reference_magnitude():
    """Outputs of magnitude 1e-3 (the FP8 MoE's) with a bf16 atol of 1e-2: all-zeros must still fail."""
    d = {"name": "t", "outputs": {"o": {"shape": ["n"], "dtype": "bfloat16"}}}
    e = torch.randn(256, generator=torch.Generator().manual_seed(0)) * 1e-3
    assert not compare(d, {"o": torch.zeros(256, dtype=torch.bfloat16)}, {"o": e}, {"n": 256}).ok
    assert compare(d, {"o": e.to(torch.bfloat16)}, {"o": e}, {"n": 256}).ok


# --------------------------------------------------------------------------------------------------
# Plan: sharding, cost limit, device fit; merge
# --------------------------------------------------------------------------------------------------

def test_the_plan_runs_each_author_in_one_stretch_and_contested_definitions_first(tmp_path):
    """Pairs come by author (a worker serves an author's solutions in turn), then definition and solution; a
    breadth-first plan first runs every solution on one workload of its definition, those of definitions
    with several solutions (what a leaderboard compares) before the rest, then the other workloads."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(2))
    [w] = workloads(1)
    copy_definition(root, "rmsnorm_h128_alone", w)
    add_solution(root, "alone_torch", CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n",
                 author="alice", definition="rmsnorm_h128_alone")
    add_solution(root, "zed_torch", CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n",
                 author="zed")
    ds = load(root)
    order = [(p.solution.author, p.definition.name, p.workload.uuid) for p in make_plan(ds, "cpu").pairs]
    assert order == [("alice", "rmsnorm_h128_alone", "wl-0000"),
                     ("baseline", "rmsnorm_h128", "wl-0000"), ("baseline", "rmsnorm_h128", "wl-0001"),
                     ("zed", "rmsnorm_h128", "wl-0000"), ("zed", "rmsnorm_h128", "wl-0001")]
    first = make_plan(ds, "cpu", breadth_first=True).pairs
    rep = first[0].workload.uuid
    assert [(p.solution.author, p.definition.name, p.workload.uuid) for p in first] == [
        ("baseline", "rmsnorm_h128", rep), ("zed", "rmsnorm_h128", rep), ("alice", "rmsnorm_h128_alone", "wl-0000"),
        *[(a, "rmsnorm_h128", u) for a in ("baseline", "zed") for u in ("wl-0000", "wl-0001") if u != rep]]


def test_shards_cover_every_pair_exactly_once(tmp_path):
    root = write_dataset(tmp_path, traces=[], workloads=workloads(30))
    for i in range(3):
        add_solution(root, f"s{i}", CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
    ds = load(root)
    everything = {p.key for p in make_plan(ds, "cpu").pairs}
    assert len(everything) == 4 * 30
    shards = [{p.key for p in make_plan(ds, "cpu", shard=(k, 4)).pairs} for k in range(1, 5)]
    assert set().union(*shards) == everything and sum(map(len, shards)) == len(everything)
    assert all(shards), "every shard gets work"
    assert shard_of("a/b", 7) == shard_of("a/b", 7)


@pytest.mark.parametrize("text", ["3/2", "0/4", "x", "1/0"])
def test_bad_shard_is_a_clear_error(text):
    with pytest.raises(KernelTraceError, match="--shard"):
        parse_shard(text)


def test_cpu_cost_limit_skips_and_reports(tmp_path):
    big = workloads(2)
    big[1]["workload"]["axes"]["batch_size"] = 100_000  # 2 * 100k * 128 * 2 bytes = 49 MiB
    root = write_dataset(tmp_path, traces=[], workloads=big)
    plan = make_plan(load(root), "cpu", max_bytes=16 * 2**20)
    assert [p.workload.uuid for p in plan.pairs] == ["wl-0000"]
    assert len(plan.skipped) == 1 and "MiB per call > limit 16 MiB" in plan.skipped[0][1]


def test_gpu_only_solutions_are_not_run_on_the_cpu(tmp_path):
    root = write_dataset(tmp_path, traces=[])
    sol = json.loads((root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json").read_text())
    sol["spec"]["target_hardware"] = ["H100_SXM"]
    dump(root / "solutions/baseline/norm/rmsnorm_h128/rmsnorm_h128_torch.json", sol)
    plan = make_plan(load(root), "cpu")
    assert not plan.pairs and plan.skipped == [("rmsnorm_h128_torch", "targets H100_SXM, not cpu")]


def test_a_gpu_run_takes_what_targets_its_hardware_or_its_compute_capability(tmp_path):
    """H100 code runs on an H200 (same compute capability, 9.0); a B200-only solution is not run on an H100,
    nor one whose target names no spec; a device nothing describes takes any GPU target; validate warns
    about a target that names no spec, and not about one named by a spec's alias."""
    root = write_dataset(tmp_path, traces=[])
    for name in ("H100_SXM", "H200", "B200"):
        (root / f"hardware/{name}.json").write_bytes((BUNDLED / f"hardware/{name}.json").read_bytes())
    targets = {"hopper": ["cpu", "H100_SXM"], "blackwell": ["cpu", "B200"], "by_alias": ["NVIDIA H200"],
               "elsewhere": ["RTX_9090"]}
    for name, target in targets.items():
        add_solution(root, name, CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
        path = root / f"solutions/cheat/norm/rmsnorm_h128/{name}.json"
        sol = json.loads(path.read_text())
        sol["spec"]["target_hardware"] = target
        dump(path, sol)
    ds = load(root)

    def taken(**device) -> set[str]:
        plan = make_plan(ds, "cuda", solutions=targets, **device)
        assert {s for s, _ in plan.skipped}.isdisjoint(p.solution.name for p in plan.pairs)
        return {p.solution.name for p in plan.pairs}

    assert taken(hardware="H200", capability="9.0") == {"hopper", "by_alias"}
    assert taken(hardware="H100_SXM", capability="9.0") == {"hopper", "by_alias"}
    assert taken(hardware="B200", capability="10.0") == {"blackwell"}
    assert taken(hardware="RTX_9090", capability="12.0") == {"elsewhere"}
    assert taken() == set(targets)
    why = dict(make_plan(ds, "cuda", solutions=["blackwell"], hardware="H100_SXM", capability="9.0").skipped)
    assert why == {"blackwell": "targets cpu, B200, not H100_SXM (compute capability 9.0); a solution that runs "
                                "there lists it in spec.target_hardware"}
    warned = [d for d in validate_path(root) if "names no hardware spec" in d.message]
    assert [(d.file.rsplit("/", 1)[-1], d.pointer) for d in warned] == [("elsewhere.json", "/spec/target_hardware/0")]


def test_merge_combines_shards_without_duplicates(tmp_path, benched):
    root, *_ = benched
    traces = [r for p in sorted((root / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    target = write_dataset(tmp_path / "ds", traces=[])
    (target / "traces/baseline/norm/rmsnorm_h128.jsonl").unlink()
    shard_a, shard_b = tmp_path / "a", tmp_path / "b"
    for folder, part in ((shard_a, traces[::2]), (shard_b, traces[1::2] + traces[:3])):  # overlap
        for r in part:
            author = "baseline" if r["solution"] == "rmsnorm_h128_torch" else "cheat"
            append_line(folder / "traces" / author / "norm/rmsnorm_h128.jsonl", r)
    first = merge(target, [shard_a, shard_b])
    assert first.added == len(traces) and first.unchanged == 3
    again = merge(target, [shard_a, shard_b])
    assert again.added == 0 and again.replaced == 0
    merged = [r for p in sorted((target / "traces").rglob("*.jsonl")) for r in read_traces(p)]
    assert len(merged) == len(traces)


def test_cuda_requested_without_cuda_is_a_clear_error(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error path is for machines without it")
    root = write_dataset(tmp_path, traces=[])
    with pytest.raises(KernelTraceError, match="no CUDA device"):
        run_bench(root, device="cuda", progress=False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_side_stream_work_is_caught_on_cuda(tmp_path):
    root = write_dataset(tmp_path, traces=[], workloads=workloads(1))
    add_solution(root, "side_stream", CORRECT + "_s = torch.cuda.Stream()\n\ndef run(input, weight, eps):\n"
                 "    out = torch.zeros_like(input)\n    with torch.cuda.stream(_s):\n"
                 "        torch.cuda._sleep(10_000_000)\n        out.copy_(compute(input, weight, eps))\n    return out\n")
    for sol in (root / "solutions/cheat/norm/rmsnorm_h128").glob("*.json"):
        s = json.loads(sol.read_text())
        s["spec"]["target_hardware"] = ["H100_SXM"]
        dump(sol, s)
    summary = run_bench(root, device="cuda", solutions=["side_stream"], progress=False)
    # The worker synchronises the whole device before it answers and the outside clock sees that:
    # the side stream's 10M-cycle sleep is in the number (or the call is caught outright).
    [o] = summary.outcomes
    # Or its answer is wrong: `out` was made on the default stream and written on the side stream unsynchronised.
    assert o.status in ("REWARD_HACK", "INCORRECT_NUMERICAL") or (
        o.status == "PASSED" and o.record["evaluation"]["performance"]["latency_ms"] > 2), (o.status, o.log)


def _for_h100(root: Path) -> None:
    for sol in (root / "solutions").rglob("*.json"):
        s = json.loads(sol.read_text())
        s["spec"]["target_hardware"] = ["H100_SXM"]
        dump(sol, s)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (GPU runs are not faked)")
def test_outputs_are_copied_out_of_the_workers_memory_on_cuda(tmp_path):
    """The trusted process reads the outputs through CUDA IPC (capture.py): an honest solution passes and its
    trace says so; one whose answers are written by a thread of its own after the batch ended (started at import,
    so the left-thread guard does not see it) is read before that thread writes them."""
    root = write_dataset(tmp_path, traces=[], workloads=workloads(2))
    add_solution(root, "honest", CORRECT + "def run(input, weight, eps):\n    return compute(input, weight, eps)\n")
    add_solution(root, "late_writer", CORRECT + (
        "import threading, queue\n_todo = queue.Queue()\n\n"
        "def _writer():\n    while True:\n        out, args = _todo.get()\n        out.copy_(compute(*args))\n\n"
        "threading.Thread(target=_writer, daemon=True).start()\n\n"
        "def run(input, weight, eps):\n    out = torch.empty_like(input)\n    _todo.put((out, (input, weight, eps)))\n"
        "    return out\n"))
    _for_h100(root)
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


def test_cpu_flop_limit_uses_the_einsum_cascade(tmp_path):
    from generator.bench.plan import call_flops

    root = write_dataset(tmp_path, traces=[], workloads=workloads(3))  # batch 1, 4, 7
    ds = load(root)
    d = ds.definitions["rmsnorm_h128"]
    flops = [call_flops(ds, d, w, {}) for w in sorted(ds.workloads, key=lambda w: w.uuid)]
    assert flops[0] < flops[1] < flops[2], flops  # counted from the cascade, growing with batch_size
    plan = make_plan(ds, "cpu", max_flops=flops[1])
    assert [p.workload.uuid for p in plan.pairs] == ["wl-0000", "wl-0001"]
    assert "GFLOP per call > limit" in plan.skipped[0][1]


def test_cpu_sampler_limit_skips_large_batches_saying_why():
    """Samplers' references draw row by row, a cost the Einsum FLOP limit does not see: on the CPU a sampling
    workload runs up to the probabilities limit (batch 8 of the bundled vocabularies), the rest are skipped
    with the reason; other definitions are untouched."""
    from generator.bench.plan import DEFAULT_CPU_MAX_SAMPLER_ELEMENTS

    ds = load(BUNDLED)
    names = ["sampling_from_probs_v201088", "top_k_top_p_sampling_from_probs_v262208", "rmsnorm_h4096"]
    every = make_plan(ds, "cpu", definitions=names)
    plan = make_plan(ds, "cpu", definitions=names, max_sampler_elements=DEFAULT_CPU_MAX_SAMPLER_ELEMENTS)
    kept = {(p.definition.name, p.workload.axes.get("batch_size")) for p in plan.pairs}
    assert {b for d, b in kept if d != "rmsnorm_h4096"} == {1, 8}
    assert {p.key for p in every.pairs if p.definition.name == "rmsnorm_h4096"} == \
        {p.key for p in plan.pairs if p.definition.name == "rmsnorm_h4096"}
    assert any("probabilities per call > limit" in why and "'batch_size': 64" in what for what, why in plan.skipped)


def test_bad_selection_and_device_are_clear_errors(tmp_path, capsys):
    from generator import cli

    root = write_dataset(tmp_path, traces=[])
    with pytest.raises(KernelTraceError, match="--definitions: no definition named 'rmsnorm_h999'"):
        make_plan(load(root), "cpu", definitions=["rmsnorm_h999"])
    assert cli.main(["bench", "--dataset", str(root), "--device", "tpu", "--quiet"]) == 2
    assert "--device 'tpu': use cpu or cuda" in capsys.readouterr().err


def test_a_run_on_hardware_without_a_spec_warns_that_no_floor_bounds_it(tmp_path, capsys):
    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(1))
    for spec in (root / "hardware").glob("*.json"):  # whatever the factory wrote: this host's spec is gone
        spec.unlink()
    from generator.bench.run import floors_ms
    from generator.model.evaluation import MIN_CALL_MS

    ds = load(root)
    # Still bounded by the time no call beats: a reported 5e-324 ms made an infinite speedup, written as Infinity.
    assert floors_ms(ds, make_plan(ds, "cpu"), "CPU_NOWHERE_1T", {}) == {("rmsnorm_h128", "wl-0000"): MIN_CALL_MS}
    err = capsys.readouterr().err
    assert "no hardware spec named" in err and "no speed-of-light floor" in err and "hardware/" in err


def test_correctness_only_run_fails_and_ends_naming_the_pairs_that_did_not_pass(tmp_path, capsys):
    """The check a contributor runs before a pull request: no trace is written, so the reason comes with the
    outcome; a pair that did not pass makes it exit 1 (without --strict), and the report ends with them."""
    from generator import cli

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(1))
    add_solution(root, "raises", CORRECT + "def run(input, weight, eps):\n"
                 "    raise ValueError('planted failure 4711')\n")
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--correctness-only", "--quiet",
                     "--solutions", "raises", "rmsnorm_h128_torch", "--timeout", "60"])
    out = capsys.readouterr().out
    assert code == 1, out
    tail = out.strip().splitlines()[-2:]
    assert tail[0] == "1 of 2 pair(s) did not pass:", out
    assert tail[1].startswith("  RUNTIME_ERROR: raises on workload wl-0000") and "planted failure 4711" in tail[1], out


def test_a_strict_run_whose_pairs_all_passed_exits_0_and_says_so(capsys):
    from types import SimpleNamespace

    from generator.cli import _failures

    passed = [SimpleNamespace(passed=True, status="PASSED")] * 3
    assert _failures(passed, strict=True) == 0 and capsys.readouterr().out == "all 3 pair(s) passed\n"
    assert _failures([], strict=True) == 0


def test_a_reference_that_fails_is_not_the_solutions_failure(tmp_path, capsys):
    """The reference's worker may end before it answers once (here its module exits on import): that is not
    the solution's failure, so no trace is written for its pairs; each is NOT_MEASURED with the reason, the
    bench goes on to the end and exits 1."""
    from generator import cli

    definition = json.loads(json.dumps(DEFINITION))
    definition["reference"] = "import os\nos._exit(7)\n" + definition["reference"]
    root = write_dataset(tmp_path / "ds", definition=definition, traces=[], workloads=workloads(2))
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--quiet", "--timeout", "60"])
    out = capsys.readouterr().out
    assert code == 1, out
    for uuid in ("wl-0000", "wl-0001"):
        assert f"NOT_MEASURED: rmsnorm_h128_torch on workload {uuid}" in out, out
    assert "the definition's reference failed" in out and "exit code 7" in out, out
    assert not any(p.read_text().strip() for p in (root / "traces").rglob("*.jsonl")), \
        "a trace was written for a pair the reference failed"


def test_a_worker_that_cannot_start_stops_the_run_and_writes_no_trace(tmp_path, monkeypatch, capsys):
    """A broken environment (here: the worker's Python cannot import torch) is the harness's failure: the
    run stops with a message saying so, and no solution gets a RUNTIME_ERROR trace for it."""
    from generator import cli
    from generator.bench import sandbox

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(sandbox.sys, "executable", str(broken))
    monkeypatch.setenv("KERNELTRACE_SANDBOX", "none")
    sandbox.sandbox_mode.cache_clear()
    try:
        code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--quiet", "--timeout", "60"])
    finally:
        sandbox.sandbox_mode.cache_clear()
    err = capsys.readouterr().err
    assert code != 0 and "could not start" in err and "No module named torch" in err, err
    assert not any(p.read_text().strip() for p in (root / "traces").rglob("*.jsonl"))


def test_resume_repairs_a_torn_last_line_and_goes_on(tmp_path, capsys):
    from generator import cli

    root = write_dataset(tmp_path / "ds", traces=[], workloads=workloads(2))
    assert cli.main(["bench", "--dataset", str(root), "--quiet", "--solutions", "rmsnorm_h128_torch"]) == 0
    path = root / "traces/baseline/norm/rmsnorm_h128.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2], encoding="utf-8")  # a kill mid-write
    code = cli.main(["bench", "--dataset", str(root), "--quiet", "--resume", "--solutions", "rmsnorm_h128_torch"])
    captured = capsys.readouterr()
    assert code == 0 and "cut a torn last line" in captured.err, captured
    assert "1 pair(s) already have a trace" in captured.out and "1 PASSED" in captured.out, captured.out
    # The run reports its throughput and where its slowest pairs went (the GPU kit's log shows it).
    assert re.search(r"[0-9.]+ pairs per minute \([0-9]+ s in pairs, of which [0-9]+ s starting and loading "
                     r"workers\); slowest: rmsnorm_h128_torch on wl-0001 [0-9.]+ s", captured.out), captured.out
    assert sorted(json.loads(x)["workload"]["uuid"] for x in path.read_text().splitlines()) == ["wl-0000", "wl-0001"]


# --------------------------------------------------------------------------------------------------
# Samplers: compared as distributions on every batch, timed ones included
# --------------------------------------------------------------------------------------------------

SAMPLER = "top_k_sampling_v512"
SAMPLER_WORK_MS = 2
HONEST_SAMPLER = ("import torch\n\ndef draw(probs, top_k):\n    out = []\n    for row, k in zip(probs, top_k):\n"
                  "        pivot = torch.kthvalue(row, row.numel() - int(k) + 1).values\n"
                  "        kept = torch.where(row >= pivot, row, torch.zeros_like(row))\n"
                  "        out.append(torch.multinomial(kept / kept.sum(), 1)[0])\n    return torch.stack(out)\n\n")
SAMPLER_CHEATS = {
    "sampler_honest": (HONEST_SAMPLER + "def run(probs, top_k):\n    return draw(probs, top_k)\n", ("PASSED",)),
    # Honest on the first batch (the draws it knows are compared), then greedy, then token 0.
    "sampler_greedy_after_first_batch": (
        HONEST_SAMPLER + "_n = 0\n\ndef run(probs, top_k):\n    global _n\n    _n += 1\n"
        "    return draw(probs, top_k) if _n <= FIRST else probs.argmax(-1)\n", ("INCORRECT_NUMERICAL",)),
    "sampler_token_zero_after_first_batch": (
        HONEST_SAMPLER + "_n = 0\n\ndef run(probs, top_k):\n    global _n\n    _n += 1\n"
        "    return draw(probs, top_k) if _n <= FIRST else torch.zeros(probs.shape[0], dtype=torch.int64)\n",
        ("INCORRECT_NUMERICAL",)),
    "sampler_without_top_k": (
        HONEST_SAMPLER + "def run(probs, top_k):\n    return torch.multinomial(probs, 1).squeeze(1)\n",
        ("INCORRECT_NUMERICAL",)),
    # Tables (a CDF) cost SAMPLER_WORK_MS to build: built once per input set (a timed batch was many calls on one set:
    # 17x to 290x) against its honest twin, which builds them every call. Both draw right; judged by their latency.
    "sampler_tables_once": (HONEST_SAMPLER + "import time\n_built = []\n\ndef run(probs, top_k):\n"
                            "    if not _built or _built[0] is not probs:\n"
                            "        time.sleep(SAMPLER_WORK_MS / 1e3)\n        _built[:] = [probs]\n"
                            "    return draw(probs, top_k)\n", ("PASSED",)),
    "sampler_tables_every_call": (HONEST_SAMPLER + "import time\n\ndef run(probs, top_k):\n"
                                  "    time.sleep(SAMPLER_WORK_MS / 1e3)\n    return draw(probs, top_k)\n", ("PASSED",)),
    # Draws of another shape: a failed pair, never a crash of the comparison.
    "sampler_other_shape": (HONEST_SAMPLER + "def run(probs, top_k):\n    return draw(probs, top_k)[:, None].repeat(1, 3)\n",
                            ("INCORRECT_SHAPE",)),
}


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    from generator.bench.check import sampling_draws

    root = write_dataset(tmp_path_factory.mktemp("sampler"), traces=[], workloads=workloads(1))
    d = json.loads((DATASET / "definitions/sampling/top_k_sampling_from_probs_v128256.json").read_text())
    d["name"] = SAMPLER
    d["axes"]["vocab_size"]["value"] = 512
    d["tags"] = [t for t in d.get("tags", []) if not t.startswith("model:")]
    dump(root / f"definitions/sampling/{SAMPLER}.json", d)
    dump_lines(root / f"workloads/sampling/{SAMPLER}.jsonl", [{
        "definition": SAMPLER, "workload": {"uuid": "wl-sample", "axes": {"batch_size": 4}, "seed": 5,
                                            "inputs": {"probs": {"type": "random"}, "top_k": {"type": "random"}}},
        "solution": None, "evaluation": None}])
    (root / "einsums/sampling").mkdir(parents=True, exist_ok=True)
    (root / f"einsums/sampling/{SAMPLER}.yaml").write_text(
        (DATASET / "einsums/sampling/top_k_sampling_from_probs_v128256.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    for name, (source, _) in SAMPLER_CHEATS.items():
        author = f"cheat-{name}"  # an author each: no two share a worker
        add_solution(root, name, source.replace("FIRST", str(sampling_draws(4))).replace("SAMPLER_WORK_MS", str(SAMPLER_WORK_MS)),
                     author=author, definition=SAMPLER)
        sol = root / f"solutions/{author}/norm/{SAMPLER}/{name}.json"
        target = root / f"solutions/{author}/sampling/{SAMPLER}/{name}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        sol.rename(target)
    return run_bench(root, device="cpu", definitions=[SAMPLER], timeout_s=60, timing=FAST, progress=False)


@pytest.mark.parametrize("name", sorted(SAMPLER_CHEATS))
def test_samplers_are_checked_on_every_batch(sampled, name):
    [o] = [o for o in sampled.outcomes if o.pair.solution.name == name]
    assert o.status in SAMPLER_CHEATS[name][1], (name, o.status, o.log[-500:])


def test_a_sampler_cannot_build_its_tables_once_per_batch(sampled):
    """Every timed call has an input set of its own (probs and top_k drawn per call), so tables built once per input
    set are built every call: the cheat's latency is its honest twin's, and both pass the draws' rank test."""
    got = {o.pair.solution.name: o for o in sampled.outcomes}
    twin, once = (got[n].record["evaluation"]["performance"]["latency_ms"]
                  for n in ("sampler_tables_every_call", "sampler_tables_once"))
    assert twin >= SAMPLER_WORK_MS and once >= 0.8 * twin, (twin, once, got["sampler_tables_once"].log[-400:])


def test_a_definition_validate_rejects_is_not_run_and_the_bench_says_why(tmp_path, capsys):
    """A workload missing a var axis once crashed the bench (KeyError: 'batch_size' while making inputs): the
    bench runs nothing for a definition validate rejects, and names the file, line and field."""
    from generator import cli

    bad = workloads(2)
    del bad[1]["workload"]["axes"]["batch_size"]
    root = write_dataset(tmp_path / "ds", traces=[], workloads=bad)
    code = cli.main(["bench", "--dataset", str(root), "--device", "cpu", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "0 pair(s)" in out or "nothing to do" in out, out
    assert "validate rejects" in out and "workloads/norm/rmsnorm_h128.jsonl:2" in out and "batch_size" in out, out


def test_every_trace_says_how_it_was_produced(monkeypatch):
    """make_trace writes environment.provenance: measured by kerneltrace bench, its version, the checkout's commit
    where there is one, the run, and the CI workflow run from GITHUB_REPOSITORY / GITHUB_RUN_ID; run_bench's one
    per run is kept as given, and a caller that brings none gets the process's own."""
    from types import SimpleNamespace

    from generator import __version__
    from generator.bench import runner
    from generator.bench.environment import provenance

    monkeypatch.setenv("GITHUB_REPOSITORY", "org/kerneltrace")
    monkeypatch.setenv("GITHUB_RUN_ID", "123")
    run = provenance()
    assert run["kind"] == "measured" and run["tool"] == "kerneltrace bench" and run["version"] == __version__
    assert run["ci"] == {"repository": "org/kerneltrace", "run_id": "123"} and len(run["run_id"]) == 32
    assert provenance()["run_id"] != run["run_id"]  # one id per run
    pair = SimpleNamespace(definition=SimpleNamespace(name="rmsnorm_h128"), workload=SimpleNamespace(data=WORKLOAD),
                           solution=SimpleNamespace(name="rmsnorm_h128_torch"))
    result = {"status": "RUNTIME_ERROR", "log": "boom"}
    given = runner.make_trace(pair, result, {"hardware": "test_cpu", "provenance": run})
    assert given["evaluation"]["environment"]["provenance"] is run
    own = [runner.make_trace(pair, result, {"hardware": "test_cpu"})["evaluation"]["environment"]["provenance"]
           for _ in range(2)]
    assert own[0]["kind"] == "measured" and own[0]["run_id"] == own[1]["run_id"]  # the process's run
