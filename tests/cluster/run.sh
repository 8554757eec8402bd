#!/usr/bin/env bash
# Start the real clusters of dev/cluster/, run the cluster tests against them, and always
# tear them down.
#
#   tests/cluster/run.sh [PYTEST_ARGS...]
#
#   PYTHON               interpreter with mpi4py, numpy and pytest (and mpirep, when installed:
#                        then its mpirep-run is the launcher under test)      (default python3)
#   MPIREP_TEST_TIMEOUT  limit for the whole pytest run, in seconds        (default 600)
#   MPIREP_CLUSTER_LOCK  lock file that serialises runs on one machine (default /tmp/mpirep-cluster.lock)
#   and the settings of dev/cluster/ (see dev/cluster/README.md)
#
# The multi-host tests (emulated hosts h1/h2, 2-node Slurm) are skipped only when this
# machine cannot create network namespaces; if it can, a failure to start them fails the run.
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
C=$(readlink -f "$HERE/../../dev/cluster")
LOG_TAG=cluster-tests
source "$C/lib.sh"
source "$C/slurm.sh"
PYTHON=${PYTHON:-python3}
T0=$SECONDS

# The clusters are machine-wide (namespaces, daemons, /tmp/mpc): a second run on the same
# machine waits for the first rather than tearing its clusters down under it.
exec {lock_fd}>"${MPIREP_CLUSTER_LOCK:-/tmp/mpirep-cluster.lock}"
flock "$lock_fd"
stamp() { echo "[cluster-tests +$((SECONDS - T0))s] $*"; }

teardown() {
  stamp "tearing down"
  "$C/down"
  stamp "torn down"
}
TEST_PID=""
on_signal() { [ -n "$TEST_PID" ] && kill -TERM "$TEST_PID" 2>/dev/null; exit 130; }
trap teardown EXIT
trap on_signal INT TERM

"$C/install" || exit 1
# absolute, not resolved: ranks on h2 start over ssh and need the venv's own path
PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)') || exit 1
export PYTHON

unset MPIREP_SLURM_CONF MPIREP_SLURM2_CONF MPIREP_HOSTS_SSH_CONFIG MPIREP_HOSTS_SUBNET
export MPIREP_NETNS_UP=0
stamp "starting a single-node Slurm cluster on 127.0.0.1"
"$C/slurm-up" local || exit 1
slurm_layout local
export MPIREP_SLURM_CONF=$CONF
if unshare --net true 2>/dev/null; then
  stamp "starting emulated hosts h1 and h2 (network namespaces, sshd each)"
  "$C/hosts-up" 2 || exit 1
  export MPIREP_NETNS_UP=1 MPIREP_HOSTS_SSH_CONFIG=$SSH_CONFIG MPIREP_HOSTS_SUBNET=$SUBNET
  stamp "starting a 2-node Slurm cluster on h1 and h2"
  "$C/slurm-up" hosts || exit 1
  slurm_layout hosts
  export MPIREP_SLURM2_CONF=$CONF
else
  stamp "network namespaces cannot be created here: multi-host tests will be skipped"
fi
stamp "clusters up; running pytest on $HERE"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export PYTHONDONTWRITEBYTECODE=1
# In the background and waited for, so that a signal reaches on_signal at once.
timeout -k 10 "${MPIREP_TEST_TIMEOUT:-600}" "$PYTHON" -m pytest -c /dev/null --rootdir "$HERE" \
  -p no:cacheprovider -v -rs --durations=5 "$HERE" "$@" &
TEST_PID=$!
wait "$TEST_PID"; rc=$?
TEST_PID=""
stamp "pytest rc=$rc"
exit $rc
