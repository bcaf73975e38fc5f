"""Runs `mha-run --check` on every layer of a module and prints each result line.

usage: check_all_layers.py MHA_RUN MODULE.so [ARGS...]

Exits 1 if any layer fails its check; ARGS go to every run (--threads 2, ...).
"""
import subprocess
import sys


def main(mha_run, module, *args):
    names = subprocess.run([mha_run, module, "--list"], check=True, capture_output=True,
                           text=True).stdout.split()
    failed = 0
    for name in names:
        run = subprocess.run([mha_run, module, "--layer", name, "--check", *args],
                             capture_output=True, text=True)
        lines = (run.stdout + run.stderr).strip().splitlines()
        print(lines[-1] if lines else f"{name}: no output")
        failed += run.returncode != 0
    print(f"{len(names)} layers, {failed} failed")
    sys.exit(1 if failed else 0)


main(*sys.argv[1:])
