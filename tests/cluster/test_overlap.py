"""Overlapping gradient reductions across the emulated hosts h1 and h2, two ranks each, over
TCP between the hosts: tests/tf/jobs/overlap_job.py, whose checks include that a training step
with overlap gives the weights of one without, within the tolerance of reduction order, and
bit-identical weights on every rank."""
import pytest

from cluster_jobs import NET, ON_HOST, ON_NET, PY, REPO, SSH_CONFIG, launcher_cmd, run

pytestmark = pytest.mark.netns

JOB = REPO / "tests" / "tf" / "jobs" / "overlap_job.py"
ACROSS_HOSTS = ["-H", "h1:2,h2:2", "--network-interface", NET, "--ssh-config-file", SSH_CONFIG]
# A collective one rank dropped becomes an error on every rank instead of a hang.
ENV = {**ON_NET, "MPIREP_STALL_SHUTDOWN_TIME_SECONDS": "10", "TF_CPP_MIN_LOG_LEVEL": "3"}


def test_overlap_on_two_hosts_of_two_ranks():
    pytest.importorskip("tensorflow")
    # built once here, rather than by four ranks waiting on one another's lock
    run([PY, "-c", "from mpirep.tensorflow import _op_library as b; b.library_path()"],
        timeout=300)
    done = run([ON_HOST, "h1"] + launcher_cmd() + ACROSS_HOSTS + [PY, str(JOB)], ENV,
               timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "5 checks on 4 ranks, 0 failures" in output, output[-6000:]
