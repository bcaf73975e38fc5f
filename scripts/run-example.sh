#!/usr/bin/env bash
# The main job of README.md: installs what is missing, builds mhac, and compiles an example
# layer (examples/bert_base.mha unless another file is given), printing each stage mhac has.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}
layer=${1:-$root/examples/bert_base.mha}

"$root/scripts/setup.sh"
"$root/scripts/build.sh" mhac

for stage in ast mha; do
  echo "==== mhac compile $(basename "$layer") --emit=$stage"
  "$build/bin/mhac" compile "$layer" --emit=$stage
done
