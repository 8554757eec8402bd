"""mpirep-run end to end with the MPI probe mocked: which launcher, which flags, what
--dry-run prints, and the errors a user sees."""
import shlex
import subprocess
import sys

import pytest

from mpirep.launch import cli, hosts, mpi_probe

OMPI = mpi_probe.MPIInfo(mpi_probe.OPEN_MPI, "4.1.4", "/usr/bin/mpirun")
MPICH = mpi_probe.MPIInfo(mpi_probe.MPICH, "4.1.2", "/usr/bin/mpirun")
BASE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root", "HOSTNAME": "here", "PWD": "/work",
            "OMPI_MCA_btl": "self", "LANG": "C.UTF-8"}


@pytest.fixture
def mpi(monkeypatch):
    """The MPI the probe reports; Open MPI unless a test sets another."""
    found = {"info": OMPI}
    monkeypatch.setattr(mpi_probe, "probe", lambda environ: found["info"])
    monkeypatch.setattr(hosts, "local_core_count", lambda: 2)
    monkeypatch.setattr(hosts, "local_names", lambda: {"localhost", "here"})
    return found


def dry_run(capsys, *argv, environ=BASE_ENV):
    rc = cli.main(["--dry-run", *argv], environ)
    out, err = capsys.readouterr()
    assert rc == 0, err
    return shlex.split(out)


def test_local_open_mpi(mpi, capsys):
    words = dry_run(capsys, "-np", "2", "python", "train.py", "--epochs", "3")
    assert "--oversubscribe" not in words
    assert words[-4:] == ["python", "train.py", "--epochs", "3"]
    assert "-x" not in words   # local ranks inherit mpirun's environment


def test_local_oversubscription_counts_cores(mpi, capsys):
    assert "--oversubscribe" in dry_run(capsys, "-np", "4", "python", "t.py")


def test_tuning_flags_become_mpirep_variables(mpi, capsys):
    words = dry_run(capsys, "-np", "2", "--fusion-threshold-mb", "64", "--cycle-time-ms", "2.5",
                    "--stall-check-warning-time-seconds", "30",
                    "--stall-check-shutdown-time-seconds", "0.5", "--timeline-filename",
                    "/tmp/tl.json", "-x", "FOO=bar baz", "-x", "HOME", "python", "t.py")
    assert words[:6] == ["MPIREP_FUSION_THRESHOLD=67108864", "MPIREP_CYCLE_TIME=2.5",
                         "MPIREP_STALL_CHECK_TIME_SECONDS=30",
                         "MPIREP_STALL_SHUTDOWN_TIME_SECONDS=0.5", "MPIREP_TIMELINE=/tmp/tl.json",
                         "FOO=bar baz"]
    exported = [words[i + 1] for i, word in enumerate(words) if word == "-x"]
    assert exported == ["FOO", "HOME", "MPIREP_CYCLE_TIME", "MPIREP_FUSION_THRESHOLD",
                        "MPIREP_STALL_CHECK_TIME_SECONDS", "MPIREP_STALL_SHUTDOWN_TIME_SECONDS",
                        "MPIREP_TIMELINE"]


def test_cache_flags(mpi, capsys):
    assert dry_run(capsys, "-np", "2", "--cache-capacity", "2048", "t")[0] == "MPIREP_CACHE_CAPACITY=2048"
    assert dry_run(capsys, "-np", "2", "--disable-cache", "t")[0] == "MPIREP_CACHE_CAPACITY=0"


def test_remote_hosts_get_the_environment_by_name(mpi, capsys):
    words = dry_run(capsys, "-H", "here:2,far:2", "python", "t.py")
    assert words[words.index("-np") + 1] == "4"   # the slots, without -np
    exported = {words[i + 1] for i, word in enumerate(words) if word == "-x"}
    # host-specific and MPI-launcher variables stay behind
    assert exported == {"HOME", "LANG", "PATH"}


def test_hostfile(mpi, capsys, tmp_path):
    path = tmp_path / "hosts"
    path.write_text("a slots=2\nb slots=1\n")
    words = dry_run(capsys, "--hostfile", str(path), "-np", "4", "python", "t.py")
    assert words[words.index("-H") + 1] == "a:2,b:1"
    assert "--oversubscribe" in words


def test_horovodrun_command_line_ports(mpi, capsys):
    words = dry_run(capsys, "-np", "4", "-H", "a:2,b:2", "--mpi-args=--mca pml ob1",
                    "--network-interface", "eth1", "-p", "2222", "--verbose",
                    "--hierarchical-allreduce", "--cache-capacity", "2048", "python", "t.py")
    text = " ".join(words)
    assert "--mca pml ob1 python t.py" in text
    assert "btl_tcp_if_include eth1" in text and "plm_rsh_args -p 2222" in text
    assert set(words[:2]) == {"MPIREP_HIERARCHICAL_ALLREDUCE=1", "MPIREP_CACHE_CAPACITY=2048"}


@pytest.mark.parametrize("flags,value", [(["--hierarchical-allreduce"], "1"),
                                         (["--no-hierarchical-allreduce"], "0"),
                                         (["--no-hierarchical-allreduce", "--hierarchical-allreduce"], "1")])
def test_switch_flags_set_one_or_zero(mpi, capsys, flags, value):
    words = dry_run(capsys, "-np", "2", *flags, "python", "t.py")
    assert words[0] == f"MPIREP_HIERARCHICAL_ALLREDUCE={value}"
    assert "MPIREP_HIERARCHICAL_ALLREDUCE" in [words[i + 1] for i, w in enumerate(words) if w == "-x"]


def test_switch_flags_take_no_value(mpi, capsys):
    words = dry_run(capsys, "-np", "2", "--timeline-filename", "/tmp/tl.json", "--timeline-mark-cycles",
                    "python", "t.py")
    assert words[:2] == ["MPIREP_TIMELINE=/tmp/tl.json", "MPIREP_TIMELINE_MARK_CYCLES=1"]
    assert words[-2:] == ["python", "t.py"]
    assert not any(word.startswith("MPIREP_TIMELINE_MARK") for word in dry_run(capsys, "-np", "2", "t"))
    assert cli.main(["--dry-run", "-np", "2", "--timeline-mark-cycles", "t"], BASE_ENV) == 0
    assert "ignoring" not in capsys.readouterr().err  # no longer one of horovodrun's ignored flags


def test_autotune_flags(mpi, capsys):
    rc = cli.main(["--dry-run", "-np", "2", "--autotune", "--autotune-log-file", "/tmp/at.csv",
                   "--autotune-warmup-samples", "1", "--autotune-steps-per-sample", "4", "t"], BASE_ENV)
    out, err = capsys.readouterr()
    assert rc == 0 and "ignoring" not in err
    assert shlex.split(out)[:4] == ["MPIREP_AUTOTUNE=1", "MPIREP_AUTOTUNE_LOG=/tmp/at.csv",
                                    "MPIREP_AUTOTUNE_WARMUP_SAMPLES=1", "MPIREP_AUTOTUNE_STEPS_PER_SAMPLE=4"]
    assert "MPIREP_AUTOTUNE" not in " ".join(dry_run(capsys, "-np", "2", "t"))


def test_ignored_horovodrun_flags_warn(mpi, capsys):
    cli.main(["--dry-run", "--hierarchical-allgather", "--log-level", "INFO",
              "--autotune-bayes-opt-max-samples", "20", "-np", "1", "t"], BASE_ENV)
    err = capsys.readouterr().err
    for flag in ("--hierarchical-allgather", "--log-level", "--autotune-bayes-opt-max-samples"):
        assert f"ignoring horovodrun's {flag}" in err


def test_mpich_gets_genv(mpi, capsys):
    mpi["info"] = MPICH
    words = dry_run(capsys, "-np", "2", "--cycle-time-ms", "1", "python", "t.py")
    i = words.index("-genv")
    assert words[i:i + 3] == ["-genv", "MPIREP_CYCLE_TIME", "1"] and "-x" not in words


SLURM = {**BASE_ENV, "SLURM_JOB_ID": "42", "SLURM_NTASKS": "4", "SLURM_NNODES": "2"}


def test_slurm_allocation_uses_srun_and_its_tasks(mpi, capsys):
    words = dry_run(capsys, "python", "t.py", environ=SLURM)
    assert words[:5] == ["srun", "--mpi=pmix", "--ntasks", "4", "--kill-on-bad-exit=1"]


def test_dry_run_needs_no_srun_on_path(mpi, capsys, tmp_path):
    words = dry_run(capsys, "python", "t.py", environ={**SLURM, "PATH": str(tmp_path)})
    assert words[:2] == ["srun", "--mpi=pmix"]


def test_missing_srun_is_explained(mpi, capsys, tmp_path):
    assert cli.main(["python", "t.py"], {**SLURM, "PATH": str(tmp_path)}) == 1
    assert "srun not found on PATH" in capsys.readouterr().err


def test_slurm_allocation_with_mpirun_on_request(mpi, capsys):
    words = dry_run(capsys, "--launcher", "mpirun", "-np", "6", "python", "t.py", environ=SLURM)
    assert words[0] == "/usr/bin/mpirun" and "-H" not in words
    assert "--oversubscribe" in words   # 6 ranks on an allocation of 4 tasks


def test_hosts_inside_an_allocation_mean_mpirun(mpi, capsys):
    assert dry_run(capsys, "-H", "a:2", "python", "t.py", environ=SLURM)[0] == "/usr/bin/mpirun"


@pytest.mark.parametrize("argv, message", [
    (["python", "t.py"], "-np is required"),
    (["-np", "2"], "no command given"),
    (["-np", "2", "-x", "NOT_SET_ANYWHERE", "t"], "NOT_SET_ANYWHERE is not set"),
    (["-H", "a:0", "t"], "slots must be at least 1"),
    (["--launcher", "srun", "-H", "a:1", "t"], "-H/--hostfile are for mpirun"),
])
def test_errors_are_one_clear_line(mpi, capsys, argv, message):
    assert cli.main(["--dry-run", *argv], BASE_ENV) == 1
    assert message in capsys.readouterr().err


def test_missing_mpirun_is_explained(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(mpi_probe.sys, "executable", str(tmp_path / "python"))
    assert cli.main(["--dry-run", "-np", "2", "t"], {"PATH": str(tmp_path)}) == 1
    assert "apt-get install openmpi-bin" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["-np", "0", "t"], BASE_ENV)
    assert exit_.value.code == 2


def test_module_entry_point_and_import_purity(tmp_path):
    """`python -m mpirep.launch` runs, and neither it nor mpirep/__init__.py, which Python
    imports first, loads TensorFlow, mpi4py (which would start MPI) or mpirep's native core."""
    code = ("import runpy, sys\n"
            "sys.argv = ['mpirep-run', '--version']\n"
            "try:\n    runpy.run_module('mpirep.launch', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code == 0\n"
            "loaded = [m for m in sys.modules if m.startswith(('tensorflow', 'mpi4py'))\n"
            "          or m == 'mpirep._core']\n"
            "assert not loaded, loaded\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("mpirep ")
