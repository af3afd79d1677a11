//! `ede psd` against `scipy.signal.welch` on recordings MNE-Python read
//! (tests/fixtures/psd_welch.json, made by make_psd_fixture.py): every bin to 1e-4 relative.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn psd_equals_scipy_welch() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(fixtures.join("psd_welch.json")).unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (k, case) in fixture["cases"].as_array().unwrap().iter().enumerate() {
        let out = dir.path().join(format!("{k}.json"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ede"));
        cmd.arg("psd")
            .arg(fixtures.join(case["file"].as_str().unwrap()))
            .args(["--start", &case["start"].to_string()])
            .args(["--segment", &case["segment"].to_string()])
            .args(["--overlap", &case["overlap"].to_string()])
            .arg("--out")
            .arg(&out);
        if let Some(d) = case["duration"].as_f64() {
            cmd.args(["--duration", &d.to_string()]);
        }
        if let Some(c) = case["channels"].as_array() {
            let labels: Vec<&str> = c.iter().map(|v| v.as_str().unwrap()).collect();
            cmd.args(["--channels", &labels.join(",")]);
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "case {k}: ede psd failed");
        let got: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(got["channels"], case["expected_channels"], "case {k}");
        let (f, want_f) = (
            common::floats(&got["frequencies_hz"]),
            common::floats(&case["frequencies_hz"]),
        );
        assert_eq!(f.len(), want_f.len(), "case {k}: bins");
        for (a, b) in f.iter().zip(&want_f) {
            assert!((a - b).abs() < 1e-9, "case {k}: frequency {a} vs {b}");
        }
        for (c, (row, want)) in (got["psd"].as_array().unwrap().iter())
            .zip(case["psd"].as_array().unwrap())
            .enumerate()
        {
            let (row, want) = (common::floats(row), common::floats(want));
            let top = want.iter().cloned().fold(0.0, f64::max);
            for (i, (a, b)) in row.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * (b.abs() + 1e-6 * top),
                    "case {k}, channel {c}, bin {i}: {a} vs SciPy's {b}"
                );
            }
        }
    }
}

#[test]
fn psd_refuses_what_holds_no_segment() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/set_inline.set");
    for args in [
        vec!["--segment", "10"],
        vec!["--overlap", "1"],
        vec!["--segment", "0"],
        vec!["--start", "-1"],
        vec!["--channels", "NoSuch"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ede"))
            .arg("psd")
            .arg(&file)
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(!out.stderr.is_empty(), "{args:?}: a message");
    }
}
