//! `ede ica FILE --out NAME-ica.fif [--labels LABELS.json] [--clean OUT.edf]`: ICA of the whole
//! recording as MNE-Python fits it (`analysis::ica`), written as MNE's ICA file for
//! `mne.preprocessing.read_ica`, with the components' labels and the recording cleaned of the
//! excluded ones.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::BackendChoice;
use crate::analysis::Backend;
use crate::analysis::ica::eeglab_set;
use crate::analysis::ica::iclabel::Thresholds;
use crate::analysis::ica::mne_fif::{self, FifExtras};
use crate::analysis::ica::report::{Fitted, mne_labels};
use crate::analysis::ica::{ComponentCount, IcaMethod, IcaSettings, PicardForm, iclabel_filter};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::ica::Contrast;
use crate::dsp::montage::Reference;
use crate::recording::{convert, edf_write};

#[derive(Debug, clap::Args)]
pub struct IcaArgs {
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = IcaMethod::Fastica)]
    pub method: IcaMethod,
    /// Picard's problem: fastica (Picard-O, MNE's default) or infomax (extended Infomax's).
    #[arg(long, value_enum, default_value_t = PicardForm::Fastica)]
    pub picard: PicardForm,
    /// FastICA's contrast, or Picard's density: logcosh (tanh), exp (gauss) or cube.
    #[arg(long, value_enum, default_value_t = Contrast::Tanh)]
    pub contrast: Contrast,
    /// The logcosh contrast's alpha, 1 to 2.
    #[arg(long, default_value_t = 1.0)]
    pub alpha: f64,
    /// Components: a number, a fraction of the variance (0.99), or all that carry variance.
    #[arg(long, default_value = "all")]
    pub n_components: ComponentCount,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// FastICA's tolerance (default 1e-4) or Picard's (its gradient; default 1e-7).
    #[arg(long)]
    pub tol: Option<f64>,
    /// FastICA's or Picard's iterations, or Infomax's steps, at most (default 1000, 500 and
    /// 512).
    #[arg(long)]
    pub max_iter: Option<usize>,
    /// Reference of the EEG channels before the fit (ICLabel's condition: average).
    #[arg(long, default_value = "average")]
    pub reference: Reference,
    /// Filter before the fit, e.g. hp=1,lp=100, zero-phase unless `causal`; `iclabel` for
    /// ICLabel's conditions (1-100 Hz, without the low-pass where Nyquist is at or below 100
    /// Hz); `none` for none.
    #[arg(long, default_value = "none", value_parser = parse_filter)]
    pub filter: FitFilter,
    /// Components excluded: `auto` (those the EOG and ECG channels' correlations mark, as
    /// MNE's find_bads_eog/find_bads_ecg, those MNE's find_bads_muscle marks, and those
    /// ICLabel's classes mark), a list (0,3), or `none`.
    #[arg(long, default_value = "auto")]
    pub exclude: String,
    /// The ICLabel classes that mark a component for `--exclude auto`, with the probability
    /// each needs: e.g. eye=0.8,muscle=0.9,heart=0.8 (classes brain, muscle, eye, heart,
    /// line, channel, other), or `none`.
    #[arg(long, default_value = "muscle=0.9,eye=0.9")]
    pub iclabel_marks: Thresholds,
    /// The decomposition as MNE's ICA file (its name ends in -ica.fif, as MNE requires).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The components' labels and scores as JSON.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The fit as an EEGLAB dataset (.set, one file): the fitted channels, the events, and
    /// EEGLAB's ICA fields with ICLabel's classification and the excluded components.
    #[arg(long)]
    pub set: Option<PathBuf>,
    /// The recording with the excluded components removed from the fitted channels (in its
    /// own format where it is EDF or BDF, else EDF/BDF by the name).
    #[arg(long)]
    pub clean: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
}

/// `--filter`: one given, or ICLabel's conditions (decided once the rate is known).
#[derive(Debug, Clone, Copy)]
pub enum FitFilter {
    Given(DisplayFilter),
    Iclabel,
}

fn parse_filter(s: &str) -> Result<FitFilter, String> {
    match s.trim() {
        "iclabel" => Ok(FitFilter::Iclabel),
        other => parse_given_filter(other).map(FitFilter::Given),
    }
}

fn parse_given_filter(s: &str) -> Result<DisplayFilter, String> {
    match s {
        "none" | "" => Ok(DisplayFilter::default()),
        s => {
            let f = DisplayFilter::parse(s).map_err(|e| e.to_string())?;
            // A zero-phase fit, as MNE filters before ICA, unless asked otherwise.
            Ok(DisplayFilter {
                zero_phase: f.zero_phase || !s.contains("causal"),
                ..f
            })
        }
    }
}

pub fn run(args: &IcaArgs) -> anyhow::Result<()> {
    if args.out.is_none() && args.labels.is_none() && args.clean.is_none() && args.set.is_none() {
        bail!(
            "nothing to write: give --out NAME-ica.fif, --labels FILE.json, --set FILE.set or \
             --clean FILE"
        );
    }
    if let Some(out) = &args.out {
        let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.ends_with("-ica.fif") || name.ends_with("_ica.fif")) {
            bail!(
                "--out {}: MNE reads ICA files named …-ica.fif or …_ica.fif",
                out.display()
            );
        }
    }
    let settings = IcaSettings {
        method: args.method,
        contrast: args.contrast,
        alpha: args.alpha,
        components: args.n_components,
        seed: args.seed,
        tol: args.tol.unwrap_or(args.method.default_limits().1),
        max_iter: (args.max_iter).unwrap_or(args.method.default_limits().0),
        picard: args.picard,
    };
    settings.validate()?;
    let rec = super::open(&args.file, None)?;
    let filter = match args.filter {
        FitFilter::Given(f) => f,
        FitFilter::Iclabel => iclabel_filter(&rec),
    };
    let gpu = match args.method {
        IcaMethod::Fastica | IcaMethod::Picard => super::open_gpu("ede ica", args.backend),
        IcaMethod::Infomax => None,
    };
    let backend = match gpu {
        Some(_) => Backend::Gpu,
        None => Backend::Cpu,
    };
    let fitted = Fitted::run(
        &rec,
        (&args.reference, &filter),
        &settings,
        (backend, gpu.as_ref()),
    )
    .with_context(|| format!("ICA of {}", args.file.display()))?;
    let d = &fitted.decomposition;
    let excluded = excluded(&args.exclude, &fitted, &args.iclabel_marks)?;
    eprintln!(
        "ede ica: {} channels, {} components, {} in {:.2} s ({} iterations{}); excluded {:?}",
        d.labels.len(),
        d.components(),
        d.settings.describe(),
        fitted.seconds,
        d.iterations,
        if d.converged { "" } else { ", NOT converged" },
        excluded
    );
    match &fitted.iclabel {
        Ok(_) => eprintln!("ede ica: ICLabel in {:.2} s", fitted.label_seconds),
        Err(why) => eprintln!("ede ica: no ICLabel: {why}"),
    }
    if let Some(out) = &args.out {
        let f = &fitted.data.filter;
        let extras = FifExtras {
            exclude: &excluded,
            labels: &mne_labels(&fitted.scores, fitted.iclabel.as_deref().ok()),
            highpass_hz: f.highpass.unwrap_or(0.0),
            lowpass_hz: f.lowpass.unwrap_or((d.fs / 2.0) as f32),
        };
        mne_fif::write(out, d, &extras)?;
    }
    if let Some(path) = &args.labels {
        let text =
            serde_json::to_string_pretty(&fitted.labels_file(&excluded, &args.iclabel_marks))?;
        crate::recording::write_whole(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.set {
        eeglab_set::write(path, &rec, &fitted, &excluded)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.clean {
        let data = &fitted.data;
        let cleaned = d.clean(&data.data, &excluded);
        let rows: Vec<(usize, Vec<f32>)> = (data.signals.iter().enumerate())
            .map(|(k, &i)| {
                let per = data.units[k].1;
                (
                    i,
                    cleaned
                        .row(k)
                        .iter()
                        .map(|&v| (v as f64 / per) as f32)
                        .collect(),
                )
            })
            .collect();
        let replaced: Vec<(usize, &[f32])> = rows.iter().map(|(i, r)| (*i, &r[..])).collect();
        match rec.format.edf_family() {
            Some(_) => edf_write::write_replacing(&rec, path, &replaced)?,
            None => convert::write_converted(&rec, path, &replaced)?,
        }
    }
    Ok(())
}

/// `--exclude`: auto, none, or component numbers below the count.
fn excluded(spec: &str, fitted: &Fitted, marks: &Thresholds) -> anyhow::Result<Vec<usize>> {
    let n = fitted.decomposition.components();
    match spec.trim() {
        "auto" => Ok(fitted.auto_excluded(marks)),
        "none" | "" => Ok(Vec::new()),
        list => {
            let mut out = Vec::new();
            for item in list.split(',') {
                let c: usize = (item.trim().parse())
                    .with_context(|| format!("--exclude: {item:?} is not a component number"))?;
                if c >= n {
                    bail!("--exclude: component {c} of {n} (numbered from 0)");
                }
                out.push(c);
            }
            out.sort_unstable();
            out.dedup();
            Ok(out)
        }
    }
}
