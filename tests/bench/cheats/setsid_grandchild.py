"""Starts a grandchild in a session of its own (to outlive the sandbox), then never returns."""
import subprocess
import sys
import time

ORPHAN_MARKER = "{{orphan_marker}}"


def run(input, weight, eps):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", ORPHAN_MARKER], start_new_session=True)
    while True:
        time.sleep(1)  # sleeping: its timeout and kill are a spinning one's, without the CPU (`hangs` spins)
