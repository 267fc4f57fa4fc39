#!/bin/bash
# One node: one MPI rank per GPU (or per socket on CPU nodes), threads fill the cores.
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
