#!/usr/bin/env bash
# The CPU transmission build with heavy atoms (issue 40, item 4): Au [001] 5 x 5 x 10 cells
# (20.39 A across at 0.0297 A: 686^2; 300 keV, 2.039 A slices: 20 slices), static, one probe,
# the CPU engine on THREADS threads (default 1): the transmission step's time (stemsim -v's
# "seconds: ... transmission") with transmission_oversampling = 1 and = auto (4 for Au), for
# each binary named (default build/stemsim), best of REPS runs (default 3). Builds nothing:
#   [THREADS=n] [REPS=n] bash benchmarks/cpu/heavy_transmission.sh [BINARY...]
set -uo pipefail
cd "$(dirname "$0")/../.."
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(build/stemsim)
threads=${THREADS:-1} reps=${REPS:-3}
export STEMSIM_KIRKLAND=${STEMSIM_KIRKLAND:-$PWD/data/kirkland_params.txt} STEMSIM_LOBATO=${STEMSIM_LOBATO:-$PWD/data/lobato_params.txt}
w=$(mktemp -d /tmp/heavy_transmission.XXXXXX)
trap 'rm -rf "$w"' EXIT
python3 - "$w/au.xyz" <<'PY'
import sys
a, n, nz = 4.078, 5, 10
basis = [(0, 0, 0), (.5, .5, 0), (.5, 0, .5), (0, .5, .5)]
rows = ["79 %.5f %.5f %.5f 1 0" % ((i + x) * a, (j + y) * a, (k + z) * a)
        for i in range(n) for j in range(n) for k in range(nz) for (x, y, z) in basis]
open(sys.argv[1], "w").write("Au [001] %dx%dx%d\n%.5f %.5f %.5f\n%s\n" % (n, n, nz, n * a, n * a, nz * a, "\n".join(rows)))
PY
cat > "$w/au.ini" <<INI
[sample]
xyz = $w/au.xyz
[beam]
energy = 300
[probe]
semiangle = 20
[simulation]
algorithm = multislice
pixel_size = 0.02973
slice_thickness = 2.039
[scan]
x_start = 0.5
x_end = 0.5
y_start = 0.5
y_end = 0.5
[detector]
save_3d = false
[images]
HAADF = 70 200
[compute]
device = cpu
threads = $threads
[output]
file = $w/out.h5
overwrite = true
INI
echo "| binary | transmission_oversampling | grid | transmission step, best of $reps (s) |"
echo "|---|---|---|---|"
for bin in "${bins[@]}"; do
  for os in 1 auto; do
    best=""
    for r in $(seq "$reps"); do
      "$bin" -v "$w/au.ini" --set simulation.transmission_oversampling=$os > "$w/log" 2>&1 || { tail -3 "$w/log"; exit 1; }
      t=$(grep -m1 -oE "seconds: table [0-9.]+, transmission [0-9.]+" "$w/log" | grep -oE "[0-9.]+$")
      best=$(python3 -c "print(min(x for x in [$t, ${best:-1e9}]))")
    done
    grid=$(grep -m1 -oE "grid +[0-9]+ x [0-9]+" "$w/log" | grep -oE "[0-9]+ x [0-9]+")
    echo "| $bin | $os | $grid | $best |"
  done
done
