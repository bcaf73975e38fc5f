"""Assembles each layer of `mhac compile --emit=ptx` output (layers separated by
'// layer NAME' lines) with `ptxas -v`, and prints per layer its name and ptxas's report.

usage: ptxas-each.py PTXAS ARCH FILE.ptx
"""
import os
import subprocess
import sys
import tempfile

ptxas, arch, path = sys.argv[1:]
layers = []
with open(path) as ptx:
    for line in ptx:
        if line.startswith("// layer "):
            layers.append((line.split()[2], []))
        elif layers:
            layers[-1][1].append(line)
if not layers:
    sys.exit(f"{path}: no '// layer' line")
with tempfile.TemporaryDirectory() as folder:
    for name, lines in layers:
        source = os.path.join(folder, name + ".ptx")
        with open(source, "w") as out:
            out.writelines(lines)
        result = subprocess.run([ptxas, "-arch=" + arch, "-v", source, "-o", os.devnull],
                                capture_output=True, text=True)
        print(f"layer {name}: ptxas exit {result.returncode}")
        sys.stdout.write(result.stdout + result.stderr)
