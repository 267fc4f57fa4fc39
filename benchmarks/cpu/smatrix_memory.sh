#!/usr/bin/env bash
# PRISM's S-matrix per rank against ranks on one machine (CPU engine; mpi/smatrix_tiles.h):
#   bash benchmarks/cpu/smatrix_memory.sh [RANKS...]      (default 1 2 4 8; STEMSIM=, OUT=)
# Case benchmarks/cases/smatrix_memory_si.ini (a 0.60 GiB S-matrix, f = 8, the whole surface
# scanned), each rank its own tile (node_shared = false), and 4 ranks sharing the node's tile.
# Prints a markdown table: the plan's S-matrix and whole estimate per rank, the measured peak
# per rank, the whole process; and whether every run's images equal one rank's bit for bit.
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
same=$($py - "$w" "${ranks[@]}" <<'PY'
import sys, h5py, numpy as np
w, ranks = sys.argv[1], sys.argv[2:]
def images(n):
    with h5py.File(f"{w}/{n}.h5", "r") as f:
        return {k: f["images"][k][()] for k in f["images"]}
ref = images("np1")
bad = [n for n in ["np" + r for r in ranks[1:]] + ["np4_node_shared"]
       if any(not np.array_equal(ref[k], v) for k, v in images(n).items())]
print("every run's images equal one rank's bit for bit" if not bad else "differ from one rank: " + ", ".join(bad))
PY
)
echo "| run | ranks | plan: S-matrix per rank, GiB | plan: per rank | measured peak per rank | whole process, s |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "$same"
