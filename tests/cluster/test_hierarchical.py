"""Hierarchical allreduce on 2 emulated hosts x 2 ranks (hierarchical_job.py): every dtype and
op, forced on, forced off and by default, equal to numpy references and bit-identical on every
rank; each host's network counter shows which path ran (1x the buffer across, or 1.5x)."""
import re

import pytest

from cluster_jobs import HERE, NET, ON_HOST, ON_NET, PY, SSH_CONFIG, launcher_cmd, run

pytestmark = pytest.mark.netns

MODE_LINE = re.compile(r"^MODE (\S+) results=(\d+) digest=(\w+) across=([\d.,]+)$", re.M)
JOB = [PY, "-m", "mpi4py", str(HERE / "hierarchical_job.py")]
HIERARCHICAL_ACROSS = (0.95, 1.15)  # bytes sent by each host / buffer: 1 plus TCP/IP headers
FLAT_ACROSS = (1.45, 1.7)           # 1.5 plus headers


def run_job(flags, modes):
    out = run([ON_HOST, "h1"] + launcher_cmd() + ["-H", "h1:2,h2:2", "--network-interface", NET,
                                                  "--ssh-config-file", SSH_CONFIG] + flags
              + JOB + modes, ON_NET, timeout=150)
    lines = {m[0]: m for m in MODE_LINE.findall(out.stdout)}
    assert sorted(lines) == sorted(modes), out.stdout + out.stderr
    return lines, out


def assert_across(line, bounds):
    across = [float(a) for a in line[3].split(",")]
    assert len(across) == 2 and all(bounds[0] <= a <= bounds[1] for a in across), line


def test_hierarchical_and_flat_agree_and_cross_the_link_as_designed():
    lines, out = run_job([], ["1", "0", "default"])
    assert len({line[1] for line in lines.values()}) == 1, lines  # the same cases in every mode
    # the exact cases give the same bits whichever way they were reduced
    assert len({line[2] for line in lines.values()}) == 1, lines
    assert_across(lines["1"], HIERARCHICAL_ACROSS)
    assert_across(lines["default"], HIERARCHICAL_ACROSS)  # 2 hosts x 2 ranks: on by default
    assert_across(lines["0"], FLAT_ACROSS)
    # the 2 + 1 process set cannot be grouped by host, which forcing it on says once
    assert out.stderr.count("hosts of a 3-rank set hold different numbers of its ranks") == 1, out.stderr


def test_launcher_flag_turns_it_off():
    lines, _ = run_job(["--no-hierarchical-allreduce"], ["default"])
    assert_across(lines["default"], FLAT_ACROSS)
