#!/usr/bin/env bash
# The benchmark of mhac against its peers (see bench/RESULTS.md): sets up the peers (Debian's
# OpenBLAS, oneDNN and PyTorch; ONNX Runtime and OpenVINO in a virtual environment, bench/.venv;
# PyPI's PyTorch in bench/.venv-torch), builds mhac, compiles one layer per shape, and prints a
# Markdown table. Not part of CI.
#   bench/run.sh [bench.py options, e.g. --rounds 3 --threads 2 --only mhac,openblas]
#   bench/run.sh --dtype bf16 [...]   the same layers in bf16, against the bf16 peers
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
work=${MHAC_BENCH_DIR:-$root/build/bench}
venv=$root/bench/.venv

"$root/scripts/setup.sh" libopenblas-dev libdnnl-dev
# The system Python holds Debian's PyTorch; the venv sees it and adds the other peers. NumPy
# stays below 2, which Debian's PyTorch 1.13 was built against.
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q onnx onnxruntime openvino "numpy<2" ||
    echo "bench: some Python peers did not install; they will show as n/a" >&2
fi

# PyPI's PyTorch in an environment of its own (about 5 GB with the CUDA libraries its Linux
# wheel depends on; they load without a GPU), beside Debian's 1.13.
torch_venv=$root/bench/.venv-torch
if [ ! -x "$torch_venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$torch_venv"
  "$torch_venv/bin/pip" install -q torch numpy ||
    echo "bench: PyPI's PyTorch did not install; its peers will show as n/a" >&2
fi

"$root/scripts/build.sh" mhac mha-run
# The Halide backend's generator, when this build has Halide (scripts/setup.sh installs it).
"$root/scripts/build.sh" mhac-halide 2>/dev/null || echo "bench: no mhac-halide; mhac-halide shows as n/a" >&2
mkdir -p "$work/modules" "$work/peers"
cc -O3 -march=native -pthread "$root/bench/peak.c" -o "$work/peers/peak"
cc -O3 -march=native "$root/bench/peers/openblas_mha.c" -lopenblas -lm -o "$work/peers/openblas_mha"
cc -O3 -march=native "$root/bench/peers/onednn_mha.c" -ldnnl -lm -o "$work/peers/onednn_mha"
while read -r b s d h causal; do
  name="b${b}_s${s}_d${d}_h${h}" flag=false
  if [ "$causal" = 1 ]; then name="${name}_causal" flag=true; fi
  printf 'layer %s {\n  model_dim = %s\n  heads = %s\n  seq = %s\n  batch = %s\n  causal = %s\n}\n' \
    "$name" "$d" "$h" "$s" "$b" "$flag" > "$work/modules/$name.mha"
  "$build/bin/mhac" compile "$work/modules/$name.mha" --shared -o "$work/modules/$name"
  sed 's/^}$/  dtype = bf16\n}/' "$work/modules/$name.mha" > "$work/modules/$name.bf16.mha"
  "$build/bin/mhac" compile "$work/modules/$name.bf16.mha" --shared -o "$work/modules/$name.bf16"
  if [ -x "$build/bin/mhac-halide" ]; then
    "$build/bin/mhac" compile "$work/modules/$name.mha" --backend halide --shared \
      -o "$work/modules/$name.halide"
  fi
done <<'SHAPES'
1 128 768 12 0
8 128 768 12 0
1 512 768 12 0
4 512 1024 16 0
1 197 768 12 0
1 2048 768 12 1
SHAPES

"$venv/bin/python" "$root/bench/bench.py" --mha-run "$build/bin/mha-run" \
  --modules "$work/modules" --peers-dir "$work/peers" --python "$venv/bin/python" \
  --torch-python "$torch_venv/bin/python" "$@"
