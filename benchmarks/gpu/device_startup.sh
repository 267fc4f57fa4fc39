#!/usr/bin/env bash
# A one-GPU job's fixed cost, before and after the start-up changes (performance issue):
# build-dev/stemsim_before (the previous commit's binary, carried beside the new one) and
# "$STEMSIM", each: `--version` (process and MPI start-up), `--dry-run` with the GPU
# engine (adds reading the 100k-atom model, the plan, CUDA and the engine), and the whole
# amorphous-carbon PRISM f=8 job of the issue (62 500 probes, 1 configuration), twice each,
# alternating binaries; then the new binary's log of that job with wall-clock stamps.
# Builds nothing; build-dev/ (as build/), .device/ and .whl/ carried:
#   ln -sfn build-dev build && bash benchmarks/gpu/device_startup.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_startup
w=/tmp/dsu; mkdir -p $w
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu --set output.overwrite=true
    --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
    --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.4
    --set output.file=$w/o.h5)
secs() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; local rc=$?; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.3f} s (rc $rc)')"; }
echo "| binary | round | --version | --dry-run, GPU engine | whole PRISM f=8 job, 62 500 probes |"
echo "|---|---|---|---|---|"
for k in 1 2 3; do
  for exe in "$build"/stemsim_before "$STEMSIM"; do
    echo "| $exe | $k | $(secs $exe --version) | $(secs $exe "${ac[@]}" --dry-run) | $(secs $exe "${ac[@]}") |"
  done
done
echo "== the new binary's log, stamped (s since start)"
stdbuf -oL -eL "$STEMSIM" -v "${ac[@]}" 2>&1 | awk -v t0="$(date +%s.%N)" '{ cmd="date +%s.%N"; cmd | getline t; close(cmd); printf "%6.3f %s\n", t - t0, substr($0,1,170) }' | grep -v "^ *[0-9.]*   " | head -50
