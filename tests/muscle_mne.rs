//! The muscle marks (issue 61) against MNE-Python's `ICA.find_bads_muscle` on the EEGLAB
//! sample and a 64-channel EDF: MNE's decompositions (`tests/fixtures/make_muscle_fixture.py`, checked in) scored by
//! ede from their weights and maps on ede's reading of the same data.

mod common;

use std::path::Path;

use common::{mne_labels, shared_data};
use ede::analysis::ica::muscle::{THRESHOLD, muscle_scores};
use ede::analysis::ica::{IcaData, iclabel};
use ede::dsp::filter::DisplayFilter;
use ede::dsp::ica::rotate;
use ede::dsp::montage::Reference;
use ede::recording::{OpenOptions, Recording};
use nalgebra::DMatrix;
use serde_json::Value;

fn matrix(v: &Value) -> DMatrix<f64> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    DMatrix::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
}

#[test]
fn muscle_scores_equal_mne_s_find_bads_muscle() {
    let Some(dir) = shared_data() else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/muscle_mne.json");
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let hp = DisplayFilter {
        highpass: Some(1.0),
        highpass_order: 4,
        zero_phase: true,
        ..Default::default()
    };
    for case in fx["recordings"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let rec = Recording::open(&dir.join(file), &OpenOptions::default()).unwrap();
        let data = IcaData::load(&rec, &Reference::Average, &hp).unwrap();
        let channels: Vec<String> = serde_json::from_value(case["channels"].clone()).unwrap();
        assert_eq!(mne_labels(&data.labels), channels, "{file}");
        // The sources up to scale and mean (each Welch segment loses its mean).
        let sources = rotate(&matrix(&case["weights"]), &data.data);
        let positions = iclabel::positions(&data).unwrap();
        let maps = matrix(&case["maps"]);
        let got = muscle_scores(&maps, &sources, data.fs, Some(&positions), THRESHOLD).unwrap();
        assert_eq!(got.criteria, 3);
        let slopes: Vec<f64> = serde_json::from_value(case["slopes"].clone()).unwrap();
        let scores: Vec<f64> = serde_json::from_value(case["scores"].clone()).unwrap();
        let worst = |a: &[f64], b: &[f64]| {
            (a.iter().zip(b))
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        };
        let (worst_slope, worst_score) = (worst(&got.slopes, &slopes), worst(&got.scores, &scores));
        eprintln!("{file}: slopes within {worst_slope:.1e}, scores within {worst_score:.1e}");
        assert!(worst_slope < 1e-3, "{file}: slopes differ by {worst_slope}");
        assert!(worst_score < 1e-4, "{file}: scores differ by {worst_score}");
        let marked: Vec<usize> = serde_json::from_value(case["marked"].clone()).unwrap();
        assert_eq!(got.marked, marked, "{file}");
        // Without positions only the slope counts, against 0.5.
        let slope_only = muscle_scores(&maps, &sources, data.fs, None, THRESHOLD).unwrap();
        assert_eq!(slope_only.criteria, 1);
        let want: Vec<usize> = (0..slopes.len())
            .filter(|&c| 1.0 / (1.0 + (-(slopes[c] + 0.5) / 0.25).exp()) > 0.5)
            .collect();
        assert_eq!(slope_only.marked, want, "{file}");
    }
}
