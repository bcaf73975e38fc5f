#!/usr/bin/env bash
# Decode steps of six decoder models' attention (bench/decoder/decode.mha) against the memory
# bandwidth measured in the same run, and against their peers: one new token a row against cache
# lengths from 512 to 32767, batch 1 and batch 16 (continuous batching: each row its own cache
# length, spread over [L/2, L]), f32 and bf16, with the split-cache decode nest
# (attention_decode_positions = 4, the default) and without it (= 0: the query-block nests).
# The peers (bench/peers/decode_peers.py: PyTorch 2 with a static cache and SDPA, ONNX Runtime's
# GroupQueryAttention, OpenVINO) run in bench/.venv-torch, which this script sets up, and each
# is checked against mhac's output before it is timed. Prints a Markdown table (bench/RESULTS.md
# has the last one), and writes the rows to decode.csv and a plot of GB/s against cache_len,
# decode.svg, in the work folder (build/bench/decode). Not part of CI.
#   bench/decode.sh [--rounds N] [--threads 1,2] [--only llama3_8b,phi2] [--lengths 512,4096]
#                   [--batches 1,16] [--dtypes f32,bf16] [--peers torch,onnxruntime,openvino|none]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
work=${MHAC_BENCH_DIR:-$root/build/bench}/decode
rounds=3 threads=$(nproc) only="" lengths="512,4096,32767" batches="1,16" dtypes="f32,bf16"
peers="torch,onnxruntime,openvino"
while [ $# -gt 0 ]; do
  case "$1" in
  --rounds) rounds=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --only) only=$2; shift 2 ;;
  --lengths) lengths=$2; shift 2 ;;
  --batches) batches=$2; shift 2 ;;
  --dtypes) dtypes=$2; shift 2 ;;
  --peers) peers=$2; shift 2 ;;
  *) echo "decode.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ "$peers" = none ] && peers=""

# The peers' environment: PyPI's PyTorch 2 (as bench/run.sh installs it), ONNX and ONNX Runtime,
# OpenVINO.
python=$root/bench/.venv-torch/bin/python
if [ -n "$peers" ] && ! "$python" -c 'import torch, onnx, onnxruntime, openvino' 2>/dev/null; then
  [ -x "$python" ] || /usr/bin/python3 -m venv "$root/bench/.venv-torch"
  "$python" -m pip install -q torch numpy onnx onnxruntime openvino ||
    echo "decode.sh: some peers did not install; they will show as n/a" >&2
fi

"$root/scripts/build.sh" mhac mha-run
mkdir -p "$work"
cc -O3 -march=native -pthread "$root/bench/bandwidth.c" -o "$work/bandwidth"
layers=$(grep -oP '^layer \K\w+' "$root/bench/decoder/decode.mha")
[ -n "$only" ] && layers=$(tr ',' ' ' <<< "$only")
# The same layers in bf16, and both without the decode nest.
sed 's/^}$/  dtype = bf16\n}/' "$root/bench/decoder/decode.mha" > "$work/decode.bf16.mha"
{ echo "format = 1"; for l in $layers; do printf 'layer %s {\n  attention_decode_positions = 0\n}\n' "$l"; done; } > "$work/off.sched"
for dtype in ${dtypes//,/ }; do
  source=$root/bench/decoder/decode.mha
  [ "$dtype" = bf16 ] && source=$work/decode.bf16.mha
  "$build/bin/mhac" compile "$source" --shared -o "$work/$dtype"
  "$build/bin/mhac" compile "$source" --shared --schedule "$work/off.sched" -o "$work/$dtype-off"
done

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# The cache lengths of a batch: L for one row, spread over [L/2, L] for more.
cacheLengths() {
  awk -v b="$1" -v l="$2" 'BEGIN {for (i = 0; i < b; ++i) printf "%s%d", (i ? "," : ""),
    (b == 1 ? l : int(l / 2 + (l / 2) * i / (b - 1)))}'
}
declare -A bandwidth=()
for n in ${threads//,/ }; do
  bandwidth[$n]=$("$work/bandwidth" "$n" | grep -oP '[0-9.]+(?= GB/s)')
  echo "Memory bandwidth, $n threads (bench/bandwidth.c, before the rows): ${bandwidth[$n]} GB/s"
done
echo
header="| layer | dtype | B | cache_len | threads | decode nest ms | GB/s | of bandwidth | query blocks ms |"
rule="| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for peer in ${peers//,/ }; do header+=" $peer ms |"; rule+=" --- |"; done
[ -n "$peers" ] && { header+=" best peer / mhac |"; rule+=" --- |"; }
echo "$header"
echo "$rule"
csv=$work/decode.csv
echo "layer,dtype,batch,cache_len,threads,variant,ms,gbs" > "$csv"
for layer in $layers; do
  for dtype in ${dtypes//,/ }; do
    source=$root/bench/decoder/decode.mha
    [ "$dtype" = bf16 ] && source=$work/decode.bf16.mha
    for batch in ${batches//,/ }; do
      for length in ${lengths//,/ }; do
        for n in ${threads//,/ }; do
          lens=$(cacheLengths "$batch" "$length")
          declare -A times=() rates=()
          for round in $(seq "$rounds"); do
            for variant in "$dtype" "$dtype-off"; do
              line=$(MHAC_BANDWIDTH_GBS=${bandwidth[$n]} "$build/bin/mha-run" "$work/$variant.so" \
                --layer "$layer" --bench 5 --batch "$batch" --seq 1 --cache-len "$lens" \
                --threads "$n" | grep median)
              times[$variant]+="$(grep -oP 'median \K[0-9.]+' <<< "$line") "
              rates[$variant]+="$(grep -oP '[0-9.]+(?= GB/s)' <<< "$line") "
            done
            if [ -n "$peers" ]; then
              while read -r peer result; do
                times[${peer%:}]+="$(grep -oP '^median \K[0-9.]+' <<< "$result" || echo n/a) "
                [[ $result == n/a* ]] && echo "  $layer $dtype B=$batch L=$length: ${peer%:} $result" >&2
              done < <("$python" "$root/bench/peers/decode_peers.py" --mha-run "$build/bin/mha-run" \
                --module "$work/$dtype.so" --layers "$source" --layer "$layer" --dtype "$dtype" \
                --cache-lens "$lens" --threads "$n" --calls 5 --peers "$peers" --work "$work/files")
            fi
          done
          on=$(tr ' ' '\n' <<< "${times[$dtype]}" | grep . | median)
          off=$(tr ' ' '\n' <<< "${times[$dtype-off]}" | grep . | median)
          rate=$(tr ' ' '\n' <<< "${rates[$dtype]}" | grep . | median)
          cells="" best=""
          printf '%s,%s,%s,%s,%s,mhac,%s,%s\n' "$layer" "$dtype" "$batch" "$length" "$n" "$on" "$rate" >> "$csv"
          for peer in ${peers//,/ }; do
            ms=$(tr ' ' '\n' <<< "${times[$peer]:-}" | { grep -E '^[0-9.]+$' || true; } | median)
            if [ -z "$ms" ]; then cells+=" n/a |"; continue; fi
            cells+=" $ms |"
            printf '%s,%s,%s,%s,%s,%s,%s,%s\n' "$layer" "$dtype" "$batch" "$length" "$n" "$peer" "$ms" \
              "$(awk -v r="$rate" -v a="$on" -v b="$ms" 'BEGIN {printf "%.2f", r * a / b}')" >> "$csv"
            if [ -z "$best" ] || awk -v a="$ms" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$ms; fi
          done
          [ -n "$peers" ] && cells+=" $([ -n "$best" ] && awk -v b="$best" -v a="$on" 'BEGIN {printf "%.2fx", b / a}' || echo n/a) |"
          awk -v l="$layer" -v d="$dtype" -v b="$batch" -v len="$length" -v t="$n" -v on="$on" \
            -v off="$off" -v r="$rate" -v bw="${bandwidth[$n]}" -v cells="$cells" 'BEGIN {
            printf "| %s | %s | %d | %s | %d | %.3f | %.1f | %.0f%% | %.3f |%s\n",
            l, d, b, (b == 1 ? len : len / 2 "-" len), t, on, r, 100 * r / bw, off, cells}'
          unset times rates
        done
      done
    done
  done
done
echo
for n in ${threads//,/ }; do
  echo "Memory bandwidth after the rows, $n threads: $("$work/bandwidth" "$n" | grep -oP '[0-9.]+(?= GB/s)') GB/s"
done
/usr/bin/python3 "$root/bench/plot_decode.py" "$csv" "$work/decode.svg"
echo "Rows: $csv; plot: $work/decode.svg"
