#!/usr/bin/env bash
# Bitwise reproducible GPU engine (issue 26, item 5) on the GPU machine (builds nothing;
# build/ with CUDA, .device/ and .whl/ carried):
#   bash benchmarks/gpu/device_reproducibility.sh [--no-timing]
# With [compute] gpu_deterministic = on (the default), every comparison below is
# tests/check_h5.py compare --tol 0 (every dataset bit for bit, PACBED included):
#  1. the kernel checks ("$build"/tests/gpu_kernel_check): the fixed-order detector kernel
#     against the CPU's detector, and the same bits over repeats, launch sizes and batches;
#  2. two identical runs: the small silicon case (3 thermal configurations, rings, images,
#     DPC, segments, 4D, PACBED) with multislice (2 and 4 streams, streaming memory mode,
#     depths) and PRISM (S-matrix on the GPU, through the host, streaming, 4 streams); with
#     gpu_deterministic = off the same pairs' differences are printed;
#  3. a checkpointed [series] campaign (2 tilts x 2 defoci x 2 configurations, multislice and
#     PRISM) killed after 1 unit (1 rank; and 2 ranks, resumed on 3) = the uninterrupted run;
#  4. 1, 2 and 3 ranks sharing one GPU (fp_groups = 1), 2 ranks in 2 groups (exact sums:
#     the order of the configurations changes no bit) and the campaign on 2 and 3 ranks;
#  5. two identical runs with the transmission functions built on the GPU (the default,
#     cuda/gpu_potential.cu: float atomics until its fixed-point rewrite), reported on a line
#     of their own: sections 1-4 build them on the CPU (debug.gpu_transmission = off);
#  6. (not with --no-timing) the amorphous-carbon PRISM f = 8 job (250 000 probes, 4
#     configurations, the case of benchmarks/archive/DEVICE_ARCHITECTURE.md): two runs each with
#     CPU-built and GPU-built transmission functions, and the cost of on against off,
#     alternating, whole process and the output step's compute time from the log.
# Prints PASS/FAIL per check, the timings, and device_reproducibility: PASS|FAIL last.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_reproducibility
timing=1
[ "${1:-}" = --no-timing ] && timing=0
exe=$STEMSIM
work=/tmp/drp
rm -rf "$work"
mkdir -p "$work"
status=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# same WHAT A B: every dataset bit for bit, or FAIL (status 1)
same() {
  if python3 tests/check_h5.py compare "$2" "$3" --tol 0 > "$work/cmp.log" 2>&1; then
    echo "PASS $1: bit-identical ($(tail -1 "$work/cmp.log" | sed -E 's/.*\(([0-9]+) datasets.*/\1 datasets/'))"
  else
    echo "FAIL $1: not bit-identical:"
    grep -E "^FAIL|only in" "$work/cmp.log" | head -6 | sed 's/^/    /'
    status=1
  fi
}
# spread WHAT A B: the largest relative RMS difference and the datasets that differ (informational)
spread() {
  python3 tests/check_h5.py compare "$2" "$3" --tol 1 > "$work/cmp.log" 2>&1
  echo "     $1: $(awk '/^(ok|FAIL)/ { gsub(":", "", $2); v = $5 + 0; if (v > 0) { n++; if (n <= 6) names = names " " $2 }
                                      if (v > m) m = v }
                    END { printf "largest relative RMS difference %.2e, %d datasets differ:%s", m, n, names }' "$work/cmp.log")"
}
# run NAME RANKS args...: one stemsim job (mpirun for RANKS > 1), its log in $work/NAME.log
run() {
  local name=$1 np=$2; shift 2
  local cmd=(timeout "${DRP_TIMEOUT:-240}" "$exe") # a hang fails the check instead of the lease
  [ "$np" -gt 1 ] && cmd=(timeout "${DRP_TIMEOUT:-240}" mpirun --oversubscribe --bind-to none -np "$np" "$exe")
  "${cmd[@]}" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || { echo "FAIL $name: exit $rc"; tail -5 "$work/$name.log" | sed 's/^/    /'; status=1; }
  return $rc
}

# DRP_SECTIONS="4 5 6" runs only those sections (their set-up still runs)
want() { [[ " ${DRP_SECTIONS:-1 2 3 4 5 6} " == *" $1 "* ]]; }
if want 1; then
echo "== 1. kernel checks"
"$build"/tests/gpu_kernel_check 20 > "$work/kernel_check.log" 2>&1 || status=1
grep -E "k_detect|cuFFT batch|gpu_kernel_check:" "$work/kernel_check.log"
fi

echo "== 2. two identical runs (small silicon case, 3 configurations, all detector outputs)"
si=(benchmarks/cases/gpu_check_si.ini --set compute.device=gpu --set scan.step=0.8 --set output.overwrite=true
    --set debug.gpu_transmission=off --set detector.save_pacbed=true --set simulation.thermal=true
    --set simulation.frozen_phonons=3 --set detector.segments=4 --set detector.segment_inner=6 --set detector.segment_outer=40 --set detector.segment_rings=2
    --set detector.segment_rotation=10)
variants=("multislice|"
          "multislice|compute.streams_per_gpu=4"
          "multislice|compute.memory_mode=streaming"
          "multislice|output.depths=2.715 5.43"
          "prism|"
          "prism|debug.gpu_prism_resident=off"
          "prism|compute.memory_mode=streaming"
          "prism|compute.streams_per_gpu=4")
want 2 || variants=()
for v in "${variants[@]}"; do
  alg=${v%%|*} extra=${v#*|} args=(--set simulation.algorithm="$alg")
  [ -n "$extra" ] && args+=(--set "$extra")
  for mode in on off; do
    for r in 1 2; do
      run "si_${mode}_$r" 1 "${si[@]}" "${args[@]}" --set compute.gpu_deterministic=$mode \
          --set output.file="$work/si_${mode}_$r.h5" || continue
    done
  done
  same "$alg ${extra:-default}, run 1 = run 2" "$work/si_on_2.h5" "$work/si_on_1.h5"
  spread "gpu_deterministic = off, run 1 vs run 2" "$work/si_off_2.h5" "$work/si_off_1.h5"
done

echo "== 3. checkpointed campaign killed after 1 unit, resumed = uninterrupted"
for alg in multislice prism; do
  camp=("${si[@]}" --set simulation.algorithm=$alg --set series.tilt_x="0 6" --set series.defocus="-30 30"
        --set probe.defocus=0 --set simulation.frozen_phonons=2 --set detector.segments=0 --set output.checkpoint_interval=0)
  run "camp_${alg}_ref" 1 "${camp[@]}" --set output.file="$work/camp_${alg}_ref.h5"
  want 3 || continue
  for how in "1 1" "2 3"; do
    set -- $how
    name=camp_${alg}_kill$1
    cmd=("$exe"); [ "$1" -gt 1 ] && cmd=(mpirun --oversubscribe --bind-to none -np "$1" "$exe")
    STEMSIM_TEST_KILL_AFTER_UNITS=1 "${cmd[@]}" "${camp[@]}" --set output.file="$work/$name.h5" > "$work/${name}_killed.log" 2>&1
    echo "     killed with exit $? (expected: not 0)"
    python3 -c "import struct,sys; print('     units in the checkpoint after the kill:', struct.unpack_from('<8sIIQQQII', open(sys.argv[1], 'rb').read(64))[6])" "$work/$name.h5.checkpoint/state" 2>/dev/null ||
      echo "     units in the checkpoint after the kill: 0 (no state)"
    run "${name}_resumed" "$2" "${camp[@]}" --set output.file="$work/$name.h5" --set output.overwrite=false
    grep -m1 -o "resuming: [0-9]* of [0-9]* units done" "$work/${name}_resumed.log" | sed 's/^/     /'
    same "$alg campaign, killed on $1 rank(s), resumed on $2 = uninterrupted" "$work/$name.h5" "$work/camp_${alg}_ref.h5"
  done
done

echo "== 4. 1, 2 and 3 ranks sharing one GPU"
visible=${CUDA_VISIBLE_DEVICES-unset}
first=${CUDA_VISIBLE_DEVICES:-0}
export CUDA_VISIBLE_DEVICES=${first%%,*} # the first GPU only: the ranks share it
for alg in multislice prism; do
  for np in 1 2 3; do
    run "ranks_${alg}_$np" "$np" "${si[@]}" --set simulation.algorithm=$alg --set compute.fp_groups=1 \
        --set output.file="$work/ranks_${alg}_$np.h5"
  done
  same "$alg, 2 ranks = 1 rank" "$work/ranks_${alg}_2.h5" "$work/ranks_${alg}_1.h5"
  same "$alg, 3 ranks = 1 rank" "$work/ranks_${alg}_3.h5" "$work/ranks_${alg}_1.h5"
  # exact sums (src/accumulator.h): the groups' order of configurations changes no bit either
  run "groups_${alg}_2" 2 "${si[@]}" --set simulation.algorithm=$alg --set compute.fp_groups=2 \
      --set output.file="$work/groups_${alg}_2.h5"
  same "$alg, 2 ranks in 2 groups = 1 rank (standard errors included)" "$work/groups_${alg}_2.h5" "$work/ranks_${alg}_1.h5"
  for np in 2 3; do
    run "camp_${alg}_np$np" "$np" "${si[@]}" --set simulation.algorithm=$alg --set series.tilt_x="0 6" \
        --set series.defocus="-30 30" --set probe.defocus=0 --set simulation.frozen_phonons=2 --set detector.segments=0 \
        --set output.file="$work/camp_${alg}_np$np.h5"
    same "$alg campaign, $np ranks = 1 rank" "$work/camp_${alg}_np$np.h5" "$work/camp_${alg}_ref.h5"
  done
done
if [ "$visible" = unset ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$visible; fi

echo "== 5. the GPU-built transmission functions (debug.gpu_transmission = auto: cuda/gpu_potential.cu)"
engine_status=$status
status=0
for alg in multislice prism; do
  for r in 1 2; do
    run "gt_${alg}_$r" 1 "${si[@]}" --set simulation.algorithm=$alg --set debug.gpu_transmission=auto \
        --set output.file="$work/gt_${alg}_$r.h5"
  done
  same "$alg with GPU-built transmission functions, run 1 = run 2" "$work/gt_${alg}_2.h5" "$work/gt_${alg}_1.h5"
done

if [ $timing = 1 ]; then
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py "$work/aC.xyz" > /dev/null
  aC=(benchmarks/cases/gpu_bench.ini --set sample.xyz="$work/aC.xyz" --set simulation.algorithm=prism
      --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set scan.x_start=0 --set scan.y_start=0
      --set scan.x_end=100 --set scan.y_end=100 --set simulation.thermal=true --set simulation.frozen_phonons=4
      --set compute.device=gpu --set output.overwrite=true -v)
  echo "== 6. amorphous carbon, PRISM f = 8, 250 000 probes, 4 configurations: on and off, two runs each, alternating"
  declare -A wall
  for r in 1 2; do
    for mode in on off; do
      t0=$(date +%s.%N)
      run "aC_${mode}_$r" 1 "${aC[@]}" --set compute.gpu_deterministic=$mode --set output.file="$work/aC_${mode}_$r.h5"
      t1=$(date +%s.%N)
      wall[${mode}_$r]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    done
  done
  same "aC PRISM f=8 (GPU-built transmission functions), run 1 = run 2" "$work/aC_on_2.h5" "$work/aC_on_1.h5"
  spread "gpu_deterministic = off, run 1 vs run 2" "$work/aC_off_2.h5" "$work/aC_off_1.h5"
  potential_status=$status
  status=$engine_status
  for r in 1 2; do
    run "aCc_$r" 1 "${aC[@]}" --set debug.gpu_transmission=off --set output.file="$work/aCc_$r.h5"
  done
  same "aC PRISM f=8 (CPU-built transmission functions), run 1 = run 2" "$work/aCc_2.h5" "$work/aCc_1.h5"
  if python3 tests/check_h5.py compare "$work/aC_on_1.h5" "$work/aC_off_1.h5" --tol 1e-6 > "$work/cmp.log" 2>&1; then
    echo "PASS aC: on = off within 1e-6 relative RMS (the same physics)"
  else
    echo "FAIL aC: on and off differ by more than 1e-6"; grep FAIL "$work/cmp.log" | head -3; status=1
  fi
  echo "| gpu_deterministic | whole process, run 1 / run 2 (s) | output step compute, run 1 / run 2 (s) |"
  echo "|---|---|---|"
  for mode in on off; do
    o1=$(grep -oE '^gpu PRISM output: .*: [0-9.]+ s compute' "$work/aC_${mode}_1.log" | grep -oE '[0-9.]+ s compute$' | awk '{s += $1} END {printf "%.3f", s}')
    o2=$(grep -oE '^gpu PRISM output: .*: [0-9.]+ s compute' "$work/aC_${mode}_2.log" | grep -oE '[0-9.]+ s compute$' | awk '{s += $1} END {printf "%.3f", s}')
    echo "| $mode | ${wall[${mode}_1]} / ${wall[${mode}_2]} | $o1 / $o2 |"
  done
  awk -v a="${wall[on_1]}" -v b="${wall[on_2]}" -v c="${wall[off_1]}" -v d="${wall[off_2]}" \
      'BEGIN { on = (a < b ? a : b); off = (c < d ? c : d); printf "cost of gpu_deterministic = on (best of two each): %+.1f%% of the whole job (goal < 3%%)\n", 100 * (on - off) / off }'
  echo "detector kernel alone (gpu_kernel_check, us per call):"
  grep -E "^\| k_detect (fixed|atomic) " "$work/kernel_check.log" | awk -F'|' '{print "   ", $2, $3, $6}'
else
  potential_status=$status
  status=$engine_status
fi
echo "engine (sections 1-4, 6 with CPU-built transmission functions): $([ $status = 0 ] && echo PASS || echo FAIL)"
echo "GPU-built transmission functions (sections 5, 6; cuda/gpu_potential.cu): $([ $potential_status = 0 ] && echo PASS || echo FAIL)"
[ $potential_status = 0 ] || status=1
mkdir -p "$out/reproducibility_logs" && cp "$work"/*.log "$out/reproducibility_logs/" 2>/dev/null
echo "device_reproducibility: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
