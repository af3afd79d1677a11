//! `ede ica`: MNE's ICA file, whose matrices (read back here the way MNE's `ICA.apply` uses
//! them) clean the data as `--clean` did; the labels file; refusals. That MNE itself reads the
//! file and `ica.apply` equals `--clean` to the written file's resolution was checked with
//! MNE 1.13 (docs/ICA.md); this test keeps the representation honest without Python.

mod common;

use common::{ede, shared_data};
use ede::recording::{OpenOptions, Recording};
use nalgebra::DMatrix;

/// The double matrices of a FIF file by tag kind (values row-major, dimensions).
fn fif_matrices(bytes: &[u8]) -> std::collections::HashMap<i32, (Vec<f64>, Vec<usize>)> {
    let be = |b: &[u8]| i32::from_be_bytes(b[..4].try_into().unwrap());
    let mut out = std::collections::HashMap::new();
    let mut at = 0;
    while at + 16 <= bytes.len() {
        let (kind, dtype, size) = (
            be(&bytes[at..]),
            be(&bytes[at + 4..]) as u32,
            be(&bytes[at + 8..]),
        );
        let data = &bytes[at + 16..at + 16 + size as usize];
        if dtype == 0x4000_0005 {
            let ndim = be(&data[data.len() - 4..]) as usize;
            let dims: Vec<usize> = (0..ndim)
                .map(|k| be(&data[data.len() - 4 * (ndim + 1 - k)..]) as usize)
                .rev()
                .collect();
            let count: usize = dims.iter().product();
            let values = (0..count)
                .map(|k| f64::from_be_bytes(data[8 * k..8 * k + 8].try_into().unwrap()))
                .collect();
            out.insert(kind, (values, dims));
        }
        at += 16 + size as usize;
    }
    out
}

#[test]
fn the_mne_file_s_matrices_clean_the_data_as_the_cleaned_recording_is() {
    let Some(data) = shared_data() else { return };
    let input = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let dir = tempfile::tempdir().unwrap();
    let (fif, labels, clean, set) = (
        dir.path().join("sample-ica.fif"),
        dir.path().join("labels.json"),
        dir.path().join("clean.edf"),
        dir.path().join("sample.set"),
    );
    let run = ede(&[
        "ica",
        input.to_str().unwrap(),
        "--n-components",
        "12",
        "--exclude",
        "0,2",
        "--backend",
        "cpu",
        "--out",
        fif.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--clean",
        clean.to_str().unwrap(),
        "--set",
        set.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    eeglab_dataset_holds_the_fit(&set, &labels);

    // MNE's apply from the file: x_clean = pre (P^T M_keep U P (x/pre - mean) + mean), with M
    // and U the mixing and unmixing padded by the identity over the unused principal
    // components: the same as x - pre P_r^T U^-1 [excluded] U P_r (x/pre - mean).
    let m = fif_matrices(&std::fs::read(&fif).unwrap());
    let (pre, _) = &m[&3603];
    let (pca, dims) = &m[&3604];
    let (mean, _) = &m[&3606];
    let (unmixing, udims) = &m[&3607];
    let (n, r) = (dims[0], udims[0]);
    assert_eq!((n, r), (30, 12));
    let p = DMatrix::from_row_slice(n, n, pca);
    let u = DMatrix::from_row_slice(r, r, unmixing);
    let mixing = u.clone().try_inverse().unwrap();
    let pr = p.rows(0, r).into_owned();
    let rec = Recording::open(&input, &OpenOptions::default()).unwrap();
    let cleaned = Recording::open(&clean, &OpenOptions::default()).unwrap();
    let ica = ede::analysis::ica::IcaData::load(
        &rec,
        &ede::dsp::montage::Reference::Average,
        &Default::default(),
    )
    .unwrap();
    let t = 1000;
    let mut worst = 0.0f64;
    for s in 0..t {
        // Volts, as MNE holds them.
        let x: Vec<f64> = (0..n).map(|c| ica.data.row(c)[s] as f64 * 1e-6).collect();
        let y = nalgebra::DVector::from_iterator(n, (0..n).map(|c| x[c] / pre[c] - mean[c]));
        let sources = &u * (&pr * &y);
        let mut removed = nalgebra::DVector::zeros(r);
        for k in [0, 2] {
            removed[k] = sources[k];
        }
        let back = pr.transpose() * (&mixing * removed);
        for c in 0..n {
            let want = (x[c] - back[c] * pre[c]) * 1e6;
            let mut got = [0.0f32];
            cleaned.read(ica.signals[c], s, &mut got).unwrap();
            worst = worst.max((got[0] as f64 - want).abs());
        }
    }
    // The EDF's resolution: 0.012 uV per step.
    assert!(
        worst < 0.01,
        "the file's matrices clean differently: {worst} uV"
    );
    // Channels not fitted (the EOG) are copied unchanged.
    for label in ["EOG1", "EOG2"] {
        let (a, b) = (
            rec.signal_index(label).unwrap(),
            cleaned.signal_index(label).unwrap(),
        );
        let (mut x, mut y) = (vec![0.0f32; 500], vec![0.0f32; 500]);
        rec.read(a, 0, &mut x).unwrap();
        cleaned.read(b, 0, &mut y).unwrap();
        assert_eq!(x, y, "{label} changed");
    }

    let labels: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&labels).unwrap()).unwrap();
    assert_eq!(labels["classes"].as_array().unwrap().len(), 7);
    let components = labels["components"].as_array().unwrap();
    assert_eq!(components.len(), 12);
    let excluded: Vec<u64> = (components.iter())
        .filter(|c| c["excluded"].as_bool().unwrap())
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(excluded, [0, 2]);
    // ICLabel's seven probabilities for every component.
    assert!(labels["iclabel_error"].is_null());
    for c in components {
        let p: Vec<f64> = serde_json::from_value(c["iclabel"].clone()).unwrap();
        assert_eq!(p.len(), 7);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{p:?}");
    }
    let variance: Vec<f64> = (components.iter())
        .map(|c| c["explained_variance"].as_f64().unwrap())
        .collect();
    assert!(
        variance.windows(2).all(|w| w[0] >= w[1]),
        "sorted by variance: {variance:?}"
    );
    let criteria: Vec<(&str, &str)> = (labels["artifact_scores"].as_array().unwrap().iter())
        .map(|s| (s["channel"].as_str().unwrap(), s["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        criteria,
        [("EOG1", "eog"), ("EOG2", "eog"), ("muscle", "muscle")],
        "EOG1, EOG2 and the muscle score"
    );
}

#[test]
fn impossible_requests_are_refused_with_the_reason() {
    let Some(data) = shared_data() else { return };
    let input = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let input = input.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fif = dir.path().join("x-ica.fif");
    let fif = fif.to_str().unwrap();
    for (args, says) in [
        (vec!["--out", "/tmp/wrong.fif"], "-ica.fif"),
        (vec!["--out", fif, "--n-components", "1"], "at least 2"),
        (
            vec!["--out", fif, "--n-components", "40"],
            "40 components asked of 30",
        ),
        (vec!["--out", fif, "--alpha", "3"], "alpha"),
        (
            vec!["--out", fif, "--exclude", "25", "--n-components", "20"],
            "component 25 of 20",
        ),
        (vec!["--out", fif, "--filter", "hp=1,lp=100"], "Nyquist"),
        (vec![], "nothing to write"),
    ] {
        let mut all = vec!["ica", input, "--backend", "cpu"];
        all.extend(args.iter().copied());
        let run = ede(&all);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{all:?} succeeded");
        assert!(err.contains(says), "{all:?}: {err}");
    }
    assert!(
        !std::path::Path::new(fif).exists(),
        "a refused run wrote a file"
    );
}

/// The EEGLAB dataset `ede ica --set` wrote: the 30 fitted channels with their samples,
/// EEGLAB's ICA fields consistent (icawinv the inverse of icaweights * icasphere), the excluded
/// components in `reject.gcompreject`, ICLabel's probabilities as the labels file's.
fn eeglab_dataset_holds_the_fit(set: &std::path::Path, labels: &std::path::Path) {
    use ede::recording::mat5::{Numbers, Value, read};
    let rec = Recording::open(set, &OpenOptions::default()).unwrap();
    assert_eq!(rec.signals.len(), 30);
    assert_eq!(rec.signals[0].samples, 30464);
    let vars = read(&std::fs::read(set).unwrap()).unwrap();
    let eeg = &vars.iter().find(|v| v.0 == "EEG").unwrap().1;
    let matrix = |v: &Value| -> DMatrix<f64> {
        match v {
            Value::Numbers {
                dims,
                numbers: Numbers::Decoded(x),
            } => DMatrix::from_column_slice(dims[0], dims[1], x),
            other => panic!("{other:?}"),
        }
    };
    let weights = matrix(eeg.field_of(0, "icaweights").unwrap());
    let sphere = matrix(eeg.field_of(0, "icasphere").unwrap());
    let winv = matrix(eeg.field_of(0, "icawinv").unwrap());
    assert_eq!(
        (weights.shape(), sphere.shape(), winv.shape()),
        ((12, 12), (12, 30), (30, 12))
    );
    let identity = &weights * &sphere * &winv;
    assert!((identity - DMatrix::identity(12, 12)).abs().max() < 1e-8);
    let reject = matrix(
        eeg.field_of(0, "reject")
            .unwrap()
            .field_of(0, "gcompreject")
            .unwrap(),
    );
    let rejected: Vec<usize> = (0..12).filter(|&k| reject[k] == 1.0).collect();
    assert_eq!(rejected, [0, 2]);
    let iclabel = eeg
        .field_of(0, "etc")
        .unwrap()
        .field_of(0, "ic_classification")
        .unwrap();
    let p = matrix(
        iclabel
            .field_of(0, "ICLabel")
            .unwrap()
            .field_of(0, "classifications")
            .unwrap(),
    );
    let labels: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(labels).unwrap()).unwrap();
    for (k, c) in labels["components"].as_array().unwrap().iter().enumerate() {
        let want: Vec<f64> = serde_json::from_value(c["iclabel"].clone()).unwrap();
        for j in 0..7 {
            assert!((p[(k, j)] - want[j]).abs() < 1e-12);
        }
    }
}
