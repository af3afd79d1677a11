//! `ede live FILE [--speed 1|max] [--duration D] [pipeline options] --report REPORT.json`:
//! the recording played as a live stream through blink removal, hop by hop, without a window.

use std::path::PathBuf;

use anyhow::Context;

use super::BackendChoice;
use super::deblink::PipelineArgs;
use crate::analysis::blink::{Deblinker, EegData, write_cleaned};
use crate::analysis::live::{LIVE_MAX_ITER, LiveOptions, play};

#[derive(Debug, clap::Args)]
pub struct LiveArgs {
    /// An EDF/EDF+/BDF recording, played as if it were being recorded.
    pub file: PathBuf,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// Seconds a hop waits before it is cleaned, so that a blink at its end is seen whole
    /// (adds to the latency).
    #[arg(long, default_value_t = 0.0)]
    pub lookahead: f64,
    /// Times real time, or `max` for as fast as the pipeline goes.
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    pub speed: String,
    /// Seconds of the recording to play (default: all of it).
    #[arg(long)]
    pub duration: Option<f64>,
    /// The cleaned recording, in the input's format (the part not played is copied as it was).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The report: every hop's processing time and latency, blinks, late hops.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// The streaming hop when `--hop` is not given, seconds.
pub const DEFAULT_HOP_S: f64 = 1.0;

pub fn run(args: &LiveArgs) -> anyhow::Result<()> {
    let speed = match args.speed.trim() {
        "max" => None,
        s => match s.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Some(v),
            _ => anyhow::bail!("--speed must be a positive number or 'max', got {s:?}"),
        },
    };
    if let Some(d) = args.duration
        && !(d > 0.0 && d.is_finite())
    {
        anyhow::bail!("--duration must be positive seconds, got {d}");
    }
    let deblink = args.pipeline.options_with(LIVE_MAX_ITER);
    deblink.fastica.validate()?;
    let opts = LiveOptions {
        hop_s: args.pipeline.hop.unwrap_or(DEFAULT_HOP_S),
        lookahead_s: args.lookahead,
        speed,
        duration_s: args.duration,
        deblink,
        ..LiveOptions::default()
    };
    let rec = super::open(&args.file, None)?;
    if args.out.is_some() && rec.format.edf_family().is_none() {
        anyhow::bail!(
            "{}: --out writes the input's format, which must be EDF or BDF (this is {})",
            args.file.display(),
            rec.format
        );
    }
    let data =
        EegData::load(&rec, &opts.deblink).with_context(|| args.file.display().to_string())?;
    let gpu = super::open_gpu("ede live", args.pipeline.backend);
    let mut deblinker = Deblinker::new(gpu.as_ref());
    if args.pipeline.backend == BackendChoice::Gpu {
        deblinker = deblinker.forced();
    }
    let file = args.file.display().to_string();
    let session = play(&data, &opts, &mut deblinker, &file, &mut |_, _| true)
        .with_context(|| file.clone())?;
    let r = &session.report;
    eprintln!(
        "{file}: {:.1} s played in {} hops, {} blinks; per hop {:.1} ms median, {:.1} ms at most \
         ({:.0}x real time), {} late",
        r.samples_out as f64 / r.fs,
        r.hops.len(),
        r.blinks.len(),
        r.median_processing_s * 1e3,
        r.max_processing_s * 1e3,
        r.real_time_factor,
        r.late_hops
    );
    if let Some(out) = &args.out {
        let mut cleaned = data.data.clone();
        let played = session.cleaned.cols;
        for c in 0..cleaned.rows {
            let n = cleaned.cols;
            cleaned.data[c * n..c * n + played].copy_from_slice(session.cleaned.row(c));
        }
        write_cleaned(&rec, &data, &cleaned, out)?;
    }
    if let Some(path) = &args.report {
        super::write_json(r, Some(path))?;
    }
    Ok(())
}
