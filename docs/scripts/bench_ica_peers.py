"""MNE-Python's ICA beside `ede ica` on the same machine, in one run (issue 61).

The EEGLAB sample as the ICA tab fits it: EOG1/EOG2 typed EOG, the 30 EEG channels
average-referenced, high-passed at 1 Hz, every component that carries variance (29). For each
method, MNE's `ICA.fit` on the preloaded, filtered Raw (the fit alone) and `ede ica` as a whole
process (reading, referencing, filtering, fitting, scoring, writing MNE's ICA file), alternated,
the median of `--repeat` runs each; the ratio MNE / ede. And mne-icalabel's `label_components`
on MNE's FastICA beside ede's ICLabel of its own FastICA (`iclabel_seconds` of its labels file:
features and network, 29 components each).

  python3 -m venv /tmp/mnevenv && /tmp/mnevenv/bin/pip install mne scikit-learn python-picard \
      mne-icalabel onnxruntime
  /tmp/mnevenv/bin/python docs/scripts/bench_ica_peers.py --ede target/release/ede --out OUT.json
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import warnings

import mne
import numpy as np

DATA = os.environ.get("EDE_DATA", "../shared/data")


def sample():
    path = os.path.join(DATA, "eeg", "eeglab_sample_32ch_128hz.edf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    raw.set_channel_types({"EOG1": "eog", "EOG2": "eog"})
    raw.set_eeg_reference("average", projection=False, verbose="error")
    raw.filter(1.0, None, verbose="error")
    # mne-icalabel needs positions: the 10-05 template's, by name (FPz is Fpz).
    raw.set_montage("standard_1005", match_case=False, on_missing="ignore")
    return path, raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ede", default="target/release/ede")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", default="fastica,infomax,picard,picard_infomax")
    ap.add_argument("--out")
    args = ap.parse_args()
    path, raw = sample()
    methods = {
        "fastica": (dict(method="fastica"), ["--method", "fastica"]),
        "infomax": (dict(method="infomax", fit_params=dict(extended=True)),
                    ["--method", "infomax"]),
    }
    try:
        import picard  # noqa: F401

        methods["picard"] = (dict(method="picard"), ["--method", "picard"])
        methods["picard_infomax"] = (
            dict(method="picard", fit_params=dict(ortho=False, extended=True)),
            ["--method", "picard", "--picard", "infomax"],
        )
    except ImportError:
        pass
    rows = []
    folder = tempfile.mkdtemp()
    fitted = None
    for name, (mne_kw, ede_flags) in methods.items():
        if name not in args.methods.split(","):
            continue
        mne_t, ede_t, label_t = [], [], []
        for _ in range(args.repeat):
            ica = mne.preprocessing.ICA(n_components=None, random_state=1, verbose="error",
                                        **mne_kw)
            t = time.perf_counter()
            ica.fit(raw, verbose="error")
            mne_t.append(time.perf_counter() - t)
            if name == "fastica":
                fitted = ica
            if ede_flags is not None:
                labels = os.path.join(folder, "labels.json")
                cmd = [args.ede, "ica", path, "--reference", "average", "--filter", "hp=1",
                       "--backend", "cpu", "--out", os.path.join(folder, "x-ica.fif"),
                       "--labels", labels, *ede_flags]
                t = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                ede_t.append(time.perf_counter() - t)
                with open(labels) as f:
                    label_t.append(json.load(f)["iclabel_seconds"])
        row = dict(method=name, mne_fit_s=statistics.median(mne_t),
                   components=int(ica.n_components_), mne_iterations=int(ica.n_iter_))
        if ede_t:
            row["ede_process_s"] = statistics.median(ede_t)
            row["mne_over_ede"] = row["mne_fit_s"] / row["ede_process_s"]
            row["ede_iclabel_s"] = statistics.median(label_t)
        rows.append(row)
        print(row)
    labelling = None
    try:
        if fitted is None:  # no FastICA fit to label (--methods without fastica)
            raise ImportError
        from mne_icalabel import label_components

        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            label_components(raw, fitted, method="iclabel")
            times.append(time.perf_counter() - t)
        labelling = dict(components=int(fitted.n_components_), seconds=statistics.median(times))
        print("mne-icalabel", labelling)
    except ImportError:
        pass
    out = dict(cpu=os.cpu_count(), mne=mne.__version__, fits=rows, mne_icalabel=labelling)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
