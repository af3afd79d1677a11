//! Sleep statistics against YASA 0.8's `Hypnogram.sleep_statistics` on generated hypnograms
//! (tests/fixtures/sleep_yasa.json, made by make_sleep_fixture.py): every value to YASA's 4
//! decimals, NaN where YASA's is, and ART/UNS reported only where YASA reports them; and
//! `ede sleep` on the shared Sleep-EDF hypnogram, whole and between lights off and on.

mod common;

use ede::dsp::sleep::{Stage, statistics};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sleep_yasa.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every statistic YASA reports, and no other, to its 4 decimals.
fn same(got: &Value, want: &Value, case: &str) {
    let want = want.as_object().unwrap();
    let mut keys: Vec<&String> = got.as_object().unwrap().keys().collect();
    let mut want_keys: Vec<&String> = want.keys().collect();
    keys.sort();
    want_keys.sort();
    assert_eq!(keys, want_keys, "{case}: the statistics reported");
    for (name, w) in want {
        let g = &got[name];
        match (g.as_f64(), w.as_f64()) {
            (Some(g), Some(w)) => {
                assert!((g - w).abs() <= 5.1e-5, "{case}: {name} {g} vs YASA's {w}")
            }
            (None, None) => {}
            _ => panic!("{case}: {name} {g} vs YASA's {w}"),
        }
    }
}

fn stage(yasa: &str) -> Stage {
    match yasa {
        "WAKE" => Stage::Wake,
        "N1" => Stage::N1,
        "N2" => Stage::N2,
        "N3" => Stage::N3,
        "REM" => Stage::Rem,
        "ART" => Stage::Art,
        "UNS" => Stage::Uns,
        other => panic!("stage {other}"),
    }
}

#[test]
fn sleep_statistics_equal_yasas() {
    for (k, case) in fixture()["cases"].as_array().unwrap().iter().enumerate() {
        let stages: Vec<Stage> = (case["stages"].as_array().unwrap().iter())
            .map(|s| stage(s.as_str().unwrap()))
            .collect();
        let stats = statistics(&stages, case["epoch_s"].as_f64().unwrap()).unwrap();
        same(
            &serde_json::to_value(&stats).unwrap(),
            &case["statistics"],
            &format!("case {k}"),
        );
    }
}

#[test]
fn ede_sleep_on_the_shared_hypnogram_equals_yasa() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    for (k, case) in fixture["shared"].as_array().unwrap().iter().enumerate() {
        let file = data.join(case["file"].as_str().unwrap());
        if !file.exists() {
            eprintln!("skipped: {} is absent", file.display());
            return;
        }
        let out = dir.path().join(format!("{k}.json"));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ede"));
        cmd.arg("sleep").arg(&file).arg("--out").arg(&out);
        for flag in ["lights_off", "lights_on"] {
            if let Some(s) = case[flag].as_f64() {
                cmd.arg(format!("--{}", flag.replace('_', "-")))
                    .arg(s.to_string());
            }
        }
        assert!(
            cmd.status().unwrap().success(),
            "case {k}: ede sleep failed"
        );
        let got: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        same(
            &got["statistics"],
            &case["statistics"],
            &format!("shared case {k}"),
        );
    }
}

/// `--stage LABEL=STAGE` scores a lab's own labels: Sleep-EDF's stage 2 read as REM moves all
/// of N2's minutes to REM; a stage that is none is refused with the ones there are.
#[test]
fn ede_sleep_takes_a_lab_s_own_labels() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let file = data.join("edf/SC4001EC-Hypnogram.edf");
    if !file.exists() {
        return;
    }
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ede"))
            .arg("sleep")
            .arg(&file)
            .args(extra)
            .output()
            .unwrap();
        (out.status.success(), out.stdout, out.stderr)
    };
    let stats =
        |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap()["statistics"].clone();
    let (ok, plain, _) = run(&[]);
    assert!(ok);
    let (ok, mapped, _) = run(&["--stage", "Sleep stage 2=REM"]);
    assert!(ok);
    let (plain, mapped) = (stats(&plain), stats(&mapped));
    assert_eq!(mapped["N2"], 0.0);
    let sum = plain["N2"].as_f64().unwrap() + plain["REM"].as_f64().unwrap();
    assert_eq!(mapped["REM"].as_f64().unwrap(), sum);
    let (ok, _, err) = run(&["--stage", "Sleep stage 2=deep"]);
    assert!(!ok && String::from_utf8_lossy(&err).contains("N1, N2, N3"));
}
