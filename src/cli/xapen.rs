//! `ede xapen FILE... --m 1 --r 0.2 --epoch-len 1024 ... --out OUT.json`: Cross-ApEn matrices
//! for a study, file after file, with progress on stderr.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::BackendChoice;
use crate::analysis::xapen::{self, EpochCount, XapenJob, XapenReport, default_epoch_len};
use crate::dsp::xapen::{Correction, XapenParams};
use crate::gpu::xapen::XapenKernels;
use crate::recording::Recording;

#[derive(Debug, clap::Args)]
pub struct XapenArgs {
    /// Recordings (any format ede reads) or BIDS dataset roots; each recording gives one
    /// matrix (a dataset's go to its derivatives/ede/).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub bids: crate::recording::bids::Filter,
    /// Window length m.
    #[arg(long, default_value_t = 1)]
    pub m: usize,
    /// Tolerance r, in units of each epoch's standard deviation.
    #[arg(long, default_value_t = 0.2)]
    pub r: f32,
    /// Samples per epoch: 1024, or the longest power of two that fits a shorter recording.
    #[arg(long)]
    pub epoch_len: Option<usize>,
    /// How many consecutive epochs: `all` or a number.
    #[arg(long, default_value = "all", value_parser = parse_epochs)]
    pub epochs: EpochCount,
    /// Where the first epoch starts, in seconds (rounded to the nearest sample).
    #[arg(long, default_value_t = 0.0)]
    pub start: f64,
    /// Channel labels or types (eeg, meg, mag, grad, ...), comma-separated; the brain
    /// channels (scalp electrodes, MEG) of their most common rate when omitted.
    #[arg(long, value_delimiter = ',')]
    pub channels: Vec<String>,
    /// Correction for windows without matches.
    #[arg(long, value_enum, default_value_t = Correction::Max)]
    pub correction: Correction,
    /// Where to run: `auto` takes the GPU unless it is a software adapter (lavapipe), where
    /// the CPU path is many times faster.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Also write the matrix of every epoch.
    #[arg(long)]
    pub per_epoch: bool,
    /// Output JSON: one object for one file, an array for several (stdout when omitted).
    #[arg(long, conflicts_with = "out_dir")]
    pub out: Option<PathBuf>,
    /// Write one JSON per recording into this folder instead (NAME.xapen.json).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Sampling rate of CSV files without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

fn parse_epochs(s: &str) -> Result<EpochCount, String> {
    if s == "all" {
        return Ok(EpochCount::All);
    }
    match s.parse::<usize>() {
        Ok(k) if k > 0 => Ok(EpochCount::Count(k)),
        _ => Err(format!("expected `all` or a positive number, got {s:?}")),
    }
}

/// The job for one recording: labels resolved, start converted to samples.
pub fn job_for(rec: &Recording, args: &XapenArgs) -> anyhow::Result<XapenJob> {
    let channels = if args.channels.is_empty() {
        if rec.signals.is_empty() {
            bail!("the recording has no signals");
        }
        rec.brain_signals()
    } else {
        rec.pick(&args.channels).map_err(anyhow::Error::msg)?
    };
    let fs = rec.signals[channels[0]].fs;
    if !(args.start >= 0.0 && args.start.is_finite()) {
        bail!("--start must be a time in seconds >= 0");
    }
    let start_sample = (args.start * fs).round() as usize;
    let held = (channels.iter().map(|&c| rec.signals[c].samples).min()).unwrap_or(0);
    Ok(XapenJob {
        channels,
        epoch_len: (args.epoch_len)
            .unwrap_or_else(|| default_epoch_len(held.saturating_sub(start_sample))),
        epochs: args.epochs,
        start_sample,
        params: XapenParams {
            m: args.m,
            r: args.r,
            correction: args.correction,
        },
        per_epoch: args.per_epoch,
    })
}

pub fn run(args: &XapenArgs) -> anyhow::Result<()> {
    let mut gpu = super::open_gpu("ede xapen", args.backend).map(|c| XapenKernels::new(&c));
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    super::study(&args.files, &args.bids, args.out.as_deref(), |item, tag| {
        let report = one(item, args, gpu.as_mut())?;
        eprintln!(
            "{tag}: {} channels x {} epochs in {:.3} s ({})",
            report.channels.len(),
            report.epochs,
            report.elapsed_s,
            report.adapter
        );
        for w in &report.warnings {
            eprintln!("  warning: {w}");
        }
        let out = match (item.derivative("xapen", ".json")?, &args.out_dir) {
            (Some(p), _) => p,
            (None, Some(dir)) => dir.join(super::out_name(&item.path, "xapen.json")),
            (None, None) => return Ok(Some(report)),
        };
        super::write_json(&report, Some(&out))?;
        Ok(None)
    })
}

fn one(
    item: &super::Item,
    args: &XapenArgs,
    gpu: Option<&mut XapenKernels>,
) -> anyhow::Result<XapenReport> {
    let rec = item.open(args.fs)?;
    let job = job_for(&rec, args)?;
    let report = xapen::run(&rec, &job, gpu, None, None)?;
    report.context("cancelled")
}
