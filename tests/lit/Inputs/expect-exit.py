"""Runs a command and succeeds only if it exits with the given status (lit's shell has no $?).

usage: expect-exit.py STATUS COMMAND [ARGS...]
"""
import subprocess
import sys

expected = int(sys.argv[1])
status = subprocess.call(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if status != expected:
    sys.exit(f"expect-exit: '{' '.join(sys.argv[2:])}' exited with {status}, expected {expected}")
