#!/usr/bin/env bash
# The main job of README.md: installs what is missing, builds mhac, compiles an example layer
# (examples/bert_base.mha unless another file is given) into a shared library, checks it
# against the float64 reference with mha-run, and prints its speed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
layer=${1:-$root/examples/bert_base.mha}
name=$(basename "$layer" .mha)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/setup.sh"
"$root/scripts/build.sh" mhac mha-run

# Sizes for the dimensions a layer leaves to run time ('?').
sizes=(--batch "${MHAC_BATCH:-8}" --seq "${MHAC_SEQ:-128}" --kv-seq "${MHAC_KV_SEQ:-128}")
given_sizes() {
  local args=()
  grep -Eq '^\s*batch\s*=\s*[0-9]' "$layer" || args+=("${sizes[0]}" "${sizes[1]}")
  grep -Eq '^\s*seq\s*=\s*[0-9]' "$layer" || args+=("${sizes[2]}" "${sizes[3]}")
  grep -Eq '^\s*kv_seq\s*=\s*\?' "$layer" && args+=("${sizes[4]}" "${sizes[5]}")
  echo "${args[@]}"
}

echo "==== mhac compile $name.mha --emit=mha"
"$build/bin/mhac" compile "$layer" --emit=mha
echo "==== mhac compile $name.mha --shared -o $name"
(time "$build/bin/mhac" compile "$layer" --shared -o "$work/$name") 2>&1 | grep -E '^real' || true
for layer_name in $("$build/bin/mha-run" "$work/$name.so" --list); do
  echo "==== mha-run $name.so --layer $layer_name --check, then --bench 20 on 1 and 2 threads"
  # shellcheck disable=SC2046
  "$build/bin/mha-run" "$work/$name.so" --layer "$layer_name" --check $(given_sizes)
  for threads in 1 2; do
    # shellcheck disable=SC2046
    "$build/bin/mha-run" "$work/$name.so" --layer "$layer_name" --bench 20 --threads $threads $(given_sizes)
  done
done
