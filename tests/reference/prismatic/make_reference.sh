#!/bin/bash
# Regenerates the Prismatic reference of tests/reference/prismatic/ (see README.md there).
#
#   make_reference.sh PRISMATIC_BIN [SCRATCH]
#
# PRISMATIC_BIN: Prismatic 2.0's command-line tool (prism-em/prismatic, built CPU-only as the
# README says). SCRATCH (default /tmp/prismref-run): where the runs happen and the .h5 files
# stay. Each job runs in SCRATCH/tests/reference/prismatic with `-i ../../../data/...` (the
# same relative layout as the repository, so the relative -i path Prismatic writes resolves
# against the parameter file's folder), HOME=SCRATCH/home_<job>: Prismatic's go() writes the
# parameter file of every run it finishes to $HOME/prismatic_gui_params.txt (parseInput.cpp
# writeParamFile); that file is copied here unchanged as <job>.params.txt. The numbers of
# its EMD output go to reference.json (extract.py). REUSE=1 keeps the runs SCRATCH holds (their
# .h5 and .cmd) and runs only the missing jobs.
set -euo pipefail
prismatic=$(readlink -f "$1")
scratch=${2:-/tmp/prismref-run}
here=$(cd "$(dirname "$0")" && pwd)
run="$scratch/tests/reference/prismatic"
mkdir -p "$run" "$scratch/data"
cp "$here/../../../data/Si100_unitcell.xyz" "$scratch/data/"
# Si [100]: a 4 x 4 (or 3 x 3) x 8 tiling of the 5.43 A cell (43.44 A thick); 16 probes on a
# 4 x 4 grid of step a/4 over one unit cell, x and y from 5.43 A (-wxr/-wyr, or for the _p05
# job the fractional -wx/-wy 0.25 0.46, so that its file holds Prismatic's unset '-xr 0 0');
# thermal effects off; 1 mrad rings (-3D); the -2D image is the 70-200 mrad HAADF. Prismatic's largest angle is lambda / (4 px)
# (half its Nyquist frequency): 417 mrad for the 80 keV jobs at 0.025 A, 209 mrad for the
# _p05 job (the same at 0.05 A, where Prismatic's HAADF is not converged), 205 mrad at 300 keV
# (0.024 A) and 209 mrad at 200 keV (0.03 A).
win="-wxr 5.43 10 -wyr 5.43 10"
common="-i ../../../data/Si100_unitcell.xyz -sa 20 -s 2 -te 0 -F 1 -rs 1 -j 2 -r 1.3575 -2D 70 200 -3D 1 -d 1"
jobs=(
  "si100_ms_80kV_3dp0|-a m -E 80 -p 0.025 -t 4 4 8 -3DP 0 $win"
  "si100_prism4_80kV_3dp0|-a p -f 4 -E 80 -p 0.025 -t 4 4 8 -3DP 0 $win"
  "si100_ms_80kV_3dp0_p05|-a m -E 80 -p 0.05 -t 4 4 8 -3DP 0 -wx 0.25 0.46 -wy 0.25 0.46"
  "si100_ms_300kV_3dp0|-a m -E 300 -p 0.024 -t 3 3 8 -3DP 0 $win"
  "si100_ms_80kV_3d|-a m -E 80 -p 0.025 -t 4 4 8 $win"
  "si100_ms_200kV_3dp0|-a m -E 200 -p 0.03 -t 3 3 8 -3DP 0 $win"
  "si100_ms_200kV_3d|-a m -E 200 -p 0.03 -t 3 3 8 $win"
  "si100_prism2_200kV_3d|-a p -f 2 -E 200 -p 0.03 -t 3 3 8 $win"
)
for j in "${jobs[@]}"; do
  name=${j%%|*}; opts=${j#*|}
  if [ -n "${REUSE:-}" ] && [ -f "$run/$name.h5" ] && [ -f "$scratch/$name.cmd" ]; then
    echo "== $name: kept from an earlier run (REUSE)"; continue
  fi
  home="$scratch/home_$name"; rm -rf "$home"; mkdir -p "$home"
  echo "== $name: prismatic $common $opts -o $name.h5"
  ( cd "$run" && rm -f "$name.h5" && HOME="$home" /usr/bin/time -f "$name: %e s" "$prismatic" $common $opts -o "$name.h5" > "$scratch/$name.log" 2>&1 ) \
    || { tail -20 "$scratch/$name.log"; exit 1; }
  tail -1 "$scratch/$name.log"
  cp "$home/prismatic_gui_params.txt" "$here/$name.params.txt"
  echo "prismatic $common $opts -o $name.h5" > "$scratch/$name.cmd"
done
/usr/bin/python3 "$here/extract.py" --run "$run" --scratch "$scratch" --prismatic "$prismatic" \
  --out "$here/reference.json" "${jobs[@]%%|*}"
