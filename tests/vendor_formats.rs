//! The vendor formats (issue 64) read as MNE-Python 1.13 reads the same files in
//! `../shared/data/vendor`: labels, types, rate, length, every sample to a millionth of its
//! channel's RMS, events, start time and positions. The numbers are MNE's, made by
//! `tests/fixtures/make_vendor_fixture.py` into `vendor_mne.json`; the tests pass (with a note)
//! where the shared data are absent.

mod common;

use std::path::Path;

use common::shared_data;
use ede::recording::{ChannelType, OpenOptions, Recording, si_per_unit};
use serde_json::Value;

fn fixture() -> &'static Value {
    static FIXTURE: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vendor_mne.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    });
    &FIXTURE
}

/// The weights of the fixture's dot product: cos(0.618034 k).
fn weight(k: usize) -> f64 {
    (0.618034 * k as f64).cos()
}

/// MNE's channel type as ede has it: types ede does not tell apart are their nearest one.
fn ede_type(mne: &str) -> ChannelType {
    match mne {
        "seeg" | "ecog" | "dbs" => ChannelType::Eeg,
        other => ChannelType::from_mne_name(other).unwrap_or(ChannelType::Misc),
    }
}

/// The recording `name` of the fixture, opened from the shared data (`None` without them).
fn open(name: &str) -> Option<(Recording, &'static Value)> {
    let data = shared_data()?;
    let want = &fixture()[name];
    let path = data.join(want["path"].as_str().unwrap());
    let rec =
        Recording::open(&path, &OpenOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    Some((rec, want))
}

/// Compares everything the fixture holds for `name` with ede's reading.
fn reads_as_mne_does(name: &str) {
    let Some((rec, want)) = open(name) else {
        return;
    };
    let names: Vec<&str> = (want["ch_names"].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap())
        .collect();
    let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, names, "{name}: channel names");
    let types: Vec<ChannelType> = (want["types"].as_array().unwrap().iter())
        .map(|v| ede_type(v.as_str().unwrap()))
        .collect();
    let ours: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
    assert_eq!(ours, types, "{name}: channel types");

    let n = want["n_times"].as_u64().unwrap() as usize;
    let fs = want["sfreq"].as_f64().unwrap();
    for (c, s) in rec.signals.iter().enumerate() {
        assert_eq!(s.samples, n, "{name}: {} samples", s.label);
        assert!(
            (s.fs - fs).abs() < 1e-9 * fs,
            "{name}: rate {} vs {fs}",
            s.fs
        );
        samples_agree(name, &rec, c, &want["channels"][c]);
    }
    events_agree(name, &rec, want);
    positions_agree(name, &rec, want);
    if let Some(date) = want["meas_date"].as_str() {
        let measured = chrono::DateTime::parse_from_rfc3339(date)
            .unwrap()
            .naive_utc();
        let first = want["first_time"].as_f64().unwrap_or(0.0);
        let lag = (rec.start - measured).as_seconds_f64();
        assert!(
            (lag - first).abs() < 1e-6,
            "{name}: start {} vs MNE's {date} + {first} s",
            rec.start
        );
    }
}

/// Every sample to a millionth of the channel's RMS: the RMS, mean and weighted sum over all
/// of them, and three windows sample by sample.
fn samples_agree(name: &str, rec: &Recording, c: usize, want: &Value) {
    let s = &rec.signals[c];
    let scale = si_per_unit(&s.unit).map_or(1.0, |(_, k)| k);
    let x: Vec<f64> = (rec.read_all(c).unwrap().iter())
        .map(|&v| v as f64 * scale)
        .collect();
    let n = x.len() as f64;
    let rms = want["rms"].as_f64().unwrap();
    // f32 holds 24 bits: a sample far above the RMS is as exact as its own size allows.
    let tol = |b: f64| 1e-6 * rms + 1e-7 * b.abs() + 1e-30;
    let ours_rms = (x.iter().map(|v| v * v).sum::<f64>() / n).sqrt();
    let mean = x.iter().sum::<f64>() / n;
    let dot: f64 = x.iter().enumerate().map(|(k, v)| v * weight(k)).sum();
    let label = &s.label;
    assert!(
        (ours_rms - rms).abs() <= tol(rms),
        "{name}: {label} RMS {ours_rms:e} vs MNE {rms:e} ({})",
        s.unit
    );
    let m = want["mean"].as_f64().unwrap();
    assert!(
        (mean - m).abs() <= tol(m),
        "{name}: {label} mean {mean:e} vs {m:e}"
    );
    let d = want["dot"].as_f64().unwrap();
    assert!(
        (dot - d).abs() <= tol(d) * n.sqrt(),
        "{name}: {label} weighted sum {dot:e} vs {d:e}"
    );
    let mid = want["mid_at"].as_u64().unwrap() as usize;
    let tail = x.len() - want["tail"].as_array().unwrap().len();
    for (key, from) in [("head", 0), ("mid", mid), ("tail", tail)] {
        for (k, b) in want[key].as_array().unwrap().iter().enumerate() {
            let (a, b) = (x[from + k], b.as_f64().unwrap_or(f64::NAN));
            assert!(
                (a - b).abs() <= tol(b) || (a.is_nan() && b.is_nan()),
                "{name}: {label} sample {}: ede {a:e}, MNE {b:e}",
                from + k
            );
        }
    }
}

/// The file's annotations as MNE's, and each stimulus channel's events as `find_events`
/// finds them (ede ties those to their channel).
fn events_agree(name: &str, rec: &Recording, want: &Value) {
    let stim: Vec<&str> = (rec.signals.iter())
        .filter(|s| s.kind == ChannelType::Stim)
        .map(|s| s.label.as_str())
        .collect();
    let of_file: Vec<_> = (rec.annotations.iter())
        .filter(|a| a.channel().is_none_or(|c| !stim.contains(&c)))
        .collect();
    // MNE annotates each step of EGI's event channels with the channel's name as well: ede
    // shows those once, as the channel's events.
    let (on_stim, theirs): (Vec<&Value>, Vec<&Value>) = (want["annotations"].as_array().unwrap())
        .iter()
        .partition(|b| stim.contains(&b["description"].as_str().unwrap()));
    for b in on_stim {
        let channel = b["description"].as_str().unwrap();
        let onset = b["onset"].as_f64().unwrap();
        assert!(
            (rec.annotations.iter())
                .any(|a| a.channel() == Some(channel) && (a.onset - onset).abs() < 1e-6),
            "{name}: no event of {channel} at {onset} s"
        );
    }
    let described: Vec<String> = (of_file.iter())
        .map(|a| format!("{} {} {}", a.onset, a.duration, a.text))
        .collect();
    assert_eq!(
        of_file.len(),
        theirs.len(),
        "{name}: annotations {described:?} vs MNE {theirs:?}"
    );
    for (a, b) in of_file.iter().zip(theirs) {
        let close = |x: f64, key: &str| (x - b[key].as_f64().unwrap()).abs() < 1e-6;
        assert!(
            close(a.onset, "onset")
                && close(a.duration, "duration")
                && a.text == b["description"].as_str().unwrap(),
            "{name}: {a:?} vs MNE {b}"
        );
    }
    let fs = rec.signals.first().map_or(1.0, |s| s.fs);
    let first = want["first_time"].as_f64().unwrap_or(0.0);
    for (channel, events) in want["events"].as_object().unwrap() {
        let Some(events) = events.as_array() else {
            continue;
        };
        let ours: Vec<(f64, String)> = (rec.annotations.iter())
            .filter(|a| a.channel() == Some(channel.as_str()))
            .map(|a| (a.onset, a.description().to_string()))
            .collect();
        let theirs: Vec<(f64, String)> = (events.iter())
            .map(|e| {
                let sample = e[0].as_f64().unwrap();
                (sample / fs - first, e[2].as_i64().unwrap().to_string())
            })
            .collect();
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{name}: {channel} events {ours:?} vs {theirs:?}"
        );
        for (a, b) in ours.iter().zip(&theirs) {
            assert!(
                (a.0 - b.0).abs() < 1e-6 && a.1 == b.1,
                "{name}: {channel} event {a:?} vs MNE {b:?}"
            );
        }
    }
}

/// Positions where MNE has them, in head coordinates: MNE keeps MEG sensors in the device
/// frame, carried into the head frame here by its `dev_head_t`.
fn positions_agree(name: &str, rec: &Recording, want: &Value) {
    let t: Option<Vec<Vec<f64>>> = (want["dev_head_t"].as_array()).map(|rows| {
        rows.iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect()
            })
            .collect()
    });
    for (c, s) in rec.signals.iter().enumerate() {
        let Some(loc) = want["loc"][c].as_array() else {
            assert!(
                s.position.is_none(),
                "{name}: {} has a position MNE lacks",
                s.label
            );
            continue;
        };
        let loc: Vec<f64> = loc.iter().map(|v| v.as_f64().unwrap()).collect();
        let meg = matches!(
            s.kind,
            ChannelType::Mag | ChannelType::Grad | ChannelType::RefMeg
        );
        let head: Vec<f64> = match (&t, meg) {
            (Some(t), true) => (0..3)
                .map(|i| t[i][0] * loc[0] + t[i][1] * loc[1] + t[i][2] * loc[2] + t[i][3])
                .collect(),
            _ => loc,
        };
        let p = s
            .position
            .unwrap_or_else(|| panic!("{name}: {} has no position; MNE: {head:?}", s.label));
        for (a, b) in p.iter().zip(&head) {
            assert!(
                (a - b).abs() < 1e-6,
                "{name}: {} at {p:?}, MNE {head:?}",
                s.label
            );
        }
    }
}

#[test]
fn nihon_kohden_reads_as_mne_does() {
    reads_as_mne_does("nihon_kohden");
}

#[test]
fn neuroscan_reads_as_mne_does() {
    reads_as_mne_does("neuroscan");
}

#[test]
fn mff_reads_as_mne_does() {
    reads_as_mne_does("mff");
}

#[test]
fn egi_raw_reads_as_mne_does() {
    reads_as_mne_does("egi_raw");
}

#[test]
fn ctf_reads_as_mne_does() {
    reads_as_mne_does("ctf");
}

#[test]
fn persyst_reads_as_mne_does() {
    reads_as_mne_does("persyst");
}

#[test]
fn curry_reads_as_mne_does() {
    reads_as_mne_does("curry");
}

#[test]
fn ant_reads_as_mne_does() {
    reads_as_mne_does("ant");
}

#[test]
fn kit_reads_as_mne_does() {
    reads_as_mne_does("kit");
}

/// The channels of `twin` that `native` has too (by `name(label)`), sample by sample in one
/// unit to `tolerance(channel of twin)` (its own unit): a vendor file and the export its
/// system or MNE made of it hold the same recording. Returns how many channels matched.
fn twins_agree(
    native: &Recording,
    twin: &Recording,
    name: impl Fn(&str) -> String,
    tolerance: impl Fn(&Recording, usize) -> f64,
) -> usize {
    let mut matched = 0;
    for (t, s) in twin.signals.iter().enumerate() {
        let Some(n) = (native.signals.iter()).position(|x| name(&x.label) == name(&s.label)) else {
            continue;
        };
        let scale = match (si_per_unit(&native.signals[n].unit), si_per_unit(&s.unit)) {
            (Some((a, ka)), Some((b, kb))) if a == b => ka / kb,
            _ => 1.0,
        };
        let len = s.samples.min(native.signals[n].samples);
        assert!(
            len + 1 >= s.samples.max(native.signals[n].samples),
            "{}: {} samples natively, {} in the twin",
            s.label,
            native.signals[n].samples,
            s.samples
        );
        let a = native.read_all(n).unwrap();
        let b = twin.read_all(t).unwrap();
        let tol = tolerance(twin, t);
        for k in 0..len {
            let (x, y) = (a[k] as f64 * scale, b[k] as f64);
            assert!(
                (x - y).abs() <= tol,
                "{} sample {k}: native {x}, twin {y} {} (tolerance {tol})",
                s.label,
                s.unit
            );
        }
        matched += 1;
    }
    matched
}

/// One step of an EDF/BDF channel's digital scale, in its physical unit.
fn edf_step(rec: &Recording, c: usize) -> f64 {
    let s = &rec.signals[c];
    let bits = if rec.format.edf_family() == Some("bdf") {
        24
    } else {
        16
    };
    (s.physical_max - s.physical_min) / ((1u64 << bits) - 1) as f64
}

/// The Nihon Kohden file and the EDF the system exported from it: every channel, to the
/// EDF's resolution (its step, and MNE's asymmetric range of the DC inputs, 7.2e-4 mV), the
/// same start and length. The EDF names channels "EEG Fp1-Ref" and "POL E" where the native
/// file says "Fp1" and "E".
#[test]
fn nihon_kohden_equals_its_edf_export() {
    let Some(data) = shared_data() else { return };
    let options = OpenOptions::default();
    let native = Recording::open(&data.join("vendor/nihonkohden/MB0400FU.EEG"), &options).unwrap();
    let edf = Recording::open(&data.join("edf/nihonkohden_MB0400FU.edf"), &options).unwrap();
    let bare = |l: &str| {
        let l = l.trim();
        let l = l
            .strip_prefix("POL ")
            .or_else(|| l.strip_prefix("EEG "))
            .unwrap_or(l);
        l.strip_suffix("-Ref").unwrap_or(l).to_ascii_uppercase()
    };
    let matched = twins_agree(&native, &edf, bare, |r, c| edf_step(r, c) + 1e-3);
    assert_eq!(matched, native.signals.len());
    assert_eq!(native.start, edf.start);
}

/// The Curry 8 file and the BDF it holds: C3, C4 and Cz to a thousandth of a microvolt (the
/// BDF's float32 steps), and Curry's events at the BDF trigger's steps with their codes (Curry
/// adds a "50000" one sample after each).
#[test]
fn curry_equals_its_bdf() {
    let Some(data) = shared_data() else { return };
    let options = OpenOptions::default();
    let curry = Recording::open(
        &data.join("vendor/curry/test_bdf_stim_channel Curry 8.cdt"),
        &options,
    )
    .unwrap();
    let bdf = Recording::open(&data.join("bdf/test_bdf_stim_channel.bdf"), &options).unwrap();
    let same = |l: &str| l.trim().to_ascii_uppercase();
    assert_eq!(twins_agree(&curry, &bdf, same, |_, _| 2e-3), 3);
    let codes: Vec<(f64, &str)> = (curry.annotations.iter())
        .filter(|a| a.text != "50000")
        .map(|a| (a.onset, a.text.as_str()))
        .collect();
    let steps: Vec<(f64, &str)> = (bdf.annotations.iter())
        .filter(|a| a.channel() == Some("Status"))
        .map(|a| (a.onset, a.description()))
        .collect();
    assert_eq!(codes.len(), 9);
    assert_eq!(codes, steps);
}

/// The ANT eego file and its BrainVision export: all 88 channels sample by sample (to the
/// export's float32 steps at tens of millivolts), the same length and rate.
#[test]
fn ant_equals_its_brainvision_export() {
    let Some(data) = shared_data() else { return };
    let options = OpenOptions::default();
    let dir = data.join("vendor/ant/CA_208");
    let ant = Recording::open(&dir.join("test_CA_208.cnt"), &options).unwrap();
    let vhdr = Recording::open(&dir.join("test_CA_208.vhdr"), &options).unwrap();
    let same = |l: &str| l.trim().to_string();
    assert_eq!(twins_agree(&ant, &vhdr, same, |_, _| 0.02), 88);
    assert_eq!(ant.signals[0].samples, vhdr.signals[0].samples);
}
