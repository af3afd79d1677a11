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
        if a.label.trim().eq_ignore_ascii_case("Status") {
            continue; // trigger codes, its stored integers' low bits (tests/real_files.rs)
        }
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
    // A stimulus channel's steps are ede's events too (tied to the channel); edfplus reads
    // the annotation signal alone.
    let stim: Vec<&str> = (ours.signals.iter())
        .filter(|s| s.kind == ede::recording::ChannelType::Stim)
        .map(|s| s.label.trim())
        .collect();
    let mut ours = ours.clone();
    (ours.annotations).retain(|a| a.channel().is_none_or(|c| !stim.contains(&c)));
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

/// A copy saved with new annotations: ede reads back the same signals (every sample equal)
/// and exactly the annotations given; for EDF+C the edfplus crate reads the copy the same.
fn round_trip(original: &Path, expect: Format) {
    use ede::recording::Annotation;
    use ede::recording::edf_write::write_with_annotations;
    let rec = Recording::open(original, &OpenOptions::default()).unwrap();
    let mut events = rec.annotations.clone();
    events.push(Annotation {
        onset: 1.25,
        duration: 0.0,
        text: "spike".into(),
    });
    events.push(Annotation {
        onset: 2.5,
        duration: 1.75,
        text: "artifact, movement".into(),
    });
    events.push(Annotation {
        onset: rec.duration_s() - 0.5,
        duration: 0.0,
        text: "Ende ä".into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(original.file_name().unwrap());
    write_with_annotations(&rec, &copy, &events).unwrap();
    let back = Recording::open(&copy, &OpenOptions::default()).unwrap();
    assert_eq!(back.format, expect, "{}", original.display());
    assert_eq!(back.start, rec.start);
    assert_eq!(back.segments, rec.segments);
    assert_eq!(back.signals.len(), rec.signals.len());
    for (i, (a, b)) in rec.signals.iter().zip(&back.signals).enumerate() {
        assert_eq!(
            (&a.label, &a.unit, a.fs, a.samples),
            (&b.label, &b.unit, b.fs, b.samples)
        );
        assert_eq!(
            rec.read_all(i).unwrap(),
            back.read_all(i).unwrap(),
            "{}",
            a.label
        );
    }
    let mut want = events.clone();
    want.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    assert_eq!(back.annotations.len(), want.len());
    for (g, w) in back.annotations.iter().zip(&want) {
        assert!((g.onset - w.onset).abs() < 1e-6, "{g:?} vs {w:?}");
        assert!(
            (g.duration - w.duration).abs() < 1e-6 && g.text == w.text,
            "{g:?} vs {w:?}"
        );
    }
    if expect == Format::EdfPlusC {
        compare(&copy);
    }
    // The original is untouched, and it cannot be the target.
    assert!(write_with_annotations(&rec, original, &events).is_err());
    assert_eq!(
        Recording::open(original, &OpenOptions::default())
            .unwrap()
            .annotations,
        rec.annotations
    );
}

#[test]
fn copies_with_new_annotations_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.edf");
    common::write_edf(
        &plain,
        false,
        None,
        1.0,
        &common::two_signals(6, false),
        None,
        &[],
    );
    round_trip(&plain, Format::EdfPlusC);
    let Some(data) = common::shared_data() else {
        return;
    };
    round_trip(&data.join("edf/test_generator_2.edf"), Format::EdfPlusC);
    round_trip(&data.join("bdf/test_generator_2.bdf"), Format::BdfPlusC);
    round_trip(&data.join("edf/nihonkohden_MB0400FU.edf"), Format::EdfPlusD);
    round_trip(&data.join("edf/subsecond_starttime.edf"), Format::EdfPlusC);
}

/// A clip (the records covering a window, some signals) as EDF+: its samples equal the
/// source's bit for bit, it starts at the clip's time, and it keeps the annotations inside,
/// counted from its start.
fn clip_round_trip(original: &Path, window: (f64, f64), signals: Vec<usize>) {
    use ede::recording::Annotation;
    use ede::recording::edf_write::{Clip, write_clip};
    let rec = Recording::open(original, &OpenOptions::default()).unwrap();
    let mut events = rec.annotations.clone();
    events.push(Annotation {
        onset: window.0 + 0.5,
        duration: 0.25,
        text: "inside".into(),
    });
    events.push(Annotation {
        onset: window.1 + 30.0,
        duration: 0.0,
        text: "after".into(),
    });
    let clip = Clip::covering(&rec, window, signals.clone());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("clip.edf");
    write_clip(&rec, &out, &events, Some(&clip)).unwrap();
    let back = Recording::open(&out, &OpenOptions::default()).unwrap();
    let d = rec.record_duration;
    let clip_start = clip.records.start as f64 * d;
    assert!(clip_start <= window.0 && window.0 < clip_start + d);
    assert!(clip.records.end as f64 * d >= window.1.min(rec.duration_s()));
    let expected_start = rec.start + chrono::Duration::milliseconds((clip_start * 1e3) as i64);
    assert_eq!(back.start, expected_start);
    assert_eq!(back.signals.len(), signals.len());
    for (k, &j) in signals.iter().enumerate() {
        let (a, b) = (&rec.signals[j], &back.signals[k]);
        assert_eq!((&a.label, a.fs), (&b.label, b.fs));
        let spr = a.samples_per_record;
        let mut want = vec![0f32; clip.records.len() * spr];
        rec.read(j, clip.records.start * spr, &mut want).unwrap();
        let got = back.read_all(k).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{}",
            a.label
        );
    }
    let clip_end = clip_start + clip.records.len() as f64 * d;
    let inside: Vec<(f64, String)> = events
        .iter()
        .filter(|a| a.onset + a.duration >= clip_start && a.onset < clip_end)
        .map(|a| (a.onset - clip_start, a.text.clone()))
        .collect();
    let got: Vec<(f64, String)> = back
        .annotations
        .iter()
        .map(|a| (a.onset, a.text.clone()))
        .collect();
    assert_eq!(got.len(), inside.len(), "{got:?} vs {inside:?}");
    for (g, w) in got.iter().zip(&inside) {
        assert!((g.0 - w.0).abs() < 1e-6 && g.1 == w.1, "{g:?} vs {w:?}");
    }
    assert!(got.iter().any(|a| a.1 == "inside") && !got.iter().any(|a| a.1 == "after"));
    compare(&out);
}

#[test]
fn clips_of_the_visible_window_equal_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.edf");
    common::write_edf(
        &plain,
        false,
        None,
        1.0,
        &common::two_signals(30, false),
        None,
        &[],
    );
    clip_round_trip(&plain, (10.3, 15.2), vec![1]);
    let Some(data) = common::shared_data() else {
        return;
    };
    clip_round_trip(
        &data.join("edf/test_generator_2.edf"),
        (100.3, 110.2),
        vec![1, 3, 10],
    );
}
