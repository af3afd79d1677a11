"""The clean base of the independent blink simulations (issue 43): the EEGLAB sample cleaned
of its blinks by MNE-Python's ICA as its tutorial does it (fastica, 25 components,
random_state 97, fitted on a 1 Hz high-passed copy, components by `find_bads_eog`, applied to
the raw data). The cleaning is affine in the raw data, clean = P raw + b, so the fixture holds
P and b (32 x 32 and 32, microvolts), fitted by least squares on the raw and cleaned samples
(exact to float rounding); the suite rebuilds the base from the recording without Python.

  python3 -m venv /tmp/mne && /tmp/mne/bin/pip install mne scikit-learn
  /tmp/mne/bin/python docs/scripts/blink_base_mne.py \
      ../shared/data/eeg/eeglab_sample_32ch_128hz.edf tests/fixtures/blink_base_mne.json
"""

import json
import sys

import mne
import numpy as np

mne.set_log_level("ERROR")


def main(path, out):
    raw = mne.io.read_raw_edf(path, preload=True)
    eog = [c for c in raw.ch_names if "EOG" in c.upper()]
    raw.set_channel_types({c: "eog" for c in eog})
    filtered = raw.copy().filter(l_freq=1.0, h_freq=None)
    ica = mne.preprocessing.ICA(n_components=25, method="fastica", random_state=97, max_iter="auto")
    ica.fit(filtered)
    bads, _ = ica.find_bads_eog(raw)
    if not bads:
        bads, _ = ica.find_bads_eog(raw, ch_name="FPz")
    ica.exclude = bads
    clean = ica.apply(raw.copy())
    x = raw.get_data() * 1e6
    y = clean.get_data() * 1e6
    design = np.vstack([x, np.ones((1, x.shape[1]))]).T
    coef, *_ = np.linalg.lstsq(design, y.T, rcond=None)
    p, b = coef[:-1].T, coef[-1]
    err = np.abs(p @ x + b[:, None] - y).max()
    assert err < 1e-6 * np.abs(y).max(), err
    json.dump(
        {
            "source": "MNE-Python %s ICA (fastica, 25 components, random_state 97, 1 Hz "
            "high-passed fit, find_bads_eog) of %s" % (mne.__version__, path.split("/")[-1]),
            "excluded": [int(c) for c in bads],
            "channels": raw.ch_names,
            "projection": p.round(9).tolist(),
            "offset_uv": b.round(6).tolist(),
            "max_fit_error_uv": float(err),
        },
        open(out, "w"),
        indent=None,
    )
    print(f"excluded {bads}, affine fit error {err:.2e} uV")


if __name__ == "__main__":
    main(*sys.argv[1:])
