#!/usr/bin/env bash
# Restructuring guard: the same inputs through a reference build and a new
# build must give bit-identical HDF5 datasets (CPU engine).
#   bash benchmarks/cpu/bit_identical.sh REF_STEMSIM NEW_STEMSIM [WORKDIR]   (NEW_STEMSIM, WORKDIR: else STEMSIM=, OUT=)
# Reference build of an older commit, e.g. b6607a0:
#   git worktree add /tmp/ref b6607a0 && cmake -S /tmp/ref -B /tmp/ref-build -DSTEMSIM_ENABLE_CUDA=OFF \
#     && cmake --build /tmp/ref-build -j2 --target stemsim
# Cases: the quick start (1 rank), and the MPI test case on 2 ranks with
# multislice and PRISM, 3 thermal configurations and every aberration.
# Both builds plan their FFTs with FFT_PLANNING (default estimate: FFTW_ESTIMATE
# depends on nothing but the build, whereas measured plans, the default since
# fft_planning = auto, are timed on the machine; FFT_PLANNING=auto compares the
# default path of two builds sharing one wisdom cache, STEMSIM_FFT_CACHE).
set -euo pipefail
ref=$1 new=${2:-${STEMSIM:-}} work=${3:-${OUT:-/tmp/stemsim_bit_identical}}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STEMSIM_KIRKLAND=${STEMSIM_KIRKLAND:-$root/data/kirkland_params.txt}
plans=(--set compute.fft_planning=${FFT_PLANNING:-estimate})
small=("${plans[@]}" --set simulation.thermal=true --set simulation.frozen_phonons=3 --set probe.defocus=-20 --set probe.cs=0.01
       --set probe.astigmatism=5 --set probe.astigmatism_angle=20 --set output.overwrite=true)
for which in ref new; do
  exe=$ref; [ $which = new ] && exe=$new
  "$exe" -q "$root/examples/quickstart.ini" "${plans[@]}" --set output.file="$work/quickstart_$which.h5" --set output.overwrite=true
  for alg in multislice prism; do
    mpirun --oversubscribe -np 2 "$exe" -q "$root/tests/integration/small.ini" "${small[@]}" \
        --set simulation.algorithm=$alg --set output.file="$work/small_${alg}_$which.h5"
  done
done
/usr/bin/python3 - "$work" <<'PY'
import sys, h5py, numpy as np
work, bad = sys.argv[1], 0
for case in ("quickstart", "small_multislice", "small_prism"):
    a, b = h5py.File(f"{work}/{case}_new.h5", "r"), h5py.File(f"{work}/{case}_ref.h5", "r")
    names = []
    a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    new = [n for n in names if n not in b]  # datasets the reference did not write yet
    diff = [n for n in names if n in b and not np.array_equal(a[n][()], b[n][()])]
    print(f"{case}: {len(names) - len(new)} datasets, " + ("bit-identical" if not diff else f"DIFFER: {diff}")
          + (f"; new: {new}" if new else ""))
    bad += bool(diff)
sys.exit(1 if bad else 0)
PY
