//! The research formats against what MNE-Python reads from the same files: the fixtures in
//! `tests/fixtures/` were written by pybv / MNE-Python / eeglabio (4D's, which no tool writes,
//! by the script itself in the layout MNE-Python reads) and read back by MNE-Python into
//! `<name>.expected.json` (`tests/fixtures/make_fixtures.py` makes them again).

mod common;

use std::path::{Path, PathBuf};

use ede::recording::{ChannelType, Format, OpenOptions, Recording};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The error opening `path` gives (it must not open).
fn error_of(path: &Path) -> String {
    Recording::open(path, &OpenOptions::default())
        .err()
        .unwrap_or_else(|| panic!("{} opened", path.display()))
        .to_string()
}

/// Writes `bytes` to `path` and returns the error opening it gives.
fn refused(path: &Path, bytes: &[u8]) -> String {
    std::fs::write(path, bytes).unwrap();
    error_of(path)
}

fn open(p: &Path) -> Recording {
    Recording::open(p, &OpenOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Volts per unit of a channel's samples.
fn volts_per(unit: &str) -> f64 {
    match unit {
        "uV" | "µV" => 1e-6,
        "mV" => 1e-3,
        "nV" => 1e-9,
        "V" => 1.0,
        "fT" => 1e-15,
        "T" | "T/m" => 1.0,
        u => panic!("unexpected unit {u}"),
    }
}

/// Names, rate, length, every sample (to `tolerance_v` volts), annotations and positions as
/// MNE-Python read them.
fn agrees_with_mne(rec: &Recording, expected: &str, tolerance_v: f64) {
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(expected)).unwrap()).unwrap();
    let names: Vec<&str> = (want["ch_names"].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap())
        .collect();
    let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, names, "{expected}: channel names");
    let n = want["n_times"].as_u64().unwrap() as usize;
    let fs = want["sfreq"].as_f64().unwrap();
    for (c, s) in rec.signals.iter().enumerate() {
        assert_eq!(s.samples, n, "{expected}: {} samples", s.label);
        assert!(
            (s.fs - fs).abs() < 1e-9,
            "{expected}: rate {} vs {fs}",
            s.fs
        );
        let ours = rec.read_all(c).unwrap();
        let theirs = want["data_v"][c].as_array().unwrap();
        let scale = volts_per(&s.unit);
        for (k, (a, b)) in ours.iter().zip(theirs).enumerate() {
            let b = b.as_f64().unwrap();
            let a = *a as f64 * scale;
            assert!(
                (a - b).abs() <= tolerance_v + 1e-6 * b.abs(),
                "{expected}: {} sample {k}: ede {a:e} V, MNE {b:e} V",
                s.label
            );
        }
    }
    let anns = want["annotations"].as_array().unwrap();
    assert_eq!(rec.annotations.len(), anns.len(), "{expected}: annotations");
    for (a, b) in rec.annotations.iter().zip(anns) {
        // To a microsecond: FIF keeps annotation times as float32.
        let close = |x: f64, key: &str| (x - b[key].as_f64().unwrap()).abs() < 1e-6;
        assert!(
            close(a.onset, "onset") && close(a.duration, "duration"),
            "{a:?} {b}"
        );
        let theirs = b["description"].as_str().unwrap();
        match (a.text.parse::<f64>(), theirs.parse::<f64>()) {
            // EEGLAB's numeric event types: MNE-Python writes 1.0, ede 1.
            (Ok(x), Ok(y)) => assert_eq!(x, y),
            _ => assert_eq!(a.text, theirs),
        }
    }
    let positions = want["positions_m"].as_object().unwrap();
    for s in &rec.signals {
        match (s.position, positions.get(&s.label)) {
            (None, None) => {}
            (Some(p), Some(q)) => {
                for (a, b) in p.iter().zip(q.as_array().unwrap()) {
                    assert!(
                        (a - b.as_f64().unwrap()).abs() < 1e-9,
                        "{}: {p:?} {q}",
                        s.label
                    );
                }
            }
            (p, q) => panic!("{expected}: {} position: ede {p:?}, MNE {q:?}", s.label),
        }
    }
    if let Some(date) = want["meas_date"].as_str() {
        // ede's start is the first sample's time; MNE-Python's measurement date comes
        // `first_time` before it.
        let measured = chrono::DateTime::parse_from_rfc3339(date)
            .unwrap()
            .naive_utc();
        let first = want["first_time"].as_f64().unwrap_or(0.0);
        let lag = (rec.start - measured).as_seconds_f64();
        assert!(
            (lag - first).abs() < 1e-6,
            "{expected}: start {} vs {date}",
            rec.start
        );
    }
}

#[test]
fn brainvision_reads_as_mne_does() {
    for (name, tolerance_v) in [("bv_int16", 1e-12), ("bv_float32", 1e-12)] {
        let rec = open(&fixture(&format!("{name}.vhdr")));
        assert_eq!(rec.format, Format::BrainVision);
        agrees_with_mne(&rec, &format!("{name}.expected.json"), tolerance_v);
        let types: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
        use ChannelType::*;
        // MNE-Python calls ECG "eeg" (or "misc" in mV) unless told: BrainVision keeps no types.
        assert_eq!(types, [Eeg, Eeg, Eeg, Eeg, Eog, Ecg], "{name}");
        // The data and marker files open the set too.
        let by_data = open(&fixture(&format!("{name}.eeg")));
        assert_eq!(by_data.path, rec.path);
    }
}

/// Writes the int16 fixture again as `binary` / `orientation` (the other layouts BrainVision
/// Recorder writes) and checks every sample reads the same.
/// ASCII exports: a header line of names, a dot or a comma as the decimal symbol.
#[test]
fn brainvision_ascii_reads_as_mne_does() {
    for name in ["bv_ascii", "bv_ascii_comma"] {
        let rec = open(&fixture(&format!("{name}.vhdr")));
        agrees_with_mne(&rec, &format!("{name}.expected.json"), 1e-12);
        // A read inside the lines the last one parsed is served from them, at its own offset.
        let n = rec.signals[0].samples;
        let (mut whole, mut inner) = (vec![0f32; n], vec![0f32; n / 2]);
        rec.read(0, 0, &mut whole).unwrap();
        rec.read(1, n / 4, &mut inner).unwrap();
        let mut fresh = vec![0f32; n / 2];
        open(&fixture(&format!("{name}.vhdr")))
            .read(1, n / 4, &mut fresh)
            .unwrap();
        assert_eq!(inner, fresh, "{name}");
    }
    // A line short of numbers is a clear error when it is read.
    let dir = tempfile::tempdir().unwrap();
    let header = std::fs::read_to_string(fixture("bv_ascii.vhdr")).unwrap();
    std::fs::write(dir.path().join("bv_ascii.vhdr"), &header).unwrap();
    let data = std::fs::read_to_string(fixture("bv_ascii.dat")).unwrap();
    let cut: Vec<&str> = data.lines().collect();
    let broken = format!("{}\n{}\n1 2\n", cut[0], cut[1]);
    std::fs::write(dir.path().join("bv_ascii.dat"), broken).unwrap();
    let rec = open(&dir.path().join("bv_ascii.vhdr"));
    let mut out = vec![0f32; 2];
    let e = rec.read(0, 0, &mut out).unwrap_err().to_string();
    assert!(e.contains("bv_ascii.dat") && e.contains("line 2"), "{e}");
}

#[test]
fn brainvision_layouts_agree() {
    let reference = open(&fixture("bv_int16.vhdr"));
    let n = reference.signals[0].samples;
    let channels = reference.signals.len();
    let raw = std::fs::read(fixture("bv_int16.eeg")).unwrap();
    let value = |k: usize, c: usize| {
        let at = (k * channels + c) * 2;
        i16::from_le_bytes([raw[at], raw[at + 1]])
    };
    let header = std::fs::read_to_string(fixture("bv_int16.vhdr")).unwrap();
    let markers = std::fs::read_to_string(fixture("bv_int16.vmrk")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (format, orientation) in [
        ("INT_32", "VECTORIZED"),
        ("INT_32", "MULTIPLEXED"),
        ("IEEE_FLOAT_32", "VECTORIZED"),
        ("UINT_16", "MULTIPLEXED"),
    ] {
        let order: Vec<(usize, usize)> = if orientation == "VECTORIZED" {
            (0..channels)
                .flat_map(|c| (0..n).map(move |k| (k, c)))
                .collect()
        } else {
            (0..n)
                .flat_map(|k| (0..channels).map(move |c| (k, c)))
                .collect()
        };
        let mut bytes = Vec::new();
        for (k, c) in order {
            let v = value(k, c);
            match format {
                "INT_32" => bytes.extend((v as i32).to_le_bytes()),
                "IEEE_FLOAT_32" => bytes.extend((v as f32).to_le_bytes()),
                _ => bytes.extend(((v as i32 + 32768) as u16).to_le_bytes()),
            }
        }
        let base = format!("x_{format}_{orientation}");
        std::fs::write(dir.path().join(format!("{base}.eeg")), bytes).unwrap();
        std::fs::write(dir.path().join(format!("{base}.vmrk")), &markers).unwrap();
        let h = header
            .replace("bv_int16.eeg", &format!("{base}.eeg"))
            .replace("bv_int16.vmrk", &format!("{base}.vmrk"))
            .replace("BinaryFormat=INT_16", &format!("BinaryFormat={format}"))
            .replace(
                "DataOrientation=MULTIPLEXED",
                &format!("DataOrientation={orientation}"),
            );
        let vhdr = dir.path().join(format!("{base}.vhdr"));
        std::fs::write(&vhdr, h).unwrap();
        let rec = open(&vhdr);
        assert_eq!(rec.annotations, reference.annotations);
        for c in 0..channels {
            let a = rec.read_all(c).unwrap();
            let b = reference.read_all(c).unwrap();
            // UINT_16 stores the value plus 32768: its offset shows as a constant.
            let offset = if format == "UINT_16" { 3276.8 } else { 0.0 };
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y - offset).abs() < 1e-3, "{base} ch {c}: {x} vs {y}");
            }
        }
    }
}

#[test]
fn bad_brainvision_sets_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let header = std::fs::read_to_string(fixture("bv_int16.vhdr")).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let err = |p: &Path| error_of(p);
    // The data file it names is missing: the message names it.
    let e = err(&write("nodata.vhdr", &header));
    assert!(e.contains("bv_int16.eeg") && e.contains("missing"), "{e}");
    // A header that is not one.
    let e = err(&write("garbage.vhdr", "just some text\n"));
    assert!(e.contains("not a BrainVision"), "{e}");
    let e = err(&write("empty.vhdr", ""));
    assert!(e.contains("empty"), "{e}");
    // Fields out of range.
    for (from, to, says) in [
        (
            "SamplingInterval=4000.0",
            "SamplingInterval=0",
            "SamplingInterval",
        ),
        (
            "SamplingInterval=4000.0",
            "SamplingInterval=abc",
            "SamplingInterval",
        ),
        (
            "NumberOfChannels=6",
            "NumberOfChannels=99999999999",
            "NumberOfChannels",
        ),
        ("BinaryFormat=INT_16", "BinaryFormat=INT_64", "INT_64"),
        ("DataFormat=BINARY", "DataFormat=PACKED", "PACKED"),
        ("Ch3=Cz,,0.1,µV", "Ch3=Cz,,x,µV", "resolution"),
    ] {
        let text = header.replace(from, to);
        std::fs::copy(fixture("bv_int16.eeg"), dir.path().join("bv_int16.eeg")).unwrap();
        let e = err(&write("bad.vhdr", &text));
        assert!(e.contains(says), "{to}: {e}");
    }
    // A data file cut short of a whole sample: what is whole opens, with a warning.
    let bytes = std::fs::read(fixture("bv_int16.eeg")).unwrap();
    std::fs::write(dir.path().join("bv_int16.eeg"), &bytes[..bytes.len() - 5]).unwrap();
    let rec = open(&write("cut.vhdr", &header));
    assert_eq!(rec.signals[0].samples, 749);
    assert!(
        rec.warnings.iter().any(|w| w.contains("whole number")),
        "{:?}",
        rec.warnings
    );
    // A missing marker file costs the markers, not the recording.
    let rec = open(&write(
        "nomarkers.vhdr",
        &header.replace("bv_int16.vmrk", "gone.vmrk"),
    ));
    assert!(rec.annotations.is_empty());
    assert!(
        rec.warnings.iter().any(|w| w.contains("markers")),
        "{:?}",
        rec.warnings
    );
}

/// Mutated headers and data: every one opens or fails with an error, never panics, and what
/// opens decodes every sample.
#[test]
fn mutated_brainvision_sets_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let header = std::fs::read(fixture("bv_int16.vhdr")).unwrap();
    let data = std::fs::read(fixture("bv_int16.eeg")).unwrap();
    std::fs::copy(fixture("bv_int16.vmrk"), dir.path().join("bv_int16.vmrk")).unwrap();
    let mut rnd = common::xorshift(0x9e37_79b9_7f4a_7c15u64);
    let vhdr = dir.path().join("m.vhdr");
    for _ in 0..1500 {
        let mut h = header.clone();
        let mut d = data.clone();
        for _ in 0..1 + rnd() % 4 {
            let i = (rnd() as usize) % h.len();
            h[i] = b"0123456789,=[]\n;-.xCh"[(rnd() as usize) % 21];
        }
        if rnd().is_multiple_of(3) {
            d.truncate((rnd() as usize) % (d.len() + 1));
        }
        std::fs::write(&vhdr, &h).unwrap();
        std::fs::write(dir.path().join("bv_int16.eeg"), &d).unwrap();
        common::decodes_if_it_opens(&vhdr, &OpenOptions::default());
    }
}

#[test]
fn eeglab_reads_as_mne_does() {
    // eeglabio's layout (what mne.export writes): fields at the top level, data inside.
    // EEGLAB's own: an EEG structure, compressed, naming a .fdt beside it.
    for name in ["set_inline", "set_twofile"] {
        let rec = open(&fixture(&format!("{name}.set")));
        assert_eq!(rec.format, Format::Eeglab);
        agrees_with_mne(&rec, &format!("{name}.expected.json"), 1e-12);
        let want: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let types: Vec<String> = (rec.signals.iter())
            .map(|s| {
                serde_json::to_value(s.kind)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let theirs: Vec<&str> = (want["types"].as_array().unwrap().iter())
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(types, theirs, "{name}: types");
    }
    // The .fdt opens its dataset.
    let rec = open(&fixture("set_twofile.fdt"));
    assert!(rec.path.unwrap().ends_with("set_twofile.set"));
}

/// An epoched dataset opens as one segment per epoch, each epoch's samples as MNE-Python's
/// `read_epochs_eeglab` gives them, with the epochs marked.
/// MATLAB v7.3 (HDF5) datasets as hdf5storage writes them in MATLAB's layout: an EEG
/// structure with the samples inside in compressed chunks, and the fields as the file's
/// variables naming a .fdt.
#[test]
fn eeglab_v73_reads_as_mne_does() {
    for name in ["set73_struct", "set73_fields"] {
        let rec = open(&fixture(&format!("{name}.set")));
        assert_eq!(rec.format, Format::Eeglab);
        agrees_with_mne(&rec, &format!("{name}.expected.json"), 1e-12);
        let types: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
        use ChannelType::*;
        assert_eq!(types, [Eeg, Eeg, Eeg, Eeg, Eog, Ecg], "{name}");
    }
}

#[test]
fn mutated_eeglab_v73_sets_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::fs::read(fixture("set73_struct.set")).unwrap();
    let mut rnd = common::xorshift(0x6a09_e667_f3bc_c908u64);
    let p = dir.path().join("m.set");
    for _ in 0..600 {
        let mut b = seed.clone();
        for _ in 0..1 + rnd() % 6 {
            // The superblock, object headers and heaps lie after the 512-byte text header.
            let i = if rnd().is_multiple_of(2) {
                512 + (rnd() as usize) % 4096.min(b.len() - 512)
            } else {
                (rnd() as usize) % b.len()
            };
            b[i] = [0u8, 0xff, 0x7f, 1, 8, rnd() as u8][(rnd() as usize) % 6];
        }
        if rnd().is_multiple_of(4) {
            b.truncate((rnd() as usize) % (b.len() + 1));
        }
        std::fs::write(&p, &b).unwrap();
        common::decodes_if_it_opens(&p, &OpenOptions::default());
    }
}

#[test]
fn eeglab_epochs_are_segments() {
    let rec = open(&fixture("set_epochs.set"));
    let want: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("set_epochs.expected.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rec.segments.len(), 3);
    assert_eq!(rec.signals[0].samples, 750);
    assert!((rec.sample_time(0, 260) - 1.04).abs() < 1e-9);
    for c in 0..rec.signals.len() {
        let ours = rec.read_all(c).unwrap();
        for (k, b) in want["data_v"][c].as_array().unwrap().iter().enumerate() {
            let b = b.as_f64().unwrap();
            assert!(
                (ours[k] as f64 * 1e-6 - b).abs() < 1e-12 + 1e-6 * b.abs(),
                "{c} {k}"
            );
        }
    }
    let marks: Vec<&str> = (rec.annotations.iter())
        .filter(|a| a.text.starts_with("Epoch"))
        .map(|a| a.text.as_str())
        .collect();
    assert_eq!(marks, ["Epoch 1", "Epoch 2", "Epoch 3"]);
    assert!(rec.warnings.iter().any(|w| w.contains("epoched")));
}

#[test]
fn bad_eeglab_sets_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let err = |name: &str, bytes: &[u8]| refused(&dir.path().join(name), bytes);
    let mut v73 = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 .".to_vec();
    v73.resize(512, b' ');
    // A v7.3 header with no HDF5 behind it.
    let e = err("v73.set", &v73);
    assert!(e.contains("v7.3") && e.contains("HDF5"), "{e}");
    // A v7.3 dataset cut anywhere fails with an error naming the file, never a panic.
    let whole = std::fs::read(fixture("set73_struct.set")).unwrap();
    for cut in [600, 5000, whole.len() / 2, whole.len() - 8] {
        let e = err("cut73.set", &whole[..cut]);
        assert!(e.contains("cut73.set"), "{cut}: {e}");
    }
    assert!(err("empty.set", b"").contains("empty"));
    let e = err("text.set", b"not a MAT file at all");
    assert!(e.contains("MAT"), "{e}");
    // Cut anywhere, the inline dataset fails with an error naming the file, never a panic.
    let whole = std::fs::read(fixture("set_inline.set")).unwrap();
    for cut in [129, 200, 1000, whole.len() / 2, whole.len() - 8] {
        let e = err("cut.set", &whole[..cut]);
        assert!(e.contains("cut.set"), "{cut}: {e}");
    }
    // The .fdt it names is missing: the message names it.
    std::fs::copy(fixture("set_twofile.set"), dir.path().join("alone.set")).unwrap();
    let e = error_of(&dir.path().join("alone.set"));
    assert!(
        e.contains("set_twofile.fdt") && e.contains("missing"),
        "{e}"
    );
}

/// Mutated datasets, compressed and not: every one opens or fails with an error, never
/// panics, and what opens decodes every sample.
#[test]
fn mutated_eeglab_sets_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = [
        std::fs::read(fixture("set_inline.set")).unwrap(),
        std::fs::read(fixture("set_twofile.set")).unwrap(),
        std::fs::read(fixture("set_epochs.set")).unwrap(),
    ];
    std::fs::copy(
        fixture("set_twofile.fdt"),
        dir.path().join("set_twofile.fdt"),
    )
    .unwrap();
    let mut rnd = common::xorshift(0x2545_f491_4f6c_dd1du64);
    let p = dir.path().join("m.set");
    for iter in 0..1500 {
        let mut b = seeds[iter % seeds.len()].clone();
        for _ in 0..1 + rnd() % 6 {
            // Tags and sizes live in the first bytes of each element: aim there often.
            let i = if rnd().is_multiple_of(2) {
                128 + (rnd() as usize) % 512.min(b.len() - 128)
            } else {
                (rnd() as usize) % b.len()
            };
            b[i] = [0u8, 0xff, 0x7f, 1, 14, 15, rnd() as u8][(rnd() as usize) % 7];
        }
        if rnd().is_multiple_of(4) {
            b.truncate((rnd() as usize) % (b.len() + 1));
        }
        std::fs::write(&p, &b).unwrap();
        common::decodes_if_it_opens(&p, &OpenOptions::default());
    }
}

#[test]
fn fif_reads_as_mne_does() {
    use ChannelType::*;
    for fmt in ["single", "double", "int", "short"] {
        let name = format!("fif_{fmt}_raw");
        let rec = open(&fixture(&format!("{name}.fif")));
        assert_eq!(rec.format, Format::Fif);
        // The stim channel's steps are events (MNE-Python finds them with find_events, not
        // among the annotations): value 1 from sample 100, value 5 from sample 400.
        let steps: Vec<(f64, &str)> = (rec.annotations.iter())
            .filter(|a| a.channel() == Some("STI 014"))
            .map(|a| (a.onset, a.text.as_str()))
            .collect();
        assert_eq!(steps, [(0.4, "1@@STI 014"), (1.6, "5@@STI 014")], "{name}");
        let mut annotated = rec.clone();
        annotated
            .annotations
            .retain(|a| a.channel() != Some("STI 014"));
        // Stored values times calibration: float32 data agree to their precision.
        agrees_with_mne(&annotated, &format!("{name}.expected.json"), 0.0);
        let types: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
        assert_eq!(
            types,
            [Mag, Grad, Grad, Mag, Grad, Grad, Eeg, Eeg, Eog, Ecg, Stim],
            "{name}"
        );
        let units: Vec<&str> = rec.signals.iter().map(|s| s.unit.as_str()).collect();
        assert_eq!(&units[..3], ["T", "T/m", "T/m"]);
        assert!(
            rec.warnings.iter().any(|w| w.contains("MEG 0113")),
            "bad channel said"
        );
        assert!(rec.signals[2].bad);
    }
}

/// A recording MNE-Python split over many files reads as one, every part in order.
#[test]
fn fif_split_files_read_as_one() {
    let rec = open(&fixture("fif_split_raw.fif"));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("fif_split.expected.json")).unwrap())
            .unwrap();
    let n = want["n_times"].as_u64().unwrap() as usize;
    assert_eq!(rec.signals[0].samples, n);
    for (key, at) in [("first", 0), ("middle", 80_000), ("last", n - 5)] {
        for c in 0..2 {
            let mut got = [0f32; 5];
            rec.read(c, at, &mut got).unwrap();
            for (a, b) in got.iter().zip(want[key][c].as_array().unwrap()) {
                let b = b.as_f64().unwrap();
                assert!(
                    (*a as f64 - b).abs() <= 1e-6 * b.abs(),
                    "{key} {c}: {a} vs {b}"
                );
            }
        }
    }
    // Opening a later part alone shows that part.
    let part = open(&fixture("fif_split_raw-13.fif"));
    assert!(part.signals[0].samples < n);
}

#[test]
fn bad_fif_files_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("fif_single_raw.fif")).unwrap();
    let err = |name: &str, bytes: &[u8]| refused(&dir.path().join(name), bytes);
    for cut in [16, 100, 2000, whole.len() / 2] {
        let e = err("cut.fif", &whole[..cut]);
        assert!(
            e.contains("cut.fif") && e.contains("truncated"),
            "{cut}: {e}"
        );
    }
    let e = err("text.fif", b"hello, not a FIF file");
    assert!(e.contains("not a FIF"), "{e}");
    // A split part whose next part is gone: the parts there are shown, with a warning.
    std::fs::copy(
        fixture("fif_split_raw.fif"),
        dir.path().join("fif_split_raw.fif"),
    )
    .unwrap();
    let rec = open(&dir.path().join("fif_split_raw.fif"));
    assert!(
        rec.warnings.iter().any(|w| w.contains("missing")),
        "{:?}",
        rec.warnings
    );
}

#[test]
fn mutated_fif_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = [
        std::fs::read(fixture("fif_short_raw.fif")).unwrap(),
        std::fs::read(fixture("fif_double_raw.fif")).unwrap(),
    ];
    let mut rnd = common::xorshift(0x853c_49e6_748f_ea9bu64);
    let p = dir.path().join("m.fif");
    for iter in 0..1500 {
        let mut b = seeds[iter % seeds.len()].clone();
        for _ in 0..1 + rnd() % 6 {
            // Tag headers and the measurement info come first: aim there often.
            let i = if rnd().is_multiple_of(2) {
                (rnd() as usize) % 4096.min(b.len())
            } else {
                (rnd() as usize) % b.len()
            };
            b[i] = [0u8, 0xff, 0x7f, 1, 2, 4, 100, rnd() as u8][(rnd() as usize) % 8];
        }
        if rnd().is_multiple_of(4) {
            b.truncate((rnd() as usize) % (b.len() + 1));
        }
        std::fs::write(&p, &b).unwrap();
        common::decodes_if_it_opens(&p, &OpenOptions::default());
    }
}

/// A format ede cannot write back converts to BDF+ (what deblink saves): every sample within
/// the 24-bit quantization, MEG in fT and fT/cm, the annotations kept.
#[test]
fn fif_converts_to_bdf_plus() {
    let rec = open(&fixture("fif_double_raw.fif"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("converted.bdf");
    let doubled: Vec<f32> = rec.read_all(6).unwrap().iter().map(|v| v * 2.0).collect();
    ede::recording::convert::write_converted(&rec, &out, &[(6, &doubled)]).unwrap();
    let back = open(&out);
    assert_eq!(back.signals.len(), rec.signals.len());
    assert_eq!(back.signals[0].unit, "fT");
    assert_eq!(back.signals[1].unit, "fT/cm");
    assert_eq!(back.signals[0].kind, ChannelType::Mag);
    assert_eq!(back.signals[1].kind, ChannelType::Grad);
    for i in 0..rec.signals.len() {
        let a = rec.read_all(i).unwrap();
        let b = back.read_all(i).unwrap();
        let k = match rec.signals[i].unit.as_str() {
            "T" => 1e15,
            "T/m" => 1e13,
            "V" => 1e6,
            _ => 1.0,
        };
        let want: Vec<f32> = if i == 6 { doubled.clone() } else { a };
        let span = want.iter().fold(0f32, |m, v| m.max(v.abs())) * k as f32;
        for (x, y) in want.iter().zip(&b) {
            assert!(
                (x * k as f32 - y).abs() <= span * 1e-5 + 1e-6,
                "{}: {x} vs {y}",
                rec.signals[i].label
            );
        }
    }
    let texts: Vec<&str> = back.annotations.iter().map(|a| a.text.as_str()).collect();
    assert!(
        texts.contains(&"blink") && texts.contains(&"BAD_muscle"),
        "{texts:?}"
    );
}

/// An XDF file (chunks as LabRecorder writes them) against pyxdf's reading: the EEG stream
/// chosen, its samples, clock offsets applied, the marker stream as events, the other streams
/// said to be left out.
#[test]
fn xdf_reads_as_pyxdf_does() {
    let rec = open(&fixture("streams.xdf"));
    assert_eq!(rec.format, Format::Xdf);
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("streams.expected.json")).unwrap())
            .unwrap();
    let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["Fp1", "Fp2", "Cz", "EOG"]);
    assert_eq!(rec.signals[3].kind, ChannelType::Eog);
    assert_eq!(rec.signals[0].unit, "uV");
    assert_eq!(rec.signals[0].fs, 100.0);
    // The file header's datetime, as the recording's start (local time as written).
    assert_eq!(rec.start.to_string(), "2024-03-05 14:30:00");
    for c in 0..4 {
        let ours = rec.read_all(c).unwrap();
        let theirs = want["data"][c].as_array().unwrap();
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(theirs) {
            assert_eq!(*a, b.as_f64().unwrap() as f32);
        }
    }
    let markers = want["markers"].as_array().unwrap();
    assert_eq!(rec.annotations.len(), markers.len());
    for (a, m) in rec.annotations.iter().zip(markers) {
        assert!((a.onset - m[0].as_f64().unwrap()).abs() < 1e-6, "{a:?} {m}");
        assert_eq!(a.text, m[1].as_str().unwrap());
    }
    assert!(
        rec.warnings.iter().any(|w| w.contains("Accel")),
        "{:?}",
        rec.warnings
    );
    assert!(
        rec.warnings.iter().any(|w| w.contains("Mouse")),
        "{:?}",
        rec.warnings
    );
    // Another stream by name; a marker stream is refused with a reason.
    let accel = Recording::open(
        &fixture("streams.xdf"),
        &OpenOptions {
            xdf_stream: Some("Accel".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(accel.signals.len(), 2);
    assert_eq!(rec.streams, ["BioSemi", "Accel"]);
    assert_eq!(accel.signals[0].samples, 150);
    let e = Recording::open(
        &fixture("streams.xdf"),
        &OpenOptions {
            xdf_stream: Some("Markers".into()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("irregular"), "{e}");
}

#[test]
fn bad_xdf_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("streams.xdf")).unwrap();
    let p = dir.path().join("m.xdf");
    for cut in [4, 10, 100, whole.len() / 2, whole.len() - 3] {
        std::fs::write(&p, &whole[..cut]).unwrap();
        if let Err(e) = Recording::open(&p, &OpenOptions::default()) {
            assert!(e.to_string().contains("m.xdf"), "{e}");
        }
    }
    let mut rnd = common::xorshift(0x1d8e_4e27_c47d_124fu64);
    for _ in 0..2000 {
        let mut b = whole.clone();
        for _ in 0..1 + rnd() % 6 {
            let i = (rnd() as usize) % b.len();
            b[i] = [0u8, 1, 4, 8, 0xff, rnd() as u8][(rnd() as usize) % 6];
        }
        std::fs::write(&p, &b).unwrap();
        common::decodes_if_it_opens(&p, &OpenOptions::default());
    }
}

/// A 4D run (data file and config in a folder) in a temporary copy.
fn bti_copy(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for f in ["c,rfDC", "config"] {
        std::fs::copy(fixture(&format!("{name}/{f}")), to.join(f)).unwrap();
    }
    to.join("c,rfDC")
}

#[test]
fn bti_reads_as_mne_does() {
    use ChannelType::*;
    for name in ["bti_short", "bti_float"] {
        let rec = open(&fixture(&format!("{name}/c,rfDC")));
        assert_eq!(rec.format, Format::Bti);
        // The trigger's steps are events: 4 from sample 50, 2 from sample 300 (at 500 Hz).
        let steps: Vec<(f64, &str)> = (rec.annotations.iter())
            .map(|a| ((a.onset * 1e3).round() / 1e3, a.text.as_str()))
            .collect();
        assert_eq!(steps, [(0.1, "4@@TRIGGER"), (0.6, "2@@TRIGGER")], "{name}");
        let mut annotated = rec.clone();
        annotated.annotations.clear();
        agrees_with_mne(&annotated, &format!("{name}.expected.json"), 0.0);
        let types: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
        assert_eq!(
            types,
            [
                Mag, Mag, Mag, Mag, Mag, Mag, RefMeg, RefMeg, Stim, Ecg, Eeg, Misc
            ],
            "{name}"
        );
        let units: Vec<&str> = rec.signals.iter().map(|s| s.unit.as_str()).collect();
        assert_eq!((units[0], units[6], units[7]), ("T", "T", "T/m"));
    }
}

/// On the real thing: MNE-Python's 4D test run (mne-testing-data's BTi/4Dsim: 248
/// magnetometers, references, trigger) where EDE_BTI names its folder.
#[test]
fn a_magnes_run_opens_where_there_is_one() {
    let Some(dir) = std::env::var_os("EDE_BTI").map(PathBuf::from) else {
        return;
    };
    let rec = open(&dir.join("c,rfDC"));
    assert_eq!(rec.signals.len(), 279);
    let mags = rec.signals.iter().filter(|s| s.kind == ChannelType::Mag);
    assert_eq!(mags.count(), 248);
}

#[test]
fn bad_bti_runs_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = bti_copy(dir.path(), "bti_short");
    let whole = std::fs::read(&pdf).unwrap();
    let e = refused(&pdf, &whole[..whole.len() - 9]);
    assert!(e.contains("c,rfDC"), "{e}");
    let e = refused(&pdf, &[0u8; 3]);
    assert!(e.contains("too short"), "{e}");
    // The data cut short while the header stays: the samples do not fit before it.
    let header_at = u64::from_be_bytes(whole[whole.len() - 8..].try_into().unwrap()) as usize;
    let mut cut = whole[header_at - 800..].to_vec();
    let at = (header_at - 800) as u64;
    let n = cut.len();
    cut[n - 8..].copy_from_slice(&(header_at as u64 - at).to_be_bytes());
    let e = refused(&pdf, &cut);
    assert!(e.contains("truncated"), "{e}");
    std::fs::write(&pdf, &whole).unwrap();
    std::fs::remove_file(dir.path().join("bti_short/config")).unwrap();
    // Without its config: the error says what is missing.
    let e = error_of(&pdf);
    assert!(e.contains("config") && e.contains("missing"), "{e}");
}

#[test]
fn mutated_bti_runs_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = bti_copy(dir.path(), "bti_short");
    let config = dir.path().join("bti_short/config");
    let seeds = [
        std::fs::read(&pdf).unwrap(),
        std::fs::read(&config).unwrap(),
    ];
    let mut rnd = common::xorshift(0x1d8e_4e27_c47d_124fu64);
    for iter in 0..1500 {
        let which = iter % 2;
        let mut b = seeds[which].clone();
        for _ in 0..1 + rnd() % 6 {
            // The headers (the data file's at its end, the config's first) hold the counts.
            let i = match (which, rnd().is_multiple_of(2)) {
                (0, true) => b.len() - 1 - (rnd() as usize) % 2048.min(b.len()),
                (1, true) => (rnd() as usize) % 1024.min(b.len()),
                _ => (rnd() as usize) % b.len(),
            };
            b[i] = [0u8, 0xff, 0x7f, 1, 8, rnd() as u8][(rnd() as usize) % 6];
        }
        if rnd().is_multiple_of(4) {
            b.truncate((rnd() as usize) % (b.len() + 1));
        }
        std::fs::write([&pdf, &config][which], &b).unwrap();
        std::fs::write([&config, &pdf][which], &seeds[1 - which]).unwrap();
        common::decodes_if_it_opens(&pdf, &OpenOptions::default());
    }
}

/// MNE-Python's channel-specific annotations (`Annotations.ch_names`, written by MNE 1.13 to
/// the FIF file as JSON): one event a channel, as MNE writes them to EDF+ (`text@@channel`);
/// an annotation without channels stays on the whole recording.
#[test]
fn fif_channel_annotations_read_as_mne_writes_them() {
    let rec = Recording::open(
        &fixture("fif_channel_annotations_raw.fif"),
        &OpenOptions::default(),
    )
    .unwrap();
    let got: Vec<(f64, f64, &str)> = rec
        .annotations
        .iter()
        .map(|a| (a.onset, a.duration, a.text.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (0.5, 0.0, "spike@@C3"),
            (1.0, 0.25, "seizure@@C3"),
            (1.0, 0.25, "seizure@@Cz"),
            (2.0, 0.0, "blink"),
        ]
    );
}
