#!/usr/bin/env bash
# Campaign benchmarks (issue 11) on the documented silicon case (si_benchmark.ini).
# Builds nothing: run after .ci/build (or with STEMSIM=path). Prints markdown tables.
#   1. PRISM defocus series of 9 defoci as one campaign (S-matrix once per unit)
#      against 9 separate runs with [probe] C10 set.
#   2. Checkpoint overhead: the same frozen-phonon run with [output] checkpoint = true
#      (units gathered, stored, fsync'd, read back) and = false (the plain path).
#   3. Load balance: a tilt series of 7 tilts (0..60 deg: thicker, so costlier, with
#      tilt) on 3 rank groups; stemsim's own "load balance" line gives the idle time.
#   4. Thickness series (multislice): depth_every = 4 (4 planes, one pass of the waves)
#      against the exit-only run and against 4 separate runs of 1..4-cell samples.
#   env: STEMSIM (binary), OUT (a directory that keeps the printed table), CAMPAIGN_THREADS (threads per rank, default all cores),
#        CAMPAIGN_DEVICE (cpu|gpu, default cpu), CAMPAIGN_F (PRISM factor, default 4)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=${STEMSIM:-$here/../../build/stemsim}
cfg=$here/../cases/si_benchmark.ini
threads=${CAMPAIGN_THREADS:-$(nproc)}
device=${CAMPAIGN_DEVICE:-cpu}
f=${CAMPAIGN_F:-4}
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; exec > >(tee "$OUT/campaign_bench.md"); fi  # OUT: keep the table
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common=(--set compute.device="$device" --set simulation.algorithm=prism --set simulation.interpolation_x="$f"
        --set simulation.interpolation_y="$f")

# timed LOG RANKS [args...]: runs stemsim (PRISM unless MULTISLICE=1), prints the wall seconds
timed() {
  local log=$1 ranks=$2; shift 2
  local t0=$(date +%s.%N) alg=("${common[@]}")
  [ "${MULTISLICE:-0}" = 1 ] && alg=(--set compute.device="$device")
  mpirun --oversubscribe --bind-to none -np "$ranks" "$exe" "${alg[@]}" "$@" "$cfg" > "$log" 2>&1 || { cat "$log" >&2; exit 1; }
  local t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); device $device; PRISM f=$f; $threads threads/rank"
defoci="-80:20:80"
echo
echo "### 1. PRISM defocus series, 9 defoci ($defoci Angstrom), 1 configuration, 1 rank"
echo "| run | wall s |"
echo "|---|---|"
one=$(timed "$work/series.log" 1 --set compute.threads="$threads" --set series.defocus="$defoci" --set output.file="$work/series.h5")
echo "| one campaign (S-matrix once) | $one |"
sep=0
for df in $(seq -80 20 80); do
  s=$(timed "$work/single.log" 1 --set compute.threads="$threads" --set probe.C10="$df" --set output.file="$work/single_$df.h5")
  sep=$(awk -v a="$sep" -v b="$s" 'BEGIN { printf "%.2f", a + b }')
done
echo "| 9 separate runs | $sep |"
awk -v a="$one" -v b="$sep" 'BEGIN { printf "| speed-up | %.2fx |\n", b / a }'

echo
echo "### 2. Checkpoint overhead: 4 frozen-phonon configurations, 1 rank"
echo "| run | wall s |"
echo "|---|---|"
fp=(--set compute.threads="$threads" --set simulation.thermal=true --set simulation.frozen_phonons=4)
off=$(timed "$work/off.log" 1 "${fp[@]}" --set output.checkpoint=false --set output.file="$work/off.h5")
on=$(timed "$work/on.log" 1 "${fp[@]}" --set output.checkpoint=true --set output.file="$work/on.h5")
echo "| checkpoint = false (plain path) | $off |"
echo "| checkpoint = true (4 units stored, fsync'd, read back) | $on |"
awk -v a="$off" -v b="$on" 'BEGIN { printf "| overhead | %.1f%% |\n", 100 * (b - a) / a }'
grep -E "time per phase|rank 0:" "$work/on.log" | sed 's/^/    /'

echo
echo "### 3. Load balance: tilt_x = 0:10:60 (7 units of growing cost) on 3 groups"
lb_threads=$(( threads / 3 > 0 ? threads / 3 : 1 ))
lb=$(timed "$work/lb.log" 3 --set compute.threads="$lb_threads" --set compute.fp_groups=3 --set series.tilt_x=0:10:60 --set output.file="$work/lb.h5")
echo "wall $lb s"
grep -E "load balance|unit [0-9]+ of" "$work/lb.log" | sed 's/^/    /'

echo
echo "### 4. Thickness series, multislice, 1 configuration, 1 rank: 16 slices, planes every 4"
echo "| run | wall s |"
echo "|---|---|"
ms=(--set compute.threads="$threads")
exit_only=$(MULTISLICE=1 timed "$work/exit.log" 1 "${ms[@]}" --set output.file="$work/exit.h5")
planes=$(MULTISLICE=1 timed "$work/planes.log" 1 "${ms[@]}" --set output.depth_every=4 --set output.file="$work/planes.h5")
sep=0
for cells in 1 2 3 4; do
  s=$(MULTISLICE=1 timed "$work/cut.log" 1 "${ms[@]}" --set sample.tile_z=$cells --set output.file="$work/cut_$cells.h5")
  sep=$(awk -v a="$sep" -v b="$s" 'BEGIN { printf "%.2f", a + b }')
done
echo "| exit surface only | $exit_only |"
echo "| depth_every = 4 (4 planes, one pass) | $planes |"
echo "| 4 separate runs of 1, 2, 3, 4 cells | $sep |"
awk -v a="$planes" -v b="$sep" -v c="$exit_only" 'BEGIN { printf "| speed-up against separate runs | %.2fx (planes cost %.1f%% over exit only) |\n", b / a, 100 * (a - c) / c }'
