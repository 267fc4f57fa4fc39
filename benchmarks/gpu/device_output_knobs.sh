#!/usr/bin/env bash
# The GPU PRISM output step's knobs on the paper case (issue 41, goal 2), one GPU, builds nothing:
#   bash benchmarks/gpu/device_output_knobs.sh [CONFIGURATIONS] [KEY=VALUE,KEY=VALUE ...]
# benchmarks/cases/paper_srtio3.ini at f = 4 with N configurations (default 2), once with the
# defaults and once per argument (comma-separated --set pairs, e.g. compute.streams_per_gpu=3 or
# debug.gpu_tile=24): whole process and the output step's compute time of the last configuration.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_output_knobs
n=${1:-2}
shift $(($# > 0 ? 1 : 0))
w=/tmp/doknobs && mkdir -p $w
base=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4
      --set compute.device=gpu --set simulation.frozen_phonons=$n --set output.file=$w/p.h5 --set output.overwrite=true)
echo "| knobs | whole process (s) | output step, last configuration |"
echo "|---|---|---|"
for v in defaults "$@"; do
  sets=()
  [ "$v" != defaults ] && for kv in ${v//,/ }; do sets+=(--set "$kv"); done
  t0=$(date +%s.%N)
  "$STEMSIM" -v "${base[@]}" "${sets[@]}" > $w/log 2>&1 || { echo "| $v | FAILED | $(tail -1 $w/log | cut -c1-120) |"; continue; }
  t1=$(date +%s.%N)
  last=$(grep -E "gpu PRISM output: [0-9]+ probes" $w/log | tail -1 | sed -E 's/.*(tiles of [0-9]+ x [0-9]+ \([0-9]+\)): ([0-9.]+ s compute).*/\1, \2/')
  echo "| $v | $(python3 -c "print(round($t1 - $t0, 2))") | $last |"
done | tee "$out"/output_knobs.md
