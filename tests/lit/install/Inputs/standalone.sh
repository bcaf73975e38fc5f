#!/bin/sh
# standalone.sh SOURCE BUILD: installs BUILD into a folder outside both trees, moves the
# installation, and with SOURCE and BUILD out of sight (empty folders mounted over them in a
# private mount namespace, where one can be made: as if both trees were deleted) compiles a
# small grouped causal layer through both backends and one of Halide's autoschedulers, and
# checks each against the reference. Prints what it checks; exits non-zero on the first failure.
set -eu
source=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
mv "$work/prefix" "$work/moved"
cat > "$work/layer.mha" <<LAYER
layer small {
  model_dim = 48
  heads = 4
  kv_heads = 2
  seq = ?
  causal = true
}
LAYER
if grep -rlF "$source" "$work/moved/bin" "$work/moved/lib"; then
  echo "the installation names the source tree"
  exit 1
fi
ldd "$work/moved/bin/mhac-halide" | grep libHalide
ls "$work/moved/lib/mhac-halide"

cat > "$work/compile.sh" <<SCRIPT
set -e
"$work/moved/bin/mhac" compile "$work/layer.mha" --backend halide --shared -o "$work/halide"
"$work/moved/bin/mhac" compile "$work/layer.mha" --backend halide --schedule auto:Mullapudi2016 --shared -o "$work/mullapudi"
"$work/moved/bin/mhac" compile "$work/layer.mha" --shared -o "$work/mlir"
SCRIPT
if unshare -m true 2>/dev/null; then
  empty="$work/empty"
  mkdir "$empty"
  # The build first: it may lie inside the source tree.
  unshare -m sh -c 'mount --bind "$0" "$1" && mount --bind "$0" "$2" &&
                   echo "files in the hidden source tree: $(ls "$2" | wc -l)" && sh "$3"' \
    "$empty" "$build" "$source" "$work/compile.sh"
else
  echo "no mount namespace here: compiling with the trees in place"
  sh "$work/compile.sh"
fi
for module in halide mullapudi mlir; do
  printf '%s: ' "$module"
  "$work/moved/bin/mha-run" "$work/$module.so" --check --batch 2 --seq 9
done
