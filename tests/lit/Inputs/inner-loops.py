"""Summarizes the innermost loops of an x86 assembly listing (AT&T syntax, as `mhac compile
--emit=asm` prints it): one line per loop that does floating-point work or prefetches, in order.

usage: inner-loops.py [--stores] < FILE.s
prints: "loop: N instructions, N fma, N broadcasts, N prefetches, N stack"
(a loop is the code from a label to a jump back to it with no label in between; `stack`
counts operands on %rsp, which in a kernel's loop are spills)
With --stores, instead one line per loop that stores without computing (a fill or a copy):
"stores in FUNCTION: N scalar, N vector".
"""
import re
import sys

stores = "--stores" in sys.argv[1:]
lines = sys.stdin.read().split("\n")
function = re.compile(r"^([A-Za-z_][\w.]*):")
scalarStore = re.compile(r"^\s+vmovss\s+%xmm\d+, \S*\(")
vectorStore = re.compile(r"^\s+vmov\w+\s+%[xyz]mm\d+, \S*\(")
enclosing = {}
label = re.compile(r"^(\.LBB\S+):")
backJump = re.compile(r"^\s+j\w+\s+(\.LBB\S+)")
start = {}
current = "?"
for number, line in enumerate(lines):
    match = function.match(line)
    if match:
        current = match.group(1)
    match = label.match(line)
    if match:
        start[match.group(1)] = number
        enclosing[match.group(1)] = current
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
    if stores:
        scalar = sum(bool(scalarStore.match(line)) for line in instructions)
        vector = sum(bool(vectorStore.match(line)) for line in instructions) - scalar
        if not fma and (scalar or vector):
            print("stores in %s: %d scalar, %d vector"
                  % (enclosing[match.group(1)], scalar, vector))
    elif fma or prefetches:
        print("loop: %d instructions, %d fma, %d broadcasts, %d prefetches, %d stack"
              % (len(instructions), fma, count("broadcast"), prefetches, count("%rsp")))
