//! `ede psd`: power spectral density of channels over a time range by Welch's method, as
//! `scipy.signal.welch` computes it (`dsp::spectrum`), written as JSON.

use std::path::PathBuf;

use anyhow::{Context, bail};
use rayon::prelude::*;
use serde::Serialize;

use crate::dsp::spectrum::{Welch, WelchParams};

#[derive(Debug, clap::Args)]
pub struct PsdArgs {
    pub file: PathBuf,
    /// Channel labels or types; the EEG (brain) channels of the most common rate when omitted.
    #[arg(long, value_delimiter = ',')]
    pub channels: Vec<String>,
    /// Start in seconds from the recording start.
    #[arg(long, default_value_t = 0.0)]
    pub start: f64,
    /// Duration in seconds (to the end when omitted).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Seconds per Welch segment (its frequency resolution is 1 / segment).
    #[arg(long, default_value_t = 2.0)]
    pub segment: f64,
    /// Fraction of a segment the next one overlaps (0 to under 1).
    #[arg(long, default_value_t = 0.5)]
    pub overlap: f64,
    /// Output JSON (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sampling rate of a CSV input without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct PsdOut {
    pub fs: f64,
    pub segment_s: f64,
    pub overlap: f64,
    pub start_s: f64,
    pub duration_s: f64,
    pub channels: Vec<String>,
    pub frequencies_hz: Vec<f64>,
    /// One density per channel and frequency.
    pub psd: Vec<Vec<f64>>,
    /// The channels' unit squared per Hz (of the first channel where they differ).
    pub unit: String,
}

pub fn run(args: &PsdArgs) -> anyhow::Result<()> {
    let rec = super::open(&args.file, args.fs)?;
    let picked = if args.channels.is_empty() {
        rec.brain_signals()
    } else {
        super::export::select_channels(&rec, &args.channels)?
    };
    let Some(&first) = picked.first() else {
        bail!("the recording has no EEG channels: name some with --channels");
    };
    let fs = rec.signals[first].fs;
    let params = WelchParams::from_seconds(fs, args.segment, args.overlap)
        .map_err(anyhow::Error::msg)
        .context("--segment/--overlap")?;
    if !(args.start.is_finite() && args.start >= 0.0) {
        bail!(
            "--start must be a non-negative number of seconds, got {}",
            args.start
        );
    }
    let total = rec.signals[first].samples;
    let from = ((args.start * fs).round() as usize).min(total);
    let to = match args.duration {
        Some(d) if d.is_finite() && d > 0.0 => (from + (d * fs).round() as usize).min(total),
        Some(d) => bail!("--duration must be a positive number of seconds, got {d}"),
        None => total,
    };
    if params.segments(to - from) == 0 {
        bail!(
            "{:.3} s of signal hold no whole {} s segment",
            (to - from) as f64 / fs,
            args.segment
        );
    }
    let welch = Welch::new(fs, params);
    let psd = (picked.par_iter())
        .map(|&c| {
            let mut x = vec![0f32; to - from];
            rec.read(c, from, &mut x)?;
            Ok(welch.psd(&x).expect("a whole segment, checked above"))
        })
        .collect::<Result<Vec<_>, crate::recording::ReadError>>()?;
    let out = PsdOut {
        fs,
        segment_s: params.segment as f64 / fs,
        overlap: params.overlap as f64 / params.segment as f64,
        start_s: from as f64 / fs,
        duration_s: (to - from) as f64 / fs,
        channels: picked
            .iter()
            .map(|&c| rec.signals[c].label.clone())
            .collect(),
        frequencies_hz: welch.frequencies(),
        psd,
        unit: format!("{}^2/Hz", rec.signals[first].unit),
    };
    super::write_json(&out, args.out.as_deref())
}
