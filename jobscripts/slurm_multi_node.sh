#!/bin/bash
# Several nodes: frozen-phonon configurations spread over rank groups
# ([compute] fp_groups, automatic by default), probes split inside each group.
# Environment: CONFIG (the config file, default config.ini); STEMSIM_KIRKLAND / STEMSIM_LOBATO
# override the scattering tables (an installed stemsim finds its own). GPUs: each rank of a
# node takes its share of the GPUs it sees ([compute] gpus_per_rank = 0); with
# `--gpus-per-task=1` instead of --gpus-per-node, Slurm gives every rank its own GPU.
#SBATCH --job-name=stemsim
#SBATCH --nodes=8
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-node=4
#SBATCH --time=08:00:00
#SBATCH --output=stemsim-%j.log
set -euo pipefail
CONFIG=${CONFIG:-config.ini}
srun -n 1 stemsim --dry-run "$CONFIG"
srun --cpu-bind=cores stemsim --set compute.threads="$SLURM_CPUS_PER_TASK" "$CONFIG"
