//! `ede bench cwt`: the Morlet scalogram's three speed goals (issue 11), in one run:
//!
//! - interactive: 19 channels x 30 s x 256 Hz x 64 scales (1 to 64 Hz), from a parameter change
//!   to the finished texture on the GPU (signals already on the device, as in the view while a
//!   control is dragged), and with the upload (as when the window scrolls);
//! - CPU: the same workload's |W| on the CPU path (what fCWT and PyWavelets compute; they are
//!   timed beside it by a script, see docs/BENCHMARKS.md), and the view's CPU image;
//! - batch: band power in 1-s blocks of a generated 64-channel x 1600 Hz EDF (the paper's data
//!   set is 1 h), 40 scales, from the file to the last block, with the memory traffic the
//!   kernels make per second against the device's copy ceiling.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::Serialize;

use super::Stats;
use crate::analysis::cwt::{self as cwt_job, BandPowerJob, Segmentation};
use crate::analysis::xapen::cpu_name;
use crate::cli::write_json;
use crate::dsp::cwt::{
    CwtParams, CwtPlan, PaintSpec, Quantity, ScaleSpec, colour_pixels, fourier_factor, padded_len,
    pixel_values,
};
use crate::gpu::GpuContext;
use crate::gpu::cwt::{CwtKernels, DECIMATED_CHUNK, fused_block_workgroups, transform_lengths};
use crate::recording::demo::{SplitMix, pink_noise};
use crate::recording::{OpenOptions, Recording};

#[derive(Debug, clap::Args)]
pub struct CwtBenchArgs {
    /// Timed repetitions of each interactive measurement.
    #[arg(long, default_value_t = 20)]
    pub repeats: usize,
    /// Hours of the batch file (the paper: 1); 0 skips the batch.
    #[arg(long, default_value_t = 1.0)]
    pub batch_hours: f64,
    /// Where the batch file is generated (kept for later runs).
    #[arg(long, default_value = "target/bench/cwt-64ch-1600hz.edf")]
    pub batch_file: PathBuf,
    /// Run the batch on the CPU path too (slow: minutes for an hour on 2 cores).
    #[arg(long)]
    pub batch_cpu: bool,
    /// Skip the GPU.
    #[arg(long)]
    pub no_gpu: bool,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    interactive: Interactive,
    batch: Option<Batch>,
    cpu: String,
    gpu: Option<String>,
}

#[derive(Debug, Serialize)]
struct Interactive {
    channels: usize,
    samples: usize,
    fs: f64,
    scales: usize,
    width: usize,
    /// Parameter change to finished texture (signals on the device).
    gpu_parameter_change_s: Option<Stats>,
    /// The host's part of it: recording and submitting the work, before the wait.
    gpu_parameter_change_host_s: Option<Stats>,
    /// Upload, forward FFTs and the same (a scroll of the window).
    gpu_new_window_s: Option<Stats>,
    /// |W| of every channel and scale on the CPU path.
    cpu_magnitude_s: Stats,
    /// The view's image on the CPU path (columns and colours too).
    cpu_image_s: Stats,
}

#[derive(Debug, Serialize)]
struct Batch {
    file: String,
    file_bytes: u64,
    channels: usize,
    fs: f64,
    hours: f64,
    scales: usize,
    block_s: f64,
    segment_samples: usize,
    margin_samples: usize,
    segments: usize,
    /// The median of `gpu_runs_s`.
    gpu_s: Option<f64>,
    /// The batch's timed runs, alternated with `gpu_full_rate_runs_s`.
    gpu_runs_s: Vec<f64>,
    /// The same with every scale's |W|^2 at every sample (the path before the decimated rows).
    gpu_full_rate_runs_s: Vec<f64>,
    cpu_s: Option<f64>,
    /// Reading and decoding every segment alone, as the batch does (the host's share; the
    /// batch overlaps it with the GPU's work).
    read_s: f64,
    /// Bytes the kernels must read and write, modelled (`model`): the inverse FFTs'
    /// intermediate, the forward FFTs, the spectra, the partial block sums.
    modelled_bytes: f64,
    /// The FFTs' arithmetic, modelled: 5 M log2 M flops per inverse row and per forward
    /// channel of each segment.
    modelled_flops: f64,
    gpu_bandwidth_tb_s: Option<f64>,
    /// The device's copy ceiling (../shared/DESIGN.md).
    copy_ceiling_tb_s: f64,
}

/// 64 scales from 64 Hz down to 1 Hz, evenly spaced in log frequency.
fn interactive_params(omega0: f64) -> CwtParams {
    CwtParams {
        omega0,
        scales: ScaleSpec::Octaves {
            s0: 1.0 / (64.0 * fourier_factor(omega0)),
            dj: 6.0 / 63.0,
            j: 63,
        },
    }
}

pub fn run(args: &CwtBenchArgs) -> anyhow::Result<()> {
    let gpu = if args.no_gpu {
        None
    } else {
        match GpuContext::headless() {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("ede bench cwt: {e}");
                None
            }
        }
    };
    let mut kernels = gpu.as_ref().map(CwtKernels::new);
    let (channels, fs, secs) = (19usize, 256.0, 30.0);
    let n = (secs * fs) as usize;
    let mut rng = SplitMix(0xC0FFEE);
    let signals: Vec<Vec<f32>> = (0..channels)
        .map(|_| {
            pink_noise(&mut rng, n, 30.0)
                .into_iter()
                .map(|v| v as f32)
                .collect()
        })
        .collect();
    let refs: Vec<&[f32]> = signals.iter().map(Vec::as_slice).collect();
    let spec = PaintSpec {
        width: 1600,
        quantity: Quantity::Db,
        per_scale: false,
        range_db: 40.0,
        per_trace: true,
    };
    let lut: [u32; 256] = std::array::from_fn(|i| u32::from_le_bytes([i as u8, 90, 200, 255]));
    let dt = 1.0 / fs;
    let scales = interactive_params(6.0).scales(dt)?;

    let mut change = Vec::new();
    let mut change_host = Vec::new();
    let mut window = Vec::new();
    if let Some(k) = kernels.as_mut() {
        let sp = k.spectra(&refs, None)?;
        for r in 0..args.repeats + 2 {
            // A new omega0 each time: new daughters, as while a slider is dragged.
            let omega0 = 6.0 + 0.01 * r as f64;
            let sc = interactive_params(omega0).scales(dt)?;
            let t = Instant::now();
            let painted = k.paint(&sp, dt, &sc, omega0, &spec, &lut)?;
            let host = t.elapsed().as_secs_f64();
            k.context().wait()?;
            let e = t.elapsed().as_secs_f64();
            drop(painted);
            if r >= 2 {
                change.push(e);
                change_host.push(host);
            }
        }
        for r in 0..args.repeats + 2 {
            let t = Instant::now();
            let sp = k.spectra(&refs, None)?;
            let painted = k.paint(&sp, dt, &scales, 6.0, &spec, &lut)?;
            k.context().wait()?;
            let e = t.elapsed().as_secs_f64();
            drop(painted);
            if r >= 2 {
                window.push(e);
            }
        }
        // With EDE_GPU_PROFILE: the passes of one more recompute and of one more new window.
        let ctx = k.context().clone();
        super::profile_one(&ctx, || {
            let sc = interactive_params(6.5).scales(dt)?;
            drop(k.paint(&sp, dt, &sc, 6.5, &spec, &lut)?);
            Ok("Morlet recompute".into())
        })?;
        super::profile_one(&ctx, || {
            let sp = k.spectra(&refs, None)?;
            drop(k.paint(&sp, dt, &scales, 6.0, &spec, &lut)?);
            Ok("Morlet new window".into())
        })?;
    }
    let plan = CwtPlan::new(n, dt, &scales, 6.0)?;
    let mut cpu_mag = Vec::new();
    let mut cpu_image = Vec::new();
    let cpu_reps = args.repeats.clamp(3, 10);
    // One output for all channels, reused, as the Python baselines reuse theirs.
    let mut mags = vec![0f32; channels * scales.len() * n];
    for _ in 0..cpu_reps {
        let t = Instant::now();
        for (x, out) in refs.iter().zip(mags.chunks_mut(scales.len() * n)) {
            plan.magnitude_into(x, out);
        }
        cpu_mag.push(t.elapsed().as_secs_f64());
        std::hint::black_box(&mags);
        let t = Instant::now();
        let (_, values, tops) = pixel_values(&plan, &refs, &spec);
        std::hint::black_box(colour_pixels(&values, &tops, &spec, &lut));
        cpu_image.push(t.elapsed().as_secs_f64());
    }
    let interactive = Interactive {
        channels,
        samples: n,
        fs,
        scales: scales.len(),
        width: spec.width,
        gpu_parameter_change_s: (!change.is_empty()).then(|| Stats::of(change)),
        gpu_parameter_change_host_s: (!change_host.is_empty()).then(|| Stats::of(change_host)),
        gpu_new_window_s: (!window.is_empty()).then(|| Stats::of(window)),
        cpu_magnitude_s: Stats::of(cpu_mag),
        cpu_image_s: Stats::of(cpu_image),
    };
    eprintln!("{interactive:#?}");

    let batch = if args.batch_hours > 0.0 {
        Some(batch(args, kernels.as_mut())?)
    } else {
        None
    };
    let report = Report {
        interactive,
        batch,
        cpu: cpu_name(),
        gpu: gpu.as_ref().map(GpuContext::describe),
    };
    write_json(&report, args.out.as_deref())
}

fn batch(args: &CwtBenchArgs, kernels: Option<&mut CwtKernels>) -> anyhow::Result<Batch> {
    let (channels, fs) = (64usize, 1600usize);
    let records = (args.batch_hours * 3600.0).round() as usize;
    super::io::generate_edf(&args.batch_file, channels, records, fs)?;
    let file_bytes = std::fs::metadata(&args.batch_file)?.len();
    let rec = Recording::open(&args.batch_file, &OpenOptions::default())?;
    // 40 scales from 100 Hz down by sixths of an octave (to about 1.1 Hz).
    let params = CwtParams {
        omega0: 6.0,
        scales: ScaleSpec::Octaves {
            s0: 1.0 / (100.0 * fourier_factor(6.0)),
            dj: 1.0 / 6.0,
            j: 39,
        },
    };
    let job = BandPowerJob {
        channels: (0..channels).collect(),
        params,
        block_s: 1.0,
        segment: 0,
    };
    let scales = params.scales(1.0 / fs as f64)?;
    let n = rec.signals[0].samples;
    let seg = Segmentation::new(n, fs, scales[scales.len() - 1] * fs as f64, 0)?;
    let segments = n.div_ceil(seg.core);
    let m = padded_len(seg.core + 2 * seg.margin);
    let lengths = transform_lengths(m, 1.0 / fs as f64, &scales, 6.0);
    let (modelled_bytes, modelled_flops) = model(&seg, n, channels, &lengths);
    let run = |k: Option<&mut CwtKernels>| -> anyhow::Result<f64> {
        let t = Instant::now();
        let mut checksum = 0f64;
        cwt_job::band_power(
            &rec,
            &job,
            k,
            &AtomicBool::new(false),
            |_, _| {},
            |_, p| {
                checksum += p.iter().sum::<f64>();
                Ok(())
            },
        )?;
        std::hint::black_box(checksum);
        Ok(t.elapsed().as_secs_f64())
    };
    let (mut gpu_runs_s, mut gpu_full_rate_runs_s) = (Vec::new(), Vec::new());
    if let Some(k) = kernels {
        // Once each to warm the file cache, the pipelines and the tables, then alternated.
        for decimate in [true, false] {
            k.decimate_block_power = decimate;
            run(Some(&mut *k))?;
        }
        for _ in 0..3 {
            for (decimate, runs) in [(true, &mut gpu_runs_s), (false, &mut gpu_full_rate_runs_s)] {
                k.decimate_block_power = decimate;
                runs.push(run(Some(&mut *k))?);
            }
        }
        k.decimate_block_power = true;
        // With EDE_GPU_PROFILE: the passes of one segment.
        let ctx = k.context().clone();
        super::profile_one(&ctx, || {
            let len = seg.core + 2 * seg.margin;
            let mut rng = SplitMix(7);
            let flat: Vec<f32> = (0..channels * len).map(|_| rng.gauss() as f32).collect();
            let sp = k.spectra_rows(&flat, len, &vec![0.5; channels])?;
            let core = seg.margin..seg.margin + seg.core;
            drop(k.block_power(&sp, 1.0 / fs as f64, &scales, 6.0, core, fs)?);
            Ok("Morlet batch, one segment".into())
        })?;
        eprintln!(
            "batch on the GPU: {gpu_runs_s:.3?} s, every sample: {gpu_full_rate_runs_s:.3?} s"
        );
    }
    let gpu_s = (!gpu_runs_s.is_empty()).then(|| Stats::of(gpu_runs_s.clone()).median);
    let t = Instant::now();
    cwt_job::band_power_reads(&rec, &job)?;
    let read_s = t.elapsed().as_secs_f64();
    eprintln!("reading alone: {read_s:.3} s");
    let cpu_s = if args.batch_cpu {
        let s = run(None)?;
        eprintln!("batch on the CPU: {s:.3} s");
        Some(s)
    } else {
        None
    };
    Ok(Batch {
        file: args.batch_file.display().to_string(),
        file_bytes,
        channels,
        fs: fs as f64,
        hours: args.batch_hours,
        scales: scales.len(),
        block_s: 1.0,
        segment_samples: seg.m,
        margin_samples: seg.margin,
        segments,
        gpu_s,
        gpu_runs_s,
        gpu_full_rate_runs_s,
        cpu_s,
        read_s,
        modelled_bytes,
        modelled_flops,
        gpu_bandwidth_tb_s: gpu_s.map(|s| modelled_bytes / s / 1e12),
        copy_ceiling_tb_s: 2.8,
    })
}

/// What the batch's kernels must move and compute, segment by segment (gpu::cwt), for scales
/// whose inverse FFTs are `lengths` long (`transform_lengths`: M, or P where decimated):
/// (bytes, flops of the FFTs, 5 L log2 L each, and of the decimated rows' block sums).
///
/// Per channel, `load` reads the samples and writes the padded signal, the forward FFT's two
/// passes read and write every complex value, and the inverse FFTs' first passes read its
/// half spectrum, from memory once: a channel's scales are neighbouring rows, between which
/// the spectrum stays in the cache. Per row (channel x scale), pass 1 writes the complex
/// intermediate of its L values and pass 2 reads it. A decimated row's pass 2 writes |W|^2 of
/// its P values, which `decimated_sums` reads (2 P flops a block; its table of weights stays
/// in the cache) before writing a partial sum per chunk and block: an upper bound where
/// `windowed_sums` takes the group instead (fewer flops, one partial sum a block). A full-rate row's pass 2
/// writes its partial block sums, or, for a shape that does not allow those
/// (`fused_block_workgroups`), |W|^2 of the core, which `block_power` reads. `block_sums`
/// reads the partial sums and writes the means. The last segment's core is shorter.
fn model(seg: &Segmentation, n: usize, channels: usize, lengths: &[usize]) -> (f64, f64) {
    // Samples a segment holds per channel, and the length they are padded to.
    let len = seg.core + 2 * seg.margin;
    let m = padded_len(len);
    let mf = m as f64;
    let channels = channels as f64;
    let forward = 4.0 * len as f64 + 8.0 * mf + 2.0 * 16.0 * mf;
    let spectrum = 8.0 * mf / 2.0;
    let fft_flops = |l: f64| 5.0 * l * l.log2();
    let (mut bytes, mut flops) = (0.0, 0.0);
    for start in (0..n).step_by(seg.core) {
        let count = seg.core.min(n - start);
        let blocks = count.div_ceil(seg.block);
        bytes += channels * (forward + spectrum);
        flops += channels * fft_flops(mf);
        for &l in lengths {
            let lf = l as f64;
            let (row_bytes, sums_flops) = if l < m {
                let chunks = l.div_ceil(DECIMATED_CHUNK);
                let b = 16.0 * lf + 8.0 * lf + (8 * chunks * blocks) as f64;
                (b, 2.0 * lf * blocks as f64)
            } else {
                let sums = match fused_block_workgroups(m, count, seg.block) {
                    Some(per_row) => 8 * per_row * blocks,
                    None => 8 * count,
                };
                (16.0 * mf + sums as f64, 0.0)
            };
            bytes += channels * (row_bytes + (4 * blocks) as f64);
            flops += channels * (fft_flops(lf) + sums_flops);
        }
    }
    (bytes, flops)
}
