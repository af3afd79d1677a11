//! `ede bench deblink`: blink removal's speed goals (issue 8), in one run:
//!
//! - FastICA (each contrast) and JADE on 25 channels x 5000 samples of the EEGLAB sample (the
//!   thesis's fixed problem size), on the CPU, from a random start: time and iterations;
//! - the whole EEGLAB sample (238 s, 32 channels) cleaned on the CPU, and the real-time factor;
//! - FastICA on the GPU against the CPU for 32 to 256 channels (the EEGLAB sample's channels
//!   mixed into more, so each has real EEG statistics), window lengths 5000 and 20000: the
//!   crossover.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::Stats;
use crate::analysis::blink::{DeblinkOptions, Deblinker, EegData};
use crate::analysis::xapen::cpu_name;
use crate::cli::write_json;
use crate::dsp::ica::{self, Contrast, FastIcaParams, Observations};
use crate::gpu::GpuContext;
use crate::gpu::ica::GpuFastIca;
use crate::recording::{OpenOptions, Recording};

#[derive(Debug, clap::Args)]
pub struct DeblinkBenchArgs {
    #[arg(
        long,
        default_value = "../shared/data/eeg/eeglab_sample_32ch_128hz.edf"
    )]
    pub record: PathBuf,
    /// Repetitions of each timing (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Skip the GPU part.
    #[arg(long)]
    pub cpu_only: bool,
    /// Skip every CPU timing (the 25 x 5000 table, the whole sample, the crossover's CPU side).
    #[arg(long, conflicts_with = "cpu_only")]
    pub gpu_only: bool,
    /// The crossover's problem sizes, CHANNELSxSAMPLES (32 to 256 channels x 5000 and 20000
    /// samples by default).
    #[arg(long, value_parser = parse_size, value_delimiter = ',')]
    pub sizes: Vec<(usize, usize)>,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct IcaTiming {
    algorithm: String,
    channels: usize,
    samples: usize,
    seconds: Stats,
    iterations: usize,
    converged: bool,
}

#[derive(Debug, Serialize)]
struct WholeRecording {
    seconds: Stats,
    recording_s: f64,
    real_time_factor: f64,
    blinks: usize,
    windows: usize,
    ica_windows: usize,
}

#[derive(Debug, Serialize)]
struct Crossover {
    channels: usize,
    samples: usize,
    cpu_s: Option<f64>,
    cpu_iterations: Option<usize>,
    gpu_s: Option<f64>,
    gpu_iterations: Option<usize>,
    /// The CPU's share of either run: centring, covariance, eigendecomposition, whitened data.
    whitening_s: f64,
    /// The worst GPU unmixing row's distance from its best-matching CPU row, 1 - |cos| (both
    /// after the same iterations; unconverged runs may differ in the components not yet found).
    gpu_vs_cpu: Option<f64>,
    /// Where the device whitens (f64 in shaders, `gpu_s`): the GPU fit with the whitening and
    /// the sources on the CPU instead, runs alternated with `gpu_s`'s.
    gpu_cpu_whitening_s: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Report {
    cpu: String,
    gpu: Option<String>,
    fastica_25x5000: Vec<IcaTiming>,
    whole_eeglab_sample: Option<WholeRecording>,
    gpu_crossover: Vec<Crossover>,
}

/// `channels` channels of `samples` samples: the recording's channels mixed by a fixed random
/// matrix, plus 1 % independent noise so that every channel adds a dimension. Real EEG
/// statistics at any channel count.
pub(super) fn mixed(x: &Observations, channels: usize, samples: usize) -> Observations {
    let mut rng = crate::recording::demo::SplitMix(7);
    let mut data = vec![0.0f32; channels * samples];
    for row in data.chunks_exact_mut(samples) {
        let w: Vec<f32> = (0..x.rows).map(|_| rng.gauss() as f32).collect();
        for (i, &wi) in w.iter().enumerate() {
            for (v, &s) in row.iter_mut().zip(&x.row(i)[..samples]) {
                *v += wi * s;
            }
        }
        let scale = (row.iter().map(|v| v * v).sum::<f32>() / samples as f32).sqrt();
        for v in row.iter_mut() {
            *v += 0.01 * scale * rng.gauss() as f32;
        }
    }
    Observations::new(channels, samples, data)
}

pub(super) fn time<T>(repeat: usize, mut f: impl FnMut() -> T) -> (Stats, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        last = Some(f());
        times.push(t0.elapsed().as_secs_f64());
    }
    (Stats::of(times), last.expect("ran once"))
}

/// "256x20000" -> (256, 20000).
fn parse_size(s: &str) -> Result<(usize, usize), String> {
    let (c, n) = s
        .split_once('x')
        .ok_or_else(|| format!("{s:?}: expected CHANNELSxSAMPLES"))?;
    let parse = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("{s:?}: {e}"));
    Ok((parse(c)?, parse(n)?))
}

/// The CPU's FastICA and JADE at the thesis's size, and the whole sample cleaned.
fn cpu_timings(
    args: &DeblinkBenchArgs,
    data: &EegData,
    opts: &DeblinkOptions,
) -> anyhow::Result<(Vec<IcaTiming>, WholeRecording)> {
    let small = data.data.block(25, 0..5000);
    let mut fastica_25x5000 = Vec::new();
    for contrast in [Contrast::Tanh, Contrast::Cube, Contrast::Gauss] {
        let p = FastIcaParams {
            contrast,
            ..Default::default()
        };
        let (seconds, r) = time(args.repeat, || ica::fastica(&small, &p, None));
        let r = r?;
        fastica_25x5000.push(IcaTiming {
            algorithm: format!("fastica-{contrast:?}").to_lowercase(),
            channels: 25,
            samples: 5000,
            seconds,
            iterations: r.iterations,
            converged: r.converged,
        });
    }
    let (seconds, r) = time(args.repeat, || ica::jade(&small, None));
    let r = r?;
    fastica_25x5000.push(IcaTiming {
        algorithm: "jade".into(),
        channels: 25,
        samples: 5000,
        seconds,
        iterations: r.iterations,
        converged: r.converged,
    });
    for t in &fastica_25x5000 {
        eprintln!(
            "{} 25x5000: {:.2} ms, {} iterations",
            t.algorithm,
            t.seconds.median * 1e3,
            t.iterations
        );
    }
    let (seconds, result) = time(args.repeat, || {
        Deblinker::new(None).run(data, opts, &mut |_, _| true)
    });
    let result = result?;
    let whole = WholeRecording {
        recording_s: data.duration_s(),
        real_time_factor: data.duration_s() / seconds.median,
        seconds,
        blinks: result.blinks.len(),
        windows: result.windows.len(),
        ica_windows: result.windows.iter().filter(|w| w.ica.is_some()).count(),
    };
    eprintln!(
        "whole sample: {:.3} s ({:.0}x real time), {} blinks, ICA in {} of {} windows",
        whole.seconds.median,
        whole.real_time_factor,
        whole.blinks,
        whole.ica_windows,
        whole.windows
    );
    Ok((fastica_25x5000, whole))
}

pub fn run(args: &DeblinkBenchArgs) -> anyhow::Result<()> {
    let rec = Recording::open(&args.record, &OpenOptions::default())?;
    let opts = DeblinkOptions::default();
    let data = EegData::load(&rec, &opts)?;
    let x = &data.data;
    let sub = |rows: usize, cols: usize| x.block(rows, 0..cols);
    let (fastica_25x5000, whole) = if args.gpu_only {
        (Vec::new(), None)
    } else {
        let (table, whole) = cpu_timings(args, &data, &opts)?;
        (table, Some(whole))
    };
    let gpu = if args.cpu_only {
        None
    } else {
        GpuContext::headless().ok()
    };
    let mut gpu_crossover = Vec::new();
    if let Some(ctx) = &gpu {
        let mut kernels = GpuFastIca::new(ctx);
        let whitening = kernels.whitening_from;
        // Warm-up: pipelines and the driver's first submission.
        let _ = kernels.fastica(&sub(32, 2000), &FastIcaParams::default(), None);
        let sizes = if args.sizes.is_empty() {
            [5000, 20000]
                .into_iter()
                .flat_map(|n| [32, 64, 128, 256].map(|c| (c, n)))
                .collect()
        } else {
            args.sizes.clone()
        };
        let p = FastIcaParams {
            max_iter: 200,
            ..Default::default()
        };
        // Every GPU timing first, each the median of three back to back, then the CPU's: a GPU
        // call right after a CPU run of seconds (the GPU idle meanwhile) ran up to 2.5x slower
        // (H100, 32 x 20000: 0.040-0.050 s against 0.016-0.023 s).
        let mut runs = Vec::new();
        for &(channels, samples) in &sizes {
            let x = mixed(x, channels, samples.min(x.cols));
            // Where the device whitens, its runs and those of the same fit whitened on the CPU
            // alternate.
            let rules = if kernels.whitens_on_device(channels) {
                vec![whitening, None]
            } else {
                vec![whitening]
            };
            let mut times = vec![Vec::new(); rules.len()];
            let mut dev = None;
            for _ in 0..args.repeat.min(3) {
                for (&rule, times) in rules.iter().zip(&mut times) {
                    kernels.whitening_from = rule;
                    let t0 = Instant::now();
                    let fit = kernels.fastica(&x, &p, None)?;
                    times.push(t0.elapsed().as_secs_f64());
                    dev.get_or_insert(fit);
                }
            }
            kernels.whitening_from = whitening;
            let mut times = times.into_iter().map(Stats::of);
            let gpu_s = times.next().expect("the default's runs");
            let gpu_cpu_whitening_s = times.next().map(|s| s.median);
            let dev = dev.expect("at least one run");
            let t0 = Instant::now();
            ica::Whitening::of(&x, None)?;
            let whitening_s = t0.elapsed().as_secs_f64();
            super::profile_one(ctx, || {
                let two = FastIcaParams { max_iter: 2, ..p };
                kernels.fastica(&x, &two, None)?;
                Ok(format!("FastICA {channels} x {samples}, 2 iterations"))
            })?;
            eprintln!(
                "FastICA {channels} x {samples}: GPU {:.3} s ({:.3}-{:.3}, {} it, whitening \
                 on the CPU {whitening_s:.3} s){}",
                gpu_s.median,
                gpu_s.min,
                gpu_s.max,
                dev.iterations,
                gpu_cpu_whitening_s.map_or(String::new(), |s| format!(
                    "; whitening on the device, against {s:.3} s whitening on the CPU"
                )),
            );
            runs.push((x, dev, gpu_s.median, whitening_s, gpu_cpu_whitening_s));
        }
        for (x, dev, gpu_s, whitening_s, gpu_cpu_whitening_s) in runs {
            let cpu = if args.gpu_only {
                None
            } else {
                let t0 = Instant::now();
                let cpu = ica::fastica(&x, &p, None)?;
                let cpu_s = t0.elapsed().as_secs_f64();
                eprintln!(
                    "FastICA {} x {}: CPU {cpu_s:.3} s ({} it)",
                    x.rows, x.cols, cpu.iterations
                );
                Some((cpu, cpu_s))
            };
            // Each GPU component against its best match among the CPU's (components of
            // near-equal variance may come out in either order).
            let mismatch = cpu.as_ref().map(|(cpu, _)| {
                (0..dev.unmixing.nrows())
                    .map(|i| {
                        let g = dev.unmixing.row(i);
                        let best = (0..cpu.unmixing.nrows())
                            .map(|j| {
                                let c = cpu.unmixing.row(j);
                                (g.dot(&c) / (g.norm() * c.norm())).abs()
                            })
                            .fold(0.0, f64::max);
                        1.0 - best
                    })
                    .fold(0.0, f64::max)
            });
            gpu_crossover.push(Crossover {
                channels: x.rows,
                samples: x.cols,
                cpu_s: cpu.as_ref().map(|c| c.1),
                cpu_iterations: cpu.as_ref().map(|c| c.0.iterations),
                gpu_s: Some(gpu_s),
                gpu_iterations: Some(dev.iterations),
                whitening_s,
                gpu_vs_cpu: mismatch,
                gpu_cpu_whitening_s,
            });
        }
    }
    let report = Report {
        cpu: cpu_name(),
        gpu: gpu.as_ref().map(|g| g.describe()),
        fastica_25x5000,
        whole_eeglab_sample: whole,
        gpu_crossover,
    };
    write_json(&report, args.out.as_deref())
}
