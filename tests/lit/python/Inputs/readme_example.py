"""Runs the Python example of README.md as it is written, then checks its result."""

import re
import sys

readme = open(sys.argv[1], encoding="utf-8").read()
section = readme.split("## From Python", 1)[1]
code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
print(f"example: {len(code.strip().splitlines())} lines")
scope = {}
exec(code, scope)
torch, mha, x, y = scope["torch"], scope["mha"], scope["x"], scope["y"]
want = mha(x, x, x, need_weights=False)[0].detach()
error = ((y - want).abs().max() / want.abs().max()).item()
print(f"README example: relative error {error:.1e}: {'ok' if error <= 1e-4 else 'FAILED'}")
