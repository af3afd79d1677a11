//! `ede bench xapen-night`: Cross-ApEn of every channel pair over a whole night read from disk
//! (the `ede bench io` recording: 64 channels x 256 Hz x 16 h, 1.9 GB of EDF), as `ede xapen`
//! runs it: once from a cold page cache (the file's pages dropped with `posix_fadvise`), once
//! warm, and the host's share (read, decode, normalize every block) timed alone, so that what
//! lies outside the kernel shows.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::analysis::xapen::{self, EpochCount, STREAM_BLOCK_BYTES, XapenJob};
use crate::cli::write_json;
use crate::dsp::xapen::{Correction, XapenParams};
use crate::gpu::GpuContext;
use crate::gpu::xapen::XapenKernels;
use crate::recording::{OpenOptions, Recording};

/// The whole night the night benchmarks read: 64 channels x 256 Hz x 16 h of EDF by default.
#[derive(Debug, clap::Args)]
pub struct NightFile {
    /// The recording (generated when missing or of another size, as `ede bench io` does).
    #[arg(long, default_value = "target/bench/io_64ch_256hz.edf")]
    pub file: PathBuf,
    #[arg(long, default_value_t = 64)]
    pub channels: usize,
    #[arg(long, default_value_t = 16.0)]
    pub hours: f64,
}

impl NightFile {
    /// Generates the file unless it is there at its size.
    pub fn generate(&self) -> anyhow::Result<()> {
        const FS: usize = 256;
        let records = (self.hours * 3600.0).round() as usize;
        super::io::generate_edf(&self.file, self.channels, records, FS)
    }
}

#[derive(Debug, clap::Args)]
pub struct NightArgs {
    #[command(flatten)]
    pub night: NightFile,
    #[arg(long, default_value_t = 1)]
    pub m: usize,
    #[arg(long, default_value_t = 0.2)]
    pub r: f32,
    /// Run on the CPU (hours of work for a whole night on a few cores: use fewer --hours).
    #[arg(long)]
    pub no_gpu: bool,
    /// Samples read and computed at a time, in MB (`ede xapen` reads blocks of 250).
    #[arg(long, default_value_t = STREAM_BLOCK_BYTES / 1e6)]
    pub block_mb: f64,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    file: PathBuf,
    file_bytes: u64,
    channels: usize,
    epochs: usize,
    /// Ordered channel pairs x epochs.
    pair_epochs: usize,
    ran_on: String,
    /// Whether the kernel reported the file's pages dropped before the cold run.
    cache_dropped: bool,
    block_bytes: f64,
    cold_s: f64,
    warm_s: f64,
    /// Reading, decoding and normalizing every block, without the analysis (warm cache).
    host_s: f64,
    /// Warm run per pair and epoch, in microseconds.
    warm_us_per_pair_epoch: f64,
}

pub fn run(args: &NightArgs) -> anyhow::Result<()> {
    args.night.generate()?;
    let params = XapenParams {
        m: args.m,
        r: args.r,
        correction: Correction::Max,
    };
    let ctx = if args.no_gpu {
        None
    } else {
        Some(GpuContext::headless()?)
    };
    let mut kernels = ctx.as_ref().map(XapenKernels::new);
    let block_bytes = args.block_mb * 1e6;
    let cache_dropped = drop_cached_pages(&args.night.file);
    let mut run_once = || -> anyhow::Result<(f64, xapen::XapenReport)> {
        let t = Instant::now();
        let rec = Recording::open(&args.night.file, &OpenOptions::default())?;
        let job = job(&rec, params);
        let report = xapen::run_in_blocks(&rec, &job, kernels.as_mut(), None, None, block_bytes)?
            .expect("not cancelled");
        Ok((t.elapsed().as_secs_f64(), report))
    };
    let (cold_s, report) = run_once()?;
    eprintln!("cold: {cold_s:.2} s ({})", report.adapter);
    let (warm_s, _) = run_once()?;
    eprintln!("warm: {warm_s:.2} s");
    // With EDE_GPU_PROFILE: one more warm run's passes, summed by label, on stderr.
    if let Some(ctx) = &ctx {
        super::profile_one(ctx, || {
            run_once()?;
            Ok("Cross-ApEn night".to_string())
        })?;
    }

    let t = Instant::now();
    let rec = Recording::open(&args.night.file, &OpenOptions::default())?;
    let job = job(&rec, params);
    for block in job.blocks(&rec, block_bytes)? {
        std::hint::black_box(block.input(&rec)?);
    }
    let host_s = t.elapsed().as_secs_f64();
    eprintln!("host share: {host_s:.2} s");

    let b = report.channels.len();
    let pair_epochs = b * b * report.epochs;
    write_json(
        &Report {
            file: args.night.file.clone(),
            file_bytes: std::fs::metadata(&args.night.file)?.len(),
            channels: b,
            epochs: report.epochs,
            pair_epochs,
            ran_on: report.adapter.clone(),
            cache_dropped,
            block_bytes,
            cold_s,
            warm_s,
            host_s,
            warm_us_per_pair_epoch: warm_s / pair_epochs as f64 * 1e6,
        },
        args.out.as_deref(),
    )
}

/// Every brain channel, every whole epoch of 1024 samples.
fn job(rec: &Recording, params: XapenParams) -> XapenJob {
    XapenJob {
        channels: rec.brain_signals(),
        epoch_len: 1024,
        epochs: EpochCount::All,
        start_sample: 0,
        params,
        per_epoch: false,
    }
}

/// Asks the kernel to forget the file's cached pages (written back first), as after a reboot.
pub(crate) fn drop_cached_pages(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    if file.sync_all().is_err() {
        return false;
    }
    // SAFETY: a valid descriptor; the call only gives advice about its pages.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}
