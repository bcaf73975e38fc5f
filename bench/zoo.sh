#!/usr/bin/env bash
# The model zoo (bench/zoo/*.mha) against the machine's FMA peak and memory bandwidth and
# against eager PyTorch (Debian's, on OpenBLAS), PyTorch 2's SDPA (where bench/run.sh installed
# it) and a oneDNN composition, measured in one run; prints a Markdown table
# (bench/RESULTS.md has the last one). Not part of CI.
#   bench/zoo.sh [zoo.py options, e.g. --rounds 5 --threads 1 --only gpt2,phi2]
#   bench/zoo.sh --dtype bf16 [...]   the same layers in bf16, against the peers in bf16
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
work=${MHAC_BENCH_DIR:-$root/build/bench}/zoo

# PyTorch's matrix products go through the system BLAS: without OpenBLAS, Debian's reference
# BLAS makes it 20x slower than it is for its users. oneDNN for its peer.
"$root/scripts/setup.sh" libopenblas-dev libdnnl-dev
"$root/scripts/build.sh" mhac mha-run
mkdir -p "$work"
cc -O3 -march=native -pthread "$root/bench/peak.c" -o "$work/peak"
cc -O3 -march=native -pthread "$root/bench/bandwidth.c" -o "$work/bandwidth"
cc -O3 -march=native "$root/bench/peers/onednn_mha.c" -ldnnl -lm -o "$work/onednn_mha"
# bf16 layers (NAME.bf16.so) where the run asks for them: the same files with dtype = bf16.
bf16=false
for argument in "$@"; do
  if [ "$argument" = bf16 ] || [ "$argument" = --dtype=bf16 ]; then bf16=true; fi
done
compile() { # compile LAYER.mha OUT: once, and again whenever the file or mhac is newer
  if [ ! "$2.so" -nt "$1" ] || [ ! "$2.so" -nt "$build/bin/mhac" ]; then
    "$build/bin/mhac" compile "$1" --shared -o "$2"
  fi
}
for layer in "$root"/bench/zoo/*.mha; do
  name=$(basename "$layer" .mha)
  compile "$layer" "$work/$name"
  if [ "$bf16" = true ]; then
    [ "$work/$name.bf16.mha" -nt "$layer" ] ||
      sed 's/^}$/  dtype = bf16\n}/' "$layer" > "$work/$name.bf16.mha"
    compile "$work/$name.bf16.mha" "$work/$name.bf16"
  fi
done
# PyPI's PyTorch 2 (its SDPA), where bench/run.sh installed it.
torch_python=$root/bench/.venv-torch/bin/python
[ -x "$torch_python" ] || torch_python=
/usr/bin/python3 "$root/bench/zoo.py" --mha-run "$build/bin/mha-run" --modules "$work" \
  --peers-dir "$work" --torch-python "$torch_python" "$@"
