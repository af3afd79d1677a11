//! Hermite beat fits: the basis, the CPU fit against the definition, the GPU against both, and
//! the QRS detector on MIT-BIH record 100.

mod common;

use common::Rng;
use ede::analysis::hermite::{BeatSource, EcgBeats, EcgFilter, beat_label};
use ede::dsp::hermite::{self, Basis, BeatWindow, HermiteParams, hermite_functions};
use ede::dsp::qrs;
use ede::gpu::hermite::HermiteKernels;

#[test]
fn basis_is_orthonormal_on_a_fine_grid() {
    // 20 kHz over +-1 s: wide enough for the widest function of order 40 at sigma = 0.05 s.
    let fs = 20_000.0;
    let times: Vec<f64> = (-20_000..=20_000).map(|k| k as f64 / fs).collect();
    for (order, sigma) in [(40, 0.05), (6, 0.01)] {
        let b = hermite::sampled_basis(&times, fs, sigma, order);
        let l = times.len();
        for i in 0..order {
            for j in 0..order {
                let g: f64 = (0..l).map(|k| b[i * l + k] * b[j * l + k]).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((g - want).abs() < 1e-9, "order {order} <{i},{j}> = {g}");
            }
        }
    }
}

#[test]
fn recurrence_matches_the_direct_formula() {
    // phi_n = e^(-u^2/2) H_n(u) / sqrt(2^n n! sqrt(pi)), H_n from its explicit recurrence.
    for &u in &[-4.5, -1.3, 0.0, 0.7, 2.2, 5.9] {
        let mut psi = [0.0; 12];
        hermite_functions(u, &mut psi);
        let mut h = [1.0, 2.0 * u];
        let mut fact = 1.0;
        for (n, &got) in psi.iter().enumerate() {
            let hn = match n {
                0 => 1.0,
                1 => 2.0 * u,
                _ => {
                    let next = 2.0 * u * h[1] - 2.0 * (n - 1) as f64 * h[0];
                    h = [h[1], next];
                    next
                }
            };
            if n > 0 {
                fact *= n as f64;
            }
            let direct = (-u * u / 2.0f64).exp() * hn
                / (2f64.powi(n as i32) * fact * std::f64::consts::PI.sqrt()).sqrt();
            assert!(
                (got - direct).abs() <= 1e-12 * direct.abs().max(1e-3),
                "n {n} u {u}: {got} vs {direct}"
            );
        }
    }
    // Far out in the tail the functions vanish instead of overflowing.
    let mut psi = [0.0; 64];
    hermite_functions(80.0, &mut psi);
    assert!(psi.iter().all(|v| v.is_finite() && v.abs() < 1e-300));
}

#[test]
fn parameters_are_checked() {
    let bad = [
        HermiteParams {
            order: 0,
            ..Default::default()
        },
        HermiteParams {
            order: 65,
            ..Default::default()
        },
        HermiteParams {
            sigmas: 0,
            ..Default::default()
        },
        HermiteParams {
            sigma_min: Some(0.05),
            sigma_max: Some(0.01),
            ..Default::default()
        },
        HermiteParams {
            sigma_min: Some(-1.0),
            ..Default::default()
        },
        HermiteParams {
            sigma_max: Some(f64::NAN),
            ..Default::default()
        },
    ];
    for p in bad {
        assert!(p.sigma_grid().is_err(), "{p:?}");
    }
    let grid = HermiteParams {
        order: 30,
        ..Default::default()
    }
    .sigma_grid()
    .unwrap();
    assert_eq!(grid.len(), 100);
    let max = 0.2 / 59f64.sqrt();
    assert!((grid[99] - max).abs() < 1e-15 && (grid[0] - max / 10.0).abs() < 1e-15);
    assert_eq!(BeatWindow::new(360.0).unwrap().len(), 144);
    assert_eq!(BeatWindow::new(250.0).unwrap().width(), 50);
    assert!(BeatWindow::new(2.0).is_err());
}

/// Random beats: a QRS-like bump of random width, sign and place, plus noise.
fn random_beats(rng: &mut Rng, beats: usize, width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(beats * width);
    for _ in 0..beats {
        let w = 2.0 + 8.0 * rng.next();
        let c = width as f64 / 2.0 + 6.0 * (rng.next() - 0.5);
        let a = 2.0 * (rng.next() - 0.3);
        for k in 0..width {
            let t = (k as f64 - c) / w;
            out.push((a * (1.0 - t * t) * (-t * t / 2.0).exp() + 0.05 * (rng.next() - 0.5)) as f32);
        }
    }
    out
}

#[test]
fn fast_fit_matches_the_reference() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for (fs, order, sigmas) in [
        (360.0, 6, 100),
        (360.0, 30, 40),
        (250.0, 13, 17),
        (500.0, 1, 5),
    ] {
        let params = HermiteParams {
            order,
            sigmas,
            ..Default::default()
        };
        let basis = Basis::new(fs, &params).unwrap();
        let w = basis.window.width();
        let beats = random_beats(&mut rng, 70, w);
        let fits = basis.fit(&beats, None).unwrap();
        assert_eq!(fits.len(), 70);
        for i in 0..70 {
            let (s, mse, c) = hermite::reference(fs, &params, &beats[i * w..(i + 1) * w]);
            assert_eq!(
                fits.sigma_index[i] as usize, s,
                "fs {fs} N {order} beat {i}"
            );
            let rel = (fits.mse[i] as f64 - mse).abs() / mse;
            assert!(rel < 1e-4, "beat {i}: {} vs {mse}", fits.mse[i]);
            for (a, b) in fits.coefficients_of(i).iter().zip(&c) {
                assert!((*a as f64 - b).abs() < 1e-5 * (1.0 + b.abs()));
            }
        }
    }
}

fn gpu() -> Option<HermiteKernels> {
    match ede::gpu::GpuContext::headless() {
        Ok(c) => Some(HermiteKernels::new(&c)),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: {e}; GPU Hermite tests skipped outside CI");
            None
        }
        Err(e) => panic!("CI must have a (software) adapter: {e}"),
    }
}

/// GPU fits against the reference: the same best sigma, MSE within 1e-4, coefficients close.
fn assert_gpu_matches(fs: f64, params: &HermiteParams, beats: &[f32], gpu: &mut HermiteKernels) {
    let w = BeatWindow::new(fs).unwrap().width();
    let up = gpu.upload(beats, w).unwrap();
    let fits = gpu.fit(&up, fs, params).unwrap();
    assert_eq!(fits.len(), beats.len() / w);
    for i in 0..fits.len() {
        let (s, mse, c) = hermite::reference(fs, params, &beats[i * w..(i + 1) * w]);
        assert_eq!(
            fits.sigma_index[i] as usize, s,
            "fs {fs} {params:?} beat {i}"
        );
        let rel = (fits.mse[i] as f64 - mse).abs() / mse;
        assert!(rel < 1e-4, "beat {i}: {} vs {mse}", fits.mse[i]);
        for (a, b) in fits.coefficients_of(i).iter().zip(&c) {
            assert!((*a as f64 - b).abs() < 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
}

#[test]
fn gpu_fit_matches_the_reference() {
    let Some(mut gpu) = gpu() else { return };
    let mut rng = Rng(0x51ed2701);
    for (fs, order, sigmas) in [
        (360.0, 6, 100),
        (360.0, 30, 40),
        (250.0, 13, 17),
        (1000.0, 40, 9),
        (500.0, 1, 5),
    ] {
        let params = HermiteParams {
            order,
            sigmas,
            ..Default::default()
        };
        let w = BeatWindow::new(fs).unwrap().width();
        let beats = random_beats(&mut rng, 50, w);
        // Every number of beats per thread (50 beats: the last thread's are partly past the
        // end from 3 on).
        for per_thread in 1..=8 {
            gpu.beats_per_thread = per_thread;
            assert_gpu_matches(fs, &params, &beats, &mut gpu);
        }
        // The basis read from the storage buffer, as where workgroup memory cannot hold it.
        gpu.stage_basis = false;
        assert_gpu_matches(fs, &params, &beats, &mut gpu);
        gpu.stage_basis = true;
    }
    // A flat beat fits every sigma equally (MSE 0): a tie across all groups of sigmas keeps
    // the smallest sigma, as the reference does.
    let params = HermiteParams {
        order: 10,
        ..Default::default()
    };
    let mut beats = random_beats(&mut rng, 3, 72);
    beats[72..144].fill(0.0);
    for per_thread in [1, 4] {
        gpu.beats_per_thread = per_thread;
        let fits = gpu
            .fit(&gpu.upload(&beats, 72).unwrap(), 360.0, &params)
            .unwrap();
        assert_eq!((fits.sigma_index[1], fits.mse[1]), (0, 0.0));
        assert!(fits.coefficients_of(1).iter().all(|&c| c == 0.0));
        assert_eq!(hermite::reference(360.0, &params, &beats[72..144]).0, 0);
    }
    // Chunks: a binding limit that holds only a few beats splits the upload (5 chunks of 8
    // beats, then 10 of 4), each chunk read back while the next is fitted, through two staging
    // buffers in turn.
    let params = HermiteParams {
        order: 10,
        sigmas: 20,
        ..Default::default()
    };
    let beats = random_beats(&mut rng, 37, 72);
    for chunk in [9, 4] {
        gpu.max_buffer_bytes = chunk * 4 * (72 + 4);
        assert_gpu_matches(360.0, &params, &beats, &mut gpu);
    }
    // The last chunk cut smaller (16, 8 and 13 beats), as large fits end.
    gpu.max_buffer_bytes = u64::MAX;
    gpu.tail_split = 8;
    assert_gpu_matches(360.0, &params, &beats, &mut gpu);
    gpu.tail_split = usize::MAX;
    // Groups of several sigmas, as many beats make them: 37 beats in 10 threads and 20
    // sigmas in 3 groups of 7 (the last short, repeating its last sigma), two groups a
    // workgroup (the second row's second group past the last, fitting nothing of its own).
    gpu.target_threads = 30;
    assert_gpu_matches(360.0, &params, &beats, &mut gpu);
    // ... and one group of all 20 (the second of each workgroup past it).
    gpu.target_threads = 1;
    assert_gpu_matches(360.0, &params, &beats, &mut gpu);
}

fn record_100() -> Option<ede::recording::Recording> {
    let path = common::shared_data()?.join("ecg/mitdb/100.hea");
    Some(ede::recording::Recording::open(&path, &Default::default()).expect("record 100 opens"))
}

#[test]
fn detector_finds_record_100s_beats() {
    let Some(rec) = record_100() else { return };
    let fs = rec.signals[0].fs;
    let reference: Vec<usize> = rec
        .annotations
        .iter()
        .filter(|a| beat_label(&a.text).is_some())
        .map(|a| (a.onset * fs).round() as usize)
        .collect();
    assert!(reference.len() > 2200, "{}", reference.len());
    for filter in [EcgFilter::Default, EcgFilter::None] {
        let beats = EcgBeats::prepare(&rec, 0, filter, true).unwrap();
        assert_eq!(beats.source, BeatSource::Detector);
        let all: Vec<usize> = {
            let mut v: Vec<usize> = beats
                .samples
                .iter()
                .copied()
                .chain(beats.skipped.iter().map(|s| s.sample))
                .collect();
            v.sort();
            v
        };
        let m = qrs::BeatMatch::new(&all, &reference, (0.15 * fs).round() as usize);
        eprintln!(
            "{filter:?}: {m:?} Se {:.4} +P {:.4}",
            m.sensitivity(),
            m.positive_predictivity()
        );
        assert!(
            m.sensitivity() >= 0.995 && m.positive_predictivity() >= 0.995,
            "{m:?}"
        );
        // Detected beats take the labels of the annotations they match.
        let labelled = beats.labels.iter().filter(|l| l.is_some()).count();
        assert!(labelled as f64 >= 0.995 * beats.len() as f64);
    }
}

/// MSE of the reference at sigma `grid[k]` alone.
fn reference_mse_at(fs: f64, params: &HermiteParams, sigma: f64, beat: &[f32]) -> f64 {
    let one = HermiteParams {
        sigmas: 1,
        sigma_min: Some(sigma),
        sigma_max: Some(sigma),
        ..*params
    };
    hermite::reference(fs, &one, beat).1
}

/// On record 100 (2,273 beats, annotated), CPU and GPU fits against the f64 reference at
/// N = 6 and 30: MSE within 1e-4 relative and the same best sigma. At N = 30 some beats are
/// fitted so closely (MSE 1e-5 of the beat's energy) that f32 rounding of the basis alone
/// moves the MSE by ~1e-5 relative; where two sigmas' true MSEs differ by less than that, f32
/// cannot tell which is smaller. Such a near-tie may pick the neighbour, whose true MSE must
/// then be within 1e-5 of the minimum, and at most 1 in 1,000 beats may be one.
#[test]
fn record_100_cpu_gpu_and_reference_agree() {
    let Some(rec) = record_100() else { return };
    let beats = EcgBeats::prepare(&rec, 0, EcgFilter::Default, false).unwrap();
    assert_eq!(beats.source, BeatSource::Annotations);
    assert!(beats.len() > 2200);
    let fs = beats.fs;
    let mut gpu = gpu();
    for order in [6, 30] {
        let params = HermiteParams {
            order,
            ..Default::default()
        };
        let grid = params.sigma_grid().unwrap();
        let reference: Vec<(usize, f64, Vec<f64>)> = (0..beats.len())
            .map(|i| hermite::reference(fs, &params, beats.window_of(i)))
            .collect();
        let cpu = Basis::new(fs, &params)
            .unwrap()
            .fit(&beats.windows, None)
            .unwrap();
        let gpu_fits = gpu.as_mut().map(|g| {
            let up = g.upload(&beats.windows, beats.window.width()).unwrap();
            g.fit(&up, fs, &params).unwrap()
        });
        for (name, fits) in
            std::iter::once(("cpu", &cpu)).chain(gpu_fits.iter().map(|f| ("gpu", f)))
        {
            let (mut worst, mut near_ties) = (0f64, 0);
            for (i, (s, mse, _)) in reference.iter().enumerate() {
                let got = fits.sigma_index[i] as usize;
                worst = worst.max((fits.mse[i] as f64 - mse).abs() / mse);
                if got != *s {
                    let at_got = reference_mse_at(fs, &params, grid[got], beats.window_of(i));
                    let gap = (at_got - mse) / mse;
                    eprintln!(
                        "{name} N {order} beat {i}: sigma {got} vs {s}, true MSE gap {gap:.1e}"
                    );
                    assert!(gap < 1e-5, "{name} N {order} beat {i}: a real difference");
                    near_ties += 1;
                }
            }
            eprintln!(
                "{name} N {order}: worst relative MSE error {worst:.1e}, {near_ties} near-ties"
            );
            assert!(worst < 1e-4, "{name} N {order}: {worst}");
            assert!(
                near_ties * 1000 <= beats.len(),
                "{name} N {order}: {near_ties} near-ties"
            );
            if order == 6 {
                assert_eq!(near_ties, 0, "{name}: at N = 6 f32 resolves every beat");
            }
        }
    }
}

/// Refits of one upload, as the beat explorer makes them while a slider is dragged: each
/// reuses the last fit's bind groups where its dispatches repeat (gpu::binds), so a new sigma
/// range (the same uniform parameters, other sigmas), fewer sigmas (the same pipelines and
/// buffers, other parameters) and a new order must each give what the reference gives, and
/// so must going back.
#[test]
fn refits_of_one_upload_follow_their_parameters() {
    let Some(mut gpu) = gpu() else { return };
    let mut rng = Rng(0x7e_f175);
    let (fs, w) = (360.0, BeatWindow::new(360.0).unwrap().width());
    let beats = random_beats(&mut rng, 40, w);
    let up = gpu.upload(&beats, w).unwrap();
    let wide = HermiteParams {
        order: 8,
        sigmas: 30,
        ..Default::default()
    };
    let narrow = HermiteParams {
        sigma_min: Some(0.004),
        sigma_max: Some(0.012),
        ..wide
    };
    let fewer = HermiteParams { sigmas: 12, ..wide };
    let longer = HermiteParams { order: 12, ..wide };
    for params in [wide, narrow, fewer, wide, longer, narrow] {
        let fits = gpu.fit(&up, fs, &params).unwrap();
        for i in 0..fits.len() {
            let (s, mse, _) = hermite::reference(fs, &params, &beats[i * w..(i + 1) * w]);
            assert_eq!(fits.sigma_index[i] as usize, s, "{params:?} beat {i}");
            let rel = (fits.mse[i] as f64 - mse).abs() / mse;
            assert!(rel < 1e-4, "{params:?} beat {i}: {} vs {mse}", fits.mse[i]);
        }
    }
}
