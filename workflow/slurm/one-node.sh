#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, everything under one folder: to try the workflow's
# Slurm path (and to test it) without a cluster. Needs Debian's slurm-wlm and munge
# (./setup.sh installs them) and root, as Slurm's daemons need.
#
#   workflow/slurm/one-node.sh start DIR   # prints the SLURM_CONF and PATH to export
#   SLURM_CONF=DIR/slurm.conf PATH=DIR/bin:$PATH snakemake -s workflow/Snakefile --executor slurm --jobs 4 \
#       --slurm-no-account --slurm-status-command squeue --config bids_dir=... output_dir=...
#   workflow/slurm/one-node.sh stop DIR    # stops the daemons it started, by their pids
#
# There is no accounting database: jobs run without an account (--slurm-no-account) and their
# state is read from squeue, which keeps finished jobs for MinJobAge (10 minutes here).
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stop() {
  [ -f "$dir/pids" ] || return 0
  while read -r pid; do
    kill "$pid" 2>/dev/null || true
  done < "$dir/pids"
  # Wait until they are gone, so that a next start finds the ports free.
  for _ in $(seq 50); do
    alive=0
    while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$dir/pids"
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  rm -f "$dir/pids"
}

wait_for_pid() {
  for _ in $(seq 100); do
    [ -s "$1" ] && { cat "$1" >> "$dir/pids"; return 0; }
    sleep 0.1
  done
  echo "$0: $2 did not start; see $dir/*.log" >&2
  stop
  exit 1
}

case "$cmd" in
  stop) stop ;;
  start)
    stop
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
    chmod 700 "$dir/munge"
    # Munge: its own key and socket, as root (--force: root and a key in a private folder).
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    rm -f "$dir/munge/munged.pid"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
      --seed-file="$dir/munge/munged.seed"
    wait_for_pid "$dir/munge/munged.pid" munged
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)
    # Ports from the folder's name, so that two clusters on one machine do not collide.
    port=$((20000 + $(echo "$dir" | cksum | cut -d' ' -f1) % 20000))
    cat > "$dir/slurm.conf" <<CONF
ClusterName=ede
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=1
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    rm -f "$dir/slurmctld.pid" "$dir/slurmd.pid"
    slurmctld -f "$dir/slurm.conf" -i
    wait_for_pid "$dir/slurmctld.pid" slurmctld
    slurmd -f "$dir/slurm.conf"
    wait_for_pid "$dir/slurmd.pid" slurmd
    # Snakemake's Slurm plugin runs srun inside each job with every SLURM_* variable removed,
    # SLURM_CONF too (snakemake-executor-plugin-slurm issue 164). A real cluster keeps its
    # configuration where srun looks without it (/etc/slurm, or configless); this one lives in
    # DIR, so DIR/bin holds an srun that names it. Put DIR/bin first on the PATH.
    mkdir -p "$dir/bin"
    printf '#!/bin/sh\nSLURM_CONF=%s exec %s "$@"\n' "$dir/slurm.conf" "$(command -v srun)" > "$dir/bin/srun"
    chmod +x "$dir/bin/srun"
    export SLURM_CONF="$dir/slurm.conf"
    for _ in $(seq 100); do
      sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && { echo "export SLURM_CONF=$SLURM_CONF PATH=$dir/bin:\$PATH"; exit 0; }
      sleep 0.2
    done
    echo "$0: the node did not come up; see $dir/*.log" >&2
    sinfo >&2 || true
    stop
    exit 1
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
