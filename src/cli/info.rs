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
}

pub fn run(args: &InfoArgs) -> anyhow::Result<()> {
    let rec = super::open(&args.file, args.fs)?;
    let summary = RecordingSummary::from(&rec);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
        return Ok(());
    }
    println!("{}  ({})", summary.path, summary.format);
    println!("start       {}", summary.start);
    println!("duration    {:.3} s", summary.duration_s);
    println!("annotations {}", summary.annotations);
    println!("signals     {}", summary.signals.len());
    for s in &summary.signals {
        println!(
            "  {:<18} {:>8} Hz {:>10} samples  [{} .. {}] {}",
            s.label, s.fs, s.samples, s.physical_min, s.physical_max, s.unit
        );
    }
    for w in &summary.warnings {
        println!("warning: {w}");
    }
    Ok(())
}
