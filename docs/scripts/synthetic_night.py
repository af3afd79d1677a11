"""A synthetic 22 h PSG for demonstrations and screenshots of the night strips: two EEG
derivations and an ECG whose content follows the Sleep-EDF hypnogram SC4001EC (alpha in wake,
theta in N1, spindles and K-complex-like waves in N2, delta in N3, low-voltage theta in REM; the
heart slowing in deep sleep, with respiratory sinus arrhythmia). Written as OUT/SC4001E0-PSG.edf
beside a copy of the hypnogram, so that ede attaches it on opening.

    python docs/scripts/synthetic_night.py OUT   # numpy, scipy, mne, edfio
"""
import os
import shutil
import sys

import mne
import numpy as np
from scipy.signal import lfilter

SHARED = os.environ.get("EDE_DATA", os.path.join(os.path.dirname(__file__), "../../../shared/data"))
FS = 100


def stages_per_epoch(hyp):
    a = mne.read_annotations(hyp)
    n = int((a.onset[-1] + a.duration[-1]) // 30)
    out = ["?"] * n
    for o, d, s in zip(a.onset, a.duration, a.description):
        for e in range(int(o // 30), int((o + d) // 30)):
            out[e] = s.split()[-1] if s.startswith("Sleep stage") else "?"
    return out


def main(out):
    os.makedirs(out, exist_ok=True)
    hyp = os.path.join(SHARED, "edf/SC4001EC-Hypnogram.edf")
    stages = stages_per_epoch(hyp)
    rng = np.random.default_rng(4001)
    n = len(stages) * 30 * FS
    t = np.arange(n) / FS
    # Pink-ish background (a leaky integrator of white noise), per channel.
    bg = [lfilter([1], [1, -0.95], rng.standard_normal(n)) * 2.5 for _ in range(2)]
    eeg = [b.copy() for b in bg]
    hr = np.zeros(n)
    for e, s in enumerate(stages):
        sl = slice(e * 30 * FS, (e + 1) * 30 * FS)
        tt = t[sl]
        ph = rng.uniform(0, 2 * np.pi, 4)
        amp = {"W": 1.0, "1": 0.6, "2": 0.4, "3": 0.3, "4": 0.3, "R": 0.5, "?": 1.0}[s]
        alpha = (15 if s == "W" else 4) * np.sin(2 * np.pi * 10 * tt + ph[0])
        theta = (20 if s in "1R" else 8) * np.sin(2 * np.pi * 6 * tt + ph[1])
        delta = {"2": 25, "3": 70, "4": 100}.get(s, 5) * np.sin(2 * np.pi * 1.0 * tt + ph[2])
        x = theta + delta
        if s == "2":
            for c in rng.uniform(0, 29, 4):
                env = np.exp(-((tt - tt[0] - c) / 0.35) ** 2)
                x = x + 30 * env * np.sin(2 * np.pi * 13 * tt)
        eeg[0][sl] += x + 0.4 * alpha
        eeg[1][sl] += 0.7 * x + alpha
        if s == "?":
            eeg[0][sl] += 60 * rng.standard_normal(len(tt))
        hr[sl] = {"W": 74, "1": 68, "2": 62, "3": 57, "4": 56, "R": 70, "?": 80}[s] * (1 + 0.02 * amp * rng.standard_normal())
    # Beats: a rate that drifts with the stage, modulated by breathing at 0.25 Hz.
    beats, at = [], 0.5
    while at < t[-1] - 1:
        k = int(at * FS)
        rate = hr[k] * (1 + 0.04 * np.sin(2 * np.pi * 0.25 * at))
        beats.append(at)
        at += 60.0 / rate
    ecg = 0.02 * rng.standard_normal(n)
    for b in beats:
        k = int(b * FS)
        w = np.arange(max(k - 10, 0), min(k + 30, n))
        d = (w - k) / FS
        ecg[w] += 1.1 * np.exp(-(d / 0.012) ** 2) - 0.15 * np.exp(-((d - 0.025) / 0.01) ** 2) \
            + 0.25 * np.exp(-((d - 0.25) / 0.05) ** 2)
    data = np.vstack([eeg[0] * 1e-6, eeg[1] * 1e-6, ecg * 1e-3])
    info = mne.create_info(["EEG Fpz-Cz", "EEG Pz-Oz", "ECG"], FS, ["eeg", "eeg", "ecg"])
    raw = mne.io.RawArray(data, info, verbose="error")
    path = os.path.join(out, "SC4001E0-PSG.edf")
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")
    shutil.copy(hyp, os.path.join(out, "SC4001EC-Hypnogram.edf"))
    print(path, f"{n / FS / 3600:.1f} h, {len(beats)} beats")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "night")
