//! ICA: known sources come back from synthetic mixtures for every contrast, both FastICA
//! approaches and JADE; the fast FastICA equals the plain f64 reference; warm starts converge
//! at once; bad input is an error.

mod common;

use common::Rng;
use ede::dsp::ica::{
    self, Approach, Contrast, FastIcaParams, Observations, Whitening, amari_index, random_rotation,
    reference,
};
use nalgebra::DMatrix;

/// Six non-Gaussian sources (sine, square, sawtooth, Laplacian, uniform, sparse spikes) of
/// `t` samples, mixed by a random well-conditioned matrix: (observations, mixing).
#[allow(clippy::needless_range_loop)]
fn mixture(t: usize, seed: u64) -> (Observations, DMatrix<f64>) {
    let mut rng = Rng(seed);
    let n = 6;
    let mut s = vec![vec![0.0f64; t]; n];
    for k in 0..t {
        let x = k as f64 / 128.0;
        s[0][k] = (2.0 * std::f64::consts::PI * 3.1 * x).sin();
        s[1][k] = if (x * 1.7).fract() < 0.5 { 1.0 } else { -1.0 };
        s[2][k] = 2.0 * (x * 0.9).fract() - 1.0;
        let u = rng.next() - 0.5;
        s[3][k] = -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-12).ln();
        s[4][k] = rng.next() * 2.0 - 1.0;
        s[5][k] = if rng.next() < 0.02 {
            5.0 * rng.gauss()
        } else {
            0.1 * rng.gauss()
        };
    }
    let a = DMatrix::from_fn(n, n, |i, j| if i == j { 2.0 } else { 0.0 } + rng.gauss());
    let mut data = vec![0.0f32; n * t];
    for i in 0..n {
        for k in 0..t {
            let v: f64 = (0..n).map(|j| a[(i, j)] * s[j][k]).sum();
            data[i * t + k] = (v + 10.0 * i as f64) as f32; // offsets: centring is tested too
        }
    }
    (Observations::new(n, t, data), a)
}

#[test]
fn every_algorithm_recovers_known_sources() {
    // Bound: an Amari index below 0.05 means each recovered source is one true source plus
    // cross-talk of a few per cent at most.
    const BOUND: f64 = 0.05;
    for seed in [3, 11] {
        let (x, a) = mixture(5000, seed);
        for approach in [Approach::Symmetric, Approach::Deflation] {
            for contrast in [Contrast::Tanh, Contrast::Cube, Contrast::Gauss] {
                let p = FastIcaParams {
                    contrast,
                    approach,
                    seed,
                    ..Default::default()
                };
                let r = ica::fastica(&x, &p, None).unwrap();
                let amari = amari_index(&(&r.unmixing * &a));
                assert!(r.converged, "{approach:?}/{contrast:?} did not converge");
                assert!(amari < BOUND, "{approach:?}/{contrast:?}: Amari {amari}");
                check_decomposition(&x, &r);
            }
        }
        // The bound separates: an unrotated whitening does not meet it.
        let white = Whitening::of(&x, None).unwrap();
        assert!(amari_index(&(&white.k * &a)) > 4.0 * BOUND);
        let r = ica::jade(&x, None).unwrap();
        let amari = amari_index(&(&r.unmixing * &a));
        assert!(r.converged && amari < BOUND, "JADE: Amari {amari}");
        check_decomposition(&x, &r);
    }
}

/// X = A (S + mu_S) to f32 precision, and W A = I.
fn check_decomposition(x: &Observations, r: &ica::Ica) {
    let wa = &r.unmixing * &r.mixing;
    assert!((wa - DMatrix::identity(x.rows, x.rows)).amax() < 1e-9);
    for k in (0..x.cols).step_by(97) {
        for i in 0..x.rows {
            let v: f64 = (0..r.sources.rows)
                .map(|j| r.mixing[(i, j)] * (r.sources.row(j)[k] as f64 + r.source_means[j]))
                .sum();
            let want = x.row(i)[k] as f64;
            assert!(
                (v - want).abs() < 1e-4 * (1.0 + want.abs()),
                "X[{i},{k}] = {v}, want {want}"
            );
        }
    }
}

#[test]
fn fast_fastica_equals_the_reference() {
    let (x, _) = mixture(3000, 5);
    let wh = Whitening::of(&x, None).unwrap();
    for approach in [Approach::Symmetric, Approach::Deflation] {
        for contrast in [Contrast::Tanh, Contrast::Cube, Contrast::Gauss] {
            let p = FastIcaParams {
                contrast,
                approach,
                tol: 1e-7,
                ..Default::default()
            };
            let w0 = random_rotation(wh.z.rows, 9);
            let (want, _, ok) = reference::fastica_whitened(&wh.z, &p, &w0);
            assert!(ok);
            let (got, _, ok) = match approach {
                Approach::Symmetric => ica::fastica::symmetric(&wh.z, &p, w0),
                Approach::Deflation => ica::fastica::deflation(&wh.z, &p, w0),
            };
            assert!(ok);
            // Same fixed point: each row agrees up to sign.
            for i in 0..want.nrows() {
                let cos = got.row(i).dot(&want.row(i)).abs();
                assert!(
                    cos > 1.0 - 1e-5,
                    "{approach:?}/{contrast:?} row {i}: cos {cos}"
                );
            }
        }
    }
}

#[test]
fn warm_start_converges_at_once_and_rank_deficiency_is_handled() {
    let (x, a) = mixture(5000, 7);
    let p = FastIcaParams::default();
    let first = ica::fastica(&x, &p, None).unwrap();
    let again = ica::fastica(&x, &p, Some(&first.unmixing)).unwrap();
    assert!(
        again.converged && again.iterations <= 2,
        "{} iterations",
        again.iterations
    );
    assert!(amari_index(&(&again.unmixing * &a)) < 0.05);

    // An average reference removes one dimension: 6 channels, 5 components.
    let (n, t) = (x.rows, x.cols);
    let mut avg = x.data.clone();
    for k in 0..t {
        let m: f32 = (0..n).map(|i| x.data[i * t + k]).sum::<f32>() / n as f32;
        (0..n).for_each(|i| avg[i * t + k] -= m);
    }
    let r = ica::fastica(&Observations::new(n, t, avg), &p, None).unwrap();
    assert_eq!(r.unmixing.shape(), (5, 6));
    assert_eq!(r.sources.rows, 5);
}

#[test]
fn bad_input_is_an_error() {
    let p = FastIcaParams::default();
    assert!(ica::fastica(&Observations::new(1, 100, vec![0.0; 100]), &p, None).is_err());
    assert!(ica::fastica(&Observations::new(4, 3, vec![0.0; 12]), &p, None).is_err());
    assert!(ica::fastica(&Observations::new(2, 100, vec![1.0; 200]), &p, None).is_err());
    let mut nan = mixture(500, 1).0;
    nan.data[17] = f32::NAN;
    assert!(ica::jade(&nan, None).is_err());
    let bad = FastIcaParams { tol: 0.0, ..p };
    assert!(ica::fastica(&mixture(500, 1).0, &bad, None).is_err());
}

#[test]
fn gpu_fastica_agrees_with_the_cpu_up_to_sign_and_order() {
    let ctx = match ede::gpu::GpuContext::headless() {
        Ok(c) => c,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: {e}; the GPU FastICA test is skipped outside CI");
            return;
        }
        Err(e) => panic!("CI must have a (software) adapter: {e}"),
    };
    let mut gpu = ede::gpu::ica::GpuFastIca::new(&ctx);
    // The whitening and the sources on the device (where it has f64 in shaders) and on the CPU.
    let whitenings = if gpu.whitening_from.is_some() {
        vec![true, false]
    } else {
        eprintln!(
            "note: no f64 in shaders on {}: the CPU whitens",
            ctx.describe()
        );
        vec![false]
    };
    for ((contrast, seed), on_gpu) in [
        (Contrast::Tanh, 3),
        (Contrast::Cube, 11),
        (Contrast::Gauss, 5),
    ]
    .into_iter()
    .flat_map(|case| whitenings.iter().map(move |&w| (case, w)))
    {
        // Whitened on the device whatever the channel count, or on the CPU.
        gpu.whitening_from = on_gpu.then_some(0);
        // 3000 samples: more than one chunk of the split product (1024).
        let (x, a) = mixture(3000, seed);
        let p = FastIcaParams {
            contrast,
            tol: 1e-5,
            ..Default::default()
        };
        let cpu = ica::fastica(&x, &p, None).unwrap();
        let dev = gpu.fastica(&x, &p, None).unwrap();
        assert!(dev.converged, "{contrast:?}: {} iterations", dev.iterations);
        // With the sources of other data (here the same) on the CPU, for the leading rows only.
        let other = gpu
            .fastica_with_sources_of(&x, Some((&x, 2)), &p, None)
            .unwrap();
        assert_eq!(other.unmixing, dev.unmixing, "{contrast:?}");
        assert_eq!(other.sources.rows, 2);
        for (a, b) in other.sources.data.iter().zip(&dev.sources.data) {
            assert!(
                (a - b).abs() < 1e-4 * (1.0 + b.abs()),
                "{contrast:?}: {a} against {b}"
            );
        }
        assert!(amari_index(&(&dev.unmixing * &a)) < 0.05, "{contrast:?}");
        // Components come out sorted and signed the same way, so the rows match one to one;
        // so do the sources.
        for i in 0..cpu.unmixing.nrows() {
            let (g, c) = (dev.unmixing.row(i), cpu.unmixing.row(i));
            let cos = g.dot(&c) / (g.norm() * c.norm());
            assert!(cos > 0.999, "{contrast:?} component {i}: cos {cos}");
            let (g, c) = (dev.sources.row(i), cpu.sources.row(i));
            let dot: f64 = g.iter().zip(c).map(|(&a, &b)| a as f64 * b as f64).sum();
            let norm = |v: &[f32]| v.iter().map(|&a| a as f64 * a as f64).sum::<f64>().sqrt();
            let cos = dot / (norm(g) * norm(c));
            assert!(cos > 0.999, "{contrast:?} source {i}: cos {cos}");
        }
    }
}

/// An iteration from the same rotation equals the CPU's (its decorrelation exact, the GPU's by
/// polynomial steps) to f32 precision (later iterations drift apart: FastICA from a random
/// start amplifies differences before it converges): at 40 channels (one partial 64 x 64 tile),
/// 70 (a full and a partial tile each way) and 130 (g(W Z) Z^T in 64 x 64 tiles too), over more
/// samples than a chunk of the split product.
#[test]
fn gpu_iterations_equal_the_cpu() {
    let Ok(ctx) = ede::gpu::GpuContext::headless() else {
        return;
    };
    let gpu = ede::gpu::ica::GpuFastIca::new(&ctx);
    for r in [40, 70, 130] {
        let t = 2500;
        let mut rng = Rng(0x1ca70 + r as u64);
        let data: Vec<f32> = (0..r * t)
            .map(|_| {
                let u = rng.next() - 0.5;
                (-u.signum() * (1.0 - 2.0 * u.abs()).max(1e-12).ln()) as f32
            })
            .collect();
        let wh = Whitening::of(&Observations::new(r, t, data), None).unwrap();
        let w0 = random_rotation(r, 7);
        for contrast in [Contrast::Tanh, Contrast::Cube] {
            let p = FastIcaParams {
                contrast,
                max_iter: 1,
                tol: 1e-12,
                ..Default::default()
            };
            let (cpu, _, _) = ica::fastica::symmetric(&wh.z, &p, w0.clone());
            let (dev, iterations, _) = gpu.symmetric(&wh.z, &p, &w0).unwrap();
            assert_eq!(iterations, 1);
            let worst = (&dev - &cpu).abs().max();
            assert!(
                worst < 1e-4,
                "{r} channels, {contrast:?}: largest difference {worst}"
            );
        }
    }
}

#[test]
fn sources_kept_for_leading_components_only_equal_the_whole_ones() {
    let (x, _) = mixture(6000, 3);
    let p = FastIcaParams::default();
    let fit = x.strided(3);
    let all = ica::fastica::fastica_with_sources_of(&fit, Some((&x, x.rows)), &p, None).unwrap();
    let two = ica::fastica::fastica_with_sources_of(&fit, Some((&x, 2)), &p, None).unwrap();
    assert_eq!(all.unmixing, two.unmixing);
    assert_eq!(all.source_means, two.source_means);
    assert_eq!((two.sources.rows, two.sources.cols), (2, x.cols));
    // Kept and computed rows alike are the numbers the whole unmixing gives.
    let rows = [4, 0, 5, 1];
    let some = two.sources_of(&rows, &x);
    for (k, &c) in rows.iter().enumerate() {
        assert_eq!(some.row(k), all.sources.row(c), "component {c}");
    }
    let again = ica::fastica(&fit, &p, None).unwrap().with_sources_of(&x, 3);
    assert_eq!(again.sources.rows, 3);
    assert_eq!(again.sources.row(2), all.sources.row(2));
    // None kept (a live hop's fit), then the leading ones unmixed when it finishes.
    let none = ica::fastica::fastica_with_sources_of(&fit, Some((&x, 0)), &p, None).unwrap();
    assert_eq!(none.sources.rows, 0);
    assert_eq!(none.sources_of(&[3], &x).row(0), all.sources.row(3));
    let later = none.with_leading_sources(&x, 4);
    assert_eq!(later.sources.rows, 4);
    assert_eq!(later.sources.data, all.sources.block(4, 0..x.cols).data);
    assert_eq!(later.with_leading_sources(&x, 99).sources.rows, x.rows);
}

/// An ICA fitted on some channels and carried over to all (`Ica::over_channels`): the other
/// channels get no unmixing weight, the sources stay the fit's, and a channel that is a mix of
/// the sources gets that mix as its mixing row.
#[test]
fn an_ica_of_some_channels_carries_over_to_all() {
    let (x, _) = mixture(5000, 5);
    let t = x.cols;
    // A seventh channel: 0.5 x channel 0 - 2 x channel 3 + 7 (in the span of the sources).
    let mut data = x.data.clone();
    data.extend((0..t).map(|k| 0.5 * x.row(0)[k] - 2.0 * x.row(3)[k] + 7.0));
    let all = Observations::new(7, t, data);
    let fitted: Vec<usize> = (0..6).collect();
    let ica = ica::fastica(&x, &FastIcaParams::default(), None).unwrap();
    let wide = ica.clone().over_channels(&all, &fitted);
    assert_eq!(wide.unmixing.shape(), (6, 7));
    assert!(wide.unmixing.column(6).iter().all(|&w| w == 0.0));
    assert_eq!(wide.unmixing.columns(0, 6), ica.unmixing);
    let rows: Vec<usize> = (0..6).collect();
    let (s0, s1) = (ica.sources_of(&rows, &x), wide.sources_of(&rows, &all));
    for (a, b) in s0.data.iter().zip(&s1.data) {
        assert!((a - b).abs() < 1e-3, "{a} {b}");
    }
    let expected = 0.5 * ica.mixing.row(0) - 2.0 * ica.mixing.row(3);
    for (a, b) in wide.mixing.row(6).iter().zip(expected.iter()) {
        assert!((a - b).abs() < 1e-3 * expected.amax(), "{a} {b}");
    }
    assert_eq!(wide.mixing.rows(0, 6), ica.mixing);
}
