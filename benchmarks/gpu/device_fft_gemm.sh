#!/usr/bin/env bash
# The GPU engine against the hardware (performance issue, "GPU engine: close to the
# hardware"), on one GPU; builds nothing (build/, .device/ and .whl/ carried):
#   bash benchmarks/gpu/device_fft_gemm.sh
# 1. gpu_kernel_check --bench: a slice with the multiplies inside cuFFT's loads
#    ([compute] fft_callbacks) = with separate kernels, and both timed per slice against
#    a bare forward + inverse cuFFT pair of the same batch (1000^2 and 1024^2, batch 8); also
#    the split tensor-core products at the paper shape (benchmarks/gpu/device_tf32x3.sh).
# 2. The amorphous-carbon cube (benchmarks/cases/gpu_bench.ini): multislice 19 600 probes and
#    PRISM f = 4 (4 configurations), fft_callbacks on against off; the PRISM output's
#    CGEMMs in the step against the same calls alone ([debug] gpu_gemm_check), with 1 and
#    2 streams per GPU.
# 3. The paper's SrTiO3 slab (benchmarks/cases/paper_srtio3.ini, 32 configurations) at f = 16, 8, 4.
# `gemm3m` (not in all): the paper's f = 4 job with cublasCgemm3m, its difference printed.
# `tiles` (not in all): the paper's f = 4 with 2 configurations, output tiles of 16 (auto),
#   24 and 32 probes a side, and [debug] gpu_gemm = tf32 with its difference printed.
# `tf32` (not in all): the paper's whole f = 4 job with [debug] gpu_gemm = tf32.
# `split` (not in all): the output CGEMM's shapes timed alone, and the paper's f = 4 job against
#   "$build"/stemsim_before (2 configurations; measured with the products cut into 64-column
#   multiples and the rest, which was not faster and was taken out again).
# Prints each run's whole-process time and its GPU log lines; logs are copied to $OUT.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_fft_gemm
w=/tmp/dfg
mkdir -p $w
what=${1:-all}
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
run() { # label, stemsim arguments
  local label=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$STEMSIM" -v "$@" --set output.file=$w/out_$label.h5 --set output.overwrite=true > $w/$label.log 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "== $label: rc $rc, whole process $(python3 -c "print(round($t1 - $t0, 2))") s"
  grep -E "gpu multislice|gpu S-matrix|gpu PRISM output|error" $w/$label.log | cut -c1-400 | sed -n '1,3p;$p'
  cp $w/$label.log "$out"/ 2>/dev/null
}
if [ "$what" = all ] || [ "$what" = kernels ]; then
  echo "== gpu_kernel_check 20 --bench"
  "$build"/tests/gpu_kernel_check 20 --bench
fi
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu)
if [ "$what" = all ] || [ "$what" = ac ]; then
  ms=("${ac[@]}" --set scan.x_start=20 --set scan.x_end=47.9 --set scan.y_start=20 --set scan.y_end=47.9)
  for cb in on off; do run ms_cb_$cb "${ms[@]}" --set compute.fft_callbacks=$cb; done
  python3 tests/check_h5.py compare $w/out_ms_cb_on.h5 $w/out_ms_cb_off.h5 --tol 1e-5 | tail -1
  prism=("${ac[@]}" --set simulation.algorithm=prism --set simulation.interpolation_x=4 --set simulation.interpolation_y=4
         --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.4
         --set simulation.thermal=true --set simulation.frozen_phonons=4 --set debug.gpu_gemm_check=true)
  for cb in on off; do run prism_f4_cb_$cb "${prism[@]}" --set compute.fft_callbacks=$cb; done
  python3 tests/check_h5.py compare $w/out_prism_f4_cb_on.h5 $w/out_prism_f4_cb_off.h5 --tol 1e-5 | tail -1
  run prism_f4_1stream "${prism[@]}" --set compute.streams_per_gpu=1
fi
if [ "$what" = all ] || [ "$what" = paper ]; then
  for f in 16 8 4; do
    run paper_f$f benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f \
      --set compute.device=gpu --set debug.gpu_gemm_check=true
  done
fi
if [ "$what" = gemm3m ]; then # the paper's f = 4 job with cublasCgemm3m ([debug] gpu_gemm = 3m) against standard CGEMM
  p4=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4 --set compute.device=gpu)
  [ -f $w/out_paper_f4.h5 ] || run paper_f4 "${p4[@]}" --set debug.gpu_gemm_check=true
  run paper_f4_3m "${p4[@]}" --set debug.gpu_gemm=3m --set debug.gpu_gemm_check=true
  grep -E "time per phase|rank 0:" $w/paper_f4_3m.log | tail -2
  echo "3m against standard CGEMM (relative RMS per dataset):"
  python3 tests/check_h5.py compare $w/out_paper_f4_3m.h5 $w/out_paper_f4.h5 --tol 1e-5 | tail -12
fi
if [ "$what" = tiles ]; then # the paper's f = 4 output step, 2 configurations: tile edges and the TF32 path
  p4=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4 --set compute.device=gpu
      --set simulation.frozen_phonons=2)
  for tile in 0 24 32; do run paper_f4_2cfg_tile$tile "${p4[@]}" --set debug.gpu_tile=$tile; done
  run paper_f4_2cfg_tf32 "${p4[@]}" --set debug.gpu_gemm=tf32
  echo "TF32 against standard CGEMM (relative RMS per dataset):"
  python3 tests/check_h5.py compare $w/out_paper_f4_2cfg_tf32.h5 $w/out_paper_f4_2cfg_tile0.h5 --tol 1e-2 | tail -9
  for tile in 24 32; do python3 tests/check_h5.py compare $w/out_paper_f4_2cfg_tile$tile.h5 $w/out_paper_f4_2cfg_tile0.h5 --tol 1e-6 | tail -1; done
fi
if [ "$what" = tf32 ]; then # the paper's whole f = 4 job (32 configurations) with [debug] gpu_gemm = tf32
  run paper_f4_tf32 benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4 \
    --set compute.device=gpu --set debug.gpu_gemm=tf32
  grep -E "time per phase|rank 0:" $w/paper_f4_tf32.log | tail -2
fi
if [ "$what" = split ]; then # the output CGEMM cut into 64-column multiples: the paper's f = 4 against the previous binary
  p4=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4 --set compute.device=gpu)
  "$build"/tests/gpu_kernel_check 20 --bench | grep "output CGEMM"
  run paper_f4_2cfg_split "${p4[@]}" --set simulation.frozen_phonons=2
  t0=$(date +%s.%N)
  "$build"/stemsim_before "${p4[@]}" --set simulation.frozen_phonons=2 --set output.file=$w/out_before.h5 --set output.overwrite=true -q
  echo "== previous binary, 2 configurations: $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  python3 tests/check_h5.py compare $w/out_paper_f4_2cfg_split.h5 $w/out_before.h5 --tol 1e-6 | tail -6
  run paper_f4_split "${p4[@]}"
  grep -E "time per phase|rank 0:" $w/paper_f4_split.log | tail -2
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
