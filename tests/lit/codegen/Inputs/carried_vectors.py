"""Finds loop-carried vectors that LLVM would widen into more registers in a layer's kernels.

Reads the LLVM dialect `mhac compile --emit=llvm-mlir` writes and the f32 lanes of the target's
registers. A block argument carries a value around a loop (an accumulator, a running maximum);
LLVM widens a vector whose length is no power of two to the next one (48 lanes: 3 zmm, widened
to 64: 4 zmm), so a register tile of such vectors takes more registers than it was sized for
and spills in its hottest loop. Prints one line per function at fault, then a summary.
"""

import re
import sys

FUNCTION = re.compile(r"^\s*llvm\.func (?:\w+ )*@([\w.]+)\(")
BLOCK = re.compile(r"^\s*\^bb\d+\(([^)]*)\)")
VECTOR = re.compile(r"vector<(\d+)x[fi]\d+>")


def registers(lanes, width):
    return -(-lanes // width)


def widened(lanes):
    return 1 << (lanes - 1).bit_length()


def main(path, width):
    width = int(width)
    faults, name, blocks = {}, None, 0
    for line in open(path):
        function = FUNCTION.match(line)
        if function:
            name = function.group(1)
            continue
        block = BLOCK.match(line)
        if not block or not name:
            continue
        blocks += 1
        for lanes in VECTOR.findall(block.group(1)):
            if registers(widened(int(lanes)), width) > registers(int(lanes), width):
                faults.setdefault(name, set()).add(int(lanes))
    for function, widths in sorted(faults.items()):
        print(f"{function}: carries vectors of {', '.join(map(str, sorted(widths)))} lanes, "
              f"widened into more registers of {width}")
    print(f"{blocks} blocks with arguments: "
          f"{'every carried vector whole registers' if not faults else f'{len(faults)} faults'}")


main(*sys.argv[1:])
