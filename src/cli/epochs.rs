//! `ede epochs FILE --events square[,rt] --tmin -0.2 --tmax 0.8 [--baseline -0.2,0|none]
//! [--reject eeg=100uV,eog=250uV] [--flat eeg=1uV] [--montage M] [--reference average]
//! [--filter ...] [--bad CH,..] [--interpolate-bads] --out OUT.json [--ave OUT-ave.fif]`:
//! epochs around events and their averages (`analysis::epochs`), as JSON and as MNE's evoked
//! file. Filters run zero-phase unless `--causal`: a causal filter shifts latencies.

use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::analysis::epochs::{self, EpochParams, evoked_fif};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{self, Reference};
use crate::recording::ChannelType;
use crate::recording::channel::si_per_unit;

#[derive(Debug, clap::Args)]
pub struct EpochsArgs {
    pub file: PathBuf,
    /// Event texts, one condition each (annotations; trigger codes as `ede info` lists them).
    #[arg(long, value_delimiter = ',', required = true)]
    pub events: Vec<String>,
    /// Window start in seconds from the event.
    #[arg(long, default_value_t = -0.2, allow_hyphen_values = true)]
    pub tmin: f64,
    /// Window end in seconds from the event.
    #[arg(long, default_value_t = 0.5, allow_hyphen_values = true)]
    pub tmax: f64,
    /// Baseline interval `FROM,TO` in seconds (an empty end: the window's), or `none`.
    #[arg(long, default_value = ",0", allow_hyphen_values = true)]
    pub baseline: String,
    /// Peak-to-peak limits per channel type, e.g. eeg=150uV,eog=250uV.
    #[arg(long, value_delimiter = ',')]
    pub reject: Vec<String>,
    /// Smallest peak-to-peak per channel type, e.g. eeg=1uV.
    #[arg(long, value_delimiter = ',')]
    pub flat: Vec<String>,
    /// Keep epochs that overlap a span marked bad.
    #[arg(long)]
    pub keep_bad_spans: bool,
    /// A built-in montage or a montage file; the channels as recorded when omitted.
    #[arg(long)]
    pub montage: Option<String>,
    /// Re-reference the EEG channels first: average, mastoids, or channel labels.
    #[arg(long, default_value = "as-recorded")]
    pub reference: Reference,
    /// Filters, e.g. hp=0.1,lp=30,order=4 (run forward and backward unless --causal).
    #[arg(long, value_parser = super::export::parse_filter)]
    pub filter: Option<DisplayFilter>,
    /// Run the filter forward only (shifts latencies), as a causal display filter.
    #[arg(long)]
    pub causal: bool,
    /// Channels to treat as bad besides those the file marks: left out, or interpolated.
    #[arg(long, value_delimiter = ',')]
    pub bad: Vec<String>,
    /// Interpolate bad scalp electrodes by spherical splines instead of leaving them out.
    #[arg(long)]
    pub interpolate_bads: bool,
    /// Output JSON (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The averages as MNE's evoked file (read by mne.read_evokeds).
    #[arg(long)]
    pub ave: Option<PathBuf>,
    /// Sampling rate of a CSV input without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

/// `eeg=150uV` as (EEG, 150e-6 V): a number in SI units, or with a unit ede knows.
fn limit(item: &str) -> anyhow::Result<(ChannelType, f64)> {
    let (kind, value) = item
        .split_once('=')
        .with_context(|| format!("{item:?}: expected TYPE=VALUE, e.g. eeg=150uV"))?;
    let kind = ChannelType::parse(kind.trim())
        .with_context(|| format!("{item:?}: {kind:?} is no channel type"))?;
    let value = value.trim();
    let split = value
        .find(|c: char| c.is_alphabetic() || c == 'µ' || c == 'μ')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .trim()
        .parse()
        .with_context(|| format!("{item:?}: {number:?} is not a number"))?;
    let si = match unit.trim() {
        "" => 1.0,
        u => {
            si_per_unit(u)
                .with_context(|| format!("{item:?}: unknown unit {u:?}"))?
                .1
        }
    };
    if !(number.is_finite() && number > 0.0) {
        bail!("{item:?}: the limit must be a positive number");
    }
    Ok((kind, number * si))
}

/// `-0.2,0`, `,0`, `-0.2,` or `none`.
fn baseline(text: &str) -> anyhow::Result<Option<(Option<f64>, Option<f64>)>> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let (a, b) = text
        .split_once(',')
        .with_context(|| format!("--baseline {text:?}: expected FROM,TO or none"))?;
    let end = |s: &str| -> anyhow::Result<Option<f64>> {
        match s.trim() {
            "" | "None" | "none" => Ok(None),
            v => Ok(Some(v.parse().with_context(|| {
                format!("--baseline {text:?}: {v:?} is not a number")
            })?)),
        }
    };
    Ok(Some((end(a)?, end(b)?)))
}

pub fn run(args: &EpochsArgs) -> anyhow::Result<()> {
    let rec = super::open_marked(&args.file, args.fs, &args.bad, args.interpolate_bads)?;
    let m = match &args.montage {
        Some(m) => super::export::load_montage(&rec, m)?,
        None => epochs::default_montage(&rec),
    };
    let resolved = montage::resolve(&rec, &m, &args.reference).map_err(anyhow::Error::msg)?;
    for left_out in &resolved.skipped {
        eprintln!("warning: {}: left out {left_out}", m.name);
    }
    let mut filter = args.filter.unwrap_or_default();
    filter.zero_phase = !args.causal;
    let params = EpochParams {
        events: args.events.clone(),
        tmin: args.tmin,
        tmax: args.tmax,
        baseline: baseline(&args.baseline)?,
        reject: args
            .reject
            .iter()
            .map(|r| limit(r))
            .collect::<Result<_, _>>()?,
        flat: args
            .flat
            .iter()
            .map(|r| limit(r))
            .collect::<Result<_, _>>()?,
        reject_by_annotation: !args.keep_bad_spans,
    };
    let e = epochs::epochs(
        &rec,
        &rec.annotations,
        &resolved.derivations,
        &|_| filter,
        &params,
    )?;
    for c in &e.conditions {
        eprintln!(
            "{}: {} epochs kept, {} dropped",
            c.name,
            c.average.n_epochs,
            c.dropped.len()
        );
    }
    let out = e.report(
        &params,
        match filter.is_active() {
            true => filter.describe(),
            false => "none".into(),
        },
    );
    if let Some(path) = &args.ave {
        let band = (
            filter.highpass.unwrap_or(0.0),
            filter.lowpass.unwrap_or((e.fs / 2.0) as f32),
        );
        let times = e.times_s();
        let b = params.baseline.map(|(a, b)| {
            let (lo, hi) = e.baseline.expect("a baseline");
            (a.unwrap_or(times[lo]), b.unwrap_or(times[hi - 1]))
        });
        let left_out = evoked_fif::write(path, &e, band, b)?;
        if !left_out.is_empty() {
            eprintln!(
                "warning: {} left out of {}: not a voltage of EEG, EOG, ECG or EMG",
                left_out.join(", "),
                path.display()
            );
        }
    }
    super::write_json(&out, args.out.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_baselines_parse() {
        let (k, v) = limit("eeg=150uV").unwrap();
        assert_eq!(k, ChannelType::Eeg);
        assert!((v - 150e-6).abs() < 1e-18);
        assert!((limit("eog=0.00025").unwrap().1 - 250e-6).abs() < 1e-18);
        assert!((limit("mag=4000fT").unwrap().1 - 4e-12).abs() < 1e-24);
        assert!(limit("eeg=-1uV").is_err());
        assert!(limit("eeg=150parsecs").is_err());
        assert!(limit("brain=1uV").is_err());
        assert_eq!(baseline("none").unwrap(), None);
        assert_eq!(baseline("-0.2,0").unwrap(), Some((Some(-0.2), Some(0.0))));
        assert_eq!(baseline(",0").unwrap(), Some((None, Some(0.0))));
        assert!(baseline("0.1").is_err());
    }
}
