#!/usr/bin/env bash
# Strong scaling of the distributed FFT (issue 13): an HRTEM exit-wave and image run of a
# random carbon slab on a DIST_GRID^2 grid (0.05 Angstrom pixels: 410 Angstrom for 8192,
# 819 Angstrom for 16384; 10 Angstrom thick, 5 slices, 0.1 atoms/A^3), on DIST_RANKS ranks
# of one node (one thread each, CPU only), [compute] distributed_fft = on. Prints per run:
# whole-process wall time, the transmission and propagation phases, the time in the
# distributed transforms (their transposes included) on the slowest rank, the seconds
# per slice, the efficiency against the first rank count, and the peak memory per rank.
# Builds nothing.
#   env: STEMSIM (binary), OUT (a directory that keeps the printed table), DIST_GRID (default 8192), DIST_RANKS (default "1 2 4 8 16")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exe=${STEMSIM:-$here/../../build/stemsim}
n=${DIST_GRID:-8192}
ranks=${DIST_RANKS:-1 2 4 8 16}
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; exec > >(tee "$OUT/dist_fft_bench.md"); fi  # OUT: keep the table
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python3 - "$work/slab.xyz" "$n" <<'PY'
import random, sys
out, n = sys.argv[1], int(sys.argv[2])
L, T = n * 0.05, 10.0
count = int(0.1 * L * L * T)
rng = random.Random(13)
with open(out, "w") as f:
    f.write(f"random carbon slab for the distributed-FFT benchmark\n{L} {L} {T}\n")
    for _ in range(count):
        f.write(f"6 {rng.uniform(0, L):.4f} {rng.uniform(0, L):.4f} {rng.uniform(0, T):.4f} 1 0.08\n")
    f.write("-1\n")
PY
cat > "$work/slab.ini" <<INI
[sample]
xyz = $work/slab.xyz
[probe]
C10 = -100
C30 = 1e5
[simulation]
algorithm = hrtem
grid_x = $n
grid_y = $n
slice_thickness = 2
potential_radius = 2
[hrtem]
objective_aperture = 30
[output]
file = $work/out.h5
overwrite = true
INI
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); grid ${n}^2, $(sed -n 2p "$work/slab.xyz") Angstrom, $(( $(wc -l < "$work/slab.xyz") - 3 )) atoms"
echo "| ranks | wall s | transmission s | propagation + lens s | FFTs s (slowest rank) | s per slice | efficiency | peak GiB per rank |"
echo "|---|---|---|---|---|---|---|---|"
base=""
first=""
for r in $ranks; do
  t0=$(date +%s.%N)
  mpirun --oversubscribe --bind-to core -np "$r" "$exe" "$work/slab.ini" --set compute.distributed_fft=on \
      --set compute.fp_groups=1 --set compute.threads=1 > "$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  trans=$(grep -m1 "slowest rank:" "$work/log" | sed -E 's/.*transmission ([0-9.]+).*/\1/')
  probes=$(grep -m1 "slowest rank:" "$work/log" | sed -E 's/.*probes ([0-9.]+).*/\1/')
  fft=$(grep -m1 "distributed FFTs:" "$work/log" | sed -E 's/.*, ([0-9.]+) s on the slowest.*/\1/' || true)
  [ -z "$fft" ] && fft="(serial)" # one rank: the serial FFTW path
  slices=$(grep -m1 "^  slices" "$work/log" | awk '{print $2}' || true)
  peak=$(grep -m1 "peak resident" "$work/log" | sed -E 's/.* to ([0-9.]+) GiB/\1/')
  [ -z "$base" ] && base=$wall first=$r
  eff=$(awk -v b="$base" -v w="$wall" -v r="$r" -v f="$first" 'BEGIN { printf "%.0f%%", 100 * b * f / (w * r) }')
  per=$(awk -v a="$trans" -v b="$probes" -v s="${slices:-5}" 'BEGIN { printf "%.3f", (a + b) / s }')
  echo "| $r | $wall | $trans | $probes | $fft | $per | $eff | $peak |"
done
