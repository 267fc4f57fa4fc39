#!/bin/bash
# One node: one MPI rank per GPU (or per socket on CPU nodes), threads fill the cores.
# Environment: CONFIG (the config file, default config.ini); STEMSIM_KIRKLAND / STEMSIM_LOBATO
# override the scattering tables (an installed stemsim finds its own). GPUs: each rank of a
# node takes its share of the GPUs it sees ([compute] gpus_per_rank = 0); with
# `--gpus-per-task=1` instead of --gpus-per-node, Slurm gives every rank its own GPU.
#SBATCH --job-name=stemsim
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-node=4
#SBATCH --time=02:00:00
#SBATCH --output=stemsim-%j.log
set -euo pipefail
CONFIG=${CONFIG:-config.ini}
stemsim --dry-run "$CONFIG"            # fail fast on a bad config, print the plan
srun --cpu-bind=cores stemsim --set compute.threads="$SLURM_CPUS_PER_TASK" "$CONFIG"
