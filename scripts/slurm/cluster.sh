#!/usr/bin/env bash
# A one-node Slurm cluster on localhost, for tests: everything (munge key
# and socket, slurm.conf, state, spool, logs, pid files) under DIR.
#   cluster.sh start DIR   start munged, slurmctld and slurmd; wait until
#                          the node is idle; print the SLURM_CONF to export
#   cluster.sh stop DIR    stop all three (by their pid files)
# Needs root (slurmd runs jobs as their submitting user) and Debian's
# slurmctld, slurmd, slurm-client and munge.
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: cluster.sh start|stop DIR}")
case $cmd in
stop)
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
  done
  sleep 1
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill -9 "$(cat "$dir/$p.pid")" 2>/dev/null || true
    rm -f "$dir/$p.pid"
  done
  exit 0 ;;
start) ;;
*) echo "usage: cluster.sh start|stop DIR" >&2; exit 2 ;;
esac
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" --force
cpus=$(nproc)
cat > "$dir/slurm.conf" <<CONF
ClusterName=stress
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=5
SchedulerType=sched/backfill
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=$(( 20000 + RANDOM % 20000 ))
SlurmdPort=$(( 40000 + RANDOM % 20000 ))
NodeName=localhost CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N localhost
for _ in $(seq 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.5
done
echo "cluster.sh: the node did not become idle within 30 s; see $dir/*.log" >&2
exit 1
