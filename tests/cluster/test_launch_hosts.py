"""mpirep-run -H across the emulated hosts h1 and h2: ranks started over ssh, TCP between
the hosts, launched from h1."""
import pytest

from cluster_jobs import NET, ON_HOST, SSH_CONFIG, ON_NET, RANK_CMD, check_ranks, launcher_cmd, run

pytestmark = pytest.mark.netns

SSH = ["--ssh-config-file", SSH_CONFIG]


def on_h1(args):
    return [ON_HOST, "h1"] + launcher_cmd() + args


def test_two_hosts_over_ssh():
    out = run(on_h1(["-H", "h1:2,h2:2", "--network-interface", NET] + SSH + RANK_CMD), ON_NET)
    check_ranks(out.stdout, 4, hosts={"h1", "h2"})


def test_two_hosts_from_a_hostfile_tcp_only(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# Open MPI / Horovod form\nh1 slots=1\nh2 slots=2 max_slots=4\n")
    out = run(on_h1(["--hostfile", str(hostfile), "--tcp", "--network-interface", NET] + SSH
                    + RANK_CMD), ON_NET)
    lines = check_ranks(out.stdout, 3, hosts={"h1", "h2"})
    assert [lines[r][2] for r in range(3)] == ["h1", "h2", "h2"]


def test_unreachable_host_fails_before_launch():
    done = run(on_h1(["-H", "h1:1,nosuchhost:1", "--start-timeout", "5"] + SSH + RANK_CMD),
               ON_NET, check=False)
    assert done.returncode == 1
    assert "cannot reach these hosts over ssh" in done.stderr and "nosuchhost" in done.stderr
    assert "RANK" not in done.stdout
