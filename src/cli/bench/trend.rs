//! `ede bench trend`: CDSA and aEEG of every channel of a whole night read from disk (the
//! `ede bench io` recording: 64 channels x 256 Hz x 16 h, 1.9 GB of EDF), as the browser's trend
//! strip computes them, in one run: on the GPU (the file's integers decoded on the device) and
//! on all CPU cores, both in one pass from a cold and a warm page cache, each trend alone on the
//! CPU, and the reading alone; the GPU's largest differences from the CPU's numbers.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Instant;

use serde::Serialize;

use super::xapen_night::NightFile;
use crate::analysis::trend::{self, CdsaParams, Group, TrendJob, Trends};
use crate::cli::write_json;
use crate::dsp::aeeg::AeegParams;
use crate::dsp::montage::Derivation;
use crate::gpu::GpuContext;
use crate::gpu::trend::TrendKernels;
use crate::recording::{OpenOptions, Recording};

#[derive(Debug, clap::Args)]
pub struct TrendBenchArgs {
    #[command(flatten)]
    pub night: NightFile,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    file: PathBuf,
    file_bytes: u64,
    channels: usize,
    hours: f64,
    threads: usize,
    cdsa_segments: usize,
    aeeg_segments: usize,
    /// Both trends in one pass, the file's pages dropped first (when the kernel agreed).
    both_cold_s: f64,
    cache_dropped: bool,
    both_warm_s: f64,
    cdsa_warm_s: f64,
    aeeg_warm_s: f64,
    /// Reading and decoding every chunk, nothing computed (warm).
    read_warm_s: f64,
    /// Samples through the whole pass per second, warm, both trends.
    samples_per_s: f64,
    /// The GPU's figures, where one with f64 in shaders opened.
    gpu: Option<GpuFigures>,
}

#[derive(Debug, Serialize)]
struct GpuFigures {
    adapter: String,
    /// Both trends, the file's pages dropped first; the first hour's strips computed.
    both_cold_s: f64,
    first_hour_cold_s: Option<f64>,
    /// The fastest of three warm runs, and the first hour of the last.
    both_warm_s: f64,
    first_hour_warm_s: Option<f64>,
    /// The largest differences from the CPU's: CDSA dB, aEEG edges and margins in uV.
    max_cdsa_db: f64,
    max_edge_uv: f64,
    max_margin_uv: f64,
}

pub fn run(args: &TrendBenchArgs) -> anyhow::Result<()> {
    args.night.generate()?;
    let rec = Recording::open(&args.night.file, &OpenOptions::default())?;
    let derivations: Vec<Derivation> = (0..rec.signals.len())
        .map(|c| Derivation::recorded(&rec, c))
        .collect();
    let traces: Vec<usize> = (0..derivations.len()).collect();
    let groups: Vec<Group> = (traces.iter())
        .map(|&t| Group {
            name: derivations[t].label.clone(),
            traces: vec![t],
        })
        .collect();
    let job = |cdsa: bool, aeeg: bool| TrendJob {
        derivations: derivations.clone(),
        cdsa_groups: if cdsa { groups.clone() } else { Vec::new() },
        cdsa: CdsaParams::default(),
        aeeg_traces: if aeeg { traces.clone() } else { Vec::new() },
        aeeg: AeegParams::default(),
    };
    let time = |job: &TrendJob| -> anyhow::Result<(f64, trend::Trends)> {
        let t = Instant::now();
        let out = trend::run(&rec, job, &AtomicBool::new(false), &AtomicUsize::new(0))?
            .expect("nothing cancels");
        Ok((t.elapsed().as_secs_f64(), out))
    };
    let both = job(true, true);
    let cache_dropped = super::xapen_night::drop_cached_pages(&args.night.file);
    let (both_cold_s, out) = time(&both)?;
    let (both_warm_s, _) = time(&both)?;
    let (cdsa_warm_s, _) = time(&job(true, false))?;
    let (aeeg_warm_s, _) = time(&job(false, true))?;
    let t = Instant::now();
    trend::read_only(&rec, &both)?;
    let read_warm_s = t.elapsed().as_secs_f64();
    // The GPU's figures where one with f64 in shaders opens; why not, where none does.
    let kernels = GpuContext::headless()
        .map_err(|e| e.to_string())
        .and_then(|c| match c.is_software() {
            // Lavapipe would take minutes over a night, and say nothing of a GPU's speed.
            true => Err(format!("{} is a software adapter", c.describe())),
            false => (TrendKernels::new(&c))
                .ok_or_else(|| format!("{} has no f64 in shaders", c.describe())),
        });
    let gpu = match kernels {
        Ok(mut k) => Some(gpu_figures(&rec, &args.night.file, &both, &out, &mut k)?),
        Err(e) => {
            eprintln!("note: trends on the CPU only: {e}");
            None
        }
    };
    let samples: usize = rec.signals.iter().map(|s| s.samples).sum();
    let report = Report {
        file_bytes: std::fs::metadata(&args.night.file)?.len(),
        file: args.night.file.clone(),
        channels: rec.signals.len(),
        hours: args.night.hours,
        threads: rayon::current_num_threads(),
        cdsa_segments: out.cdsa.as_ref().map_or(0, |c| c.power[0].len()),
        aeeg_segments: out.aeeg.as_ref().map_or(0, |a| a.upper_uv[0].len()),
        both_cold_s,
        cache_dropped,
        both_warm_s,
        cdsa_warm_s,
        aeeg_warm_s,
        read_warm_s,
        samples_per_s: samples as f64 / both_warm_s,
        gpu,
    };
    if let Some(g) = &report.gpu {
        eprintln!(
            "trend on {}: {:.3} s cold, {:.3} s warm (first hour {:?} s); largest differences \
             from the CPU {:.2e} dB, {:.2e} uV edges, {:.2e} uV margins",
            g.adapter,
            g.both_cold_s,
            g.both_warm_s,
            g.first_hour_warm_s,
            g.max_cdsa_db,
            g.max_edge_uv,
            g.max_margin_uv
        );
    }
    eprintln!(
        "trend: {} ch x {} h, CDSA + aEEG {:.2} s cold, {:.2} s warm (CDSA {:.2} s, aEEG {:.2} s, \
         reading {:.2} s) on {} threads",
        report.channels,
        args.night.hours,
        both_cold_s,
        both_warm_s,
        cdsa_warm_s,
        aeeg_warm_s,
        read_warm_s,
        report.threads
    );
    write_json(&report, args.out.as_deref())
}

/// Times `job` on the GPU, cold and warm, and compares its numbers with the CPU's `cpu`.
fn gpu_figures(
    rec: &Recording,
    file: &std::path::Path,
    job: &TrendJob,
    cpu: &Trends,
    kernels: &mut TrendKernels,
) -> anyhow::Result<GpuFigures> {
    let adapter = kernels.context().describe();
    let time = |kernels: &mut TrendKernels| -> anyhow::Result<(f64, Option<f64>, Trends)> {
        let done = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        // The first hour's strips are there once an hour is done.
        let (out, first) = std::thread::scope(|s| {
            let watch = s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if done.load(std::sync::atomic::Ordering::Relaxed) >= 3600 {
                        return Some(t.elapsed().as_secs_f64());
                    }
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                None
            });
            let out = trend::run_on(rec, job, Some(kernels), &AtomicBool::new(false), &done);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            (out, watch.join().ok().flatten())
        });
        let seconds = t.elapsed().as_secs_f64();
        let (out, backend) = out?.expect("nothing cancels");
        anyhow::ensure!(
            backend == crate::analysis::Backend::Gpu,
            "the GPU did not take the job"
        );
        Ok((seconds, first, out))
    };
    super::xapen_night::drop_cached_pages(file);
    let (both_cold_s, first_hour_cold_s, out) = time(kernels)?;
    let mut warm = Vec::new();
    let mut first_hour_warm_s = None;
    for _ in 0..3 {
        let (s, first, _) = time(kernels)?;
        warm.push(s);
        first_hour_warm_s = first;
    }
    // Under EDE_GPU_PROFILE, one more run's GPU time per kernel on stderr.
    let ctx = kernels.context().clone();
    super::profile_one(&ctx, || {
        time(kernels)?;
        Ok("trend on the GPU (one night)".into())
    })?;
    let largest = |a: &[f32], b: &[f32]| -> f64 {
        (a.iter().zip(b))
            .map(|(x, y)| (*x as f64 - *y as f64).abs())
            .fold(0.0, f64::max)
    };
    let (g, c) = (out.cdsa.as_ref(), cpu.cdsa.as_ref());
    let max_cdsa_db = match (g, c) {
        (Some(g), Some(c)) => (g.power.iter().flatten().zip(c.power.iter().flatten()))
            .map(|(a, b)| largest(a, b))
            .fold(0.0, f64::max),
        _ => 0.0,
    };
    let (ga, ca) = (out.aeeg.as_ref(), cpu.aeeg.as_ref());
    let pairs = |f: fn(&trend::AeegTrend) -> &Vec<Vec<f32>>| match (ga, ca) {
        (Some(g), Some(c)) => (f(g).iter().zip(f(c)))
            .map(|(a, b)| largest(a, b))
            .fold(0.0, f64::max),
        _ => 0.0,
    };
    Ok(GpuFigures {
        adapter,
        both_cold_s,
        first_hour_cold_s,
        both_warm_s: warm.iter().copied().fold(f64::INFINITY, f64::min),
        first_hour_warm_s,
        max_cdsa_db,
        max_edge_uv: pairs(|a| &a.lower_uv).max(pairs(|a| &a.upper_uv)),
        max_margin_uv: pairs(|a| &a.lower_margin_uv).max(pairs(|a| &a.upper_margin_uv)),
    })
}
