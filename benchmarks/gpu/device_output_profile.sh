#!/usr/bin/env bash
# Where the GPU PRISM output step spends its time (issue 41, goal 2), on one GPU; builds nothing:
#   bash benchmarks/gpu/device_output_profile.sh [CONFIGURATIONS]
# The Prismatic paper's SrTiO3 case at f = 4 (benchmarks/cases/paper_srtio3.ini, default 2
# frozen-phonon configurations) under Nsight Systems where `nsys` is found: the kernels' and the
# CUDA API calls' summed times (nsys stats) into $OUT/output_profile.txt; without nsys, only
# the run's -v log.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_output_profile
n=${1:-2}
w=/tmp/doprof && mkdir -p $w
args=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4
      --set compute.device=gpu --set simulation.frozen_phonons=$n --set output.file=$w/p.h5 --set output.overwrite=true)
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -z "$nsys" ]; then
  echo "nsys not found: the -v log only"
  "$STEMSIM" -v "${args[@]}" > "$out"/output_profile.log 2>&1
  grep -E "gpu PRISM output|rank 0:" "$out"/output_profile.log | cut -c1-300
  exit 0
fi
"$nsys" profile -o $w/prof --force-overwrite true --trace cuda "$STEMSIM" -v "${args[@]}" > "$out"/output_profile.log 2>&1
"$nsys" stats --report cuda_gpu_kern_sum --report cuda_api_sum --report cuda_gpu_mem_time_sum --format csv \
  --output $w/stats $w/prof.nsys-rep > /dev/null 2>&1
for f in $w/stats*.csv; do
  echo "== $(basename "$f")"
  python3 - "$f" << 'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = next((k for k in (rows[0].keys() if rows else []) if k.startswith("Total Time")), None)
for r in rows[:14]:
    name = (r.get("Name") or r.get("Operation") or "")[:90]
    print(f"{float(r[key]) / 1e9:9.3f} s  {r.get('Instances', r.get('Num Calls', r.get('Count', '')))!s:>8}  {name}")
PY
done | tee "$out"/output_profile.txt
grep -E "gpu PRISM output: [0-9]|rank 0:" "$out"/output_profile.log | cut -c1-300
