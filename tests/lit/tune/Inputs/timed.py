"""Runs a command and fails if it takes longer than a limit: timed.py SECONDS CMD ARGS...

Prints the command's exit status as "exit N" and passes it on.
"""
import subprocess
import sys
import time

limit = float(sys.argv[1])
start = time.monotonic()
status = subprocess.run(sys.argv[2:]).returncode
elapsed = time.monotonic() - start
print(f"exit {status}")
if elapsed > limit:
    print(f"took {elapsed:.1f} s, over the limit of {limit} s")
    sys.exit(1)
sys.exit(status)
