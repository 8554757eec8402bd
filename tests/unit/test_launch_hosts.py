"""Host lists and hostfiles of mpirep-run."""

import pytest

from mpirep.launch.hosts import (Host, HostError, format_host_list, parse_host_list,
                                 parse_hostfile, total_slots)


def test_host_list_with_and_without_slots():
    assert parse_host_list("a:2,b,c:4") == [Host("a", 2), Host("b", 1), Host("c", 4)]


def test_repeated_host_adds_its_slots():
    hosts = parse_host_list("a:1,b:2,a:3")
    assert hosts == [Host("a", 4), Host("b", 2)]
    assert total_slots(hosts) == 6
    assert format_host_list(hosts) == "a:4,b:2"


@pytest.mark.parametrize("text", ["", "a:", "a:x", "a:0", "a b:1", ":2"])
def test_bad_host_lists_are_refused(text):
    with pytest.raises(HostError):
        parse_host_list(text)


def test_hostfile_in_open_mpi_and_horovod_form(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# cluster\nnode1 slots=4 max_slots=8\n\n  node2 slots=2   # gpu box\n"
                    "node3\n")
    assert parse_hostfile(path) == [Host("node1", 4), Host("node2", 2), Host("node3", 1)]


def test_hostfile_in_mpich_form(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("node1:2\nnode2:3\n")
    assert parse_hostfile(path) == [Host("node1", 2), Host("node2", 3)]


@pytest.mark.parametrize("body, message", [
    ("node1 cpus=4\n", "unknown field"),
    ("node1 slots=0\n", "at least 1"),
    ("# nothing\n", "no hosts"),
])
def test_bad_hostfiles_name_the_problem(tmp_path, body, message):
    path = tmp_path / "hosts"
    path.write_text(body)
    with pytest.raises(HostError, match=message):
        parse_hostfile(path)
