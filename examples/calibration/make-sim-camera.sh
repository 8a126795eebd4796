#!/bin/sh
# make-sim-camera.sh: regenerates sim-camera.icc, the example simulator machine's camera profile, with `brushloop calib camera` on the simulator's chart frame (seed 1).
# Run from the source root after a build: examples/calibration/make-sim-camera.sh [BRUSHLOOP]
# tests/engine/test_run_calib.c checks that a fresh calibration still matches the committed profile.
set -eu
cd "$(dirname "$0")/../.."
bin=${1:-${BRUSHLOOP:-build/brushloop}}
exec "$bin" calib camera --machine examples/machine-sim.json --seed 1 -o examples/calibration/sim-camera.icc
