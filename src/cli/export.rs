//! `ede export FILE [--montage NAME|FILE.json|FILE.mtg] [--reference average|mastoids|CH[,CH]]
//! [--filter hp=F,lp=F,order=N[,notch=50][,zero-phase]] [--bad CH,..] [--interpolate-bads]
//! [--channels ...]
//! [--start S] [--duration D] [--format csv|edf] [--out FILE]`: what the browser draws, written
//! as numbers. Traces go through the same montage, reference and filter code as the browser's
//! (`dsp::montage::derive_filtered`), so a causal filter is warmed up on the signal before the
//! window and the window equals filtering the whole file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{self, BuiltIn, Derivation, DerivationSpec, Minus, Montage, Reference};
use crate::recording::Recording;
use crate::recording::convert::{NewFile, write_samples};

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    pub file: PathBuf,
    /// A built-in montage by name (as-recorded, average, linked-mastoids, double-banana,
    /// transverse, circumferential, laplacian, frontal-pairs) or a montage file (.json as ede
    /// saves it, .mtg as EDFbrowser does).
    #[arg(long)]
    pub montage: Option<String>,
    /// Re-reference the EEG channels first: average, mastoids, or channel labels (their mean).
    #[arg(long, default_value = "as-recorded")]
    pub reference: Reference,
    /// Filters, e.g. hp=0.5,lp=35,order=4,notch=50,zero-phase (causal unless zero-phase).
    #[arg(long, value_parser = parse_filter)]
    pub filter: Option<DisplayFilter>,
    /// A filter of its own for a channel type or a trace, as the browser's Filter menu and
    /// label menu give: `TYPE:SPEC` (eog, ecg, emg, eeg, ...) or `LABEL:SPEC`, repeatable;
    /// a trace takes its label's, else its type's, else --filter.
    #[arg(long, value_name = "NAME:SPEC")]
    pub filter_of: Vec<String>,
    /// Channels to treat as bad besides those the file marks: out of every average.
    #[arg(long, value_delimiter = ',')]
    pub bad: Vec<String>,
    /// Write bad scalp electrodes as the spherical-spline interpolation of the good ones
    /// (MNE's interpolate_bads), positions from the file or the 10-05 template.
    #[arg(long)]
    pub interpolate_bads: bool,
    /// Channel labels or types (without --montage), or derivation labels (with it); all
    /// when omitted.
    #[arg(long, value_delimiter = ',')]
    pub channels: Vec<String>,
    /// Start in seconds from the recording start.
    #[arg(long, default_value_t = 0.0)]
    pub start: f64,
    /// Duration in seconds (to the end when omitted).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Output format: CSV (a time column, then one per trace, physical units) or EDF+/BDF+
    /// (BDF+ unless --out ends in .edf).
    #[arg(long, default_value = "csv", value_parser = ["csv", "edf"])]
    pub format: String,
    /// Output file (standard output when omitted; required for edf).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sampling rate of a CSV input without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

pub(super) fn parse_filter(s: &str) -> Result<DisplayFilter, String> {
    DisplayFilter::parse(s).map_err(|e| e.to_string())
}

/// Samples per step: bounded memory for windows of any length.
const CHUNK: usize = 1 << 16;

pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let rec = super::open_marked(&args.file, args.fs, &args.bad, args.interpolate_bads)?;
    let montage = match &args.montage {
        Some(m) => load_montage(&rec, m)?,
        None => picked(&rec, &args.channels)?,
    };
    let resolved = montage::resolve(&rec, &montage, &args.reference).map_err(anyhow::Error::msg)?;
    for left_out in &resolved.skipped {
        eprintln!("warning: {}: left out {left_out}", montage.name);
    }
    let mut derivations = resolved.derivations;
    if args.montage.is_some() && !args.channels.is_empty() {
        derivations.retain(|d| {
            args.channels
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&d.label))
        });
        if derivations.is_empty() {
            bail!(
                "--channels: no derivation of the montage is labelled {:?}",
                args.channels
            );
        }
    }
    let Some(first) = derivations.first() else {
        bail!("the recording has no data channels to export");
    };
    let fs = rec.signals[first.plus].fs;
    if let Some(other) = derivations.iter().find(|d| rec.signals[d.plus].fs != fs) {
        bail!(
            "traces {} ({} Hz) and {} ({} Hz) have different sampling rates; export them separately",
            first.label,
            fs,
            other.label,
            rec.signals[other.plus].fs
        );
    }
    let filter = args.filter.unwrap_or_default();
    let mut filters = vec![filter; derivations.len()];
    let mut by_type: Vec<(crate::recording::ChannelType, DisplayFilter)> = Vec::new();
    let mut by_label: Vec<(String, DisplayFilter)> = Vec::new();
    for item in &args.filter_of {
        let (name, spec) = item
            .split_once(':')
            .with_context(|| format!("--filter-of {item:?}: expected NAME:SPEC"))?;
        let f = DisplayFilter::parse(spec).with_context(|| format!("--filter-of {item:?}"))?;
        if derivations
            .iter()
            .any(|d| d.label.eq_ignore_ascii_case(name.trim()))
        {
            by_label.push((name.trim().to_string(), f));
        } else if let Some(kind) = crate::recording::ChannelType::parse(name) {
            by_type.push((kind, f));
        } else {
            bail!("--filter-of {item:?}: {name:?} is no trace label and no channel type");
        }
    }
    for (d, f) in derivations.iter().zip(filters.iter_mut()) {
        let kind = rec.signals[d.plus].kind;
        if let Some((_, own)) = by_type.iter().find(|(k, _)| *k == kind) {
            *f = *own;
        }
        if let Some((_, own)) = by_label
            .iter()
            .find(|(l, _)| l.eq_ignore_ascii_case(&d.label))
        {
            *f = *own;
        }
        if f.is_active() {
            f.sections(fs)
                .with_context(|| format!("the filter of {}", d.label))?;
        }
    }
    if !(args.start.is_finite() && args.start >= 0.0) {
        bail!(
            "--start must be a non-negative number of seconds, got {}",
            args.start
        );
    }
    if args.start >= rec.time_span_s() {
        bail!(
            "--start {} s is past the recording's end ({} s)",
            args.start,
            crate::cli::round_for_people(rec.time_span_s())
        );
    }
    let end = match args.duration {
        Some(d) if d.is_finite() && d >= 0.0 => args.start + d,
        Some(d) => bail!("--duration must be a non-negative number of seconds, got {d}"),
        None => f64::INFINITY,
    };
    let window = Window {
        rec: &rec,
        derivations: &derivations,
        filters,
        stretches: stretches(&rec, first.plus, args.start, end),
    };
    match args.format.as_str() {
        "edf" => {
            let Some(out) = &args.out else {
                bail!("--format edf needs --out FILE.edf (or .bdf)");
            };
            window.write_edf(out)
        }
        _ => {
            let out: Box<dyn Write> = match &args.out {
                Some(p) => Box::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                ),
                None => Box::new(std::io::stdout().lock()),
            };
            window.write_csv(out)
        }
    }
}

/// A montage by built-in name or file.
pub fn load_montage(rec: &Recording, name: &str) -> anyhow::Result<Montage> {
    let path = std::path::Path::new(name);
    if path.is_file() {
        let (montage, left_out) = Montage::load(path).map_err(anyhow::Error::msg)?;
        for l in left_out {
            eprintln!("warning: {}: left out {l}", path.display());
        }
        return Ok(montage);
    }
    let Some(b) = BuiltIn::from_name(name) else {
        bail!(
            "--montage {name:?}: no such file, and no built-in montage of that name (built in: {})",
            BuiltIn::ALL.map(|b| b.name()).join(", ")
        );
    };
    b.montage(rec)
        .with_context(|| format!("--montage {name:?}: this recording lacks its electrodes"))
}

/// The channels `labels` picks (labels or types), shown as recorded.
fn picked(rec: &Recording, labels: &[String]) -> anyhow::Result<Montage> {
    let idx = select_channels(rec, labels)?;
    Ok(Montage {
        name: "as recorded".into(),
        derivations: idx
            .into_iter()
            .map(|i| {
                let l = &rec.signals[i].label;
                DerivationSpec::new(l.clone(), l.clone(), Minus::None)
            })
            .collect(),
    })
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

/// Sample ranges of `signal` within `[start, end)` seconds: per segment (an EDF+D gap ends
/// one), `(segment start time, segment's first sample, first, end)`.
fn stretches(
    rec: &Recording,
    signal: usize,
    start: f64,
    end: f64,
) -> Vec<(f64, usize, usize, usize)> {
    let fs = rec.signals[signal].fs;
    rec.signal_segments(signal)
        .into_iter()
        .filter_map(|(seg_start, seg_first, seg_len)| {
            let seg_end = seg_start + seg_len as f64 / fs;
            if seg_end <= start || seg_start >= end {
                return None;
            }
            let lo = ((start - seg_start) * fs - 1e-6).ceil().max(0.0) as usize;
            let hi = if end.is_finite() {
                (((end - seg_start) * fs - 1e-6).ceil().max(0.0) as usize).min(seg_len)
            } else {
                seg_len
            };
            (lo < hi).then_some((seg_start, seg_first, seg_first + lo, seg_first + hi))
        })
        .collect()
}

/// The traces of a window, read in chunks.
struct Window<'a> {
    rec: &'a Recording,
    derivations: &'a [Derivation],
    /// Each trace's filter.
    filters: Vec<DisplayFilter>,
    stretches: Vec<(f64, usize, usize, usize)>,
}

impl Window<'_> {
    /// Samples `at..at + len` of every trace, filtered as the whole segment would be.
    fn read(
        &self,
        seg: (usize, usize),
        at: usize,
        len: usize,
    ) -> Result<Vec<Vec<f32>>, crate::recording::ReadError> {
        let group: Vec<usize> = (0..self.derivations.len()).collect();
        montage::derive_filtered(self.rec, self.derivations, &group, at, len, seg, |d| {
            self.filters[d]
        })
    }

    /// Rows `time, trace1, trace2, ...`, segment by segment (EDF+D gaps stay gaps in the time
    /// column).
    fn write_csv(&self, out: Box<dyn Write>) -> anyhow::Result<()> {
        let mut out = std::io::BufWriter::new(out);
        let header: Vec<String> = std::iter::once("time".to_string())
            .chain(self.derivations.iter().map(|d| csv_cell(&d.label)))
            .collect();
        writeln!(out, "{}", header.join(","))?;
        let fs = self.rec.signals[self.derivations[0].plus].fs;
        let mut line = String::new();
        for &(seg_start, seg_first, lo, hi) in &self.stretches {
            let seg_len = self
                .rec
                .signal_segments(self.derivations[0].plus)
                .iter()
                .find(|s| s.1 == seg_first)
                .map_or(hi - seg_first, |s| s.2);
            let mut k = lo;
            while k < hi {
                let n = (hi - k).min(CHUNK);
                let columns = self.read((seg_first, seg_first + seg_len), k, n)?;
                for j in 0..n {
                    use std::fmt::Write as _;
                    line.clear();
                    write!(line, "{}", seg_start + (k - seg_first + j) as f64 / fs)?;
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

    /// An EDF+ (or BDF+) file of the traces starting at `start` seconds, with the events
    /// inside the window; a window across an EDF+D gap is written without it.
    fn write_edf(&self, out: &std::path::Path) -> anyhow::Result<()> {
        let rec = self.rec;
        let Some(&(t0, seg0, lo0, _)) = self.stretches.first() else {
            bail!("the window holds no samples");
        };
        let fs = rec.signals[self.derivations[0].plus].fs;
        let begin = t0 + (lo0 - seg0) as f64 / fs;
        let end = self
            .stretches
            .iter()
            .map(|&(t, f, _, h)| t + (h - f) as f64 / fs)
            .fold(begin, f64::max);
        // Where each output sample comes from: (segment bounds, sample) runs in order.
        let runs: Vec<((usize, usize), usize, usize)> = self
            .stretches
            .iter()
            .map(|&(_, f, lo, hi)| {
                let len = rec
                    .signal_segments(self.derivations[0].plus)
                    .iter()
                    .find(|s| s.1 == f)
                    .map_or(hi - f, |s| s.2);
                ((f, f + len), lo, hi)
            })
            .collect();
        let n: usize = runs.iter().map(|r| r.2 - r.1).sum();
        let read = |at: usize, len: usize| -> Result<Vec<Vec<f32>>, crate::recording::ReadError> {
            let mut out = vec![Vec::with_capacity(len); self.derivations.len()];
            let (mut skip, mut want) = (at, len);
            for &(seg, lo, hi) in &runs {
                if want == 0 {
                    break;
                }
                let have = hi - lo;
                if skip >= have {
                    skip -= have;
                    continue;
                }
                let take = want.min(have - skip);
                let part = self.read(seg, lo + skip, take)?;
                for (o, p) in out.iter_mut().zip(part) {
                    o.extend(p);
                }
                want -= take;
                skip = 0;
            }
            Ok(out)
        };
        let unit = |d: &Derivation| rec.signals[d.plus].unit.clone();
        let file = NewFile {
            patient: rec.patient.clone(),
            recording: format!("Exported by ede from {}", rec.display_name()),
            start: rec.start + chrono::Duration::microseconds((begin * 1e6).round() as i64),
            fs,
            signals: (self.derivations.iter().zip(&self.filters))
                .map(|(d, f)| (d.label.clone(), unit(d), String::new(), f.describe()))
                .collect(),
            source: None,
        };
        let annotations: Vec<crate::recording::Annotation> = rec
            .annotations
            .iter()
            .filter(|a| a.onset + a.duration.max(0.0) >= begin && a.onset < end)
            .map(|a| crate::recording::Annotation {
                onset: (a.onset - begin).max(0.0),
                ..a.clone()
            })
            .collect();
        write_samples(out, &file, n, read, &annotations)
            .with_context(|| format!("cannot write {}", out.display()))
    }
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
