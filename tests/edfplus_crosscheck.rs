//! Our EDF reader against the `edfplus` crate, which the project uses as the reference for
//! EDF+C: files written by its writer, and every EDF+C file among the shared recordings.

mod common;

use std::path::Path;

use ede::recording::{Format, OpenOptions, Recording};
use edfplus::{EdfReader, EdfWriter, SignalParam};

/// Signals, sample values and annotations agree with edfplus.
fn compare(path: &Path) {
    let ours = Recording::open(path, &OpenOptions::default()).unwrap();
    let mut theirs = EdfReader::open(path).unwrap();
    let signals = theirs.header().signals.clone();
    assert_eq!(ours.signals.len(), signals.len(), "{}", path.display());
    for (i, (a, b)) in ours.signals.iter().zip(&signals).enumerate() {
        assert_eq!(a.label, b.label.trim(), "{}", path.display());
        assert_eq!(
            a.samples as i64,
            b.samples_in_file,
            "{} {}",
            path.display(),
            a.label
        );
        let n = a.samples.min(20_000);
        let expected = theirs.read_physical_samples(i, n).unwrap();
        let mut got = vec![0f32; n];
        ours.read(i, 0, &mut got).unwrap();
        let lsb = (b.physical_max - b.physical_min).abs() / (b.digital_max - b.digital_min) as f64;
        for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
            // f32 against f64: within a small part of one digital step.
            let tol = 1e-6 * e.abs().max(lsb) + 1e-3 * lsb;
            assert!(
                (*g as f64 - e).abs() <= tol,
                "{} {} sample {k}: {g} vs {e}",
                path.display(),
                a.label
            );
        }
    }
    let their_annotations = theirs.annotations();
    assert_eq!(
        ours.annotations.len(),
        their_annotations.len(),
        "{}",
        path.display()
    );
    for (a, b) in ours.annotations.iter().zip(their_annotations) {
        assert!(
            (a.onset - b.onset as f64 / 1e7).abs() < 1e-6,
            "{a:?} vs {b:?}"
        );
        assert_eq!(a.text, b.description, "{}", path.display());
    }
}

fn param(label: &str, spr: i32, range: f64, unit: &str) -> SignalParam {
    SignalParam {
        label: label.into(),
        samples_in_file: 0,
        physical_max: range,
        physical_min: -range,
        digital_max: 32767,
        digital_min: -32768,
        samples_per_record: spr,
        physical_dimension: unit.into(),
        prefilter: "HP:0.1Hz LP:70Hz".into(),
        transducer: "AgAgCl".into(),
    }
}

#[test]
fn files_written_by_edfplus_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("written.edf");
    let mut w = EdfWriter::create(&path).unwrap();
    w.set_patient_info("P1", "F", "02-MAR-1971", "Test")
        .unwrap();
    w.add_signal(param("EEG Fp1", 256, 500.0, "uV")).unwrap();
    w.add_signal(param("EEG O2", 256, 500.0, "uV")).unwrap();
    w.add_signal(param("ECG", 128, 5.0, "mV")).unwrap();
    for second in 0..12 {
        let t = |k: usize, fs: f64| second as f64 + k as f64 / fs;
        let fp1 = (0..256)
            .map(|k| 80.0 * (2.0 * std::f64::consts::PI * 10.0 * t(k, 256.0)).sin())
            .collect();
        let o2 = (0..256)
            .map(|k| (k as f64 * 7.3).rem_euclid(400.0) - 200.0)
            .collect();
        let ecg = (0..128).map(|k| if k == 40 { 2.5 } else { -0.1 }).collect();
        w.write_samples(&[fp1, o2, ecg]).unwrap();
    }
    w.add_annotation(1.5, Some(0.25), "Blink").unwrap();
    w.add_annotation(7.0, None, "Eyes closed").unwrap();
    w.finalize().unwrap();

    let ours = Recording::open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(ours.format, Format::EdfPlusC);
    assert_eq!(ours.duration_s(), 12.0);
    assert_eq!(ours.signals[2].fs, 128.0);
    assert_eq!(ours.signals[2].unit, "mV");
    compare(&path);
}

#[test]
fn shared_edf_plus_c_files_read_the_same() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let mut checked = 0;
    for dir in ["edf", "eeg"] {
        let Ok(entries) = std::fs::read_dir(data.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "edf") {
                continue;
            }
            let ours = Recording::open(&path, &OpenOptions::default()).unwrap();
            // edfplus reads only EDF+C; the plain and discontinuous files are ours alone.
            if ours.format != Format::EdfPlusC || EdfReader::open(&path).is_err() {
                eprintln!("not compared with edfplus: {}", path.display());
                continue;
            }
            compare(&path);
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} files compared");
}
