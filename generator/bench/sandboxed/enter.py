"""The sandbox's first command: set the worker's limits, become its own user, then exec the worker.

Run by bwrap as `python -I -S enter.py SPEC ARGV...` (stdlib only: no site, no generator package on the
path). SPEC is JSON from sandbox.bwrap_command: {"limits": {RLIMIT_NAME: n}, "sysctl": {path: n},
"uid": n or null, "gid": n, "groups": [n]}. Why here and not in the bench's child before exec: the kernel
never enforces RLIMIT_NPROC for host root, so a bench running as root must hand the worker a user of
its own, and only a process already inside the sandbox (its IPC namespace, its mounts) can do that
after bwrap has laid the sandbox out as root. Any step that fails stops the worker (exit 125 and a
line saying which): a worker never runs with less than it was given.
"""

import json
import os
import resource
import sys


def _fail(what: str, exc: BaseException) -> None:
    sys.stderr.write(f"kerneltrace sandbox: {what} failed ({exc}); the worker was not started\n")
    sys.exit(125)


def main(argv: list[str]) -> None:
    spec, command = json.loads(argv[1]), argv[2:]
    for path, value in spec.get("sysctl", {}).items():
        # The IPC namespace's own System V shared-memory caps (memory outside any filesystem). A sandbox
        # without the right to set them (an unprivileged user's) keeps the kernel's defaults.
        try:
            with open(path, "w") as f:
                f.write(str(value))
        except OSError:
            pass
    for name, value in spec["limits"].items():
        which = getattr(resource, name)
        try:
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError) as exc:
            _fail(f"setting {name} to {value}", exc)
    uid = spec.get("uid")
    if uid is not None:
        gid = spec["gid"]
        try:
            os.setgroups(spec.get("groups", []))
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as exc:
            _fail(f"becoming uid {uid}", exc)
        if os.getuid() != uid or os.geteuid() != uid:
            _fail(f"becoming uid {uid}", RuntimeError(f"still uid {os.getuid()}"))
    try:
        os.execv(command[0], command)
    except PermissionError as exc:
        _fail(f"starting {command[0]} as uid {os.getuid()}", RuntimeError(
            f"{exc}: the worker runs as a user of its own, so the Python installation and the generator "
            "package must be readable by all users (chmod -R o+rX on them)"))
    except OSError as exc:
        _fail(f"starting {command[0]}", exc)


if __name__ == "__main__":
    main(sys.argv)
