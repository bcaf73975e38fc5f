"""Lists which rows of an mha-run output (.npy, float32 [batch, seq, model_dim]) hold a NaN.

usage: nan-rows.py OUT.npy
"""
import math
import struct
import sys

with open(sys.argv[1], "rb") as f:
    data = f.read()
header_length = struct.unpack("<H", data[8:10])[0]
header = data[10:10 + header_length].decode("latin1")
shape = [int(n) for n in header.split("(")[1].split(")")[0].split(",") if n.strip()]
batch, seq, width = shape
values = struct.unpack("<%df" % (batch * seq * width), data[10 + header_length:])
for b in range(batch):
    rows = [values[(b * seq + s) * width:(b * seq + s + 1) * width] for s in range(seq)]
    nan = [s for s, row in enumerate(rows) if any(math.isnan(v) for v in row)]
    finite = [s for s, row in enumerate(rows) if all(math.isfinite(v) for v in row)]
    print("batch %d: NaN rows %s; finite rows %s" % (b, " ".join(map(str, nan)) or "none",
                                                     " ".join(map(str, finite)) or "none"))
