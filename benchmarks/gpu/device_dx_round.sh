#!/usr/bin/env bash
# Issue 41, goal 1 with the cuFFTDx slice kernels (cuda/gpu_dx_slice.cu, [compute] gpu_slices =
# auto): every measurement of the round in one call, on one GPU; builds nothing:
#   bash benchmarks/gpu/device_dx_round.sh
# 1. device_fused_slice.sh dx: the kernel checks, then per probe-slice at 256^2 to 4096^2 with
#    the engine's batch: cuFFT pair, cuFFT + separate multiplies, cuFFTDx, stemsim's own kernels;
# 2. device_fused_slice.sh jobs: the amorphous-carbon cube (1000^2), multislice (19 600 probes) and
#    PRISM f = 4, gpu_slices = cufft against auto, whole process, the outputs compared;
# 3. the paper case (benchmarks/cases/paper_srtio3.ini, 1024^2, 32 configurations) at f = 16 / 8 / 4
#    with the defaults, and f = 16 with gpu_slices = cufft (the S-matrix step is most of f = 16);
# 4. device_tomography.sh part 2 (65 tilts x 2 configurations of the campaign) with auto and cufft:
#    seconds per unit and the per-phase sums.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_dx_round
w=/tmp/ddx
mkdir -p $w
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
echo "#### 1. slices"
OUT=$out/slices bash benchmarks/gpu/device_fused_slice.sh dx | grep -E "==|per probe-slice|FAIL|PASS" |
  sed -E 's/\| per probe-slice \| ([^|]*)\| cuFFT pair ([0-9.]+) us \| cuFFT \+ separate multiplies ([0-9.]+) us \| fused ([0-9.]+) us[^|]*\| row pass ([0-9.]+) us[^,]*, column pass ([0-9.]+) us[^|]*\| floor ([0-9.]+) us.*/\1: pair \2, cufft + multiplies \3, fused \4 (rows \5, cols \6), floor \7/'
echo "#### 2. amorphous carbon jobs"
OUT=$out/jobs bash benchmarks/gpu/device_fused_slice.sh jobs
echo "#### 3. paper case, 32 configurations"
paper() { # label, extra arguments
  local label=$1 t0 t1 rc
  shift
  t0=$(date +%s.%N)
  "$STEMSIM" -v benchmarks/cases/paper_srtio3.ini --set compute.device=gpu --set simulation.frozen_phonons=32 \
    --set output.file=$w/$label.h5 --set output.overwrite=true "$@" > $w/$label.log 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "== $label: rc $rc, whole process $(python3 -c "print(round($t1 - $t0, 2))") s"
  grep -E "gpu S-matrix|time per phase|error" $w/$label.log | cut -c1-300 | sed -n '1p;$p'
}
for f in 16 8 4; do
  paper paper_f$f --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f
done
paper paper_f16_cufft --set simulation.interpolation_x=16 --set simulation.interpolation_y=16 \
  --set compute.gpu_slices=cufft
echo "#### 4. campaign, 65 tilts x 2 configurations"
for sl in auto cufft; do
  echo "== gpu_slices = $sl"
  OUT=$out/tomo_$sl bash benchmarks/gpu/device_tomography.sh part 2 --set compute.gpu_slices=$sl 2>&1 | tail -12
done
