"""The Python package against the `ede` command line on the same files, MNE Raw in and out, and
bad input raising with ede's message. Run by .ci/run in a fresh virtual environment."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ede

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
SPLIT = FIXTURES / "fif_split_raw.fif"
ANNOTATED = FIXTURES / "fif_channel_annotations_raw.fif"
# The console script beside this interpreter (the environment need not be activated).
EDE = str(Path(sys.executable).with_name("ede"))


def cli(*args):
    """The console script's JSON for `ede ARGS --out ...`."""
    out = subprocess.run(
        [EDE, *map(str, args)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def test_console_script_runs_the_command_line():
    out = subprocess.run([EDE, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"ede {ede.__version__} ({ede.__commit__})"
    assert ede.__commit__ != "unknown"
    bad = subprocess.run([EDE, "xapen"], capture_output=True, text=True)
    assert bad.returncode == 2 and "FILES" in bad.stderr


def test_xapen_on_an_array_equals_the_cli():
    want = cli("xapen", SPLIT, "--epochs", 4, "--backend", "cpu")
    data, info = ede.read_array(SPLIT)
    got = ede.xapen(data, info["sfreq"], epochs=4, backend="cpu")
    assert got.shape == (2, 2)
    np.testing.assert_allclose(got, np.array(want["matrix"]), rtol=1e-9, atol=0)


def test_xapen_on_an_mne_raw_equals_the_cli():
    mne = pytest.importorskip("mne")
    raw = mne.io.read_raw_fif(SPLIT, preload=True, verbose="error")
    for kw, args in [
        (dict(epochs=3, m=2, r=0.3), ["--epochs", 3, "--m", 2, "--r", 0.3]),
        (dict(epochs=2, start=1.5, correction="zero"),
         ["--epochs", 2, "--start", 1.5, "--correction", "zero"]),
    ]:
        want = cli("xapen", SPLIT, "--backend", "cpu", *args)
        got = ede.xapen(raw, backend="cpu", **kw)
        np.testing.assert_allclose(got, np.array(want["matrix"]), rtol=1e-9, atol=0)
    # picks as MNE's: one name gives a 1 x 1 matrix; bad channels are left out unless picked.
    assert ede.xapen(raw, picks=["EEG 002"], epochs=1, backend="cpu").shape == (1, 1)
    raw.info["bads"] = ["EEG 001"]
    assert ede.xapen(raw, epochs=1, backend="cpu").shape == (1, 1)
    assert ede.xapen(raw, picks=["EEG 001", "EEG 002"], epochs=1, backend="cpu").shape == (2, 2)
    assert ede.xapen(raw, picks="eeg", epochs=1, backend="cpu").shape == (1, 1)


def test_a_flat_channel_is_nan():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((3, 4096))
    data[1] = 5.0
    m = ede.xapen(data, 256.0, epochs=2, backend="cpu")
    assert np.isnan(m[1]).all() and np.isnan(m[:, 1]).all()
    assert np.isfinite(m[[0, 2]][:, [0, 2]]).all()


def test_read_raw_is_what_mne_reads():
    mne = pytest.importorskip("mne")
    for path in [SPLIT, ANNOTATED]:
        ours = ede.read_raw(path)
        theirs = mne.io.read_raw_fif(path, preload=True, verbose="error")
        assert ours.ch_names == theirs.ch_names
        assert ours.get_channel_types() == theirs.get_channel_types()
        assert ours.info["sfreq"] == theirs.info["sfreq"]
        np.testing.assert_allclose(ours.get_data(), theirs.get_data(), rtol=1e-6, atol=1e-12)
        assert len(ours.annotations) == len(theirs.annotations)
        assert list(ours.annotations.description) == list(theirs.annotations.description)
        assert ours.annotations.ch_names.tolist() == theirs.annotations.ch_names.tolist()
        np.testing.assert_allclose(ours.annotations.onset - ours.first_time,
                                   theirs.annotations.onset - theirs.first_time, atol=1e-3)


def test_read_array_gives_si_units_and_annotations():
    data, info = ede.read_array(ANNOTATED)
    assert data.dtype == np.float64 and data.shape[0] == len(info["ch_names"])
    assert set(info["units"]) <= {"V", "T", "T/m", ""} or info["units"]
    assert len(info["annotations"]["onset"]) > 0
    assert info["meas_date"][:4].isdigit()


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: ede.xapen(np.full((2, 2048), np.nan), 100.0), ValueError, "NaN"),
        (lambda: ede.xapen(np.zeros(2048), 100.0), ValueError, "(n_channels, n_samples)"),
        (lambda: ede.xapen(np.zeros((2, 2048))), ValueError, "sfreq"),
        (lambda: ede.xapen(np.zeros((2, 2048)), -1.0), ValueError, "sfreq"),
        (lambda: ede.xapen(np.zeros((0, 2048)), 100.0), ValueError, "shape"),
        (lambda: ede.xapen(np.ones((2, 2048)), 100.0, correction="most"), ValueError, "correction"),
        (lambda: ede.xapen(np.ones((2, 2048)), 100.0, backend="tpu"), ValueError, "backend"),
        (lambda: ede.xapen(np.ones((2, 2048)), 100.0, epoch_len=4096), ValueError, "epoch"),
        (lambda: ede.xapen(np.ones((2, 2048)), 100.0, epochs=0), ValueError, "epochs"),
        (lambda: ede.xapen([["a", "b"]], 100.0), ValueError, "numbers"),
        (lambda: ede.read_array("/nonexistent/x.edf"), OSError, "x.edf"),
        (lambda: ede.view("/nonexistent/x.edf"), OSError, "x.edf"),
    ],
)
def test_bad_input_raises_with_a_message(call, error, words):
    with pytest.raises(error, match=None) as e:
        call()
    assert words in str(e.value), str(e.value)


def test_an_unreadable_file_raises_os_error(tmp_path):
    garbage = tmp_path / "garbage.edf"
    garbage.write_bytes(b"0       not an edf header at all")
    with pytest.raises(OSError) as e:
        ede.read_array(garbage)
    assert "garbage.edf" in str(e.value)


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs xvfb-run")
def test_the_viewer_starts_and_exits_under_xvfb(tmp_path):
    png = tmp_path / "page.png"
    env = dict(os.environ, WGPU_BACKEND=os.environ.get("WGPU_BACKEND", "vulkan"))
    subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-m", "ede",
         str(SPLIT), "--screenshot", str(png)],
        env=env, check=True, timeout=300, capture_output=True,
    )
    assert png.stat().st_size > 10_000


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs xvfb-run")
def test_view_opens_a_raw_without_blocking_and_exits(tmp_path):
    pytest.importorskip("mne")
    png = tmp_path / "raw.png"
    env = dict(os.environ, WGPU_BACKEND=os.environ.get("WGPU_BACKEND", "vulkan"))
    # ede.view hands the Raw over as a FIF and returns at once; the process draws and exits.
    script = (
        "import sys, time, ede\n"
        f"raw = ede.read_raw({str(ANNOTATED)!r})\n"
        "t = time.perf_counter()\n"
        f"p = ede.view(raw, screenshot={str(png)!r})\n"
        "assert time.perf_counter() - t < 5, 'view blocked'\n"
        "sys.exit(p.wait(timeout=280))\n"
    )
    subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c",
                    script], env=env, check=True, timeout=300, capture_output=True)
    assert png.stat().st_size > 10_000


def test_read_raw_takes_an_xdf_stream_by_name():
    pytest.importorskip("mne")
    eeg = ede.read_raw(FIXTURES / "streams.xdf")
    assert eeg.ch_names == ["Fp1", "Fp2", "Cz", "EOG"] and eeg.info["sfreq"] == 100.0
    accel = ede.read_raw(FIXTURES / "streams.xdf", stream="Accel")
    assert len(accel.ch_names) == 2 and accel.info["sfreq"] == 50.0
    with pytest.raises(OSError) as e:
        ede.read_raw(FIXTURES / "streams.xdf", stream="Gaze")
    assert "Gaze" in str(e.value)


@pytest.mark.parametrize("name, reader", [
    ("bv_int16.vhdr", "read_raw_brainvision"),
    ("bv_float32.vhdr", "read_raw_brainvision"),
    ("set_inline.set", "read_raw_eeglab"),
    ("set_twofile.set", "read_raw_eeglab"),
])
def test_read_raw_of_other_formats_is_what_mne_reads(name, reader):
    mne = pytest.importorskip("mne")
    ours = ede.read_raw(FIXTURES / name)
    theirs = getattr(mne.io, reader)(FIXTURES / name, preload=True, verbose="error")
    assert ours.ch_names == theirs.ch_names
    assert ours.info["sfreq"] == theirs.info["sfreq"]
    np.testing.assert_allclose(ours.get_data(), theirs.get_data(), rtol=1e-6, atol=1e-12)

    def events(raw):
        return [(round(o - raw.first_time, 3), number(d))
                for o, d in zip(raw.annotations.onset, raw.annotations.description)]
    assert events(ours) == events(theirs)


def number(text):
    """An event text, numbers as numbers: EEGLAB's numeric event type 1 is "1" to ede (as
    EEGLAB shows it) and "1.0" to MNE."""
    try:
        return float(text)
    except ValueError:
        return text
