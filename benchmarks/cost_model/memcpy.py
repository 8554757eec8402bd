"""Measure this machine's memory-copy cost, seconds per byte, as fusion pays it when it packs
tensors into a buffer and unpacks them: one numpy copy of a 128 MiB buffer (larger than the
caches) into another, in one process, the fastest of the repeats. Unlike the collectives'
times (medians), a copy is a fixed amount of work that other processes can only lengthen, so
its fastest repeat is its cost; on a shared 2-core machine the median measures the scheduler.
Writes it to a JSON file.

    python benchmarks/cost_model/memcpy.py --out benchmarks/cost_model/measurements/copy.json
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from measurements import moment

NBYTES = 128 << 20


def seconds_per_byte(repeats):
    src = np.arange(NBYTES // 8, dtype=np.float64)
    dst = np.empty_like(src)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        samples.append(time.perf_counter() - start)
    return min(samples) / NBYTES, statistics.median(samples) / NBYTES


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    fastest, median = seconds_per_byte(args.repeats)
    result = {**moment(), "bytes": NBYTES, "repeats": args.repeats,
              "seconds_per_byte": fastest, "median_seconds_per_byte": median}
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"copy: {1e-9 / fastest:.2f} GB/s (median {1e-9 / median:.2f}) at load average "
          f"{result['load_average']:.1f}")


if __name__ == "__main__":
    main()
