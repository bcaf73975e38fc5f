"""Finds scalar floating-point arithmetic inside the loops of a layer's hot kernels.

Reads the assembly `mhac compile --emit=asm` writes and the layer names of its source. A
layer's kernels are its parallel tasks, named by role: NAME_q, NAME_k, NAME_v, NAME_out (with
_1, ... where a projection is split) and NAME_attention. A loop is the range between a label
and a later branch back to it. Scalar arithmetic in a loop (vmulss, vfmadd231ss, ...) is the
mark of code that lost its vectors: a cliff. Scalar code outside loops (a task's setup) is
allowed. A kernel with no vector arithmetic at all is a fault too; rounding to bf16
(vcvtneps2bf16, the work of the task that prepares attention's bf16 keys and values) counts. Prints one line per kernel at fault, then a summary.
"""

import re
import sys

SCALAR = re.compile(r"^\s+(v?fn?m(add|sub)\d*s[sd]|v?(mul|add|sub|div|max|min)s[sd])\s")
VECTOR = re.compile(r"^\s+(vfn?m(add|sub)\d*p[sd]|v?(mul|add|sub|max|min)p[sd]|vdpbf16ps|vcvtneps2bf16)\s")
BRANCH = re.compile(r"^\s+j\w+\s+(\.LBB\w+)")
ROLES = ("q", "k", "v", "out", "attention")


def functions(lines):
    """name -> its lines, for every function of the assembly."""
    found, name = {}, None
    for line in lines:
        label = re.match(r"^([A-Za-z_][\w.]*):", line)
        if label:
            name = label.group(1)
            found[name] = []
        elif name and line.startswith(".Lfunc_end"):
            name = None
        elif name:
            found[name].append(line)
    return found


def in_loops(body):
    """The lines of `body` inside a loop."""
    labels = {}
    for index, line in enumerate(body):
        label = re.match(r"^(\.LBB\w+):", line)
        if label:
            labels[label.group(1)] = index
    inside = [False] * len(body)
    for index, line in enumerate(body):
        branch = BRANCH.match(line)
        if branch and labels.get(branch.group(1), len(body)) < index:
            for i in range(labels[branch.group(1)], index + 1):
                inside[i] = True
    return [line for line, flag in zip(body, inside) if flag]


def main(asm_path, source_path):
    layers = re.findall(r"^layer\s+(\w+)", open(source_path).read(), re.M)
    bodies = functions(open(asm_path).read().splitlines())
    faults, kernels = [], 0
    for layer in layers:
        for role in ROLES:
            names = [n for n in bodies if re.fullmatch(rf"{layer}_{role}(_\d+)?", n)]
            if not names:
                faults.append(f"{layer}: no kernel {layer}_{role}")
            for name in names:
                kernels += 1
                body = bodies[name]
                scalar = sum(1 for line in in_loops(body) if SCALAR.match(line))
                vector = sum(1 for line in body if VECTOR.match(line))
                if scalar or not vector:
                    faults.append(f"{name}: {scalar} scalar FP instructions in loops, "
                                  f"{vector} vector ones")
    for fault in faults:
        print(fault)
    print(f"{len(layers)} layers, {kernels} kernels: "
          f"{'no scalar loops' if not faults else f'{len(faults)} faults'}")


main(*sys.argv[1:])
