#!/bin/bash
# Several nodes: frozen-phonon configurations spread over rank groups
# ([compute] fp_groups, automatic by default), probes split inside each group.
# Environment: CONFIG (the config file, default config.ini); STEMSIM_KIRKLAND / STEMSIM_LOBATO
# override the scattering tables (an installed stemsim finds its own). GPUs: each rank of a
# rank gets its own GPU (--gpus-per-task=1, bound with --gpu-bind=closest below); with
# --gpus-per-node instead, each rank of a node takes its share of the GPUs it sees
# ([compute] gpus_per_rank = 0).
#SBATCH --job-name=stemsim
#SBATCH --nodes=8
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-task=1
#SBATCH --time=08:00:00
#SBATCH --output=stemsim-%j.log
set -euo pipefail
CONFIG=${CONFIG:-config.ini}
# Slurm >= 22.05: srun no longer inherits sbatch's --cpus-per-task (each task would get one
# core for its threads); pass it on. Each rank its own GPU, the one closest to its cores.
export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
gpu_bind=(); [ -n "${SLURM_GPUS_PER_TASK:-}" ] && gpu_bind=(--gpu-bind=closest)
srun -n 1 stemsim --dry-run "$CONFIG"
srun --cpus-per-task="$SLURM_CPUS_PER_TASK" --cpu-bind=cores "${gpu_bind[@]}" stemsim --set compute.threads="$SLURM_CPUS_PER_TASK" "$CONFIG"
