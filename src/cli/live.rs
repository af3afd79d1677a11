//! `ede live (FILE | --lsl NAME) [--speed 1|max] [--duration D] [pipeline options]
//! [--record OUT.edf] [--report REPORT.json]`: a recording played as a live stream, or a live
//! LSL stream, through blink removal hop by hop, without a window.

use std::path::PathBuf;

use anyhow::Context;

use super::BackendChoice;
use super::deblink::PipelineArgs;
use crate::analysis::blink::{Deblinker, EegData, write_cleaned};
use crate::analysis::live::lsl::{InletOptions, LslSource};
use crate::analysis::live::source::{FileSource, Source};
use crate::analysis::live::{LIVE_FIT_SAMPLES, LIVE_MAX_ITER, LiveOptions, play};

#[derive(Debug, clap::Args)]
pub struct LiveArgs {
    /// A recording, played as if it were being recorded.
    #[arg(required_unless_present = "lsl", conflicts_with = "lsl")]
    pub file: Option<PathBuf>,
    /// A live LSL stream instead of a file: its name, or PROPERTY=VALUE (e.g. type=EEG).
    #[arg(long, value_name = "NAME")]
    pub lsl: Option<String>,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// Seconds a hop waits before it is cleaned, so that a blink at its end is seen whole
    /// (adds to the latency; below 0.5 s a blink at the hop's end may be left).
    #[arg(long, default_value_t = crate::dsp::blink::stream::DEFAULT_LOOKAHEAD_S)]
    pub lookahead: f64,
    /// Times real time, or `max` for as fast as the pipeline goes (files only).
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    pub speed: String,
    /// Seconds of the stream to play (default: to its end).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Record the session as it plays: every channel as it arrived, the cleaned ones, and
    /// blinks, gaps and stalls as annotations. EDF+ (.edf) or BDF+ (.bdf, needed for
    /// 24-bit and floating-point sources).
    #[arg(long, value_name = "OUT")]
    pub record: Option<PathBuf>,
    /// The cleaned recording in the input file's format (the part not played copied as it
    /// was).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The report: every hop's processing time and latency, blinks, gaps, stalls.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// LSL: seconds without samples before the stream is reported stalled.
    #[arg(long, default_value_t = 1.0)]
    pub stall: f64,
    /// LSL: seconds without samples before the session ends (and seconds to look for the
    /// stream).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
}

/// The streaming hop when `--hop` is not given, seconds.
pub const DEFAULT_HOP_S: f64 = 1.0;

fn positive(name: &str, v: f64) -> anyhow::Result<()> {
    anyhow::ensure!(
        v > 0.0 && v.is_finite(),
        "--{name} must be positive seconds, got {v}"
    );
    Ok(())
}

pub fn run(args: &LiveArgs) -> anyhow::Result<()> {
    let speed = match args.speed.trim() {
        "max" => None,
        s => match s.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => Some(v),
            _ => anyhow::bail!("--speed must be a positive number or 'max', got {s:?}"),
        },
    };
    if let Some(d) = args.duration {
        positive("duration", d)?;
    }
    positive("stall", args.stall)?;
    positive("timeout", args.timeout)?;
    let mut deblink = args
        .pipeline
        .options_with(LIVE_MAX_ITER, Some(LIVE_FIT_SAMPLES));
    deblink.source_rows = LiveOptions::default().deblink.source_rows;
    deblink.fastica.validate()?;
    let opts = LiveOptions {
        hop_s: args.pipeline.hop.unwrap_or(DEFAULT_HOP_S),
        lookahead_s: args.lookahead,
        speed: if args.lsl.is_some() { Some(1.0) } else { speed },
        duration_s: args.duration,
        deblink,
        record: args.record.clone(),
        keep_signal: args.out.is_some(),
        ..LiveOptions::default()
    };
    let gpu = super::open_gpu("ede live", args.pipeline.backend);
    let mut deblinker = Deblinker::new(gpu.as_ref());
    if args.pipeline.backend == BackendChoice::Gpu {
        deblinker = deblinker.forced();
    }
    let (session, name) = match (&args.file, &args.lsl) {
        (_, Some(query)) => {
            anyhow::ensure!(
                args.out.is_none(),
                "--out needs a file; record an LSL stream with --record"
            );
            let inlet = InletOptions {
                resolve_s: args.timeout,
                stall_s: args.stall,
                give_up_s: args.timeout,
            };
            let mut source = LslSource::resolve(query, inlet).map_err(anyhow::Error::msg)?;
            let m = source.meta();
            eprintln!(
                "LSL stream {:?}: {} channels at {} Hz ({})",
                m.name,
                m.labels.len(),
                m.fs,
                m.labels.join(", ")
            );
            let s = play(&mut source, &opts, &mut deblinker, &mut |_, _| true);
            (
                s.with_context(|| format!("LSL stream {query}"))?,
                query.clone(),
            )
        }
        (Some(file), None) => {
            let rec = super::open(file, None)?;
            if args.out.is_some() && rec.format.edf_family().is_none() {
                anyhow::bail!(
                    "{}: --out writes the input's format, which must be EDF or BDF (this is {})",
                    file.display(),
                    rec.format
                );
            }
            let name = file.display().to_string();
            let data = EegData::load(&rec, &opts.deblink).with_context(|| name.clone())?;
            let mut source = FileSource::new(&data, Some(&rec), &opts);
            let session = play(&mut source, &opts, &mut deblinker, &mut |_, _| true)
                .with_context(|| name.clone())?;
            if let Some(out) = &args.out {
                let mut cleaned = data.data.clone();
                let played = session.cleaned.cols;
                for c in 0..cleaned.rows {
                    let n = cleaned.cols;
                    cleaned.data[c * n..c * n + played].copy_from_slice(session.cleaned.row(c));
                }
                write_cleaned(&rec, &data, &cleaned, out)?;
            }
            (session, name)
        }
        (None, None) => anyhow::bail!("give a recording or --lsl NAME"),
    };
    let r = &session.report;
    eprintln!(
        "{name}: {:.1} s played in {} hops, {} blinks; per hop {:.1} ms median, {:.1} ms at most \
         ({:.0}x real time), {} late; {} samples lost in {} gaps, {} stalls",
        r.samples_out as f64 / r.fs,
        r.hops.len(),
        r.blinks.len(),
        r.median_processing_s * 1e3,
        r.max_processing_s * 1e3,
        r.real_time_factor,
        r.late_hops,
        r.dropped_samples,
        r.gaps.len(),
        r.stalls.len(),
    );
    if let Some(why) = &r.source_error {
        eprintln!("{name}: the source ended: {why}");
    }
    if let Some(rec) = &r.record {
        eprintln!(
            "recorded {} ({}): {} samples per channel, {} clipped",
            rec.path, rec.format, rec.samples, rec.clipped
        );
    }
    if let Some(path) = &args.report {
        super::write_json(r, Some(path))?;
    }
    Ok(())
}
