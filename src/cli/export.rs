//! `ede export FILE --channels A,B --start S --duration D --format csv [--out FILE]`

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::recording::Recording;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    pub file: PathBuf,
    /// Comma-separated channel labels (all channels when omitted).
    #[arg(long, value_delimiter = ',')]
    pub channels: Vec<String>,
    /// Start in seconds from the recording start.
    #[arg(long, default_value_t = 0.0)]
    pub start: f64,
    /// Duration in seconds (to the end when omitted).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Output format.
    #[arg(long, default_value = "csv", value_parser = ["csv"])]
    pub format: String,
    /// Output file (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sampling rate of a CSV input without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let rec = super::open(&args.file, args.fs)?;
    let channels = select_channels(&rec, &args.channels)?;
    if !(args.start.is_finite() && args.start >= 0.0) {
        bail!(
            "--start must be a non-negative number of seconds, got {}",
            args.start
        );
    }
    let end = match args.duration {
        Some(d) if d.is_finite() && d >= 0.0 => args.start + d,
        Some(d) => bail!("--duration must be a non-negative number of seconds, got {d}"),
        None => f64::INFINITY,
    };
    let out: Box<dyn Write> = match &args.out {
        Some(p) => Box::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    write_csv(&rec, &channels, args.start, end, out)
}

/// Channel indices for labels or channel types (`Recording::pick`); all data channels when
/// none are named. All must share one rate because each row is one sample instant.
pub fn select_channels(rec: &Recording, labels: &[String]) -> anyhow::Result<Vec<usize>> {
    let idx: Vec<usize> = if labels.is_empty() {
        (0..rec.signals.len()).collect()
    } else {
        rec.pick(labels).map_err(anyhow::Error::msg)?
    };
    let Some(&first) = idx.first() else {
        bail!("the recording has no data channels to export");
    };
    let fs = rec.signals[first].fs;
    if let Some(&other) = idx.iter().find(|&&i| rec.signals[i].fs != fs) {
        bail!(
            "channels {} ({} Hz) and {} ({} Hz) have different sampling rates; export them separately",
            rec.signals[first].label,
            fs,
            rec.signals[other].label,
            rec.signals[other].fs
        );
    }
    Ok(idx)
}

/// Streams rows `time, ch1, ch2, ...` for samples with time in `[start, end)`, segment by
/// segment (EDF+D gaps stay gaps in the time column), in bounded chunks.
fn write_csv(
    rec: &Recording,
    channels: &[usize],
    start: f64,
    end: f64,
    out: Box<dyn Write>,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    let header: Vec<String> = std::iter::once("time".to_string())
        .chain(channels.iter().map(|&c| csv_cell(&rec.signals[c].label)))
        .collect();
    writeln!(out, "{}", header.join(","))?;
    let first = channels[0];
    let fs = rec.signals[first].fs;
    const CHUNK: usize = 1 << 16;
    let mut columns = vec![vec![0f32; CHUNK]; channels.len()];
    let mut line = String::new();
    for (seg_start, seg_first, seg_len) in rec.signal_segments(first) {
        let seg_end = seg_start + seg_len as f64 / fs;
        if seg_end <= start || seg_start >= end {
            continue;
        }
        let lo = ((start - seg_start) * fs).ceil().max(0.0) as usize;
        let hi = if end.is_finite() {
            (((end - seg_start) * fs).ceil().max(0.0) as usize).min(seg_len)
        } else {
            seg_len
        };
        let mut k = lo;
        while k < hi {
            let n = (hi - k).min(CHUNK);
            for (col, &c) in columns.iter_mut().zip(channels) {
                rec.read(c, seg_first + k, &mut col[..n])?;
            }
            for j in 0..n {
                use std::fmt::Write as _;
                line.clear();
                write!(line, "{}", seg_start + (k + j) as f64 / fs)?;
                for col in &columns {
                    write!(line, ",{}", col[j])?;
                }
                writeln!(out, "{line}")?;
            }
            k += n;
        }
    }
    out.flush()?;
    Ok(())
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
