"""ede from Python: its analyses on numpy arrays and MNE Raw objects, and its viewer.

    import ede, mne
    raw = ede.read_raw("sub-01_task-rest_eeg.edf")      # or mne.io.read_raw_*(...)
    m = ede.xapen(raw, picks="eeg", m=1, r=0.2)         # Cross-ApEn of every channel pair
    w, freqs = ede.cwt(raw, picks=["Cz"], fmin=2, fmax=30, duration=10)   # Morlet |W|
    clean, report = ede.deblink(raw, window=20)         # eye blinks removed, a new Raw
    ede.view(clean)                                     # the viewer, Python goes on

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

# Mesa's device-select Vulkan layer probes Wayland to rank GPUs and, without a session
# (no XDG_RUNTIME_DIR), libwayland prints an error twice on the first GPU analysis. wgpu picks
# the adapter itself; the layer is turned off where there is no session (as the `ede` command does).
if "XDG_RUNTIME_DIR" not in os.environ:
    os.environ.setdefault("NODEVICE_SELECT", "1")

from ede import _ede

# The distribution is `ede-eeg` (`ede` on the package index is another project's); the import
# name and the command stay `ede`.
try:
    __version__ = version("ede-eeg")
except PackageNotFoundError:  # running from a checkout
    __version__ = "0+unknown"
# The commit and its date, as `ede --version` prints them after the version.
__commit__ = _ede.COMMIT

__all__ = ["read_array", "read_raw", "xapen", "cwt", "band_power", "hermite", "deblink", "view"]


def read_array(path: str | os.PathLike, *, stream: str | None = None,
               csv_fs: float | None = None) -> tuple[np.ndarray, dict]:
    """`(data, info)` of any recording ede opens: `data[channel, sample]` in SI units (V, T,
    T/m; other units as recorded), float64, and `info` with `sfreq`, `ch_names`, `ch_types`,
    `units`, `annotations` (`onset`, `duration`, `description`) and `meas_date`. `stream`: an
    XDF file's stream by name or id (default its EEG stream); `csv_fs`: the rate of a CSV file
    without a time column."""
    return _ede.read_array(os.fspath(path), stream=stream, csv_fs=csv_fs)


def read_raw(path: str | os.PathLike, *, stream: str | None = None,
             csv_fs: float | None = None):
    """The recording at `path` as an `mne.io.RawArray`: names, types, SI units, annotations
    and measurement date as ede reads them (`stream`, `csv_fs`: as `read_array`'s)."""
    import mne
    from datetime import datetime, timezone

    data, info = read_array(path, stream=stream, csv_fs=csv_fs)
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


def _same_rate(raw, sfreq):
    if sfreq is not None and float(sfreq) != raw.info["sfreq"]:
        raise ValueError(f"sfreq={sfreq} differs from the Raw's {raw.info['sfreq']}")


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
    _same_rate(inst, sfreq)
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


def _progress(progress, desc):
    """`(callback, close)` for a `progress=` argument: None or False for none, a callable
    `(done, total)`, or True for a tqdm bar (a line on stderr without tqdm)."""
    if progress is None or progress is False:
        return None, lambda: None
    if callable(progress):
        return progress, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        def line(done, total):
            print(f"\r{desc}: {done}/{total}", end="", file=sys.stderr, flush=True)
        return line, lambda: print(file=sys.stderr)
    bar = tqdm(desc=desc)

    def update(done, total):
        bar.total = total
        bar.n = done
        bar.refresh()
    return update, bar.close


def _with_progress(progress, desc, call):
    callback, close = _progress(progress, desc)
    try:
        return call(callback)
    finally:
        close()


def xapen(inst, sfreq=None, *, m=1, r=0.2, epoch_len=1024, epochs=None, start=0.0,
          picks=None, correction="max", backend="auto", progress=None) -> np.ndarray:
    """Cross-approximate entropy of every channel pair: `(n, n)`, row u and column v
    Cross-ApEn(u||v) averaged over `epochs` consecutive epochs of `epoch_len` samples from
    `start` seconds (`None`: all); NaN where a channel is flat. `inst`: an MNE Raw (its good
    EEG/MEG channels unless `picks` says) or an array `(n_channels, n_samples)` with `sfreq`.
    `backend`: "auto" (the GPU unless it is a software one), "gpu" or "cpu". `progress`: a
    callable `(epochs done, total)`, or True for a tqdm bar."""
    data, fs = _samples(inst, sfreq, picks)
    return _with_progress(progress, "xapen", lambda cb: _ede.xapen(
        data, fs, m=m, r=r, epoch_len=epoch_len, epochs=epochs, start=start,
        correction=correction, backend=backend, progress=cb))


def _stretch(data, fs, start, duration):
    """The samples from `start` seconds, `duration` seconds of them (None: to the end)."""
    first = 0 if start is None else round(float(start) * fs)
    if first < 0 or first >= data.shape[1]:
        raise ValueError(f"start={start} s is outside the {data.shape[1] / fs:.3f} s of data")
    if duration is None:
        return data[:, first:]
    n = round(float(duration) * fs)
    if n <= 0 or first + n > data.shape[1]:
        raise ValueError(f"duration={duration} s does not fit in the data after {start or 0} s")
    return data[:, first:first + n]


def cwt(inst, sfreq=None, *, fmin=1.0, fmax=40.0, voices=8, omega0=6.0, picks=None,
        start=None, duration=None, backend="auto"):
    """The Morlet scalogram, as `ede cwt` computes it: `(|W|, freqs)`, `|W|` float32
    `(n_channels, n_scales, n_times)` with the smallest scale (highest frequency) first, and
    each scale's Fourier frequency in Hz. Scales run from `fmax` down to `fmin`, `voices` per
    octave, Morlet `omega0`; `start` and `duration` in seconds."""
    data, fs = _samples(inst, sfreq, picks)
    data = np.ascontiguousarray(_stretch(data, fs, start, duration))
    return _ede.cwt(data, fs, fmin=fmin, fmax=fmax, voices=voices, omega0=omega0,
                    backend=backend)


def band_power(inst, sfreq=None, *, fmin=1.0, fmax=40.0, voices=8, omega0=6.0, picks=None,
               block_s=1.0, backend="auto", progress=None):
    """Mean Morlet power per scale in blocks of `block_s` seconds over the whole data, as
    `ede cwt --band-power` streams it: `(power (n_channels, n_scales, n_blocks), freqs,
    block_starts_s)`. `progress`: a callable `(segments done, total)`, or True for tqdm."""
    data, fs = _samples(inst, sfreq, picks)
    return _with_progress(progress, "band power", lambda cb: _ede.band_power(
        data, fs, fmin=fmin, fmax=fmax, voices=voices, omega0=omega0, block_s=block_s,
        backend=backend, progress=cb))


def hermite(inst, sfreq=None, *, channel=None, order=6, sigmas=100, sigma_range=None,
            filter="default", beats="annotations", backend="auto") -> dict:
    """The Hermite fit of every heartbeat, as `ede hermite` makes it: a dict of arrays, one
    entry per beat: `sample`, `time_s`, `label`, `sigma` (s), `mse` and `coefficients`
    `(n_beats, order)` in the input's unit (V for a Raw), and `sigmas`, `skipped`,
    `beat_source`, `ran_on`.

    `inst`: an MNE Raw (`channel` by name, default its first ECG channel) or a 1-D array with
    `sfreq`. `beats`: "annotations" (the Raw's beat annotations, N, V, A ...; the QRS detector
    where there are none), "detect", or an array of beat samples. `sigma_range`: `(min, max)`
    seconds of the `sigmas` values tried; `filter`: "default" (baseline removed, 40 Hz
    low-pass) or "none"."""
    onsets, descriptions = [], []
    if hasattr(inst, "get_data"):
        _same_rate(inst, sfreq)
        if channel is None:
            ecg = [n for n, t in zip(inst.ch_names, inst.get_channel_types()) if t == "ecg"]
            if not ecg:
                raise ValueError(f"the Raw has no ECG channel; name one with channel=. "
                                 f"Its channels: {', '.join(inst.ch_names)}")
            channel = ecg[0]
        if channel not in inst.ch_names:
            raise ValueError(f"no channel {channel!r} in the Raw")
        data, fs = inst.get_data(picks=[channel]), inst.info["sfreq"]
        a = inst.annotations
        shift = inst.first_time if a.orig_time is not None else 0.0
        onsets, descriptions = list(a.onset - shift), list(a.description)
    else:
        data = np.asarray(inst)
        if data.ndim != 1:
            raise ValueError(f"an ECG array must be 1-D, got shape {data.shape}")
        if sfreq is None:
            raise ValueError("sfreq is required with an array")
        data, fs = data[None, :], float(sfreq)
    given, detect = None, False
    if isinstance(beats, str):
        if beats not in ("annotations", "detect"):
            raise ValueError(f'beats must be "annotations", "detect" or an array, got {beats!r}')
        detect = beats == "detect"
    else:
        given = np.asarray(beats)
        if given.ndim != 1 or not np.issubdtype(given.dtype, np.integer) or (given < 0).any():
            raise ValueError("beats must be an array of sample indices (non-negative integers)")
        given = [int(b) for b in given]
    sigma_min, sigma_max = (None, None) if sigma_range is None else map(float, sigma_range)
    return _ede.hermite(
        np.ascontiguousarray(data, dtype=np.float64), fs, order=order, sigmas=sigmas,
        sigma_min=sigma_min, sigma_max=sigma_max, filter=filter, detect=detect, given=given,
        onsets=onsets, descriptions=descriptions, backend=backend)


def _flags(options):
    """`ede deblink`'s flags for keyword options: `window=20` is `--window 20`, True a bare
    flag, a list comma-joined (an empty one: none)."""
    flags = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            flags.append(f"{flag}={','.join(map(str, value))}")
        else:
            flags.append(f"{flag}={value}")  # `=`: a negative value is not a flag
    return flags


def deblink(inst, sfreq=None, *, ch_names=None, ch_types=None, progress=None, **options):
    """Eye blinks removed with ICA, as `ede deblink` removes them: `(cleaned, report)`.

    `inst`: an MNE Raw, whose good EEG and EOG channels are cleaned (EOG channels left as
    they are unless `keep` says) and which comes back as a new Raw, or an array
    `(n_channels, n_samples)` in volts with `sfreq`, `ch_names` (the frontal pairs are found
    by name) and `ch_types` (default all "eeg"), which comes back as an array. `options`: the
    command's, by their flag names (`window=20, hop=5, algorithm="jade", keep=["EOG1"],
    detect_channels=["Fp1-F3"], remove_eye_movements=True, backend="cpu"` ...). `report`:
    the blinks, events and windows, as `ede deblink --report` writes them. `progress`: a
    callable `(windows done, total)`, or True for tqdm."""
    import json

    flags = _flags(options)
    raw = inst if hasattr(inst, "get_data") else None
    if raw is not None:
        _same_rate(raw, sfreq)
        data, fs = raw.get_data(), raw.info["sfreq"]
        names, types, bads = raw.ch_names, raw.get_channel_types(), raw.info["bads"]
    else:
        data, fs = _samples(inst, sfreq, None)
        if ch_names is None:
            raise ValueError("ch_names is required with an array (blinks are found on the "
                             "frontal channels by name)")
        names = [str(n) for n in ch_names]
        types = ["eeg"] * len(names) if ch_types is None else list(ch_types)
        bads = []
    rows, cleaned, report = _with_progress(progress, "deblink", lambda cb: _ede.deblink(
        data, fs, list(names), list(types), list(bads), flags, progress=cb))
    report = json.loads(report)
    if raw is None:
        out = data.copy()
        out[rows] = cleaned
        return out, report
    out = raw.copy().load_data(verbose="error")
    out._data[rows] = cleaned
    return out, report


def ica(inst, *, method="fastica", picard="fastica", contrast="logcosh", alpha=1.0,
        n_components=None, seed=1, tol=None, max_iter=None, reference="as-recorded", filter=None, exclude="auto",
        iclabel_marks="muscle=0.9,eye=0.9", backend="auto"):
    """ICA of a whole recording fitted by ede (`ede ica`), returned as a fitted
    `mne.preprocessing.ICA` and the components' labels: `(ica, labels)`.

    `inst`: an MNE Raw (fitted as given: its good EEG channels, or MEG where it has no EEG,
    the spans of `BAD…` annotations left out) or a recording's path. `method` "fastica",
    "infomax" (extended, runica's schedule) or "picard", whose problem `picard` is "fastica"
    (Picard-O, MNE's default) or "infomax" (extended Infomax's); `contrast` "logcosh", "exp"
    or "cube" (Picard's density); `tol` and `max_iter` each method's default where None;
    `n_components` a number, a fraction of the variance, or None for all that carry variance;
    `reference` "as-recorded" (default: re-reference in MNE first) or "average"; `filter` e.g.
    "hp=1,lp=100" (zero-phase) or None; `exclude` "auto" (the EOG/ECG correlation marks,
    MNE's find_bads_muscle marks and the ICLabel classes of `iclabel_marks`, e.g.
    "eye=0.8,muscle=0.9"), a list of components, or "none". `ica.apply(raw)` then cleans as `ede ica --clean` does.
    `labels`: the labels file `ede ica --labels` writes, with ICLabel's seven probabilities per
    component (as mne-icalabel's `label_components` gives them; also in `ica.labels_scores_`,
    and each component under its most probable class in `ica.labels_`, as mne-icalabel
    leaves them). Positions: the Raw's montage, else MNE's standard_1005 by channel name."""
    import json
    import shutil

    import mne

    folder = tempfile.mkdtemp(prefix="ede-ica-")
    try:
        if hasattr(inst, "save"):
            path = os.path.join(folder, "fit_raw.fif")
            inst.save(path, overwrite=True, verbose="error")
        else:
            path = os.fspath(inst)
        out, labels = os.path.join(folder, "fit-ica.fif"), os.path.join(folder, "labels.json")
        if isinstance(exclude, (list, tuple)):
            exclude = ",".join(map(str, exclude)) if exclude else "none"
        flags = _flags(dict(method=method, picard=picard, contrast=contrast, alpha=alpha,
                            n_components="all" if n_components is None else n_components,
                            seed=seed, tol=tol, max_iter=max_iter, reference=reference,
                            filter=filter, exclude=exclude, iclabel_marks=iclabel_marks,
                            backend=backend))
        run = subprocess.run([sys.executable, "-m", "ede", "ica", path, "--out", out,
                              "--labels", labels, *flags], capture_output=True, text=True)
        if run.returncode != 0:
            lines = [line for line in run.stderr.splitlines() if line.strip()]
            # The reason: clap's "error: ..." or ede's "ede: ..." line, else the last.
            said = [line for line in lines if line.startswith(("error:", "ede:"))]
            raise ValueError((said or lines or [f"ede ica failed ({run.returncode})"])[-1])
        fitted = mne.preprocessing.read_ica(out, verbose="error")
        with open(labels) as f:
            labels = json.load(f)
        scores = [c["iclabel"] for c in labels["components"]]
        if scores and all(s is not None for s in scores):
            fitted.labels_scores_ = np.asarray(scores)
        return fitted, labels
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def view(raw_or_path, *, screenshot=None) -> subprocess.Popen:
    """Opens the viewer on a file, or on an MNE Raw handed over as a temporary FIF, in a
    process of its own: Python goes on. Returns the process. With `screenshot` (a PNG path)
    the viewer draws its first page into that file and exits."""
    if hasattr(raw_or_path, "save"):
        folder = tempfile.mkdtemp(prefix="ede-view-")
        path = os.path.join(folder, "view_raw.fif")
        raw_or_path.save(path, overwrite=True, verbose="error")
    else:
        path = os.fspath(raw_or_path)
        if not os.path.exists(path):
            raise OSError(f"{path}: no such file")
    extra = [] if screenshot is None else ["--screenshot", os.fspath(screenshot)]
    return subprocess.Popen([sys.executable, "-m", "ede", path, *extra])
