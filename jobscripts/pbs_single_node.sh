#!/bin/bash
# PBS Pro / OpenPBS: one node, 4 ranks with 8 threads each.
# Environment: CONFIG (the config file, default config.ini); STEMSIM_KIRKLAND / STEMSIM_LOBATO
# override the scattering tables (an installed stemsim finds its own). GPUs: each rank of a
# node takes its share of the GPUs it sees ([compute] gpus_per_rank = 0).
#PBS -N stemsim
#PBS -l select=1:ncpus=32:mpiprocs=4:ngpus=4
#PBS -l walltime=02:00:00
#PBS -j oe
set -euo pipefail
cd "$PBS_O_WORKDIR"
CONFIG=${CONFIG:-config.ini}
stemsim --dry-run "$CONFIG"
mpirun -np 4 --map-by socket:PE=8 stemsim --set compute.threads=8 "$CONFIG"
