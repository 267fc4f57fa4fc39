#!/usr/bin/env bash
# Cost of the focal spread (issue 12): whole-process wall time against [probe]
# focal_points (1 = coherent), multislice and PRISM f = 4, on the documented silicon
# case (si_benchmark.ini, 784 probes, 16 slices). Multislice repeats every probe per
# defocus; PRISM reuses its S-matrix and repeats only the output step. Builds nothing.
#   env: STEMSIM (binary), OUT (a directory that keeps the printed table), FOCAL_THREADS (default all cores), FOCAL_DEVICE (cpu|gpu)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=${STEMSIM:-$here/../../build/stemsim}
threads=${FOCAL_THREADS:-$(nproc)}
device=${FOCAL_DEVICE:-cpu}
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; exec > >(tee "$OUT/focal_cost.md"); fi  # OUT: keep the table
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); device $device; $threads threads"
echo "| algorithm | focal_points | wall s | vs coherent |"
echo "|---|---|---|---|"
for alg in multislice prism; do
  base=""
  for n in 1 3 7; do
    spread=(--set probe.focal_spread=30 --set probe.focal_points=$n)
    [ $n = 1 ] && spread=()
    t0=$(date +%s.%N)
    "$exe" -q "$here/../cases/si_benchmark.ini" --set simulation.algorithm=$alg --set compute.device="$device" \
        --set compute.threads="$threads" --set probe.C10=-40 "${spread[@]}" --set output.file="$work/f.h5"
    t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    [ -z "$base" ] && base=$t
    echo "| $alg | $n | $t | $(awk -v a="$t" -v b="$base" 'BEGIN { printf "%.2fx", a / b }') |"
  done
done
