#!/usr/bin/env bash
# The atomic-electron-tomography campaign on one GPU (performance issue, round 3, item 3);
# builds nothing (build/ and .device/ carried):
#   [RANKS=n] bash benchmarks/gpu/device_tomography.sh [full|part N_CONFIGS] [extra --set arguments...]
# The case: the Prismatic paper's amorphous-carbon cube (benchmarks/cases/gpu_bench.ini,
# ~100 000 atoms, 1000^2 at 0.1 A), PRISM f = 8, the whole cell scanned at 0.4 A (62 500
# probes), thermal configurations, [series] tilt_x = -64:2:64 (65 tilts).
# - full: 65 tilts x 16 configurations = 1040 units, checkpointed; the job is stopped with
#   SIGTERM once half the units are in the checkpoint, then the same command resumes it.
#   The whole-process time is the two processes' wall times added (start to file closed).
# - part N: the same with N configurations (a shorter call; the per-unit time is the point).
# Prints the disk peak (checkpoint + output, sampled every 0.5 s), each process's wall time, the per-unit times (from the "unit k of n done ... in X s"
# lines), and the per-phase sums of the log's "time per phase" line, both runs together:
# potential (table + transmission), S-matrix, output (arrange + probes), write, other; the
# overhead is the wall time the phases do not account for (start-up, plans, checkpoint I/O).
# RANKS=n (default 1): n one-rank groups share the GPU, each taking units as it frees (the
# phase breakdown is then rank 0's alone; the whole-process time is the point).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_tomography
mode=${1:-full}
shift || true
configs=16
if [ "$mode" = part ]; then
  configs=${1:-2}
  shift || true
fi
w=/tmp/tomo
rm -rf $w && mkdir -p $w
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
args=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu
      --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
      --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.4
      --set detector.save_3d=false
      --set simulation.thermal=true --set simulation.frozen_phonons=$configs --set series.tilt_x=-64:2:64
      --set output.file=$w/tomo.h5 --set output.overwrite=true "$@")
units=$((65 * configs))
ranks=${RANKS:-1}
launch=("$exe")
[ "$ranks" -gt 1 ] && launch=(mpirun --oversubscribe -np "$ranks" "$exe")
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "case: 65 tilts x $configs configurations = $units units, $ranks rank(s); extra: $*"

# the checkpoint's and the output's bytes on disk, sampled every 0.5 s (their peak is the disk need)
( peak=0; while [ ! -f $w/stop_sampling ]; do
    b=$(du -sb $w/tomo.h5.checkpoint $w/tomo.h5* 2>/dev/null | awk '{s += $1} END {print s + 0}')
    c=$(du -sb $w/tomo.h5.checkpoint 2>/dev/null | awk '{print $1 + 0}')
    echo "$b ${c:-0}" >> $w/disk_samples
    sleep 0.5
  done ) &
sampler=$!
# first process: stopped with SIGTERM once half the units are done (the signal stores the sums)
t0=$(date +%s.%N)
"${launch[@]}" "${args[@]}" > $w/run1.log 2>&1 &
pid=$!
half=$((units / 2))
while kill -0 $pid 2>/dev/null; do
  done_units=$(grep -cE '^unit [0-9]+ of [0-9]+ done' $w/run1.log 2>/dev/null)
  if [ "${done_units:-0}" -ge $half ]; then
    kill -TERM $pid
    break
  fi
  sleep 0.2
done
wait $pid
rc1=$?
t1=$(date +%s.%N)
du -sb $w/tomo.h5.checkpoint 2>/dev/null | awk '{printf "checkpoint after the stop: %.2f GB\n", $1 / 1e9}'
# second process: the same command resumes from the checkpoint
"${launch[@]}" "${args[@]}" > $w/run2.log 2>&1
rc2=$?
t2=$(date +%s.%N)
touch $w/stop_sampling
wait $sampler
awk '{if ($1 > p) p = $1; if ($2 > c) c = $2} END {printf "disk peak: %.2f GB (checkpoint %.2f GB)\n", p / 1e9, c / 1e9}' $w/disk_samples
ls -l $w/tomo.h5 2>/dev/null | awk '{printf "output: %.2f GB\n", $5 / 1e9}'
df -h /tmp | tail -1
cp $w/run1.log $w/run2.log "$out"/ 2>/dev/null
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 - "$w" "$rc1" "$rc2" "$t0" "$t1" "$t2" "$units" "$out" "$gpu" "$#" <<'PY'
import csv, re, sys
w, rc1, rc2, t0, t1, t2, units = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *map(float, sys.argv[4:7]), int(sys.argv[7])
out, gpu, extra = sys.argv[8], sys.argv[9], int(sys.argv[10])
wall1, wall2 = t1 - t0, t2 - t1
print(f"first process: exit {rc1} (stopped with SIGTERM: 75 expected) in {wall1:.1f} s")
print(f"second process (resumed): exit {rc2} in {wall2:.1f} s")
phase = {}
done = []
resumed = None
for log in ("run1.log", "run2.log"):
    text = open(f"{w}/{log}").read()
    done += [float(x) for x in re.findall(r"^unit \d+ of \d+ done .* in ([0-9.]+) s", text, re.M)]
    m = re.search(r"resuming: (\d+) of (\d+) units done", text)
    if m: resumed = int(m.group(1))
    m = re.search(r"time per phase, seconds \(wall [0-9.]+\):\n\s+rank 0:\s+(.*)", text)
    if m:
        for name, v in re.findall(r"([A-Za-z -]+?) ([0-9.]+)(?:,|$)", m.group(1)):
            phase[name.strip()] = phase.get(name.strip(), 0) + float(v)
total = wall1 + wall2
print(f"units computed: {len(done)} (resumed at {resumed} of {units}); whole process {total:.1f} s = {total / units:.3f} s per unit")
if done:
    s = sorted(done)
    print(f"per unit in the log: median {s[len(s) // 2]:.3f} s, min {s[0]:.3f}, max {s[-1]:.3f}")
groups = {"potential": ("table", "transmission"), "S-matrix": ("S-matrix",), "output": ("arrange", "probes"),
          "write": ("write",), "sums": ("reduction",), "other (logged)": ("other", "broadcast", "gather", "wait")}
acc = 0
for g, names in groups.items():
    v = sum(phase.get(n, 0) for n in names)
    acc += v
    print(f"  {g:16s} {v:8.1f} s  {v / units:.4f} s per unit")
print(f"  {'not in phases':16s} {total - acc:8.1f} s  {(total - acc) / units:.4f} s per unit (start-up, plans, checkpoint)")
if units == 1040 and rc1 == 75 and rc2 == 0 and not extra:  # the headline row of benchmarks/README.md's summary
    with open(f"{out}/summary_rows.csv", "w", newline="") as f:
        row = {"key": "tomography", "case": "aC 100 A, PRISM f = 8, 62 500 probes, 65 tilts x 16 configurations "
               "(1040 units), kill + resume", "measure": "s per unit, whole process",
               "stemsim": f"{total / units:.3f} ({total:.0f} s in all)", "peers": "-", "floor": "goal 0.17",
               "machine": gpu.replace("NVIDIA ", "").replace(" 80GB HBM3", ""), "source": "results/TOMOGRAPHY.md"}
        wr = csv.DictWriter(f, fieldnames=list(row), lineterminator="\n")
        wr.writeheader()
        wr.writerow(row)
PY
grep -E "^wrote|error" $w/run2.log | tail -3
