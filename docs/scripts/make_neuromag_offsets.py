"""Make a synthetic Neuromag-like (Vectorview, 306 MEG channels) raw FIF with large DC offsets.

The file is for trying ede's display of MEG data whose channels sit on offsets much larger than
their signals (a magnetometer at about -2 pT carrying a ~3.5 pT signal, a gradiometer at
+-(50-200) fT/cm carrying 200-400 fT/cm), as unfiltered Neuromag recordings often do. It is
NOT checked in: it is about 76 MB.

  python3 -m venv /work/pyenv && /work/pyenv/bin/pip install numpy scipy mne
  /work/pyenv/bin/python docs/scripts/make_neuromag_offsets.py [OUT.fif]

OUT defaults to /tmp/neuromag306_offsets_raw.fif. The output is reproducible (fixed seed).

Channels (313), in the order of a Vectorview recording:
  MEG 0113, MEG 0112, MEG 0111, ...  102 triplets (grad, grad, mag), names and 2D positions
      from MNE's 'Vectorview-all' layout. mne.create_info gives them the Neuromag coil types
      (FIFFV_COIL_VV_PLANAR_T1 = 3012 in T/m, FIFFV_COIL_VV_MAG_T3 = 3024 in T); positions are
      the layout's projected onto a 12 cm sphere in device coordinates, with the coil frame
      (ex, ey, ez) set so that the two gradiometers of a triplet are orthogonal and tangential
      and ez points outwards.
  EEG 001..004   at Fp1, Cz, Pz, Oz; 20-50 uV signals on offsets of 2-6 mV.
  EOG 061        blinks (~150 uV) on a small offset and drift.
  ECG 063        PQRST complexes, ~1 mV R waves, 55-80 beats/min with variability.
  STI 014        a few step events (values 1, 2, 4, 8; 50-200 ms long, one held 2 s).

Signals are mixtures, not sinusoids: alpha bursts (8.5-11.5 Hz band-limited noise under random
burst envelopes), 1/f (pink) noise, a cardiac (MCG) component, a blink component on frontal
sensors and white sensor noise. The MEG sources have smooth dipolar field patterns over the
helmet; a gradiometer sees the spatial derivative of the magnetometer pattern along its own
direction, so grads and mags of one triplet are coherent.
"""

import sys

import mne
import numpy as np
from mne.io.constants import FIFF
from scipy import signal

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/neuromag306_offsets_raw.fif"
FS = 1000.0
DURATION_S = 60.0
N = int(FS * DURATION_S)
SEED = 306
SPHERE_R = 0.12  # m, sensor sphere radius in device coordinates
FT_CM = 1e-13  # 1 fT/cm in T/m

rng = np.random.default_rng(SEED)
t = np.arange(N) / FS


# ---------------------------------------------------------------- source time courses
def pink(n, alpha=1.0):
    """1/f^alpha noise (power), unit standard deviation."""
    spec = rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)
    f = np.fft.rfftfreq(n, 1 / FS)
    f[0] = f[1]
    x = np.fft.irfft(spec * f ** (-alpha / 2), n)
    return (x - x.mean()) / x.std()


def band_noise(lo, hi):
    sos = signal.butter(4, [lo, hi], "bandpass", fs=FS, output="sos")
    x = signal.sosfiltfilt(sos, rng.standard_normal(N))
    return x / x.std()


def burst_envelope(rate_hz=0.35, base=0.15):
    """Random bursts (Poisson onsets, 0.5-2.5 s Hann-shaped) on a low baseline."""
    env = np.full(N, base)
    n_bursts = rng.poisson(rate_hz * DURATION_S)
    for onset in rng.uniform(0, DURATION_S, n_bursts):
        length = int(rng.uniform(0.5, 2.5) * FS)
        first = int(onset * FS)
        w = np.hanning(length) * rng.uniform(0.6, 1.4)
        last = min(N, first + length)
        env[first:last] += w[: last - first]
    return env


def alpha_source():
    return band_noise(8.5, 11.5) * burst_envelope()


def heartbeats():
    """PQRST complexes (R = 1), irregular R-R intervals; returns (waveform, R sample indices)."""
    x = np.zeros(N)
    peaks = []
    beat = rng.uniform(0.2, 0.6)
    rr_mean = 60.0 / rng.uniform(55, 80)
    waves = [  # (latency s, amplitude, width s): P, Q, R, S, T
        (-0.20, 0.12, 0.025), (-0.03, -0.15, 0.010), (0.0, 1.0, 0.008),
        (0.025, -0.25, 0.010), (0.25, 0.30, 0.050),
    ]
    while beat < DURATION_S + 0.5:
        for lat, amp, width in waves:
            x += amp * np.exp(-0.5 * ((t - beat - lat) / width) ** 2)
        if beat < DURATION_S:
            peaks.append(int(beat * FS))
        beat += rr_mean * (1 + 0.05 * rng.standard_normal())
    return x, peaks


def blinks():
    """Blinks (peak 1, ~0.4 s, skewed) every 2-7 s; returns (waveform, onset times)."""
    x = np.zeros(N)
    onsets = []
    when = rng.uniform(0.5, 3.0)
    tau = 0.06
    while when < DURATION_S:
        s = np.clip(t - when, 0.0, None)
        shape = (s / (2 * tau)) ** 2 * np.exp(2 - s / tau)  # gamma-like, peak 1 at 2 tau
        x += shape * rng.uniform(0.7, 1.3)
        onsets.append(round(when, 3))
        when += rng.uniform(2.0, 7.0)
    return x, onsets


# ---------------------------------------------------------------- sensor geometry
layout = mne.channels.read_layout("Vectorview-all")
names = list(layout.names)
assert len(names) == 306
centers = layout.pos[:, :2] + layout.pos[:, 2:] / 2
triplet_center = {}
for name, c in zip(names, centers):
    triplet_center.setdefault(name[:-1], []).append(c)
triplet_center = {k: np.mean(v, axis=0) for k, v in triplet_center.items()}
all_c = np.array(list(triplet_center.values()))
mid = (all_c.min(axis=0) + all_c.max(axis=0)) / 2
half = (all_c.max(axis=0) - all_c.min(axis=0)).max() / 2


def sphere_point(c2d):
    """Inverse azimuthal-equidistant projection of a layout point onto the sensor sphere."""
    x, y = (c2d - mid) / half
    r = np.hypot(x, y)
    theta = r * np.deg2rad(105)  # the layout's rim sits a little below the equator
    phi = np.arctan2(y, x)
    return np.array([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)])


def coil_frame(u, rotate):
    """(ex, ey, ez) for a coil at unit position u; rotate swaps ex/ey (second gradiometer)."""
    ez = u
    ref = np.array([0.0, 0.0, 1.0]) if abs(u[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
    ex = np.cross(ref, ez)
    ex /= np.linalg.norm(ex)
    ey = np.cross(ez, ex)
    return (ey, -ex, ez) if rotate else (ex, ey, ez)


kinds = ["mag" if n.endswith("1") else "grad" for n in names]
unit_pos = np.array([sphere_point(triplet_center[n[:-1]]) for n in names])
frames = []
for name, kind, u in zip(names, kinds, unit_pos):
    frames.append(coil_frame(u, rotate=(kind == "grad" and name.endswith("3"))))


# ---------------------------------------------------------------- field patterns
def random_source(center_dir=None, spread=0.5):
    """A smooth dipolar pattern over the helmet: + lobe and - lobe either side of a point."""
    if center_dir is None:
        center_dir = rng.standard_normal(3)
        center_dir[2] = abs(center_dir[2])
    c = np.asarray(center_dir, float)
    c /= np.linalg.norm(c)
    tangent = np.cross(c, rng.standard_normal(3))
    tangent /= np.linalg.norm(tangent)

    def field(p):  # p: (..., 3) on/near the unit sphere
        p = p / np.linalg.norm(p, axis=-1, keepdims=True)
        ang = np.arccos(np.clip(p @ c, -1, 1))
        return (p @ tangent) / spread * np.exp(-0.5 * (ang / spread) ** 2)

    return field


def sensor_weights(field):
    """Magnetometer: the field at the sensor. Gradiometer: its derivative along ex (per m)."""
    w = np.empty(len(names))
    h = 0.01  # step on the unit sphere
    for i, (kind, u, (ex, _, _)) in enumerate(zip(kinds, unit_pos, frames)):
        if kind == "mag":
            w[i] = field(u)
        else:
            w[i] = (field(u + h * ex) - field(u - h * ex)) / (2 * h * SPHERE_R)
    return w


ecg_wave, r_peaks = heartbeats()
blink_wave, blink_onsets = blinks()

sources = []  # (time course, field, gain)
posterior = np.array([0.0, -1.0, 0.6])  # layout y grows to the front
for _ in range(3):
    sources.append((alpha_source(), random_source(posterior + 0.4 * rng.standard_normal(3), 0.45), 1.6))
for _ in range(8):
    sources.append((pink(N, rng.uniform(0.9, 1.4)), random_source(None, rng.uniform(0.3, 0.7)), 1.0))
sources.append((ecg_wave, random_source([0.3, -0.3, -0.4], 0.8), 3.0))  # MCG, from below
sources.append((blink_wave, random_source([0.0, 1.0, 0.1], 0.35), 2.0))  # eyes, front

meg = np.zeros((len(names), N))
for course, field, gain in sources:
    w = sensor_weights(field)
    for kind in ("mag", "grad"):
        sel = np.array(kinds) == kind
        meg[sel] += gain * np.outer(w[sel] / np.abs(w[sel]).max(), course)
for i in range(len(names)):  # sensor noise: a little 1/f and white, own to each channel
    meg[i] += 0.25 * pink(N, 1.0) + 0.08 * rng.standard_normal(N)

for i, kind in enumerate(kinds):
    x = meg[i] - meg[i].mean()
    if kind == "mag":
        ptp = rng.uniform(3.0, 4.0) * 1e-12  # T, around 3.5 pT
        offset = rng.uniform(-2.5, -1.5) * 1e-12
    else:
        ptp = rng.uniform(200, 400) * FT_CM  # T/m
        offset = rng.choice([-1, 1]) * rng.uniform(50, 200) * FT_CM
    meg[i] = x * (ptp / np.ptp(x)) + offset

# ---------------------------------------------------------------- EEG, EOG, ECG, STIM
eeg_names = ["EEG 001", "EEG 002", "EEG 003", "EEG 004"]
eeg_sites = ["Fp1", "Cz", "Pz", "Oz"]
alpha_weight = [0.2, 0.6, 1.2, 1.6]
blink_weight = [2.5, 0.4, 0.1, 0.05]
common_alpha = alpha_source()
eeg = np.zeros((4, N))
for k in range(4):
    x = (pink(N, 1.2) + alpha_weight[k] * common_alpha + 0.5 * alpha_source()
         + blink_weight[k] * blink_wave + 0.1 * rng.standard_normal(N))
    x -= x.mean()
    ptp = rng.uniform(20, 50) * 1e-6
    offset = rng.choice([-1, 1]) * rng.uniform(2, 6) * 1e-3
    eeg[k] = x * (ptp / np.ptp(x)) + offset

eog = (150e-6 * blink_wave + 8e-6 * pink(N, 1.5) + 2e-6 * rng.standard_normal(N)
       + 20e-6 * np.sin(2 * np.pi * 0.05 * t + rng.uniform(0, 6)) + 0.4e-3)
ecg = (1e-3 * ecg_wave + 40e-6 * np.sin(2 * np.pi * 0.25 * t)
       + 10e-6 * rng.standard_normal(N) - 0.2e-3)

stim = np.zeros(N)
events = [(4.0, 1, 0.05), (9.5, 2, 0.1), (15.2, 1, 0.05), (22.0, 4, 0.2),
          (30.0, 8, 2.0), (37.7, 2, 0.1), (44.1, 1, 0.05), (52.6, 4, 0.2)]
for onset, value, dur in events:
    stim[int(onset * FS): int((onset + dur) * FS)] = value

# ---------------------------------------------------------------- info and file
ch_names = names + eeg_names + ["EOG 061", "ECG 063", "STI 014"]
ch_types = kinds + ["eeg"] * 4 + ["eog", "ecg", "stim"]
info = mne.create_info(ch_names, FS, ch_types)
for i, (u, (ex, ey, ez)) in enumerate(zip(unit_pos, frames)):
    ch = info["chs"][i]
    assert ch["coil_type"] in (FIFF.FIFFV_COIL_VV_PLANAR_T1, FIFF.FIFFV_COIL_VV_MAG_T3)
    ch["loc"][:] = np.concatenate([SPHERE_R * u, ex, ey, ez])
    ch["coord_frame"] = FIFF.FIFFV_COORD_DEVICE
# Head origin about 4 cm below the device origin, no rotation.
info["dev_head_t"] = mne.transforms.Transform(
    "meg", "head", mne.transforms.translation(0.0, 0.0, 0.04))
info["line_freq"] = 50.0
info["description"] = "synthetic Neuromag-like recording with DC offsets (ede docs/scripts)"
data = np.vstack([meg, eeg, eog, ecg, stim])
raw = mne.io.RawArray(data, info, verbose="error")
# 'standard_1020' is deprecated from MNE 1.13 in favour of 'colin27_1020'.
montages = mne.channels.get_builtin_montages()
std = mne.channels.make_standard_montage(
    "colin27_1020" if "colin27_1020" in montages else "standard_1020").get_positions()["ch_pos"]
raw.set_montage(mne.channels.make_dig_montage(
    ch_pos={n: std[s] for n, s in zip(eeg_names, eeg_sites)}, coord_frame="head"))
raw.set_meas_date(1_700_000_000)
raw.save(OUT, overwrite=True, verbose="error")


# ---------------------------------------------------------------- summary and read-back
def summary(r, title):
    print(title)
    x = r.get_data()
    types = np.array(r.get_channel_types())
    scale = {"mag": (1e12, "pT"), "grad": (1e13, "fT/cm"), "eeg": (1e6, "uV"),
             "eog": (1e6, "uV"), "ecg": (1e6, "uV"), "stim": (1.0, "")}
    for kind in ("mag", "grad", "eeg", "eog", "ecg", "stim"):
        sel = types == kind
        f, unit = scale[kind]
        means = x[sel].mean(axis=1) * f
        ptps = np.ptp(x[sel], axis=1) * f
        print("  %-4s n=%3d  mean offset %10.3f %-5s (per channel %.3f..%.3f)  "
              "p-p %9.3f (%.3f..%.3f)" % (kind, sel.sum(), means.mean(), unit, means.min(),
                                           means.max(), ptps.mean(), ptps.min(), ptps.max()))


print("wrote %s: %d channels, %.0f Hz, %.0f s" % (OUT, len(ch_names), FS, DURATION_S))
summary(raw, "as made:")
back = mne.io.read_raw_fif(OUT, preload=True, verbose="error")
summary(back, "read back:")
assert back.ch_names == ch_names
coils = sorted({(c["coil_type"], c["unit"]) for c in back.info["chs"] if c["kind"] == FIFF.FIFFV_MEG_CH})
print("  MEG coil types/units read back:", [(int(a), int(b)) for a, b in coils])
rel = np.abs(back.get_data() - data).max(axis=1) / np.maximum(np.abs(data).max(axis=1), 1e-30)
print("  largest relative difference after the round trip (float32 storage): %.2e" % rel.max())
print("  events:", mne.find_events(back, stim_channel="STI 014", verbose="error").tolist())
print("  %d heartbeats, %d blinks (onsets s: %s)" % (len(r_peaks), len(blink_onsets),
                                                       blink_onsets))
