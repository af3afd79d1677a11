//! Event-related review against MNE-Python on the EEGLAB sample (numbers made by
//! `tests/fixtures/make_erp_fixture.py`, checked in): bad channels interpolated by spherical
//! splines as `interpolate_bads(origin=(0, 0, 0))`, and `ede epochs` as `mne.Epochs(...).average()`.

mod common;

use std::path::Path;

use common::{ede, floats, shared_data};
use ede::dsp::spline::BadInterpolation;
use serde_json::Value;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/erp_mne.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt()
}

#[test]
fn bad_channels_interpolate_as_mne_does() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let fx = fixture();
    for case in ["one", "three"] {
        let want = &fx["interpolate"][case];
        let bads: Vec<&str> = (want["bads"].as_array().unwrap().iter())
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut rec = ede::recording::Recording::open(&edf, &Default::default()).unwrap();
        for b in &bads {
            let c = rec.signal_index(b).unwrap();
            rec.signals[c].bad = true;
        }
        // The weights: the same goods, the same matrix.
        let plan = BadInterpolation::of(&rec);
        let goods: Vec<&str> = (plan.goods.iter())
            .map(|&c| rec.signals[c].label.trim())
            .collect();
        let want_goods: Vec<&str> = (want["goods"].as_array().unwrap().iter())
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(goods, want_goods, "{case}");
        assert!(plan.left.is_empty());
        for (k, row) in want["matrix"].as_array().unwrap().iter().enumerate() {
            let row = floats(row);
            for (a, b) in plan.bads[k].1.iter().zip(&row) {
                assert!((a - b).abs() < 1e-7, "{case}: weight {a} against MNE's {b}");
            }
        }
        // The samples `ede export --interpolate-bads` writes.
        let out = tempfile::NamedTempFile::new().unwrap();
        let run = ede(&[
            "export",
            edf.to_str().unwrap(),
            "--bad",
            &bads.join(","),
            "--interpolate-bads",
            "--channels",
            &bads.join(","),
            "--duration",
            "10",
            "--out",
            out.path().to_str().unwrap(),
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let text = std::fs::read_to_string(out.path()).unwrap();
        let rows: Vec<Vec<f64>> = (text.lines().skip(1))
            .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
            .collect();
        for (k, b) in bads.iter().enumerate() {
            let mne = floats(&want["data"][k]);
            let ours: Vec<f64> = rows.iter().map(|r| r[k]).collect();
            assert_eq!(ours.len(), mne.len(), "{b}");
            let err: Vec<f64> = ours.iter().zip(&mne).map(|(a, b)| a - b).collect();
            let rel = rms(&err) / rms(&mne);
            assert!(rel < 1e-3, "{case} {b}: error {rel} of the RMS");
            eprintln!("{case} {b}: error {rel:.2e} of the RMS");
        }
    }
}

/// `ede epochs` on the sample equals MNE's `Epochs(...).average()`: the same epochs dropped
/// (by the same channels) and the averages to 1e-6 of their RMS.
#[test]
fn epochs_average_as_mne_does() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let fx = fixture();
    let cases: [(&str, &[&str]); 2] = [
        (
            "square",
            &[
                "--events",
                "square",
                "--tmin",
                "-0.2",
                "--tmax",
                "0.8",
                "--baseline",
                "-0.2,0",
                "--reject",
                "eeg=150uV",
            ],
        ),
        (
            "both",
            &[
                "--events",
                "square,rt",
                "--tmin",
                "-0.1",
                "--tmax",
                "0.5",
                "--baseline",
                "none",
                "--reject",
                "eeg=100uV,eog=250uV",
                "--flat",
                "eeg=1uV",
            ],
        ),
    ];
    for (case, flags) in cases {
        let want = &fx["epochs"][case];
        let out = tempfile::NamedTempFile::new().unwrap();
        let mut args = vec!["epochs", edf.to_str().unwrap()];
        args.extend(flags);
        args.extend(["--out", out.path().to_str().unwrap()]);
        let run = ede(&args);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let got: Value =
            serde_json::from_str(&std::fs::read_to_string(out.path()).unwrap()).unwrap();
        assert_eq!(got["unit"], "uV");
        let (times, want_times) = (floats(&got["times_s"]), floats(&want["times_s"]));
        assert_eq!(times.len(), want_times.len(), "{case}");
        assert!(
            times
                .iter()
                .zip(&want_times)
                .all(|(a, b)| (a - b).abs() < 1e-12)
        );
        let channels: Vec<&str> = (got["channels"].as_array().unwrap().iter())
            .map(|c| c.as_str().unwrap())
            .collect();
        for (name, w) in want["conditions"].as_object().unwrap() {
            let g = &got["conditions"][name];
            assert_eq!(g["n_epochs"], w["n_epochs"], "{case} {name}");
            let dropped = |v: &Value| -> Vec<(u64, Vec<String>)> {
                (v.as_array().unwrap().iter())
                    .map(|d| {
                        let mut c: Vec<String> = (d["channels"].as_array().unwrap().iter())
                            .map(|c| c.as_str().unwrap().to_string())
                            .collect();
                        c.sort();
                        (d["index"].as_u64().unwrap(), c)
                    })
                    .collect()
            };
            assert_eq!(
                dropped(&g["dropped"]),
                dropped(&w["dropped"]),
                "{case} {name}"
            );
            let mut err2 = 0.0;
            let mut ref2 = 0.0;
            for (k, ch) in want["channels"].as_array().unwrap().iter().enumerate() {
                let c = channels
                    .iter()
                    .position(|x| *x == ch.as_str().unwrap())
                    .unwrap();
                let (ours, mne) = (floats(&g["data"][c]), floats(&w["data"][k]));
                for (a, b) in ours.iter().zip(&mne) {
                    err2 = f64::max(err2, (a - b).abs());
                    ref2 += b * b;
                }
            }
            let rms =
                (ref2 / (want["channels"].as_array().unwrap().len() * times.len()) as f64).sqrt();
            assert!(
                err2 / rms < 1e-6,
                "{case} {name}: {:.2e} of the RMS",
                err2 / rms
            );
            eprintln!("{case} {name}: largest error {:.2e} of the RMS", err2 / rms);
        }
    }
}
