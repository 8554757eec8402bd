#!/usr/bin/env bash
# Start the real clusters, run the cluster tests against them, and always tear down.
#
#   tests/cluster/run.sh [PYTEST_ARGS...]
#
#   PYTHON               interpreter with mpi4py, numpy and pytest (and mpirep, when installed:
#                        then its mpirep-run is the launcher under test)      (default python3)
#   MPIREP_CLUSTER_DIR   the cluster scripts          (default: <repo>/../shared/cluster)
#   MPIREP_TEST_TIMEOUT  limit for the whole pytest run, in seconds        (default 600)
#
# The multi-host tests (emulated hosts h1/h2, 2-node Slurm) are skipped only when this
# machine cannot create network namespaces; if it can, a failure to start them fails the run.
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
C=$(readlink -f "${MPIREP_CLUSTER_DIR:-$HERE/../../../shared/cluster}")
export MPIREP_CLUSTER_DIR=$C
PYTHON=${PYTHON:-python3}
T0=$SECONDS
stamp() { echo "[cluster-tests +$((SECONDS - T0))s] $*"; }

teardown() {
  "$C/stop-slurm-2node.sh"   # before netns-down: its slurmds live in the namespaces
  "$C/netns-down.sh"
  "$C/stop-slurm.sh"
  stamp "torn down"
}
TEST_PID=""
on_signal() { [ -n "$TEST_PID" ] && kill -TERM "$TEST_PID" 2>/dev/null; exit 130; }
trap teardown EXIT
trap on_signal INT TERM

"$C/setup-mpi-env.sh" || exit 1
# absolute, not resolved: ranks on h2 start over ssh and need the venv's own path
PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)') || exit 1
export PYTHON

unset MPIREP_SLURM_CONF MPIREP_SLURM2_CONF
export MPIREP_NETNS_UP=0
"$C/start-slurm.sh" || exit 1
export MPIREP_SLURM_CONF=${MPIREP_SLURM_BASE:-/tmp/mpirep-slurm}/etc/slurm.conf
if unshare --net true 2>/dev/null; then
  "$C/netns-up.sh" || exit 1
  export MPIREP_NETNS_UP=1
  "$C/start-slurm-2node.sh" || exit 1
  export MPIREP_SLURM2_CONF=${MPIREP_SLURM2_BASE:-/tmp/mpirep-slurm2}/etc/slurm.conf
else
  stamp "network namespaces cannot be created here: multi-host tests will be skipped"
fi
stamp "clusters up"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export PYTHONDONTWRITEBYTECODE=1
# In the background and waited for, so that a signal reaches on_signal at once.
timeout -k 10 "${MPIREP_TEST_TIMEOUT:-600}" "$PYTHON" -m pytest -c /dev/null --rootdir "$HERE" \
  -p no:cacheprovider -q -rs --durations=5 "$HERE" "$@" &
TEST_PID=$!
wait "$TEST_PID"; rc=$?
TEST_PID=""
stamp "pytest rc=$rc"
exit $rc
