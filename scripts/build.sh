#!/usr/bin/env bash
# Configures (once) and builds mhac with ninja into ./build (override with MHAC_BUILD_DIR).
# Release by default; MHAC_BUILD_TYPE=Debug for a debug tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
jobs=${MHAC_JOBS:-2}

if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE="${MHAC_BUILD_TYPE:-Release}" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    "${launcher[@]}"
fi
ninja -C "$build" -j "$jobs" "$@"
