"""Command lines built for Open MPI, MPICH, Intel MPI and srun, from a Job (no MPI runs)."""

import pytest

from mpirep.launch import mpi_probe, mpirun_argv, srun_argv
from mpirep.launch.errors import LaunchError
from mpirep.launch.hosts import Host
from mpirep.launch.job import Job

OMPI = mpi_probe.MPIInfo(mpi_probe.OPEN_MPI, "4.1.4", "/usr/bin/mpirun")
MPICH = mpi_probe.MPIInfo(mpi_probe.MPICH, "4.1.2", "/opt/mpich/bin/mpirun")
INTEL = mpi_probe.MPIInfo(mpi_probe.INTEL_MPI, "2021.10", "/opt/intel/bin/mpirun")
CMD = ["python", "train.py", "--lr", "0.1"]


def job(**changes):
    fields = dict(command=CMD, num_proc=2, hosts=None, slots=8, rank_env={}, forward_names=[])
    fields.update(changes)
    return Job(**fields)


def test_open_mpi_local_defaults():
    plan = mpirun_argv.build(job(), OMPI)
    assert plan.argv == ["/usr/bin/mpirun", "-np", "2", "--bind-to", "none", "--map-by", "slot"] + CMD
    assert plan.env == {}


def test_open_mpi_as_root_allows_it():
    assert mpirun_argv.build(job(running_as_root=True), OMPI).argv[1] == "--allow-run-as-root"


@pytest.mark.parametrize("num_proc, slots, oversubscribed", [(2, 2, False), (3, 2, True)])
def test_open_mpi_oversubscribes_only_beyond_the_slots(num_proc, slots, oversubscribed):
    argv = mpirun_argv.build(job(num_proc=num_proc, slots=slots), OMPI).argv
    assert ("--oversubscribe" in argv) == oversubscribed


@pytest.mark.parametrize("num_proc, oversubscribed", [(4, False), (5, True)])
def test_open_mpi_hosts_and_their_slots(num_proc, oversubscribed):
    hosts = [Host("h1", 2), Host("h2", 2)]
    argv = mpirun_argv.build(job(num_proc=num_proc, hosts=hosts, slots=None), OMPI).argv
    assert argv[argv.index("-H") + 1] == "h1:2,h2:2"
    assert ("--oversubscribe" in argv) == oversubscribed


def test_open_mpi_forwards_rank_env_and_names_with_x():
    plan = mpirun_argv.build(job(rank_env={"MPIREP_CYCLE_TIME": "5", "A": "1"},
                                 forward_names=["PATH", "PYTHONPATH"]), OMPI)
    argv = plan.argv
    exported = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-x"]
    assert exported == ["A", "MPIREP_CYCLE_TIME", "PATH", "PYTHONPATH"]
    assert plan.env == {"MPIREP_CYCLE_TIME": "5", "A": "1"}   # -x NAME reads mpirun's env
    assert argv[-len(CMD):] == CMD


def test_open_mpi_network_ssh_tcp_output_binding_and_extra_args():
    argv = mpirun_argv.build(job(
        network_interfaces=["eth1", "10.0.0.0/8"], tcp_only=True,
        ssh_args=["-p", "2222", "-i", "/k"], output_dir="/logs",
        binding_args=["--bind-to", "socket"], mpi_args=["--mca", "pml", "ob1"]), OMPI).argv
    text = " ".join(argv)
    assert "--bind-to socket" in text and "--bind-to none" not in text
    assert "--mca btl tcp,self" in text
    assert "--mca btl_tcp_if_include eth1,10.0.0.0/8 --mca oob_tcp_if_include eth1,10.0.0.0/8" in text
    assert argv[argv.index("plm_rsh_args") + 1] == "-p 2222 -i /k"
    assert argv[argv.index("--output-filename") + 1] == "/logs"
    assert argv[-len(CMD) - 3:] == ["--mca", "pml", "ob1"] + CMD   # user's args come last


@pytest.mark.parametrize("timeout, interval", [(120.0, "42"), (10.0, "5")])
def test_open_mpi_across_hosts_gives_up_on_a_silent_host_after_the_peer_timeout(timeout, interval):
    """Probed every second; three unanswered probes (T + 5 s or more) end mpirun's wait for an
    unreachable daemon (docs/reliability.md)."""
    argv = mpirun_argv.build(job(hosts=[Host("h1", 1), Host("h2", 1)], spans_hosts=True,
                                 peer_timeout_seconds=timeout), OMPI).argv
    keepalive = ["--mca", "oob_tcp_keepalive_time", "1", "--mca", "oob_tcp_keepalive_intvl", interval,
                 "--mca", "oob_tcp_keepalive_probes", "3"]
    assert argv[argv.index("--mca"):argv.index("--mca") + 9] == keepalive
    assert 3 * int(interval) >= timeout + 5


@pytest.mark.parametrize("changes", [dict(), dict(spans_hosts=True, peer_timeout_seconds=0.0)])
def test_open_mpi_keeps_its_keepalive_on_one_host_or_without_peer_timeout(changes):
    assert "oob_tcp_keepalive_time" not in mpirun_argv.build(job(**changes), OMPI).argv


def test_mpich_uses_hosts_genv_and_hydra_ssh_variable():
    plan = mpirun_argv.build(job(num_proc=6, hosts=[Host("a", 2), Host("b", 2)], slots=None,
                                 rank_env={"MPIREP_TIMELINE": "/t.json"},
                                 forward_names=["PATH"], ssh_args=["-p", "2222"],
                                 output_dir="/logs"), MPICH)
    assert plan.argv == ["/opt/mpich/bin/mpirun", "-np", "6", "-hosts", "a:2,b:2",
                         "-outfile-pattern", "/logs/rank.%r.stdout",
                         "-errfile-pattern", "/logs/rank.%r.stderr",
                         "-genv", "MPIREP_TIMELINE", "/t.json"] + CMD
    # Hydra oversubscribes without a flag, passes the environment itself, and has no binding
    # by default; ssh options travel in its own variable.
    assert plan.env == {"MPIREP_TIMELINE": "/t.json", "HYDRA_LAUNCHER_EXTRA_ARGS": "-p 2222"}


def test_mpich_interface_and_binding():
    argv = mpirun_argv.build(job(network_interfaces=["ib0"], binding_args=["-bind-to", "core"]),
                             MPICH).argv
    assert argv[3:7] == ["-bind-to", "core", "-iface", "ib0"]


@pytest.mark.parametrize("changes, message", [
    (dict(tcp_only=True), "--tcp is for Open MPI"),
    (dict(network_interfaces=["10.0.0.0/8"]), "one interface name"),
    (dict(network_interfaces=["eth0", "eth1"]), "one interface name"),
])
def test_mpich_refuses_what_it_cannot_do(changes, message):
    with pytest.raises(LaunchError, match=message):
        mpirun_argv.build(job(**changes), MPICH)


def test_intel_mpi_hosts_per_node_and_bootstrap_args():
    plan = mpirun_argv.build(job(num_proc=4, hosts=[Host("a", 2), Host("b", 2)], slots=None,
                                 ssh_args=["-i", "/k"]), INTEL)
    assert plan.argv == ["/opt/intel/bin/mpirun", "-np", "4", "-hosts", "a,b", "-ppn", "2",
                         "-bootstrap", "ssh", "-bootstrap-exec-args", "-i /k"] + CMD


def test_intel_mpi_refuses_uneven_slots():
    with pytest.raises(LaunchError, match="machinefile"):
        mpirun_argv.build(job(hosts=[Host("a", 2), Host("b", 1)], slots=None), INTEL)


def test_srun():
    plan = srun_argv.build(job(num_proc=4, rank_env={"MPIREP_CYCLE_TIME": "2"},
                               output_dir="/logs", mpi_args=["--exclusive"]))
    assert plan.argv == ["srun", "--mpi=pmix", "--ntasks", "4", "--kill-on-bad-exit=1",
                         "--output", "/logs/rank.%t.stdout", "--error", "/logs/rank.%t.stderr",
                         "--exclusive"] + CMD
    assert plan.env == {"MPIREP_CYCLE_TIME": "2"}   # srun exports its environment to tasks


def test_srun_without_count_and_other_mpi_plugin():
    assert srun_argv.build(job(num_proc=None, srun_mpi="pmix_v4")).argv[:3] == [
        "srun", "--mpi=pmix_v4", "--kill-on-bad-exit=1"]


@pytest.mark.parametrize("library_version,plugin", [
    ("Open MPI v4.1.4", "pmix"),
    ("Open MPI v5.0.11", "pmix"),
    ("MPICH Version: 5.0.2", "pmi2"),
    ("Intel(R) MPI Library 2021.18.1 for Linux* OS", "pmi2"),
])
def test_srun_mpi_follows_the_mpi_the_core_was_built_against(library_version, plugin):
    """MPICH's and Intel MPI's PMI clients refuse srun's PMIx; Debian's Open MPI has no PMI-2."""
    assert srun_argv.mpi_plugin_for(library_version) == plugin


def test_hydra_in_an_allocation_starts_its_proxies_without_srun_pmi():
    """Hydra's srun bootstrap would otherwise give the ranks PMIx beside Hydra's own PMI."""
    plan = mpirun_argv.build(job(hydra_srun_mpi="none"), MPICH)
    assert plan.env == {"SLURM_MPI_TYPE": "none"}
    assert mpirun_argv.build(job(), MPICH).env == {}
    assert "SLURM_MPI_TYPE" not in mpirun_argv.build(job(hydra_srun_mpi="none"), OMPI).env


def test_srun_refuses_mpirun_only_options():
    with pytest.raises(LaunchError, match="--network-interface, --tcp only apply to mpirun"):
        srun_argv.build(job(tcp_only=True, network_interfaces=["eth0"]))


@pytest.mark.parametrize("environ, tasks", [
    ({"SLURM_NTASKS": "6", "SLURM_NNODES": "2"}, 6),
    ({"SLURM_NNODES": "3"}, 3),
    ({}, None),
])
def test_allocation_tasks(environ, tasks):
    assert srun_argv.allocation_tasks(environ) == tasks
