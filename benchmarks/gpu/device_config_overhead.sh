#!/usr/bin/env bash
# Where a configuration's wall time goes on one GPU (performance issue, "per-configuration
# overhead"): the 100 Angstrom amorphous-carbon cube (benchmarks/cases/gpu_make_amorphous_carbon.py,
# benchmarks/cases/gpu_bench.ini), whole process timed from start to file closed, one rank on one GPU:
#   PRISM f=8 over the whole cell (250 000 probes) with 1 and with 16 thermal configurations,
#   multislice over 19 600 probes (1 configuration).
# Prints each run's wall time and the phase lines of its log (rank 0: table, transmission,
# S-matrix, output, write, other; the GPU engine's own kernel times where it logs them).
# Builds nothing; build/, .device/ and .whl/ carried:
#   bash benchmarks/gpu/device_config_overhead.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_config_overhead
w=/tmp/dco
mkdir -p $w
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu --set output.overwrite=true)
prism=("${ac[@]}" --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
       --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set simulation.thermal=true)
run() { # label, stemsim arguments
  local label=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$STEMSIM" -v "$@" --set output.file=$w/out.h5 > $w/$label.log 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "== $label: rc $rc, whole process $(python3 -c "print(round($t1 - $t0, 2))") s"
  grep -E "GPU engine|gpu PRISM|configuration [0-9]+ of [0-9]+ on rank 0|^  rank 0: |wrote .* in|lookup table: done|radial potential" \
    $w/$label.log | cut -c1-220 | sed -n '1,12p;$p'
  cp $w/$label.log "$out"/ 2>/dev/null
}
run prism_f8_1config "${prism[@]}" --set simulation.frozen_phonons=1
run prism_f8_16configs "${prism[@]}" --set simulation.frozen_phonons=16
run multislice_1config "${ac[@]}" --set scan.x_start=20 --set scan.x_end=47.9 --set scan.y_start=20 --set scan.y_end=47.9
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
