"""ede.cwt, band_power, hermite and deblink against the `ede` command line on the same files
(fixtures, files made here, and the shared recordings where present), and their bad input."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ede

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
SPLIT = FIXTURES / "fif_split_raw.fif"
# The shared recordings, as the Rust tests find them: $EDE_DATA or ../shared/data.
SHARED = Path(os.environ.get("EDE_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
MITDB = SHARED / "ecg" / "mitdb" / "100.hea"
EEGLAB = SHARED / "eeg" / "eeglab_sample_32ch_128hz.edf"
EDE = str(Path(sys.executable).with_name("ede"))


def run(*args):
    subprocess.run([EDE, *map(str, args)], capture_output=True, text=True, check=True)


def write_csv(path, fs, columns):
    """A CSV recording with a time column: `columns` {"name [unit]": samples}."""
    n = len(next(iter(columns.values())))
    table = np.column_stack([np.arange(n) / fs, *columns.values()])
    np.savetxt(path, table, delimiter=",", header=",".join(["time", *columns]), comments="",
               fmt=["%.6f"] + ["%.4f"] * len(columns))


def ecg_csv(path, fs=360.0, seconds=60, seed=3):
    """An ECG-like trace in mV: beats of varying rate and shape (a QRS of three Gaussians, a P
    and a T wave), wander and noise; not the Hermite model."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * fs)) / fs
    x = 0.1 * np.sin(2 * np.pi * 0.3 * t) + 0.02 * rng.standard_normal(t.size)
    beat = 0.5
    while beat < seconds - 0.5:
        width = rng.uniform(0.008, 0.014)
        for shift, height, w in [(-0.2, 0.15, 0.025), (-0.02, -0.2, width), (0, 1.2, width),
                                 (0.02, -0.3, width), (0.25, 0.3, 0.05)]:
            x += height * np.exp(-0.5 * ((t - beat - shift) / w) ** 2)
        beat += rng.uniform(0.6, 1.1)
    write_csv(path, fs, {"ECG [mV]": x})
    return path


def eeg_csv(path, fs=128.0, seconds=120, seed=5):
    """Ten EEG channels in uV: 1/f-like background, an occipital alpha, and blinks (a
    half-sine of 250-400 ms, largest at Fp1/Fp2 and falling off towards the back)."""
    rng = np.random.default_rng(seed)
    names = ["Fp1", "Fp2", "F3", "F4", "F7", "F8", "C3", "C4", "O1", "O2"]
    reach = np.array([1.0, 1.0, 0.45, 0.45, 0.6, 0.6, 0.15, 0.15, 0.03, 0.03])
    n = int(seconds * fs)
    t = np.arange(n) / fs
    data = np.cumsum(rng.standard_normal((len(names), n)), axis=1)
    data -= np.convolve(data.mean(0), np.ones(64) / 64, "same")
    data = 5 * (data - data.mean(1, keepdims=True)) / data.std(1, keepdims=True)
    data[-2:] += 8 * np.sin(2 * np.pi * 10 * t)
    onsets = np.arange(2.0, seconds - 2, 4.0)
    for onset in onsets + rng.uniform(-1, 1, onsets.size):
        length = rng.uniform(0.25, 0.4)
        k = (t >= onset) & (t < onset + length)
        data[:, k] += 150 * np.outer(reach, np.sin(np.pi * (t[k] - onset) / length))
    write_csv(path, fs, {f"{c} [uV]": row for c, row in zip(names, data)})
    return path


def test_cwt_equals_the_cli(tmp_path):
    out = tmp_path / "cwt.json"
    run("cwt", SPLIT, "--channel", "EEG 002", "--start", 1, "--duration", 2, "--fmin", 4,
        "--fmax", 30, "--voices", 6, "--backend", "cpu", "--out", out)
    want = json.loads(out.read_text())
    mne = pytest.importorskip("mne")
    raw = mne.io.read_raw_fif(SPLIT, preload=True, verbose="error")
    w, freqs = ede.cwt(raw, picks=["EEG 002"], start=1, duration=2, fmin=4, fmax=30, voices=6,
                       backend="cpu")
    assert w.shape == (1, len(want["scales"]), want["n"]) and w.dtype == np.float32
    np.testing.assert_allclose(freqs, want["frequencies_hz"], rtol=1e-12)
    np.testing.assert_allclose(w[0], np.array(want["magnitude"]), rtol=1e-5, atol=1e-7 * w.max())


def test_band_power_equals_the_cli(tmp_path):
    out = tmp_path / "power.csv"
    run("cwt", SPLIT, "--all-channels", "--band-power", out, "--block-s", 0.5, "--fmin", 2, "--fmax", 20,
        "--backend", "cpu")
    rows = np.genfromtxt(out, delimiter=",", skip_header=1, dtype=None, encoding=None)
    data, info = ede.read_array(SPLIT)
    seen = []
    power, freqs, starts = ede.band_power(data, info["sfreq"], fmin=2, fmax=20, block_s=0.5,
                                          backend="cpu", progress=lambda d, t: seen.append((d, t)))
    assert power.shape == (2, len(freqs), len(starts)) and seen[-1][0] == seen[-1][1]
    for row in rows:
        c = info["ch_names"].index(row[0])
        b = int(np.argmin(np.abs(starts - row[1])))
        assert starts[b] == pytest.approx(row[1])
        # The command line writes volts squared from volts scaled as ede reads the file.
        np.testing.assert_allclose(power[c, :, b], [row[k] for k in range(2, len(row))],
                                   rtol=2e-5)


def test_hermite_equals_the_cli_on_a_file_it_reads(tmp_path):
    path = ecg_csv(tmp_path / "ecg.csv")
    out = tmp_path / "h.json"
    run("hermite", path, "--order", 5, "--backend", "cpu", "--out", out)
    want = json.loads(out.read_text())
    assert want["beat_source"] == "detector" and len(want["beats"]) > 50
    samples = np.array([b["sample"] for b in want["beats"]])
    coefficients = np.array([b["coefficients"] for b in want["beats"]])
    # An array in the file's unit (mV) gives the very numbers; the beats handed in as well.
    data, info = ede.read_array(path)
    mv = data[0] * 1e3
    for beats in ["detect", samples]:
        got = ede.hermite(mv, info["sfreq"], order=5, beats=beats, backend="cpu")
        np.testing.assert_array_equal(got["sample"], samples)
        np.testing.assert_allclose(got["coefficients"], coefficients, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got["sigma"], [b["sigma"] for b in want["beats"]])
    assert got["beat_source"] == "given"
    # An MNE Raw in volts: the same fits in volts.
    pytest.importorskip("mne")
    got = ede.hermite(ede.read_raw(path), order=5, backend="cpu")
    np.testing.assert_array_equal(got["sample"], samples)
    np.testing.assert_allclose(got["coefficients"] * 1e3, coefficients, rtol=1e-4,
                               atol=1e-5 * np.abs(coefficients).max())


@pytest.mark.skipif(not MITDB.exists(), reason="needs ../shared/data")
def test_hermite_takes_the_beat_annotations_of_a_raw(tmp_path):
    out = tmp_path / "h.json"
    run("hermite", MITDB, "--backend", "cpu", "--out", out)
    want = json.loads(out.read_text())
    got = ede.hermite(ede.read_raw(MITDB), backend="cpu")
    assert got["beat_source"] == "annotations"
    np.testing.assert_array_equal(got["sample"], [b["sample"] for b in want["beats"]])
    assert got["label"] == [b["label"] for b in want["beats"]]
    coefficients = np.array([b["coefficients"] for b in want["beats"]])
    np.testing.assert_allclose(got["coefficients"] * 1e3, coefficients, rtol=1e-4,
                               atol=1e-5 * np.abs(coefficients).max())


def deblink_equals_the_cli(path, tmp_path, options, flags):
    out, report = tmp_path / "clean.bdf", tmp_path / "report.json"
    run("deblink", path, "--out", out, "--report", report, "--backend", "cpu", *flags)
    want = json.loads(report.read_text())
    raw = ede.read_raw(path)
    clean, got = ede.deblink(raw, backend="cpu", **options)
    for key in ["channels", "detection", "keep", "blinks", "events"]:
        assert got[key] == want[key], key
    assert [w["iterations"] for w in got["windows"]] == [w["iterations"] for w in want["windows"]]
    written, info = ede.read_array(out)
    assert clean.ch_names == info["ch_names"]
    cleaned, before = clean.get_data(), raw.get_data()
    assert np.abs(cleaned - before).max() > 20e-6, "blinks of 150 uV were left"
    # Equal to the written file's resolution, except where it clips at the input's range.
    inside = (written > before.min(1, keepdims=True)) & (written < before.max(1, keepdims=True))
    np.testing.assert_allclose(cleaned[inside], written[inside], atol=1e-7)
    return clean, got


def test_deblink_equals_the_cli_and_gives_a_new_raw(tmp_path):
    pytest.importorskip("mne")
    path = eeg_csv(tmp_path / "eeg.csv")
    clean, report = deblink_equals_the_cli(path, tmp_path, dict(window=20, keep=[]),
                                           ["--window", 20, "--keep", ""])
    assert report["options"]["params"]["window_s"] == 20 and report["keep"] == []
    assert len(report["blinks"]) >= 20
    # The array route: the same cleaning, as an array.
    data, info = ede.read_array(path)
    seen = []
    cleaned, again = ede.deblink(data, info["sfreq"], ch_names=info["ch_names"], window=20,
                                 keep=[], backend="cpu", progress=lambda d, t: seen.append(d))
    assert again["blinks"] == report["blinks"] and seen[-1] == len(report["windows"])
    np.testing.assert_array_equal(cleaned, clean.get_data())


@pytest.mark.skipif(not EEGLAB.exists(), reason="needs ../shared/data")
def test_deblink_of_a_real_recording_equals_the_cli(tmp_path):
    pytest.importorskip("mne")
    clean, report = deblink_equals_the_cli(EEGLAB, tmp_path, {}, [])
    assert report["keep"] == ["EOG1", "EOG2"]


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: ede.cwt(np.ones((1, 512)), 128.0, omega0=0.5), "omega0"),
        (lambda: ede.cwt(np.ones((1, 512)), 128.0, fmin=50, fmax=10), "fmin"),
        (lambda: ede.cwt(np.ones((1, 512)), 128.0, duration=10), "duration"),
        (lambda: ede.cwt(np.ones((1, 512)), 128.0, start=-1), "start"),
        (lambda: ede.band_power(np.ones((1, 512)), 128.0, block_s=0), "block_s"),
        (lambda: ede.hermite(np.ones(3600), 360.0, order=0), "order"),
        (lambda: ede.hermite(np.ones((2, 3600)), 360.0), "1-D"),
        (lambda: ede.hermite(np.ones(3600), 360.0, beats="guess"), "beats"),
        (lambda: ede.hermite(np.ones(3600), 360.0, beats=[1.5]), "sample indices"),
        (lambda: ede.hermite(np.ones(3600), 360.0, filter="notch"), "filter"),
        (lambda: ede.deblink(np.ones((2, 2560)), 128.0), "ch_names"),
        (lambda: ede.deblink(np.ones((2, 2560)), 128.0, ch_names=["Fp1", "F3"], window=-1),
         "window"),
        (lambda: ede.deblink(np.ones((2, 2560)), 128.0, ch_names=["a", "b"], colour="red"),
         "--colour"),
        (lambda: ede.deblink(np.ones((2, 2560)), 128.0, ch_names=["a", "b"]), "frontal"),
    ],
)
def test_bad_input_raises_with_a_message(call, words):
    with pytest.raises(ValueError) as e:
        call()
    assert words in str(e.value), str(e.value)


def test_a_failing_progress_callback_stops_the_call():
    def stop(done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        ede.band_power(np.random.default_rng(0).standard_normal((2, 200_000)), 256.0,
                       backend="cpu", progress=stop)


def test_the_kept_gpu_kernels_give_each_call_its_own_result(tmp_path):
    """The device and its kernels outlive a call (opening them costs ~0.2 s): calls on other data
    in between must not leak into a result. On CI the adapter is lavapipe, forced with "gpu"."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 5, 2048))
    first = ede.xapen(a, 256.0, backend="gpu")
    ede.xapen(b, 256.0, backend="gpu")
    np.testing.assert_array_equal(ede.xapen(a, 256.0, backend="gpu"), first)
    np.testing.assert_allclose(first, ede.xapen(a, 256.0, backend="cpu"), rtol=1e-6)
    data, info = ede.read_array(ecg_csv(tmp_path / "a.csv", seed=1))
    other, _ = ede.read_array(ecg_csv(tmp_path / "b.csv", seed=2))
    fits = ede.hermite(data[0], info["sfreq"], backend="gpu")
    ede.hermite(other[0], info["sfreq"], backend="gpu")
    again = ede.hermite(data[0], info["sfreq"], backend="gpu")
    np.testing.assert_array_equal(again["coefficients"], fits["coefficients"])
    cpu = ede.hermite(data[0], info["sfreq"], backend="cpu")
    np.testing.assert_allclose(fits["coefficients"], cpu["coefficients"], rtol=1e-3,
                               atol=1e-4 * np.abs(cpu["coefficients"]).max())


@pytest.mark.skipif(not EEGLAB.exists(), reason="needs ../shared/data")
def test_ica_gives_a_fitted_mne_ica_that_cleans(tmp_path):
    mne = pytest.importorskip("mne")
    raw = mne.io.read_raw_edf(EEGLAB, preload=True, verbose="error")
    raw.set_channel_types({"EOG1": "eog", "EOG2": "eog"})
    raw.set_eeg_reference("average", projection=False, verbose="error")
    fitted, labels = ede.ica(raw, n_components=15, exclude=[0, 3], backend="cpu")
    assert fitted.n_components_ == 15 and list(fitted.exclude) == [0, 3]
    assert fitted.ch_names == [c for c, t in zip(raw.ch_names, raw.get_channel_types())
                               if t == "eeg"]
    assert [c["index"] for c in labels["components"] if c["excluded"]] == [0, 3]
    # ICLabel's probabilities, per component, also where mne-icalabel leaves them.
    assert labels["iclabel_error"] is None
    assert fitted.labels_scores_.shape == (15, 7)
    np.testing.assert_allclose(fitted.labels_scores_.sum(axis=1), 1.0, atol=1e-6)
    classes = ("brain", "muscle", "eog", "ecg", "line_noise", "ch_noise", "other")
    assert set().union(*(fitted.labels_.get(k, []) for k in classes)) == set(range(15))
    sources = fitted.get_sources(raw).get_data()
    np.testing.assert_allclose(sources.std(axis=1), 1.0, rtol=0.02)
    # What ica.apply removes is the excluded components' part of the data, nothing else.
    cleaned = fitted.apply(raw.copy(), verbose="error").get_data(picks="eeg")
    removed = raw.get_data(picks="eeg") - cleaned
    mixing = fitted.get_components()[:, [0, 3]]
    part = mixing @ np.linalg.lstsq(mixing, removed, rcond=None)[0]
    np.testing.assert_allclose(part, removed, atol=1e-3 * np.abs(removed).max())


@pytest.mark.skipif(not EEGLAB.exists(), reason="needs ../shared/data")
def test_ica_picard_is_read_by_mne_as_picard(tmp_path):
    """Picard in extended Infomax's form: MNE reads the method and its parameters, and its
    sources are independent enough that their correlations vanish as ICA's should."""
    mne = pytest.importorskip("mne")
    raw = mne.io.read_raw_edf(EEGLAB, preload=True, verbose="error")
    raw.set_channel_types({"EOG1": "eog", "EOG2": "eog"})
    raw.set_eeg_reference("average", projection=False, verbose="error")
    fitted, labels = ede.ica(raw, method="picard", picard="infomax", n_components=10,
                             exclude="none", backend="cpu")
    assert fitted.method == "picard"
    assert fitted.fit_params["ortho"] is False and fitted.fit_params["extended"] is True
    assert fitted.fit_params["tol"] == pytest.approx(1e-7)
    sources = fitted.get_sources(raw).get_data()
    corr = np.corrcoef(sources)
    assert np.abs(corr - np.eye(10)).max() < 0.05
    with pytest.raises(ValueError, match="alpha"):
        ede.ica(raw, method="picard", alpha=1.5)


def test_ica_refuses_what_it_cannot_fit(tmp_path):
    mne = pytest.importorskip("mne")
    info = mne.create_info(["Fp1", "Fz", "Cz", "Pz"], 128.0, "eeg")
    raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(4, 1280)) * 1e-5, info,
                          verbose="error")
    with pytest.raises(ValueError, match="at least 2"):
        ede.ica(raw, n_components=1)
    with pytest.raises(ValueError, match="alpha"):
        ede.ica(raw, alpha=5)


@pytest.mark.skipif(not EEGLAB.exists(), reason="needs ../shared/data")
def test_ica_labels_equal_mne_icalabel_s_on_ede_s_file():
    """ICLabel as ede runs it equals mne-icalabel's `label_components` on ede's ICA file
    (skipped where mne-icalabel is not installed)."""
    mne = pytest.importorskip("mne")
    label_components = pytest.importorskip("mne_icalabel").label_components
    pytest.importorskip("onnxruntime")
    raw = mne.io.read_raw_edf(EEGLAB, preload=True, verbose="error")
    raw.set_channel_types({"EOG1": "eog", "EOG2": "eog"})
    raw.pick("eeg")
    raw.set_eeg_reference("average", projection=False, verbose="error")
    raw.set_montage("standard_1005", match_case=False, verbose="error")
    fitted, labels = ede.ica(raw, method="infomax", backend="cpu")
    ours = np.array([c["iclabel"] for c in labels["components"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        label_components(raw, fitted, method="iclabel")  # sets labels_scores_, all 7 classes
    theirs = fitted.labels_scores_
    np.testing.assert_allclose(ours, theirs, atol=1e-3)


@pytest.mark.skipif(not EEGLAB.exists(), reason="needs ../shared/data")
def test_ica_set_file_reads_in_mne_as_the_fit(tmp_path):
    """`ede ica --set`: MNE reads the EEGLAB dataset (samples, events, positions) and its ICA
    (`read_ica_eeglab`) has the maps of MNE's ICA file of the same fit."""
    mne = pytest.importorskip("mne")
    fif, eeglab = tmp_path / "fit-ica.fif", tmp_path / "fit.set"
    run = subprocess.run([sys.executable, "-m", "ede", "ica", str(EEGLAB), "--n-components", "12",
                          "--backend", "cpu", "--out", str(fif), "--set", str(eeglab)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = mne.io.read_raw_eeglab(eeglab, preload=True, verbose="error")
        from_set = mne.preprocessing.read_ica_eeglab(eeglab, verbose="error")
    assert raw.info["nchan"] == 30 and raw.n_times == 30464
    assert raw.get_montage() is not None and len(raw.annotations) > 0
    a = from_set.get_components()
    b = mne.preprocessing.read_ica(fif, verbose="error").get_components()
    r = np.abs((a / np.linalg.norm(a, axis=0) * b / np.linalg.norm(b, axis=0)).sum(axis=0))
    np.testing.assert_allclose(r, 1.0, atol=1e-9)


def test_epochs_averages_are_read_by_mne_as_its_own(tmp_path):
    """`ede epochs` on the sample: MNE reads its -ave.fif, and the averages equal MNE's Epochs
    on the same events with the same settings (the JSON and the file agree)."""
    mne = pytest.importorskip("mne")
    if not EEGLAB.exists():
        pytest.skip("the shared recordings are absent")
    out, ave = tmp_path / "erp.json", tmp_path / "erp-ave.fif"
    run("epochs", EEGLAB, "--events", "square", "--tmin", "-0.2", "--tmax", "0.8",
        "--baseline", "-0.2,0", "--reject", "eeg=150uV", "--out", out, "--ave", ave)
    evoked = mne.read_evokeds(ave, verbose="error")[0]
    assert evoked.comment == "square" and evoked.nave == 68
    raw = mne.io.read_raw_edf(EEGLAB, preload=True, verbose="error")
    raw.set_channel_types({"EOG1": "eog", "EOG2": "eog"})
    events, ids = mne.events_from_annotations(raw, verbose="error")
    theirs = mne.Epochs(raw, events, {"square": ids["square"]}, -0.2, 0.8, baseline=(-0.2, 0),
                        reject=dict(eeg=150e-6), preload=True, verbose="error").average()
    assert np.allclose(evoked.times, theirs.times)
    ours = evoked.copy().pick(theirs.ch_names).data
    assert np.abs(ours - theirs.data).max() < 1e-6 * np.abs(theirs.data).max()
    report = json.loads(out.read_text())
    assert report["conditions"]["square"]["n_epochs"] == 68
