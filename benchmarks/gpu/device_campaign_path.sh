#!/usr/bin/env bash
# The campaign data path on one GPU (issue "Campaigns at tomography scale"); builds nothing
# (build/ with CUDA and .device/ carried):
#   bash benchmarks/gpu/device_campaign_path.sh [paper|tomo_rings|tomo|all]
# - paper: the Prismatic paper's SrTiO3 slab (benchmarks/cases/paper_srtio3.ini: 162 000
#   atoms, 1024^2, 720^2 probes, rings + 3 images), PRISM f = 16, 32 configurations, with
#   [output] standard_errors = true and false, alternating, two runs each: whole process
#   (start to file closed) and the log's phases; goal: on <= 1.05 x off.
# - tomo_rings: the 65-tilt x 16-configuration PRISM f = 8 campaign of the amorphous-carbon
#   cube (benchmarks/gpu/device_tomography.sh full) with 1 mrad rings (save_3d = true),
#   stopped by SIGTERM half-way and resumed: whole process, disk peak (checkpoint + output);
#   goal <= 180 s on the GPU machine's 64 GB disk.
# - tomo: the same without rings; goal <= 150 s.
# Prints a markdown table of the measurements last (for benchmarks/results/CAMPAIGN_PATH.md).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_campaign_path
what=${1:-all}
w=/tmp/dcp
rm -rf $w && mkdir -p $w
rows=()
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
df -h /tmp | tail -1
paper() { # label, extra --set arguments: one whole-process run of the paper case
  local label=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$STEMSIM" benchmarks/cases/paper_srtio3.ini --set compute.device=gpu --set simulation.interpolation_x=16 \
    --set simulation.interpolation_y=16 --set output.file=$w/$label.h5 --set output.overwrite=true "$@" > $w/$label.log 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  local wall
  wall=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  echo "== $label: rc $rc, whole process $wall s"
  grep -A2 "time per phase" $w/$label.log | sed -n 2p
  cp $w/$label.log "$out"/ 2>/dev/null
  eval "wall_$label=$wall"
}
if [ "$what" = all ] || [ "$what" = paper ]; then
  for r in 1 2; do
    paper se_on_$r --set output.standard_errors=true
    paper se_off_$r --set output.standard_errors=false
  done
  ratio=$(python3 -c "print(f'{min($wall_se_on_1, $wall_se_on_2) / min($wall_se_off_1, $wall_se_off_2):.3f}')")
  echo "paper f = 16, 32 configurations: standard errors on / off = $ratio (best of two runs each)"
  rows+=("| paper SrTiO3, PRISM f = 16, 32 configurations, rings + 3 images | standard errors on $wall_se_on_1 / $wall_se_on_2 s, off $wall_se_off_1 / $wall_se_off_2 s | on / off = $ratio (goal <= 1.05) |")
  se_row="$ratio (on $wall_se_on_1 / $wall_se_on_2 s, off $wall_se_off_1 / $wall_se_off_2 s)"
fi
tomo() { # label, extra --set arguments
  local label=$1
  shift
  echo "== $label"
  OUT=$out/$label bash benchmarks/gpu/device_tomography.sh full "$@" 2>&1 | tee $w/$label.txt
  local total peak
  total=$(grep -oE "whole process [0-9.]+ s" $w/$label.txt | grep -oE "[0-9.]+" | head -1)
  peak=$(grep -oE "disk peak: [0-9.]+ GB \(checkpoint [0-9.]+ GB\)" $w/$label.txt | head -1)
  rows+=("| 65 tilts x 16 configurations, aC PRISM f = 8, 62 500 probes, $label (SIGTERM half-way + resume) | ${total:-?} s in all | $peak |")
  eval "total_$label=${total:-?}"
  eval "peak_$label='${peak:-?}'"
}
if [ "$what" = all ] || [ "$what" = tomo_rings ]; then
  tomo tomo_rings --set detector.save_3d=true --set detector.ring_width=1
fi
if [ "$what" = all ] || [ "$what" = tomo ]; then
  tomo tomo
fi
echo
echo "| case | measured | note |"
echo "|---|---|---|"
for r in "${rows[@]}"; do echo "$r"; done
# the summary table's row (benchmarks/summary.py merge $out/summary_rows.csv) once every part ran
if [ "$what" = all ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/NVIDIA //')
  python3 - "$out/summary_rows.csv" "$gpu" "${total_tomo_rings:-?}" "${peak_tomo_rings:-?}" "${total_tomo:-?}" "${se_row:-?}" <<'PY'
import csv, sys
path, gpu, rings, peak, plain, se = sys.argv[1:]
row = {"key": "campaign_path", "case": "65 tilts x 16 configurations (aC, PRISM f = 8, 62 500 probes, SIGTERM + resume); "
       "paper SrTiO3 f = 16, 32 configurations", "measure": "s, whole process; standard errors on / off",
       "stemsim": f"with 1 mrad rings {rings} s ({peak}); without {plain} s; SE on / off {se}", "peers": "-",
       "floor": "goals 180 s / 150 s / 1.05", "machine": gpu, "source": "results/CAMPAIGN_PATH.md"}
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(row), lineterminator="\n")
    w.writeheader()
    w.writerow(row)
PY
fi
