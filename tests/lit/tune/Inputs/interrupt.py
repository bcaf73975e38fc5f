"""Interrupts mhac tune while a candidate's probe hangs, and checks what it leaves.

usage: interrupt.py SCHEDULE DATABASE -- MHAC TUNE ARGS...
The command must run with MHAC_TUNE_FAULTS=1:hang. Sends SIGTERM once the hanging probe runs,
then checks that the tuner died of it, that no child of it is left running, that SCHEDULE was
not written and that DATABASE holds no entry. Prints "interrupted cleanly" or the problem.
"""
import os
import signal
import subprocess
import sys
import time

schedule, database, command = sys.argv[1], sys.argv[2], sys.argv[4:]
tuner = subprocess.Popen(command, stderr=subprocess.DEVNULL)
marker = f"mhac-tune-hang-{tuner.pid}"


def running(pattern):
    """Whether a process whose command line contains `pattern` runs (pgrep -f, from /proc)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if pattern.encode() in f.read():
                    return True
        except OSError:
            pass
    return False


deadline = time.monotonic() + 60
while not running(marker):
    if tuner.poll() is not None or time.monotonic() > deadline:
        print("the hanging probe never started")
        sys.exit(1)
    time.sleep(0.1)
tuner.send_signal(signal.SIGTERM)
status = tuner.wait(timeout=10)
time.sleep(0.5)
problems = []
if status != -signal.SIGTERM:
    problems.append(f"the tuner exited with {status}, not by SIGTERM")
if running(marker):
    problems.append("the hanging probe is still running")
if os.path.exists(schedule):
    problems.append(f"{schedule} was written")
if os.path.isdir(database) and [f for f in os.listdir(database) if f.endswith(".json")]:
    problems.append(f"{database} has an entry")
print("; ".join(problems) if problems else "interrupted cleanly")
sys.exit(1 if problems else 0)
