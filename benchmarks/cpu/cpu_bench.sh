#!/usr/bin/env bash
# CPU benchmark: time per probe of multislice and PRISM (f = 4, 8) on the
# documented silicon case (benchmarks/cases/si_benchmark.ini), and MPI strong scaling
# over 1 and 2 ranks. Builds nothing: run after .ci/build. Prints a markdown table.
#   usage: bash benchmarks/cpu/cpu_bench.sh [path/to/stemsim]   (or STEMSIM=path; OUT=dir keeps the table)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=${1:-${STEMSIM:-$here/../../build/stemsim}}
cfg=$here/../cases/si_benchmark.ini
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; exec > >(tee "$OUT/cpu_bench.md"); fi  # OUT: keep the table
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# run LABEL RANKS THREADS [--set ...]: prints "label | ranks | threads | seconds | s/probe"
run() {
  local label=$1 ranks=$2 threads=$3; shift 3
  local log=$work/log
  local t0=$(date +%s.%N)
  mpirun --oversubscribe --bind-to none -np "$ranks" "$exe" --set output.file="$work/out.h5" \
      --set compute.threads="$threads" "$@" "$cfg" > "$log" 2>&1 || { cat "$log"; exit 1; }
  local t1=$(date +%s.%N)
  local probes=$(awk '/^  scan /{print $6}' "$log" | tr -d '()' | head -1)
  local stages=$(grep -E "done in" "$log" | sed -E 's/^ *([^:]+): done in ([0-9.]+) s/\1 \2 s/' | paste -sd ';' -)
  awk -v l="$label" -v r="$ranks" -v t="$threads" -v a="$t0" -v b="$t1" -v p="$probes" -v s="$stages" \
      'BEGIN { printf "| %s | %d | %d | %.2f | %.5f | %s |\n", l, r, t, b - a, (b - a) / p, s }'
}

echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "| case | ranks | threads/rank | wall s | wall s per probe | stages |"
echo "|---|---|---|---|---|---|"
run "multislice" 1 2
run "prism f=4" 1 2 --set simulation.algorithm=prism
run "prism f=8" 1 2 --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
run "multislice" 1 1
run "multislice" 2 1
run "prism f=4" 1 1 --set simulation.algorithm=prism
run "prism f=4" 2 1 --set simulation.algorithm=prism
