#!/bin/sh
# make-targets.sh: regenerates the example targets (1000 x 800 PNG) and the small test images from gen_targets.c.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top/build}
ninja -C "$build" examples/targets/gen_targets
"$build/examples/targets/gen_targets" "$here" "$top/tests/plan/data"
