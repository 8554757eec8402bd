# Settings and helpers of the cluster harness, sourced by every script in dev/cluster/.
# All names, addresses, ports and paths are decided here, once, so the scripts agree.
# Sourcing it changes nothing on the machine.

CLUSTER_HOME=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
umask 022   # munged refuses directories that others can write to

# State: configs, keys, logs, pid files and sockets.  Keep it short: munge, slurmstepd and
# PMIx create Unix sockets below it, and a socket path may not exceed 107 bytes.
STATE=${MPIREP_CLUSTER_STATE:-/tmp/mpc}
LOCAL_SLURM_DIR=$STATE/slurm-local   # single-node Slurm on 127.0.0.1
HOSTS_DIR=$STATE/hosts               # emulated hosts: keys, ssh and sshd configs, logs
HOSTS_SLURM_DIR=$STATE/slurm-hosts   # Slurm whose nodes are the emulated hosts

# Emulated hosts h1, h2, ...: network namespaces "<prefix>hK" whose veths hang on bridge
# "<prefix>br".  The bridge is <net>.1; host hK is <net>.(10+K).  Nothing routes beyond it.
NET=${MPIREP_HOSTS_NET:-10.66.1}
PREFIX=${MPIREP_HOSTS_PREFIX:-mpc-}
BRIDGE=${PREFIX}br
SUBNET=$NET.0/24
SSH_CONFIG=$HOSTS_DIR/ssh_config
HOSTS_FILE=$HOSTS_DIR/etc-hosts      # bind-mounted over /etc/hosts on every emulated host

LOG_TAG=${LOG_TAG:-$(basename "$0")}
log() { echo "[$LOG_TAG $(date +%T)] $*"; }
die() { echo "[$LOG_TAG] error: $*" >&2; exit 1; }
require_root() { [ "$(id -u)" = 0 ] || die "needs root"; }
require_commands() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null || die "$c is not installed (dev/cluster/install installs it)"
  done
}

host_addr() { echo "$NET.$((10 + ${1#h}))"; }
host_netns() { echo "/run/netns/$PREFIX$1"; }

# The emulated hosts that exist now, in number order.
live_hosts() {
  local path
  for path in /run/netns/"$PREFIX"h*; do
    if [[ $path =~ /${PREFIX}(h[0-9]+)$ ]]; then echo "${BASH_REMATCH[1]}"; fi
  done | sort -k1.2n | xargs
}

# Run a command "on" emulated host $1: in its network namespace, with the host's name as
# hostname and its hosts file as /etc/hosts (private UTS and mount namespaces).
# nsenter rather than `ip netns exec`: the latter remounts /sys, which hides
# /sys/fs/cgroup, and slurmd then cannot load its cgroup plugin.
# on_host_prefix HOST sets ON_HOST to the words that run what follows them on HOST.
on_host_prefix() {
  [ -e "$(host_netns "$1")" ] || die "there is no emulated host $1 (dev/cluster/hosts-up)"
  ON_HOST=(nsenter --net="$(host_netns "$1")" unshare --uts --mount --propagation private
           sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"'
           on-host "$1" "$HOSTS_FILE")
}
on_host() { on_host_prefix "$1"; shift; "${ON_HOST[@]}" "$@"; }

# The pid in pid file $1, printed only when that process lives and its command line
# contains $2 (a path of ours), so a stale file never points a signal at someone else.
checked_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  [[ $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) == *"$2"* ]] || return 1
  echo "$pid"
}

# Alive and not a zombie (a zombie daemon can wait a while to be reaped).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# stop_pids WHAT PID...: TERM, up to 10 s to exit, then KILL.
stop_pids() {
  local what=$1 pid left i; shift
  [ $# = 0 ] && return 0
  kill -TERM "$@" 2>/dev/null || true
  for i in $(seq 100); do
    left=""
    for pid in "$@"; do alive "$pid" && left="$left $pid"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  if [ -n "$left" ]; then kill -KILL $left 2>/dev/null || true; log "$what did not stop on TERM: killed$left"; fi
  log "stopped $what ($*)"
}

# Retry "$@" up to $1 times, $2 s apart, until it succeeds.
retry() {
  local tries=$1 pause=$2 i; shift 2
  for i in $(seq "$tries"); do
    "$@" && return 0
    [ "$i" = "$tries" ] || sleep "$pause"
  done
  return 1
}
