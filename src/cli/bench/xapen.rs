//! `ede bench xapen`: one subject the size of the paper's (148 MEG channels x 49 epochs x 1024
//! samples, m = 1, r = 0.2), synthetic and deterministic, through every path:
//!
//! - GPU: the whole subject end to end (upload, sort, count, reduce, read back), then the
//!   interactive case: one epoch already on the device, r changed, matrix read back;
//! - CPU: the fast path and the brute-force baseline (the paper's Fig. 1 loop, on rayon) in the
//!   same run. The brute force is measured on a few epochs and scaled: its cost is exactly
//!   proportional to the number of epochs.
//!
//! The GPU's counts are checked against the CPU on sampled pairs, exactly.

use std::time::Instant;

use serde::Serialize;

use super::Stats;
use crate::analysis::xapen::cpu_name;
use crate::cli::write_json;
use crate::dsp::xapen::{self, Correction, CpuMethod, Epochs, XapenParams, fast};
use crate::gpu::GpuContext;
use crate::gpu::xapen::{M1Count, Readback, XapenKernels};
use crate::recording::demo::{SplitMix, pink_noise};

#[derive(Debug, clap::Args)]
pub struct XapenBenchArgs {
    #[arg(long, default_value_t = 148)]
    pub channels: usize,
    #[arg(long, default_value_t = 49)]
    pub epochs: usize,
    #[arg(long, default_value_t = 1024)]
    pub n: usize,
    #[arg(long, default_value_t = 1)]
    pub m: usize,
    #[arg(long, default_value_t = 0.2)]
    pub r: f32,
    /// Timed repetitions of each GPU measurement.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Epochs the CPU fast path runs (its time is scaled to the whole subject); 0 skips it.
    #[arg(long, default_value_t = 49)]
    pub cpu_epochs: usize,
    /// Epochs the brute-force baseline runs (scaled likewise); 0 skips it.
    #[arg(long, default_value_t = 1)]
    pub brute_epochs: usize,
    /// Skip the GPU.
    #[arg(long)]
    pub no_gpu: bool,
    /// Threads of the CPU paths (default: every core), e.g. 2 for a two-core machine's figure.
    #[arg(long)]
    pub threads: Option<usize>,
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    channels: usize,
    epochs: usize,
    n: usize,
    m: usize,
    r: f32,
    /// Ordered pairs x epochs: the number of Cross-ApEn values of the subject.
    pair_epochs: usize,
    /// What brute force compares: (N-m+1)^2 windows per pair and epoch.
    window_comparisons: f64,
    cpu: String,
    gpu: Option<GpuReport>,
    cpu_fast: Option<CpuReport>,
    cpu_brute: Option<CpuReport>,
    /// Brute force time over fast time, both scaled to the whole subject.
    cpu_fast_speedup: Option<f64>,
}

#[derive(Debug, Serialize)]
struct GpuReport {
    adapter: String,
    software: bool,
    /// First run, with pipeline creation and buffer allocation.
    first_subject_s: f64,
    /// Of which the pipelines (shader compilation).
    pipelines_s: f64,
    /// Whole subject: normalized samples in, mean matrix out.
    subject_s: Stats,
    /// 30 subjects at the median: the paper's study (30 minutes on a GTX 580).
    study_30_subjects_s: f64,
    /// Window comparisons brute force would make, per second of the median run.
    equivalent_window_comparisons_per_s: f64,
    /// Candidate samples (sum of N_i^m over everything) per second: what the candidate
    /// kernel tests one by one, and the stripes (m = 1) count in twelve loads a window.
    candidate_tests_per_s: f64,
    /// Interactive recomputes: r changed, one epoch already on the device.
    interactive: Vec<InteractiveReport>,
    /// At m = 1, the same runs with each other way of counting that applies (the wavelet
    /// matrix, the candidate kernel), in the same process: what the default gains.
    other_kernels: Vec<KernelComparison>,
    /// Largest |GPU - CPU| of the mean matrix (when the CPU ran every epoch).
    max_abs_diff_vs_cpu: Option<f64>,
    /// Pairs whose count totals were compared with the CPU, and how many differed.
    count_checks: usize,
    count_mismatches: usize,
}

#[derive(Debug, Serialize)]
struct InteractiveReport {
    channels: usize,
    /// Upload and sort of the epoch (once per selection, not per r).
    prepare_s: f64,
    /// New r -> count -> mean matrix back on the CPU -> the view's texture image.
    recompute_s: Stats,
}

#[derive(Debug, Serialize)]
struct KernelComparison {
    kernel: &'static str,
    subject_s: Stats,
    /// Recompute of the whole-channel epoch (the first interactive row).
    interactive_s: Stats,
    /// This kernel's time over the default kernel's, at the medians.
    subject_speedup: f64,
    interactive_speedup: f64,
}

#[derive(Debug, Serialize)]
struct CpuReport {
    epochs_run: usize,
    measured_s: f64,
    /// Scaled to the whole subject.
    subject_s: f64,
    equivalent_window_comparisons_per_s: f64,
}

/// Deterministic MEG-like channels: 1/f background plus an alpha rhythm of varying strength.
pub(super) fn subject(channels: usize, epochs: usize, n: usize) -> Vec<f32> {
    let mut rng = SplitMix(0x00C0_FFEE);
    let mut raw = vec![0f32; epochs * channels * n];
    for c in 0..channels {
        let background = pink_noise(&mut rng, epochs * n, 1.0);
        let alpha = 0.3 + 1.5 * rng.uniform();
        let freq = 0.05 + 0.02 * rng.uniform();
        for e in 0..epochs {
            for i in 0..n {
                let t = (e * n + i) as f64;
                raw[(e * channels + c) * n + i] =
                    (background[e * n + i] + alpha * (freq * t).sin()) as f32;
            }
        }
    }
    raw
}

pub fn run(args: &XapenBenchArgs) -> anyhow::Result<()> {
    let params = XapenParams {
        m: args.m,
        r: args.r,
        correction: Correction::Max,
    };
    let (b, e, n) = (args.channels, args.epochs, args.n);
    params.check(n)?;
    let raw = subject(b, e, n);
    let ep = Epochs::normalize(&raw, n, b)?;
    let windows = (n - args.m + 1) as f64;
    let comparisons_per_epoch = (b * b) as f64 * windows * windows;
    let window_comparisons = comparisons_per_epoch * e as f64;

    let cpu_run = |method, epochs: usize| -> anyhow::Result<Option<(CpuReport, Vec<f64>)>> {
        if epochs == 0 {
            return Ok(None);
        }
        let epochs = epochs.min(e);
        let part = Epochs::normalize(&raw[..epochs * b * n], n, b)?;
        let t = Instant::now();
        let result = xapen::cpu_matrices(&part, &params, method, None, None)?;
        let measured_s = t.elapsed().as_secs_f64();
        let subject_s = measured_s * e as f64 / epochs as f64;
        eprintln!("cpu {method:?}: {epochs} epoch(s) in {measured_s:.3} s");
        Ok(Some((
            CpuReport {
                epochs_run: epochs,
                measured_s,
                subject_s,
                equivalent_window_comparisons_per_s: window_comparisons / subject_s,
            },
            result.map(|m| m.mean).unwrap_or_default(),
        )))
    };
    let pool = args
        .threads
        .map(|t| rayon::ThreadPoolBuilder::new().num_threads(t).build())
        .transpose()?;
    let on_pool = |method, epochs| match &pool {
        Some(p) => p.install(|| cpu_run(method, epochs)),
        None => cpu_run(method, epochs),
    };
    let cpu_fast = on_pool(CpuMethod::Fast, args.cpu_epochs)?;
    let cpu_brute = on_pool(CpuMethod::Brute, args.brute_epochs)?;
    let cpu = match &pool {
        Some(p) => p.install(cpu_name),
        None => cpu_name(),
    };
    let cpu_fast_speedup = match (&cpu_fast, &cpu_brute) {
        (Some((f, _)), Some((s, _))) => Some(s.subject_s / f.subject_s),
        _ => None,
    };
    // The CPU reference matrix for the GPU check (only when the fast path ran every epoch).
    let cpu_mean = match &cpu_fast {
        Some((f, mean)) if f.epochs_run == e => Some(mean.as_slice()),
        _ => None,
    };

    let gpu = if args.no_gpu {
        None
    } else {
        match GpuContext::headless() {
            Ok(ctx) => Some(gpu_report(&ctx, &ep, &params, args, cpu_mean)?),
            Err(err) => {
                eprintln!("no GPU: {err}");
                None
            }
        }
    };
    let report = Report {
        channels: b,
        epochs: e,
        n,
        m: args.m,
        r: args.r,
        pair_epochs: b * b * e,
        window_comparisons,
        cpu,
        gpu,
        cpu_fast: cpu_fast.map(|(r, _)| r),
        cpu_brute: cpu_brute.map(|(r, _)| r),
        cpu_fast_speedup,
    };
    write_json(&report, args.out.as_deref())
}

fn gpu_report(
    ctx: &GpuContext,
    ep: &Epochs,
    params: &XapenParams,
    args: &XapenBenchArgs,
    cpu_mean: Option<&[f64]>,
) -> anyhow::Result<GpuReport> {
    let (b, n) = (ep.channels, ep.n);
    let t = Instant::now();
    let mut kernels = XapenKernels::new(ctx);
    let pipelines_s = t.elapsed().as_secs_f64();
    let readback = Readback {
        per_epoch: false,
        totals: true,
    };
    let first = kernels
        .matrices(ep, params, readback, None, None)?
        .expect("not cancelled");
    let first_subject_s = t.elapsed().as_secs_f64();
    eprintln!("gpu first subject: {first_subject_s:.3} s");
    let subject = |kernels: &mut XapenKernels| -> anyhow::Result<Stats> {
        let mut times = Vec::new();
        for _ in 0..args.repeats.max(1) {
            let t = Instant::now();
            kernels.matrices(ep, params, Readback::default(), None, None)?;
            times.push(t.elapsed().as_secs_f64());
        }
        Ok(Stats::of(times))
    };
    let subject_s = subject(&mut kernels)?;
    eprintln!("gpu subject: median {:.4} s", subject_s.median);
    // With EDE_GPU_PROFILE: one more subject's passes on stderr.
    super::profile_one(ctx, || {
        kernels.matrices(ep, params, Readback::default(), None, None)?;
        Ok("Cross-ApEn subject".to_string())
    })?;

    // Exact counts on sampled pairs.
    let totals = first.totals.expect("asked for");
    let mut rng = SplitMix(7);
    let mut mismatches = 0;
    let checks = 200.min(ep.epochs * b * b);
    for _ in 0..checks {
        let pick = |rng: &mut SplitMix, k: usize| ((rng.uniform() * k as f64) as usize).min(k - 1);
        let (e, u, v) = (
            pick(&mut rng, ep.epochs),
            pick(&mut rng, b),
            pick(&mut rng, b),
        );
        if !(ep.is_valid(e, u) && ep.is_valid(e, v)) {
            continue;
        }
        let (n_m, n_m1) = fast::counts(ep.series(e, u), ep.series(e, v), params.m, params.r);
        let want = [n_m.iter().sum::<u32>(), n_m1.iter().sum::<u32>()];
        if totals[(e * b + u) * b + v] != want {
            mismatches += 1;
        }
    }
    let candidates: f64 = totals.iter().map(|t| t[0] as f64).sum();
    let max_abs_diff_vs_cpu = cpu_mean.map(|c| {
        c.iter()
            .zip(&first.matrices.mean)
            .map(|(a, g)| (a - g).abs())
            .filter(|d| !d.is_nan())
            .fold(0.0, f64::max)
    });

    let mut interactive = Vec::new();
    let sizes = if b > 32 { vec![b, 32] } else { vec![b] };
    for channels in sizes {
        let one = interactive_epoch(ep, channels);
        let t = Instant::now();
        let prep = kernels.prepare(&one, 0..1, params.m)?;
        ctx.wait()?;
        let prepare_s = t.elapsed().as_secs_f64();
        let recompute_s = drag(&mut kernels, &prep, params, channels)?;
        eprintln!(
            "gpu interactive {channels} channels: median {:.2} ms",
            recompute_s.median * 1e3
        );
        interactive.push(InteractiveReport {
            channels,
            prepare_s,
            recompute_s,
        });
    }
    let mut other_kernels = Vec::new();
    if params.m == 1 {
        let default = M1Count::Stripes.for_length(n);
        for (choice, kernel) in [
            (M1Count::Wavelet, "wavelet"),
            (M1Count::Candidates, "candidates"),
        ] {
            if choice == default || choice.for_length(n) != choice {
                continue;
            }
            kernels.m1_count = choice;
            let other_s = subject(&mut kernels)?;
            let one = interactive_epoch(ep, b);
            let prep = kernels.prepare(&one, 0..1, params.m)?;
            let interactive_s = drag(&mut kernels, &prep, params, b)?;
            eprintln!(
                "{kernel} kernel: subject {:.4} s, interactive {:.2} ms",
                other_s.median,
                interactive_s.median * 1e3
            );
            other_kernels.push(KernelComparison {
                kernel,
                subject_speedup: other_s.median / subject_s.median,
                interactive_speedup: interactive_s.median / interactive[0].recompute_s.median,
                subject_s: other_s,
                interactive_s,
            });
        }
        kernels.m1_count = M1Count::Stripes;
    }
    let windows = (n - params.m + 1) as f64;
    let comparisons = (b * b * ep.epochs) as f64 * windows * windows;
    Ok(GpuReport {
        adapter: ctx.describe(),
        software: ctx.is_software(),
        first_subject_s,
        pipelines_s,
        study_30_subjects_s: 30.0 * subject_s.median,
        equivalent_window_comparisons_per_s: comparisons / subject_s.median,
        candidate_tests_per_s: candidates / subject_s.median,
        subject_s,
        interactive,
        other_kernels,
        max_abs_diff_vs_cpu,
        count_checks: checks,
        count_mismatches: mismatches,
    })
}

/// The first epoch's first `channels` channels, as the Cross-ApEn view sends them.
fn interactive_epoch(ep: &Epochs, channels: usize) -> Epochs {
    Epochs {
        n: ep.n,
        channels,
        epochs: 1,
        data: (0..channels)
            .flat_map(|c| ep.series(0, c).iter().copied())
            .collect(),
        valid: (0..channels).map(|c| ep.is_valid(0, c)).collect(),
    }
}

/// 20 recomputes of a prepared epoch as a drag of r makes them: new r, count, mean matrix back,
/// the view's image.
fn drag(
    kernels: &mut XapenKernels,
    prep: &crate::gpu::xapen::Prepared,
    params: &XapenParams,
    channels: usize,
) -> anyhow::Result<Stats> {
    let mut times = Vec::new();
    for k in 0..20 {
        // As a drag does: a slightly different r each frame.
        let p = XapenParams {
            r: params.r * (1.0 + 0.01 * k as f32),
            ..*params
        };
        let t = Instant::now();
        kernels.count(prep, &p, true)?;
        let mean = kernels.read_mean(prep)?;
        // The image the view uploads as its texture.
        std::hint::black_box(crate::app::xapen_view::matrix_image(&mean, channels));
        times.push(t.elapsed().as_secs_f64());
    }
    // With EDE_GPU_PROFILE: one more recompute's passes, and its host share, on stderr.
    let ctx = kernels.context().clone();
    super::profile_one(&ctx, || {
        let t = Instant::now();
        kernels.count(prep, params, true)?;
        let recorded = t.elapsed().as_secs_f64();
        kernels.read_mean(prep)?;
        let total = t.elapsed().as_secs_f64();
        Ok(format!(
            "Cross-ApEn recompute, {channels} channels (host {:.1} us of {:.1} us)",
            recorded * 1e6,
            total * 1e6
        ))
    })?;
    Ok(Stats::of(times))
}
