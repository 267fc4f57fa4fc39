#!/usr/bin/env bash
# Two measurements of the performance issue on the GPU machine (builds nothing; build/,
# .device/ and .whl/ carried):  bash benchmarks/gpu/device_gpu_ranks_io.sh
#  1. ranks sharing one GPU (what the node-local split does with more ranks than GPUs):
#     1, 2, 4 ranks on the one H100, the 100 Angstrom amorphous-carbon case, PRISM f = 8
#     (15 625 probes) and multislice (2 500 probes), whole process and per-phase seconds
#  2. large outputs: the PRISM f = 8 job with 4D patterns (15 625 x 84 x 84 float32,
#     0.44 GB) on 1 and 4 ranks: the write phase against the compute and against the
#     file system's own sequential write rate (dd with fdatasync)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_gpu_ranks_io
exe=$STEMSIM
work=/tmp/dgr
mkdir -p "$work"
python3 benchmarks/cases/gpu_make_amorphous_carbon.py "$work/aC.xyz" > /dev/null
base=(benchmarks/cases/gpu_bench.ini --set sample.xyz="$work/aC.xyz" --set compute.device=gpu -v --set output.overwrite=true
      --set output.file="$work/out.h5")
prism=(--set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
       --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.8)
ms=(--set scan.x_end=50 --set scan.y_end=50)
phases() { grep "^  $2:" "$1" | head -1 | sed -E "s/^  $2: *//"; }
one() { # NAME RANKS args...
  local name=$1 np=$2; shift 2
  local log=$out/${name}_np$np.log t0 t1
  t0=$(date +%s.%N)
  mpirun --bind-to none -np "$np" "$exe" "${base[@]}" "$@" > "$log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "$name,$np,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'),$rc,$(phases "$log" 'rank 0'),$(phases "$log" 'slowest rank')" |
    tee -a "$out/gpu_ranks_io.csv"
}
echo "case,ranks,wall_s,rc,rank0_phases,slowest_phases" > "$out/gpu_ranks_io.csv"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for np in 1 2 4; do one prism_f8 "$np" "${prism[@]}"; done
for np in 1 2 4; do one multislice_2500 "$np" "${ms[@]}"; done
for np in 1 4; do one prism_f8_4d "$np" "${prism[@]}" --set detector.save_4d=true; done
ls -la "$work/out.h5" | awk '{print "4D file bytes:", $5}'
echo "file system (/tmp), sequential write of 2 GiB with fdatasync:"
dd if=/dev/zero of="$work/dd.bin" bs=1M count=2048 conv=fdatasync 2>&1 | tail -1
rm -f "$work/dd.bin"
