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
    ComponentCount, Decomposition, Fit, IcaData, IcaMethod, IcaSettings, Pca, PicardForm, decompose,
};
use ede::dsp::filter::DisplayFilter;
use ede::dsp::ica::fastica::symmetric;
use ede::dsp::ica::picard::{PicardParams, picard};
use ede::dsp::ica::{FastIcaParams, symmetric_decorrelation};
use ede::dsp::montage::Reference;
use ede::recording::{OpenOptions, Recording};
use nalgebra::DMatrix;
use serde_json::Value;

const N: usize = 20;

fn fixture() -> Value {
    read_fixture("ica_mne.json")
}

fn read_fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
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
    // scikit-learn's start acts on MNE's scores; ours differ from them by the PCA's signs.
    let w_init = matrix(&fx["fastica_w_init"]) * pca_signs(&pca, &fx);
    let start = symmetric_decorrelation(&w_init).unwrap();
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

/// The signs that turn MNE's principal components into ours, as a diagonal matrix, after
/// checking that they are the same directions.
fn pca_signs(pca: &Pca, fx: &Value) -> DMatrix<f64> {
    let theirs = matrix(&fx["pca_components"]);
    let signs = (0..N).map(|k| {
        let dot = pca.components.row(k).dot(&theirs.row(k));
        assert!(
            (dot.abs() - 1.0).abs() < 1e-6,
            "PCA component {k}: |cos| {dot}"
        );
        dot.signum()
    });
    DMatrix::from_diagonal(&signs.collect::<Vec<_>>().into())
}

/// Picard from MNE's starting matrix equals MNE's `method='picard'` to 1e-4
/// (`tests/fixtures/make_picard_fixture.py`): Picard-O to convergence; standard Picard
/// (extended Infomax's problem) over its first 10 iterations, since its path on this sample
/// ends on different optima from data that differ by 1e-7 (python-picard's own does, from
/// ede's f32 whitening), so only its converged fit is reported. From ede's own starts
/// (seeds 1, 2) the maps of both forms match MNE's seeds, on average, within 0.03 of how
/// MNE's two seeds match each other. Standard Picard matches runica's extended Infomax only
/// at a median of 0.83-0.89, in MNE too (0.74-0.87), so it is offered beside runica, not in
/// its place.
#[test]
fn picard_from_mne_s_start_equals_mne_s_and_its_seeds_match_mne_s() {
    let Some(data) = sample() else { return };
    let (fx, px) = (fixture(), read_fixture("picard_mne.json"));
    let pca = Pca::of(&data.fitted(), &data.kinds).unwrap();
    let start = matrix(&px["w_init"]) * pca_signs(&pca, &fx);
    let z = pca.whitened(N);
    for (ortho, max_iter, key, asserted) in [
        (true, 500, "ortho_unmixing", true),
        (false, 10, "infomax_10_unmixing", true),
        (false, 500, "infomax_unmixing", false),
    ] {
        let p = PicardParams {
            ortho,
            max_iter,
            ..PicardParams::default()
        };
        let (w, iterations, converged) = picard(&z, &p, start.clone()).unwrap();
        assert_eq!(converged, max_iter == 500, "{key}: {iterations} iterations");
        let settings = IcaSettings {
            method: IcaMethod::Picard,
            picard: if ortho {
                PicardForm::Fastica
            } else {
                PicardForm::Infomax
            },
            components: ComponentCount::Count(N),
            tol: 1e-7,
            max_iter,
            ..IcaSettings::default()
        };
        let fit = Fit {
            settings,
            iterations,
            converged,
        };
        let d = pca.finish(&w, &data, fit);
        // Rows paired by direction: two components that explain nearly the same variance may
        // be sorted either way by rounding.
        let want = normalized_rows(&matrix(&px[key]));
        let got = normalized_rows(&d.unmixing);
        let worst = (want.row_iter())
            .map(|a| {
                (got.row_iter())
                    .map(|b| (a - b).amax())
                    .fold(f64::MAX, f64::min)
            })
            .fold(0.0, f64::max);
        eprintln!(
            "Picard {key} from MNE's start: {iterations} iterations, worst unmixing difference {worst:.2e}"
        );
        if asserted {
            assert!(
                worst < 1e-4,
                "{key}: unmixing differs from MNE's by {worst}"
            );
        }
    }
    let maps = |v: &Value, key: &str| matrix(&v["maps"][key]).transpose();
    for (form, key) in [
        (PicardForm::Fastica, "ortho"),
        (PicardForm::Infomax, "infomax"),
    ] {
        let theirs = [1, 2].map(|seed| maps(&px, &format!("{key}_{seed}")));
        let between = agreement(&theirs[0], &theirs[1]);
        let mut sums = (0.0, 0.0);
        for seed in [1, 2] {
            let settings = IcaSettings {
                method: IcaMethod::Picard,
                picard: form,
                seed,
                components: ComponentCount::Count(N),
                tol: 1e-7,
                max_iter: 500,
                ..IcaSettings::default()
            };
            let d = decompose(&data, &settings, (Backend::Cpu, None), None).unwrap();
            let runica = agreement(&d.mixing, &maps(&fx, "infomax_1"));
            for (i, mne) in theirs.iter().enumerate() {
                let (median, largest) = agreement(&d.mixing, mne);
                sums = (sums.0 + median / 4.0, sums.1 + largest / 4.0);
                eprintln!(
                    "Picard {key} seed {seed} against MNE's seed {}: median {median:.3}, five \
                     largest {largest:.3} (MNE's two seeds: {:.3}, {:.3}; against runica's \
                     extended Infomax {:.3}, {:.3}); {} iterations",
                    i + 1,
                    between.0,
                    between.1,
                    runica.0,
                    runica.1,
                    d.iterations
                );
            }
        }
        assert!(
            sums.0 >= between.0 - 0.03 && sums.1 >= between.1 - 0.03,
            "{key}: ede's seeds match MNE's at {sums:?} on average, MNE's each other at {between:?}"
        );
    }
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

/// The GPU's Picard (its passes in f32 with f64 sums, where the device has f64 in shaders)
/// against the CPU's on the sample, from the same start: Picard-O lands on the same
/// optimum; standard Picard, whose optima here lie close together (python-picard's own runs
/// on data 1e-7 apart end up to 0.56 apart), lands where the CPU's does or as near as MNE's
/// seeds are to each other.
#[test]
fn picard_on_the_gpu_matches_picard_on_the_cpu() {
    let Some(data) = sample() else { return };
    let Ok(ctx) = ede::gpu::GpuContext::headless() else {
        eprintln!("no GPU adapter: skipped");
        return;
    };
    if !ede::gpu::picard::GpuPicard::supported(&ctx) {
        eprintln!("no f64 in shaders on {}: skipped", ctx.describe());
        return;
    }
    for form in [PicardForm::Fastica, PicardForm::Infomax] {
        let (max_iter, tol) = IcaMethod::Picard.default_limits();
        let settings = IcaSettings {
            method: IcaMethod::Picard,
            picard: form,
            components: ComponentCount::Count(N),
            max_iter,
            tol,
            ..IcaSettings::default()
        };
        let cpu = decompose(&data, &settings, (Backend::Cpu, None), None).unwrap();
        let gpu = decompose(&data, &settings, (Backend::Gpu, Some(&ctx)), None).unwrap();
        assert!(cpu.converged && gpu.converged, "{form:?}");
        let (median, largest) = agreement(&gpu.mixing, &cpu.mixing);
        let apart = (normalized_rows(&gpu.unmixing) - normalized_rows(&cpu.unmixing)).amax();
        eprintln!(
            "{form:?}: {} iterations on the GPU, {} on the CPU; maps agree at median {median:.6}, \
             five largest {largest:.6}; unmixing rows {apart:.2e} apart",
            gpu.iterations, cpu.iterations
        );
        // Measured on lavapipe: Picard-O 8.9e-6 apart in the same 78 iterations; standard
        // Picard 101 against 109 iterations, median 0.967, five largest 0.983 (MNE's seeds
        // agree with each other at a median of 0.945).
        match form {
            PicardForm::Fastica => assert!(apart < 1e-4, "{apart}"),
            PicardForm::Infomax => assert!(median > 0.93 && largest > 0.95),
        }
    }
}
