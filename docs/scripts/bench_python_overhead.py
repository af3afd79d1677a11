"""What a call of the Python package costs beyond the analysis itself (issue 44's goal: under
1 ms for a 30-channel, 1024-sample epoch): the wall time of `ede.xapen` on a numpy array, minus
the time ede's job itself measured inside the same kind of call. Writes JSON.

    python docs/scripts/bench_python_overhead.py OUT.json [--backend cpu] [--calls 300]
"""

import argparse
import json
import platform
import statistics
import time

import numpy as np

import ede
from ede import _ede


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--calls", type=int, default=300)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    rows = {}
    for channels, samples in [(30, 1024), (148, 1024), (30, 16)]:
        data = rng.standard_normal((channels, samples)) * 1e-5
        kw = dict(m=1, r=0.2, epoch_len=min(1024, samples), backend=a.backend)
        ede.xapen(data, 256.0, **kw)  # the first call opens the adapter and plans
        walls, inner = [], []
        for _ in range(a.calls):
            t = time.perf_counter()
            ede.xapen(data, 256.0, **kw)
            walls.append(time.perf_counter() - t)
            timing = {}
            _ede.xapen(data, 256.0, _timing=timing, **kw)
            inner.append(timing["analysis_s"])
        wall, analysis = statistics.median(walls), statistics.median(inner)
        rows[f"{channels}x{samples}"] = {
            "wall_ms": wall * 1e3,
            "analysis_ms": analysis * 1e3,
            "overhead_ms": (wall - analysis) * 1e3,
        }
        print(f"{channels} ch x {samples}: call {wall * 1e3:.3f} ms, analysis "
              f"{analysis * 1e3:.3f} ms, overhead {(wall - analysis) * 1e3:.3f} ms")
    with open(a.out, "w") as f:
        json.dump({"backend": a.backend, "calls": a.calls, "machine": platform.platform(),
                   "processor": platform.processor(), "ede": ede.__version__, "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()
