#!/usr/bin/env bash
# Data-safety checks on the GPU machine (builds nothing; build/ and .device/
# carried, h5py and numpy wheels for Python 3.12 carried in .whl/):
#   bash benchmarks/gpu/device_safety.sh
# 1. the GPU engine still equals the CPU engine (tests/gpu/gpu_vs_cpu.sh: the
#    dispatcher now stops on signals); 2. the fault scenarios of
#    tests/integration/faults.py with the GPU engine (device = auto picks it):
#    signals mid-run on 1 and 2 ranks, a full disk, a vanished directory, a
#    publish race, dry-run verdicts; 3. how fast a GPU run stops after SIGTERM.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_safety
mkdir -p /tmp/dsw
exe=$STEMSIM
nvidia-smi -L
status=0
echo "== gpu_vs_cpu"
bash tests/gpu/gpu_vs_cpu.sh "$exe" tests/check_h5.py python3 benchmarks/cases/gpu_check_si.ini /tmp/dsw/cmp \
    > "$out/gpu_vs_cpu.log" 2>&1; rc=$?; grep -E "^==|FAIL|PASS|SKIP|rel" "$out/gpu_vs_cpu.log" | head -40; [ $rc -eq 0 ] || status=1
"$exe" -n tests/integration/small.ini --set output.file=/tmp/dsw/x.h5 | grep -E "memory|engine" 
for s in signals full_disk vanished_dir publish_race dry_run; do
  for np in 1 2; do
    python3 tests/integration/faults.py $s --ranks $np --stemsim "$exe" --mpiexec mpirun --mpi-flag=--oversubscribe \
        --config tests/integration/small.ini --workdir /tmp/dsw/faults > "$out/faults_${s}_np$np.log" 2>&1
    rc=$?
    echo "faults $s np$np: rc $rc ($(tail -1 "$out/faults_${s}_np$np.log"))"
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
  done
done
echo "== SIGTERM to a GPU PRISM run (gpu_check_si, many configurations): seconds from signal to exit"
for np in 1 2; do
  rm -f /tmp/dsw/sig.h5*
  if [ $np = 1 ]; then cmd=("$exe"); else cmd=(mpirun --oversubscribe -np 2 "$exe"); fi
  "${cmd[@]}" benchmarks/cases/gpu_check_si.ini --set compute.device=gpu --set simulation.algorithm=prism \
      --set simulation.thermal=true --set simulation.frozen_phonons=5000 --set output.file=/tmp/dsw/sig.h5 \
      > /tmp/dsw/sig.log 2>&1 &
  pid=$!
  sleep 8
  t0=$(date +%s.%N); kill -TERM $pid; wait $pid; rc=$?; t1=$(date +%s.%N)
  left=$(ls /tmp/dsw/sig.h5* 2>/dev/null | wc -l); alive=$(pgrep -fc "stemsim benchmarks/cases/gpu_check_si")
  echo "np $np: exit $rc after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s; files left $left; ranks alive $alive; $(grep -c '^configuration' /tmp/dsw/sig.log) configurations logged"
  grep "stopping at" /tmp/dsw/sig.log
  [ "$left" = 0 ] && [ "$alive" = 0 ] || status=1
done
echo "device_safety: status $status"
exit $status
