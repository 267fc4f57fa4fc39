#!/bin/bash
# Tilt-series campaign: one array task per projection angle; each task is an
# MPI job over its nodes. Output files are named by angle and never overwritten,
# so a resubmitted array skips the angles that are already complete.
#SBATCH --job-name=stemsim-tilt
#SBATCH --array=0-40
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-task=1
#SBATCH --time=04:00:00
#SBATCH --output=stemsim-tilt-%A_%a.log
set -euo pipefail
CONFIG=${CONFIG:-config.ini}
# Slurm >= 22.05: srun no longer inherits sbatch's --cpus-per-task (each task would get one
# core for its threads); pass it on. Each rank its own GPU, the one closest to its cores.
export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
gpu_bind=(); [ -n "${SLURM_GPUS_PER_TASK:-}" ] && gpu_bind=(--gpu-bind=closest)
FIRST=${FIRST:--60}; STEP=${STEP:-3}
angle=$(awk -v a="$FIRST" -v s="$STEP" -v i="$SLURM_ARRAY_TASK_ID" 'BEGIN { printf "%g", a + s * i }')
out=tilt_${angle}.h5
if [ -f "$out" ]; then echo "$out exists (complete files only carry the final name); skipping"; exit 0; fi
srun --cpus-per-task="$SLURM_CPUS_PER_TASK" --cpu-bind=cores "${gpu_bind[@]}" stemsim --set sample.tilt_x="$angle" --set output.file="$out" \
     --set compute.threads="$SLURM_CPUS_PER_TASK" "$CONFIG"
