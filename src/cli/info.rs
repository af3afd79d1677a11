//! `ede info FILE [--json]`

use std::path::PathBuf;

use crate::recording::RecordingSummary;

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Sampling rate of a CSV file without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
    /// The stream of an XDF file (its name or id); the EEG stream by default.
    #[arg(long)]
    pub stream: Option<String>,
}

pub fn run(args: &InfoArgs) -> anyhow::Result<()> {
    let options = crate::recording::OpenOptions {
        csv_fs: args.fs,
        xdf_stream: args.stream.clone(),
    };
    let rec = super::with_types(crate::recording::Recording::open(&args.file, &options)?)?;
    let summary = RecordingSummary::from(&rec);
    if args.json {
        super::print(&serde_json::to_string_pretty(&summary)?)?;
        return Ok(());
    }
    let mut text = format!("{}  ({})\n", summary.path, summary.format);
    text += &format!("start       {}\n", summary.start);
    text += &format!("duration    {:.3} s\n", summary.duration_s);
    if !summary.recording.is_empty() {
        text += &format!("recording   {}\n", summary.recording);
    }
    text += &format!("annotations {}\n", summary.annotations);
    text += &format!("signals     {}", summary.signals.len());
    for s in &summary.signals {
        text += &format!(
            "\n  {:<18} {:<8} {:>8} Hz {:>10} samples  [{} .. {}] {}",
            s.label,
            s.kind.name(),
            super::round_for_people(s.fs),
            s.samples,
            super::round_for_people(s.physical_min),
            super::round_for_people(s.physical_max),
            s.unit
        );
    }
    for w in &summary.warnings {
        text += &format!("\nwarning: {w}");
    }
    super::print(&text)?;
    Ok(())
}
