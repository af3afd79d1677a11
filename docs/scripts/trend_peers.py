"""Peers of `ede bench trend` on the same file (the generated 64 ch x 256 Hz x 16 h EDF):

- CDSA in PyTorch on the GPU, as a researcher would write it: the EDF's int16 records read with
  numpy, put on the GPU, scaled to uV, cut into 30 s segments of 2 s Hann blocks every 1 s,
  each block's mean removed, torch.fft.rfft, |X|^2 averaged per segment, 10 log10 (the density
  scale of scipy.signal.welch). Timed from the file (pages warm: read it once first) and with the
  samples already on the GPU (uV, float32), median of repeats after a warm-up.
- aEEG with SciPy on one CPU thread (EDFbrowser's chain as ede's dsp::aeeg: Butterworth
  band-pass 2-15 Hz order 8 and envelope low-pass 0.5 Hz order 4 as sosfilt, rectified,
  doubled, 9th and 93rd percentiles of each 15 s segment), and the same chain in PyTorch on the
  GPU (torchaudio's lfilter section by section in f64, torch.kthvalue), on the first
  `--aeeg-hours` of every channel, scaled to the night by the samples (the chain's work is
  linear in them). Skipped, and said, where SciPy or torchaudio is missing.

    python3 docs/scripts/trend_peers.py --file target/bench/io_64ch_256hz.edf --out OUT/peers.json
"""

import argparse
import json
import statistics
import time

import numpy as np


def edf_layout(path):
    with open(path, "rb") as f:
        head = f.read(256)
        ns = int(head[252:256])
        header_bytes = int(head[184:192])
        records = int(head[236:244])
        f.seek(256)
        sig = f.read(256 * ns)
    field = lambda at, width: [
        sig[at * ns + k * width : at * ns + (k + 1) * width].decode().strip() for k in range(ns)
    ]
    # Offsets of the fields within the signal header, in units of ns (widths 16, 80, 8, ...).
    offs = {"label": (0, 16), "pmin": (104, 8), "pmax": (112, 8), "dmin": (120, 8),
            "dmax": (128, 8), "spr": (216, 8)}
    get = {k: field(*v) for k, v in offs.items()}
    spr = [int(v) for v in get["spr"]]
    gain = [(float(a) - float(b)) / (float(c) - float(d)) for a, b, c, d in
            zip(get["pmax"], get["pmin"], get["dmax"], get["dmin"])]
    bias = [float(p) - g * float(d) for p, g, d in zip(get["pmin"], gain, get["dmin"])]
    return header_bytes, records, ns, spr, np.array(gain), np.array(bias)


def median_time(f, repeats):
    f()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs), runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default="target/bench/io_64ch_256hz.edf")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--aeeg-hours", type=float, default=1.0)
    a = ap.parse_args()
    header_bytes, records, ns, spr, gain, bias = edf_layout(a.file)
    assert len(set(spr)) == 1, "one rate"
    spr = spr[0]
    fs = float(spr)
    raw = np.memmap(a.file, dtype="<i2", mode="r", offset=header_bytes,
                    shape=(records, ns, spr))
    out = {"file": a.file, "channels": ns, "hours": records / 3600.0}

    import torch

    dev = torch.device("cuda")
    g = torch.tensor(gain, dtype=torch.float32, device=dev)[:, None]
    b = torch.tensor(bias, dtype=torch.float32, device=dev)[:, None]
    block, step, seg = int(2 * fs), int(fs), int(30 * fs)
    window = torch.hann_window(block, periodic=True, device=dev)
    scale = 1.0 / (fs * float((window * window).sum()))
    onesided = torch.full((block // 2 + 1,), 2.0, device=dev)
    onesided[0] = 1.0
    onesided[-1] = 1.0

    def cdsa(x):
        segs = x.shape[1] // seg
        x = x[:, : segs * seg].reshape(ns, segs, seg)
        blocks = x.unfold(2, block, step)  # ns, segs, blocks, block
        blocks = blocks - blocks.mean(dim=3, keepdim=True)
        spec = torch.fft.rfft(blocks * window, dim=3)
        psd = (spec.real**2 + spec.imag**2).mean(dim=2) * scale * onesided
        return 10.0 * torch.log10(psd)

    def on_gpu_uv():
        x = torch.from_numpy(np.ascontiguousarray(raw)).to(dev)  # records, ns, spr int16
        return x.permute(1, 0, 2).reshape(ns, -1).float() * g + b

    # Whole night at once needs 64 x 14.7 M x (4 + 16 bytes of blocks ...): in hours.
    hours_at_once = 2
    per = hours_at_once * 3600

    def cdsa_from_file():
        rows = []
        for r0 in range(0, records, per):
            x = torch.from_numpy(np.ascontiguousarray(raw[r0 : r0 + per])).to(dev)
            x = x.permute(1, 0, 2).reshape(ns, -1).float() * g + b
            rows.append(cdsa(x).cpu())
        torch.cuda.synchronize()
        return rows

    s, runs = median_time(cdsa_from_file, a.repeats)
    out["torch_cdsa_from_file_s"] = s
    out["torch_cdsa_from_file_runs"] = runs
    x = on_gpu_uv()

    def cdsa_on_gpu():
        for r0 in range(0, x.shape[1], per * spr):
            cdsa(x[:, r0 : r0 + per * spr]).cpu()
        torch.cuda.synchronize()

    s, runs = median_time(cdsa_on_gpu, a.repeats)
    out["torch_cdsa_on_gpu_s"] = s
    out["torch_cdsa_on_gpu_runs"] = runs
    out["torch"] = torch.__version__
    out["device"] = torch.cuda.get_device_name()
    del x
    torch.cuda.empty_cache()

    try:
        from scipy import signal
        import scipy
    except ImportError as e:
        out["aeeg_peer"] = f"skipped: {e}"
        signal = None
    if signal is not None:
        out["scipy"] = scipy.__version__
        bp = signal.butter(8, [2.0, 15.0], btype="bandpass", fs=fs, output="sos")
        lp = signal.butter(4, 0.5, btype="lowpass", fs=fs, output="sos")
        hours = int(a.aeeg_hours * 3600)
        n = hours * spr
        x = (raw[:hours].transpose(1, 0, 2).reshape(ns, -1).astype(np.float64)
             * gain[:, None] + bias[:, None])
        aseg = int(15 * fs)

        def edges(env, pct):
            segs = env[:, : (n // aseg) * aseg].reshape(ns, -1, aseg)
            return pct(segs)

        t = time.perf_counter()
        env = 2.0 * signal.sosfilt(lp, np.abs(signal.sosfilt(bp, x, axis=1)), axis=1)
        edges(env, lambda s: np.percentile(s, [9, 93], axis=2, method="nearest"))
        took = time.perf_counter() - t
        out["scipy_aeeg_measured_hours"] = a.aeeg_hours
        out["scipy_aeeg_measured_s"] = took
        out["scipy_aeeg_night_s"] = took * records / hours
        # The same chain in PyTorch on the GPU: torchaudio's lfilter, section by section, f64.
        try:
            import torchaudio.functional as AF

            xg = torch.from_numpy(x).to(dev)

            def chain():
                y = xg
                for k, sec in enumerate(np.vstack([bp, lp])):
                    if k == len(bp):
                        y = y.abs()
                    bq = torch.tensor(sec[:3], dtype=torch.float64, device=dev)
                    aq = torch.tensor(sec[3:], dtype=torch.float64, device=dev)
                    y = AF.lfilter(y, aq, bq, clamp=False)
                env = (2.0 * y)[:, : (n // aseg) * aseg].reshape(ns, -1, aseg)
                lo = torch.kthvalue(env, int(aseg * 0.09 + 0.5) + 1, dim=2).values
                hi = torch.kthvalue(env, int(aseg * 0.93 + 0.5) + 1, dim=2).values
                torch.cuda.synchronize()
                return lo, hi

            s, runs = median_time(chain, a.repeats)
            out["torch_aeeg_measured_s"] = s
            out["torch_aeeg_night_s"] = s * records / hours
        except Exception as e:  # torchaudio missing or failing: said, not fatal
            out["torch_aeeg"] = f"skipped: {e}"
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
