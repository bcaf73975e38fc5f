"""Rewrites .mha files so that every layer is bf16 (`dtype = bf16` added to each layer that
does not set a dtype), writing them into one file, and prints, one per line, the mha-run
arguments that check each layer: --layer NAME and sizes for its run-time dimensions.

usage: as_bf16.py OUT.mha IN.mha...
"""
import re
import sys

out_path, sources = sys.argv[1], sys.argv[2:]
layers, text = [], []
for source in sources:
    for block in re.findall(r"^layer\s+\w+\s*\{.*?^\}", open(source).read(), re.M | re.S):
        if re.search(r"^\s*dtype\s*=", block, re.M):
            continue
        name = re.match(r"layer\s+(\w+)", block).group(1)
        text.append(block.replace("{", "{\n  dtype = bf16", 1))
        args = [f"--layer {name}"]
        for key, option, size in (("batch", "--batch", 2), ("seq", "--seq", 19),
                                  ("kv_seq", "--kv-seq", 23)):
            value = re.search(rf"^\s*{key}\s*=\s*(\S+)", block, re.M)
            if (value is None and key == "batch") or (value and value.group(1) == "?"):
                args.append(f"{option} {size}")
        layers.append(" ".join(args))
open(out_path, "w").write("\n\n".join(text) + "\n")
print("\n".join(layers))
