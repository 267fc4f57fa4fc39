#!/usr/bin/env bash
# GPU engine against the CPU engine on the same inputs (relative RMS < 1e-4 on
# 2D, 3D, 4D and DPC outputs), multislice and PRISM f = 2, single-transfer and
# streaming, and multislice with detection planes inside the sample ([output]
# depth_every = 1: every dataset at every depth, both modes). Skips (exit 77)
# with a message when no usable GPU exists.
#   gpu_vs_cpu.sh STEMSIM CHECK_H5_PY PYTHON CONFIG WORKDIR
set -uo pipefail
exe=$1 check=$2 py=$3 cfg=$4 work=$5
mkdir -p "$work"
common=(-q --set output.overwrite=true --set scan.step=0.8)
"$exe" "${common[@]}" --set compute.device=gpu --set output.file="$work/probe.h5" --dry-run "$cfg" >/dev/null 2>&1
"$exe" "${common[@]}" --set compute.device=gpu --set output.file="$work/probe.h5" "$cfg" >"$work/probe.log" 2>&1
rc=$?
if [ $rc -eq 8 ]; then
  echo "SKIP: no usable GPU: $(grep -m1 error "$work/probe.log")"
  exit 77
fi
[ $rc -eq 0 ] || { cat "$work/probe.log"; exit 1; }
fail=0
for alg in multislice prism; do
  "$exe" "${common[@]}" --set simulation.algorithm=$alg --set compute.device=cpu \
      --set output.file="$work/cpu_$alg.h5" "$cfg" || exit 1
  for mode in single streaming; do
    "$exe" "${common[@]}" --set simulation.algorithm=$alg --set compute.device=gpu \
        --set compute.memory_mode=$mode --set output.file="$work/gpu_${alg}_$mode.h5" "$cfg" || exit 1
    echo "== $alg, $mode"
    "$py" "$check" compare "$work/gpu_${alg}_$mode.h5" "$work/cpu_$alg.h5" --tol 1e-4 \
        --datasets images,rings,cbed,dpc_com_x,dpc_com_y || fail=1
  done
done
# detection planes: the GPU continues the waves after each plane as the CPU does
depths=(--set simulation.algorithm=multislice --set output.depth_every=1)
"$exe" "${common[@]}" "${depths[@]}" --set compute.device=cpu --set output.file="$work/cpu_depths.h5" "$cfg" || exit 1
for mode in single streaming; do
  "$exe" "${common[@]}" "${depths[@]}" --set compute.device=gpu --set compute.memory_mode=$mode \
      --set output.file="$work/gpu_depths_$mode.h5" "$cfg" || exit 1
  echo "== multislice with depth_every = 1, $mode"
  "$py" "$check" compare "$work/gpu_depths_$mode.h5" "$work/cpu_depths.h5" --tol 1e-4 \
      --datasets images,rings,cbed,dpc_com_x,dpc_com_y || fail=1
done
exit $fail
