#!/usr/bin/env bash
# GPU multislice over several frozen-phonon configurations with the context
# (tables, detector, cuFFT plans, workers) kept by the engine from the first
# configuration (builds nothing; build/ with build/ref/stemsim = b6607a0, .device/,
# .whl/ carried):   bash benchmarks/gpu/device_multislice_configs.sh
# 1. GPU = CPU engine with 3 thermal configurations, single-transfer and streaming,
#    multislice and PRISM (S-matrix on the GPU or through the host);
# 2. amorphous carbon multislice, 4 configurations: per-configuration set-up from
#    the log and whole-process wall time, b6607a0 against now.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_multislice_configs
mkdir -p /tmp/dmc
new=$STEMSIM ref=$build/ref/stemsim status=0
si=(benchmarks/cases/gpu_check_si.ini --set simulation.algorithm=multislice --set scan.step=0.8 --set simulation.thermal=true
    --set simulation.frozen_phonons=3 --set output.overwrite=true)
"$new" -q "${si[@]}" --set compute.device=cpu --set output.file=/tmp/dmc/cpu.h5 || status=1
for mode in single streaming; do
  "$new" "${si[@]}" --set compute.device=gpu --set compute.memory_mode=$mode --set output.file=/tmp/dmc/gpu_$mode.h5 \
      > /tmp/dmc/gpu_$mode.log 2>&1 || { status=1; tail -5 /tmp/dmc/gpu_$mode.log; }
  echo "== $mode: $(grep -c '^gpu multislice' /tmp/dmc/gpu_$mode.log) configurations; last: $(grep '^gpu multislice' /tmp/dmc/gpu_$mode.log | tail -1 | sed 's/.*probe), //')"
  python3 tests/check_h5.py compare /tmp/dmc/gpu_$mode.h5 /tmp/dmc/cpu.h5 --tol 1e-4 \
      --datasets images,rings,cbed,dpc_com_x,dpc_com_y,total_intensity | tail -1 || status=1
done
# PRISM too: the S-matrix step's context is kept the same way (host path and S-matrix kept on the GPU)
sp=(benchmarks/cases/gpu_check_si.ini --set simulation.algorithm=prism --set scan.step=0.8 --set simulation.thermal=true
    --set simulation.frozen_phonons=3 --set output.overwrite=true)
"$new" -q "${sp[@]}" --set compute.device=cpu --set output.file=/tmp/dmc/pcpu.h5 || status=1
for v in "single:auto" "streaming:auto" "single:off"; do
  mode=${v%%:*} res=${v##*:}
  "$new" "${sp[@]}" --set compute.device=gpu --set compute.memory_mode=$mode --set debug.gpu_prism_resident=$res \
      --set output.file=/tmp/dmc/p.h5 > /tmp/dmc/p.log 2>&1 || { status=1; tail -5 /tmp/dmc/p.log; }
  echo "== PRISM $mode, resident $res: $(grep -c '^gpu S-matrix' /tmp/dmc/p.log) S-matrix steps; last: $(grep '^gpu S-matrix' /tmp/dmc/p.log | tail -1 | sed 's/.*wave), //')"
  python3 tests/check_h5.py compare /tmp/dmc/p.h5 /tmp/dmc/pcpu.h5 --tol 1e-4 \
      --datasets images,rings,cbed,dpc_com_x,dpc_com_y,total_intensity | tail -1 || status=1
done
python3 benchmarks/cases/gpu_make_amorphous_carbon.py /tmp/dmc/aC.xyz > /dev/null
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=/tmp/dmc/aC.xyz --set scan.x_start=40 --set scan.y_start=40
    --set scan.x_end=60 --set scan.y_end=60 --set simulation.thermal=true --set simulation.frozen_phonons=4
    --set compute.device=gpu --set output.overwrite=true)
echo "| build | aC multislice, 10 000 probes, 4 configurations: wall s | set-up per configuration (log) |"
echo "|---|---|---|"
for rep in 1 2; do
  for which in ref new; do
    exe=$ref; [ $which = new ] && exe=$new
    t0=$(date +%s.%N)
    "$exe" "${ac[@]}" --set output.file=/tmp/dmc/aC_$which.h5 > /tmp/dmc/aC_$which.log 2>&1 || status=1
    t1=$(date +%s.%N)
    setup=$(grep '^gpu multislice' /tmp/dmc/aC_$which.log | sed -E 's/.*probe\), ([0-9.]+) s .*/\1/' | tr '\n' ' ')
    echo "| $which (run $rep) | $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') | $setup |"
  done
done
python3 tests/check_h5.py compare /tmp/dmc/aC_new.h5 /tmp/dmc/aC_ref.h5 --tol 1e-5 --datasets images,rings | tail -1 || status=1
echo "device_multislice_configs: status $status"
exit $status
