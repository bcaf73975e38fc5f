#!/usr/bin/env bash
# The test command of README.md: installs what is missing, builds, and runs every test (lit
# suites with FileCheck and error tests, GoogleTest units, bounded fuzzer runs).
# Ends with a plain "N passed, N failed" line; exits non-zero if anything failed.
# `--slow` (or MHAC_SLOW_TESTS=1) adds the slow tier: the random sweeps over many more seeds.
set -euo pipefail
slow=${MHAC_SLOW_TESTS:-0}
for arg in "$@"; do
  case $arg in
    --slow) slow=1 ;;
    *) echo "usage: scripts/test.sh [--slow]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MHAC_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
start=$(date +%s)
"$root/scripts/build.sh"
echo "build: $(( $(date +%s) - start )) s"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
/usr/lib/llvm-22/bin/lit -sv --param fuzz_seconds="${MHAC_FUZZ_SECONDS:-30}" --param slow="$slow" \
  "$build/tests/lit" "$build/tests/e2e-halide" "$build/tests/unit" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# lit's summary lists counts per result kind ("  Passed: 53 (96.36%)", "  Timed Out: 1 (...)"),
# padded when the counts are wide ("  Passed :   190 (98.47%)").
count() {
  local n
  n=$(sed -n "s/^  *$1 *: *\([0-9][0-9]*\).*/\1/p" "$log" | tail -n 1)
  echo "${n:-0}"
}
passed=$(count Passed)
failed=$(( $(count Failed) + $(count Unresolved) + $(count 'Timed Out') + $(count 'Unexpectedly Passed') ))
skipped=$(( $(count Unsupported) + $(count Skipped) + $(count 'Expectedly Failed') + $(count Excluded) ))
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "lit exited with status $status" >&2
fi
exit "$status"
