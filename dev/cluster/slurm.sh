# The two Slurm clusters of the harness, sourced by slurm-up and slurm-down after lib.sh.
# slurm_layout KIND sets, for KIND "local" (one node on 127.0.0.1) or "hosts" (one node per
# emulated host, slurmctld on h1):
#   DIR CONF MUNGE_SOCKET   state directory, its slurm.conf, munged's socket
#   CLUSTER CTLD_PORT SRUN_PORTS CPUS
#   CTLD_HOST CTLD_ADDR     slurmctld's host name and address
#   NODES                   "name:address:hostname" per node
#   RUN_ON                  emulated host whose namespaces each daemon needs ("" = this machine)

slurm_layout() {
  case $1 in
    local)
      DIR=$LOCAL_SLURM_DIR CLUSTER=mpclocal CPUS=${MPIREP_SLURM_CPUS:-8}
      CTLD_PORT=${MPIREP_SLURM_PORT:-17817} SRUN_PORTS=37000-37499
      # slurmctld insists on being started on the host named by SlurmctldHost
      CTLD_HOST=$(hostname -s) CTLD_ADDR=127.0.0.1
      NODES="localhost:127.0.0.1:$CTLD_HOST" ;;
    hosts)
      DIR=$HOSTS_SLURM_DIR CLUSTER=mpchosts CPUS=${MPIREP_SLURM_HOSTS_CPUS:-4}
      CTLD_PORT=${MPIREP_SLURM_HOSTS_PORT:-17827} SRUN_PORTS=37500-37999
      CTLD_HOST=h1 CTLD_ADDR=$(host_addr h1)
      NODES=""
      local h
      for h in $(live_hosts); do NODES="$NODES $h:$(host_addr "$h"):$h"; done ;;
    *) die "unknown cluster '$1': local or hosts" ;;
  esac
  CONF=$DIR/slurm.conf
  MUNGE_SOCKET=$DIR/munge.sock
}

# run_on NODE CMD...: run a daemon command where node NODE lives.
run_on() {
  local node=$1; shift
  if [ "$KIND" = hosts ]; then on_host "$node" "$@"; else "$@"; fi
}

node_names() { local n; for n in $NODES; do echo -n "${n%%:*} "; done; }

munge_works() { munge -n -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; }

# "is UP" tested with [[ ]], not `| grep -q`: under pipefail, grep closing the pipe early can
# fail the pipeline.
controller_answers() { [[ $(scontrol ping 2>/dev/null) == *"is UP"* ]]; }
