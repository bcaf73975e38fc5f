#!/usr/bin/env bash
# Installs every Debian package that building and testing mhac needs, and Halide 21 from PyPI;
# packages named as arguments too (the benchmarks' peers: scripts/setup.sh libdnnl-dev).
# Idempotent: packages already present are skipped, and apt is not touched at all when nothing is
# missing. Runs as root on a fresh Debian 12 machine (or through sudo when not root).
set -euo pipefail

packages=(
  # Compiler toolchain: LLVM/MLIR 22 (libraries, tablegen, lit, FileCheck) and clang for libFuzzer.
  clang-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools libclang-rt-22-dev
  # Build tools and libraries.
  cmake ninja-build ccache libfmt-dev libgtest-dev python3
  # The C compiler driver links shared libraries (mhac compile --shared) and the C examples.
  gcc libc6-dev pkg-config
  # PyTorch (for the tests that compare with nn.MultiheadAttention) and NumPy, for the system Python;
  # venv, pip and setuptools install mhac's Python package into a virtual environment of the build.
  python3-torch python3-numpy python3-venv python3-pip python3-setuptools
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Halide 21 for the Halide backend, from PyPI into a virtual environment of the repository (the
# wheel is a whole C++ SDK: Halide.h, libHalide.so, the autoschedulers); CMake finds it there.
root=$(cd "$(dirname "$0")/.." && pwd)
halide_venv=${MHAC_HALIDE_VENV:-$root/.deps/halide}
if ! "$halide_venv/bin/python" -c 'import halide' 2>/dev/null; then
  echo "setup: installing Halide 21 (PyPI) into $halide_venv" >&2
  /usr/bin/python3 -m venv "$halide_venv"
  "$halide_venv/bin/pip" install --quiet --disable-pip-version-check 'halide==21.0.0'
fi
