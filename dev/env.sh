# Sourced by the dev/ scripts: where things are, the project's venv first on PATH, and how
# to start a local MPI job on this machine.

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
VENV=$ROOT/.venv
PY=$VENV/bin/python
CLUSTER_DIR=$ROOT/dev/cluster   # the harness that starts Slurm clusters and emulated hosts

# The venv's mpirun comes first: when the core was built against an MPI wheel, that wheel's
# launcher is the one that matches.
export PATH="$VENV/bin:$PATH"

# Jobs started here stay on this machine: keep Open MPI's TCP on loopback, and let it run
# as root (CI runs as root).
export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}
export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-lo}
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Extra mpirun options for a local job with more ranks than cores (Open MPI only: MPICH's
# Hydra oversubscribes anyway and rejects the flag).
mpirun_local_args() {
  if mpirun --version 2>&1 | grep -q "Open MPI"; then echo --oversubscribe; fi
}

# The oldest TensorFlow mpirep supports, and the second venv, made by dev/setup-tf-oldest, in
# which dev/test runs the TensorFlow suites again.
OLDEST_TF=2.12
OLDEST_TF_VENV=$ROOT/.venv-tf$OLDEST_TF
