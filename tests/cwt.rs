//! Morlet scalograms: the CPU path and the GPU path (lavapipe in CI) against the direct
//! convolution reference on random signals of odd lengths, tones, a chirp and real EEG; the GPU
//! FFT against rustfft; band power streamed in segments against the whole transform; the
//! texture the view draws against the CPU's colouring.

mod common;

use common::Rng;

use std::sync::atomic::AtomicBool;

use ede::analysis::cwt::{BandPowerJob, Segmentation, band_power};
use ede::dsp::cwt::{
    self, CwtParams, CwtPlan, PaintSpec, Quantity, ScaleSpec, colour_pixels, pixel_values,
    reference,
};
use ede::gpu::cwt::{CwtKernels, fused_block_workgroups};
use ede::recording::{Format, in_memory, unknown_start};
use rustfft::num_complex::Complex32;

fn gpu() -> Option<CwtKernels> {
    match ede::gpu::GpuContext::headless() {
        Ok(c) => Some(CwtKernels::new(&c)),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: {e}; GPU scalogram tests skipped outside CI");
            None
        }
        Err(e) => panic!("CI must have a (software) adapter: {e}"),
    }
}

/// The worst error of `got` against `want`, row by row (one row per scale), relative to the
/// row's largest |W|: |W| near a zero of the transform has no meaningful relative error.
fn worst_relative(got: &[f32], want: &[f64], n: usize) -> f64 {
    got.chunks(n)
        .zip(want.chunks(n))
        .map(|(g, w)| {
            let top = w.iter().fold(0f64, |a, &b| a.max(b));
            let diff = g
                .iter()
                .zip(w)
                .fold(0f64, |a, (&g, &w)| a.max((g as f64 - w).abs()));
            diff / top
        })
        .fold(0.0, f64::max)
}

/// Scales from 4 dt (where the definition's cut at Nyquist and the sampled wavelet agree)
/// upwards by half octaves.
fn test_scales(dt: f64, count: usize) -> Vec<f64> {
    (0..count)
        .map(|j| 4.0 * dt * 2f64.powf(j as f64 * 0.5))
        .collect()
}

#[test]
fn cpu_and_gpu_match_the_reference_on_random_signals() {
    let mut gpu = gpu();
    let mut rng = Rng(7);
    for &n in &[1000usize, 1023, 4097] {
        let dt = 1.0 / 256.0;
        let x: Vec<f32> = (0..n).map(|_| (rng.gauss() * 20.0 + 5.0) as f32).collect();
        let scales = test_scales(dt, 12);
        let want = reference::magnitude(&x, dt, &scales, 6.0);
        let plan = CwtPlan::new(n, dt, &scales, 6.0).unwrap();
        let cpu = plan.magnitude(&x);
        let e = worst_relative(&cpu, &want, n);
        assert!(e <= 1e-4, "CPU, N = {n}: relative error {e}");
        // The two-pass FFTs, then the stage kernels that rows too long for them take.
        for up_to in [usize::MAX, 0] {
            if let Some(k) = gpu.as_mut() {
                k.fft().two_pass_up_to = up_to;
                let sp = k.spectra(&[&x], None).unwrap();
                let g = k.magnitude(&sp, dt, &scales, 6.0).unwrap();
                let e = worst_relative(&g, &want, n);
                assert!(e <= 1e-3, "GPU, N = {n}, up to {up_to}: relative error {e}");
            }
        }
    }
}

#[test]
fn other_omega0_and_several_channels_agree_on_the_gpu() {
    let Some(mut k) = gpu() else {
        return;
    };
    let mut rng = Rng(3);
    let (n, dt) = (700, 0.002);
    let xs: Vec<Vec<f32>> = (0..3)
        .map(|_| (0..n).map(|_| rng.gauss() as f32).collect())
        .collect();
    let refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
    for omega0 in [4.0, 10.0] {
        let scales = test_scales(dt * omega0 / 6.0 * 1.5, 9);
        let plan = CwtPlan::new(n, dt, &scales, omega0).unwrap();
        let sp = k.spectra(&refs, None).unwrap();
        let g = k.magnitude(&sp, dt, &scales, omega0).unwrap();
        for (c, x) in xs.iter().enumerate() {
            let cpu: Vec<f64> = plan.magnitude(x).iter().map(|&v| v as f64).collect();
            let part = &g[c * scales.len() * n..][..scales.len() * n];
            let e = worst_relative(part, &cpu, n);
            assert!(e <= 1e-3, "omega0 {omega0}, channel {c}: {e}");
        }
    }
}

/// Rows taken by the one-pass inverse FFT, with and without the bins folded onto its L inputs
/// (every row at M = 8,192; at M = 16,384 the rows with bands up to 4,097 bins, the others by
/// the two passes), agree with the two passes alone and with the CPU.
#[test]
fn direct_rows_agree_with_the_two_passes() {
    let Some(mut k) = gpu() else {
        return;
    };
    let mut rng = Rng(11);
    let dt = 1.0 / 256.0;
    for n in [7680usize, 12000] {
        let xs: Vec<Vec<f32>> = (0..2)
            .map(|_| (0..n).map(|_| (rng.gauss() * 10.0) as f32).collect())
            .collect();
        let refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
        // 1 to 64 Hz: bands of about 100 to all 4,097 bins at M = 8,192.
        let scales: Vec<f64> = (0..13)
            .map(|j| 6.0 / (2.0 * std::f64::consts::PI * 2f64.powf(j as f64 * 0.5)))
            .collect();
        let sp = k.spectra(&refs, None).unwrap();
        k.direct_rows = true;
        let direct = k.magnitude(&sp, dt, &scales, 6.0).unwrap();
        k.direct_rows = false;
        let two = k.magnitude(&sp, dt, &scales, 6.0).unwrap();
        k.direct_rows = true;
        let plan = CwtPlan::new(n, dt, &scales, 6.0).unwrap();
        for (c, x) in xs.iter().enumerate() {
            let cpu: Vec<f64> = plan.magnitude(x).iter().map(|&v| v as f64).collect();
            let part = |g: &[f32]| g[c * scales.len() * n..][..scales.len() * n].to_vec();
            let two64: Vec<f64> = part(&two).iter().map(|&v| v as f64).collect();
            let e = worst_relative(&part(&direct), &two64, n);
            assert!(
                e <= 1e-5,
                "N = {n}, channel {c}: direct against two passes {e}"
            );
            let e = worst_relative(&part(&direct), &cpu, n);
            assert!(
                e <= 1e-5,
                "N = {n}, channel {c}: direct against the CPU {e}"
            );
        }
    }
}

/// The scale of the largest |W| at the centre of a pure tone is the tone's, within one voice.
#[test]
fn a_tone_peaks_at_its_frequency() {
    let fs = 256.0;
    let params = CwtParams {
        omega0: 6.0,
        scales: ScaleSpec::Frequencies {
            fmin: 1.0,
            fmax: 64.0,
            voices: 12,
        },
    };
    let scales = params.scales(1.0 / fs).unwrap();
    let n = 2000;
    let plan = CwtPlan::new(n, 1.0 / fs, &scales, 6.0).unwrap();
    for f in [3.0, 7.5, 10.0, 22.0, 40.0] {
        let x: Vec<f32> = (0..n)
            .map(|i| (2.0 * std::f64::consts::PI * f * i as f64 / fs).sin() as f32)
            .collect();
        let mag = plan.magnitude(&x);
        let peak = (0..scales.len())
            .max_by(|&a, &b| mag[a * n + n / 2].total_cmp(&mag[b * n + n / 2]))
            .unwrap();
        let found = params.frequency(scales[peak]);
        let voices = (found / f).log2().abs() * 12.0;
        assert!(
            voices <= 1.0,
            "{f} Hz peaked at {found} Hz ({voices} voices away)"
        );
    }
}

/// A linear chirp from 5 to 40 Hz: the ridge follows the instantaneous frequency.
#[test]
fn a_chirp_ridge_follows_its_frequency() {
    let fs = 256.0;
    let params = CwtParams {
        omega0: 6.0,
        scales: ScaleSpec::Frequencies {
            fmin: 2.0,
            fmax: 64.0,
            voices: 12,
        },
    };
    let scales = params.scales(1.0 / fs).unwrap();
    let n = 4096;
    let dur = n as f64 / fs;
    let (f0, f1) = (5.0, 40.0);
    let x: Vec<f32> = (0..n)
        .map(|i| {
            let t = i as f64 / fs;
            (2.0 * std::f64::consts::PI * (f0 * t + 0.5 * (f1 - f0) / dur * t * t)).sin() as f32
        })
        .collect();
    let plan = CwtPlan::new(n, 1.0 / fs, &scales, 6.0).unwrap();
    let mag = plan.magnitude(&x);
    for i in [n / 4, n / 2, 3 * n / 4] {
        let f = f0 + (f1 - f0) * i as f64 / n as f64;
        let peak = (0..scales.len())
            .max_by(|&a, &b| mag[a * n + i].total_cmp(&mag[b * n + i]))
            .unwrap();
        let found = params.frequency(scales[peak]);
        assert!(
            (found / f).log2().abs() * 12.0 <= 1.5,
            "at sample {i}: {f} Hz expected, ridge at {found} Hz"
        );
    }
}

#[test]
fn real_eeg_matches_the_reference() {
    let Some(dir) = common::shared_data() else {
        return;
    };
    let rec = ede::recording::Recording::open(
        &dir.join("eeg/eeglab_sample_32ch_128hz.edf"),
        &Default::default(),
    )
    .unwrap();
    let mut gpu = gpu();
    let n = 1500;
    let dt = 1.0 / rec.signals[0].fs;
    let scales = test_scales(dt, 10);
    for label in ["FPz", "Cz", "O2"] {
        let c = rec.signal_index(label).unwrap();
        let mut x = vec![0f32; n];
        rec.read(c, 128 * 30, &mut x).unwrap();
        let want = reference::magnitude(&x, dt, &scales, 6.0);
        let cpu = CwtPlan::new(n, dt, &scales, 6.0).unwrap().magnitude(&x);
        let e = worst_relative(&cpu, &want, n);
        assert!(e <= 1e-4, "{label} CPU: {e}");
        if let Some(k) = gpu.as_mut() {
            let sp = k.spectra(&[&x], None).unwrap();
            let e = worst_relative(&k.magnitude(&sp, dt, &scales, 6.0).unwrap(), &want, n);
            assert!(e <= 1e-3, "{label} GPU: {e}");
        }
    }
}

/// Every power of two from 2 to 2^22, forward and inverse, three rows for the small sizes (a
/// row shorter than a workgroup's tile shares it with the next): the two-pass FFTs, and the
/// stage kernels up to 2^16 (rows past 2^22 take those).
#[test]
fn gpu_fft_matches_rustfft_at_every_power_of_two() {
    let Some(k) = gpu() else {
        return;
    };
    let mut fft = ede::gpu::fft::FftKernels::new(k.context());
    let mut planner = rustfft::FftPlanner::<f32>::new();
    let mut rng = Rng(11);
    let two_pass = fft.two_pass_up_to;
    let sizes = (1..=22u32).map(|l| (l, two_pass));
    for (level, up_to) in sizes.chain((1..=16).map(|l| (l, 0))) {
        fft.two_pass_up_to = up_to;
        let m = 1usize << level;
        let rows = if m <= 4096 { 3 } else { 1 };
        let data: Vec<Complex32> = (0..m * rows)
            .map(|_| Complex32::new(rng.gauss() as f32, rng.gauss() as f32))
            .collect();
        for inverse in [false, true] {
            let got = fft.transform(&data, m, inverse).unwrap();
            let plan = if inverse {
                planner.plan_fft_inverse(m)
            } else {
                planner.plan_fft_forward(m)
            };
            let mut want = data.clone();
            for row in want.chunks_mut(m) {
                plan.process(row);
            }
            // Errors relative to the output's RMS, which grows as sqrt(M).
            let rms =
                (want.iter().map(|c| c.norm_sqr() as f64).sum::<f64>() / want.len() as f64).sqrt();
            let worst = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (g - w).norm() as f64)
                .fold(0.0, f64::max);
            assert!(
                worst / rms < 2e-5 * (level as f64).max(1.0),
                "M = 2^{level}, inverse {inverse}, two passes up to {up_to}: worst error {} of \
                 rms {rms}",
                worst
            );
        }
    }
}

fn recording_of(xs: Vec<Vec<f32>>, fs: f64) -> ede::recording::Recording {
    let labels = (0..xs.len())
        .map(|c| (format!("C{c}"), "uV".to_string(), fs))
        .collect();
    in_memory(
        None,
        Format::Csv,
        unknown_start(),
        labels,
        xs,
        Vec::new(),
        Vec::new(),
    )
}

/// Band power streamed in small segments equals the block means of the whole transform (the
/// recording's padding leaves room for the widest wavelet, so the whole transform does not
/// wrap), on the CPU and the GPU: the narrow scales from |W|^2 at every D-th sample (the
/// default), its block sums in the inverse FFT's second pass (what these segments take, the
/// last one's shorter core too), and the |W|^2 rows and `block_power` that other shapes take,
/// after the two passes and after the stage kernels.
#[test]
fn streamed_band_power_equals_the_whole_transform() {
    let fs = 128.0;
    let n = 5000; // padded to 8192: 3192 zeros, more than 8.6 x the widest scale
    let mut rng = Rng(5);
    let xs: Vec<Vec<f32>> = (0..2)
        .map(|c| {
            (0..n)
                .map(|i| {
                    let t = i as f64 / fs;
                    (40.0 * (2.0 * std::f64::consts::PI * (6.0 + 4.0 * c as f64) * t).sin()
                        + 10.0 * rng.gauss()
                        + 100.0) as f32
                })
                .collect()
        })
        .collect();
    let rec = recording_of(xs.clone(), fs);
    let params = CwtParams {
        omega0: 6.0,
        scales: ScaleSpec::Frequencies {
            fmin: 2.0,
            fmax: 40.0,
            voices: 4,
        },
    };
    let scales = params.scales(1.0 / fs).unwrap();
    let s = scales.len();
    let mut gpu = gpu();
    // Blocks of 1 s, and of 101 samples (odd, neither dividing the segments nor the
    // decimated rows' spacing).
    for block in [128, 101] {
        let whole_plan = CwtPlan::new(n, 1.0 / fs, &scales, 6.0).unwrap();
        let whole: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| whole_plan.block_power(x, cwt::mean(x), 0..n, block))
            .collect();
        let blocks = n.div_ceil(block);
        let seg = Segmentation::new(n, block, scales[s - 1] * fs, 4096).unwrap();
        let m = cwt::padded_len(seg.core + 2 * seg.margin);
        let last = n - (n - 1) / seg.core * seg.core;
        for count in [seg.core, last].into_iter().filter(|_| block == 128) {
            assert!(
                fused_block_workgroups(m, count, block).is_some(),
                "segments of {m} samples, {count} in blocks of {block}, must sum blocks in pass 2"
            );
        }
        // (GPU, narrow scales decimated, their blocks from nearby samples, block sums in pass
        // 2, rows up to this long take the two passes)
        let variants = [
            (false, false, false, true, usize::MAX),
            (true, true, true, true, usize::MAX),
            (true, true, false, true, usize::MAX),
            (true, false, false, true, usize::MAX),
            (true, false, false, false, usize::MAX),
            (true, false, false, true, 0),
        ];
        for (use_gpu, decimated, windowed, fused, up_to) in variants {
            let kernels = match (use_gpu, gpu.as_mut()) {
                (false, _) => None,
                (true, Some(k)) => {
                    k.decimate_block_power = decimated;
                    k.window_block_sums = windowed;
                    k.fuse_block_sums = fused;
                    k.fft().two_pass_up_to = up_to;
                    Some(k)
                }
                (true, None) => continue,
            };
            let job = BandPowerJob {
                channels: vec![0, 1],
                params,
                block_s: block as f64 / fs,
                segment: 4096,
            };
            let mut got = vec![vec![f64::NAN; s * blocks]; 2];
            let mut segments = 0;
            // Segments come in order (the GPU's are read back one behind).
            let mut next_block = 0;
            band_power(
                &rec,
                &job,
                kernels,
                &AtomicBool::new(false),
                |_, _| segments += 1,
                |first, power| {
                    assert_eq!(first, next_block, "segments in order");
                    let k = power.len() / (2 * s);
                    next_block += k;
                    for c in 0..2 {
                        for j in 0..s {
                            for b in 0..k {
                                got[c][j * blocks + first + b] = power[(c * s + j) * k + b];
                            }
                        }
                    }
                    Ok(())
                },
            )
            .unwrap();
            assert!(segments > 1, "the test must cross segment joins");
            // Every path is within a few 1e-6 of the top (f32 sums); a block one sample off
            // is 3e-3.
            let tol = if use_gpu { 2e-5 } else { 1e-5 };
            for c in 0..2 {
                for j in 0..s {
                    let row = &whole[c][j * blocks..][..blocks];
                    let top = row.iter().fold(0f64, |a, &b| a.max(b));
                    for b in 0..blocks {
                        let e = (got[c][j * blocks + b] - row[b]).abs() / top;
                        assert!(
                            e <= tol,
                            "gpu {use_gpu} (decimated {decimated}, windowed {windowed}, fused {fused}, \
                             two passes up to {up_to}), blocks of {block}, channel {c}, scale {j}, \
                             block {b}: {e}"
                        );
                    }
                }
            }
        }
    }
}

/// A stream stopped midway (its output failing at a segment, again and again) leaves the GPU's
/// upload buffers whole: the next job on the same kernels runs to its end with the same band
/// power as the first.
#[test]
fn band_power_streams_stopped_midway_leave_the_next_one_whole() {
    let Some(mut k) = gpu() else { return };
    let fs = 128.0;
    let mut rng = Rng(9);
    let xs: Vec<Vec<f32>> = (0..2)
        .map(|_| (0..6000).map(|_| rng.gauss() as f32).collect())
        .collect();
    let rec = recording_of(xs, fs);
    let job = BandPowerJob {
        channels: vec![0, 1],
        params: CwtParams::default(),
        block_s: 1.0,
        segment: 4096,
    };
    let run = |k: &mut CwtKernels, stop_at: Option<usize>| {
        let mut got = Vec::new();
        let result = band_power(
            &rec,
            &job,
            Some(k),
            &AtomicBool::new(false),
            |_, _| {},
            |_, power| {
                if stop_at == Some(got.len()) {
                    return Err(std::io::Error::other("disk full").into());
                }
                got.push(power.to_vec());
                Ok(())
            },
        );
        (result.map(|_| ()), got)
    };
    let (first, whole) = run(&mut k, None);
    first.unwrap();
    assert!(whole.len() > 2, "several segments");
    // More stops than the upload ring has buffers.
    for stop_at in [0, 1, 0, 1, 0] {
        let (stopped, _) = run(&mut k, Some(stop_at));
        assert!(stopped.is_err(), "the output's error comes back");
    }
    let (again, got) = run(&mut k, None);
    again.unwrap();
    assert_eq!(got, whole);
}

/// The texture painted on the device shows what the CPU twin paints, pixel for pixel within
/// one step of the colour map (f32 sums in another order), and hover values agree.
#[test]
fn gpu_texture_matches_the_cpu_image() {
    let Some(mut k) = gpu() else {
        return;
    };
    let lut: [u32; 256] =
        std::array::from_fn(|i| u32::from_le_bytes([i as u8, 0, 255 - i as u8, 255]));
    let mut rng = Rng(21);
    let n = 3000;
    let fs = 256.0;
    let xs: Vec<Vec<f32>> = (0..2)
        .map(|c| {
            (0..n)
                .map(|i| {
                    ((2.0 * std::f64::consts::PI * (8.0 + 10.0 * c as f64) * i as f64 / fs).sin()
                        + 0.3 * rng.gauss()) as f32
                })
                .collect()
        })
        .collect();
    let refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
    let params = CwtParams::default();
    let scales = params.scales(1.0 / fs).unwrap();
    let plan = CwtPlan::new(n, 1.0 / fs, &scales, params.omega0).unwrap();
    fn worst_step(a: &[[u8; 4]], b: &[[u8; 4]]) -> i32 {
        (a.iter().zip(b))
            .map(|(g, c)| (g[0] as i32 - c[0] as i32).abs())
            .max()
            .unwrap()
    }
    // Each image is checked again after the next is painted: a canvas an image holds is not
    // reused, and one let go is (the third image paints where the first did).
    let mut last: Option<(ede::gpu::cwt::Painted, Vec<[u8; 4]>)> = None;
    for (quantity, per_scale, per_trace) in [
        (Quantity::Power, false, true),
        (Quantity::Magnitude, true, false),
        (Quantity::Db, false, true),
        (Quantity::Db, true, false),
    ] {
        let spec = PaintSpec {
            width: 500,
            quantity,
            per_scale,
            range_db: 40.0,
            per_trace,
        };
        let (width, values, tops) = pixel_values(&plan, &refs, &spec);
        let cpu = colour_pixels(&values, &tops, &spec, &lut);
        let sp = k.spectra(&refs, None).unwrap();
        let painted = k
            .paint(&sp, 1.0 / fs, &scales, params.omega0, &spec, &lut)
            .unwrap();
        assert_eq!((painted.width, painted.height), (width, 2 * scales.len()));
        let worst = worst_step(&k.read_texture(&painted).unwrap(), &cpu);
        assert!(worst <= 1, "{quantity:?}: colours differ by {worst} steps");
        if let Some((before, before_cpu)) = &last {
            let worst = worst_step(&k.read_texture(before).unwrap(), before_cpu);
            assert!(
                worst <= 1,
                "the image before {quantity:?} changed by {worst} steps"
            );
        }
        let (x, row) = (123, scales.len() + 5);
        let v = painted.value_at(k.context(), x, row).unwrap();
        let want = values[row * width + x];
        let scale = if quantity == Quantity::Db {
            1.0
        } else {
            tops[1].abs()
        };
        assert!(
            (v - want).abs() <= 1e-3 * scale,
            "{quantity:?}: hover {v} vs {want}"
        );
        let gpu_tops = painted.tops(k.context(), &spec).unwrap();
        for (g, c) in gpu_tops.iter().zip(&tops) {
            assert!(
                (g - c).abs() <= 1e-3 * c.abs().max(1.0),
                "tops {gpu_tops:?} vs {tops:?}"
            );
        }
        last = Some((painted, cpu));
    }
}

/// Recomputes as a slider moves: the wavelet's parameters are rewritten in place and the bind
/// groups kept, so each image must show its own omega0 and scales, not the last one's, and a
/// recording with other channels must get its own tops.
#[test]
fn each_recompute_paints_its_own_wavelet() {
    let Some(mut k) = gpu() else {
        return;
    };
    let lut: [u32; 256] = std::array::from_fn(|i| u32::from_le_bytes([i as u8, 9, 9, 255]));
    let mut rng = Rng(5);
    let (n, fs) = (3000, 256.0);
    let xs: Vec<Vec<f32>> = (0..3)
        .map(|_| (0..n).map(|_| rng.gauss() as f32).collect())
        .collect();
    let spec = PaintSpec {
        width: 300,
        quantity: Quantity::Power,
        per_scale: true,
        range_db: 40.0,
        per_trace: true,
    };
    for (channels, omega0, count) in [(2, 6.0, 12), (2, 9.0, 12), (2, 6.0, 12), (3, 7.0, 8)] {
        let refs: Vec<&[f32]> = xs[..channels].iter().map(Vec::as_slice).collect();
        let params = CwtParams {
            omega0,
            scales: ScaleSpec::Frequencies {
                fmin: 2.0,
                fmax: 60.0,
                voices: count,
            },
        };
        let scales = params.scales(1.0 / fs).unwrap();
        let plan = CwtPlan::new(n, 1.0 / fs, &scales, omega0).unwrap();
        let (_, want, tops) = pixel_values(&plan, &refs, &spec);
        let sp = k.spectra(&refs, None).unwrap();
        let painted = k
            .paint(&sp, 1.0 / fs, &scales, omega0, &spec, &lut)
            .unwrap();
        let got = painted.values(k.context()).unwrap();
        let top = tops.iter().fold(0f32, |a, &t| a.max(t));
        let worst = (got.iter().zip(&want)).fold(0f32, |a, (g, w)| a.max((g - w).abs()));
        assert!(
            worst <= 1e-4 * top,
            "{channels} channels, omega0 {omega0}: {worst} against a top of {top}"
        );
        let gpu_tops = painted.tops(k.context(), &spec).unwrap();
        assert_eq!(gpu_tops.len(), channels);
    }
}
