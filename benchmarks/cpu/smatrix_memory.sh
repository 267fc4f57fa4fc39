#!/usr/bin/env bash
# PRISM's S-matrix per rank against ranks on one machine (CPU engine; mpi/smatrix_tiles.h):
#   bash benchmarks/cpu/smatrix_memory.sh [RANKS...]      (default 1 2 4 8; STEMSIM=, OUT=)
# Case benchmarks/cases/smatrix_memory_si.ini (a 0.60 GiB S-matrix, f = 8, the whole surface
# scanned), each rank its own tile (node_shared = false), and 4 ranks sharing the node's tile.
# Prints a markdown table: the plan's S-matrix and whole estimate per rank, the measured peak
# per rank, the whole process; and whether every run's images equal the first count's bit for bit.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
exe=${STEMSIM:-$root/build/stemsim}
w=${OUT:-/tmp/smatrix_memory}
mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STEMSIM_KIRKLAND=$root/data/kirkland_params.txt
ranks=("${@:-1 2 4 8}")
[ $# -eq 0 ] && ranks=(1 2 4 8)
rows=()
run() { # label ranks extra...
  local label=$1 n=$2 t0 t1
  shift 2
  t0=$(date +%s.%N)
  mpiexec --oversubscribe -n "$n" "$exe" benchmarks/cases/smatrix_memory_si.ini --set output.file=$w/$label.h5 "$@" \
    > $w/$label.log 2>&1 || echo "$label: exit $?"
  t1=$(date +%s.%N)
  local est smat peak
  est=$(grep -oE "memory per rank +[0-9.]+ GiB" $w/$label.log | grep -oE "[0-9.]+ GiB")
  smat=$(grep -oE "S-matrix [0-9.]+, results" $w/$label.log | grep -oE "[0-9.]+")
  peak=$(grep -oE "peak resident memory per rank: [0-9.]+ to [0-9.]+ GiB" $w/$label.log | grep -oE "[0-9.]+ GiB" | tail -1)
  rows+=("| $label | $n | $smat | $est | $peak | $(python3 -c "print(f'{$t1 - $t0:.1f}')") |")
}
for n in "${ranks[@]}"; do run np$n "$n" --set compute.node_shared=false; done
run np4_node_shared 4
py=${PYTHON:-python3}
$py -c "import h5py" 2>/dev/null || py=/usr/bin/python3 # the system's h5py where the first has none
bad="" # tests/check_h5.py: relative RMS 0 = every value equal
for v in "${ranks[@]:1}" node_shared; do
  [ "$v" = node_shared ] && run=np4_node_shared || run=np$v
  $py tests/check_h5.py compare $w/$run.h5 $w/np${ranks[0]}.h5 --tol 0 --datasets images > /dev/null || bad="$bad $run"
done
same="every run's images equal ${ranks[0]} rank(s)' bit for bit"
[ -z "$bad" ] || same="differ from ${ranks[0]} rank(s):$bad"
echo "| run | ranks | plan: S-matrix per rank, GiB | plan: per rank | measured peak per rank | whole process, s |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "$same"
