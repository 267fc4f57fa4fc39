#!/usr/bin/env bash
# The CPU engine on the GPU machine's 16-core host (issue 31 item 4). Builds nothing: build/stemsim
# (this commit, CPU-only), build/ref/stemsim (b6607a0) and build/stemsim_before (the commit before
# the wisdom cache) carried with .device/, data/ and benchmarks/.
#   bash benchmarks/cpu/device_cpu_scaling.sh [two|node|all|reps|strong|queue|nodes64]   (OUT: where tables and logs go)
# two:  a 2-core machine emulated by `taskset -c 0,1`: cpu_bench.sh's one-rank rows (silicon,
#       benchmarks/cases/si_benchmark.ini, 1 rank x 2 threads: multislice, PRISM f = 4 and f = 8)
#       for b6607a0, the commit before, this one (default fft_planning = auto, its wisdom cache
#       filled by a first run whose cost is logged) and this one with estimate, alternating; a
#       second round when time is left (mode all: after node).
# node: the 100 Angstrom amorphous-carbon cube (SCALING.md's case; multislice 100 probes, PRISM f = 8
#       15,625 probes), `mpirun -np 16` (one core each), 4 ranks x 4 cores (--map-by slot:PE=4:
#       the plan gives each rank its 4 bound cores as threads), 2 x 8, and 1 rank x 16 threads;
#       with the wisdom cache (default) and with fft_planning = estimate.
# reps: node's four layouts with the cache (16x1, 1x16, 2x8, 4x4), three rounds alternating.
# strong: strong scaling on node's case (issue 44), multislice and PRISM f = 8: 16 ranks x 1 thread
#       against 1 rank x 16 threads with the wisdom cache cold (each its own empty cache) and warm
#       (three rounds, alternating; 16 ranks with mpirun's default binding and unbound); 1, 2, 4, 8
#       ranks of one thread (unbound); 64 ranks as 4 emulated nodes of 16 ([debug] ranks_per_node =
#       16, oversubscribed 4x: their collectives' times and sizes, not their speed).
# Writes $OUT/cpu_two.csv, $OUT/cpu_node.csv, $OUT/cpu_reps.csv, $OUT/cpu_strong.csv (case, binary,
# layout, wall s, rc, per-phase seconds of rank 0, each phase's largest and mean over the ranks).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/device_env.sh" device_cpu_scaling
mode=${1:-all}
new=$exe ref=$build/ref/stemsim before=$build/stemsim_before
work=/tmp/dcpu
rm -rf "$work" && mkdir -p "$work"
export STEMSIM_FFT_CACHE=$work/fft_cache # a fresh cache: the first run pays the measurement
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
phases() { grep "^  $2:" "$1" | head -1 | sed -E "s/^  $2: *//; s/ ([0-9.]+)/=\1/g; s/, /;/g"; }

# timed CSV LABEL BINARY LAYOUT command...: whole process, appended to CSV
timed() {
  local csv=$1 label=$2 bin=$3 layout=$4; shift 4
  local log=$out/${label}_${bin}_${layout}.log t0 t1
  t0=$(date +%s.%N)
  "$@" > "$log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "$label,$bin,$layout,$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'),$rc,$(phases "$log" 'rank 0'),$(phases "$log" 'slowest rank'),$(phases "$log" 'mean rank')" |
    tee -a "$out/$csv"
}

si=benchmarks/cases/si_benchmark.ini
f4=(--set simulation.algorithm=prism)
f8=(--set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8)

two_first() {
  echo "case,binary,layout,wall_s,rc,rank0,slowest" > "$out/cpu_two.csv"
  # the first runs on an empty cache: what measuring costs, once per shape and machine
  taskset -c 0,1 "$new" -v "$si" "${f4[@]}" --set scan.step=1 --set compute.threads=2 \
      --set output.file="$work/warm.h5" 2>&1 | grep "FFTW plans" | tee "$out/first_run.txt"
  taskset -c 0,1 "$new" -v "$si" --set scan.step=1 --set compute.threads=2 \
      --set output.file="$work/warm.h5" --set output.overwrite=true 2>&1 | grep "FFTW plans" | tee -a "$out/first_run.txt"
}

two_round() {
  for c in ms f4 f8; do
    local extra=()
    [ $c = f4 ] && extra=("${f4[@]}")
    [ $c = f8 ] && extra=("${f8[@]}")
    for b in ref before new new_estimate; do
      local exe_b=$new plans=()
      [ $b = new_estimate ] && plans=(--set compute.fft_planning=estimate)
      [ $b = ref ] && exe_b=$ref
      [ $b = before ] && exe_b=$before
      timed cpu_two.csv "${c}_r$1" "$b" 1x2 taskset -c 0,1 "$exe_b" -v "$si" "${extra[@]}" "${plans[@]}" \
          --set compute.threads=2 --set output.file="$work/two.h5" --set output.overwrite=true
    done
  done
}

# The node modes' case (SCALING.md): the 100 Angstrom amorphous-carbon cube on the CPU engine; sets
# AC_BASE (config and model), AC_MS (multislice: 100 probes), AC_PRISM (PRISM f = 8: 15 625 probes).
aC_case() {
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py "$work/aC.xyz" > /dev/null
  AC_BASE=(benchmarks/cases/gpu_bench.ini --set sample.xyz="$work/aC.xyz" --set compute.device=cpu -v
           --set output.overwrite=true)
  AC_MS=(--set scan.x_end=42 --set scan.y_end=42)
  AC_PRISM=(--set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
            --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.8)
}

node() {
  aC_case
  local base=("${AC_BASE[@]}") ms=("${AC_MS[@]}") prism=("${AC_PRISM[@]}")
  echo "case,binary,layout,wall_s,rc,rank0,slowest" > "$out/cpu_node.csv"
  for c in ms prism; do
    local args=("${ms[@]}")
    [ $c = prism ] && args=("${prism[@]}")
    # the cache's first run for this grid (a one-probe scan): its cost is logged
    "$new" "${base[@]}" "${args[@]}" --set scan.x_end=0.1 --set scan.y_end=0.1 --set scan.x_start=0 \
        --set scan.y_start=0 --set output.file="$work/warm.h5" 2>&1 | grep "FFTW plans" | tee -a "$out/first_run.txt"
    for plans in auto estimate; do
      local p=(--set compute.fft_planning=$plans --set output.file="$work/$c.h5")
      timed cpu_node.csv "$c" "$plans" 16x1 mpirun -np 16 "$new" "${base[@]}" "${args[@]}" "${p[@]}"
      timed cpu_node.csv "$c" "$plans" 1x16 mpirun -np 1 --bind-to none "$new" "${base[@]}" "${args[@]}" "${p[@]}"
      [ $plans = estimate ] && continue
      timed cpu_node.csv "$c" "$plans" 4x4 mpirun -np 4 --map-by slot:PE=4 --bind-to core "$new" "${base[@]}" "${args[@]}" "${p[@]}"
      timed cpu_node.csv "$c" "$plans" 2x8 mpirun -np 2 --map-by slot:PE=8 --bind-to core "$new" "${base[@]}" "${args[@]}" "${p[@]}"
    done
  done
  grep -h "threads, batch" "$out"/*4x4.log | head -2 > "$out/threads_4x4.txt"
}

# reps: the node layouts again, alternating, three rounds (the spread; min is the number)
reps() {
  aC_case
  local base=("${AC_BASE[@]}" --set output.file="$work/reps.h5") ms=("${AC_MS[@]}") prism=("${AC_PRISM[@]}")
  echo "case,binary,layout,wall_s,rc,rank0,slowest" > "$out/cpu_reps.csv"
  "$new" "${base[@]}" "${prism[@]}" --set scan.x_end=0.1 --set scan.y_end=0.1 2>&1 | grep "FFTW plans" | tee -a "$out/first_run.txt"
  for round in 1 2 3; do
    for c in ms prism; do
      [ "$SECONDS" -gt 250 ] && return
      local args=("${ms[@]}")
      [ $c = prism ] && args=("${prism[@]}")
      timed cpu_reps.csv "${c}_r$round" auto 16x1 mpirun -np 16 "$new" "${base[@]}" "${args[@]}"
      timed cpu_reps.csv "${c}_r$round" auto 1x16 mpirun -np 1 --bind-to none "$new" "${base[@]}" "${args[@]}"
      timed cpu_reps.csv "${c}_r$round" auto 2x8 mpirun -np 2 --map-by slot:PE=8 --bind-to core "$new" "${base[@]}" "${args[@]}"
      timed cpu_reps.csv "${c}_r$round" auto 4x4 mpirun -np 4 --map-by slot:PE=4 --bind-to core "$new" "${base[@]}" "${args[@]}"
    done
  done
}

strong() {
  aC_case
  local base=("${AC_BASE[@]}" --set output.file="$work/strong.h5") ms=("${AC_MS[@]}") prism=("${AC_PRISM[@]}")
  local one=(--set compute.threads=1)
  echo "case,binary,layout,wall_s,rc,rank0,slowest,mean" > "$out/cpu_strong.csv"
  lscpu | grep -E "^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA node\(s\))" > "$out/lscpu.txt"
  for c in ms prism; do
    local args=("${ms[@]}")
    [ $c = prism ] && args=("${prism[@]}")
    # cold: an empty wisdom cache each (the first run of a fresh job measures its plans)
    STEMSIM_FFT_CACHE=$work/cold16 timed cpu_strong.csv "$c" cold 16x1 mpirun -np 16 --bind-to none "$new" \
        "${base[@]}" "${args[@]}" "${one[@]}"
    STEMSIM_FFT_CACHE=$work/cold1 timed cpu_strong.csv "$c" cold 1x16 mpirun -np 1 --bind-to none "$new" \
        "${base[@]}" "${args[@]}"
    # warm: three rounds, alternating (mpirun's default binding and none)
    for round in 1 2 3; do
      timed cpu_strong.csv "$c" warm_r$round 1x16 mpirun -np 1 --bind-to none "$new" "${base[@]}" "${args[@]}"
      timed cpu_strong.csv "$c" warm_r$round 16x1 mpirun -np 16 "$new" "${base[@]}" "${args[@]}" "${one[@]}"
      timed cpu_strong.csv "$c" warm_r$round 16x1_unbound mpirun -np 16 --bind-to none "$new" "${base[@]}" \
          "${args[@]}" "${one[@]}"
    done
    for n in 8 4 2 1; do
      timed cpu_strong.csv "$c" warm ${n}x1 mpirun -np $n --bind-to none "$new" "${base[@]}" "${args[@]}" "${one[@]}"
    done
    timed cpu_strong.csv "$c" warm 64x1_4nodes mpirun -np 64 --oversubscribe --bind-to none "$new" "${base[@]}" \
        "${args[@]}" "${one[@]}" --set debug.ranks_per_node=16
  done
}

# queue: the probe queue (issue 44): multislice on 16 ranks x 1 thread with [compute] node_queue =
#   auto (the default) and off, against 1 rank x 16 threads, warm (three rounds, alternating) and
#   cold (each its own empty cache); PRISM f = 8 16 x 1 against 1 x 16 (two rounds).
queue() {
  aC_case
  local base=("${AC_BASE[@]}" --set output.file="$work/queue.h5") ms=("${AC_MS[@]}") prism=("${AC_PRISM[@]}")
  local one=(--set compute.threads=1) off=(--set compute.node_queue=off)
  echo "case,binary,layout,wall_s,rc,rank0,slowest,mean" > "$out/cpu_queue.csv"
  lscpu | grep -E "^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA node\(s\))" > "$out/lscpu.txt"
  STEMSIM_FFT_CACHE=$work/cold16 timed cpu_queue.csv ms cold 16x1 mpirun -np 16 "$new" "${base[@]}" "${ms[@]}" "${one[@]}"
  STEMSIM_FFT_CACHE=$work/cold1 timed cpu_queue.csv ms cold 1x16 mpirun -np 1 --bind-to none "$new" "${base[@]}" "${ms[@]}"
  for round in 1 2 3; do
    timed cpu_queue.csv ms warm_r$round 1x16 mpirun -np 1 --bind-to none "$new" "${base[@]}" "${ms[@]}"
    timed cpu_queue.csv ms warm_r$round 16x1 mpirun -np 16 "$new" "${base[@]}" "${ms[@]}" "${one[@]}"
    timed cpu_queue.csv ms warm_r$round 16x1_static mpirun -np 16 "$new" "${base[@]}" "${ms[@]}" "${one[@]}" "${off[@]}"
  done
  for round in 1 2; do
    timed cpu_queue.csv prism warm_r$round 1x16 mpirun -np 1 --bind-to none "$new" "${base[@]}" "${prism[@]}"
    timed cpu_queue.csv prism warm_r$round 16x1 mpirun -np 16 "$new" "${base[@]}" "${prism[@]}" "${one[@]}"
  done
  grep -h "probe queue" "$out"/ms_*16x1*.log | sort | uniq -c > "$out/queue_lines.txt"
}

# nodes64: 64 ranks as 4 emulated nodes of 16 (oversubscribed 4x: paths and shares, not speed), multislice
#   and PRISM f = 8, each node's share of the slices in its -v lines.
nodes64() {
  aC_case
  local base=("${AC_BASE[@]}" --set output.file="$work/n64.h5") one=(--set compute.threads=1)
  echo "case,binary,layout,wall_s,rc,rank0,slowest,mean" > "$out/cpu_nodes64.csv"
  timed cpu_nodes64.csv ms warm 16x1 mpirun -np 16 "$new" "${base[@]}" "${AC_MS[@]}" "${one[@]}"
  for c in ms prism; do
    local args=("${AC_MS[@]}")
    [ $c = prism ] && args=("${AC_PRISM[@]}")
    timed cpu_nodes64.csv "$c" warm 64x1_4nodes mpirun -np 64 --oversubscribe --bind-to none "$new" "${base[@]}" \
        "${args[@]}" "${one[@]}" --set debug.ranks_per_node=16
  done
  grep -h "transmission share: group rank \(0\|16\|32\|48\) " "$out"/ms_warm_64x1_4nodes.log > "$out/nodes64_shares.txt"
}

case $mode in
  nodes64) nodes64 ;;
  queue) queue ;;
  strong) strong ;;
  reps) reps ;;
  two) two_first; two_round 1; two_round 2 ;;
  node) node ;;
  all) two_first; two_round 1; node; if [ "$SECONDS" -lt 200 ]; then two_round 2; fi ;;
esac
