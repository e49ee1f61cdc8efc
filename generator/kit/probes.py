"""Scripts the kit runs with the machine's Python: the test selection plugin and the environment probes."""

# Modules the bench path imports, checked on the machine (env.txt says which copy is used).
CHECKED_IMPORTS = ("jsonschema", "referencing", "rpds", "jsonschema_specifications", "attrs", "typing_extensions", "orjson",
                   "jinja2", "yaml", "tqdm", "numpy", "safetensors", "torch", "triton", "pytest",
                   "liger_kernel", "fla", "einops")
DISTRIBUTIONS = {"rpds": "rpds-py", "jsonschema_specifications": "jsonschema-specifications", "yaml": "pyyaml",
                 "typing_extensions": "typing-extensions", "liger_kernel": "liger-kernel", "fla": "fla-core"}

# Loaded into the test step's pytest with -p: keeps the tests that are about CUDA (a skipif whose
# condition or reason names CUDA, a `cuda` marker, or "cuda" in the test's name).
PYTEST_PLUGIN = '''\
"""Written by the GPU kit: keep only the tests about CUDA in the files given."""
import re

_CUDA = re.compile(r"cuda|gpu", re.IGNORECASE)


def _about_cuda(item):
    if _CUDA.search(item.name) or item.get_closest_marker("cuda") is not None:
        return True
    for mark in item.iter_markers("skipif"):
        words = [str(a) for a in mark.args] + [str(v) for v in mark.kwargs.values()]
        if any(_CUDA.search(w) for w in words):
            return True
    return False


def pytest_collection_modifyitems(session, config, items):
    keep = [i for i in items if _about_cuda(i)]
    drop = [i for i in items if not _about_cuda(i)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
'''

ENV_PROBE = r'''
import importlib, os, platform, sys
print(f"python: {sys.version.split()[0]} ({platform.python_implementation()}) at {sys.executable}")
print(f"platform: {platform.platform()}; cpus: {os.cpu_count()}")
try:
    import torch
    line = f"torch: {torch.__version__} (CUDA build {torch.version.cuda}, cuda available: {torch.cuda.is_available()}"
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        line += (f", {torch.cuda.device_count()} device(s), device 0: {p.name}, sm_{p.major}{p.minor}, "
                 f"{p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB")
    print(line + ")")
except Exception as exc:
    print(f"torch: not importable ({type(exc).__name__}: {exc})")
from importlib import metadata
for arg in sys.argv[1:]:
    name, _, dist = arg.partition("=")
    try:
        m = importlib.import_module(name)
    except Exception as exc:
        print(f"  {name}: NOT IMPORTABLE ({type(exc).__name__}: {exc})")
        continue
    try:
        version = metadata.version(dist or name)
    except Exception:
        version = "?"
    print(f"  {name} {version} from {getattr(m, '__file__', '?')}")
'''

SANDBOX_PROBE = r'''
import subprocess, sys, time
from generator.bench.trusted.sandbox import bwrap_command, sandbox_mode
device, limit = sys.argv[1], float(sys.argv[2])
mode, why = sandbox_mode(device)
print(f"bench sandbox_mode({device!r}): {mode}" + (f" ({why})" if why else ""))
if mode != "bwrap":
    print("SANDBOX: none")
    sys.exit(0)
code = ("import torch; print('inside the sandbox: torch', torch.__version__, 'cuda', torch.cuda.is_available(), "
        "torch.cuda.device_count())")
r = subprocess.run(bwrap_command([sys.executable, "-c", code], device), capture_output=True, text=True, timeout=limit)
print(r.stdout.strip())
if r.returncode != 0:
    print(f"sandboxed torch failed (exit {r.returncode}): {r.stderr.strip()[-1500:]}")
    print("SANDBOX: none")
    sys.exit(0)
if device.startswith("cuda") and " cuda True " not in r.stdout + " ":
    print("the sandboxed torch sees no CUDA device")
    print("SANDBOX: none")
    sys.exit(0)
# The bench's own worker, started as the bench starts it (its environment, its way of finding bwrap).
try:
    from generator.bench.trusted.sandbox import Worker
    w = Worker(device, "bwrap")
except FileNotFoundError as exc:
    print(f"the bench's Worker could not start bwrap: {exc}")
    print("WORKER: bwrap not found")
    print("SANDBOX: none")
    sys.exit(0)
except Exception as exc:
    print(f"the bench's Worker did not start: {type(exc).__name__}: {exc}")
    print("SANDBOX: none")
    sys.exit(0)
t = time.monotonic()
while w.proc.poll() is None and time.monotonic() - t < 2:
    time.sleep(0.2)
ended = w.proc.poll()
w.kill()
if ended not in (None, 0):
    print(f"the bench's sandboxed worker ended at start ({w.how_it_ended()}): {w.log.text()[-1500:]}")
    print("SANDBOX: none")
else:
    print("the bench's sandboxed worker started")
    print("SANDBOX: bwrap")
'''


VERSIONS_PROBE = r'''
import json, sys
from importlib import metadata
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except Exception:
        found[name] = None
print(json.dumps(found))
'''

