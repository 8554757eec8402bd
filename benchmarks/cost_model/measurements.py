"""The measurements measure.py writes, reduced to one time per configuration and size: the
median over the passes of mpirep's time (each pass's time is already a median over repeats)."""
import json
import math
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


@dataclass(frozen=True)
class Layout:
    hosts: int
    per_host: int
    hierarchical: bool

    def __str__(self):
        mode = ", hierarchical" if self.hierarchical else ""
        return f"{self.hosts} host{'s' if self.hosts > 1 else ''} x {self.per_host}{mode}"


@dataclass(frozen=True)
class Point:
    layout: Layout
    kind: str       # "sweep": one blocking allreduce; "resnet": the 214 ResNet-50 gradients
    nbytes: int
    seconds: float  # median over passes
    fusion_threshold: int | None  # the setting the run used, None for the default


def load(path):
    data = json.loads(Path(path).read_text())
    samples = {}
    for run in data["runs"]:
        layout = Layout(run["hosts"], run["per_host"], bool(run["hierarchical"]))
        result = run["result"]
        threshold = result["config"].get("fusion_threshold")
        if run["kind"] == "sweep":
            for row in result["rows"]:
                samples.setdefault((layout, "sweep", row["bytes"], threshold), []).append(row["mpirep_s"])
        else:
            samples.setdefault((layout, "resnet", sum(RESNET50_TENSOR_BYTES), threshold), []).append(result["seconds"]["mpirep"])
    points = [Point(layout, kind, nbytes, statistics.median(times), threshold)
              for (layout, kind, nbytes, threshold), times in samples.items()]
    return data, points
