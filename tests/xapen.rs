//! Cross-ApEn: the reference against independent golden values, and the fast CPU, brute-force
//! and GPU paths against the reference (counts exactly, values within 1e-5).

mod common;

use common::Rng;
use ede::gpu::xapen::{M1Count, XapenKernels};

use ede::dsp::xapen::{
    self, Correction, CpuMethod, Epochs, XapenError, XapenParams, brute, fast, reference,
};

fn golden(name: &str) -> Option<serde_json::Value> {
    let path = common::shared_data()?
        .join("../golden/crossapen")
        .join(name);
    let text = std::fs::read_to_string(&path).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// The golden EEG excerpt: its channels of its file, one epoch from its start sample.
fn golden_eeg_epoch(g: &serde_json::Value) -> Epochs {
    let data = common::shared_data().unwrap();
    let rec = ede::recording::Recording::open(
        &data.join(g["file"].as_str().unwrap()),
        &Default::default(),
    )
    .unwrap();
    let start = g["start_sample"].as_u64().unwrap() as usize;
    let n = g["epoch_len"].as_u64().unwrap() as usize;
    let channels = g["channels"].as_array().unwrap();
    let mut raw = Vec::new();
    for label in channels {
        let mut buf = vec![0f32; n];
        rec.read(
            rec.signal_index(label.as_str().unwrap()).unwrap(),
            start,
            &mut buf,
        )
        .unwrap();
        raw.extend(buf);
    }
    Epochs::normalize(&raw, n, channels.len()).unwrap()
}

/// Each golden case: its parameters and its matrix, row-major.
fn golden_cases(g: &serde_json::Value) -> Vec<(XapenParams, Vec<f64>)> {
    g["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            let params = XapenParams {
                m: case["m"].as_u64().unwrap() as usize,
                r: case["r"].as_f64().unwrap() as f32,
                correction: correction(case["correction"].as_str().unwrap()),
            };
            let matrix = case["matrix"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(common::floats)
                .collect();
            (params, matrix)
        })
        .collect()
}

fn correction(s: &str) -> Correction {
    match s {
        "max" => Correction::Max,
        "zero" => Correction::Zero,
        other => panic!("unknown correction {other}"),
    }
}

/// A deterministic generator for test data.

#[test]
fn reference_reproduces_the_synthetic_golden_values() {
    let Some(g) = golden("synthetic_6ch_300.json") else {
        return;
    };
    let inputs: Vec<Vec<f64>> = g["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(common::floats)
        .collect();
    let mut checked = 0;
    for case in g["cases"].as_array().unwrap() {
        let m = case["m"].as_u64().unwrap() as usize;
        let r = case["r"].as_f64().unwrap();
        let corr = correction(case["correction"].as_str().unwrap());
        for (u, row) in case["matrix"].as_array().unwrap().iter().enumerate() {
            for (v, want) in common::floats(row).into_iter().enumerate() {
                let got = reference::cross_apen(&inputs[u], &inputs[v], m, r, corr)
                    .unwrap()
                    .unwrap();
                assert!(
                    (got - want).abs() < 1e-9,
                    "m={m} r={r} {corr:?} ({u},{v}): {got} vs {want}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12 * 36);
    let counts = &g["counts_pair_0_1_m2_r0.2"];
    let u = reference::normalize(&inputs[0]).unwrap();
    let v = reference::normalize(&inputs[1]).unwrap();
    let (n_m, n_m1) = reference::counts(&u, &v, 2, 0.2);
    let want = |k: &str| -> Vec<u32> {
        common::floats(&counts[k])
            .iter()
            .map(|&x| x as u32)
            .collect()
    };
    assert_eq!(n_m, want("n_m"));
    assert_eq!(n_m1, want("n_m1"));
}

/// The f32 paths on the golden inputs: float32 can flip a comparison sitting exactly at r, so
/// values agree within 1e-4 (the golden README's tolerance for f32).
#[test]
fn f32_paths_reproduce_the_synthetic_golden_values() {
    let Some(g) = golden("synthetic_6ch_300.json") else {
        return;
    };
    let raw: Vec<f32> = g["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| common::floats(c).into_iter().map(|x| x as f32))
        .collect();
    let ep = Epochs::normalize(&raw, 300, 6).unwrap();
    for (params, want) in golden_cases(&g) {
        for method in [CpuMethod::Fast, CpuMethod::Brute] {
            let got = xapen::cpu_matrices(&ep, &params, method, None, None)
                .unwrap()
                .unwrap();
            for (k, (a, b)) in got.mean.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() < 1e-4,
                    "{params:?} {method:?} cell {k}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn fast_path_reproduces_the_eeg_golden_values() {
    let Some(g) = golden("eeg64_first8_at10s.json") else {
        return;
    };
    let ep = golden_eeg_epoch(&g);
    for (params, want) in golden_cases(&g) {
        let got = xapen::cpu_matrices(&ep, &params, CpuMethod::Fast, None, None)
            .unwrap()
            .unwrap();
        for (k, (a, b)) in got.mean.iter().zip(&want).enumerate() {
            assert!((a - b).abs() < 1e-4, "{params:?} cell {k}: {a} vs {b}");
        }
    }
}

/// Normalized-looking series on a 2^-12 grid with r on it too: every f32 difference and bound
/// is exact, so all paths must count exactly the same.
fn grid_series(rng: &mut Rng, n: usize, binary: bool) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let x = if binary {
                (rng.next() < 0.5) as u8 as f64
            } else {
                rng.gauss()
            };
            ((x * 4096.0).round() / 4096.0) as f32
        })
        .collect()
}

#[test]
fn counts_are_equal_on_every_path() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for &n in &[3usize, 4, 5, 17, 63, 64, 65, 100, 129, 300] {
        for m in 1..=3 {
            if n <= m + 1 {
                continue;
            }
            for &r in &[0.0f32, 0.1, 0.2, 0.5] {
                let r = (r * 4096.0).round() / 4096.0;
                let u = grid_series(&mut rng, n, n % 3 == 0);
                let v = grid_series(&mut rng, n, false);
                let (u64s, v64s): (Vec<f64>, Vec<f64>) = (
                    u.iter().map(|&x| x as f64).collect(),
                    v.iter().map(|&x| x as f64).collect(),
                );
                let want = reference::counts(&u64s, &v64s, m, r as f64);
                assert_eq!(fast::counts(&u, &v, m, r), want, "fast n={n} m={m} r={r}");
                assert_eq!(brute::counts(&u, &v, m, r), want, "brute n={n} m={m} r={r}");
                // Against itself: the diagonal of the matrix.
                let want = reference::counts(&u64s, &u64s, m, r as f64);
                assert_eq!(fast::counts(&u, &u, m, r), want, "fast self n={n} m={m}");
            }
        }
    }
}

/// Raw random data through the whole CPU pipeline: fast and brute-force agree exactly (same
/// f32 inputs, same test), and the f64 reference within 1e-4 (f32 rounding of normalized
/// samples may move a comparison sitting at r).
#[test]
fn cpu_matrices_agree_with_the_reference() {
    let mut rng = Rng(42);
    let (n, b, e) = (157, 4, 2);
    let raw: Vec<f32> = (0..n * b * e)
        .map(|_| (rng.gauss() * 30.0 + 5.0) as f32)
        .collect();
    let ep = Epochs::normalize(&raw, n, b).unwrap();
    for m in 1..=2 {
        for corr in [Correction::Max, Correction::Zero] {
            let params = XapenParams {
                m,
                r: 0.2,
                correction: corr,
            };
            let f = xapen::cpu_matrices(&ep, &params, CpuMethod::Fast, None, None)
                .unwrap()
                .unwrap();
            let s = xapen::cpu_matrices(&ep, &params, CpuMethod::Brute, None, None)
                .unwrap()
                .unwrap();
            assert_eq!(f.per_epoch, s.per_epoch);
            for epoch in 0..e {
                for u in 0..b {
                    for v in 0..b {
                        let series = |c: usize| -> Vec<f64> {
                            raw[(epoch * b + c) * n..][..n]
                                .iter()
                                .map(|&x| x as f64)
                                .collect()
                        };
                        let want = reference::cross_apen(&series(u), &series(v), m, 0.2, corr)
                            .unwrap()
                            .unwrap();
                        let got = f.epoch(epoch).unwrap()[u * b + v];
                        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
                    }
                }
            }
        }
    }
}

#[test]
fn flat_channels_give_nan_and_short_epochs_an_error() {
    let mut rng = Rng(7);
    let n = 50;
    let mut raw: Vec<f32> = (0..n * 3).map(|_| rng.gauss() as f32).collect();
    raw[n..2 * n].fill(4.0); // channel 1 is flat
    let ep = Epochs::normalize(&raw, n, 3).unwrap();
    let params = XapenParams {
        m: 1,
        r: 0.2,
        correction: Correction::Max,
    };
    let res = xapen::cpu_matrices(&ep, &params, CpuMethod::Fast, None, None)
        .unwrap()
        .unwrap();
    let mean = res.mean;
    for k in 0..3 {
        assert!(mean[3 + k].is_nan() && mean[k * 3 + 1].is_nan());
    }
    assert!(mean[0].is_finite() && mean[2 * 3 + 2].is_finite());

    let short = Epochs::normalize(&[1.0, 2.0], 2, 1).unwrap();
    assert_eq!(
        xapen::cpu_matrices(&short, &params, CpuMethod::Fast, None, None).unwrap_err(),
        XapenError::TooShort { n: 2, m: 1 }
    );
    assert!(
        reference::cross_apen(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], 2, 0.2, Correction::Max).is_err()
    );
    assert_eq!(
        reference::cross_apen(
            &[1.0; 10],
            &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0],
            1,
            0.2,
            Correction::Max
        ),
        Ok(None)
    );
}

/// The Cross-ApEn kernels on whatever adapter exists; `None` (with a note) outside CI.
fn gpu() -> Option<XapenKernels> {
    match ede::gpu::GpuContext::headless() {
        Ok(c) => Some(XapenKernels::new(&c)),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: {e}; GPU Cross-ApEn tests skipped outside CI");
            None
        }
        Err(e) => panic!("CI must have a (software) adapter: {e}"),
    }
}

/// GPU against the fast CPU path on the same normalized samples: count totals exactly equal,
/// values within 1e-5, for many sizes, m, r, both corrections, and a flat channel-epoch.
#[test]
fn gpu_matches_the_cpu_on_random_data() {
    let Some(mut kernels) = gpu() else {
        return;
    };
    let mut rng = Rng(99);
    for &(n, b, e) in &[
        (5usize, 2usize, 1usize),
        (17, 3, 2),
        (100, 4, 2),
        (257, 3, 3),
        (300, 5, 1),
        // At m = 3 too long for the workgroup cache: the kernel reads v from global memory.
        (1100, 2, 1),
    ] {
        let mut raw: Vec<f32> = (0..n * b * e).map(|_| rng.gauss() as f32).collect();
        if e > 1 {
            raw[n..2 * n].fill(1.0); // channel 1 of epoch 0 is flat
        }
        let ep = Epochs::normalize(&raw, n, b).unwrap();
        for m in 1..=3 {
            if n <= m + 1 {
                continue;
            }
            for &r in &[0.1f32, 0.2, 0.35] {
                for corr in [Correction::Max, Correction::Zero] {
                    let params = XapenParams {
                        m,
                        r,
                        correction: corr,
                    };
                    let cpu = xapen::cpu_matrices(&ep, &params, CpuMethod::Fast, None, None)
                        .unwrap()
                        .unwrap();
                    let readback = ede::gpu::xapen::Readback {
                        per_epoch: true,
                        totals: true,
                    };
                    let got = kernels
                        .matrices(&ep, &params, readback, None, None)
                        .unwrap()
                        .unwrap();
                    let totals = got.totals.unwrap();
                    let per_epoch = got.matrices.per_epoch.as_ref().unwrap();
                    for epoch in 0..e {
                        for u in 0..b {
                            for v in 0..b {
                                let cell = (epoch * b + u) * b + v;
                                let want = cpu.per_epoch.as_ref().unwrap()[cell];
                                let have = per_epoch[cell];
                                let what =
                                    format!("n={n} m={m} r={r} {corr:?} e={epoch} ({u},{v})");
                                if !(ep.is_valid(epoch, u) && ep.is_valid(epoch, v)) {
                                    assert!(want.is_nan() && have.is_nan(), "{what}");
                                    continue;
                                }
                                assert!((have - want).abs() < 1e-5, "{what}: {have} vs {want}");
                                let (n_m, n_m1) =
                                    fast::counts(ep.series(epoch, u), ep.series(epoch, v), m, r);
                                let sums = [n_m.iter().sum::<u32>(), n_m1.iter().sum::<u32>()];
                                assert_eq!(totals[cell], sums, "{what}");
                            }
                        }
                    }
                    for (k, (a, c)) in got.matrices.mean.iter().zip(&cpu.mean).enumerate() {
                        assert!(
                            (a - c).abs() < 1e-5 || (a.is_nan() && c.is_nan()),
                            "mean cell {k}: {a} vs {c}"
                        );
                    }
                }
            }
        }
    }
}

/// m = 1 counted by stripes, with the wavelet matrix and by testing every candidate: the same
/// count totals as the CPU's, exactly, on data full of ties (samples on a coarse grid), at the
/// lengths around a stripe's 32 and a set word's 16, at the largest length each structure fits
/// and just past it (where the next way counts).
#[test]
fn gpu_m1_counts_are_exact_for_every_kernel() {
    let Some(mut kernels) = gpu() else {
        return;
    };
    let largest = |choice: M1Count| {
        (2..4000)
            .rev()
            .find(|&n| choice.for_length(n) == choice)
            .unwrap()
    };
    let (stripes, wavelet) = (largest(M1Count::Stripes), largest(M1Count::Wavelet));
    assert_eq!(stripes, 1024, "the paper's epochs fit the stripes");
    assert!(
        (2..=1024).all(|n| M1Count::Stripes.for_length(n) == M1Count::Stripes),
        "no length below 1024 falls back"
    );
    let mut rng = Rng(5);
    for &(n, b, grid) in &[
        (3usize, 2usize, 0.0),
        (9, 2, 0.0),
        (16, 3, 0.5),
        (17, 2, 0.0),
        (32, 2, 0.25),
        (33, 3, 0.25),
        (65, 2, 0.0),
        (500, 2, 0.1),
        (1000, 2, 0.0),
        (stripes, 3, 0.1),
        (stripes + 1, 2, 0.05),
        (wavelet, 2, 0.05),
        (wavelet + 1, 2, 0.0),
    ] {
        let raw: Vec<f32> = (0..n * b)
            .map(|_| {
                let g = rng.gauss();
                let g = if grid > 0.0 {
                    (g / grid).round() * grid
                } else {
                    g
                };
                g as f32
            })
            .collect();
        let ep = Epochs::normalize(&raw, n, b).unwrap();
        for &r in &[0.0f32, 0.15, 0.5, 3.0] {
            let params = XapenParams {
                m: 1,
                r,
                correction: Correction::Zero,
            };
            let readback = ede::gpu::xapen::Readback {
                per_epoch: true,
                totals: true,
            };
            let mut run = |choice| {
                kernels.m1_count = choice;
                kernels
                    .matrices(&ep, &params, readback, None, None)
                    .unwrap()
                    .unwrap()
                    .totals
                    .unwrap()
            };
            let totals = run(M1Count::Stripes);
            assert_eq!(totals, run(M1Count::Wavelet), "wavelet n={n} r={r}");
            assert_eq!(totals, run(M1Count::Candidates), "candidates n={n} r={r}");
            for u in 0..b {
                for v in 0..b {
                    let (n_m, n_m1) = fast::counts(ep.series(0, u), ep.series(0, v), 1, r);
                    let want = [n_m.iter().sum::<u32>(), n_m1.iter().sum::<u32>()];
                    assert_eq!(totals[u * b + v], want, "n={n} r={r} ({u},{v})");
                }
            }
        }
    }
    kernels.m1_count = M1Count::Stripes;
}

/// Inputs split over several device buffers give the same result as one chunk.
#[test]
fn gpu_chunks_agree_with_one_dispatch() {
    let Some(mut kernels) = gpu() else {
        return;
    };
    let mut rng = Rng(3);
    let (n, b, e) = (128, 4, 7);
    let raw: Vec<f32> = (0..n * b * e).map(|_| rng.gauss() as f32).collect();
    let ep = Epochs::normalize(&raw, n, b).unwrap();
    let params = XapenParams {
        m: 2,
        r: 0.25,
        correction: Correction::Zero,
    };
    let whole = kernels
        .matrices(&ep, &params, Default::default(), None, None)
        .unwrap()
        .unwrap();
    kernels.max_buffer_bytes = (b * 3 * n * 4 * 2) as u64; // two epochs per chunk
    assert_eq!(kernels.chunk_epochs(&ep, 2).unwrap(), 2);
    let chunked = kernels
        .matrices(&ep, &params, Default::default(), None, None)
        .unwrap()
        .unwrap();
    for (a, c) in whole.matrices.mean.iter().zip(&chunked.matrices.mean) {
        assert!((a - c).abs() < 1e-6, "{a} vs {c}");
    }
    kernels.max_buffer_bytes = 100;
    assert!(
        kernels
            .matrices(&ep, &params, Default::default(), None, None)
            .is_err()
    );
}

#[test]
fn gpu_reproduces_the_eeg_golden_values() {
    let (Some(g), Some(mut kernels)) = (golden("eeg64_first8_at10s.json"), gpu()) else {
        return;
    };
    let ep = golden_eeg_epoch(&g);
    for (params, want) in golden_cases(&g) {
        let got = kernels
            .matrices(&ep, &params, Default::default(), None, None)
            .unwrap()
            .unwrap();
        let cpu = xapen::cpu_matrices(&ep, &params, CpuMethod::Fast, None, None)
            .unwrap()
            .unwrap();
        for (k, ((a, b), c)) in got
            .matrices
            .mean
            .iter()
            .zip(&want)
            .zip(&cpu.mean)
            .enumerate()
        {
            assert!(
                (a - b).abs() < 1e-4,
                "{params:?} cell {k}: {a} vs golden {b}"
            );
            assert!((a - c).abs() < 1e-5, "{params:?} cell {k}: {a} vs cpu {c}");
        }
    }
}

/// A job cut into blocks of epochs (as large recordings are) gives the mean, the per-epoch
/// matrices and the flat-channel warnings of one piece.
#[test]
fn blocks_of_epochs_give_the_same_report() {
    use ede::analysis::xapen::{EpochCount, XapenJob, run_in_blocks};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blocks.edf");
    let mut rng = Rng(11);
    let n = 100 * 12;
    let noise = |rng: &mut Rng, k: usize| -> Vec<i32> {
        (0..n)
            .map(|i| (rng.gauss() * 3000.0 + (i as f64 * 0.05 * k as f64).sin() * 5000.0) as i32)
            .collect()
    };
    let mut flat_start = noise(&mut rng, 3);
    flat_start[..250].fill(7); // flat in the first two epochs of 100 samples, and part of the third
    let signals: Vec<common::TestSignal> = [
        ("A", noise(&mut rng, 1)),
        ("B", noise(&mut rng, 2)),
        ("C", flat_start),
    ]
    .into_iter()
    .map(|(label, digital)| common::TestSignal {
        label,
        samples_per_record: 100,
        digital,
        physical_min: -500.0,
        physical_max: 500.0,
        digital_min: -32768,
        digital_max: 32767,
    })
    .collect();
    common::write_edf(&path, false, None, 1.0, &signals, None, &[]);
    let rec = ede::recording::Recording::open(&path, &Default::default()).unwrap();
    let job = XapenJob {
        channels: vec![0, 1, 2],
        epoch_len: 100,
        epochs: EpochCount::All,
        start_sample: 0,
        params: XapenParams {
            m: 1,
            r: 0.2,
            correction: Correction::Max,
        },
        per_epoch: true,
    };
    let whole = run_in_blocks(&rec, &job, None, None, None, 1e12)
        .unwrap()
        .unwrap();
    // 3 channels x 100 samples x 8 bytes = 2400 bytes an epoch: 2 epochs a block.
    assert_eq!(job.blocks(&rec, 5000.0).unwrap().len(), 6);
    let blocked = run_in_blocks(&rec, &job, None, None, None, 5000.0)
        .unwrap()
        .unwrap();
    assert_eq!(whole.epochs, 12);
    assert_eq!(blocked.epochs, 12);
    // As JSON, where NaN is null and compares equal.
    let json = |r: &ede::analysis::xapen::XapenReport| serde_json::to_string(&r.per_epoch).unwrap();
    assert_eq!(json(&blocked), json(&whole));
    for (a, b) in blocked.mean().iter().zip(whole.mean()) {
        assert!(
            (a - b).abs() < 1e-12 || (a.is_nan() && b.is_nan()),
            "{a} vs {b}"
        );
    }
    assert_eq!(blocked.flat, vec![("C".to_string(), 2)]);
    assert_eq!(blocked.warnings, whole.warnings);
    assert!(blocked.mean()[8].is_finite(), "C is valid in 10 epochs");

    if let Some(mut kernels) = gpu() {
        let on_gpu = run_in_blocks(&rec, &job, Some(&mut kernels), None, None, 5000.0)
            .unwrap()
            .unwrap();
        assert_eq!(on_gpu.flat, blocked.flat);
        for (a, b) in on_gpu.mean().iter().zip(blocked.mean()) {
            assert!(
                (a - b).abs() < 1e-5 || (a.is_nan() && b.is_nan()),
                "{a} vs {b}"
            );
        }
    }
}

/// Real recordings (EEG and the quantized ECG of MIT-BIH 100, with its many ties) through
/// every path: brute force and the fast path count the same windows, the GPU the same totals,
/// and the f64 reference gives the same values within 1e-4.
#[test]
fn real_recordings_agree_on_every_path() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let mut kernels = gpu();
    let files = [
        ("eeg/eeglab_sample_32ch_128hz.edf", 5usize, 3000usize),
        ("ecg/mitdb/100", 2, 20_000),
    ];
    let (n, e) = (400usize, 2usize);
    for (file, b, start) in files {
        let rec = ede::recording::Recording::open(&data.join(file), &Default::default()).unwrap();
        let mut raw = vec![0f32; n * b * e];
        for epoch in 0..e {
            for c in 0..b {
                let out = &mut raw[(epoch * b + c) * n..][..n];
                rec.read(c, start + epoch * n, out).unwrap();
            }
        }
        let ep = Epochs::normalize(&raw, n, b).unwrap();
        for m in 1..=2 {
            for &r in &[0.15f32, 0.25] {
                let params = XapenParams {
                    m,
                    r,
                    correction: Correction::Max,
                };
                let what = format!("{file} m={m} r={r}");
                let gpu = kernels.as_mut().map(|k| {
                    let readback = ede::gpu::xapen::Readback {
                        per_epoch: true,
                        totals: true,
                    };
                    k.matrices(&ep, &params, readback, None, None)
                        .unwrap()
                        .unwrap()
                });
                let cpu = xapen::cpu_matrices(&ep, &params, CpuMethod::Fast, None, None)
                    .unwrap()
                    .unwrap();
                for epoch in 0..e {
                    for u in 0..b {
                        for v in 0..b {
                            let (su, sv) = (ep.series(epoch, u), ep.series(epoch, v));
                            let counts = fast::counts(su, sv, m, r);
                            assert_eq!(brute::counts(su, sv, m, r), counts, "{what}");
                            let cell = (epoch * b + u) * b + v;
                            if let Some(g) = &gpu {
                                let sums = [counts.0.iter().sum::<u32>(), counts.1.iter().sum()];
                                assert_eq!(g.totals.as_ref().unwrap()[cell], sums, "{what}");
                            }
                            let series = |c: usize| -> Vec<f64> {
                                raw[(epoch * b + c) * n..][..n]
                                    .iter()
                                    .map(|&x| x as f64)
                                    .collect()
                            };
                            let want = reference::cross_apen(
                                &series(u),
                                &series(v),
                                m,
                                r as f64,
                                Correction::Max,
                            )
                            .unwrap()
                            .unwrap();
                            let fast_value = cpu.epoch(epoch).unwrap()[u * b + v];
                            assert!(
                                (fast_value - want).abs() < 1e-4,
                                "{what}: {fast_value} vs {want}"
                            );
                            if let Some(g) = &gpu {
                                let have = g.matrices.per_epoch.as_ref().unwrap()[cell];
                                assert!(
                                    (have - fast_value).abs() < 1e-5,
                                    "{what}: {have} vs {fast_value}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
