#!/usr/bin/env bash
# HRTEM on the GPU engine against the CPU engine at 4096 x 4096 (builds nothing; STEMSIM=
# the CUDA binary, OUT= where logs and the table go):
#   STEMSIM=build-cuda/stemsim OUT=/tmp/hrtem_timing bash benchmarks/gpu/device_hrtem_timing.sh [THREADS]
# The Prismatic paper's amorphous carbon (100 Angstrom cube, benchmarks/cases/gpu_bench.ini, 80 keV,
# 20 slices of 5 Angstrom) on a 4096 x 4096 grid, a series of 8 beam tilts (0 .. 7 mrad along x,
# each its own plane wave), 5 focal-spread defoci, a 25 mrad objective aperture and the exit wave saved:
#   gpu        1 rank, [compute] device = gpu (cuda/gpu_hrtem.cu)
#   cpu        1 rank, device = cpu, THREADS (default 16) threads: src/hrtem.c, one wave at a time
#   cpu_mpi    THREADS ranks, device = cpu, distributed_fft = on: the wave in slabs (mpi/dist_hrtem.c);
#              the CPU engine's own HRTEM FFTs are single-threaded, so this is its 16-core figure
# Prints a table of whole-process wall times and the GPU's log line, and compares the GPU's
# image and exit wave with the 1-rank CPU's (tests/check_h5.py, relative RMS, GPU transmission
# functions: 1e-4).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_hrtem_timing
threads=${1:-16} status=0
python3 benchmarks/cases/gpu_make_amorphous_carbon.py "$out/aC.xyz" > /dev/null || exit 1
case=(benchmarks/cases/gpu_bench.ini --set sample.xyz="$out/aC.xyz" --set simulation.algorithm=hrtem
      --set simulation.grid_x=4096 --set simulation.grid_y=4096
      --set probe.focal_spread=30 --set probe.focal_points=5 --set hrtem.objective_aperture=25 --set output.save_exit_wave=true
      --set output.overwrite=true)
tilts=(--set "series.beam_tilt_x=0 1 2 3 4 5 6 7")
# run NAME CMD...: the whole process timed, its log kept
run() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" > "$out/$name.log" 2>&1 || { status=1; echo "$name failed:"; tail -5 "$out/$name.log"; }
  t1=$(date +%s.%N)
  awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "| %s | %.1f |\n", n, b - a }' >> "$out/table.md"
}
echo "| engine (4096^2, 8 beam tilts x 5 defoci, 20 slices) | wall s |" > "$out/table.md"
echo "|---|---|" >> "$out/table.md"
run gpu "$STEMSIM" "${case[@]}" "${tilts[@]}" --set compute.device=gpu --set output.file="$out/gpu.h5"
# SERIAL_CPU=0 skips the 1-rank CPU run (minutes: its FFTs are single-threaded); the GPU is then
# compared with the distributed-FFT run
[ "${SERIAL_CPU:-1}" = 0 ] ||
  run cpu "$STEMSIM" "${case[@]}" "${tilts[@]}" --set compute.device=cpu --set compute.threads="$threads" --set output.file="$out/cpu.h5"
# the distributed FFT as a series campaign; where this build refuses that (exit 3: a series on a
# distributed FFT, before issue 29 item 3), the 8 beam tilts as 8 jobs, timed together
mpi=(mpirun --oversubscribe -np "$threads" "$STEMSIM" "${case[@]}" --set compute.device=cpu --set compute.threads=1
     --set compute.distributed_fft=on)
if "${mpi[@]}" "${tilts[@]}" --dry-run --set output.file="$out/cpu_mpi.h5" > "$out/cpu_mpi_dry.log" 2>&1; then
  run cpu_mpi "${mpi[@]}" "${tilts[@]}" --set output.file="$out/cpu_mpi.h5"
else
  echo "cpu_mpi: $(grep -m1 error "$out/cpu_mpi_dry.log"): the 8 beam tilts as separate jobs"
  one_tilt_jobs() {
    local t
    for t in 0 1 2 3 4 5 6 7; do
      "${mpi[@]}" --set probe.beam_tilt_x=$t --set output.file="$out/cpu_mpi_$t.h5" || return 1
    done
  }
  run cpu_mpi_8_jobs one_tilt_jobs
fi
cat "$out/table.md"
grep -h "gpu hrtem:\|GPU memory estimate for hrtem" "$out/gpu.log"
echo "== GPU against the CPU engine ($([ -f "$out/cpu.h5" ] && echo 1 rank || echo the distributed FFT))"
ref=$out/cpu.h5
[ -f "$ref" ] || ref=$out/cpu_mpi.h5
python3 tests/check_h5.py compare "$out/gpu.h5" "$ref" --tol 1e-4 --datasets hrtem,exit_wave || status=1
exit $status
