//! `ede export` with a user montage, a reference and typed filters against MNE-Python's
//! `set_eeg_reference` and SciPy's `butter` + `sosfilt` / `sosfiltfilt` on the EEGLAB sample
//! (numbers made by `tests/fixtures/make_export_fixture.py`, checked in), and the filter
//! designs against SciPy's impulse responses.

mod common;

use std::path::Path;

use common::{ede, shared_data};
use ede::dsp::filter::DisplayFilter;
use serde_json::Value;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export_eeglab.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The CSV `ede export` writes: its header and one column per trace (time left out).
fn export_csv(args: &[&str]) -> (Vec<String>, Vec<Vec<f64>>) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut all = args.to_vec();
    all.extend(["--out", out.path().to_str().unwrap()]);
    let run = ede(&all);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(out.path()).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .skip(1)
        .map(String::from)
        .collect();
    let mut columns = vec![Vec::new(); header.len()];
    for line in lines {
        for (c, v) in columns.iter_mut().zip(line.split(',').skip(1)) {
            c.push(v.parse::<f64>().unwrap());
        }
    }
    (header, columns)
}

#[test]
fn export_equals_mne_and_scipy_on_the_eeglab_sample() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let montage = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export_montage.json");
    let fx = fixture();
    for case in fx["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let reference = match &case["reference"] {
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(","),
            r => panic!("{r}"),
        };
        let mut args: Vec<String> = [
            "export",
            edf.to_str().unwrap(),
            "--montage",
            montage.to_str().unwrap(),
            "--reference",
            &reference,
            "--start",
            "100",
            "--duration",
            "10",
        ]
        .map(String::from)
        .to_vec();
        let bads: Vec<&str> = case["bads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        if !bads.is_empty() {
            args.extend(["--bad".into(), bads.join(",")]);
        }
        if let Value::Object(f) = &case["filter"] {
            let mut spec = format!(
                "hp={},lp={},order={}",
                f["highpass"], f["lowpass"], f["order"]
            );
            if f["zero_phase"].as_bool().unwrap() {
                spec.push_str(",zero-phase");
            }
            args.extend(["--filter".into(), spec]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (labels, columns) = export_csv(&args);
        let want_labels: Vec<&str> = case["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(labels, want_labels, "{name}");
        for ((label, got), want) in labels
            .iter()
            .zip(&columns)
            .zip(case["data"].as_array().unwrap())
        {
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(got.len(), want.len(), "{name} {label}");
            let rms = (want.iter().map(|v| v * v).sum::<f64>() / want.len() as f64).sqrt();
            let worst = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                worst <= 1e-3 * rms,
                "{name} {label}: off by {worst} uV, RMS {rms} uV"
            );
        }
    }
}

/// Every design's impulse response equals SciPy's (`butter(..., output='sos')`, `iirnotch`).
#[test]
fn filter_designs_equal_scipys() {
    let fx = fixture();
    for f in fx["filters"].as_array().unwrap() {
        let design = f["design"].as_str().unwrap();
        let freqs: Vec<f32> = f["freqs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let order = f["order"].as_u64().unwrap() as u8;
        let filter = match f["kind"].as_str().unwrap() {
            "highpass" => DisplayFilter {
                highpass: Some(freqs[0]),
                highpass_order: order,
                ..Default::default()
            },
            "lowpass" => DisplayFilter {
                lowpass: Some(freqs[0]),
                lowpass_order: order,
                ..Default::default()
            },
            "bandstop" => DisplayFilter {
                bandstop: Some([freqs[0], freqs[1]]),
                bandstop_order: order,
                ..Default::default()
            },
            "notch" => DisplayFilter {
                notch: Some(freqs[0]),
                notch_harmonics: false,
                notch_q: f["q"].as_f64().unwrap() as f32,
                ..Default::default()
            },
            k => panic!("{k}"),
        };
        let want: Vec<f64> = f["impulse"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let mut x = vec![0f32; want.len()];
        x[0] = 1.0;
        filter.build(f["fs"].as_f64().unwrap()).run(&mut x);
        for (k, (a, b)) in x.iter().zip(&want).enumerate() {
            assert!((*a as f64 - b).abs() < 1e-6, "{design} at {k}: {a} vs {b}");
        }
    }
}

#[test]
fn export_says_what_is_wrong() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let edf = edf.to_str().unwrap();
    for (args, says) in [
        (vec!["--montage", "nonesuch"], "no built-in montage"),
        (vec!["--reference", "mastoids"], "mastoid"),
        (vec!["--reference", "Cz,Q9"], "Q9"),
        (vec!["--filter", "lp=90"], "Nyquist"),
        (vec!["--filter", "hp=1,order=12"], "order 12"),
        (vec!["--filter", "wobble"], "unknown filter setting"),
        (vec!["--bad", "Q9"], "Q9"),
    ] {
        let mut all = vec!["export", edf, "--duration", "1"];
        all.extend(&args);
        let run = ede(&all);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(
            !run.status.success() && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

/// A built-in montage by name and EDF output: the file reads back with the derivation labels
/// and the filtered values of the CSV (within the 16-bit quantization of EDF).
#[test]
fn export_writes_edf_that_reads_back() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let edf = edf.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("banana.edf");
    let common = [
        "export",
        edf,
        "--montage",
        "laplacian",
        "--filter",
        "hp=0.5,lp=35,order=4",
        "--start",
        "30",
        "--duration",
        "20",
    ];
    let mut args = common.to_vec();
    args.extend(["--format", "edf", "--out", out.to_str().unwrap()]);
    let run = ede(&args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let (labels, columns) = export_csv(&common);
    let rec = ede::recording::Recording::open(&out, &Default::default()).unwrap();
    let read: Vec<&str> = rec
        .signals
        .iter()
        .filter(|s| s.samples > 0)
        .map(|s| s.label.as_str())
        .collect();
    assert_eq!(read, labels);
    assert!(labels.contains(&"Cz-Lap".to_string()), "{labels:?}");
    for (i, col) in columns.iter().enumerate() {
        let back = rec.read_all(i).unwrap();
        assert_eq!(back.len(), col.len());
        let range = col.iter().cloned().fold(0.0, |m: f64, v| m.max(v.abs()));
        for (a, b) in back.iter().zip(col) {
            assert!(
                (*a as f64 - b).abs() <= range / 30000.0 + 1e-3,
                "{}: {a} vs {b}",
                labels[i]
            );
        }
    }
}

/// `--filter-of` gives a channel type or a trace its own filter, as the browser's menus do: a
/// trace takes its label's, else its type's, else `--filter`.
#[test]
fn filters_of_types_and_traces_apply_to_them_only() {
    let Some(data) = shared_data() else { return };
    let edf = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let edf = edf.to_str().unwrap();
    let base = [
        "export",
        edf,
        "--channels",
        "Fz,Cz,EOG1",
        "--start",
        "50",
        "--duration",
        "5",
        "--filter",
        "hp=1",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        export_csv(&a).1
    };
    let plain = with(&[]);
    let typed = with(&["--filter-of", "eog:lp=5,order=4"]);
    assert_eq!(typed[0], plain[0]);
    assert_eq!(typed[1], plain[1]);
    assert_ne!(typed[2], plain[2]);
    // The EOG's own filter replaces --filter: as exporting it alone with that filter.
    let alone = export_csv(&[
        "export",
        edf,
        "--channels",
        "EOG1",
        "--start",
        "50",
        "--duration",
        "5",
        "--filter",
        "lp=5,order=4",
    ])
    .1;
    // As exporting it alone with that filter, to the settling of the longer margin the
    // others' high-pass asks for.
    let rms = (alone[0].iter().map(|v| v * v).sum::<f64>() / alone[0].len() as f64).sqrt();
    for (a, b) in typed[2].iter().zip(&alone[0]) {
        assert!((a - b).abs() < 1e-3 * rms, "{a} vs {b}");
    }
    let traced = with(&["--filter-of", "eog:lp=5", "--filter-of", "Cz:lp=10"]);
    assert_eq!(traced[0], plain[0]);
    assert_ne!(traced[1], plain[1]);
    let bad = ede(&[
        "export",
        edf,
        "--duration",
        "1",
        "--filter-of",
        "nonesuch:lp=5",
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no trace label and no channel type"));
}
