#!/usr/bin/env bash
# The job scripts under a real Slurm (ctest label `slurm`): with Debian's slurm-wlm and munge
# (installed by .ci/deps --slurm), starts a one-node cluster on this machine (munged, slurmctld and
# slurmd as root; private state, spool and ports; task/affinity binding, no cgroup plugins;
# MpiDefault=pmix), and
#   1. submits jobscripts/slurm_single_node.sh (its GPU request removed) with a tiny config
#      through `sbatch --wait`, one task of all the node's CPUs: exit 0, the output complete,
#      stemsim's threads bound to all those CPUs (no "may run on 1 core(s)" warning);
#   2. submits jobscripts/slurm_campaign.sh with a 4-tilt series (checkpoint_interval = 0: a
#      store after every round), signals the running job step with `scancel --signal=USR1`
#      once the checkpoint's state holds a unit: stemsim exits 75,
#      the script requeues the job, the requeued job resumes ("resuming: N of 4 units
#      done") and finishes; the output equals an uninterrupted local run's.
# Skips (77) with the reason where this cannot be done (not root, Slurm or munge not
# installed, daemons that do not start).
#   slurm.sh STEMSIM_BIN SMALL_INI WORKDIR [PYTHON (with h5py, numpy)]
set -uo pipefail
stemsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
small=$2
work=$3
python=${4:-python3}
root=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP $*"; exit 77; }
fail() { echo "FAIL $*"; for f in "$work"/*.log "$work"/jobs/*.log; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "the test starts slurmctld and slurmd as root"
command -v slurmctld >/dev/null && command -v munged >/dev/null ||
  skip "slurm-wlm and munge are not installed (.ci/deps --slurm installs them, as tests/run.sh does)"

rm -rf "$work" && mkdir -p "$work"/{state,spool,jobs}
pids=()
cleanup() {
  scancel --quiet --user=root >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# munge: one daemon per machine; start it if it is not answering
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || mungekey --create >/dev/null 2>&1 || skip "cannot create a munge key"
  mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge: /run/munge /var/log/munge /var/lib/munge /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged >/dev/null 2>&1 || skip "munged does not start"
  sleep 1
  munge -n | unmunge >/dev/null 2>&1 || skip "munge does not answer"
fi

host=$(hostname -s)
port=$(( 20000 + RANDOM % 9000 ))
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) / 2 ))
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=stemsimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$(( port + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
KillWait=5
MinJobAge=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$work/ctld.out" 2>&1 & pids+=($!)
sleep 1
slurmd -D -f "$SLURM_CONF" -N "$host" >"$work/slurmd.out" 2>&1 & pids+=($!)
for i in $(seq 60); do
  state=$(sinfo -h -o %t 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 1
done
[ "${state:-}" = idle ] || { tail -5 "$work/slurmctld.log" "$work/slurmd.log" 2>/dev/null; skip "the node did not come up (state '${state:-none}')"; }
echo "one-node Slurm $(sinfo -V | awk '{print $2}') up on $host ($cpus CPUs), ports $port-$(( port + 1 ))"

# the tiny case, and PATH with stemsim for the job scripts
sed -e "s#xyz = ../../data/#xyz = $root/data/#" "$small" > "$work/jobs/small.ini"
export PATH=$(dirname "$stemsim"):$PATH
common=(--nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=10 --chdir="$work/jobs")

# 1. the single-node script, waited for: one task with every CPU of the node, bound by
# task/affinity as a cluster binds it; its threads must get those CPUs (Slurm >= 22.05's srun
# does not inherit --cpus-per-task: without passing it on, the task gets one core)
sed '/--gpus-per-task/d' "$root/jobscripts/slurm_single_node.sh" > "$work/jobs/single.sh"
sbatch --wait --nodes=1 --ntasks-per-node=1 --cpus-per-task="$cpus" --time=10 --chdir="$work/jobs" \
  --output="$work/jobs/single-%j.log" --export=ALL,CONFIG=small.ini \
  "$work/jobs/single.sh" > "$work/jobs/sbatch1.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "slurm_single_node.sh: sbatch --wait exit $rc: $(cat "$work/jobs/sbatch1.out")"
grep -q "wrote small.h5" "$work"/jobs/single-*.log || fail "slurm_single_node.sh did not write its output"
if [ "$cpus" -gt 1 ]; then
  grep -q "may run on" "$work"/jobs/single-*.log && fail "slurm_single_node.sh: the task's threads share fewer cores than $cpus"
  grep -q "), $cpus threads, batch" "$work"/jobs/single-*.log ||
    fail "slurm_single_node.sh: stemsim did not run $cpus threads"
fi
info=$("$python" "$root/tests/check_h5.py" info "$work/jobs/small.h5" 2>&1)
case $info in *"complete = 1"*) ;; *) fail "small.h5 missing or incomplete: $info" ;; esac
echo "1. slurm_single_node.sh: exit 0, $(grep -o 'wrote small.h5.*' "$work"/jobs/single-*.log | head -1)"

# 2. the campaign script: USR1 to the running step, exit 75, requeue, resume
sed -e '/--gpus-per-task/d' "$root/jobscripts/slurm_campaign.sh" > "$work/jobs/campaign.sh"
cat "$work/jobs/small.ini" > "$work/jobs/campaign.ini"
printf '\n[series]\ntilt_x = 0 4 8 12\n' >> "$work/jobs/campaign.ini"
sed -i -e 's/^file = small.h5/file = campaign.h5/' -e 's/^overwrite = true/&\ncheckpoint_interval = 0/' "$work/jobs/campaign.ini"
grep -q '^checkpoint_interval = 0' "$work/jobs/campaign.ini" || fail "campaign.ini has no checkpoint_interval"
# the units the checkpoint's state holds (tests/integration/itest.py reads its header)
stored() {
  PYTHONPATH="$root/tests/integration" "$python" -c 'import sys, itest; print(len(itest.state_units(sys.argv[1]) or []))' \
    "$work/jobs/campaign.h5.checkpoint" 2>/dev/null || echo 0
}
job=$(sbatch --parsable "${common[@]}" --output="$work/jobs/campaign.log" \
      --export=ALL,CONFIG=campaign.ini,STEMSIM_TEST_UNIT_DELAY=3 "$work/jobs/campaign.sh") || fail "sbatch of the campaign"
for i in $(seq 120); do
  n=$(stored)
  [ "${n:-0}" -ge 1 ] && break
  sleep 0.5
done
[ "${n:-0}" -ge 1 ] || fail "the campaign stored no unit within 60 s"
scancel --signal=USR1 "$job" || fail "scancel --signal=USR1"
hurried=0
for i in $(seq 240); do
  st=$(squeue -h -j "$job" -o %T 2>/dev/null)
  [ -z "$st" ] && break
  # Slurm holds a requeued job back for a while before it is eligible: start it now, once the
  # stopped step is wholly gone (its slurmstepd and PMIx socket: the requeued job reuses the
  # step's name, and a socket left behind makes its launch fail)
  if [ "$st" = PENDING ] && [ $hurried -eq 0 ] && grep -q "requeueing to continue" "$work/jobs/campaign.log" &&
     ! pgrep -f "slurmstepd: \[$job\." >/dev/null && ! ls "$work"/spool/stepd.slurm.pmix."$job".* >/dev/null 2>&1; then
    scontrol update JobId="$job" StartTime=now >/dev/null 2>&1 && hurried=1
  fi
  sleep 1
done
[ -z "${st:-}" ] || fail "the campaign job is still '$st' after 4 minutes"
grep -q "(exit 75)" "$work/jobs/campaign.log" || fail "stemsim did not stop with exit 75 on USR1"
grep -q "requeueing to continue" "$work/jobs/campaign.log" || fail "the job script did not requeue itself"
grep -q "resuming: [0-9]* of 4 units done" "$work/jobs/campaign.log" || fail "the requeued job did not resume"
[ -s "$work/jobs/campaign.h5" ] || fail "the campaign wrote no output"
[ ! -e "$work/jobs/campaign.h5.checkpoint" ] || fail "the checkpoint was left behind"
# the same campaign uninterrupted, outside Slurm: the same numbers bit for bit
(cd "$work/jobs" && sed 's/^file = campaign.h5/file = local.h5/' campaign.ini > local.ini &&
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 "$stemsim" -q local.ini) ||
  fail "the local campaign"
same=$("$python" "$root/tests/check_h5.py" compare "$work/jobs/campaign.h5" "$work/jobs/local.h5" --tol 0 2>&1)
case $same in *PASS*) ;; *) fail "the requeued campaign differs from the uninterrupted one: $same" ;; esac
echo "2. slurm_campaign.sh: USR1 -> exit 75 -> requeued -> $(grep -o 'resuming: [0-9]* of 4 units done' "$work/jobs/campaign.log" | head -1) -> output = uninterrupted run"
echo PASS
