#!/usr/bin/env bash
# FP32-accurate tensor-core products for the PRISM output step (issue 31, item 2), on one GPU;
# builds nothing (the binary and build/tests/gpu_kernel_check are looked up as device_env.sh says):
#   bash benchmarks/gpu/device_tf32x3.sh kernels
#   bash benchmarks/gpu/device_tf32x3.sh paper N GEMM...   (e.g. paper 2 standard tf32 tf32x3 fp16x3:24)
# (GEMM: a [debug] gpu_gemm value, optionally :S for [debug] gpu_gemm_steps = S)
# kernels: gpu_kernel_check 20 --split-gemm: every kernel check, the tile product of each
#   [debug] gpu_gemm kind against windows summed in double, and the products timed at the paper
#   case's f = 4 shape (134 x 134 region pixels, 256 probes, 885 beams) with their error there.
# paper: the Prismatic paper's SrTiO3 case (benchmarks/cases/paper_srtio3.ini) at f = F (env, default 4) with N
#   frozen-phonon configurations, once per [debug] gpu_gemm value named: whole-process time, the
#   output step's log lines, and each run's images against the first value's (standard):
#   per dataset the relative RMS (||a - b|| / ||b||) and the largest difference over the largest
#   value (max |a - b| / max |b|).
# Logs and the output files' comparisons go to $OUT.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_tf32x3
w=/tmp/dtf32
mkdir -p $w
what=${1:-kernels}
if [ "$what" = kernels ]; then
  "$build"/tests/gpu_kernel_check 20 --split-gemm | tee "$out"/kernel_check.txt
  exit "${PIPESTATUS[0]}"
fi
[ "$what" = paper ] || { echo "usage: $0 kernels | paper N GEMM..." >&2; exit 2; }
n=${2:-2}
shift $(($# < 2 ? $# : 2))
if [ $# -gt 0 ]; then gemms=("$@"); else gemms=(standard tf32x3); fi
f=${F:-4}
p4=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f
    --set compute.device=gpu --set simulation.frozen_phonons=$n)
for g in "${gemms[@]}"; do
  label=paper_f${f}_${n}cfg_${g/:/_steps}
  steps=(); [[ $g == *:* ]] && steps=(--set debug.gpu_gemm_steps=${g#*:})
  t0=$(date +%s.%N)
  "$STEMSIM" -v "${p4[@]}" --set debug.gpu_gemm=${g%%:*} "${steps[@]}" --set output.file=$w/$label.h5 \
    --set output.overwrite=true > $w/$label.log 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "== $label: rc $rc, whole process $(python3 -c "print(round($t1 - $t0, 2))") s"
  grep -E "gpu PRISM output: [0-9]|time per phase|rank 0:|error" $w/$label.log | cut -c1-330 | sed -n '1p;$p'
  cp $w/$label.log "$out"/ 2>/dev/null
done
ref=$w/paper_f${f}_${n}cfg_${gemms[0]/:/_steps}.h5
for g in "${gemms[@]:1}"; do
  echo "== $g against ${gemms[0]} ($n configurations): relative RMS and max |a - b| / max |b| per dataset"
  python3 - "$w/paper_f${f}_${n}cfg_${g/:/_steps}.h5" "$ref" << 'EOF' | tee -a "$out"/image_differences.txt
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
b.visititems(lambda k, v: names.append(k) if isinstance(v, h5py.Dataset) and v.dtype.kind in "fc" else None)
for k in names:
    if k not in a or a[k].shape != b[k].shape or b[k].size < 2:
        continue
    x, y = np.asarray(a[k], np.float64), np.asarray(b[k], np.float64)
    rms = np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-300)
    mx = np.abs(x - y).max() / max(np.abs(y).max(), 1e-300)
    print(f"  {k}: relative RMS {rms:.2e}, max {mx:.2e}{'' if rms <= 1e-6 else '  (above 1e-6)'}")
EOF
done
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
