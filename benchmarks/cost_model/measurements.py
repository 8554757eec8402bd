"""The measurements measure.py writes, reduced to one time per configuration and size: the
median over the passes of mpirep's time (each pass's time is already a median over repeats),
and beside it the same medians of MPI_Allreduce doing the same work in the same job and of every
rank copying the same bytes at once."""
import datetime
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the benchmarks, for the ResNet-50 shapes
from resnet50_shapes import SHAPES  # noqa: E402

# in the order resnet50_round.py submits them: backprop order, the last layer first
RESNET50_TENSOR_BYTES = [4 * math.prod(s) for s in reversed(SHAPES)]
SHM = HERE / "measurements" / "shm.json"
HOSTS = HERE / "measurements" / "hosts-1gbit.json"
COPY = HERE / "measurements" / "copy.json"


@dataclass(frozen=True)
class Layout:
    hosts: int
    per_host: int
    hierarchical: bool
    shm: bool = False  # the shm_allreduce setting; off, a host's ranks use the ring

    def __str__(self):
        mode = (", hierarchical" if self.hierarchical else "") + (", shm" if self.shm else "")
        return f"{self.hosts} host{'s' if self.hosts > 1 else ''} x {self.per_host}{mode}"


@dataclass(frozen=True)
class Point:
    layout: Layout
    kind: str       # "sweep": one blocking unnamed allreduce; "resnet": the 214 named ResNet-50 gradients
    nbytes: int
    seconds: float  # median over passes
    fusion_threshold: int | None  # the setting the run used, None for the default
    load_average: float  # median over the passes of the 1-minute load average as each job began
    mpi_seconds: float  # median over passes of MPI_Allreduce on the sweep's buffer, or on each tensor in turn
    copy_seconds: float  # median over passes of every rank copying those bytes at once


def moment():
    """When, and how busy the machine was: the time (UTC) and the 1-minute load average."""
    return {"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "load_average": os.getloadavg()[0]}


def copy_cost(path=COPY):
    """Seconds per byte of a memory copy, as memcpy.py measured it."""
    return json.loads(Path(path).read_text())["seconds_per_byte"]


def load(path):
    data = json.loads(Path(path).read_text())
    samples = {}
    for run in data["runs"]:
        layout = Layout(run["hosts"], run["per_host"], bool(run["hierarchical"]), bool(run["shm"]))
        result = run["result"]
        threshold = result["config"].get("fusion_threshold")
        if run["kind"] == "sweep":
            timed = [(row["bytes"], row["mpirep_s"], row["mpi_s"], row["copy_s"]) for row in result["rows"]]
        else:
            seconds = result["seconds"]
            timed = [(sum(RESNET50_TENSOR_BYTES), seconds["mpirep"], seconds["mpi_per_tensor"], seconds["copy"])]
        for nbytes, mpirep_seconds, mpi_seconds, copy_seconds in timed:
            key = (layout, run["kind"], nbytes, threshold)
            samples.setdefault(key, []).append((mpirep_seconds, run["load_average"], mpi_seconds, copy_seconds))
    points = []
    for (layout, kind, nbytes, threshold), passes in samples.items():
        seconds, load_average, mpi_seconds, copy_seconds = (statistics.median(column) for column in zip(*passes))
        points.append(Point(layout, kind, nbytes, seconds, threshold, load_average, mpi_seconds, copy_seconds))
    return data, points
