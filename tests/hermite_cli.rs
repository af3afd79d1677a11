//! `ede hermite` as a researcher runs it: beats from EDF+ annotations or, without any, from the
//! detector; the JSON fields against the reference fit; several records with a bad one.

mod common;

use common::{Rng, TestSignal, ede, write_edf};
use ede::dsp::hermite::{self, BeatWindow, HermiteParams};

/// A synthetic lead-II ECG at 250 Hz (mV, 5 uV steps) with beats every 0.7-0.9 s, and the R
/// peaks' samples.
fn ecg(seconds: usize) -> (TestSignal, Vec<usize>) {
    let fs = 250.0;
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let mut peaks = Vec::new();
    let mut t = 0.5;
    while t < seconds as f64 - 0.5 {
        peaks.push((t * fs) as usize);
        t += 0.7 + 0.2 * rng.next();
    }
    let beat = |x: f64| {
        let g = |mu: f64, s: f64, a: f64| a * (-((x - mu) / s).powi(2) / 2.0).exp();
        g(-0.2, 0.025, 0.15)
            + g(-0.03, 0.01, -0.12)
            + g(0.0, 0.012, 1.2)
            + g(0.03, 0.012, -0.28)
            + g(0.25, 0.045, 0.32)
    };
    let n = seconds * 250;
    let digital = (0..n)
        .map(|i| {
            let v: f64 = peaks
                .iter()
                .map(|&p| beat((i as f64 - p as f64) / fs))
                .sum::<f64>()
                + 0.01 * rng.gauss();
            (v / 0.005).round() as i32
        })
        .collect();
    let signal = TestSignal {
        label: "ECG II",
        samples_per_record: 250,
        digital,
        physical_min: -163.84,
        physical_max: 163.835,
        digital_min: -32768,
        digital_max: 32767,
    };
    (signal, peaks)
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_recording_without_annotations_runs_on_the_detector() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ecg.edf");
    let (signal, peaks) = ecg(60);
    write_edf(
        &file,
        false,
        None,
        1.0,
        std::slice::from_ref(&signal),
        None,
        &[],
    );
    let out = dir.path().join("fits.json");
    let o = ede(&[
        "hermite",
        file.to_str().unwrap(),
        "--order",
        "12",
        "--sigmas",
        "30",
        "--filter",
        "none",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out);
    for key in [
        "record",
        "channel",
        "fs",
        "order",
        "sigmas",
        "beats",
        "skipped",
        "mse_mean",
        "mse_sd",
        "elapsed_s",
    ] {
        assert!(r.get(key).is_some(), "{key}");
    }
    assert_eq!(r["channel"], "ECG II");
    assert_eq!(r["beat_source"], "detector");
    assert_eq!(r["sigmas"].as_array().unwrap().len(), 30);
    let beats = r["beats"].as_array().unwrap();
    // Every beat found, within 150 ms, none extra; labels null.
    let found: Vec<usize> = beats
        .iter()
        .map(|b| b["sample"].as_u64().unwrap() as usize)
        .collect();
    let skipped = r["skipped"].as_array().unwrap().len();
    assert_eq!(found.len() + skipped, peaks.len());
    let m = ede::dsp::qrs::BeatMatch::new(&found, &peaks, 37);
    assert_eq!(m.false_positives, 0);
    assert!(beats.iter().all(|b| b["label"].is_null()));
    // Each beat's fit is the reference fit of its window of the file's samples.
    let rec = ede::recording::Recording::open(&file, &Default::default()).unwrap();
    let x = rec.read_all(0).unwrap();
    let params = HermiteParams {
        order: 12,
        sigmas: 30,
        ..Default::default()
    };
    let w = BeatWindow::new(250.0).unwrap();
    let grid = params.sigma_grid().unwrap();
    for b in beats.iter().step_by(7) {
        let a = b["sample"].as_u64().unwrap() as usize;
        let first = w.start(a, x.len()).unwrap();
        let (s, mse, c) = hermite::reference(250.0, &params, &x[first..first + w.width()]);
        assert_eq!(b["sigma"].as_f64().unwrap(), grid[s]);
        assert!((b["mse"].as_f64().unwrap() - mse).abs() <= 1e-4 * mse);
        let got = b["coefficients"].as_array().unwrap();
        assert_eq!(got.len(), 12);
        for (g, want) in got.iter().zip(&c) {
            assert!((g.as_f64().unwrap() - want).abs() < 1e-5 * (1.0 + want.abs()));
        }
    }
    let mean = beats
        .iter()
        .map(|b| b["mse"].as_f64().unwrap())
        .sum::<f64>()
        / beats.len() as f64;
    assert!((r["mse_mean"].as_f64().unwrap() - mean).abs() < 1e-9 * mean.max(1.0));
}

#[test]
fn edf_plus_beat_annotations_give_the_beats_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ecg+.edf");
    let (signal, peaks) = ecg(30);
    let labels: Vec<(f64, String)> = peaks
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            (
                p as f64 / 250.0,
                if k % 5 == 3 { "V" } else { "N" }.to_string(),
            )
        })
        .chain([(1.0, "noise burst".to_string())])
        .collect();
    let annotations: Vec<(f64, &str)> = labels.iter().map(|(t, l)| (*t, l.as_str())).collect();
    write_edf(&file, false, Some('C'), 1.0, &[signal], None, &annotations);
    let out = dir.path().join("fits.json");
    let o = ede(&[
        "hermite",
        file.to_str().unwrap(),
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&out);
    assert_eq!(r["beat_source"], "annotations");
    let beats = r["beats"].as_array().unwrap();
    assert_eq!(
        beats.len() + r["skipped"].as_array().unwrap().len(),
        peaks.len()
    );
    for b in beats {
        let a = b["sample"].as_u64().unwrap() as usize;
        let k = peaks
            .iter()
            .position(|&p| p == a)
            .expect("an annotated beat");
        assert_eq!(b["label"], if k % 5 == 3 { "V" } else { "N" });
    }
}

#[test]
fn several_records_with_a_bad_one_and_bad_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.edf");
    write_edf(&good, false, None, 1.0, &[ecg(20).0], None, &[]);
    let bad = dir.path().join("bad.edf");
    std::fs::write(&bad, b"not an EDF at all").unwrap();
    let outdir = dir.path().join("out");
    let o = ede(&[
        "hermite",
        bad.to_str().unwrap(),
        good.to_str().unwrap(),
        "--backend",
        "cpu",
        "--out-dir",
        outdir.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.edf") && err.contains("1 of 2"), "{err}");
    let r = json(&outdir.join("good.hermite.json"));
    assert!(r["beats"].as_array().unwrap().len() > 15);
    assert!(!outdir.join("bad.hermite.json").exists());

    for (args, says) in [
        (vec!["--order", "0"], "order"),
        (vec!["--sigmas", "0"], "sigma values"),
        (
            vec!["--sigma-min", "0.05", "--sigma-max", "0.01"],
            "sigma range",
        ),
        (vec!["--channel", "V9"], "no channel"),
    ] {
        let mut all = vec!["hermite", good.to_str().unwrap(), "--backend", "cpu"];
        all.extend(args);
        let o = ede(&all);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn record_100_gpu_equals_cpu_through_the_cli() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let path = data.join("ecg/mitdb/100.hea");
    let dir = tempfile::tempdir().unwrap();
    let run = |backend: &str| {
        let out = dir.path().join(format!("{backend}.json"));
        let o = ede(&[
            "hermite",
            path.to_str().unwrap(),
            "--channel",
            "MLII",
            "--order",
            "10",
            "--backend",
            backend,
            "--out",
            out.to_str().unwrap(),
        ]);
        if !o.status.success() {
            return None;
        }
        Some(json(&out))
    };
    let cpu = run("cpu").expect("the CPU run");
    let beats = cpu["beats"].as_array().unwrap();
    assert_eq!(beats.len(), 2272);
    assert_eq!(cpu["skipped"].as_array().unwrap().len(), 1);
    let Some(gpu) = run("gpu") else {
        assert!(std::env::var_os("CI").is_none(), "CI must have an adapter");
        return;
    };
    for (c, g) in beats.iter().zip(gpu["beats"].as_array().unwrap()) {
        assert_eq!(c["sample"], g["sample"]);
        assert_eq!(c["label"], g["label"]);
        let (a, b) = (c["mse"].as_f64().unwrap(), g["mse"].as_f64().unwrap());
        assert!((a - b).abs() <= 1e-4 * a, "{a} vs {b}");
    }
}
