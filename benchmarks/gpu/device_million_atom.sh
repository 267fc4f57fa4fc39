#!/usr/bin/env bash
# Million-atom PRISM on one H200 node (issue "Million-atom PRISM on a cluster"); builds nothing
# (build/ with CUDA and .device/ carried):  bash benchmarks/gpu/device_million_atom.sh
# Case: benchmarks/cases/million_atom.ini (902 475 atoms, 3000^2 pixels, 300 x 300 probes).
# 1. GPU, one rank: f = 16 and f = 8, the S-matrix kept on the GPU in one copy: whole process,
#    phases, the plan's host estimate against the measured host peak.
# 2. GPU, f = 16 through the host (gpu_prism_resident = off: the whole box beam fastest on
#    the host, uploaded once) and on 2 ranks of one group sharing the GPU (the S-matrix
#    exchanged between them): host estimate against peak, images against 1. (1e-6).
#    f = 8 with the S-matrix streamed from the host (memory_mode = streaming: its one copy on
#    the host, the output step uploading each tile's window): the cost of not holding it.
# 3. CPU engine, the 100 A cube alone at f = 8 (312 beams, S-matrix 1.0 GiB): 4, 8 and 16
#    ranks, each its own tile, and 16 ranks sharing the node's tile: S-matrix per rank in the
#    plan, measured peak, whole process; images bitwise equal.
# Prints a markdown table last (benchmarks/results/MILLION_ATOM.md).
#   bash benchmarks/gpu/device_million_atom.sh gpu     # 1. and 2. only
set -uo pipefail
what=${1:-all}
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_million_atom
w=/tmp/dma
rm -rf $w && mkdir -p $w
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
free -g | head -2
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
case=(benchmarks/cases/million_atom.ini --set sample.xyz=$w/aC.xyz)
rows=()
field() { grep -oE "$2" "$1" | head -1; }
run() { # label ranks extra...: one table row
  local label=$1 n=$2 t0 t1 rc
  shift 2
  local launch=("$STEMSIM")
  [ "$n" -gt 1 ] && launch=(mpiexec --oversubscribe --bind-to none -n "$n" "$STEMSIM")
  t0=$(date +%s.%N)
  "${launch[@]}" "$@" --set output.file=$w/$label.h5 > $w/$label.log 2>&1
  rc=$?
  t1=$(date +%s.%N)
  cp $w/$label.log "$out"/ 2>/dev/null
  local wall est smat peak
  wall=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  est=$(field $w/$label.log "memory per rank +[0-9.]+ GiB" | grep -oE "[0-9.]+ GiB")
  smat=$(field $w/$label.log "S-matrix [0-9.]+, results" | grep -oE "[0-9.]+")
  peak=$(field $w/$label.log "peak resident memory per rank: [0-9.]+ to [0-9.]+ GiB" | grep -oE "[0-9.]+ GiB" | tail -1)
  echo "== $label: rc $rc, whole process $wall s; plan $est per rank (S-matrix $smat GiB), peak $peak"
  grep -E "S-matrix  |gpu PRISM|gpu S-matrix|refused|error" $w/$label.log | cut -c1-260 | head -6
  grep -A2 "time per phase" $w/$label.log | sed -n 2,3p
  rows+=("| $label | $rc | $wall | ${smat:-?} | ${est:-?} | ${peak:-?} |")
}
same() { # a b tol
  python3 tests/check_h5.py compare $w/$1.h5 $w/$2.h5 --tol $3 --datasets images | tail -1
}
for f in 16 8; do
  run gpu_f$f 1 "${case[@]}" --set compute.device=gpu --set simulation.interpolation_x=$f \
    --set simulation.interpolation_y=$f
done
run gpu_f16_host 1 "${case[@]}" --set compute.device=gpu --set debug.gpu_prism_resident=off
echo "f=16 through the host vs kept on the GPU: $(same gpu_f16_host gpu_f16 1e-6)"
run gpu_f16_2ranks 2 "${case[@]}" --set compute.device=gpu
echo "f=16 on 2 ranks sharing the GPU vs one: $(same gpu_f16_2ranks gpu_f16 1e-6)"
run gpu_f8_streamed 1 "${case[@]}" --set compute.device=gpu --set simulation.interpolation_x=8 \
  --set simulation.interpolation_y=8 --set compute.memory_mode=streaming
echo "f=8 streamed from the host vs kept on the GPU: $(same gpu_f8_streamed gpu_f8 1e-6)"
rm -f $w/gpu_*.h5
if [ "$what" = gpu ]; then
  printf '%s\n' "| run | rc | whole process, s | plan: S-matrix per rank, GiB | plan: per rank | measured peak per rank |" \
    "|---|---|---|---|---|---|" "${rows[@]}"
  exit 0
fi
cube=(benchmarks/cases/million_atom.ini --set sample.xyz=$w/aC.xyz --set sample.tile_x=1 --set sample.tile_y=1
      --set scan.x_end=99.5 --set scan.y_end=99.5 --set simulation.interpolation_x=8
      --set simulation.interpolation_y=8 --set compute.device=cpu --set compute.threads=1)
for n in 4 8 16; do run cpu_f8_np$n $n "${cube[@]}" --set compute.node_shared=false; done
run cpu_f8_np16_shared 16 "${cube[@]}"
for v in cpu_f8_np8 cpu_f8_np16 cpu_f8_np16_shared; do
  echo "$v vs 4 ranks (bitwise): $(same $v cpu_f8_np4 0)"
done
echo
echo "| run | rc | whole process, s | plan: S-matrix per rank, GiB | plan: per rank | measured peak per rank |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
