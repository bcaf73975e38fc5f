"""Summarizes the innermost loops of an x86 assembly listing (AT&T syntax, as `mhac compile
--emit=asm` prints it): one line per loop that does floating-point work or prefetches, in order.

usage: inner-loops.py < FILE.s
prints: "loop: N instructions, N fma, N broadcasts, N prefetches, N stack"
(a loop is the code from a label to a jump back to it with no label in between; `stack`
counts operands on %rsp, which in a kernel's loop are spills)
"""
import re
import sys

lines = sys.stdin.read().split("\n")
label = re.compile(r"^(\.LBB\S+):")
backJump = re.compile(r"^\s+j\w+\s+(\.LBB\S+)")
start = {}
for number, line in enumerate(lines):
    match = label.match(line)
    if match:
        start[match.group(1)] = number
        continue
    match = backJump.match(line)
    if not match or match.group(1) not in start:
        continue
    body = lines[start[match.group(1)] + 1 : number + 1]
    if any(label.match(line) for line in body):
        continue  # not innermost
    instructions = [line for line in body if line.startswith("\t") and not line.startswith("\t.")]
    count = lambda word: sum(word in line for line in instructions)
    fma, prefetches = count("vfmadd"), count("prefetch")
    if fma or prefetches:
        print("loop: %d instructions, %d fma, %d broadcasts, %d prefetches, %d stack"
              % (len(instructions), fma, count("broadcast"), prefetches, count("%rsp")))
