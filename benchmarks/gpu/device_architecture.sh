#!/usr/bin/env bash
# GPU checks of the architecture restructuring (builds nothing; build/ with
# build/ref/stemsim, the reference build of b6607a0 with CUDA, .device/ and
# .whl/ carried):
#   bash benchmarks/gpu/device_architecture.sh
# 1. GPU engine = CPU engine (tests/gpu/gpu_vs_cpu.sh, which now takes the
# device-resident S-matrix path for PRISM), each kernel against
# its plain-C reference ("$build"/tests/gpu_kernel_check); 2. --dry-run describes
# the GPU engine; 3. before/after on the amorphous-carbon case (the Prismatic
# paper's: 100 A cube, 80 keV, 0.1 A pixels, 5 A slices), PRISM f = 8, whole
# cell at 0.2 A (250 000 probes), 4 thermal configurations, f = 8 and 4:
# whole-process wall time of the reference build, the new build with the
# S-matrix copied through the host (debug.gpu_prism_resident=off) and kept on
# the GPU (default); results compared (resident = host path within the GPU's own
# run-to-run spread from the detector kernel's atomics, 2e-8 relative RMS).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_architecture
mkdir -p /tmp/daw
new=$STEMSIM ref=$build/ref/stemsim
nvidia-smi -L
status=0
echo "== gpu_vs_cpu (new build)"
bash tests/gpu/gpu_vs_cpu.sh "$new" tests/check_h5.py python3 benchmarks/cases/gpu_check_si.ini /tmp/daw/cmp > "$out/gpu_vs_cpu.log" 2>&1
rc=$?; grep -E "^==|check_h5.py" "$out/gpu_vs_cpu.log"; [ $rc -eq 0 ] || status=1
echo "== kernel checks (tests/gpu/kernel_check.cu)"
"$build"/tests/gpu_kernel_check 50 || status=1
echo "== [debug] kernel variants (were environment variables): each against the CPU engine"
"$new" -q benchmarks/cases/gpu_check_si.ini --set simulation.algorithm=prism --set compute.device=cpu --set scan.step=0.8 \
    --set output.file=/tmp/daw/v_cpu.h5 --set output.overwrite=true || status=1
for v in gpu_prism_output=direct gpu_gemm=3m gpu_tile=3; do
  "$new" benchmarks/cases/gpu_check_si.ini --set simulation.algorithm=prism --set compute.device=gpu --set scan.step=0.8 \
      --set debug.$v --set output.file=/tmp/daw/v.h5 --set output.overwrite=true > /tmp/daw/v.log 2>&1 || status=1
  echo "debug.$v: $(grep -m1 -E '^gpu PRISM output' /tmp/daw/v.log | cut -c1-150)"
  python3 tests/check_h5.py compare /tmp/daw/v.h5 /tmp/daw/v_cpu.h5 --tol 1e-4 --datasets images,rings,cbed | tail -1 || status=1
done
echo "== dry run, GPU PRISM"
"$new" -n benchmarks/cases/gpu_check_si.ini --set simulation.algorithm=prism --set compute.device=gpu \
    --set output.file=/tmp/daw/dry.h5 2>&1 | grep -E "GPU|engine|memory"
python3 benchmarks/cases/gpu_make_amorphous_carbon.py /tmp/daw/aC.xyz > /dev/null
case=(benchmarks/cases/gpu_bench.ini --set sample.xyz=/tmp/daw/aC.xyz --set simulation.algorithm=prism
      --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set scan.x_start=0 --set scan.y_start=0
      --set scan.x_end=100 --set scan.y_end=100 --set simulation.thermal=true --set simulation.frozen_phonons=4
      --set compute.device=gpu -q)
echo "| build | aC PRISM, 250 000 probes, 4 configurations: wall s (whole process) |"
echo "|---|---|"
for f in 8 4; do
  for rep in 1 2; do
    for which in ref host resident; do
      exe=$new extra=(); [ $which = ref ] && exe=$ref; [ $which = host ] && extra=(--set debug.gpu_prism_resident=off)
      t0=$(date +%s.%N)
      "$exe" "${case[@]}" --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f "${extra[@]}" \
          --set output.file=/tmp/daw/aC_$which.h5 -v > /tmp/daw/aC_${which}_f$f.log 2>&1 || { status=1; tail -5 /tmp/daw/aC_${which}_f$f.log; }
      t1=$(date +%s.%N)
      echo "| f=$f $which (run $rep) | $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') |"
    done
  done
  grep -m1 "kept on the GPU" /tmp/daw/aC_resident_f$f.log | cut -c1-160
  python3 tests/check_h5.py compare /tmp/daw/aC_resident.h5 /tmp/daw/aC_ref.h5 --tol 1e-5 --datasets images,rings | tail -1 || status=1
  python3 tests/check_h5.py compare /tmp/daw/aC_resident.h5 /tmp/daw/aC_host.h5 --tol 1e-6 --datasets images,rings | tail -1 || status=1
done
echo "device_architecture: status $status"
exit $status
