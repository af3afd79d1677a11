//! `ede bench hermite`: the Hermite fit's goals (issue 7), in one run:
//!
//! - throughput: 100,000 beats (record 100's annotated beats repeated, the paper's Test B
//!   size) at N = 6, 10, 20, 30 with S = 100, on the GPU (upload once, then fit: basis, fits,
//!   best sigma, read back) and on the CPU path, beside the paper's Table 3;
//! - interactive: refitting record 100's beats (already on the device, as in the explorer
//!   while a slider moves) to the results read back;
//! - fidelity: record 100's mean MSE at N = 6, 10, 20, 30, filtered and raw, beside the
//!   paper's Table 1; and the detector against the annotations.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use serde::Serialize;

use super::Stats;
use crate::analysis::hermite::{EcgBeats, EcgFilter, beat_label, mean_sd};
use crate::analysis::xapen::cpu_name;
use crate::cli::write_json;
use crate::dsp::hermite::{Basis, HermiteParams};
use crate::dsp::qrs::{self, BeatMatch};
use crate::gpu::GpuContext;
use crate::gpu::hermite::{GpuBeats, HermiteKernels};
use crate::recording::{OpenOptions, Recording};

/// The paper's Table 3 (Test B, about 1e5 beats, S about 100), seconds: (N, CPU, GPU).
const PAPER_TABLE_3: [(usize, f64, f64); 4] = [
    (6, 211.559, 1.230),
    (10, 322.829, 1.735),
    (20, 599.249, 4.612),
    (30, 845.513, 9.882),
];
/// The paper's Table 1 (the whole MIT-BIH database): (N, mean MSE, SD).
const PAPER_TABLE_1: [(usize, f64, f64); 4] = [
    (6, 9.79, 10.0),
    (10, 5.32, 6.97),
    (20, 2.48, 4.92),
    (30, 1.97, 3.95),
];
/// FP32 rate WGSL reaches on the H100 through wgpu/Vulkan: `ede bench peak`'s best, 16 vec4
/// chains a thread, 63.5-64.3 TFLOP/s at 1.98 GHz (the 29 once recorded was a kernel with too
/// few independent chains).
const FP32_CEILING_TFLOPS: f64 = 63.5;

#[derive(Debug, clap::Args)]
pub struct HermiteBenchArgs {
    /// MIT-BIH record 100 (any annotated ECG record works).
    #[arg(long, default_value = "../shared/data/ecg/mitdb/100.hea")]
    pub record: PathBuf,
    /// Beats of the throughput run (record's beats repeated).
    #[arg(long, default_value_t = 100_000)]
    pub beats: usize,
    /// Beats of the CPU throughput run (scaled to `beats` in the report); 0 skips it.
    #[arg(long, default_value_t = 100_000)]
    pub cpu_beats: usize,
    /// Timed repetitions of each GPU measurement.
    #[arg(long, default_value_t = 10)]
    pub repeats: usize,
    #[arg(long)]
    pub no_gpu: bool,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    record: String,
    record_beats: usize,
    beats: usize,
    sigmas: usize,
    throughput: Vec<Throughput>,
    interactive: Vec<Interactive>,
    fidelity: Vec<Fidelity>,
    detector: Detector,
    cpu: String,
    gpu: Option<String>,
}

#[derive(Debug, Serialize)]
struct Throughput {
    order: usize,
    /// Flops of the definition's fit (coefficients, reconstruction of the signal part, padding
    /// quadratic form) for all beats and sigmas. The even/odd split (dsp::hermite::Basis)
    /// computes half of them, so `gpu_tflops` is an effective rate.
    flops: f64,
    gpu_upload_s: Option<f64>,
    gpu_fit_s: Option<Stats>,
    gpu_tflops: Option<f64>,
    gpu_fraction_of_fp32_ceiling: Option<f64>,
    cpu_fit_s: Option<f64>,
    cpu_beats_timed: usize,
    paper_cpu_s: f64,
    paper_gpu_s: f64,
    gpu_speedup_over_paper_gpu: Option<f64>,
    cpu_speedup_over_paper_cpu: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Interactive {
    order: usize,
    beats: usize,
    gpu_refit_s: Option<Stats>,
    cpu_refit_s: Stats,
}

#[derive(Debug, Serialize)]
struct Fidelity {
    order: usize,
    filter: EcgFilter,
    /// mV^2, and in the record's ADC units^2 (200 per mV).
    mse_mean: f64,
    mse_sd: f64,
    mse_mean_adu2: f64,
    paper_mse_mean: f64,
    paper_mse_sd: f64,
}

#[derive(Debug, Serialize)]
struct Detector {
    reference_beats: usize,
    detected: usize,
    sensitivity: f64,
    positive_predictivity: f64,
    elapsed_s: f64,
}

fn flops(beats: usize, sigmas: usize, width: usize, order: usize) -> f64 {
    (beats * sigmas) as f64 * (4.0 * (width * order) as f64 + 2.0 * (order * order) as f64)
}

/// With `EDE_GPU_PROFILE`: each pass's GPU time in one more fit, on stderr.
fn profile(
    k: &mut HermiteKernels,
    beats: &GpuBeats,
    fs: f64,
    params: &HermiteParams,
    what: String,
) -> anyhow::Result<()> {
    let ctx = k.context().clone();
    super::profile_one(&ctx, || {
        k.fit(beats, fs, params)?;
        Ok(what)
    })
}

pub fn run(args: &HermiteBenchArgs) -> anyhow::Result<()> {
    let gpu = if args.no_gpu {
        None
    } else {
        GpuContext::headless()
            .map_err(|e| eprintln!("ede bench hermite: {e}"))
            .ok()
    };
    let mut kernels = gpu.as_ref().map(HermiteKernels::new);
    let rec = Recording::open(&args.record, &OpenOptions::default())
        .with_context(|| format!("cannot open {}", args.record.display()))?;
    let beats = EcgBeats::prepare(&rec, 0, EcgFilter::Default, false)?;
    anyhow::ensure!(!beats.is_empty(), "{} has no beats", args.record.display());
    let (fs, w) = (beats.fs, beats.window.width());
    let repeated = |n: usize| -> Vec<f32> {
        (0..n)
            .flat_map(|i| beats.window_of(i % beats.len()).iter().copied())
            .collect()
    };
    let many = repeated(args.beats);
    let cpu_many = repeated(args.cpu_beats);
    let timed = |mut f: Box<dyn FnMut() -> anyhow::Result<()> + '_>, n: usize| {
        let mut v = Vec::new();
        for _ in 0..n.max(1) {
            let t = Instant::now();
            f()?;
            v.push(t.elapsed().as_secs_f64());
        }
        anyhow::Ok(Stats::of(v))
    };

    let mut throughput = Vec::new();
    let mut interactive = Vec::new();
    let small = kernels
        .as_ref()
        .map(|k| k.upload(&beats.windows, w))
        .transpose()?;
    for (order, paper_cpu_s, paper_gpu_s) in PAPER_TABLE_3 {
        let params = HermiteParams {
            order,
            ..Default::default()
        };
        let sigmas = params.sigmas;
        eprintln!("N = {order}: {} beats", args.beats);
        let (mut gpu_upload_s, mut gpu_fit_s) = (None, None);
        if let Some(k) = kernels.as_mut() {
            let t = Instant::now();
            let up = k.upload(&many, w)?;
            k.context().wait()?;
            gpu_upload_s = Some(t.elapsed().as_secs_f64());
            k.fit(&up, fs, &params)?; // pipelines built, warm
            gpu_fit_s = Some(timed(
                Box::new(|| Ok(k.fit(&up, fs, &params).map(drop)?)),
                args.repeats,
            )?);
            profile(
                k,
                &up,
                fs,
                &params,
                format!("N = {order}, {} beats", args.beats),
            )?;
        }
        let cpu_fit_s = (args.cpu_beats > 0)
            .then(|| {
                let t = Instant::now();
                let basis = Basis::new(fs, &params)?;
                basis.fit(&cpu_many, None);
                anyhow::Ok(t.elapsed().as_secs_f64() * args.beats as f64 / args.cpu_beats as f64)
            })
            .transpose()?;
        let f = flops(args.beats, sigmas, w, order);
        let tflops = gpu_fit_s.as_ref().map(|s| f / s.median / 1e12);
        throughput.push(Throughput {
            order,
            flops: f,
            gpu_upload_s,
            gpu_tflops: tflops,
            gpu_fraction_of_fp32_ceiling: tflops.map(|t| t / FP32_CEILING_TFLOPS),
            gpu_speedup_over_paper_gpu: gpu_fit_s.as_ref().map(|s| paper_gpu_s / s.median),
            gpu_fit_s,
            cpu_speedup_over_paper_cpu: cpu_fit_s.map(|c| paper_cpu_s / c),
            cpu_fit_s,
            cpu_beats_timed: args.cpu_beats,
            paper_cpu_s,
            paper_gpu_s,
        });
        let gpu_refit_s = match (kernels.as_mut(), &small) {
            (Some(k), Some(up)) => {
                let refit = timed(
                    Box::new(|| Ok(k.fit(up, fs, &params).map(drop)?)),
                    args.repeats * 5,
                )?;
                profile(k, up, fs, &params, format!("N = {order}, refit"))?;
                Some(refit)
            }
            _ => None,
        };
        let cpu_refit_s = timed(
            Box::new(|| {
                Basis::new(fs, &params)?.fit(&beats.windows, None);
                Ok(())
            }),
            3,
        )?;
        interactive.push(Interactive {
            order,
            beats: beats.len(),
            gpu_refit_s,
            cpu_refit_s,
        });
    }

    let mut fidelity = Vec::new();
    for filter in [EcgFilter::Default, EcgFilter::None] {
        let b = EcgBeats::prepare(&rec, 0, filter, false)?;
        for (order, paper_mse_mean, paper_mse_sd) in PAPER_TABLE_1 {
            let params = HermiteParams {
                order,
                ..Default::default()
            };
            let fits = Basis::new(fs, &params)?
                .fit(&b.windows, None)
                .context("cancelled")?;
            let (mse_mean, mse_sd) = mean_sd(fits.mse.iter().map(|&m| m as f64));
            fidelity.push(Fidelity {
                order,
                filter,
                mse_mean,
                mse_sd,
                mse_mean_adu2: mse_mean * 200.0 * 200.0,
                paper_mse_mean,
                paper_mse_sd,
            });
        }
    }

    let reference: Vec<usize> = (rec.annotations.iter())
        .filter(|a| beat_label(&a.text).is_some())
        .filter_map(|a| rec.sample_at(0, a.onset))
        .collect();
    let t = Instant::now();
    let found = qrs::detect(&rec.read_all(0)?, fs);
    let elapsed_s = t.elapsed().as_secs_f64();
    let m = BeatMatch::new(&found, &reference, (0.15 * fs).round() as usize);
    let report = Report {
        record: rec.display_name(),
        record_beats: beats.len(),
        beats: args.beats,
        sigmas: HermiteParams::default().sigmas,
        throughput,
        interactive,
        fidelity,
        detector: Detector {
            reference_beats: reference.len(),
            detected: found.len(),
            sensitivity: m.sensitivity(),
            positive_predictivity: m.positive_predictivity(),
            elapsed_s,
        },
        cpu: cpu_name(),
        gpu: gpu.as_ref().map(|g| g.describe()),
    };
    write_json(&report, args.out.as_deref())
}
