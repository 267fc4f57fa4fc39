#!/usr/bin/env bash
# PRISM's stored S-matrix and HRTEM's tilt series on the GPU machine (builds nothing; build/,
# .device/ and .whl/ carried):
#   bash benchmarks/gpu/device_smatrix_checks.sh
# - [output] save_smatrix on the GPU engine writes the CPU engine's /smatrix (1e-4), and the
#   images agree;
# - [simulation] smatrix_file on the GPU (the CPU run's S-matrices) gives the CPU run's images,
#   and with another defocus the GPU run that computes its own S-matrices with it;
# - whole-process time computing against reading the S-matrices (3 configurations, f = 2, and
#   f = 1 with 4 x the beams), from each run's own "wrote ... in" line;
# - an HRTEM beam tilt series (9 tilts x 2 defoci x 2 configurations) on the 16 cores:
#   time against 9 separate runs.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_smatrix_checks
status=0
d=/tmp/dsm
mkdir -p $d
si=(benchmarks/cases/gpu_check_si.ini --set output.overwrite=true --set simulation.thermal=true
    --set simulation.frozen_phonons=3 --set simulation.algorithm=prism)
check() { # label a b [datasets]
  local r
  r=$(python3 tests/check_h5.py compare "$2" "$3" --tol 1e-4 ${4:+--datasets $4} | tail -1)
  echo "$1: $r"
  echo "$r" | grep -q PASS || status=1
}
took() { grep -o "wrote .* in [0-9.]* s" "$1" | grep -o "in [0-9.]* s" | head -1; }
for f in 2 1; do
  fs=(--set simulation.interpolation_x=$f --set simulation.interpolation_y=$f)
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=cpu --set output.save_smatrix=true \
    --set output.file=$d/c$f.h5 > $d/c$f.log 2>&1 || status=1
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=gpu --set output.save_smatrix=true \
    --set output.file=$d/g$f.h5 > $d/g$f.log 2>&1 || status=1
  check "f=$f save_smatrix, GPU vs CPU (all datasets)" $d/g$f.h5 $d/c$f.h5
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=gpu --set output.file=$d/gc$f.h5 > $d/gc$f.log 2>&1 || status=1
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=gpu --set simulation.smatrix_file=$d/c$f.h5 \
    --set output.file=$d/r$f.h5 > $d/r$f.log 2>&1 || status=1
  check "f=$f smatrix_file on the GPU vs the CPU run that wrote it" $d/r$f.h5 $d/c$f.h5 images,rings,cbed,dpc_com_x,dpc_com_y
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=gpu --set simulation.smatrix_file=$d/c$f.h5 \
    --set probe.defocus=-80 --set output.file=$d/rd$f.h5 > /dev/null 2>&1 || status=1
  "$STEMSIM" "${si[@]}" "${fs[@]}" --set compute.device=gpu --set probe.defocus=-80 \
    --set output.file=$d/gd$f.h5 > /dev/null 2>&1 || status=1
  check "f=$f smatrix_file, defocus -80, vs the GPU computing it" $d/rd$f.h5 $d/gd$f.h5
  echo "f=$f whole process on the GPU: computing $(took $d/gc$f.log), saving $(took $d/g$f.log), reading $(took $d/r$f.log)"
done
# HRTEM beam tilt series on the CPU cores against separate runs
ht=(benchmarks/cases/gpu_check_si.ini --set output.overwrite=true --set simulation.algorithm=hrtem --set simulation.thermal=true
    --set simulation.frozen_phonons=2 --set compute.device=cpu --set sample.tile_x=12 --set sample.tile_y=12
    --set probe.cs=0 --set probe.astigmatism=0 --set probe.defocus=0)
t0=$(date +%s.%N)
mpirun --oversubscribe --bind-to none -np 2 "$STEMSIM" "${ht[@]}" --set series.beam_tilt_x=-8:2:8 --set series.defocus=-50,50 \
  --set output.file=$d/series.h5 > $d/series.log 2>&1 || status=1
t1=$(date +%s.%N)
for bx in -8 -6 -4 -2 0 2 4 6 8; do
  mpirun --oversubscribe --bind-to none -np 2 "$STEMSIM" "${ht[@]}" --set probe.beam_tilt_x=$bx --set series.defocus=-50,50 \
    --set output.file=$d/one.h5 > /dev/null 2>&1 || status=1
done
t2=$(date +%s.%N)
grep "rounded to\|campaign:" $d/series.log | head -4
echo "hrtem beam tilt series (9 tilts x 2 defoci x 2 configurations, 2 ranks): $(python3 -c "print(round($t1 - $t0, 2))") s;" \
  "9 separate runs: $(python3 -c "print(round($t2 - $t1, 2))") s"
cp $d/*.log "$out"/ 2>/dev/null
echo "device_smatrix_checks: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
