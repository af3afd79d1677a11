//! ICA of a whole recording, as MNE-Python's `ICA.fit` makes it, so that a decomposition made
//! here can be carried on with in MNE (`mne_fif`) and compared with MNE's:
//!
//! 1. The channels: the scalp electrodes (else the MEG channels) not marked bad, at one rate,
//!    under the page's reference and filter, the spans of annotations named `BAD…` left out
//!    of the fit (MNE's `reject_by_annotation`).
//! 2. Pre-whitening: each channel type divided by the standard deviation of all its values.
//! 3. PCA of the pre-whitened channels (variances with T - 1, as scikit-learn's); the
//!    components kept by count, by the fraction of variance they explain, or all that carry
//!    variance (MNE's 0.999999).
//! 4. ICA of the whitened principal components: FastICA (parallel; logcosh with alpha, exp,
//!    cube) on the CPU or the GPU, extended Infomax (CPU), or Picard (CPU) in its orthogonal
//!    (FastICA's problem) or standard (extended Infomax's) form.
//! 5. Components sorted by the variance they explain (MNE's `_ica_explained_variance`), each
//!    signed so that its largest channel weight is positive.

pub mod eeglab_set;
pub mod iclabel;
pub mod marks;
pub mod mne_fif;
pub mod muscle;
pub mod report;

use nalgebra::{DMatrix, SymmetricEigen};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::analysis::Backend;
use crate::analysis::blink::row_unit;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::ica::fastica::symmetric;
use crate::dsp::ica::infomax::{InfomaxDefaults, InfomaxParams, infomax};
use crate::dsp::ica::picard::{PicardParams, picard};
use crate::dsp::ica::{
    Contrast, FastIcaParams, IcaError, Observations, centred_products, column_blocks,
    random_rotation, rotate_centred, rotation_from,
};
use crate::dsp::montage::{self, DerivationSpec, Minus, Montage, Reference};
use crate::gpu::GpuContext;
use crate::gpu::picard::GpuPicard;
use crate::recording::{ChannelType, ReadError, Recording, most_common_rate};

/// The ICA algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum IcaMethod {
    /// FastICA, parallel (symmetric) updates.
    Fastica,
    /// Extended Infomax (EEGLAB's runica rule; what ICLabel was trained on).
    Infomax,
    /// Picard (L-BFGS with Hessian approximations): FastICA's or extended Infomax's problem
    /// solved in fewer passes over the data.
    Picard,
}

/// Which problem Picard solves (picard's `ortho`; `extended` is always on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PicardForm {
    /// Picard-O (ortho=True): FastICA's fixed points; MNE's `method='picard'` default.
    #[default]
    Fastica,
    /// Standard Picard (ortho=False): extended Infomax's fixed points.
    Infomax,
}

/// How many components: every principal component that carries variance, a number, or as many
/// as explain a fraction of the variance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ComponentCount {
    All,
    Count(usize),
    Fraction(f64),
}

impl std::str::FromStr for ComponentCount {
    type Err = String;
    /// "all", a whole number ("20"), or a fraction of the variance below 1 ("0.99").
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("all") {
            return Ok(ComponentCount::All);
        }
        if let Ok(n) = s.parse::<usize>() {
            return match n >= 2 {
                true => Ok(ComponentCount::Count(n)),
                false => Err(format!("ICA needs at least 2 components, got {n}")),
            };
        }
        match s.parse::<f64>() {
            Ok(f) if f > 0.0 && f < 1.0 => Ok(ComponentCount::Fraction(f)),
            Ok(f) => Err(format!(
                "a fraction of the variance is between 0 and 1 (exclusive), got {f}"
            )),
            Err(_) => Err(format!(
                "{s:?} is neither \"all\", a number of components nor a fraction of the variance"
            )),
        }
    }
}

impl std::fmt::Display for ComponentCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ComponentCount::All => write!(f, "all"),
            ComponentCount::Count(n) => write!(f, "{n}"),
            ComponentCount::Fraction(x) => write!(f, "{x}"),
        }
    }
}

/// What is fitted and how.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IcaSettings {
    pub method: IcaMethod,
    /// FastICA's contrast and its alpha (logcosh only).
    pub contrast: Contrast,
    pub alpha: f64,
    pub components: ComponentCount,
    pub seed: u64,
    /// FastICA's tolerance (scikit-learn's: the largest |1 - |<w, w_old>||), or Picard's (the
    /// largest entry of the relative gradient; picard's default 1e-7).
    pub tol: f64,
    /// FastICA's or Picard's iterations, or Infomax's steps, at most.
    pub max_iter: usize,
    /// Picard's form (ignored by the other methods).
    #[serde(default)]
    pub picard: PicardForm,
}

impl Default for IcaSettings {
    /// MNE's defaults: FastICA, logcosh, alpha 1, tolerance 1e-4, 1000 iterations.
    fn default() -> Self {
        IcaSettings {
            method: IcaMethod::Fastica,
            contrast: Contrast::Tanh,
            alpha: 1.0,
            components: ComponentCount::All,
            seed: 1,
            tol: 1e-4,
            max_iter: 1000,
            picard: PicardForm::Fastica,
        }
    }
}

impl IcaMethod {
    /// The iterations (steps) at most and the tolerance each method defaults to: MNE's
    /// (scikit-learn's FastICA 1000 and 1e-4; runica's 512 steps; picard's 500 and 1e-7).
    pub fn default_limits(self) -> (usize, f64) {
        match self {
            IcaMethod::Fastica => (1000, 1e-4),
            IcaMethod::Infomax => (512, 1e-4),
            IcaMethod::Picard => (500, 1e-7),
        }
    }
}

impl IcaSettings {
    fn fastica(&self, components: usize) -> FastIcaParams {
        FastIcaParams {
            contrast: self.contrast,
            alpha: self.alpha,
            tol: self.tol,
            max_iter: self.max_iter,
            seed: self.seed,
            components: Some(components),
            ..FastIcaParams::default()
        }
    }

    pub fn validate(&self) -> Result<(), IcaError> {
        if self.method == IcaMethod::Picard && self.alpha != 1.0 {
            return Err(IcaError::Params(format!(
                "Picard's densities have a fixed alpha (logcosh 1); got alpha {}",
                self.alpha
            )));
        }
        self.fastica(2).validate()
    }

    fn picard_params(&self) -> PicardParams {
        PicardParams {
            density: self.contrast,
            ortho: self.picard == PicardForm::Fastica,
            extended: true,
            tol: self.tol,
            max_iter: self.max_iter,
            ..PicardParams::default()
        }
    }

    fn contrast_name(&self) -> &'static str {
        match self.contrast {
            Contrast::Tanh => "logcosh",
            Contrast::Cube => "cube",
            Contrast::Gauss => "exp",
        }
    }

    /// In words, for a status line and a file's provenance.
    pub fn describe(&self) -> String {
        match self.method {
            IcaMethod::Fastica => format!(
                "FastICA, {} contrast{}, tol {:e}, seed {}",
                self.contrast_name(),
                match self.contrast {
                    Contrast::Tanh => format!(" (alpha {})", self.alpha),
                    _ => String::new(),
                },
                self.tol,
                self.seed
            ),
            IcaMethod::Infomax => format!("extended Infomax, seed {}", self.seed),
            IcaMethod::Picard => format!(
                "Picard{} ({} problem), {} density, tol {:e}, seed {}",
                match self.picard {
                    PicardForm::Fastica => "-O",
                    PicardForm::Infomax => "",
                },
                match self.picard {
                    PicardForm::Fastica => "FastICA's",
                    PicardForm::Infomax => "extended Infomax's",
                },
                self.contrast_name(),
                self.tol,
                self.seed
            ),
        }
    }
}

/// ICLabel's conditions as a filter of `rec`'s brain channels: 1-100 Hz, zero-phase, 4th
/// order; without the low-pass where Nyquist is at or below 100 Hz (the data hold nothing above
/// it).
pub fn iclabel_filter(rec: &Recording) -> DisplayFilter {
    let brain = rec.brain_signals();
    let fs = (brain.first()).map_or(rec.most_common_rate(), |&i| rec.signals[i].fs);
    DisplayFilter {
        highpass: Some(1.0),
        lowpass: (100.0 < fs / 2.0).then_some(100.0),
        highpass_order: 4,
        lowpass_order: 4,
        zero_phase: true,
        ..Default::default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IcaJobError {
    #[error("{0}")]
    Selection(String),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Ica(#[from] IcaError),
    #[error("the filter cannot be applied: {0}")]
    Filter(String),
}

/// The channels an ICA is fitted on, read whole under a reference and a filter.
#[derive(Debug, Clone)]
pub struct IcaData {
    /// Indices in `Recording::signals`.
    pub signals: Vec<usize>,
    pub labels: Vec<String>,
    pub kinds: Vec<ChannelType>,
    pub positions: Vec<Option<[f64; 3]>>,
    /// Each row's unit (uV, fT, fT/cm) and how many of them one of the signal's units is.
    pub units: Vec<(&'static str, f64)>,
    pub fs: f64,
    /// Every sample of every channel, in `units`.
    pub data: Observations,
    /// The sample spans fitted on: all but the `BAD…` annotations'.
    pub good: Vec<(usize, usize)>,
    pub reference: Reference,
    pub filter: DisplayFilter,
}

impl IcaData {
    /// The recording's good scalp electrodes (else its MEG channels) at their common rate,
    /// under `reference` and `filter` (zero-phase or causal as the filter says).
    pub fn load(
        rec: &Recording,
        reference: &Reference,
        filter: &DisplayFilter,
    ) -> Result<Self, IcaJobError> {
        let scalp = rec.scalp_electrodes();
        let meg = |i: &usize| matches!(rec.signals[*i].kind, ChannelType::Mag | ChannelType::Grad);
        let good = |i: &usize| {
            let s = &rec.signals[*i];
            !s.bad && s.samples > 0 && row_unit(&s.unit).is_some()
        };
        let mut picks: Vec<usize> = scalp.into_iter().filter(good).collect();
        if picks.len() < 2 {
            picks = (0..rec.signals.len()).filter(meg).filter(good).collect();
        }
        let Some(fs) = most_common_rate(picks.iter().map(|&i| rec.signals[i].fs)) else {
            return Err(IcaJobError::Selection(
                "the recording has no good scalp electrodes or MEG channels to decompose".into(),
            ));
        };
        picks.retain(|&i| (rec.signals[i].fs - fs).abs() < 1e-9);
        if picks.len() < 2 {
            return Err(IcaJobError::Selection(format!(
                "ICA needs at least 2 good channels at one rate; the recording has {} at {fs} Hz",
                picks.len()
            )));
        }
        filter
            .validate_at(fs)
            .map_err(|e| IcaJobError::Filter(e.to_string()))?;
        let montage = Montage {
            name: "ICA channels".into(),
            derivations: (picks.iter())
                .map(|&i| {
                    let l = &rec.signals[i].label;
                    DerivationSpec::new(l.clone(), l.clone(), Minus::None)
                })
                .collect(),
        };
        let resolved = montage::resolve(rec, &montage, reference)
            .map_err(|e| IcaJobError::Selection(e.to_string()))?;
        let derivations = resolved.derivations;
        let signals: Vec<usize> = derivations.iter().map(|d| d.plus).collect();
        let samples = (derivations.iter().flat_map(|d| d.sources()))
            .map(|c| rec.signals[c].samples)
            .min()
            .unwrap_or(0);
        let group: Vec<usize> = (0..derivations.len()).collect();
        let rows =
            montage::derive_filtered(rec, &derivations, &group, 0, samples, (0, samples), |_| {
                *filter
            })?;
        let units: Vec<(&'static str, f64)> = (signals.iter())
            .map(|&i| row_unit(&rec.signals[i].unit).unwrap_or(("uV", 1.0)))
            .collect();
        let mut data = Vec::with_capacity(rows.len() * samples);
        for (row, &(_, k)) in rows.iter().zip(&units) {
            data.extend(row.iter().map(|&v| (v as f64 * k) as f32));
        }
        Ok(IcaData {
            labels: derivations.iter().map(|d| d.label.clone()).collect(),
            kinds: signals.iter().map(|&i| rec.signals[i].kind).collect(),
            positions: signals.iter().map(|&i| rec.signals[i].position).collect(),
            good: good_spans(rec, fs, samples),
            signals,
            units,
            fs,
            data: Observations::new(derivations.len(), samples, data),
            reference: reference.clone(),
            filter: *filter,
        })
    }

    /// The samples fitted on: the good spans' columns (all of them without `BAD…` spans; not
    /// copied then: an hour of 64 channels is 236 MB).
    pub fn fitted(&self) -> std::borrow::Cow<'_, Observations> {
        if self.good == [(0, self.data.cols)] {
            return std::borrow::Cow::Borrowed(&self.data);
        }
        let cols: usize = self.good.iter().map(|(a, b)| b - a).sum();
        let mut data = Vec::with_capacity(self.data.rows * cols);
        for i in 0..self.data.rows {
            let row = self.data.row(i);
            for &(a, b) in &self.good {
                data.extend_from_slice(&row[a..b]);
            }
        }
        std::borrow::Cow::Owned(Observations::new(self.data.rows, cols, data))
    }
}

/// The sample spans outside annotations whose text starts with "BAD" (any case), merged.
fn good_spans(rec: &Recording, fs: f64, samples: usize) -> Vec<(usize, usize)> {
    let mut bad: Vec<(usize, usize)> = (rec.annotations.iter())
        .filter(|a| a.text.trim().to_ascii_uppercase().starts_with("BAD"))
        .map(|a| {
            let start = (a.onset * fs).floor().max(0.0) as usize;
            let end = ((a.onset + a.duration.max(0.0)) * fs).ceil();
            (start.min(samples), (end.max(0.0) as usize).min(samples))
        })
        .filter(|(a, b)| a < b)
        .collect();
    bad.sort();
    let mut good = Vec::new();
    let mut at = 0;
    for (a, b) in bad {
        if a > at {
            good.push((at, a));
        }
        at = at.max(b);
    }
    if at < samples {
        good.push((at, samples));
    }
    good
}

/// A fitted decomposition of `n` channels into `r` components, in the channels' units
/// (`IcaData::units`), with MNE's representation of it beside (`mne_fif` writes that).
#[derive(Debug, Clone)]
pub struct Decomposition {
    pub labels: Vec<String>,
    pub kinds: Vec<ChannelType>,
    pub positions: Vec<Option<[f64; 3]>>,
    pub units: Vec<&'static str>,
    pub fs: f64,
    pub settings: IcaSettings,
    /// W, r x n: sources = W (x - means).
    pub unmixing: DMatrix<f64>,
    /// A, n x r: the components' maps; x - means = A sources on the fitted subspace.
    pub mixing: DMatrix<f64>,
    pub means: Vec<f64>,
    /// The fraction of the pre-whitened channels' variance each component explains alone.
    pub explained_variance: Vec<f64>,
    /// MNE's pre-whitener: per channel, its type's standard deviation (in `units`).
    pub pre_whitener: Vec<f64>,
    /// MNE's PCA of the pre-whitened channels: components (n x n, rows), mean, variances.
    pub pca_components: DMatrix<f64>,
    pub pca_mean: Vec<f64>,
    pub pca_explained_variance: Vec<f64>,
    /// MNE's `unmixing_matrix_` (r x r): sources = U pca_components[..r] (x / pre - pca_mean).
    pub mne_unmixing: DMatrix<f64>,
    pub samples: usize,
    pub iterations: usize,
    pub converged: bool,
}

/// The principal components of the pre-whitened channels, MNE's starting point.
pub struct Pca {
    pub pre_whitener: Vec<f64>,
    /// Pre-whitened channels, f32, n x T.
    pub x: Observations,
    pub mean: Vec<f64>,
    /// Eigenvectors as rows (n x n), largest variance first; each signed so that its score of
    /// largest magnitude is positive (MNE's convention).
    pub components: DMatrix<f64>,
    /// Variances along them, with T - 1.
    pub variances: Vec<f64>,
    /// The centred channels' scores on the components (n x T): computed for the signs, kept
    /// for the whitening.
    scores: Observations,
}

impl Pca {
    pub fn of(x: &Observations, kinds: &[ChannelType]) -> Result<Pca, IcaError> {
        crate::dsp::ica::check_shape(x)?;
        let (n, t) = (x.rows, x.cols);
        let mut pre_whitener = vec![1.0f64; n];
        let mut types = kinds.to_vec();
        types.dedup();
        // Per-row sums in parallel, added in row order (the same numbers as one pass).
        let row_sums: Vec<f64> = (0..n).into_par_iter().map(|i| sum(x.row(i))).collect();
        for kind in types {
            let rows: Vec<usize> = (0..n).filter(|&i| kinds[i] == kind).collect();
            let count = (rows.len() * t) as f64;
            let mean = rows.iter().map(|&i| row_sums[i]).sum::<f64>() / count;
            let squares: Vec<f64> = (rows.par_iter())
                .map(|&i| {
                    x.row(i)
                        .iter()
                        .map(|&v| (v as f64 - mean).powi(2))
                        .sum::<f64>()
                })
                .collect();
            let var = squares.iter().sum::<f64>() / count;
            if !var.is_finite() {
                return Err(IcaError::NotFinite);
            }
            let sd = if var > 0.0 { var.sqrt() } else { 1.0 };
            rows.iter().for_each(|&i| pre_whitener[i] = sd);
        }
        let mut data = vec![0.0f32; n * t];
        data.par_chunks_mut(t).enumerate().for_each(|(i, row)| {
            let sd = pre_whitener[i];
            for (o, &v) in row.iter_mut().zip(x.row(i)) {
                *o = (v as f64 / sd) as f32;
            }
        });
        let x = Observations::new(n, t, data);
        let mean: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| sum(x.row(i)) / t as f64)
            .collect();
        let cov = centred_products(&x, &mean, &column_blocks(t, 1024), 1.0 / (t - 1) as f64);
        let eig = SymmetricEigen::new(DMatrix::from_row_slice(n, n, &cov));
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        if eig.eigenvalues[order[0]] <= 0.0 {
            return Err(IcaError::Flat);
        }
        let mut components = DMatrix::zeros(n, n);
        for (row, &k) in order.iter().enumerate() {
            components.set_row(row, &eig.eigenvectors.column(k).transpose());
        }
        // MNE's sign (scikit-learn's old `svd_flip`, decided on the scores): each component's
        // score of largest magnitude is positive. Extended Infomax starts from the identity in
        // these coordinates, and where it ends depends on that start.
        let mut scores = rotate_centred(&components, &x, &mean);
        let flipped: Vec<bool> = (scores.data.par_chunks_mut(t))
            .map(|row| {
                let peak = (row.iter()).fold(0.0f32, |m, &v| if v.abs() > m.abs() { v } else { m });
                if peak < 0.0 {
                    row.iter_mut().for_each(|v| *v = -*v);
                }
                peak < 0.0
            })
            .collect();
        for (k, &flip) in flipped.iter().enumerate() {
            if flip {
                components.row_mut(k).neg_mut();
            }
        }
        let variances = order.iter().map(|&k| eig.eigenvalues[k].max(0.0)).collect();
        Ok(Pca {
            pre_whitener,
            x,
            mean,
            components,
            variances,
            scores,
        })
    }

    /// How many components `count` keeps (MNE's `_exp_var_ncomp`: the fewest whose cumulative
    /// fraction of the variance exceeds it; all that carry variance: 0.999999).
    pub fn kept(&self, count: ComponentCount) -> Result<usize, IcaError> {
        let n = self.variances.len();
        let by_fraction = |f: f64| {
            let total: f64 = self.variances.iter().sum();
            let mut cum = 0.0;
            let within = (self.variances.iter())
                .take_while(|&&v| {
                    cum += v;
                    cum / total <= f
                })
                .count();
            (within + 1).min(n)
        };
        let r = match count {
            ComponentCount::All => by_fraction(0.999999),
            ComponentCount::Count(k) if k > n => {
                return Err(IcaError::Params(format!(
                    "{k} components asked of {n} channels"
                )));
            }
            ComponentCount::Count(k) => k,
            ComponentCount::Fraction(f) => by_fraction(f),
        };
        if r < 2 {
            return Err(IcaError::Params(format!(
                "{count} keeps {r} component: one principal component explains nearly all the \
                 variance; ask for more"
            )));
        }
        Ok(r)
    }

    /// The first `r` principal components whitened (unit variance with T - 1), r x T.
    pub fn whitened(&self, r: usize) -> Observations {
        let t = self.scores.cols;
        let mut z = self.scores.data[..r * t].to_vec();
        z.par_chunks_mut(t).enumerate().for_each(|(i, row)| {
            let scale = 1.0 / self.variances[i].sqrt();
            row.iter_mut().for_each(|v| *v = (*v as f64 * scale) as f32);
        });
        Observations::new(r, t, z)
    }

    /// K = D^-1/2 P_r (r x n).
    fn whitener(&self, r: usize) -> DMatrix<f64> {
        let mut k = self.components.rows(0, r).into_owned();
        for (i, mut row) in k.row_iter_mut().enumerate() {
            row /= self.variances[i].sqrt();
        }
        k
    }

    /// The decomposition whose rotation of the whitened components is `w` (r x r, invertible).
    pub fn finish(&self, w: &DMatrix<f64>, labels: &IcaData, fit: Fit) -> Decomposition {
        let r = w.nrows();
        let k = self.whitener(r);
        let mut k_inv = self.components.rows(0, r).transpose();
        for (i, mut col) in k_inv.column_iter_mut().enumerate() {
            col *= self.variances[i].sqrt();
        }
        let w_inv = w.clone().try_inverse().unwrap_or_else(|| {
            w.clone()
                .pseudo_inverse(1e-12)
                .expect("SVD of a finite matrix")
        });
        let (mut u_pw, mut a_pw) = (w * &k, &k_inv * w_inv);
        // MNE's order: a component's share of the variance, |a_k|^2 var(s_k); the sources are
        // w times whitened data of unit variance, so var(s_k) = |w_k|^2.
        let var: Vec<f64> = (0..r)
            .map(|c| a_pw.column(c).norm_squared() * w.row(c).norm_squared())
            .collect();
        let mut order: Vec<usize> = (0..r).collect();
        order.sort_by(|&a, &b| var[b].total_cmp(&var[a]));
        u_pw = u_pw.select_rows(&order);
        a_pw = a_pw.select_columns(&order);
        let mut mne_unmixing = w.select_rows(&order);
        for c in 0..r {
            let col = a_pw.column(c);
            let biggest = col
                .iter()
                .fold(0.0f64, |m, &e| if e.abs() > m.abs() { e } else { m });
            if biggest < 0.0 {
                u_pw.row_mut(c).neg_mut();
                a_pw.column_mut(c).neg_mut();
                mne_unmixing.row_mut(c).neg_mut();
            }
        }
        // U = w D^-1/2 acts on the PCA scores (MNE divides its whitened unmixing by the norms).
        for (j, mut col) in mne_unmixing.column_iter_mut().enumerate() {
            col /= self.variances[j].sqrt();
        }
        let total: f64 = self.variances.iter().sum();
        let pre = &self.pre_whitener;
        let mut unmixing = u_pw;
        for (j, mut col) in unmixing.column_iter_mut().enumerate() {
            col /= pre[j];
        }
        let mut mixing = a_pw;
        for (i, mut row) in mixing.row_iter_mut().enumerate() {
            row *= pre[i];
        }
        Decomposition {
            labels: labels.labels.clone(),
            kinds: labels.kinds.clone(),
            positions: labels.positions.clone(),
            units: labels.units.iter().map(|u| u.0).collect(),
            fs: labels.fs,
            settings: fit.settings,
            explained_variance: order.iter().map(|&c| var[c] / total).collect(),
            unmixing,
            mixing,
            means: self.mean.iter().zip(pre).map(|(m, p)| m * p).collect(),
            pre_whitener: pre.clone(),
            pca_components: self.components.clone(),
            pca_mean: self.mean.clone(),
            pca_explained_variance: self.variances.clone(),
            mne_unmixing,
            samples: self.x.cols,
            iterations: fit.iterations,
            converged: fit.converged,
        }
    }
}

/// How a rotation was found.
#[derive(Debug, Clone, Copy)]
pub struct Fit {
    pub settings: IcaSettings,
    pub iterations: usize,
    pub converged: bool,
}

fn sum(x: &[f32]) -> f64 {
    x.iter().map(|&v| v as f64).sum()
}

/// FastICA's iterations on the GPU before the CPU takes over an unconverged fit.
const GPU_ITERATIONS: usize = 300;

/// Decomposes `data` (its good spans) with `settings` on `backend` (FastICA runs on the GPU
/// where one is given, Picard where it has f64 in shaders; Infomax on the CPU). `warm`: a previous decomposition of
/// the same channels whose unmixing starts FastICA or Picard (a refit after a parameter
/// change).
pub fn decompose(
    data: &IcaData,
    settings: &IcaSettings,
    (backend, gpu): (Backend, Option<&GpuContext>),
    warm: Option<&Decomposition>,
) -> Result<Decomposition, IcaJobError> {
    settings.validate()?;
    let pca = Pca::of(&data.fitted(), &data.kinds)?;
    let r = pca.kept(settings.components)?;
    let z = pca.whitened(r);
    let start = || {
        let k_inv = {
            let mut m = pca.components.rows(0, r).transpose();
            for (i, mut col) in m.column_iter_mut().enumerate() {
                col *= pca.variances[i].sqrt();
            }
            m
        };
        // The previous unmixing, in pre-whitened units, as a rotation of this whitening.
        (warm.filter(|w| w.labels == data.labels && w.unmixing.nrows() == r))
            .and_then(|w| {
                let mut u = w.unmixing.clone();
                for (j, mut col) in u.column_iter_mut().enumerate() {
                    col *= pca.pre_whitener[j];
                }
                rotation_from(&k_inv, &u)
            })
            .unwrap_or_else(|| random_rotation(r, settings.seed))
    };
    let (w, iterations, converged) = match settings.method {
        IcaMethod::Fastica => {
            let p = settings.fastica(r);
            match (backend, gpu) {
                (Backend::Gpu, Some(ctx)) => {
                    // The device's f32 polynomial decorrelation cannot settle components
                    // with no FastICA fixed point (Gaussian ones: noise filling a
                    // rank-deficient recording): where it has not converged within
                    // GPU_ITERATIONS, the CPU goes on from where it stopped, so that a fit is
                    // never left unconverged for that.
                    let on_gpu = FastIcaParams {
                        max_iter: p.max_iter.min(GPU_ITERATIONS),
                        ..p
                    };
                    let (w, done, converged) = crate::gpu::ica::GpuFastIca::new(ctx)
                        .symmetric(&z, &on_gpu, &start())
                        .map_err(|e| IcaError::Gpu(e.to_string()))?;
                    match converged || done >= p.max_iter {
                        true => (w, done, converged),
                        false => {
                            let rest = FastIcaParams {
                                max_iter: p.max_iter - done,
                                ..p
                            };
                            let (w, more, converged) = symmetric(&z, &rest, w);
                            (w, done + more, converged)
                        }
                    }
                }
                _ => symmetric(&z, &p, start()),
            }
        }
        IcaMethod::Infomax => infomax(
            &z,
            &InfomaxParams {
                extended: true,
                max_iter: settings.max_iter,
                seed: settings.seed,
                defaults: InfomaxDefaults::Runica,
            },
        )?,
        IcaMethod::Picard => {
            let device = match (backend, gpu) {
                (Backend::Gpu, Some(ctx)) => GpuPicard::new(ctx).filter(|g| g.takes(z.cols)),
                _ => None,
            };
            match device {
                Some(device) => device.picard(&z, &settings.picard_params(), start())?,
                None => picard(&z, &settings.picard_params(), start())?,
            }
        }
    };
    let fit = Fit {
        settings: *settings,
        iterations,
        converged,
    };
    Ok(pca.finish(&w, data, fit))
}

impl Decomposition {
    pub fn components(&self) -> usize {
        self.unmixing.nrows()
    }

    /// The sources of the components `rows` over `x` (the fitted channels, any samples).
    pub fn sources(&self, rows: &[usize], x: &Observations) -> Observations {
        rotate_centred(&self.unmixing.select_rows(rows), x, &self.means)
    }

    /// `x` without the components `excluded`: x - A_e S_e (MNE's `ICA.apply` with every
    /// principal component kept).
    pub fn clean(&self, x: &Observations, excluded: &[usize]) -> Observations {
        let mut out = x.clone();
        if excluded.is_empty() {
            return out;
        }
        let s = self.sources(excluded, x);
        let a = self.mixing.select_columns(excluded);
        let back = rotate_centred(&a, &s, &vec![0.0; excluded.len()]);
        out.data
            .iter_mut()
            .zip(&back.data)
            .for_each(|(v, b)| *v -= b);
        out
    }

    /// A fingerprint of the maps (textures and matches are made once per decomposition).
    pub fn fingerprint(&self) -> u64 {
        (self.mixing.iter()).fold(self.mixing.ncols() as u64, |h, v| {
            h.rotate_left(5) ^ v.to_bits()
        })
    }
}
