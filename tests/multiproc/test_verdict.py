"""The parallel suite's verdict plugin (tests/parallel/verdict.py) on tests that fail on one rank."""
import textwrap

from mpijob import REPO, mpirun

SAMPLE = textwrap.dedent('''
    from mpi4py import MPI

    def test_fails_on_rank_1():
        MPI.COMM_WORLD.Barrier()
        assert MPI.COMM_WORLD.rank != 1, "rank one disagrees"

    def test_runs_after_the_failure():
        assert MPI.COMM_WORLD.allreduce(1) == MPI.COMM_WORLD.size

    def test_rank_1_fails_before_a_collective_the_others_wait_in():
        assert MPI.COMM_WORLD.rank != 1, "rank one leaves early"
        MPI.COMM_WORLD.Barrier()
''')


def run_sample(tmp_path, *selection, deadline_s=60):
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    return mpirun(3, ["-m", "pytest", "-p", "verdict", "-p", "no:cacheprovider", "--color=no",
                      "--rootdir", str(tmp_path), *selection], 60,
                  env={"PYTHONPATH": str(REPO / "tests" / "parallel"),
                       "MPIREP_TEST_VERDICT_TIMEOUT": str(deadline_s)})


def test_every_rank_fails_the_test_and_the_next_test_runs(tmp_path):
    job = run_sample(tmp_path, str(tmp_path / "test_sample.py"), "-k", "not before_a_collective")
    print(job.output)
    assert job.returncode == 1
    assert "call failed on rank(s) [1] of 3" in job.output
    assert "rank one disagrees" in job.output  # rank 1's own failure, in rank 0's report
    assert "1 failed, 1 passed" in job.output


def test_failed_rank_aborts_when_the_others_are_stuck(tmp_path):
    job = run_sample(tmp_path, f"{tmp_path / 'test_sample.py'}::"
                     "test_rank_1_fails_before_a_collective_the_others_wait_in", deadline_s=3)
    print(job.output)
    assert not job.timed_out
    assert job.returncode != 0
    assert "rank 1:" in job.output and "aborting the job" in job.output
    assert "rank one leaves early" in job.output
