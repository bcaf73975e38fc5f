#!/usr/bin/env bash
# The CUDA target's check on a GPU, from artifacts built on a machine without one.
#
#   scripts/gpu-check.sh pack [ARCH [DIR]]
#     Here (mhac built, no GPU needed): compiles bench/gpu/check-layers.mha and the benchmark's
#     layers (bf16) for cuda:ARCH (default sm_90) into DIR (default build/gpu-check), with
#     mha-run, mhac's runtime and the libraries they need: a folder of a few MB.
#   scripts/gpu-check.sh run [DIR]
#     On the GPU machine (the CUDA driver and PyTorch with CUDA; no LLVM, no package registry):
#     every check layer against the float64 reference (mha-run --check), then each benchmark
#     shape through mhac and through PyTorch (cuBLAS projections around SDPA, and
#     nn.MultiheadAttention) in bf16. Prints a Markdown table and writes it to DIR/results.md;
#     exits non-zero if a check fails (the first failure is rerun under compute-sanitizer into
#     DIR/sanitizer-LAYER.txt). Then times the schedule variants of bench/gpu/variants.txt
#     against the defaults. About 6 minutes on an H200.
#   scripts/gpu-check.sh variants [DIR]
#     On the GPU machine: only the schedule variants' timings and checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command=${1:-}

# The benchmark's shapes (bench/run.sh's, and long causal sequences): name batch seq dim heads causal.
shapes() {
  cat <<'SHAPES'
b1_s128_d768_h12 1 128 768 12 0
b8_s128_d768_h12 8 128 768 12 0
b1_s512_d768_h12 1 512 768 12 0
b4_s512_d1024_h16 4 512 1024 16 0
b1_s197_d768_h12 1 197 768 12 0
b1_s2048_d768_h12_causal 1 2048 768 12 1
b1_s4096_d1024_h16_causal 1 4096 1024 16 1
b1_s8192_d1024_h16_causal 1 8192 1024 16 1
SHAPES
}

pack() {
  local arch=${1:-sm_90} dir=${2:-$root/build/gpu-check}
  local build=${MHAC_BUILD_DIR:-$root/build}
  "$root/scripts/build.sh" mhac mha-run mhac_runtime_shared >/dev/null
  rm -rf "$dir" && mkdir -p "$dir/lib"
  "$build/bin/mhac" compile "$root/bench/gpu/check-layers.mha" --target "cuda:$arch" --shared \
    -o "$dir/check"
  while read -r name b s d h causal; do
    printf 'layer %s {\n  model_dim = %s\n  heads = %s\n  seq = %s\n  batch = %s\n  causal = %s\n  dtype = bf16\n}\n' \
      "$name" "$d" "$h" "$s" "$b" "$([ "$causal" = 1 ] && echo true || echo false)"
  done < <(shapes) > "$dir/bench.mha"
  "$build/bin/mhac" compile "$dir/bench.mha" --target "cuda:$arch" --shared -o "$dir/bench"
  # Each schedule variant of bench/gpu/variants.txt, its knobs written into every layer's block.
  grep -v '^#' "$root/bench/gpu/variants.txt" > "$dir/variants.txt"
  while read -r variant knobs; do
    { echo 'format = 1'
      while read -r name _; do
        printf 'layer %s {\n%s\n}\n' "$name" "$(tr ' ' '\n' <<< "$knobs" | sed 's/=/ = /')"
      done < <(shapes)
    } > "$dir/$variant.sched"
    "$build/bin/mhac" compile "$dir/bench.mha" --target "cuda:$arch" --shared \
      --schedule "$dir/$variant.sched" -o "$dir/bench-$variant"
  done < "$dir/variants.txt"
  cp "$build/bin/mha-run" "$dir/"
  cp -L "$build"/lib/libmhac_runtime.so.0 "$dir/lib/"
  # mha-run's own libraries that a GPU machine's image may lack (Debian's fmt).
  ldd "$build/bin/mha-run" | awk '/libfmt/ { print $3 }' | xargs -r -I{} cp -L {} "$dir/lib/"
  cp "$root/bench/gpu/check-sizes.txt" "$root/bench/gpu/torch_peer.py" "$dir/"
  shapes > "$dir/shapes.txt"
  echo "gpu-check: packed $(du -sh "$dir" | cut -f1) for cuda:$arch into $dir"
}

run() {
  local dir=${1:-$root/build/gpu-check}
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local results="$dir/results.md" failed=0 passed=0
  nvidia-smi -L || true
  {
    echo "## Numerics: $(wc -l < <(grep -v '^#' "$dir/check-sizes.txt")) layers against the float64 reference"
    echo
    echo '| layer | batch | seq | kv_seq | result |'
    echo '| --- | --- | --- | --- | --- |'
  } > "$results"
  while read -r name b s kv; do
    local args=(--layer "$name" --batch "$b" --seq "$s" --check)
    [ "$kv" != 0 ] && args+=(--kv-seq "$kv")
    local line
    if line=$(timeout 30 "$dir/mha-run" "$dir/check.so" "${args[@]}" 2>&1); then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      # The first failure once more under compute-sanitizer: the faulting kernel and address.
      if [ "$failed" = 1 ] && command -v compute-sanitizer >/dev/null; then
        timeout 120 compute-sanitizer --print-limit 20 "$dir/mha-run" "$dir/check.so" "${args[@]}" \
          > "$dir/sanitizer-$name.txt" 2>&1 || true
        tail -40 "$dir/sanitizer-$name.txt"
      fi
    fi
    echo "$line"
    echo "| $name | $b | $s | $kv | ${line#*: } |" >> "$results"
  done < <(grep -v '^#' "$dir/check-sizes.txt")
  echo "gpu-check: numerics: $passed passed, $failed failed"

  {
    echo
    echo "## Speed, bf16: mhac against PyTorch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
    echo
    echo '| shape | mhac ms | mhac TFLOP/s | of the bf16 tensor-core peak | SDPA + cuBLAS ms | nn.MultiheadAttention ms | mhac speed / SDPA |'
    echo '| --- | --- | --- | --- | --- | --- | --- |'
  } >> "$results"
  local peer_args=()
  while read -r name b s d h causal; do
    peer_args+=("$name:$b:$s:$d:$h:$causal")
  done < "$dir/shapes.txt"
  declare -A sdpa module
  while read -r name ms_sdpa ms_module; do
    sdpa[$name]=$ms_sdpa module[$name]=$ms_module
  done < <(timeout 240 python3 "$dir/torch_peer.py" --calls 30 "${peer_args[@]}" || true)
  while read -r name b s d h causal; do
    local out ms tflops peak
    out=$(timeout 60 "$dir/mha-run" "$dir/bench.so" --layer "$name" --bench 30 2>&1 || true)
    echo "$out"
    ms=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' <<< "$out")
    tflops=$(sed -n 's/.*), \([0-9.]*\) GFLOP\/s.*/\1/p' <<< "$out" | awk '{ printf "%.1f", $1 / 1000 }')
    peak=$(sed -n 's/.* \([0-9]*%\) of .*/\1/p' <<< "$out")
    local ratio=n/a
    if [ -n "$ms" ] && [ -n "${sdpa[$name]:-}" ]; then
      ratio=$(awk -v a="${sdpa[$name]}" -v b="$ms" 'BEGIN { printf "%.2f", a / b }')
    fi
    echo "| $name | ${ms:-failed} | ${tflops:-} | ${peak:-} | ${sdpa[$name]:-n/a} | ${module[$name]:-n/a} | $ratio |" >> "$results"
  done < "$dir/shapes.txt"
  variants "$dir"
  cat "$results"
  [ "$failed" = 0 ]
}

# Times each schedule variant against the defaults (two rounds, alternated, medians of 30 calls)
# and checks its numerics on the shapes short enough for the float64 reference.
variants() {
  local dir=$1
  local results="$dir/results.md" names=(defaults)
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local -A best
  while read -r variant _; do names+=("$variant"); done < "$dir/variants.txt"
  {
    echo
    echo "## Schedule variants (bench/gpu/variants.txt): ms, the better of two rounds"
    echo
    printf '| shape |'; printf ' %s |' "${names[@]}"; echo
    printf '| --- |'; printf ' --- |%.0s' "${names[@]}"; echo
  } >> "$results"
  local round name b s d h causal variant so ms
  for round in 1 2; do
    while read -r name b s d h causal; do
      for variant in "${names[@]}"; do
        so="$dir/bench-$variant.so"; [ "$variant" = defaults ] && so="$dir/bench.so"
        ms=$(timeout 60 "$dir/mha-run" "$so" --layer "$name" --bench 30 2>&1 |
          sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' || true)
        ms=${ms:-failed}
        if [ -z "${best[$name/$variant]:-}" ] || [ "${best[$name/$variant]}" = failed ] ||
          { [ "$ms" != failed ] && awk -v a="$ms" -v b="${best[$name/$variant]}" 'BEGIN { exit !(a < b) }'; }; then
          best[$name/$variant]=$ms
        fi
      done
    done < "$dir/shapes.txt"
  done
  while read -r name b s d h causal; do
    local row="| $name |"
    for variant in "${names[@]}"; do row+=" ${best[$name/$variant]} |"; done
    echo "$row" >> "$results"
  done < "$dir/shapes.txt"
  for variant in "${names[@]:1}"; do
    for name in b1_s128_d768_h12 b1_s197_d768_h12; do
      echo "$variant $(timeout 60 "$dir/mha-run" "$dir/bench-$variant.so" --layer "$name" --check 2>&1 | tail -1)"
    done
  done | tee -a "$dir/variants-check.txt"
}

case "$command" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  variants) shift; variants "${1:-$root/build/gpu-check}" ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
