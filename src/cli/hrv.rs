//! `ede hrv`: heart rate variability of an ECG channel's beats (the record's beat annotations,
//! or the QRS detector), as `analysis::heart` measures it, written as JSON; `--rr-csv` writes
//! the RR intervals too.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

use crate::analysis::heart::HeartReport;
use crate::analysis::hermite::{BeatSource, default_ecg_channel, no_ecg_channel};
use crate::dsp::hrv::Hrv;

#[derive(Debug, clap::Args)]
pub struct HrvArgs {
    /// The record (a WFDB record with its .atr beats, or any recording with an ECG channel).
    pub record: PathBuf,
    /// The ECG channel's label; the first ECG-like channel when omitted.
    #[arg(long)]
    pub channel: Option<String>,
    /// Take the beats from the QRS detector even where the record has beat annotations.
    #[arg(long)]
    pub detector: bool,
    /// Output JSON (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the RR intervals as CSV (time_s, rr_ms, nn).
    #[arg(long)]
    pub rr_csv: Option<PathBuf>,
    /// Sampling rate of a CSV input without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

#[derive(Debug, Serialize)]
struct HrvOut {
    record: String,
    channel: String,
    source: BeatSource,
    #[serde(flatten)]
    hrv: Hrv,
}

pub fn run(args: &HrvArgs) -> anyhow::Result<()> {
    let rec = super::open(&args.record, args.fs)?;
    let signal = match &args.channel {
        Some(label) => rec
            .signal_index(label)
            .with_context(|| format!("no channel {label:?} in {}", rec.display_name()))?,
        None => default_ecg_channel(&rec).ok_or_else(|| anyhow::anyhow!(no_ecg_channel(&rec)))?,
    };
    let report = HeartReport::measure(&rec, signal, args.detector)?;
    if let Some(path) = &args.rr_csv {
        crate::recording::write_whole(path, report.rr_csv().as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let out = HrvOut {
        record: rec.display_name(),
        channel: report.channel,
        source: report.source,
        hrv: report.hrv,
    };
    super::write_json(&out, args.out.as_deref())
}
