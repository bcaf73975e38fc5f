"""Runs a command and fails if its peak resident memory exceeds a limit (in MB).

usage: max-rss.py LIMIT_MB COMMAND [ARGS...]      prints "peak resident memory: N MB"
"""
import resource
import subprocess
import sys

limit = float(sys.argv[1])
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # kB on Linux
print("peak resident memory: %.0f MB" % peak)
if peak > limit:
    sys.exit("peak resident memory %.0f MB is above the limit of %.0f MB" % (peak, limit))
