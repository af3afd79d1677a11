//! `ede deblink FILE --out CLEAN.edf --report REPORT.json`: eye blinks removed with ICA, the
//! cleaned recording written in the input's own format (EDF stays EDF, BDF stays BDF), every
//! channel not cleaned and every header field and annotation copied byte for byte.

use std::path::PathBuf;

use anyhow::Context;

use super::BackendChoice;
use crate::analysis::blink::{
    DeblinkOptions, DeblinkReport, EegData, deblink_data, runs_on_gpu, write_cleaned,
};
use crate::dsp::blink::{BlinkParams, Scope};
use crate::dsp::ica::{Algorithm, Approach, Contrast, FastIcaParams};

/// The pipeline's options, shared by `deblink` and `blinks score`.
#[derive(Debug, Clone, clap::Args)]
pub struct PipelineArgs {
    /// ICA window in seconds, lengthened where it holds fewer than 2.5 n^2 samples for n
    /// channels (32 channels at 128 Hz: 20 s); consecutive windows overlap by half.
    #[arg(long, default_value_t = 10.0)]
    pub window: f64,
    /// Step between windows in seconds (default: half a window).
    #[arg(long)]
    pub hop: Option<f64>,
    #[arg(long, value_enum, default_value_t = Algorithm::Fastica)]
    pub algorithm: Algorithm,
    /// FastICA's nonlinearity.
    #[arg(long, value_enum, default_value_t = Contrast::Tanh)]
    pub contrast: Contrast,
    #[arg(long, value_enum, default_value_t = Approach::Symmetric)]
    pub approach: Approach,
    /// FastICA's convergence tolerance (1 - cos of each unmixing vector with its last value)
    /// and iteration limit (per window; default 100, and 10 per hop in `ede live`, where each
    /// hop goes on from the last one's result and the first window gets 100).
    #[arg(long, default_value_t = crate::analysis::blink::PIPELINE_TOL)]
    pub tol: f64,
    #[arg(long)]
    pub max_iter: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// ICA components: the leading principal components of each window (default: all the
    /// window's rank allows). Fewer run faster.
    #[arg(long)]
    pub components: Option<usize>,
    /// Detection channels or bipolar pairs (Fp1-F3,EOG1); default the frontal pairs
    /// FP1-F3, FP1-F7, FP2-F4, FP2-F8 found by label, and the vertical EOG channels (all EOG
    /// channels not labelled horizontal) where the recording has them.
    #[arg(long, value_delimiter = ',')]
    pub detect_channels: Option<Vec<String>>,
    /// Channels left unchanged (default: those labelled EOG); `--keep ''` keeps none.
    #[arg(long, value_delimiter = ',')]
    pub keep: Option<Vec<String>>,
    /// `blinks`: remove the blink components over the blinks only; `window`: over the whole
    /// window (the thesis's way).
    #[arg(long, value_enum, default_value_t = Scope::Blinks)]
    pub scope: Scope,
    /// Remove the eye's whole activity (eye movements, closures, slow drifts) as well as blinks:
    /// the eye's ICA component is removed everywhere, from an ICA of the cleaned channels
    /// without the EOG ones over windows of 30 n^2 samples. By default only events whose shape
    /// is a blink's are removed, and uncertain ones never are.
    #[arg(long)]
    pub remove_eye_movements: bool,
    /// Candidate threshold on the frontal derivations, robust SDs.
    #[arg(long, default_value_t = BlinkParams::default().candidate_z)]
    pub candidate_z: f64,
    /// Threshold on a component's frontal share, robust SDs.
    #[arg(long, default_value_t = BlinkParams::default().component_z)]
    pub component_z: f64,
    /// Fraction of a component's own excursions that must be candidate blinks for it to be
    /// removed.
    #[arg(long, default_value_t = BlinkParams::default().min_match)]
    pub min_match: f64,
    /// Fraction of a candidate's height a component must explain to count as carrying it.
    #[arg(long, default_value_t = BlinkParams::default().min_share)]
    pub min_share: f64,
    /// At most this many components are removed per window.
    #[arg(long, default_value_t = BlinkParams::default().max_components)]
    pub max_components: usize,
    /// Low-pass corner of the blink source before it is subtracted under the blinks, Hz (0:
    /// none): the source's faster activity is EEG and noise, not blink.
    #[arg(long, default_value_t = BlinkParams::default().source_lowpass_hz)]
    pub source_lowpass: f64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Fit each window's unmixing on at most this many of its samples (every k-th), then
    /// unmix them all; 0 for all (the default, but 2560 in `ede live`).
    #[arg(long)]
    pub fit_samples: Option<usize>,
}

impl PipelineArgs {
    pub fn options(&self) -> DeblinkOptions {
        self.options_with(crate::analysis::blink::PIPELINE_MAX_ITER, None)
    }

    /// The options, with `max_iter` and `fit_samples` where `--max-iter` and `--fit-samples`
    /// are not given.
    pub fn options_with(&self, max_iter: usize, fit_samples: Option<usize>) -> DeblinkOptions {
        DeblinkOptions {
            fit_samples: match self.fit_samples {
                Some(0) => None,
                Some(n) => Some(n),
                None => fit_samples,
            },
            source_rows: None,
            params: BlinkParams {
                window_s: self.window,
                hop_s: self.hop,
                candidate_z: self.candidate_z,
                component_z: self.component_z,
                min_match: self.min_match,
                min_share: self.min_share,
                max_components: self.max_components,
                source_lowpass_hz: self.source_lowpass,
                scope: self.scope,
                remove_eye_movements: self.remove_eye_movements,
                ..BlinkParams::default()
            },
            algorithm: self.algorithm,
            fastica: FastIcaParams {
                contrast: self.contrast,
                approach: self.approach,
                tol: self.tol,
                max_iter: self.max_iter.unwrap_or(max_iter),
                seed: self.seed,
                components: self.components,
                ..FastIcaParams::default()
            },
            detect: self.detect_channels.clone(),
            keep: self.keep.clone(),
        }
    }
}

/// The pipeline's options and backend from its flags as `ede deblink` takes them (`--window 20
/// --keep EOG1 ...`), for callers other than the command line (the Python package): the same
/// defaults, and the same messages for bad values.
pub fn pipeline_from_flags(
    flags: &[String],
) -> Result<(DeblinkOptions, BackendChoice), clap::Error> {
    use clap::Parser;
    #[derive(clap::Parser)]
    #[command(name = "deblink")]
    struct Flags {
        #[command(flatten)]
        pipeline: PipelineArgs,
    }
    let argv = std::iter::once("deblink").chain(flags.iter().map(String::as_str));
    let p = Flags::try_parse_from(argv)?.pipeline;
    Ok((p.options(), p.backend))
}

#[derive(Debug, clap::Args)]
pub struct DeblinkArgs {
    /// A recording, or a BIDS dataset's root: each run's cleaned recording and report go to
    /// its derivatives/ede/ (`_desc-deblinked_eeg.bdf`, `_desc-deblink.json`).
    pub file: PathBuf,
    #[command(flatten)]
    pub bids: crate::recording::bids::Filter,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// The cleaned recording: EDF and BDF inputs in their own format (every other byte as
    /// it was), other formats as BDF+ (EDF+ where the name ends in .edf). Required unless
    /// FILE is a BIDS dataset.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The report: blinks, windows, components removed, run time.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub fn run(args: &DeblinkArgs) -> anyhow::Result<()> {
    let opts = args.pipeline.options();
    opts.fastica.validate()?;
    let gpu = super::LazyGpu::new("ede deblink", args.pipeline.backend);
    let files = [args.file.clone()];
    super::study::<()>(&files, &args.bids, None, |item, _| {
        let ext = match item.path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("edf") || e.eq_ignore_ascii_case("bdf") => e,
            _ => "bdf",
        };
        let datatype = item
            .bids
            .as_ref()
            .map_or("eeg", |(_, r)| r.datatype.as_str());
        let out = match item.derivative("deblinked", &format!("_{datatype}.{ext}"))? {
            Some(p) => p,
            None => (args.out.clone())
                .context("--out must name the cleaned recording (or FILE a BIDS dataset)")?,
        };
        // The file is written as EDF or BDF: a name that says otherwise is refused, not
        // filled with bytes of another format.
        let named = (out.extension().and_then(|x| x.to_str()))
            .is_some_and(|x| x.eq_ignore_ascii_case("edf") || x.eq_ignore_ascii_case("bdf"));
        if !named {
            anyhow::bail!(
                "--out {}: the cleaned recording is written as EDF or BDF; name it .edf or .bdf",
                out.display()
            );
        }
        let report = item.derivative("deblink", ".json")?.or(args.report.clone());
        one(item, &opts, &gpu, args, &out, report.as_deref())?;
        Ok(None)
    })
}

fn one(
    item: &super::Item,
    opts: &DeblinkOptions,
    gpu: &super::LazyGpu,
    args: &DeblinkArgs,
    out: &std::path::Path,
    report_path: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let rec = item.open(None)?;
    let opts = opts.clone();
    let with_path = || item.path.display().to_string();
    let data = EegData::load(&rec, &opts).with_context(with_path)?;
    let gpu = gpu.get(runs_on_gpu(&opts, data.data.rows, gpu.min_channels()));
    let forced = args.pipeline.backend == BackendChoice::Gpu;
    let (result, elapsed, ran_on) =
        deblink_data(&data, &opts, gpu, forced).with_context(with_path)?;
    write_cleaned(&rec, &data, &result.cleaned, out)?;
    let report = DeblinkReport::new(
        item.path.display().to_string(),
        &data,
        &opts,
        &result,
        elapsed,
        ran_on,
    );
    eprintln!(
        "{}: {} blinks removed in {} windows, {:.3} s for {:.1} s of EEG ({:.0}x real time, {})",
        item.path.display(),
        report.blinks.len(),
        report.windows.len(),
        elapsed,
        data.duration_s(),
        data.duration_s() / elapsed.max(1e-9),
        report.ran_on.1
    );
    if let Some(path) = report_path {
        super::write_json(&report, Some(path))?;
    }
    Ok(())
}
