//! `ede hermite RECORD... --channel NAME --order N ... --out OUT.json`: the Hermite fit of
//! every beat of an ECG channel, record after record.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;

use super::BackendChoice;
use crate::analysis::hermite::{
    EcgBeats, EcgFilter, Fitter, HermiteReport, default_ecg_channel, no_ecg_channel,
};
use crate::dsp::hermite::HermiteParams;

#[derive(Debug, clap::Args)]
pub struct HermiteArgs {
    /// Records (WFDB by any of its files, EDF/EDF+/BDF, CSV); each gives one report.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub bids: crate::recording::bids::Filter,
    /// The ECG channel's label; the first ECG-like channel (ECG, MLII, V1 ... or mV) when
    /// omitted.
    #[arg(long)]
    pub channel: Option<String>,
    /// N, the number of Hermite functions.
    #[arg(long, default_value_t = 6)]
    pub order: usize,
    /// S, the number of sigma values tried.
    #[arg(long, default_value_t = 100)]
    pub sigmas: usize,
    /// Smallest sigma in seconds (default: sigma_max / 10).
    #[arg(long)]
    pub sigma_min: Option<f64>,
    /// Largest sigma in seconds (default: 0.2 / sqrt(2N - 1)).
    #[arg(long)]
    pub sigma_max: Option<f64>,
    /// `default`: baseline removal and a 40 Hz low-pass before fitting; `none`: raw samples.
    #[arg(long, value_enum, default_value_t = EcgFilter::Default)]
    pub filter: EcgFilter,
    /// Take the beats from the QRS detector even where the record has beat annotations.
    #[arg(long)]
    pub detector: bool,
    /// Where to run: `auto` takes the GPU unless it is a software adapter.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Output JSON: one object for one record, an array for several (stdout when omitted).
    #[arg(long, conflicts_with = "out_dir")]
    pub out: Option<PathBuf>,
    /// Write one JSON per record into this folder instead (NAME.hermite.json).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Sampling rate of CSV files without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

impl HermiteArgs {
    pub fn params(&self) -> HermiteParams {
        HermiteParams {
            order: self.order,
            sigmas: self.sigmas,
            sigma_min: self.sigma_min,
            sigma_max: self.sigma_max,
        }
    }
}

pub fn run(args: &HermiteArgs) -> anyhow::Result<()> {
    // Bad parameters are said once, before any record is read.
    args.params().sigma_grid()?;
    let gpu = super::open_gpu("ede hermite", args.backend);
    let mut fitter = Fitter::<PathBuf>::new(gpu.as_ref());
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    super::study(&args.files, &args.bids, args.out.as_deref(), |item, tag| {
        let report = one(item, args, &mut fitter)?;
        eprintln!(
            "{tag}: {} beats of {} ({:?}) fitted, {} skipped, mean MSE {:.4e} {}^2, \
             {:.3} s ({})",
            report.beats.len(),
            report.channel,
            report.beat_source,
            report.skipped.len(),
            report.mse_mean,
            report.unit,
            report.elapsed_s,
            report.ran_on
        );
        let out = match (item.derivative("hermite", ".json")?, &args.out_dir) {
            (Some(p), _) => p,
            (None, Some(dir)) => dir.join(super::out_name(&item.path, "hermite.json")),
            (None, None) => return Ok(Some(report)),
        };
        super::write_json(&report, Some(&out))?;
        Ok(None)
    })
}

fn one(
    item: &super::Item,
    args: &HermiteArgs,
    fitter: &mut Fitter<PathBuf>,
) -> anyhow::Result<HermiteReport> {
    let rec = item.open(args.fs)?;
    let signal = match &args.channel {
        Some(label) => rec
            .signal_index(label)
            .with_context(|| format!("no channel {label:?} in {}", rec.display_name()))?,
        None => default_ecg_channel(&rec).ok_or_else(|| anyhow::anyhow!(no_ecg_channel(&rec)))?,
    };
    let params = args.params();
    let started = Instant::now();
    let beats = EcgBeats::prepare(&rec, signal, args.filter, args.detector)?;
    let (fits, (_, ran_on)) = fitter.fit(&item.path, &beats.windows, beats.fs, &params, None)?;
    let elapsed = started.elapsed().as_secs_f64();
    Ok(HermiteReport::new(
        rec.display_name(),
        rec.signals[signal].unit.trim().to_string(),
        &beats,
        &params,
        &fits,
        (elapsed, ran_on),
    )?)
}
