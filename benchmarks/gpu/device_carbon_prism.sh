#!/usr/bin/env bash
# PRISM per configuration on the 100 Angstrom amorphous-carbon cube (issue 41, goal 4: the case
# the abTEM comparison uses; benchmarks/cases/gpu_bench.ini, 80 keV, 0.1 A, 5 A slices, 250^2 (step 0.4 A)
# probes over the cell), one GPU, builds nothing:
#   bash benchmarks/gpu/device_carbon_prism.sh [GEMM...]   (default: standard fp16x3)
# For f = 8 and f = 4 and each [debug] gpu_gemm value: the whole process with 1 and with 8
# thermal configurations, and the time per configuration after the first, (t8 - t1) / 7, with the
# number of beams and the product the log names.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_carbon_prism
w=/tmp/dcp && mkdir -p $w
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
gemms=("$@")
[ ${#gemms[@]} -gt 0 ] || gemms=(standard fp16x3)
echo "| f | gpu_gemm | beams | product | 1 configuration (s) | 8 configurations (s) | per configuration (s) |"
echo "|---|---|---|---|---|---|---|"
for f in 8 4; do
  for g in "${gemms[@]}"; do
    t=()
    for n in 1 8; do
      t0=$(date +%s.%N)
      "$STEMSIM" -v benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu \
        --set simulation.algorithm=prism --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f \
        --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.4 \
        --set simulation.thermal=true --set simulation.frozen_phonons=$n --set debug.gpu_gemm=$g \
        --set output.file=$w/out.h5 --set output.overwrite=true > $w/log 2>&1 || { echo "| $f | $g | FAILED |"; tail -2 $w/log; }
      t1=$(date +%s.%N)
      t+=("$(python3 -c "print(round($t1 - $t0, 3))")")
    done
    beams=$(grep -oE "beams \[0, [0-9]+\)" $w/log | head -1 | grep -oE "[0-9]+\)" | tr -d ')')
    prod=$(grep -E "gpu PRISM output: [0-9]+ probes" $w/log | tail -1 | sed -E 's/.*(single-transfer|streaming), (.*), tiles of.*/\2/')
    echo "| $f | $g | $beams | $prod | ${t[0]} | ${t[1]} | $(python3 -c "print(round((${t[1]} - ${t[0]}) / 7, 4))") |"
  done
done | tee "$out"/carbon_prism.md
