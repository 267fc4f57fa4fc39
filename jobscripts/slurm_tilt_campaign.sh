#!/bin/bash
# Tilt-series campaign: one array task per projection angle; each task is an
# MPI job over its nodes. Output files are named by angle and never overwritten,
# so a resubmitted array skips the angles that are already complete.
#SBATCH --job-name=stemsim-tilt
#SBATCH --array=0-40
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-node=4
#SBATCH --time=04:00:00
#SBATCH --output=stemsim-tilt-%A_%a.log
set -euo pipefail
CONFIG=${CONFIG:-config.ini}
FIRST=${FIRST:--60}; STEP=${STEP:-3}
angle=$(awk -v a="$FIRST" -v s="$STEP" -v i="$SLURM_ARRAY_TASK_ID" 'BEGIN { printf "%g", a + s * i }')
out=tilt_${angle}.h5
if [ -f "$out" ]; then echo "$out exists (complete files only carry the final name); skipping"; exit 0; fi
srun --cpu-bind=cores stemsim --set sample.tilt_x="$angle" --set output.file="$out" \
     --set compute.threads="$SLURM_CPUS_PER_TASK" "$CONFIG"
