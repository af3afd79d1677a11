"""Times fCWT and PyWavelets on the interactive workload of `ede bench cwt` (19 channels x 30 s
x 256 Hz, 64 log-spaced scales from 1 to 64 Hz, complex output), in a throwaway environment:

    python3 -m venv /tmp/cwtenv && /tmp/cwtenv/bin/pip install fcwt pywavelets numpy matplotlib
    # fCWT's wheel needs the system's single-precision FFTW: apt-get install libfftw3-single3
    /tmp/cwtenv/bin/python docs/scripts/cwt_python_baselines.py [threads]

Prints JSON: median seconds of repeated runs for each library.
"""
import json
import os
import sys
import time

import numpy as np

threads = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count()
channels, fs, n, scales = 19, 256.0, 7680, 64
rng = np.random.default_rng(1)
signals = np.cumsum(rng.standard_normal((channels, n)), axis=1).astype(np.float32)


def median_time(f, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


out = {"channels": channels, "samples": n, "scales": scales, "threads": threads}
import fcwt

morlet = fcwt.Morlet(2.0)
sc = fcwt.Scales(morlet, fcwt.FCWT_LOGSCALES, int(fs), 1.0, 64.0, scales)
engine = fcwt.FCWT(morlet, threads, False, True)
result = np.zeros((scales, n), dtype=np.complex64)


def run_fcwt():
    for x in signals:
        engine.cwt(x, sc, result)


run_fcwt()
out["fcwt_s"] = median_time(run_fcwt, 10)

import pywt

freqs = np.geomspace(64.0, 1.0, scales)
pscales = pywt.central_frequency("cmor1.5-1.0") * fs / freqs


def run_pywt():
    for x in signals:
        pywt.cwt(x, pscales, "cmor1.5-1.0", sampling_period=1 / fs, method="fft")


run_pywt()
out["pywavelets_s"] = median_time(run_pywt, 3)
print(json.dumps(out))
