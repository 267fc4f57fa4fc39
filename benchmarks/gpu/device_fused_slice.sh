#!/usr/bin/env bash
# Fused GPU slices (issue 31 item 1) against cuFFT, on one GPU; builds nothing
# (build/stemsim and build/tests/gpu_kernel_check carried):
#   bash benchmarks/gpu/device_fused_slice.sh [all|dx|dxsweep|kernels|sweep|jobs]
# dx: the cuFFTDx kernels (cuda/gpu_dx_slice.cu) against the run-time ones (STEMSIM_FUSED_DX=0)
#   at 512^2 to 4096^2, and every kernel check once. dxsweep: their compiled variants
#   (STEMSIM_DX_ROWS / STEMSIM_DX_COLS, read at each launch, for benchmarks only).
# kernels: gpu_kernel_check 20 --bench: every kernel check, and the fused slices
#   ([compute] gpu_slices = fused) against cuFFT with separate multiplies (gpu_slices = cufft)
#   at 512^2 to 4096^2 with the engine's batch: max error, time per probe-slice against a
#   bare cuFFT pair, each pass alone with its bandwidth, and the floor.
# sweep: the kernels' shape at 1000^2 to 4096^2, knobs from the defaults (read when the kernels are
#   planned, for benchmarks only): STEMSIM_FUSED_RADIX = 16 (largest power-of-two radix, else 8),
#   STEMSIM_FUSED_PER_THREAD (values per thread along a line, else the largest radix),
#   STEMSIM_FUSED_COLS (columns per tile of the column pass).
# jobs: whole processes on the amorphous-carbon cube (benchmarks/cases/gpu_bench.ini,
#   1000^2): multislice, 19 600 probes, and PRISM f = 4 (its S-matrix step), each with
#   gpu_slices = cufft (the default before) and auto (the default now: the cuFFTDx kernels at
#   1000^2), compared with tests/check_h5.py compare at 1e-5.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_fused_slice
w=/tmp/dfs
mkdir -p $w
what=${1:-all}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
if [ "$what" = all ] || [ "$what" = kernels ]; then
  echo "== gpu_kernel_check 20 --bench"
  "$build"/tests/gpu_kernel_check 20 --bench | grep -E "fused|per probe-slice|per slice|FAIL|PASS|NVIDIA"
fi
if [ "$what" = all ] || [ "$what" = dx ]; then # cuFFTDx's compiled sizes against the run-time kernels
  echo "== gpu_kernel_check 5 (every check; the fused ones at small, non-square sizes)"
  "$build"/tests/gpu_kernel_check 5 | grep -E "fused|FAIL|PASS" | cut -c1-400
  for n in 256 512 1000 1024 2048 4096; do
    for knob in "" STEMSIM_FUSED_DX=0; do
      echo "== $n^2 ${knob:-cuFFTDx}"
      env $knob "$build"/tests/gpu_kernel_check 10 --fused $n | grep -E "fused|per probe-slice|FAIL" | cut -c1-400
    done
  done
fi
if [ "$what" = dxsweep ]; then # the cuFFTDx kernels' compiled variants (cuda/gpu_dx_slice.cu's lists)
  sweep() { # n, then STEMSIM_DX_ROWS=... / STEMSIM_DX_COLS=... settings
    local n=$1
    shift
    for knob in "" "$@"; do
      echo "== $n^2 ${knob:-defaults}"
      env $knob "$build"/tests/gpu_kernel_check 10 --fused $n | grep -E "per probe-slice|FAIL" | cut -c1-400
    done
  }
  sweep 256 # default only
  sweep 512 STEMSIM_DX_COLS=8,0
  sweep 1000 STEMSIM_DX_COLS=2,0
  sweep 1024 STEMSIM_DX_COLS=2,16 STEMSIM_DX_COLS=8,16 STEMSIM_DX_ROWS=4,16
  sweep 2048 STEMSIM_DX_COLS=4,8 STEMSIM_DX_ROWS=2,0
  sweep 4096 STEMSIM_DX_COLS=2,8 STEMSIM_DX_ROWS=1,8
fi
if [ "$what" = all ] || [ "$what" = sweep ]; then # the kernels' shape: knobs from the defaults
  for n in 1000 1024 2048 4096; do
    for knob in "" STEMSIM_FUSED_COLS=2 STEMSIM_FUSED_COLS=8 STEMSIM_FUSED_RADIX=16 \
      "STEMSIM_FUSED_RADIX=16 STEMSIM_FUSED_COLS=2"; do
      echo "== $n^2 ${knob:-defaults}"
      env $knob "$build"/tests/gpu_kernel_check 10 --fused $n | grep -E "per probe-slice|FAIL" | cut -c1-400
    done
  done
fi
run() { # label, stemsim arguments
  local label=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$STEMSIM" -v "$@" --set output.file=$w/out_$label.h5 --set output.overwrite=true > $w/$label.log 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "== $label: rc $rc, whole process $(python3 -c "print(round($t1 - $t0, 2))") s"
  grep -E "gpu multislice|gpu S-matrix|error" $w/$label.log | cut -c1-400 | sed -n '1,3p;$p'
  cp $w/out_$label.h5 "$out"/ 2>/dev/null
}
if [ "$what" = all ] || [ "$what" = jobs ]; then
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
  ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu)
  ms=("${ac[@]}" --set scan.x_start=20 --set scan.x_end=47.9 --set scan.y_start=20 --set scan.y_end=47.9)
  for sl in cufft auto; do run ms_$sl "${ms[@]}" --set compute.gpu_slices=$sl; done
  prism=("${ac[@]}" --set simulation.algorithm=prism --set simulation.interpolation_x=4 --set simulation.interpolation_y=4
         --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.4)
  for sl in cufft auto; do run prism_f4_$sl "${prism[@]}" --set compute.gpu_slices=$sl; done
  for job in ms prism_f4; do
    python3 tests/check_h5.py compare $w/out_${job}_auto.h5 $w/out_${job}_cufft.h5 --tol 1e-5 2>&1 | tail -4
  done
fi
