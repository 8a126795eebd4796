#!/bin/sh
# make-sim-camera.sh: regenerates the example simulator machine's camera calibration: sim-camera.icc (its session record beside it) and sim-light.json, from the simulator's chart and flat frames (seed 1).
# Run from anywhere after a build: examples/calibration/make-sim-camera.sh [BRUSHLOOP]
# tests/engine/test_run_calib.c checks that a fresh calibration still matches the committed files.
set -eu
cd "$(dirname "$0")/../.."
bin=${1:-${BRUSHLOOP:-build/brushloop}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A uniform white card over the whole view: the light and the lens's fall-off everywhere.
"$bin" sim render --machine examples/machine-sim.json --seed 1 --scene flat -o "$tmp/flat.jpg"
"$bin" calib camera --machine examples/machine-sim.json --seed 1 --flat "$tmp/flat.jpg" \
	--light-map examples/calibration/sim-light.json -o examples/calibration/sim-camera.icc
