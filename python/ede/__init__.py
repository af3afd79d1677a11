"""ede from Python: its analyses on numpy arrays and MNE Raw objects, and its viewer.

    import ede, mne
    raw = ede.read_raw("sub-01_task-rest_eeg.edf")      # or mne.io.read_raw_*(...)
    m = ede.xapen(raw, picks="eeg", m=1, r=0.2)         # Cross-ApEn of every channel pair
    ede.view("sub-01_task-rest_eeg.edf")                # the viewer, Python goes on

The extension (`ede._ede`) only converts and calls ede's Rust library; the numbers are the
ones `ede xapen` writes for the same samples. MNE is imported only by the functions that
take or make a Raw.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from ede import _ede

try:
    __version__ = version("ede")
except PackageNotFoundError:  # running from a checkout
    __version__ = "0+unknown"

__all__ = ["read_array", "read_raw", "xapen", "view"]


def read_array(path: str | os.PathLike) -> tuple[np.ndarray, dict]:
    """`(data, info)` of any recording ede opens: `data[channel, sample]` in SI units (V, T,
    T/m; other units as recorded), float64, and `info` with `sfreq`, `ch_names`, `ch_types`,
    `units`, `annotations` (`onset`, `duration`, `description`) and `meas_date`."""
    return _ede.read_array(os.fspath(path))


def read_raw(path: str | os.PathLike, *, stream: str | None = None):
    """The recording at `path` as an `mne.io.RawArray`: names, types, SI units, annotations
    and measurement date as ede reads them."""
    if stream is not None:
        raise ValueError("stream= (an XDF stream by name) is not supported yet")
    import mne
    from datetime import datetime, timezone

    data, info = read_array(path)
    mne_info = mne.create_info(info["ch_names"], info["sfreq"], info["ch_types"])
    raw = mne.io.RawArray(data, mne_info, verbose="error")
    date = datetime.fromisoformat(info["meas_date"]).replace(tzinfo=timezone.utc)
    raw.set_meas_date(date)
    raw.set_annotations(_mne_annotations(info["annotations"]))
    return raw


def _mne_annotations(a):
    """ede's events as `mne.Annotations`: EDF+'s `text@@channel` events of one onset, duration
    and text become one annotation on those channels, as MNE reads and writes them."""
    import mne

    merged = {}
    for onset, duration, text in zip(a["onset"], a["duration"], a["description"]):
        text, _, channel = text.partition("@@")
        channels = merged.setdefault((onset, duration, text), [])
        if channel:
            channels.append(channel)
    keys = list(merged)
    return mne.Annotations(
        [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
        ch_names=[tuple(merged[k]) for k in keys],
    )


def _samples(inst, sfreq, picks):
    """`(data float64 [channels, samples], sfreq)` of an MNE Raw (its good channels
    unless `picks` names them) or of an array with its `sfreq`."""
    if isinstance(inst, np.ndarray) or not hasattr(inst, "get_data"):
        data = np.asarray(inst)
        if data.ndim != 2:
            raise ValueError(f"data must be (n_channels, n_samples), got shape {data.shape}")
        if not np.issubdtype(data.dtype, np.number):
            raise ValueError(f"data must be numbers, got dtype {data.dtype}")
        if sfreq is None:
            raise ValueError("sfreq is required with an array")
        if picks is not None:
            data = data[np.asarray(picks)]
        return np.ascontiguousarray(data, dtype=np.float64), float(sfreq)
    if sfreq is not None and float(sfreq) != inst.info["sfreq"]:
        raise ValueError(f"sfreq={sfreq} differs from the Raw's {inst.info['sfreq']}")
    import mne

    if picks is None:
        picks = mne.pick_types(inst.info, meg=True, eeg=True, exclude="bads")
        if len(picks) == 0:
            raise ValueError("no channels to compute: no good EEG or MEG channel; name some in picks")
    # MNE's own rule (its `_picks_to_idx`, which `get_data` calls without excluding bads):
    # names and indices as given, channel types without the bad channels.
    from mne._fiff.pick import _picks_to_idx

    data = inst.get_data(picks=_picks_to_idx(inst.info, picks, exclude="bads"))
    if data.shape[0] == 0:
        raise ValueError(f"picks={picks!r} selects no channel")
    return data, inst.info["sfreq"]


def xapen(inst, sfreq=None, *, m=1, r=0.2, epoch_len=1024, epochs=None, start=0.0,
          picks=None, correction="max", backend="auto") -> np.ndarray:
    """Cross-approximate entropy of every channel pair: `(n, n)`, row u and column v
    Cross-ApEn(u||v) averaged over `epochs` consecutive epochs of `epoch_len` samples from
    `start` seconds (`None`: all); NaN where a channel is flat. `inst`: an MNE Raw (its good
    EEG/MEG channels unless `picks` says) or an array `(n_channels, n_samples)` with `sfreq`.
    `backend`: "auto" (the GPU unless it is a software one), "gpu" or "cpu"."""
    data, fs = _samples(inst, sfreq, picks)
    return _ede.xapen(data, fs, m=m, r=r, epoch_len=epoch_len, epochs=epochs, start=start,
                      correction=correction, backend=backend)


def view(raw_or_path) -> subprocess.Popen:
    """Opens the viewer on a file, or on an MNE Raw handed over as a temporary FIF, in a
    process of its own: Python goes on. Returns the process."""
    if hasattr(raw_or_path, "save"):
        folder = tempfile.mkdtemp(prefix="ede-view-")
        path = os.path.join(folder, "view_raw.fif")
        raw_or_path.save(path, overwrite=True, verbose="error")
    else:
        path = os.fspath(raw_or_path)
        if not os.path.exists(path):
            raise OSError(f"{path}: no such file")
    return subprocess.Popen([sys.executable, "-m", "ede", path])
