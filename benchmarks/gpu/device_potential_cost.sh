#!/usr/bin/env bash
# Cost of the grid-independent potential (issue 26) on the GPU machine, builds nothing:
#   bash benchmarks/gpu/device_potential_cost.sh [OLD_BINARY]
# For each case, one probe (so that the potential dominates) on the GPU engine and on the
# CPU engine (16 threads): the time stemsim logs for the profile/lookup table and for the
# transmission functions of one configuration, with the binary before the change (OLD_BINARY,
# default bench-bin/stemsim-old: 816fecf, the pixel-averaged lookup) and the current one,
# auto oversampling and oversampling 1 (the new potential alone).
# Cases: the 100 A amorphous-carbon cube (gpu_bench.ini: 80 keV, 0.1 A pixels -> 1000^2,
# 5 A slices: 20 slices, ~100,000 atoms; auto oversampling 2) and a 1000^2 crystal
# (SrTiO3 [001] 13 x 13 x 10 cells, 50.8 A at 0.05 A pixels, 2 A slices; auto oversampling 4).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_potential_cost
old=${1:-bench-bin/stemsim-old}
w=/tmp/dpc && mkdir -p $w
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
python3 - "$w/sto.xyz" <<'EOF'
import sys
a = 3.905
cell = [(38, 0, 0, 0), (22, .5, .5, .5), (8, .5, .5, 0), (8, .5, 0, .5), (8, 0, .5, .5)]
n, nz = 13, 10
rows = ["%d %.5f %.5f %.5f 1 0.08" % (Z, (i + x) * a, (j + y) * a, (k + z) * a)
        for i in range(n) for j in range(n) for k in range(nz) for (Z, x, y, z) in cell]
open(sys.argv[1], "w").write("SrTiO3 %dx%dx%d\n%.5f %.5f %.5f\n%s\n" % (n, n, nz, n * a, n * a, nz * a, "\n".join(rows)))
EOF
one_probe=(--set scan.x_start=40 --set scan.x_end=40 --set scan.y_start=40 --set scan.y_end=40 --set output.overwrite=true
           --set detector.save_3d=false)
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz "${one_probe[@]}")
sto=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/sto.xyz --set beam.energy=300 --set simulation.pixel_size=0.05
     --set simulation.slice_thickness=1.9525 "${one_probe[@]}" --set scan.x_start=20 --set scan.x_end=20
     --set scan.y_start=20 --set scan.y_end=20)
phase() { grep -E "seconds: table" "$1" | head -1 | sed -E 's/.*seconds: //'; }
echo "| case | engine | binary | oversampling | grid (potential's) | table, transmission (s) | wall (s) |"
echo "|---|---|---|---|---|---|---|"
for case in ac sto; do
  declare -n args=$case
  for dev in gpu cpu; do
    for run in "old:$old:" "new:$STEMSIM:auto" "new:$STEMSIM:1"; do
      IFS=: read -r label bin os <<< "$run"
      [ -x "$bin" ] || { echo "| $case | $dev | $label | - | missing $bin | | |"; continue; }
      set_os=(); [ -n "$os" ] && set_os=(--set simulation.transmission_oversampling=$os)
      t0=$(date +%s.%N)
      $bin "${args[@]}" --set compute.device=$dev --set compute.threads=16 "${set_os[@]}" \
        --set output.file=$w/$case-$dev-$label-$os.h5 > $w/log 2>&1 || { echo "| $case | $dev | $label | $os | FAILED | | |"; tail -3 $w/log; continue; }
      t1=$(date +%s.%N)
      grid=$(grep -E "transmission +formed" $w/log | sed -E 's/.*formed on a ([0-9]+)x.*/\1x/')
      echo "| $case | $dev | $label | ${os:--} | ${grid:--} | $(phase $w/log) | $(python3 -c "print(round($t1 - $t0, 2))") |"
    done
  done
done
