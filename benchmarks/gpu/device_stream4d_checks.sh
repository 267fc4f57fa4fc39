#!/usr/bin/env bash
# Streamed 4D blocks on the GPU engine, beyond multislice (device_stream4d.sh): PRISM (the
# resident S-matrix path of a one-rank group, its output cache keyed by the block's probes)
# and a focal spread, each streamed in blocks of 500 probes against the same job held whole;
# every dataset compared (bitwise, else the largest relative difference). Builds nothing:
#   bash benchmarks/gpu/device_stream4d_checks.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_stream4d_checks
w=/tmp/ds4c
rm -rf $w && mkdir -p $w
case=benchmarks/cases/stream4d_si.ini
common=(--set compute.device=gpu --set scan.x_end=2.02 --set scan.y_end=2.02 --set simulation.frozen_phonons=3)
run() { # label, extra
  local label=$1
  shift
  "$STEMSIM" $case "${common[@]}" --set output.file=$w/$label.h5 "$@" > $w/$label.log 2>&1
  echo "== $label: rc $? $(grep -oE 'streamed in [0-9]+ blocks' $w/$label.log)"
}
compare() {
  python3 - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
def walk(fn):
    out = {}
    with h5py.File(fn, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = walk(sys.argv[1]), walk(sys.argv[2])
worst, bad = 0.0, []
for k, v in a.items():
    if getattr(v, "dtype", None) is None or v.dtype.kind not in "fc":
        continue
    if not np.array_equal(v, b[k], equal_nan=True):
        bad.append(k)
        worst = max(worst, float(np.nanmax(np.abs(v - b[k])) / max(np.nanmax(np.abs(v)), 1e-30)))
print("bitwise" if not bad else "differs in %d datasets, largest relative difference %.2g (%s)" % (len(bad), worst, bad[:4]))
PY
}
for alg in "prism --set simulation.interpolation_x=4 --set simulation.interpolation_y=4" \
           "multislice --set probe.focal_spread=30 --set probe.focal_points=3"; do
  name=${alg%% *}
  # shellcheck disable=SC2086
  run ${name}_whole --set simulation.algorithm=${alg}
  run ${name}_blocks --set simulation.algorithm=${alg} --set detector.probe_block=500
  echo "$name streamed vs whole (GPU): $(compare $w/${name}_whole.h5 $w/${name}_blocks.h5)"
done
