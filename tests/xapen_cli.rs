//! `ede xapen` as a researcher runs it: several files, one bad, JSON out, both backends.

mod common;

use common::{TestSignal, ede, write_edf};
use ede::dsp::xapen::{Correction, reference};

fn signals(seed: u64) -> Vec<TestSignal> {
    let mut state = seed;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as i32 % 4000 - 2000
    };
    let n = 2000;
    ["Fp1", "Cz", "O2"]
        .iter()
        .enumerate()
        .map(|(k, &label)| TestSignal {
            label,
            samples_per_record: 100,
            digital: (0..n)
                .map(|i| ((i as f64 * 0.3 * (k + 1) as f64).sin() * 5000.0) as i32 + noise())
                .collect(),
            physical_min: -500.0,
            physical_max: 500.0,
            digital_min: -32768,
            digital_max: 32767,
        })
        .collect()
}

#[test]
fn batch_over_files_writes_json_and_survives_a_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("s01.edf"), dir.path().join("s02.edf"));
    write_edf(&a, false, None, 1.0, &signals(1), None, &[]);
    write_edf(&b, false, None, 1.0, &signals(2), None, &[]);
    let bad = dir.path().join("s03.edf");
    std::fs::write(&bad, b"not an edf").unwrap();
    let out = dir.path().join("study.json");
    let o = ede(&[
        "xapen",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        bad.to_str().unwrap(),
        "--epoch-len",
        "256",
        "--epochs",
        "3",
        "--r",
        "0.25",
        "--correction",
        "zero",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "one file failed, so the exit code says so"
    );
    assert!(
        stderr.contains("[1/3]") && stderr.contains("[3/3]") && stderr.contains("s03.edf"),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let reports = json.as_array().unwrap();
    assert_eq!(reports.len(), 2);
    let r = &reports[0];
    assert_eq!(r["channels"], serde_json::json!(["Fp1", "Cz", "O2"]));
    assert_eq!(
        (
            r["m"].as_u64(),
            r["epoch_len"].as_u64(),
            r["epochs"].as_u64()
        ),
        (Some(1), Some(256), Some(3))
    );
    assert_eq!(r["correction"], "zero");
    assert_eq!(r["backend"], "cpu");
    assert_eq!(r["start_sample"], 0);
    assert!(r["elapsed_s"].as_f64().unwrap() >= 0.0);

    // The mean over epochs, against the reference on the file's own values.
    let rec = ede::recording::Recording::open(&a, &Default::default()).unwrap();
    let series = |c: usize, e: usize| -> Vec<f64> {
        let mut buf = vec![0f32; 256];
        rec.read(c, e * 256, &mut buf).unwrap();
        buf.iter().map(|&x| x as f64).collect()
    };
    for u in 0..3 {
        for v in 0..3 {
            let want: f64 = (0..3)
                .map(|e| {
                    reference::cross_apen(&series(u, e), &series(v, e), 1, 0.25, Correction::Zero)
                        .unwrap()
                        .unwrap()
                })
                .sum::<f64>()
                / 3.0;
            let got = r["matrix"][u][v].as_f64().unwrap();
            assert!((got - want).abs() < 1e-4, "({u},{v}): {got} vs {want}");
        }
    }
}

#[test]
fn one_epoch_at_a_start_time_per_file_and_backends_agree() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("rec.edf");
    write_edf(&a, false, None, 1.0, &signals(5), None, &[]);
    let cpu_dir = dir.path().join("cpu");
    let one_epoch = [
        "xapen",
        a.to_str().unwrap(),
        "--epoch-len",
        "300",
        "--epochs",
        "1",
        "--start",
        "2.5",
        "--channels",
        "O2,Fp1",
        "--m",
        "2",
    ];
    let with = |more: &[&str]| ede(&[&one_epoch[..], more].concat());
    let o = with(&[
        "--per-epoch",
        "--backend",
        "cpu",
        "--out-dir",
        cpu_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read = |p: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let cpu = read(cpu_dir.join("rec.xapen.json"));
    assert_eq!(cpu["start_sample"], 250);
    assert_eq!(cpu["channels"], serde_json::json!(["O2", "Fp1"]));
    assert_eq!(cpu["per_epoch"].as_array().unwrap().len(), 1);

    let o = with(&["--backend", "gpu"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let gpu: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for u in 0..2 {
        for v in 0..2 {
            let (g, c) = (
                gpu["matrix"][u][v].as_f64().unwrap(),
                cpu["matrix"][u][v].as_f64().unwrap(),
            );
            assert!((g - c).abs() < 1e-5, "{g} vs {c} ({})", gpu["backend"]);
        }
    }
}

#[test]
fn bad_requests_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("rec.edf");
    write_edf(&a, false, None, 1.0, &signals(9), None, &[]);
    let p = a.to_str().unwrap();
    for (args, needle) in [
        (vec!["--epoch-len", "5000"], "hold 2000 samples"),
        (vec!["--epoch-len", "2"], "too short"),
        (vec!["--m", "0"], "m = 0"),
        (vec!["--r=-1"], "r = -1"),
        (
            vec!["--channels", "Pz"],
            "no channel or channel type \"Pz\"",
        ),
        (vec!["--epochs", "0"], "positive number"),
    ] {
        let mut all = vec!["xapen", p, "--backend", "cpu"];
        all.extend(args);
        let o = ede(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(needle),
            "{all:?}: {err}"
        );
    }
}
