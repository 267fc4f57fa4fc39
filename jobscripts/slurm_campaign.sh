#!/bin/bash
# A whole series campaign (config.ini with a [series] section, e.g. tilt_x = -60:3:60
# and frozen_phonons = 16) as ONE job that runs through any number of time limits
# and preemptions unattended:
#   * Slurm sends SIGUSR1 to every task 120 s before the time limit (--signal=USR1@120;
#     preemption sends SIGTERM). stemsim abandons the units in flight, stores the
#     running sums of every finished unit in the checkpoint (<file>.checkpoint/state)
#     and exits 75. (A job killed outright loses at most [output] checkpoint_interval.)
#   * On exit 75 this script requeues itself (scontrol requeue; --requeue allows it).
#     The requeued job runs the same command, which continues the campaign:
#     "resuming: 17 of 40 units done". Any other non-zero exit is a real failure and
#     is NOT requeued (the checkpoint keeps what was finished; fix and resubmit).
#   * When every unit is done, stemsim writes the one output file (leading axes
#     tilt_x, defocus, ... in front of every dataset) and removes the checkpoint.
#SBATCH --job-name=stemsim-campaign
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-task=1
#SBATCH --time=04:00:00
#SBATCH --signal=USR1@120
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=stemsim-campaign-%j.log
set -uo pipefail
CONFIG=${CONFIG:-config.ini}
# Slurm >= 22.05: srun no longer inherits sbatch's --cpus-per-task (each task would get one
# core for its threads); pass it on. Each rank its own GPU, the one closest to its cores.
export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
gpu_bind=(); [ -n "${SLURM_GPUS_PER_TASK:-}" ] && gpu_bind=(--gpu-bind=closest)
# MAX_REQUEUES bounds the loop should something keep stopping the job early.
MAX_REQUEUES=${MAX_REQUEUES:-50}
echo "stemsim campaign: job $SLURM_JOB_ID, restart count ${SLURM_RESTART_COUNT:-0}, $(date)"
srun --cpus-per-task="$SLURM_CPUS_PER_TASK" --cpu-bind=cores "${gpu_bind[@]}" --kill-on-bad-exit=1 stemsim \
     --set compute.threads="$SLURM_CPUS_PER_TASK" "$CONFIG"
rc=$?
if [ "$rc" -eq 75 ]; then
    if [ "${SLURM_RESTART_COUNT:-0}" -ge "$MAX_REQUEUES" ]; then
        echo "stopped with a checkpoint, but requeued $MAX_REQUEUES times already: not requeueing"; exit 75
    fi
    echo "stopped with a checkpoint (exit 75): requeueing to continue"
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
fi
exit "$rc"
