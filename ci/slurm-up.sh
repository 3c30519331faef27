#!/usr/bin/env bash
# Start a real one-node SLURM cluster on this machine, for tests/test_slurm.py and for
# trying profiles/slurm: munged, slurmctld and slurmd from Debian's packages (installed
# with apt-get when missing), as root, without systemd, listening on 127.0.0.1 only. Its
# config, munge key, state and logs live in one folder ($SLURM_STATE_DIR, default
# /var/tmp/torch-burn-parity-slurm: munged wants every folder above its files owned by
# root, which a clone in a home folder is not). /etc/slurm/slurm.conf is a symlink to its
# slurm.conf: the executor plugin's job steps drop SLURM_CONF and read the default path.
#
# Idempotent: when the cluster this script started is up, it only checks the node. It
# returns once the node is idle and `srun true` runs. Stop it with ci/slurm-down.sh.
#
#   sudo bash ci/slurm-up.sh
set -euo pipefail
cd "$(dirname "$0")/.."
die() {
    echo "slurm-up: $*" >&2
    exit 1
}
[ "$(id -u)" = 0 ] || die "must run as root (the daemons run as root): sudo bash $0"

STATE="${SLURM_STATE_DIR:-/var/tmp/torch-burn-parity-slurm}"
STATE="$(mkdir -p "$STATE" && cd "$STATE" && pwd)"
CONF="$STATE/slurm.conf"
ETC_CONF=/etc/slurm/slurm.conf
MARKER="# written by ci/slurm-up.sh"
START=$SECONDS
export SLURM_CONF="$CONF" # for this script's own sinfo/scontrol/srun calls

# The pid of DAEMON from its pid file in $STATE, if that process still runs.
our_pid() {
    local pidfile="$STATE/$1.pid" pid
    [ -s "$pidfile" ] || return 1
    pid="$(cat "$pidfile")"
    [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$1" ] && echo "$pid"
}
show_logs() {
    for log in "$STATE"/log/*.log; do
        if [ -f "$log" ]; then
            echo "--- $log (last lines)"
            tail -n 15 "$log"
        fi
    done >&2
    return 0
}

# 1. Packages (Debian 12: SLURM 22.05; Ubuntu 24.04: 23.11).
if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null \
    || ! command -v sinfo > /dev/null || ! command -v munged > /dev/null; then
    echo "slurm-up: installing slurmctld slurmd slurm-client munge with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge > /dev/null
fi

# 2. Already up? Then only make sure the node takes jobs.
running=0
for daemon in munged slurmctld slurmd; do
    if our_pid "$daemon" > /dev/null; then running=$((running + 1)); fi
done
if [ "$running" = 3 ] && [ "$(readlink "$ETC_CONF" 2> /dev/null)" = "$CONF" ]; then
    echo "slurm-up: the cluster of $STATE is already running"
elif [ "$running" != 0 ]; then
    echo "slurm-up: only part of the cluster of $STATE runs: restarting it"
    SLURM_STATE_DIR="$STATE" bash ci/slurm-down.sh
    running=0
fi

if [ "$running" = 0 ]; then
    # 3. Refuse to disturb a SLURM that this script did not start.
    for daemon in slurmctld slurmd; do
        if pgrep -x "$daemon" > /dev/null; then
            die "a $daemon not started by this script runs (pid $(pgrep -x "$daemon" | tr '\n' ' ')); stop it first"
        fi
    done
    for port in 6817 6818; do
        if ss -Hltn "sport = :$port" 2> /dev/null | grep -q .; then
            die "port $port (SLURM) is already in use: $(ss -Hltnp "sport = :$port")"
        fi
    done
    if [ -e "$ETC_CONF" ] || [ -L "$ETC_CONF" ]; then
        if [ ! -L "$ETC_CONF" ]; then
            die "$ETC_CONF exists and is not this script's symlink (a real SLURM installation?); move it away first"
        fi
        target="$(readlink "$ETC_CONF")"
        if [ -e "$target" ] && ! grep -qF "$MARKER" "$target"; then
            die "$ETC_CONF points to $target, which this script did not write; remove the symlink first"
        fi
    fi

    # 4. The node: this host, on the loopback address its name resolves to.
    NODE="$(hostname -s)"
    ADDR="$(getent ahostsv4 "$NODE" | awk 'NR == 1 {print $1}')"
    case "$ADDR" in
        127.*) ;;
        *) die "host name $NODE resolves to '${ADDR:-nothing}', not a loopback address: the cluster must listen on 127.0.0.1 only; add '127.0.1.1 $NODE' to /etc/hosts" ;;
    esac
    # The node's CPUs and memory as slurmd sees them, memory lowered a little so that
    # the node is never drained for having less than it declares.
    hw="$(slurmd -C | head -n 1)"
    mem="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<< "$hw")"
    hw="$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 95 / 100))/; s/NodeName=[^ ]*/NodeName=$NODE/" <<< "$hw")"
    # Track a job's processes by /proc (no cgroups needed); by process group where a
    # SLURM release no longer ships that plugin.
    PROCTRACK=proctrack/linuxproc
    if ! compgen -G "/usr/lib/*/slurm-wlm/proctrack_linuxproc.so" > /dev/null \
        && ! compgen -G "/usr/lib*/slurm/proctrack_linuxproc.so" > /dev/null; then
        PROCTRACK=proctrack/pgid
    fi

    # 5. Folders: munged wants its socket folder world-executable and its key 0400.
    mkdir -p "$STATE"/{munge,ctld,spool,log}
    chown root:root "$STATE" "$STATE"/{munge,ctld,spool,log}
    chmod 0755 "$STATE" "$STATE"/{munge,ctld,spool,log}
    rm -f "$STATE"/log/*.log "$STATE"/munge/munge.socket.2*
    if [ ! -s "$STATE/munge/munge.key" ]; then
        dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
    fi
    chmod 0400 "$STATE/munge/munge.key"
    SOCKET="$STATE/munge/munge.socket.2"
    [ "${#SOCKET}" -lt 100 ] || die "munge socket path too long ($SOCKET); set SLURM_STATE_DIR to a shorter folder"

    cat > "$CONF" << EOF
$MARKER: a one-node cluster on $ADDR, state in $STATE
ClusterName=parity
SlurmctldHost=$NODE($ADDR)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
# Listen on the configured addresses (127.x) only, never on 0.0.0.0.
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=$PROCTRACK
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# Without slurmdbd there is no sacct: Snakemake asks squeue, which must still list a
# finished job for a while.
MinJobAge=600
# A job that names no memory would otherwise take the whole node's.
DefMemPerCPU=512
$hw NodeAddr=$ADDR State=UNKNOWN
PartitionName=main Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    mkdir -p "$(dirname "$ETC_CONF")"
    ln -sfn "$CONF" "$ETC_CONF"

    # 6. The daemons (each forks into the background and writes its pid file).
    munged --socket="$SOCKET" --key-file="$STATE/munge/munge.key" \
        --pid-file="$STATE/munged.pid" --log-file="$STATE/log/munged.log" \
        --seed-file="$STATE/munge/munged.seed" \
        || { show_logs; die "munged did not start (it wants every folder above $STATE owned by root)"; }
    munge -n -S "$SOCKET" | unmunge -S "$SOCKET" > /dev/null \
        || { show_logs; die "munge does not answer on $SOCKET"; }
    slurmctld -c -f "$CONF" || { show_logs; die "slurmctld did not start"; }
    slurmd -N "$NODE" -f "$CONF" || { show_logs; die "slurmd did not start"; }
fi

# 7. Wait until the node is idle (resuming it if an earlier run left it down), then run
# one job step through it.
NODE="$(sed -n 's/^PartitionName=main Nodes=\([^ ]*\).*/\1/p' "$CONF")"
state=""
for _ in $(seq 120); do
    state="$(sinfo -h -N -n "$NODE" -o %T 2> /dev/null | head -n 1 || true)"
    case "$state" in
        idle | mixed | allocated) break ;;
        down* | drain* | fail*) scontrol update NodeName="$NODE" State=RESUME 2> /dev/null || true ;;
    esac
    sleep 0.5
done
case "$state" in
    idle | mixed | allocated) ;;
    *) show_logs; die "node $NODE is '${state:-unknown}' after 60 s, not idle (logs above)" ;;
esac
timeout 60 srun -N 1 -n 1 --mem=16 -t 1 true || { show_logs; die "srun true failed on node $NODE"; }
echo "slurm-up: node $NODE is $state, srun works ($((SECONDS - START)) s; config $CONF, logs $STATE/log)"
