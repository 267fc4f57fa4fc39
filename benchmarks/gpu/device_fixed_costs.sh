#!/usr/bin/env bash
# Where a GPU job's fixed cost goes before its first configuration (performance issue): the
# amorphous-carbon PRISM f=8 job (250 000 probes, 1 configuration) on one GPU. Times
# `stemsim --version` (process and MPI start-up), --dry-run with the GPU engine and with the
# CPU engine (reading the model, the plan, the engine's creation), twice each (the second
# with warm caches), then the real run with each log line time-stamped from process start.
# Builds nothing; build/, .device/ and .whl/ carried:
#   bash benchmarks/gpu/device_fixed_costs.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_fixed
w=/tmp/dfx; mkdir -p $w
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu --set output.overwrite=true
    --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
    --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set output.file=$w/o.h5)
stamp() { local t0=$(date +%s.%N); while IFS= read -r l; do printf '%6.3f %s\n' "$(python3 -c "print($(date +%s.%N) - $t0)" 2>/dev/null || echo 0)" "$l"; done; }
for k in 1 2; do
t0=$(date +%s.%N); "$STEMSIM" --version > /dev/null; t1=$(date +%s.%N)
echo "--version: $(python3 -c "print(round($t1-$t0,3))") s"
t0=$(date +%s.%N); "$STEMSIM" "${ac[@]}" --dry-run > /dev/null 2>&1; t1=$(date +%s.%N)
echo "--dry-run (GPU engine created): $(python3 -c "print(round($t1-$t0,3))") s"
t0=$(date +%s.%N); "$STEMSIM" "${ac[@]}" --set compute.device=cpu --dry-run > /dev/null 2>&1; t1=$(date +%s.%N)
echo "--dry-run (CPU engine): $(python3 -c "print(round($t1-$t0,3))") s"
done
stdbuf -oL -eL "$STEMSIM" -v "${ac[@]}" 2>&1 | awk -v t0="$(date +%s.%N)" '{ cmd="date +%s.%N"; cmd | getline t; close(cmd); printf "%6.3f %s\n", t - t0, substr($0,1,150) }' | grep -v "^ *[0-9.]*   " | head -60
