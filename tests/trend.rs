//! `ede trend` and `ede hrv` against numbers made by other tools (tests/fixtures/trend_ref.json,
//! made by make_trend_fixture.py): CDSA against scipy.signal.welch per segment, aEEG against
//! EDFbrowser's chain written with SciPy, HRV against numpy on wfdb-python's reading of MIT-BIH
//! 100's beats. Cases on the shared recordings are skipped when those are absent.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn reference() -> Value {
    let text = std::fs::read_to_string(fixtures().join("trend_ref.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The case's file, `None` (said) when it is a shared recording that is absent.
fn file_of(case: &Value) -> Option<PathBuf> {
    let name = case["file"].as_str().unwrap();
    let path = match name.strip_prefix("shared:") {
        Some(rest) => common::shared_data()?.join(rest),
        None => fixtures().join(name),
    };
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipped: {} is absent", path.display());
        None
    }
}

fn ede(args: &[&str], file: &Path) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let output = Command::new(env!("CARGO_BIN_EXE_ede"))
        .args(&args[..1])
        .arg(file)
        .args(&args[1..])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ede {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

fn channels(case: &Value) -> String {
    let c: Vec<&str> = (case["channels"].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap())
        .collect();
    c.join(",")
}

#[test]
fn cdsa_equals_welch_per_segment() {
    for case in reference()["cdsa"].as_array().unwrap() {
        let Some(file) = file_of(case) else { continue };
        let got = ede(
            &[
                "trend",
                "--cdsa",
                "--channels",
                &channels(case),
                "--segment",
                &case["segment"].to_string(),
                "--block",
                &case["block"].to_string(),
                "--overlap",
                &case["overlap"].to_string(),
            ],
            &file,
        );
        assert_eq!(got["channels"], case["channels"]);
        let f = common::floats(&got["frequencies_hz"]);
        assert_eq!(f, common::floats(&case["frequencies_hz"]));
        let (rows, want) = (
            got["power"].as_array().unwrap(),
            case["power"].as_array().unwrap(),
        );
        assert_eq!(rows.len(), want.len());
        for (c, (row, want_row)) in rows.iter().zip(want).enumerate() {
            let (row, want_row) = (row.as_array().unwrap(), want_row.as_array().unwrap());
            assert_eq!(row.len(), want_row.len(), "{file:?} channel {c}: segments");
            for (s, (a, b)) in row.iter().zip(want_row).enumerate() {
                for (k, (x, y)) in common::floats(a).iter().zip(common::floats(b)).enumerate() {
                    // 1e-4 relative in power is 4.3e-4 dB.
                    assert!(
                        (x - y).abs() < 4.3e-4,
                        "{file:?} channel {c} segment {s} bin {k}: {x} dB vs {y} dB"
                    );
                }
            }
        }
    }
}

#[test]
fn aeeg_equals_edfbrowser_s_chain_in_scipy() {
    for case in reference()["aeeg"].as_array().unwrap() {
        let Some(file) = file_of(case) else { continue };
        let got = ede(
            &[
                "trend",
                "--aeeg",
                "--channels",
                &channels(case),
                "--segment",
                &case["segment"].to_string(),
            ],
            &file,
        );
        for key in ["lower_uv", "upper_uv"] {
            let (rows, want) = (got[key].as_array().unwrap(), case[key].as_array().unwrap());
            assert_eq!(rows.len(), want.len());
            for (c, (row, want_row)) in rows.iter().zip(want).enumerate() {
                let (row, want_row) = (common::floats(row), common::floats(want_row));
                assert_eq!(row.len(), want_row.len(), "{file:?} {key} {c}: segments");
                for (s, (x, y)) in row.iter().zip(&want_row).enumerate() {
                    // f32 filtering against SciPy's f64.
                    assert!(
                        (x - y).abs() <= 1e-3 * y.abs().max(1e-3),
                        "{file:?} {key} channel {c} segment {s}: {x} vs {y}"
                    );
                }
            }
        }
    }
}

#[test]
fn hrv_equals_numpy_on_mitbih_100() {
    for case in reference()["hrv"].as_array().unwrap() {
        let Some(data) = common::shared_data() else {
            return;
        };
        let record = data.join(case["record"].as_str().unwrap());
        if !record.with_extension("atr").exists() {
            eprintln!("skipped: {} is absent", record.display());
            continue;
        }
        let got = ede(&["hrv"], &record);
        assert_eq!(got["source"], "annotations");
        for key in ["beats", "nn_intervals"] {
            assert_eq!(got[key], case[key], "{key}");
        }
        for key in [
            "mean_nn_ms",
            "sdnn_ms",
            "rmssd_ms",
            "pnn50_pct",
            "mean_hr_bpm",
            "lf_ms2",
            "hf_ms2",
            "lf_hf",
        ] {
            let (x, y) = (got[key].as_f64().unwrap(), case[key].as_f64().unwrap());
            assert!((x - y).abs() <= 1e-9 * y.abs(), "{key}: {x} vs {y}");
        }
    }
}

/// `--hemispheres`: a row per side, the mean power (not dB) of its channels' rows.
#[test]
fn hemisphere_rows_average_their_channels_power() {
    let fif = fixtures().join("fif_split_raw.fif");
    let rows = ede(&["trend", "--cdsa"], &fif);
    let sides = ede(&["trend", "--cdsa", "--hemispheres"], &fif);
    // EEG 001 is odd (left), EEG 002 even (right): one channel each.
    assert_eq!(sides["channels"][0], "left (1 traces)");
    assert_eq!(sides["channels"][1], "right (1 traces)");
    for side in 0..2 {
        let (a, b) = (&rows["power"][side], &sides["power"][side]);
        for (x, y) in (a.as_array().unwrap().iter()).zip(b.as_array().unwrap()) {
            for (p, q) in common::floats(x).iter().zip(common::floats(y)) {
                assert!((p - q).abs() < 1e-4, "{p} dB vs {q} dB");
            }
        }
    }
}

#[test]
fn bad_requests_say_why() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ede"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let fif = fixtures().join("fif_split_raw.fif");
    let fif = fif.to_str().unwrap();
    assert!(run(&["trend", fif]).contains("--cdsa"));
    assert!(run(&["trend", fif, "--cdsa", "--segment", "0.5"]).contains("whole"));
    assert!(run(&["trend", fif, "--cdsa", "--block", "0"]).contains("block"));
    assert!(run(&["trend", fif, "--cdsa", "--channels", "Nope"]).contains("Nope"));
    assert!(run(&["hrv", fif]).contains("no ECG channel"));
    let bv = fixtures().join("bv_int16.vhdr");
    let bv = bv.to_str().unwrap();
    let no_sides = run(&["trend", bv, "--cdsa", "--hemispheres", "--channels", "Cz"]);
    assert!(no_sides.contains("hemisphere"), "{no_sides}");
}
