#!/usr/bin/env bash
# Final GPU acceptance run on the device machine (builds nothing; build-gpu/ and
# .device/ carried; h5py wheel carried in .whl/ for tests/check_h5.py):
#   bash benchmarks/gpu/device_final.sh
# 1. host-side tile index check; 2. GPU vs CPU engine on the Si check case
# (multislice and PRISM f=2, single-transfer and streaming, rel. RMS < 1e-4);
# 3. quickstart timed on the GPU and on all CPU cores; 4. 2 ranks sharing the GPU
# give the 1-rank result.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_final build-gpu
mkdir -p /tmp/dfw
exe=$STEMSIM
nvidia-smi -L
status=0
echo "== gpu_tiles_check"; "$build"/tests/gpu_tiles_check | tail -2 || status=1
echo "== gpu_vs_cpu"; bash tests/gpu/gpu_vs_cpu.sh "$exe" tests/check_h5.py python3 benchmarks/cases/gpu_check_si.ini /tmp/dfw/cmp \
    > "$out/gpu_vs_cpu.log" 2>&1; rc=$?; grep -E "^==|FAIL|PASS|SKIP" "$out/gpu_vs_cpu.log"; [ $rc -eq 0 ] || status=1
q=examples/quickstart.ini
time_run() { # label, args...
  local label=$1; shift
  local t0=$(date +%s.%N)
  "$@" > /tmp/dfw/run.log 2>&1 || { cat /tmp/dfw/run.log; status=1; }
  local t1=$(date +%s.%N)
  awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "| %s | %.2f | %.3f |\n", l, b - a, (b - a) / 784 * 1000 }'
}
echo "| quickstart (784 probes, 378x378 grid, 16 slices) | wall s | ms per probe |"
echo "|---|---|---|"
time_run "GPU, 1 rank" "$exe" -q --set compute.device=gpu --set output.file=/tmp/dfw/q_gpu.h5 $q
time_run "CPU, 1 rank x $(nproc) threads" "$exe" -q --set compute.device=cpu --set output.file=/tmp/dfw/q_cpu.h5 $q
time_run "GPU, 2 ranks sharing it" mpirun --oversubscribe -np 2 "$exe" -q --set compute.device=gpu --set output.file=/tmp/dfw/q_gpu2.h5 $q
time_run "GPU PRISM f=4, 1 rank" "$exe" -q --set compute.device=gpu --set simulation.algorithm=prism --set output.file=/tmp/dfw/q_p4.h5 $q
python3 tests/check_h5.py compare /tmp/dfw/q_gpu.h5 /tmp/dfw/q_cpu.h5 --tol 1e-4 | tail -1 || status=1
python3 tests/check_h5.py compare /tmp/dfw/q_gpu2.h5 /tmp/dfw/q_gpu.h5 --tol 1e-6 | tail -1 || status=1
echo "device_final: status $status"
exit $status
