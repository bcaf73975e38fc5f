"""Kills mha-run at many moments of a run that writes --output, and checks that the output
path never holds a truncated file: after each kill it is either absent or a complete .npy.

usage: kill-during-write.py OUTPUT EXPECTED_BYTES ROUNDS -- MHA-RUN-COMMAND...
"""
import os
import signal
import subprocess
import sys
import time

output, expected, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
command = sys.argv[sys.argv.index("--") + 1:]

# How long one complete run takes, to spread the kills over it.
start = time.monotonic()
subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
duration = time.monotonic() - start
os.remove(output)

complete = 0
for round in range(rounds):
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(duration * (round + 0.5) / rounds)
    process.send_signal(signal.SIGKILL)
    process.wait()
    if os.path.exists(output):
        size = os.path.getsize(output)
        if size != expected:
            sys.exit("round %d: %s holds %d bytes, expected %d or nothing" % (round, output, size, expected))
        with open(output, "rb") as f:
            if f.read(6) != b"\x93NUMPY":
                sys.exit("round %d: %s is not a .npy file" % (round, output))
        complete += 1
        os.remove(output)
leftovers = [name for name in os.listdir(os.path.dirname(os.path.abspath(output)))
             if name.startswith("." + os.path.basename(output) + ".tmp-")]
print("%d rounds, %d complete outputs, %d temporary files left" % (rounds, complete, len(leftovers)))
