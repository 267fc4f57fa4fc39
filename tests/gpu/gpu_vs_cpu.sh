#!/usr/bin/env bash
# GPU engine against the CPU engine on the same inputs (relative RMS < 1e-4 on
# 2D, 3D, 4D and DPC outputs), multislice and PRISM f = 2, single-transfer and
# streaming, and multislice with detection planes inside the sample ([output]
# depth_every = 1: every dataset at every depth, both modes); hrtem (the image
# and the exit wave within 1e-5 from the same transmission functions, every
# dataset within 1e-4 with the GPU's own) for a plain run with an objective
# aperture, a beam-tilt x defocus series and a focal spread with 2 configurations,
# single-transfer, streaming and the multiplies in cuFFT's loads; multislice, PRISM and
# detection planes with [compute] gpu_slices = fused; a GPU image of
# another defocus must fail the comparison. Skips (exit 77) with a message when
# no usable GPU exists.
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
# [compute] gpu_slices = fused (cuda/gpu_fused_slice.cu; the 224^2 grid is 7-smooth): multislice,
# the S-matrix step, and detection planes inside the sample (the slices split at each plane)
for alg in multislice prism depths; do
  args=(--set simulation.algorithm=$alg) ref="$work/cpu_$alg.h5"
  [ $alg = depths ] && args=("${depths[@]}")
  "$exe" -v "${common[@]:1}" "${args[@]}" --set compute.device=gpu --set compute.gpu_slices=fused \
      --set output.file="$work/gpu_${alg}_fused.h5" "$cfg" > "$work/gpu_${alg}_fused.log" 2>&1 || exit 1
  echo "== $alg, gpu_slices = fused"
  grep -q "fused slice kernels" "$work/gpu_${alg}_fused.log" || { echo "FAIL: the fused kernels did not run"; fail=1; }
  "$py" "$check" compare "$work/gpu_${alg}_fused.h5" "$ref" --tol 1e-4 \
      --datasets images,rings,cbed,dpc_com_x,dpc_com_y || fail=1
done
# [compute] gpu_slices = auto (the default) on a grid of cuFFTDx's compiled sides (cuda/gpu_dx_slice.cu),
# non-square (256 x 512): multislice and the S-matrix step; skipped, saying so, in a build without MathDx
dx=(--set simulation.pixel_size=0.085 --set sample.tile_y=8)
for alg in multislice prism; do
  "$exe" "${common[@]}" "${dx[@]}" --set simulation.algorithm=$alg --set compute.device=cpu \
      --set output.file="$work/cpu_${alg}_dx.h5" "$cfg" || exit 1
  "$exe" -v "${common[@]:1}" "${dx[@]}" --set simulation.algorithm=$alg --set compute.device=gpu \
      --set output.file="$work/gpu_${alg}_dx.h5" "$cfg" > "$work/gpu_${alg}_dx.log" 2>&1 || exit 1
  echo "== $alg, 256 x 512, gpu_slices = auto"
  if grep -q "cuFFTDx, 256x512" "$work/gpu_${alg}_dx.log"; then
    "$py" "$check" compare "$work/gpu_${alg}_dx.h5" "$work/cpu_${alg}_dx.h5" --tol 1e-4 \
        --datasets images,rings,cbed,dpc_com_x,dpc_com_y || fail=1
  else
    echo "skipped: no cuFFTDx kernels in this build ($(grep -m1 -o "gpu [a-zA-Z-]*:.*" "$work/gpu_${alg}_dx.log" | cut -c1-200))"
  fi
done
for mode in single streaming; do
  "$exe" "${common[@]}" "${depths[@]}" --set compute.device=gpu --set compute.memory_mode=$mode \
      --set output.file="$work/gpu_depths_$mode.h5" "$cfg" || exit 1
  echo "== multislice with depth_every = 1, $mode"
  "$py" "$check" compare "$work/gpu_depths_$mode.h5" "$work/cpu_depths.h5" --tol 1e-4 \
      --datasets images,rings,cbed,dpc_com_x,dpc_com_y || fail=1
done
# hrtem: the exit waves and lens images on the GPU (cuda/gpu_hrtem.cu) = src/hrtem.c
hrtem=(--set output.overwrite=true --set scan.step=0.8 --set simulation.algorithm=hrtem --set output.save_exit_wave=true)
# hrtem_case NAME KEYS...: the CPU's file, then the GPU's in each mode compared with it
hrtem_case() {
  local name=$1 tag=${1// /_} mode tol sets opts
  shift
  "$exe" -q "${hrtem[@]}" "$@" --set compute.device=cpu --set output.file="$work/cpu_hrtem_$tag.h5" "$cfg" || return 1
  for mode in "single debug.gpu_transmission=off" "streaming debug.gpu_transmission=off" \
              "single debug.gpu_transmission=off compute.fft_callbacks=on" "single"; do
    read -r -a opts <<< "compute.memory_mode=$mode"
    opts=("${opts[@]/#/--set=}")
    tol=1e-5 sets=hrtem,exit_wave
    # the GPU's own transmission functions: every dataset within 1e-4 but the centre of mass, which for
    # an untilted plane wave is zero to rounding (1e-7 mrad), so that its relative difference means nothing
    [[ $mode == *gpu_transmission* ]] || { tol=1e-4; sets=hrtem,exit_wave,rings,images,cbed,total_intensity,axes; }
    "$exe" "${hrtem[@]}" "$@" "${opts[@]}" --set compute.device=gpu --set output.file="$work/gpu_hrtem_$tag.h5" "$cfg" \
        > "$work/gpu_hrtem_$tag.log" 2>&1 || { cat "$work/gpu_hrtem_$tag.log"; return 1; }
    echo "== hrtem $name, $mode"
    grep -q "gpu hrtem:" "$work/gpu_hrtem_$tag.log" || { echo "FAIL: the GPU engine did not make the image"; return 1; }
    "$py" "$check" compare "$work/gpu_hrtem_$tag.h5" "$work/cpu_hrtem_$tag.h5" --tol $tol ${sets:+--datasets $sets} ||
      return 1
  done
}
hrtem_case plain --set hrtem.objective_aperture=15 || fail=1
hrtem_case "beam tilts" --set "series.beam_tilt_x=0 5" --set "series.beam_tilt_y=0 3" --set "series.defocus=-20 20" \
    --set probe.defocus=0 || fail=1
hrtem_case "focal spread" --set probe.focal_spread=30 --set probe.focal_points=5 --set simulation.thermal=true \
    --set simulation.frozen_phonons=2 || fail=1
# a thickness series: the wave's copy at each plane (cuda/gpu_hrtem.cu hr_to_plane), two beam tilts
hrtem_case depths --set output.depth_every=2 --set "series.beam_tilt_x=0 5" --set hrtem.objective_aperture=15 || fail=1
# negative control: another defocus's GPU image fails the 1e-5 comparison
"$exe" -q "${hrtem[@]}" --set hrtem.objective_aperture=15 --set probe.defocus=-41 --set compute.device=gpu \
    --set debug.gpu_transmission=off --set output.file="$work/gpu_hrtem_other.h5" "$cfg" || exit 1
echo "== hrtem negative control (defocus -41 against -40: must FAIL)"
if "$py" "$check" compare "$work/gpu_hrtem_other.h5" "$work/cpu_hrtem_plain.h5" --tol 1e-5 --datasets hrtem; then
  echo "FAIL: a 1 Angstrom defocus change passed the comparison"; fail=1
fi
exit $fail
