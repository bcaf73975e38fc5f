#!/usr/bin/env bash
# Tunes one layer and compares the tuned schedule with the default in a paired run: rounds that
# time the default and the tuned layer one after the other (mha-run --bench), so that both see
# the same machine state. Prints one Markdown row:
#   | layer | default ms | tuned ms | speed-up (median of the rounds' ratios, min-max) | ...
#   bench/tune.sh BUDGET FILE.mha [mhac tune options, e.g. --batch 8]
# Not part of CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
work=${MHAC_BENCH_DIR:-$root/build/bench}/tune
threads=${MHAC_BENCH_THREADS:-2}
rounds=${MHAC_BENCH_ROUNDS:-7}
budget=$1
layer_file=$2
shift 2
name=$(basename "$layer_file" .mha)
mkdir -p "$work"

start=$(date +%s)
"$build/bin/mhac" tune "$layer_file" --budget "$budget" --threads "$threads" --retune \
  --cache-dir "$work/db" -o "$work/$name.sched" "$@" 2>"$work/$name.tune.log"
tune_seconds=$(($(date +%s) - start))
"$build/bin/mhac" compile "$layer_file" --shared -o "$work/$name.default"
"$build/bin/mhac" compile "$layer_file" --schedule "$work/$name.sched" --shared -o "$work/$name.tuned"

# mha-run takes the sizes of '?' dimensions as mhac tune does.
sizes=()
for option in "$@"; do
  case $option in --batch=* | --seq=* | --kv-seq=*) sizes+=("${option%%=*}" "${option#*=}") ;; esac
done
while [ $# -gt 0 ]; do
  case $1 in --batch | --seq | --kv-seq) sizes+=("$1" "$2"); shift ;; esac
  shift
done

"$build/bin/mha-run" "$work/$name.tuned.so" --check --threads "$threads" "${sizes[@]}" >/dev/null
python3 - "$build/bin/mha-run" "$work/$name" "$threads" "$rounds" "$tune_seconds" \
  "$work/$name.tune.json" "${sizes[@]}" <<'PY'
import json, statistics, subprocess, sys
run, base, threads, rounds, tune_seconds, report = sys.argv[1:7]
sizes = sys.argv[7:]
def median_ms(module):
    # Enough calls for about half a second.
    out = subprocess.run([run, module, "--bench", "1", "--threads", threads, *sizes],
                         capture_output=True, text=True, check=True).stdout
    once = float(out.split("median ")[1].split(" ms")[0])
    calls = max(5, int(500 / max(once, 1e-3)))
    out = subprocess.run([run, module, "--bench", str(calls), "--threads", threads, *sizes],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split("median ")[1].split(" ms")[0])
default, tuned, ratios = [], [], []
for _ in range(int(rounds)):
    d, t = median_ms(base + ".default.so"), median_ms(base + ".tuned.so")
    default.append(d); tuned.append(t); ratios.append(d / t)
data = json.load(open(report))
measured = sum(1 for c in data["candidates"] if c["status"] == "measured")
failed = sum(1 for c in data["candidates"] if c["status"] not in ("measured", "proposed", "built"))
print(f"| {data['layer']} | {statistics.median(default):.3f} | {statistics.median(tuned):.3f} | "
      f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
      f"{'adopted' if data['adopted'] else 'default kept'} ({data['speedup']:.3f}x, noise "
      f"{100 * data['noise']:.1f}%) | {tune_seconds} s | {measured} measured, {failed} failed |")
PY
