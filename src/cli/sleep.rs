//! `ede sleep`: the hypnogram a recording's (or a separate hypnogram file's) stage events make,
//! and its sleep statistics as YASA defines them (`dsp::sleep`), written as JSON.

use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::Serialize;

use crate::dsp::sleep::{SleepStatistics, Stage, hypnogram, statistics};

#[derive(Debug, clap::Args)]
pub struct SleepArgs {
    /// The recording (a PSG) or a hypnogram file (Sleep-EDF's `*-Hypnogram.edf`).
    pub file: PathBuf,
    /// A hypnogram file whose stage events score the recording (instead of its own events);
    /// a Sleep-EDF PSG finds its `*-Hypnogram.edf` beside it without this. Epochs past the
    /// recording's end are left out.
    #[arg(long)]
    pub hypnogram: Option<PathBuf>,
    /// Seconds per scored epoch.
    #[arg(long, default_value_t = 30.0)]
    pub epoch: f64,
    /// Seconds from the start at which lights went off: earlier epochs are left out.
    #[arg(long)]
    pub lights_off: Option<f64>,
    /// Seconds from the start at which lights went on: later epochs are left out.
    #[arg(long)]
    pub lights_on: Option<f64>,
    /// A lab's own stage label, LABEL=STAGE (STAGE: W, N1, N2, N3, R, ART or UNS); repeatable.
    #[arg(long = "stage", value_name = "LABEL=STAGE", value_parser = parse_stage_label)]
    pub stages: Vec<(String, Stage)>,
    /// Output JSON (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn parse_stage_label(s: &str) -> Result<(String, Stage), String> {
    let (label, stage) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected LABEL=STAGE, got {s:?}"))?;
    let stage = (Stage::ALL.iter())
        .find(|st| {
            let t = stage.trim();
            st.yasa().eq_ignore_ascii_case(t) || st.short().eq_ignore_ascii_case(t)
        })
        .ok_or_else(|| format!("{stage:?} is not W, N1, N2, N3, R, ART or UNS"))?;
    Ok((label.trim().to_string(), *stage))
}

#[derive(Debug, Serialize)]
struct SleepOut {
    epoch_s: f64,
    /// The epochs the statistics cover, from the start (after --lights-off).
    first_epoch: usize,
    epochs: usize,
    statistics: SleepStatistics,
    stages: Vec<Stage>,
}

pub fn run(args: &SleepArgs) -> anyhow::Result<()> {
    if !(args.epoch.is_finite() && args.epoch > 0.0) {
        bail!(
            "--epoch must be a positive number of seconds, got {}",
            args.epoch
        );
    }
    // A Sleep-EDF PSG is scored by the hypnogram beside it, as the browser pairs them.
    let beside = (args.hypnogram.is_none())
        .then(|| crate::recording::sibling_hypnogram(&args.file))
        .flatten();
    let scored = args
        .hypnogram
        .as_ref()
        .or(beside.as_ref())
        .unwrap_or(&args.file);
    let mut rec = super::open(scored, None)?;
    if scored != &args.file {
        // The hypnogram scores the recording: its events on the recording's time axis, and
        // no epoch past the recording's end (Sleep-EDF's hypnograms run to 24 h).
        let psg = super::open(&args.file, None)?;
        let shift = (rec.start - psg.start).num_milliseconds() as f64 / 1e3;
        let end = psg.time_span_s();
        for a in &mut rec.annotations {
            a.onset += shift;
            a.duration = a.duration.min(end - a.onset).max(0.0);
        }
        rec.annotations.retain(|a| a.onset >= 0.0 && a.onset < end);
    }
    let stages = hypnogram(&rec.annotations, args.epoch, &args.stages);
    if stages.is_empty() {
        bail!(
            "{} has no sleep stage events (W, N1, N2, N3, R or Sleep stage W/1/2/3/4/R/?)",
            scored.display()
        );
    }
    let epoch_at = |s: f64, what: &str| -> anyhow::Result<usize> {
        if !(s.is_finite() && s >= 0.0) {
            bail!("--{what} must be a non-negative number of seconds, got {s}");
        }
        Ok(((s / args.epoch).round() as usize).min(stages.len()))
    };
    let first = args
        .lights_off
        .map(|s| epoch_at(s, "lights-off"))
        .transpose()?
        .unwrap_or(0);
    let end = (args.lights_on)
        .map(|s| epoch_at(s, "lights-on"))
        .transpose()?
        .unwrap_or(stages.len());
    if first >= end {
        bail!("no epochs between --lights-off and --lights-on");
    }
    let kept = &stages[first..end];
    let out = SleepOut {
        epoch_s: args.epoch,
        first_epoch: first,
        epochs: kept.len(),
        statistics: statistics(kept, args.epoch).context("no epochs")?,
        stages: kept.to_vec(),
    };
    super::write_json(&out, args.out.as_deref())
}
