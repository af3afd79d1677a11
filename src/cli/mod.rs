//! Command-line interface: argument definitions and one file per subcommand.

pub mod bench;
pub mod export;
pub mod info;
pub mod xapen;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::recording::{OpenOptions, ReadError, Recording};

#[derive(Debug, Parser)]
#[command(
    name = "ede",
    version,
    about = "Viewer and GPU analyzer for EEG, MEG and ECG recordings",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub gui: GuiArgs,
}

/// Arguments of the GUI (no subcommand).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GuiArgs {
    /// Recording to open (EDF, EDF+, BDF, BDF+, WFDB record, CSV); the demo when omitted.
    pub file: Option<PathBuf>,
    /// Sampling rate of a CSV file without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
    /// Render the window after the first complete frame, save it as PNG and exit.
    #[arg(long, value_name = "PNG")]
    pub screenshot: Option<PathBuf>,
    /// Which view the screenshot shows.
    #[arg(long, default_value = "browser")]
    pub view: String,
    /// Window size for the screenshot, WIDTHxHEIGHT.
    #[arg(long, default_value = "1600x1000")]
    pub size: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what a recording holds: format, start, duration, signals, annotations, warnings.
    Info(info::InfoArgs),
    /// Write physical values of some channels and a time range as CSV.
    Export(export::ExportArgs),
    /// Cross-ApEn matrices of every channel pair, for one or many recordings.
    Xapen(xapen::XapenArgs),
    /// Run a benchmark and write its figures as JSON.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// Opens a recording for a subcommand, with the CSV rate if given.
pub fn open(path: &std::path::Path, fs: Option<f64>) -> Result<Recording, ReadError> {
    Recording::open(path, &OpenOptions { csv_fs: fs })
}

/// Writes `text` and a newline to standard output. A reader that went away (`ede info F | head`)
/// is not an error.
pub fn print(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Pretty JSON to `out`, or to standard output.
pub fn write_json(value: &impl serde::Serialize, out: Option<&Path>) -> anyhow::Result<()> {
    use anyhow::Context;
    let json = serde_json::to_string_pretty(value)?;
    match out {
        Some(p) => std::fs::write(p, json + "\n")
            .with_context(|| format!("cannot write {}", p.display()))?,
        None => print(&json)?,
    }
    Ok(())
}
