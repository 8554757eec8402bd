"""How the cost model reads measure.py's files and how the report accounts for the check's misses
(benchmarks/cost_model/measurements.py, misses.py), on made-up measurements; nothing is timed."""
import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "cost_model"))
import alpha_beta as ab  # noqa: E402
import misses  # noqa: E402
from fit import INTER_FIT, INTRA_FIT, SHM_FIT, Fitted  # noqa: E402
from measurements import RESNET50_TENSOR_BYTES, Layout, Point, load  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20
SIZES = [4 * KIB, 16 * KIB, 64 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB]
FITTED = Fitted(intra=ab.Link(5e-6, 3e-10), shm=ab.Link(2e-6, 2e-10), inter=ab.Link(6e-6, 8e-9), inter_rate=1e9,
                machine_cores=2, copy=1e-10)
CROWDED = Layout(1, 4, False)
CROWDED_SHM = Layout(1, 4, False, shm=True)
HIDDEN = Layout(2, 2, False)


def test_load_takes_the_median_over_passes_of_mpirep_mpi_and_the_load_average(tmp_path):
    def sweep(pass_, mpirep_s, mpi_s, load_average, copy_s):
        return {"kind": "sweep", "hosts": 1, "per_host": 3, "hierarchical": 0, "shm": 1, "pass": pass_,
                "load_average": load_average,
                "result": {"config": {}, "rows": [{"bytes": 4096, "mpirep_s": mpirep_s, "mpi_s": mpi_s,
                                                    "copy_s": copy_s}]}}
    resnet = {"kind": "resnet", "hosts": 2, "per_host": 1, "hierarchical": 1, "shm": 0, "pass": 0, "load_average": 0.5,
              "result": {"config": {"fusion_threshold": 1024},
                         "seconds": {"mpirep": 0.8, "mpi_fused": 2.0, "mpi_per_tensor": 1.1, "copy": 0.3}}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"runs": [sweep(0, 1.0, 6.0, 3.0, 0.5), sweep(1, 9.0, 4.0, 1.0, 0.7),
                                         sweep(2, 2.0, 5.0, 2.0, 0.6),
                                         resnet]}))
    _, points = load(path)
    assert sorted(points, key=lambda p: p.kind) == [
        Point(Layout(2, 1, True), "resnet", sum(RESNET50_TENSOR_BYTES), 0.8, 1024, 0.5, 1.1, 0.3),
        Point(Layout(1, 3, False, shm=True), "sweep", 4096, 2.0, None, 2.0, 5.0, 0.6)]


def test_wire_seconds_are_the_bytes_across_hosts_at_the_shaped_rate():
    def point(layout, nbytes):
        return Point(layout, "sweep", nbytes, 1.0, None, 0.0, 1.0, 0.1)
    # 2 ranks: each sends n/2 twice; hierarchical 2 x 2: each host sends n/2 twice across
    assert misses.wire_seconds(point(INTER_FIT, MIB), FITTED) == pytest.approx(MIB * 8e-9)
    assert misses.wire_seconds(point(Layout(2, 2, True), MIB), FITTED) == pytest.approx(MIB * 8e-9)
    # flat ring on 2 x 2: 6 steps of n/4, every one crossing
    assert misses.wire_seconds(point(HIDDEN, 4 * MIB), FITTED) == pytest.approx(1.5 * 4 * MIB * 8e-9)
    # nothing crosses on one host
    assert misses.wire_seconds(point(CROWDED, MIB), FITTED) == 0.0


def copy_seconds(nbytes):
    """Every rank's copy: 10 GB/s from the cache, up to 16 MiB; 4 GB/s from memory past it."""
    return nbytes / (10e9 if nbytes <= 16 * MIB else 4e9)


def measured(layout, scale):
    """A sweep and a ResNet-50 round on layout, mpirep taking `scale` times (and MPI twice) the size in
    microseconds."""
    sweeps = [Point(layout, "sweep", n, scale * n * 1e-6, None, 1.0, 2 * scale * n * 1e-6, copy_seconds(n))
              for n in SIZES]
    resnet = sum(RESNET50_TENSOR_BYTES)
    return sweeps + [Point(layout, "resnet", resnet, scale, None, 1.0, 4 * scale, copy_seconds(resnet))]


def miss(points, layout, nbytes, error):
    p = next(p for p in points if p.layout == layout and p.nbytes == nbytes)
    return p, FITTED.predict(p), error


def test_each_kind_of_miss_gets_its_paragraph_with_its_figures():
    points = (measured(INTRA_FIT, 1.0) + measured(CROWDED, 3.0) + measured(SHM_FIT, 0.5) + measured(CROWDED_SHM, 2.0)
              + measured(INTER_FIT, 10.0) + measured(HIDDEN, 50.0))
    found = [miss(points, CROWDED_SHM, 4 * KIB, -0.5), miss(points, CROWDED, 4 * KIB, -0.6),
             miss(points, HIDDEN, 4 * KIB, -0.9),
             miss(points, HIDDEN, 16 * KIB, -0.8), miss(points, HIDDEN, MIB, 0.4),
             miss(points, INTER_FIT, 16 * KIB, 0.35), miss(points, INTRA_FIT, sum(RESNET50_TENSOR_BYTES), -0.3),
             miss(points, SHM_FIT, 64 * MIB, -0.3), miss(points, SHM_FIT, 16 * MIB, -0.3),
             miss(points, INTRA_FIT, 64 * KIB, 0.3)]
    crowded, link, memory, other = misses.paragraphs(found, points, FITTED)
    # under-predicted with more ranks than cores, on one host or on emulated hosts, each layout
    # against its own kind of link with a core per rank
    assert crowded.startswith("**More ranks than cores.**")
    assert "3.0x and 3.0x as long on 1 host x 4 (against 1 host x 2)" in crowded
    assert "4.0x and 4.0x as long on 1 host x 4, shm (against 1 host x 2, shm)" in crowded
    assert "5.0x and 5.0x as long on 2 hosts x 2 (against 2 hosts x 1)" in crowded
    assert crowded.endswith("1 host x 4: 4 KiB (-60%); 1 host x 4, shm: 4 KiB (-50%); "
                            "2 hosts x 2: 4 KiB (-90%), 16 KiB (-80%).")
    # the over-predicted miss on 2 x 2 and the fitted link's miss
    assert link.startswith("**The emulated link is a token bucket")
    assert (f"2 hosts x 2 at 1 MiB took {MIB * 50e-3:.3g} ms, its bytes across hosts need "
            f"{1.5 * MIB * 8e-6:.3g} ms") in link
    assert link.endswith("2 hosts x 1: 16 KiB (+35%); 2 hosts x 2: 1 MiB (+40%).")
    # under-predicted where the copy shows the bytes came from memory; 16 MiB came from the cache
    assert memory.startswith("**Out of the cache.**")
    # the median copy from 1 MiB: 1, 4, 16 MiB from the cache, 64 MiB from memory
    assert "1 host x 2: 10.0 GB/s; 1 host x 2, shm: 10.0 GB/s" in memory
    assert "1 host x 2, ResNet-50 round: 4.0 GB/s" in memory and "1 host x 2, shm, allreduce 64 MiB: 4.0 GB/s" in memory
    assert memory.endswith("1 host x 2: ResNet-50 round (-30%); 1 host x 2, shm: 64 MiB (-30%).")
    assert other == "**Not explained here:** 1 host x 2: 64 KiB (+30%); 1 host x 2, shm: 16 MiB (-30%)."
    assert misses.paragraphs([], points, FITTED) == []


def test_floor_table_has_a_row_per_layout_and_a_dash_where_nothing_was_measured():
    points = measured(INTRA_FIT, 1.0) + [p for p in measured(HIDDEN, 50.0) if p.nbytes != MIB]
    header, rule, first, second = misses.floor_table(points, FITTED)
    assert header.count("mpirep, MPI, model ms") == 3
    assert first.startswith("| 1 host x 2 | 1 | 4.1, 8.19, ")
    assert second.startswith("| 2 hosts x 2 | 2 | 205, 410, ") and second.endswith(" | - |")
