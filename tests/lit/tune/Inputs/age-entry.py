"""Makes the one entry of a tuning database look stored by another compiler version, with a
known schedule (the default but projection_cache_rows = 60): age-entry.py DATABASE."""
import glob
import json
import sys

(path,) = glob.glob(f"{sys.argv[1]}/*.json")
with open(path) as f:
    entry = json.load(f)
entry["compiler"] = "mhac 0.0.1 (LLVM/MLIR 21.1.0)"
entry["schedule"] = "layer small {\n  projection_cache_rows = 60\n}\n"
with open(path, "w") as f:
    json.dump(entry, f)
