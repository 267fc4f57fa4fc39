#!/bin/bash
# Several nodes: frozen-phonon configurations spread over rank groups
# ([compute] fp_groups, automatic by default), probes split inside each group.
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
