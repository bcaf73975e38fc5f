#!/usr/bin/env bash
# Decode steps of six decoder models' attention (bench/decoder/decode.mha) against the memory
# bandwidth measured in the same run: one new token a row against cache lengths from 512 to
# 32767, batch 1 and batch 16 (continuous batching: each row its own cache length, spread
# over [L/2, L]), f32 and bf16, with the split-cache decode nest (attention_decode_positions
# = 4, the default) and without it (= 0: the query-block nests). Prints a Markdown table
# (bench/RESULTS.md has the last one). Not part of CI.
#   bench/decode.sh [--rounds N] [--threads N] [--only llama3_8b,phi2] [--lengths 512,4096]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
work=${MHAC_BENCH_DIR:-$root/build/bench}/decode
rounds=3 threads=$(nproc) only="" lengths="512,4096,32767" batches="1,16"
while [ $# -gt 0 ]; do
  case "$1" in
  --rounds) rounds=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --only) only=$2; shift 2 ;;
  --lengths) lengths=$2; shift 2 ;;
  --batches) batches=$2; shift 2 ;;
  *) echo "decode.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
"$root/scripts/build.sh" mhac mha-run
mkdir -p "$work"
cc -O3 -march=native -pthread "$root/bench/bandwidth.c" -o "$work/bandwidth"
layers=$(grep -oP '^layer \K\w+' "$root/bench/decoder/decode.mha")
[ -n "$only" ] && layers=$(tr ',' ' ' <<< "$only")
# The same layers in bf16, and both without the decode nest.
sed 's/^}$/  dtype = bf16\n}/' "$root/bench/decoder/decode.mha" > "$work/decode.bf16.mha"
{ echo "format = 1"; for l in $layers; do printf 'layer %s {\n  attention_decode_positions = 0\n}\n' "$l"; done; } > "$work/off.sched"
for dtype in f32 bf16; do
  source=$root/bench/decoder/decode.mha
  [ $dtype = bf16 ] && source=$work/decode.bf16.mha
  "$build/bin/mhac" compile "$source" --shared -o "$work/$dtype"
  "$build/bin/mhac" compile "$source" --shared --schedule "$work/off.sched" -o "$work/$dtype-off"
done

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# The cache lengths of a batch: L for one row, spread over [L/2, L] for more.
cacheLengths() {
  awk -v b="$1" -v l="$2" 'BEGIN {for (i = 0; i < b; ++i) printf "%s%d", (i ? "," : ""),
    (b == 1 ? l : int(l / 2 + (l / 2) * i / (b - 1)))}'
}
bandwidth=$("$work/bandwidth" "$threads" | grep -oP '[0-9.]+(?= GB/s)')
echo "Memory bandwidth, $threads threads (bench/bandwidth.c, before the rows): $bandwidth GB/s"
echo
echo "| layer | dtype | B | cache_len | decode nest ms | GB/s | of bandwidth | query blocks ms | speed-up |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for layer in $layers; do
  for dtype in f32 bf16; do
    for batch in ${batches//,/ }; do
      for length in ${lengths//,/ }; do
        lens=$(cacheLengths "$batch" "$length")
        declare -A times=() rates=()
        for round in $(seq "$rounds"); do
          for variant in "$dtype" "$dtype-off"; do
            line=$(MHAC_BANDWIDTH_GBS=$bandwidth "$build/bin/mha-run" "$work/$variant.so" \
              --layer "$layer" --bench 5 --batch "$batch" --seq 1 --cache-len "$lens" \
              --threads "$threads" | grep median)
            times[$variant]+="$(grep -oP 'median \K[0-9.]+' <<< "$line") "
            rates[$variant]+="$(grep -oP '[0-9.]+(?= GB/s)' <<< "$line") "
          done
        done
        on=$(tr ' ' '\n' <<< "${times[$dtype]}" | grep . | median)
        off=$(tr ' ' '\n' <<< "${times[$dtype-off]}" | grep . | median)
        rate=$(tr ' ' '\n' <<< "${rates[$dtype]}" | grep . | median)
        awk -v l="$layer" -v d="$dtype" -v b="$batch" -v n="$length" -v on="$on" -v off="$off" \
          -v r="$rate" -v bw="$bandwidth" 'BEGIN {printf "| %s | %s | %d | %s | %.3f | %.1f | %.0f%% | %.3f | %.2fx |\n",
          l, d, b, (b == 1 ? n : n / 2 "-" n), on, r, 100 * r / bw, off, off / on}'
        unset times rates
      done
    done
  done
done
echo
echo "Memory bandwidth after the rows: $("$work/bandwidth" "$threads" | grep -oP '[0-9.]+(?= GB/s)') GB/s"
