#!/usr/bin/env bash
# The potentials on the GPU (builds nothing; build/, .device/ and .whl/ carried):
#   bash benchmarks/gpu/device_potential_checks.sh
# The GPU builds the transmission functions itself from the lookup kernels: with the finite
# projection each atom enters several slices through several depth kernels. GPU engine =
# CPU engine for the finite projection and for Lobato (multislice and PRISM, 3 thermal
# configurations, the GPU-built and the CPU-built transmission functions), and a run reading
# the slices back (potential_file) on the GPU = the CPU run that wrote them.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_potential_checks
status=0
mkdir -p /tmp/dpc
si=(benchmarks/cases/gpu_check_si.ini -q --set scan.step=0.8 --set output.overwrite=true --set simulation.thermal=true
    --set simulation.frozen_phonons=3 --set simulation.slice_thickness=0.679)
for alg in multislice prism; do
  for p in "simulation.projection=finite" "simulation.parametrisation=lobato"; do
    "$STEMSIM" "${si[@]}" --set simulation.algorithm=$alg --set $p --set compute.device=cpu \
      --set output.save_potential=true --set output.file=/tmp/dpc/c.h5 || status=1
    for v in debug.gpu_transmission=auto debug.gpu_transmission=off; do
      "$STEMSIM" "${si[@]}" --set simulation.algorithm=$alg --set $p --set compute.device=gpu --set $v \
        --set output.file=/tmp/dpc/g.h5 || status=1
      echo "$alg, $p, $v: $(python3 tests/check_h5.py compare /tmp/dpc/g.h5 /tmp/dpc/c.h5 --tol 1e-4 | tail -1)"
      python3 tests/check_h5.py compare /tmp/dpc/g.h5 /tmp/dpc/c.h5 --tol 1e-4 | grep -q PASS || status=1
    done
    "$STEMSIM" "${si[@]}" --set simulation.algorithm=$alg --set $p --set compute.device=gpu \
      --set simulation.potential_file=/tmp/dpc/c.h5 --set output.file=/tmp/dpc/r.h5 || status=1
    echo "$alg, $p, potential_file on the GPU: $(python3 tests/check_h5.py compare /tmp/dpc/r.h5 /tmp/dpc/c.h5 --tol 1e-4 | tail -1)"
    python3 tests/check_h5.py compare /tmp/dpc/r.h5 /tmp/dpc/c.h5 --tol 1e-4 | grep -q PASS || status=1
  done
done
echo "device_potential_checks: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
