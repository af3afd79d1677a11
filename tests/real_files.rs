//! Real clinical files read as a clinician must be able to trust them (issue 65): the average
//! reference over the scalp electrodes in one unit, BioSemi triggers and stimulus steps as
//! MNE-Python's `find_events` finds them, pNN50 decided in samples, defaults that fit short
//! files. Reference numbers: `tests/fixtures/make_real_file_fixture.py` (MNE-Python), checked in.

mod common;

use std::path::Path;

use common::{ede, shared_data};
use ede::recording::{ChannelType, OpenOptions, Recording, stim_steps, volts_per_unit};
use serde_json::Value;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real_files_mne.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn run_ok(args: &[&str]) -> String {
    let run = ede(args);
    assert!(
        run.status.success(),
        "ede {args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stdout).unwrap()
}

/// `ede export FILE --reference average` equals, channel by channel, the channel minus the
/// mean of the scalp electrodes in microvolts, as computed from MNE's reading: DC, oximetry,
/// ECG and Nihon Kohden's millivolt `$A1/$A2` inputs never enter the mean.
#[test]
fn the_average_reference_is_the_mean_of_the_scalp_electrodes_in_one_unit() {
    let Some(data) = shared_data() else { return };
    let fx = fixture();
    for (file, want) in fx["average_reference"].as_object().unwrap() {
        let path = data.join("edf").join(file);
        let rec = Recording::open(&path, &OpenOptions::default()).unwrap();
        let scalp: Vec<String> = (rec.scalp_electrodes().into_iter())
            .map(|i| rec.signals[i].label.clone())
            .collect();
        let want_scalp: Vec<String> = (want["scalp"].as_array().unwrap().iter())
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(scalp, want_scalp, "{file}: the scalp electrodes");

        let csv = run_ok(&[
            "export",
            path.to_str().unwrap(),
            "--reference",
            "average",
            "--duration",
            "2",
        ]);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').skip(1).collect();
        let rows: Vec<Vec<f64>> = lines
            .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
            .collect();
        let mut compared = 0;
        for (name, values) in want["channels"].as_object().unwrap() {
            let i = rec.signal_index(name).unwrap();
            let s = &rec.signals[i];
            if s.kind != ChannelType::Eeg {
                continue; // ede types it ECG, oximetry or DC: not re-referenced
            }
            let column = header.iter().position(|h| h.trim() == name).unwrap();
            let to_uv = volts_per_unit(&s.unit).unwrap() / 1e-6;
            let want: Vec<f64> = common::floats(values);
            let rms = (want.iter().map(|v| v * v).sum::<f64>() / want.len() as f64).sqrt();
            let worst = (rows.iter().zip(&want))
                .map(|(row, w)| (row[column] * to_uv - w).abs())
                .fold(0.0, f64::max);
            assert!(
                worst <= 1e-3 * rms.max(1.0),
                "{file} {name}: off by {worst} uV (RMS {rms} uV)"
            );
            compared += 1;
        }
        assert!(compared >= want_scalp.len() + 2, "{file}: {compared}");
    }
}

/// A Status channel gives the events `mne.find_events(raw, 'Status', shortest_event=1)` finds,
/// at its samples, the code as their text: the BDF's 9 (its low 16 bits), and the 13 of an
/// EDF made from a BioSemi recording (`test_reduced.edf`, whose codes 4096 and 4100 MNE reads
/// from the stored integers too).
#[test]
fn status_triggers_are_the_events_mne_finds() {
    let Some(data) = shared_data() else { return };
    for (file, fx) in fixture()["events"].as_object().unwrap() {
        let path = data.join(file);
        let info: Value =
            serde_json::from_str(&run_ok(&["info", "--json", path.to_str().unwrap()])).unwrap();
        let fs = fx["fs"].as_f64().unwrap();
        let got: Vec<(i64, String)> = (info["events"].as_array().unwrap().iter())
            .filter(|e| e["channels"] == serde_json::json!(["Status"]))
            .map(|e| {
                let sample = (e["onset_s"].as_f64().unwrap() * fs).round() as i64;
                (sample, e["text"].as_str().unwrap().to_string())
            })
            .collect();
        let want: Vec<(i64, String)> = (fx["events"].as_array().unwrap().iter())
            .map(|e| {
                let e = common::floats(e);
                (e[0] as i64, format!("{}", e[2] as i64))
            })
            .collect();
        assert_eq!(got, want, "{file}");
        let status = (info["signals"].as_array().unwrap().iter())
            .find(|s| s["label"] == "Status")
            .unwrap();
        assert_eq!(status["type"], "stim", "{file}");
    }
}

/// Stimulus channels give events only from steps between integer codes: analog noise below 1
/// (a Neuromag STI channel's 0.006-0.07) gives none; a code the channel starts on is none; a
/// step down between two codes is the end of one event, not a new one.
#[test]
fn stimulus_steps_follow_find_events() {
    let mut noise = 0x2545_f491_4f6c_dd1du64;
    let analog: Vec<f32> = (0..10_000)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            0.006 + 0.064 * (noise % 1000) as f32 / 1000.0
        })
        .collect();
    assert!(stim_steps(&analog).is_empty());
    let codes = [3.0, 3.0, 0.0, 5.0, 5.0, 5.0, 1.0, 0.0, 0.0, 2.9, -4.0, 0.0];
    let steps: Vec<(usize, i64, usize)> = (stim_steps(&codes).into_iter())
        .map(|s| (s.sample, s.code, s.samples))
        .collect();
    // 2.9 is code 2 and -4 is code 4, as MNE truncates and takes magnitudes.
    assert_eq!(steps, [(3, 5, 3), (9, 2, 1), (10, 4, 1)]);
    // A "Trigger" channel carrying an analog signal in uV (integer-valued, never steady) makes
    // no events, and says so.
    let Some(data) = shared_data() else { return };
    let rec = Recording::open(
        &data.join("bdf/multiple_annotation_chans.bdf"),
        &OpenOptions::default(),
    )
    .unwrap();
    assert!(
        rec.annotations
            .iter()
            .all(|a| a.channel() != Some("Trigger"))
    );
    assert!(
        rec.warnings
            .iter()
            .any(|w| w.contains("Trigger: its value steps up"))
    );
}

/// pNN50 on MIT-BIH record 100 counts differences strictly over 50 ms, decided in samples:
/// 33 differences of exactly 18 samples (50 ms at 360 Hz) are not over it.
#[test]
fn pnn50_is_decided_in_samples() {
    let Some(data) = shared_data() else { return };
    let record = data.join("ecg/mitdb/100");
    let out: Value = serde_json::from_str(&run_ok(&["hrv", record.to_str().unwrap()])).unwrap();
    let pnn50 = out["pnn50_pct"].as_f64().unwrap();
    assert!((pnn50 - 5.35).abs() < 0.005, "pNN50 {pnn50} %");
}

/// A 10 s run shorter than the default epoch gets an epoch that fits, and a length it cannot
/// hold is refused with the numbers it has.
#[test]
fn cross_apen_defaults_fit_a_short_recording() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("short.csv");
    let mut text = String::from("time,Fz,Cz,Pz\n");
    for k in 0..900 {
        let t = k as f64 / 90.0;
        let v = |f: f64| (t * f).sin() * 20.0 + ((k * 7919) % 13) as f64;
        text += &format!("{t},{},{},{}\n", v(3.0), v(5.0), v(7.0));
    }
    std::fs::write(&csv, text).unwrap();
    let out: Value = serde_json::from_str(&run_ok(&[
        "xapen",
        csv.to_str().unwrap(),
        "--backend",
        "cpu",
    ]))
    .unwrap();
    assert_eq!(out["epoch_len"], 512, "{out}");
    let run = ede(&[
        "xapen",
        csv.to_str().unwrap(),
        "--epoch-len",
        "1024",
        "--backend",
        "cpu",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        err.contains("hold 900 samples") && err.contains("512"),
        "{err}"
    );
}

/// What a flag promises or a clear error naming the value: impossible filters are refused,
/// a start past the end is an error, not a header alone.
#[test]
fn impossible_settings_are_refused_with_the_reason() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("edf/chtypes_edf.edf");
    let edf = edf.to_str().unwrap();
    for (args, why) in [
        (vec!["export", edf, "--filter", "lp=0"], "above 0 Hz"),
        (
            vec!["export", edf, "--filter", "hp=30,lp=10"],
            "at or above",
        ),
        (
            vec!["export", edf, "--filter", "hp=abc"],
            "\"abc\" is not a number",
        ),
        (vec!["export", edf, "--filter", "lp=150"], "Nyquist"),
        (
            vec!["export", edf, "--start", "1e9"],
            "past the recording's end",
        ),
        (vec![edf, "--sensitivity", "0"], "above 0"),
        (vec![edf, "--clip", "0.5"], "lanes >= 1"),
    ] {
        let run = ede(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{args:?} succeeded");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(
            run.stdout.is_empty(),
            "{args:?} wrote {} bytes",
            run.stdout.len()
        );
    }
}

/// Every file of the shared data at the clinical page (double banana and the scalp electrodes
/// under average reference, hp 0.5, lp 35, order 4, notch 50): it opens or is refused with a
/// message; an average only ever mixes scalp electrodes, each taken into the trace's unit; a
/// montage says what it leaves out; events lie inside the recording and are never thousands a
/// second.
#[test]
fn every_shared_file_reads_right_at_the_clinical_page() {
    use ede::dsp::filter::DisplayFilter;
    use ede::dsp::montage::{self, BuiltIn, Reference};
    let Some(data) = shared_data() else { return };
    let mut files = Vec::new();
    let mut stack = vec![data.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            match p.is_dir() {
                true => stack.push(p),
                false => files.push(p),
            }
        }
    }
    files.sort();
    let clinical = DisplayFilter::parse("hp=0.5,lp=35,order=4,notch=50").unwrap();
    let mut opened = 0;
    for path in files {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !["edf", "bdf", "hea", "fif", "vhdr", "set", "xdf", "csv"].contains(&ext) {
            continue;
        }
        let name = path.strip_prefix(&data).unwrap().display().to_string();
        let rec = match Recording::open(&path, &OpenOptions::default()) {
            Ok(r) => r,
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{name}");
                continue;
            }
        };
        opened += 1;
        let span = rec.time_span_s();
        for a in &rec.annotations {
            assert!(a.onset >= -1e-9 && a.onset <= span + 1.0, "{name}: {a:?}");
        }
        let stim = rec
            .annotations
            .iter()
            .filter(|a| a.channel().is_some())
            .count();
        assert!(
            stim as f64 <= 50.0 * span.max(1.0),
            "{name}: {stim} channel events"
        );
        if rec.signals.is_empty() {
            continue;
        }
        let scalp = rec.scalp_electrodes();
        for &i in &scalp {
            assert_eq!(rec.signals[i].kind, ChannelType::Eeg, "{name}");
        }
        let plain = BuiltIn::as_recorded(&rec);
        if scalp.len() >= 3 {
            let r = montage::resolve(&rec, &plain, &Reference::Average).unwrap();
            for d in &r.derivations {
                for &(c, w) in &d.minus {
                    if c == d.plus {
                        continue;
                    }
                    assert!(
                        scalp.contains(&c),
                        "{name}: {} averages in {}",
                        d.label,
                        rec.signals[c].label
                    );
                    let own = 1.0
                        / scalp
                            .iter()
                            .filter(|&&s| rec.signals[s].fs == rec.signals[d.plus].fs)
                            .count() as f64;
                    let want = own * rec.unit_factor(c, d.plus);
                    assert!(
                        (w as f64 - want).abs() <= 1e-6 * want,
                        "{name}: {} {w}",
                        d.label
                    );
                }
            }
        }
        if let Some(banana) = BuiltIn::DoubleBanana.montage(&rec) {
            let r = montage::resolve(&rec, &banana, &Reference::Average).unwrap();
            assert_eq!(r.derivations.len() + r.skipped.len(), 18, "{name}");
            for d in &r.derivations {
                // A bipolar pair is the pair alone under any reference, in the file's names.
                assert_eq!(d.minus.len(), 1, "{name}: {}", d.label);
                let plus = ede::recording::electrodes::electrode_label(&rec.signals[d.plus].label);
                assert!(d.label.starts_with(plus), "{name}: {} from {plus}", d.label);
            }
        }
        let fastest = rec.signals.iter().map(|s| s.fs).fold(0.0, f64::max);
        if fastest > 70.0 {
            clinical.validate_at(fastest).unwrap();
        }
    }
    assert!(opened >= 14, "{opened} files opened");
}
