//! ICLabel (issue 61) against mne-icalabel 0.10: on the same decomposition (MNE's, from the
//! fixture), ede's three features and seven probabilities equal mne-icalabel's, on the EEGLAB
//! sample (30 channels, extended Infomax) and on a 64-channel EDF (FastICA). Reference numbers:
//! `tests/fixtures/make_iclabel_fixture.py` (mne-icalabel with onnxruntime), checked in.

mod common;

use std::path::Path;

use common::{mne_labels, shared_data};
use ede::analysis::ica::IcaData;
use ede::analysis::ica::iclabel::{Features, Net, features};
use ede::dsp::filter::DisplayFilter;
use ede::dsp::montage::Reference;
use ede::recording::electrodes::template_1005_position;
use ede::recording::{OpenOptions, Recording};
use nalgebra::DMatrix;
use serde_json::Value;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/iclabel_mne.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    serde_json::from_value(v.clone()).unwrap()
}

fn worst(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - y).abs())
        .fold(0.0, f64::max)
}

fn net_features(case: &Value, first: usize) -> Features {
    let vec100 = |key: &str| -> Vec<[f32; 100]> {
        rows(&case[key])[..first]
            .iter()
            .map(|r| std::array::from_fn(|i| r[i] as f32))
            .collect()
    };
    Features {
        topo: (case["topo"].as_array().unwrap().iter())
            .map(|img| {
                let r = rows(img);
                std::array::from_fn(|i| r[i / 32][i % 32] as f32)
            })
            .collect(),
        psd: vec100("psd"),
        autocorr: vec100("autocorr"),
    }
}

#[test]
fn the_network_on_mne_icalabel_s_features_gives_its_probabilities() {
    for case in fixture()["recordings"].as_array().unwrap() {
        let ours = Net::get().classify(&net_features(case, 4));
        for (k, (o, want)) in ours
            .iter()
            .zip(rows(&case["probabilities_0_3"]))
            .enumerate()
        {
            let err = o
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                err < 1e-5,
                "{} component {k}: {o:?} vs {want:?}",
                case["file"]
            );
        }
    }
}

#[test]
fn features_and_probabilities_equal_mne_icalabel_s() {
    let Some(dir) = shared_data() else { return };
    for case in fixture()["recordings"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let rec = Recording::open(&dir.join(file), &OpenOptions::default()).unwrap();
        let data = IcaData::load(&rec, &Reference::Average, &DisplayFilter::default()).unwrap();
        let channels: Vec<String> = serde_json::from_value(case["channels"].clone()).unwrap();
        assert_eq!(
            mne_labels(&data.labels),
            channels,
            "{file}: the channels are mne-icalabel's"
        );
        let w = rows(&case["weights"]);
        let weights = DMatrix::from_fn(w.len(), w[0].len(), |i, j| w[i][j]);
        let positions: Vec<[f64; 3]> = data
            .labels
            .iter()
            .map(|l| template_1005_position(l).unwrap())
            .collect();
        let f = features(&weights, &data.data, &positions, data.fs).unwrap();
        for (k, img) in case["topo"].as_array().unwrap().iter().enumerate() {
            let want: Vec<f64> = rows(img).concat();
            let err = worst(&f.topo[k], &want);
            assert!(err < 1e-4, "{file}: scalp image {k} differs by {err}");
        }
        for (key, ours) in [("psd", &f.psd), ("autocorr", &f.autocorr)] {
            for (k, want) in rows(&case[key]).iter().enumerate() {
                let err = worst(&ours[k], want);
                assert!(
                    err < 1e-4,
                    "{file}: {key} of component {k} differs by {err}"
                );
            }
        }
        let probabilities = Net::get().classify(&f);
        let mut err = 0.0f64;
        for (o, want) in probabilities.iter().zip(rows(&case["probabilities"])) {
            err = err.max(
                o.iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max),
            );
        }
        println!(
            "{file}: {} components, worst probability error {err:.2e}",
            probabilities.len()
        );
        assert!(err < 1e-3, "{file}: probabilities differ by {err}");
    }
}
