#!/usr/bin/env bash
# What one node of the GPU machine allows the CPU engine, independent of how stemsim
# splits work (issue 14, benchmarks/results/SCALING.md). Builds nothing (build dir, .device/
# and .whl/ carried):  bash benchmarks/gpu/device_node_limits.sh
#  1. the machine: lscpu (cores, threads per core, NUMA), transparent huge pages
#  2. contention: N independent one-rank stemsim processes (N = 1, 2, 4, 8, 16), each
#     bound to its own core and running the same 4 multislice probes of the
#     amorphous-carbon case at once: seconds per probe against N (no MPI at all)
#  3. run-to-run spread: the 16-rank multislice case three times, node-shared and private
# Environment: STEMSIM_BUILD (default build).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_node_limits
exe=$STEMSIM
work=/tmp/dnl
mkdir -p "$work"
python3 benchmarks/cases/gpu_make_amorphous_carbon.py "$work/aC.xyz" > /dev/null
base=(benchmarks/cases/gpu_bench.ini --set sample.xyz="$work/aC.xyz" --set compute.device=cpu --set compute.threads=1 -v)
echo "== machine"
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA|L2|L3)" 
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null); shmem: $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
echo "== contention: N independent 1-rank processes, 4 probes each"
echo "processes,probes_s_mean,probes_s_max,s_per_probe_mean" | tee "$out/contention.csv"
for n in 1 2 4 8 16; do
  for i in $(seq 0 $((n - 1))); do
    taskset -c "$i" "$exe" "${base[@]}" --set scan.x_end=40.4 --set scan.y_end=40.4 \
      --set output.file="$work/c$i.h5" --set output.overwrite=true > "$work/c$i.log" 2>&1 &
  done
  wait
  for i in $(seq 0 $((n - 1))); do grep -m1 "rank 0:" "$work/c$i.log" | sed -E 's/.*probes ([0-9.]+).*/\1/'; done |
    awk -v n="$n" '{s += $1; if ($1 > m) m = $1} END {printf "%d,%.3f,%.3f,%.4f\n", n, s / NR, m, s / NR / 4}' |
    tee -a "$out/contention.csv"
done
echo "== spread: 16 ranks x 1 thread, 100 probes, three runs each"
echo "variant,run,wall_s,rank0_probes,slowest_probes,slowest_wait" | tee "$out/spread.csv"
for variant in shared private; do
  set_ns=true; [ $variant = private ] && set_ns=false
  for r in 1 2 3; do
    t0=$(date +%s.%N)
    mpirun --bind-to core -np 16 "$exe" "${base[@]}" --set scan.x_end=42 --set scan.y_end=42 \
      --set compute.node_shared=$set_ns --set output.file="$work/s.h5" --set output.overwrite=true > "$work/s.log" 2>&1
    t1=$(date +%s.%N)
    r0=$(grep -m1 "^  rank 0:" "$work/s.log" | sed -E 's/.*probes ([0-9.]+).*/\1/')
    sl=$(grep -m1 "^  slowest rank:" "$work/s.log" | sed -E 's/.*probes ([0-9.]+).*/\1/')
    sw=$(grep -m1 "^  slowest rank:" "$work/s.log" | sed -E 's/.*wait ([0-9.]+).*/\1/')
    echo "$variant,$r,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'),$r0,$sl,$sw" | tee -a "$out/spread.csv"
  done
done
