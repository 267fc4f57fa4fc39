#!/usr/bin/env bash
# CPU strong scaling on the GPU machine's 16 cores (issue 14): the 100 Angstrom
# amorphous-carbon cube (benchmarks/cases/gpu_make_amorphous_carbon.py, generated here),
# 80 keV, 0.1 Angstrom pixels, CPU engine, one rank per core (bound), then one rank
# with 16 threads. Builds nothing (build/ and .device/ carried):
#   bash benchmarks/gpu/device_scaling.sh [ms|prism|all] [RANKS...]
# Environment: STEMSIM_BUILD (build directory, default build), SCALING_SET (extra
# section.key=value settings, space separated) and SCALING_TAG (suffix of the case
# names, e.g. _private for SCALING_SET=compute.node_shared=false).
# ms:    multislice, 10 x 10 = 100 probes (x, y 40 .. 42 Angstrom, step 0.2)
# prism: PRISM f = 8, 125 x 125 = 15 625 probes (the whole cell, step 0.8)
# Writes $OUT/scaling_<case>.csv: case, ranks, threads, wall seconds (whole process),
# then rank 0's and the slowest rank's seconds per phase (stemsim -v), and the logs.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_scaling
mode=${1:-all}
shift || true
ranks_list=${*:-1 2 4 8 16}
exe=$STEMSIM
tag=${SCALING_TAG:-}
extra=()
for kv in ${SCALING_SET:-}; do extra+=(--set "$kv"); done
work=/tmp/dscal
mkdir -p "$work"
python3 benchmarks/cases/gpu_make_amorphous_carbon.py "$work/aC.xyz" > /dev/null
base=(benchmarks/cases/gpu_bench.ini --set sample.xyz="$work/aC.xyz" --set compute.device=cpu -v "${extra[@]}")
ms=(--set scan.x_end=42 --set scan.y_end=42)
prism=(--set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
       --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.8)
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); /dev/shm $(df -h --output=avail /dev/shm | tail -1 | xargs) free; settings: ${SCALING_SET:-none}"

# phases LOG WHO: "name=seconds;..." from the -v summary line of WHO (rank 0 | slowest rank)
phases() { grep "^  $2:" "$1" | head -1 | sed -E "s/^  $2: *//; s/ ([0-9.]+)/=\1/g; s/, /;/g"; }

# one CASE RANKS THREADS BIND args...
one() {
  local name=$1 np=$2 th=$3 bind=$4; shift 4
  local log=$out/${name}_np${np}_t${th}.log
  local t0 t1
  t0=$(date +%s.%N)
  timeout 560 mpirun --bind-to "$bind" -np "$np" "$exe" "${base[@]}" "$@" --set compute.threads="$th" \
      --set output.file="$work/$name.h5" > "$log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  local wall
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  echo "$name,$np,$th,$wall,$rc,$(phases "$log" 'rank 0'),$(phases "$log" 'slowest rank')" | tee -a "$out/scaling_$name.csv"
}

run_case() {
  local name=$1; shift
  echo "case,ranks,threads,wall_s,rc,rank0_phases,slowest_phases" > "$out/scaling_$name.csv"
  for np in $ranks_list; do one "$name" "$np" 1 core "$@"; done
  one "$name" 1 16 none "$@"
}

case $mode in
  ms) run_case "multislice$tag" "${ms[@]}" ;;
  prism) run_case "prism_f8$tag" "${prism[@]}" ;;
  all) run_case "multislice$tag" "${ms[@]}"; run_case "prism_f8$tag" "${prism[@]}" ;;
esac
