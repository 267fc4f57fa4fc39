#!/usr/bin/env bash
# The GPU transmission build's splat as a gather over tiles (cuda/gpu_potential.cu,
# k_gather_atoms) against the atomics it replaced, on one GPU; builds nothing:
#   OLD=path/to/old/stemsim bash benchmarks/gpu/device_gather_splat.sh [campaign]
# 1. gpu_transmission_check 4: the GPU's transmission functions against potential.c's;
# 2. the same bits as OLD (a build of the atomics, 7cf52d5..f9a7e98) on the amorphous-carbon cube
#    (PRISM f = 8, 2 thermal configurations; m = 2) and the paper case (SrTiO3, f = 16,
#    2 configurations; Sr and Ti oversampled), with each run's transmission time per configuration;
# 3. campaign: device_tomography.sh full with the new build (65 tilts x 16 configurations).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_gather_splat
old=${OLD:?OLD: the stemsim built with the atomics}
w=/tmp/dgs
rm -rf $w && mkdir -p $w
status=0
echo "== gpu_transmission_check 4"
"$build"/tests/gpu_transmission_check 4 | grep -E "FAIL|PASS|max" | tail -8 || status=1
python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null || exit 1
ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set compute.device=gpu --set simulation.algorithm=prism
    --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set simulation.thermal=true
    --set simulation.frozen_phonons=2 --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100
    --set scan.y_end=100 --set scan.step=0.4)
paper=(benchmarks/cases/paper_srtio3.ini --set compute.device=gpu --set simulation.frozen_phonons=2)
for case in ac paper; do
  declare -n args=$case
  for b in old new; do
    bin=$STEMSIM
    [ $b = old ] && bin=$old
    "$bin" -v "${args[@]}" --set output.file=$w/${case}_$b.h5 --set output.overwrite=true > $w/${case}_$b.log 2>&1 ||
      { status=1; tail -5 $w/${case}_$b.log; }
    echo "$case, $b: $(grep -E "configuration [12] of" $w/${case}_$b.log | grep -oE "transmission [0-9.]+" | tr '\n' ' ')"
  done
  if python3 tests/check_h5.py compare $w/${case}_new.h5 $w/${case}_old.h5 --tol 0 > $w/cmp.log 2>&1; then
    echo "PASS $case: bit-identical to the atomics ($(tail -1 $w/cmp.log))"
  else
    echo "FAIL $case: not bit-identical"; grep -E "^FAIL" $w/cmp.log | head -5; status=1
  fi
done
if [ "${1:-}" = campaign ]; then
  OUT=$out/tomo bash benchmarks/gpu/device_tomography.sh full 2>&1 | tail -14
fi
echo "device_gather_splat: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
