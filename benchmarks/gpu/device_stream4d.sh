#!/usr/bin/env bash
# 4D-STEM larger than memory on one GPU (issue "4D-STEM larger than memory"); builds nothing
# (build/ with CUDA and .device/ carried):  bash benchmarks/gpu/device_stream4d.sh
# Case: benchmarks/cases/stream4d_si.ini (Si, 384^2 grid, 255^2 patterns, 8 thermal
# configurations, 0.0424 A scan step).
# 1. bitwise: a 48 x 48 scan streamed (probe_block = 500) equals the same job held whole.
# 2. in memory: a 128 x 128 scan, no limit: whole process per probe (the reference).
# 3. streamed: the largest N x N scan (512, 448, 384, 320, 256) whose patterns fit the free
#    disk and whose predicted time (2.'s rate, 400 s) fits the call, under [compute] max_memory = 32:
#    whole process per probe (goal <= 1.2 x 2.), peak host memory (goal <= 32 GiB), the write
#    rate (the log's write phase).
# Prints a markdown table last (benchmarks/results/STREAM4D.md) and writes summary_rows.csv.
#   bash benchmarks/gpu/device_stream4d.sh limit4x
# instead runs only the 448 x 448 scan (48.6 GiB of patterns) under max_memory = 12: patterns
# four times the limit; peak host memory and time per probe.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_stream4d
w=/tmp/ds4
rm -rf $w && mkdir -p $w
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
df -h /tmp | tail -1
free -g | head -2
case=benchmarks/cases/stream4d_si.ini
step=0.0424219
run() { # label, scan side N, extra --set ...: whole process seconds in $wall
  local label=$1 n=$2 t0 t1
  shift 2
  local end
  end=$(python3 -c "print($n * $step - $step / 2)")
  t0=$(date +%s.%N)
  "$STEMSIM" $case --set compute.device=gpu --set scan.x_end=$end --set scan.y_end=$end \
    --set output.file=$w/$label.h5 "$@" > $w/$label.log 2>&1
  rc=$?
  t1=$(date +%s.%N)
  wall=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  cp $w/$label.log "$out"/ 2>/dev/null
  echo "== $label ($n x $n): rc $rc, whole process $wall s"
  grep -E "4D patterns  |memory per rank|peak resident|time per phase" -A0 $w/$label.log | cut -c1-240
  grep -A2 "time per phase" $w/$label.log | sed -n 2,3p
}
if [ "${1:-}" = limit4x ]; then
  run limit4x 448 --set compute.max_memory=12
  per=$(python3 -c "print(f'{$wall / 448**2 * 1e3:.4f}')")
  peak=$(grep -oE "peak resident memory per rank: [0-9.]+ to [0-9.]+ GiB" $w/limit4x.log | grep -oE "[0-9.]+ GiB" | tail -1)
  wsec=$(grep -A2 "time per phase" $w/limit4x.log | sed -n 2p | grep -oE "write [0-9.]+" | grep -oE "[0-9.]+")
  rm -f $w/limit4x.h5
  echo
  echo "| 448 x 448 scan streamed under max_memory = 12 (rc $rc, 48.6 GiB of patterns: 4.05 x the limit) | $wall s whole process, $per ms per probe; peak host memory $peak; write phase ${wsec:-?} s | within the limit |"
  exit 0
fi
# 1. bitwise
run whole48 48
run blocks48 48 --set detector.probe_block=500
bitwise=$(python3 - $w/whole48.h5 $w/blocks48.h5 <<'PY'
import sys, h5py, numpy as np
def walk(fn):
    out = {}
    with h5py.File(fn, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = walk(sys.argv[1]), walk(sys.argv[2])
bad = [k for k in a if getattr(a[k], "dtype", None) is not None and a[k].dtype.kind in "fc"
       and not np.array_equal(a[k], b[k], equal_nan=True)]
print("bitwise" if not bad else "differs: " + ", ".join(bad))
PY
)
echo "48 x 48 streamed in blocks of 500 vs whole: $bitwise"
rm -f $w/*48.h5
# 2. the reference in memory
run memory128 128
ref_wall=$wall
ref_per=$(python3 -c "print(f'{$ref_wall / 128**2 * 1e3:.4f}')")
# 3. the largest streamed scan that fits the disk (patterns 255^2 float32, 3% margin) and ~330 s
free_b=$(df -B1 --output=avail /tmp | tail -1)
n=0
for cand in 512 448 384 320 256; do
  fits=$(python3 -c "print(int($cand**2 * 255**2 * 4 * 1.03 + 2e9 < $free_b and $cand**2 * $ref_per * 1.1e-3 < 400))")
  if [ "$fits" = 1 ]; then n=$cand; break; fi
done
echo "streamed scan: $n x $n (free disk $((free_b / 1000000000)) GB, reference $ref_per ms per probe)"
run streamed $n --set compute.max_memory=32
s_wall=$wall
s_rc=$rc
s_per=$(python3 -c "print(f'{$s_wall / $n**2 * 1e3:.4f}')")
ratio=$(python3 -c "print(f'{$s_per / $ref_per:.3f}')")
peak=$(grep -oE "peak resident memory per rank: [0-9.]+ to [0-9.]+ GiB" $w/streamed.log | grep -oE "[0-9.]+ GiB" | tail -1)
gib=$(python3 -c "print(f'{$n**2 * 255**2 * 4 / 2**30:.1f}')")
# the write phase of the slowest rank: seconds writing the patterns (and the rest of the file)
wsec=$(grep -A2 "time per phase" $w/streamed.log | sed -n 2p | grep -oE "write [0-9.]+" | grep -oE "[0-9.]+")
rate=$(python3 -c "print(f'{$gib * 1.0737 / $wsec:.2f}' if '$wsec' else '?')")
ls -la $w/streamed.h5 2>/dev/null
rm -f $w/streamed.h5
echo
echo "| case | measured | goal |"
echo "|---|---|---|"
echo "| 48 x 48 scan, probe_block = 500 vs whole (GPU) | $bitwise | bitwise |"
echo "| 128 x 128 scan held in memory (4.0 GiB of patterns) | $ref_wall s whole process, $ref_per ms per probe (8 configurations) | reference |"
echo "| $n x $n scan streamed under max_memory = 32 (rc $s_rc, $gib GiB of patterns) | $s_wall s whole process, $s_per ms per probe: $ratio x the reference; peak host memory $peak; write phase ${wsec:-?} s (${rate} GB/s) | <= 1.2 x, <= 32 GiB |"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/NVIDIA //')
python3 - "$out/summary_rows.csv" "$gpu" "$n" "$gib" "$s_per" "$ratio" "$peak" "$rate" "$bitwise" <<'PY'
import csv, sys
path, gpu, n, gib, per, ratio, peak, rate, bitwise = sys.argv[1:]
row = {"key": "stream4d", "case": f"4D-STEM larger than memory: Si, {n} x {n} probes, 255^2 patterns ({gib} GiB), "
       "8 configurations, max_memory = 32 GiB", "measure": "ms per probe, whole process; peak host memory",
       "stemsim": f"{per} ms per probe ({ratio} x the in-memory job), peak {peak}, write {rate} GB/s, {bitwise}",
       "peers": "-", "floor": "goal <= 1.2 x, <= 32 GiB", "machine": gpu, "source": "results/STREAM4D.md"}
with open(path, "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(row))
    wr.writeheader()
    wr.writerow(row)
PY
