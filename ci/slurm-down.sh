#!/usr/bin/env bash
# Stop the one-node SLURM cluster that ci/slurm-up.sh started: cancel its jobs, stop the
# slurmd, slurmctld and munged whose pid files are in its folder ($SLURM_STATE_DIR,
# default /var/tmp/torch-burn-parity-slurm), and remove /etc/slurm/slurm.conf if it is the
# symlink to that folder's config. Nothing else is touched; the folder (logs) is kept.
# Idempotent: without a running cluster it does nothing.
#
#   sudo bash ci/slurm-down.sh
set -euo pipefail
cd "$(dirname "$0")/.."
STATE="${SLURM_STATE_DIR:-/var/tmp/torch-burn-parity-slurm}"
ETC_CONF=/etc/slurm/slurm.conf

if [ ! -d "$STATE" ]; then
    echo "slurm-down: no cluster folder $STATE: nothing to stop"
    exit 0
fi
STATE="$(cd "$STATE" && pwd)"
CONF="$STATE/slurm.conf"
export SLURM_CONF="$CONF"

# The pid of DAEMON from its pid file in $STATE, if that process still runs.
our_pid() {
    local pidfile="$STATE/$1.pid" pid
    [ -s "$pidfile" ] || return 1
    pid="$(cat "$pidfile")"
    [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$1" ] && echo "$pid"
}

if [ "$(id -u)" != 0 ] && our_pid slurmctld > /dev/null; then
    echo "slurm-down: must run as root (the daemons run as root): sudo bash $0" >&2
    exit 1
fi

# Jobs first, while slurmctld still runs, so that no job step outlives the cluster.
if our_pid slurmctld > /dev/null && command -v scancel > /dev/null; then
    timeout 20 scancel --quiet --full --partition=main 2> /dev/null || true
fi

stopped=""
for daemon in slurmd slurmctld munged; do
    pid="$(our_pid "$daemon" || true)"
    [ -n "$pid" ] || continue
    kill -TERM "$pid"
    for _ in $(seq 100); do # up to 10 s, then SIGKILL
        [ -d "/proc/$pid" ] || break
        sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then
        echo "slurm-down: $daemon (pid $pid) ignored SIGTERM: killing it" >&2
        kill -KILL "$pid" 2> /dev/null || true
    fi
    rm -f "$STATE/$daemon.pid"
    stopped="$stopped $daemon($pid)"
done

if [ -L "$ETC_CONF" ] && [ "$(readlink "$ETC_CONF")" = "$CONF" ]; then
    rm -f "$ETC_CONF"
fi
echo "slurm-down: stopped${stopped:- nothing (not running)}; logs kept in $STATE/log"
