//! The whole-recording ICA (issue 61) against MNE-Python's on the EEGLAB sample (30 EEG
//! channels, average reference, 20 components): the same PCA, FastICA from MNE's starting
//! matrix to 1e-4, decompositions from ede's own starts as close to MNE's as MNE's seeds are
//! to each other, and `ICA.apply`'s cleaning. Reference numbers:
//! `tests/fixtures/make_ica_fixture.py` (MNE-Python, scikit-learn), checked in.

mod common;

use std::path::Path;

use common::shared_data;
use ede::analysis::Backend;
use ede::analysis::ica::marks::match_maps;
use ede::analysis::ica::{
    ComponentCount, Decomposition, Fit, IcaData, IcaMethod, IcaSettings, Pca, decompose,
};
use ede::dsp::filter::DisplayFilter;
use ede::dsp::ica::fastica::symmetric;
use ede::dsp::ica::{FastIcaParams, symmetric_decorrelation};
use ede::dsp::montage::Reference;
use ede::recording::{OpenOptions, Recording};
use nalgebra::DMatrix;
use serde_json::Value;

const N: usize = 20;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ica_mne.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn matrix(v: &Value) -> DMatrix<f64> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.clone()).unwrap();
    DMatrix::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
}

fn sample() -> Option<IcaData> {
    let data = shared_data()?;
    let path = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let rec = Recording::open(&path, &OpenOptions::default()).unwrap();
    Some(IcaData::load(&rec, &Reference::Average, &DisplayFilter::default()).unwrap())
}

/// Rows scaled to unit length and signed so that their largest entry is positive.
fn normalized_rows(m: &DMatrix<f64>) -> DMatrix<f64> {
    let mut m = m.clone();
    for mut row in m.row_iter_mut() {
        let n = row.norm();
        let big = row
            .iter()
            .fold(0.0f64, |a, &v| if v.abs() > a.abs() { v } else { a });
        row /= n * big.signum();
    }
    m
}

/// The median and the mean over MNE's five largest components of the one-to-one matched map
/// correlations of `ours` (n x r) with `theirs` (n x r).
fn agreement(ours: &DMatrix<f64>, theirs: &DMatrix<f64>) -> (f64, f64) {
    let pairs = match_maps(theirs, ours);
    let mut all: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    all.sort_by(f64::total_cmp);
    let median = (all[all.len() / 2 - 1] + all[all.len() / 2]) / 2.0;
    let largest: f64 = (pairs.iter().filter(|p| p.0 < 5)).map(|p| p.2).sum::<f64>() / 5.0;
    (median, largest)
}

#[test]
fn the_pca_and_fastica_from_mne_s_start_equal_mne_s() {
    let Some(data) = sample() else { return };
    let fx = fixture();
    let channels: Vec<String> = serde_json::from_value(fx["channels"].clone()).unwrap();
    assert_eq!(
        data.labels, channels,
        "the fitted channels are MNE's EEG picks"
    );
    let pca = Pca::of(&data.fitted(), &data.kinds).unwrap();
    let pre = fx["pre_whitener"].as_f64().unwrap();
    let rel = (pca.pre_whitener[0] * 1e-6 - pre).abs() / pre;
    assert!(
        rel < 1e-6,
        "pre-whitener {} uV against MNE's {pre} V",
        pca.pre_whitener[0]
    );
    // Principal components: the same directions (their signs are a convention).
    let theirs = matrix(&fx["pca_components"]);
    let mut signs = vec![1.0; N];
    for (k, sign) in signs.iter_mut().enumerate() {
        let dot = pca.components.row(k).dot(&theirs.row(k));
        assert!(
            (dot.abs() - 1.0).abs() < 1e-6,
            "PCA component {k}: |cos| {dot}"
        );
        *sign = dot.signum();
    }
    // scikit-learn's start acts on MNE's scores; ours differ from them by those signs.
    let w_init = matrix(&fx["fastica_w_init"]);
    let start = symmetric_decorrelation(&(w_init * DMatrix::from_diagonal(&signs.into()))).unwrap();
    let settings = IcaSettings {
        components: ComponentCount::Count(N),
        tol: 1e-6,
        ..IcaSettings::default()
    };
    let p = FastIcaParams {
        tol: 1e-6,
        max_iter: 1000,
        ..FastIcaParams::default()
    };
    let (w, iterations, converged) = symmetric(&pca.whitened(N), &p, start);
    assert!(converged);
    let fit = Fit {
        settings,
        iterations,
        converged,
    };
    let d = pca.finish(&w, &data, fit);
    // MNE's unmixing is per volt, ours per microvolt: the rows' directions compare.
    let want = normalized_rows(&matrix(&fx["fastica_unmixing"]));
    let got = normalized_rows(&d.unmixing);
    let worst = (want - got).amax();
    eprintln!(
        "FastICA from MNE's start: {iterations} iterations (MNE {}), worst unmixing difference {worst:.2e}",
        fx["fastica_iterations"]
    );
    assert!(worst < 1e-4, "unmixing differs from MNE's by {worst}");

    // ICA.apply without components 0 and 1 (MNE's order), the first 2 s in microvolts.
    let cleaned = d.clean(&data.data, &[0, 1]);
    let want: Vec<Vec<f64>> = serde_json::from_value(fx["apply_first_2s"].clone()).unwrap();
    let rms = (want.iter().flatten().map(|v| v * v).sum::<f64>()
        / want.iter().map(Vec::len).sum::<usize>() as f64)
        .sqrt();
    let mut worst = 0.0f64;
    for (c, row) in want.iter().enumerate() {
        for (t, v) in row.iter().enumerate() {
            worst = worst.max((cleaned.row(c)[t] as f64 - v).abs());
        }
    }
    eprintln!("apply: worst {worst:.2e} uV of RMS {rms:.1} uV");
    assert!(
        worst < 1e-3 * rms,
        "cleaned data differ by {worst} uV (RMS {rms})"
    );
}

fn fitted(data: &IcaData, method: IcaMethod, tol: f64, seed: u64) -> Decomposition {
    let settings = IcaSettings {
        method,
        seed,
        components: ComponentCount::Count(N),
        tol,
        max_iter: if method == IcaMethod::Infomax {
            512
        } else {
            1000
        },
        ..IcaSettings::default()
    };
    decompose(data, &settings, (Backend::Cpu, None), None).unwrap()
}

/// From ede's own start, FastICA's maps agree with MNE's as MNE's seeds agree with each other
/// (the figures: median 0.958-0.965, five largest 0.960-0.971), and extended
/// Infomax's (seeds 1 and 2) with MNE's `infomax` under runica's schedule. Not every start
/// lands there: seed 97 ends on another optimum, 0.93 from MNE's and from seed 1. MNE's own
/// Infomax schedule freezes each fit early (`dsp::ica::infomax`): its seeds, and ede against
/// them, are only reported.
#[test]
fn decompositions_from_ede_s_own_start_match_mne_s_as_its_seeds_match_each_other() {
    let Some(data) = sample() else { return };
    let fx = fixture();
    let maps = |key: &str| matrix(&fx["maps"][key]).transpose();
    let fastica = fitted(&data, IcaMethod::Fastica, 1e-6, 1);
    let infomax = fitted(&data, IcaMethod::Infomax, 1e-6, 1);
    let infomax_2 = fitted(&data, IcaMethod::Infomax, 1e-6, 2);
    for (d, key, goals) in [
        (&fastica, "fastica", Some((0.93, 0.95))),
        (&infomax, "infomax", Some((0.97, 0.95))),
        (&infomax_2, "infomax", Some((0.97, 0.95))),
        (&infomax, "infomax_mne", None),
    ] {
        let (one, two) = (maps(&format!("{key}_1")), maps(&format!("{key}_2")));
        let between = agreement(&one, &two);
        for theirs in [&one, &two] {
            let (median, largest) = agreement(&d.mixing, theirs);
            eprintln!(
                "{key}: ede against MNE median {median:.3}, five largest {largest:.3} \
                 (MNE's two seeds: {:.3}, {:.3}); {} iterations",
                between.0, between.1, d.iterations
            );
            if let Some((median_goal, largest_goal)) = goals {
                assert!(median >= median_goal, "{key}: median {median}");
                assert!(largest >= largest_goal, "{key}: five largest {largest}");
            }
        }
    }
}
