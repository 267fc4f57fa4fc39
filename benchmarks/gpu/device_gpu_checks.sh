#!/usr/bin/env bash
# The GPU checks of the test suite, run where a GPU is (builds nothing; build/,
# .device/ and .whl/ carried):  bash benchmarks/gpu/device_gpu_checks.sh
# transmission step GPU = CPU, each kernel against its plain-C reference, GPU
# engine = CPU engine (multislice, PRISM; single-transfer and streaming), the
# PRISM path that gathers through the host (debug.gpu_prism_resident = off) and
# the CPU-built transmission functions (debug.gpu_transmission = off) and the multiplies
# inside cuFFT's loads (compute.fft_callbacks = on) = CPU engine, these
# with a segmented detector (binned on the GPU) and 3 configurations; and a focal
# spread (5 defoci), a soft aperture, cropped and binned 4D patterns and PACBED on the
# GPU = on the CPU; a tilt x defocus x depth campaign on the GPU = on the CPU (multislice, PRISM); probe
# positions from a file with a tilted beam and a displaced aperture on the GPU = on the CPU;
# a thinner last slice (its own propagator) on the GPU = on the CPU; hrtem on the GPU
# (cuda/gpu_hrtem.cu: plain with an objective aperture, a beam-tilt x defocus series, a focal
# spread with 2 configurations; image and exit wave within 1e-5, in gpu_vs_cpu.sh); cbed
# with a tilted beam and a focal spread on the GPU's multislice = on the CPU (1e-5);
# and benchmarks/gpu/device_reproducibility.sh --no-timing (the same bits run after run, resumed,
# on 1-3 ranks).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_gpu_checks
status=0
echo "== gpu_transmission_check"; "$build"/tests/gpu_transmission_check 4 || status=1
echo "== gpu_kernel_check"; "$build"/tests/gpu_kernel_check 20 || status=1
echo "== gpu_vs_cpu"
bash tests/gpu/gpu_vs_cpu.sh "$STEMSIM" tests/check_h5.py python3 benchmarks/cases/gpu_check_si.ini /tmp/dgc > "$out/gpu_vs_cpu.log" 2>&1 ||
  { status=1; tail -20 "$out/gpu_vs_cpu.log"; }
grep -E "^==|check_h5.py" "$out/gpu_vs_cpu.log"
si=(benchmarks/cases/gpu_check_si.ini -q --set scan.step=0.8 --set output.overwrite=true --set simulation.thermal=true
    --set simulation.frozen_phonons=3 --set detector.segments=4 --set detector.segment_inner=6
    --set detector.segment_outer=40 --set detector.segment_rings=2 --set detector.segment_rotation=10)
for alg in multislice prism; do
  "$STEMSIM" "${si[@]}" --set simulation.algorithm=$alg --set compute.device=cpu --set output.file=/tmp/dgc/c.h5 || status=1
  for v in debug.gpu_prism_resident=off debug.gpu_transmission=off debug.gpu_transmission=auto compute.fft_callbacks=on; do
    "$STEMSIM" "${si[@]}" --set simulation.algorithm=$alg --set compute.device=gpu --set $v --set output.file=/tmp/dgc/g.h5 || status=1
    echo "$alg, 3 configurations, $v: $(python3 tests/check_h5.py compare /tmp/dgc/g.h5 /tmp/dgc/c.h5 --tol 1e-4 | tail -1)"
    python3 tests/check_h5.py compare /tmp/dgc/g.h5 /tmp/dgc/c.h5 --tol 1e-4 | grep -q PASS || status=1
  done
done
for alg in multislice prism; do
  fs=(--set simulation.algorithm=$alg --set probe.defocus=-40 --set probe.focal_spread=40 --set probe.focal_points=5
      --set probe.soft_aperture=true
      --set detector.save_4d=true --set detector.save_pacbed=true --set detector.cbed_max_angle=30 --set detector.cbed_bin=2)
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=cpu --set output.file=/tmp/dgc/fc.h5 || status=1
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=gpu --set output.file=/tmp/dgc/fg.h5 || status=1
  echo "$alg, focal spread: $(python3 tests/check_h5.py compare /tmp/dgc/fg.h5 /tmp/dgc/fc.h5 --tol 1e-4 | tail -1)"
  python3 tests/check_h5.py compare /tmp/dgc/fg.h5 /tmp/dgc/fc.h5 --tol 1e-4 | grep -q PASS || status=1
done
# a campaign on the GPU (2 tilts x 2 defoci x 2 depths x 2 configurations, multislice and
# PRISM) = the same campaign on the CPU
for alg in multislice prism; do
  camp=(--set simulation.algorithm=$alg --set series.tilt_x="0 6" --set series.defocus="-30 30" --set probe.defocus=0
        --set simulation.frozen_phonons=2 --set detector.segments=0)
  camp+=(--set output.depths="2.715 5.43")
  "$STEMSIM" "${si[@]}" "${camp[@]}" --set compute.device=cpu --set output.file=/tmp/dgc/cc.h5 || status=1
  "$STEMSIM" "${si[@]}" "${camp[@]}" --set compute.device=gpu --set output.file=/tmp/dgc/cg.h5 || status=1
  echo "$alg campaign: $(python3 tests/check_h5.py compare /tmp/dgc/cg.h5 /tmp/dgc/cc.h5 --tol 1e-4 | tail -1)"
  python3 tests/check_h5.py compare /tmp/dgc/cg.h5 /tmp/dgc/cc.h5 --tol 1e-4 | grep -q PASS || status=1
done
# probe positions from a file (40 random positions in the 21.72 Angstrom cell) and a tilted
# beam with a displaced aperture: GPU = CPU, multislice and PRISM
python3 -c "import random; random.seed(3); print('\n'.join('%.6f %.6f' % (random.uniform(0, 21.72), random.uniform(0, 21.72)) for _ in range(40)))" > /tmp/dgc/probes.txt
# the grid's keys go (positions replace them); the model path made absolute
sed -E '/^(units|x_start|x_end|y_start|y_end|step) *=/d; s#^xyz = \.\./\.\./#xyz = '"$root"'/#' benchmarks/cases/gpu_check_si.ini > /tmp/dgc/pos.ini
for alg in multislice prism; do
  pos=(/tmp/dgc/pos.ini -q --set output.overwrite=true --set simulation.algorithm=$alg
       --set scan.positions=/tmp/dgc/probes.txt --set probe.beam_tilt_x=5 --set probe.beam_tilt_y=-3
       --set probe.aperture_shift_x=1 --set detector.save_4d=true)
  "$STEMSIM" "${pos[@]}" --set compute.device=cpu --set output.file=/tmp/dgc/pc.h5 || status=1
  "$STEMSIM" "${pos[@]}" --set compute.device=gpu --set output.file=/tmp/dgc/pg.h5 || status=1
  echo "$alg, positions file and beam tilt: $(python3 tests/check_h5.py compare /tmp/dgc/pg.h5 /tmp/dgc/pc.h5 --tol 1e-4 | tail -1)"
  python3 tests/check_h5.py compare /tmp/dgc/pg.h5 /tmp/dgc/pc.h5 --tol 1e-4 | grep -q PASS || status=1
done
# a thinner last slice (21.72 Angstrom in slices of 2: ten of 2 and one of 1.72, its own
# propagator) on the GPU = on the CPU (which is tested against the closed-form Fresnel
# propagator, tests/unit/test_slices.c): multislice with a depth inside and the exit, PRISM;
# plain multiplies and the multiplies inside cuFFT's loads
plan_text=$("$STEMSIM" "${si[@]}" --set simulation.slice_thickness=2 --dry-run 2>&1) # not piped into grep -q: under
grep -q "slices  *11 of 2 Angstrom, the last 1.72 Angstrom" <<< "$plan_text" ||      # pipefail its early exit fails it
  { status=1; echo "thin last slice: not in the plan"; }
for alg in multislice prism; do
  thin=(--set simulation.algorithm=$alg --set simulation.slice_thickness=2 --set simulation.frozen_phonons=1)
  [ $alg = multislice ] && thin+=(--set output.depths="8 21.72")
  "$STEMSIM" "${si[@]}" "${thin[@]}" --set compute.device=cpu --set output.file=/tmp/dgc/tc.h5 || status=1
  for v in compute.fft_callbacks=off compute.fft_callbacks=on; do
    "$STEMSIM" "${si[@]}" "${thin[@]}" --set compute.device=gpu --set $v --set output.file=/tmp/dgc/tg.h5 || status=1
    echo "$alg, thinner last slice, $v: $(python3 tests/check_h5.py compare /tmp/dgc/tg.h5 /tmp/dgc/tc.h5 --tol 1e-4 | tail -1)"
    python3 tests/check_h5.py compare /tmp/dgc/tg.h5 /tmp/dgc/tc.h5 --tol 1e-4 | grep -q PASS || status=1
  done
done
# algorithm = cbed: the GPU engine's multislice for one probe = the CPU's
cb=(benchmarks/cases/gpu_check_si.ini -q --set output.overwrite=true --set simulation.algorithm=cbed --set probe.defocus=0
    --set series.defocus="-40 40" --set simulation.thermal=true --set simulation.frozen_phonons=2)
"$STEMSIM" "${cb[@]}" --set compute.device=cpu --set output.file=/tmp/dgc/cbc.h5 || status=1
"$STEMSIM" "${cb[@]}" --set compute.device=gpu --set output.file=/tmp/dgc/cbg.h5 || status=1
echo "cbed defocus series: $(python3 tests/check_h5.py compare /tmp/dgc/cbg.h5 /tmp/dgc/cbc.h5 --tol 1e-4 | tail -1)"
python3 tests/check_h5.py compare /tmp/dgc/cbg.h5 /tmp/dgc/cbc.h5 --tol 1e-4 | grep -q PASS || status=1
# algorithm = cbed with a tilted beam and a focal spread: the GPU's multislice (one probe, each
# defocus) = the CPU's, within 1e-5 from the same transmission functions
cbt=(benchmarks/cases/gpu_check_si.ini -q --set output.overwrite=true --set simulation.algorithm=cbed
     --set probe.beam_tilt_x=4 --set probe.beam_tilt_y=-2 --set probe.focal_spread=30 --set probe.focal_points=5
     --set debug.gpu_transmission=off)
"$STEMSIM" "${cbt[@]}" --set compute.device=cpu --set output.file=/tmp/dgc/cbtc.h5 || status=1
"$STEMSIM" "${cbt[@]}" --set compute.device=gpu --set output.file=/tmp/dgc/cbtg.h5 || status=1
echo "cbed beam tilt + focal spread: $(python3 tests/check_h5.py compare /tmp/dgc/cbtg.h5 /tmp/dgc/cbtc.h5 --tol 1e-5 | tail -1)"
python3 tests/check_h5.py compare /tmp/dgc/cbtg.h5 /tmp/dgc/cbtc.h5 --tol 1e-5 | grep -q PASS || status=1
# bit for bit ([compute] gpu_deterministic): two runs, kill and resume, 1-3 ranks sharing the GPU
# (STEMSIM_SKIP_REPRODUCIBILITY=1 leaves it out, for a lease that runs it on its own with timings)
if [ "${STEMSIM_SKIP_REPRODUCIBILITY:-0}" != 1 ]; then
  echo "== device_reproducibility.sh --no-timing"
  bash benchmarks/gpu/device_reproducibility.sh --no-timing > "$out/reproducibility.log" 2>&1 || status=1
  grep -E "^(PASS|FAIL)|^engine|^GPU-built|^device_reproducibility" "$out/reproducibility.log"
fi
echo "device_gpu_checks: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
