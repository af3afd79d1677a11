//! Eye-blink detection and removal with ICA, after the thesis
//! (../shared/papers/ica-blink-removal-gpgpu-thesis-excerpt.txt, `blinkRemove`). Its chapters
//! on the detector are missing; what is here is designed to work and says so where it chooses.
//!
//! Per window (10 s by default, lengthened to hold `samples_per_channel_sq` n^2 samples;
//! consecutive windows overlap by half):
//! 1. **Candidates**: each frontal bipolar derivation (FP1-F3, FP1-F7, FP2-F4, FP2-F8, from the
//!    channel labels) is band-passed to 1-8 Hz by a Daubechies-4 wavelet decomposition
//!    (`dwt::band`); a candidate is a positive excursion above `candidate_z` robust SDs that
//!    at least half of the derivations show within `hit_s`.
//! 2. **ICA** of all channels of the window (FastICA or JADE; any function can be passed in,
//!    so the GPU and warm starts plug in here).
//! 3. **Confirmation on the components**: each component's share of the summed frontal
//!    derivations, A_c (frontal) s_c, runs through the same detector. A component carries
//!    blinks when at least `min_match` of its own excursions above `component_z` coincide with
//!    candidates and explain at least `min_share` of their height there. Candidates no such
//!    component carries are rejected (the thesis's defence against FIRDA and triphasic
//!    waves); the excursions of a confirmed component are the blinks, less those under
//!    `min_relative_height` of its typical blink (the band-pass's side lobes).
//! 4. **Removal**: the confirmed components' contribution A_c s_c is subtracted from every
//!    channel not in the keep list. With `Scope::Blinks` (the default) it is subtracted only
//!    over the blinks' extent, plus `margin_s`, faded in and out over `taper_s`: the components
//!    also carry frontal EEG, and outside blinks there is nothing to remove. `Scope::Window`
//!    subtracts them over the whole window, as the thesis does. Over the blinks, each channel's
//!    weights on the removed components are refitted there by least squares (`correction`).
//! 5. **Joining**: overlapping windows' corrections are averaged with sin^2 weights (times
//!    their masks), so the output has no seams; windows that remove nothing at a sample do not
//!    vote there.
//!
//! A window without candidates is returned unchanged, without running ICA.

pub mod detect;
pub mod dwt;
pub mod simulate;
pub mod stream;

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::dsp::ica::{Ica, IcaError, Observations};
use crate::dsp::montage::electrode_name;
use detect::{Peak, peaks, robust_sigma};

/// The frontal derivations the thesis recommends, in 10-20 names (after `electrode_name`).
pub const FRONTAL_PAIRS: [(&str, &str); 4] =
    [("FP1", "F3"), ("FP1", "F7"), ("FP2", "F4"), ("FP2", "F8")];
/// Used when none of `FRONTAL_PAIRS` exists: midline and 10-10 anterior-frontal sites.
pub const FALLBACK_PAIRS: [(&str, &str); 7] = [
    ("FPZ", "FZ"),
    ("FPZ", "F3"),
    ("FPZ", "F4"),
    ("AF3", "F3"),
    ("AF4", "F4"),
    ("AF7", "F7"),
    ("AF8", "F8"),
];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BlinkError {
    #[error(
        "no frontal channels for blink detection among {labels}: it needs Fp1 with F3 or F7, or \
         Fp2 with F4 or F8 (10-20 names, also 'EEG Fp1-Ref' style; or Fpz with Fz, AF3/AF4/AF7/AF8 \
         with F3/F4/F7/F8). Rename the channels or name the detection channels yourself \
         (--detect-channels Fp1-F3,EOG1)"
    )]
    NoFrontal { labels: String },
    #[error("no channel named {0:?} (for blink detection)")]
    UnknownChannel(String),
    #[error("the window ({window_s} s) is longer than the recording ({length_s:.3} s)")]
    WindowTooLong { window_s: f64, length_s: f64 },
    #[error(
        "channel {0} is flat (constant) in {1}: ICA cannot use it. Leave it out of the analysis \
         by naming it in the keep list"
    )]
    Flat(String, String),
    #[error("{0}")]
    Params(String),
    #[error("cancelled")]
    Cancelled,
    #[error("ICA failed in the window at {at_s:.1} s: {source}")]
    Ica { at_s: f64, source: IcaError },
}

/// Whether confirmed components are removed over the blinks only or over the whole window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Blinks,
    Window,
}

/// Every threshold of the detector and the removal. Defaults in `Default`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlinkParams {
    /// ICA window, seconds (10); lengthened to hold `samples_per_channel_sq` n^2 samples.
    pub window_s: f64,
    /// ICA needs samples in proportion to the square of the channel count (EEGLAB's rule of
    /// thumb asks for 20-30 n^2 over a whole recording). A window shorter than this many n^2
    /// samples is lengthened (2.5: 32 channels at 128 Hz get 20 s; 25 channels at 500 Hz
    /// keep the thesis's 10 s). 0 keeps `window_s` as it is.
    pub samples_per_channel_sq: f64,
    /// Step between windows, seconds; `None` for half a window.
    pub hop_s: Option<f64>,
    /// The blink band of the wavelet detector, Hz (1-8).
    pub band_hz: (f64, f64),
    /// Candidate threshold on the frontal derivations, in robust SDs (4).
    pub candidate_z: f64,
    /// Fraction of the derivations that must show a candidate (0.5).
    pub min_derivations: f64,
    /// Threshold on a component's frontal share, in its robust SDs (5).
    pub component_z: f64,
    /// Fraction of a component's own excursions that must be candidate blinks for it to be
    /// removed (0.5): a blink source's excursions are blinks, a rhythmic or noisy one's are
    /// not.
    pub min_match: f64,
    /// Fraction of a candidate's height the component must explain (0.5).
    pub min_share: f64,
    /// Excursions of a confirmed component lower than this fraction of its typical (median)
    /// blink height are not blinks (0.4).
    pub min_relative_height: f64,
    /// At most this many components are removed per window (3).
    pub max_components: usize,
    /// Peaks this close (s) are one event; also the hit tolerance of matching (0.15).
    pub hit_s: f64,
    /// Peaks closer than this (s) are one blink (0.3).
    pub min_separation_s: f64,
    /// A blink's extent: where its band-passed height falls below this fraction (0.2).
    pub extent: f64,
    /// Added to each side of a blink's extent before removal, seconds (0.1).
    pub margin_s: f64,
    /// Raised-cosine fade at each side of the removal, seconds (0.1).
    pub taper_s: f64,
    pub scope: Scope,
    /// On a stream, a component whose topography is this close (|cos| of the mixing columns)
    /// to one removed in the previous window is the same blink source and is removed without
    /// the `min_match` test (0.95): a window whose few blinks sit badly for the candidate
    /// detector does not let them through.
    #[serde(default = "default_track_cos")]
    pub track_cos: f64,
}

fn default_track_cos() -> f64 {
    BlinkParams::default().track_cos
}

impl Default for BlinkParams {
    fn default() -> Self {
        BlinkParams {
            window_s: 10.0,
            samples_per_channel_sq: 2.5,
            hop_s: None,
            band_hz: (1.0, 8.0),
            candidate_z: 4.0,
            min_derivations: 0.5,
            component_z: 5.0,
            min_match: 0.5,
            min_share: 0.5,
            min_relative_height: 0.4,
            max_components: 3,
            hit_s: 0.15,
            min_separation_s: 0.3,
            extent: 0.2,
            margin_s: 0.1,
            taper_s: 0.1,
            scope: Scope::Blinks,
            track_cos: 0.95,
        }
    }
}

impl BlinkParams {
    /// The window in samples for `channels` channels at `fs`, never longer than `total`
    /// samples unless `window_s` itself is.
    pub fn window_samples(&self, channels: usize, fs: f64, total: usize) -> usize {
        let asked = (self.window_s * fs).round() as usize;
        let needed = (self.samples_per_channel_sq * (channels * channels) as f64).ceil() as usize;
        asked.max(needed.min(total))
    }

    /// The hop in samples for a window of `window` samples.
    pub fn hop_samples(&self, window: usize, fs: f64) -> usize {
        match self.hop_s {
            Some(h) => ((h * fs).round() as usize).clamp(1, window.max(1)),
            None => (window / 2).max(1),
        }
    }

    pub fn validate(&self, fs: f64) -> Result<(), BlinkError> {
        let bad = |m: String| Err(BlinkError::Params(m));
        if self.window_s * fs < 64.0 || !self.window_s.is_finite() {
            return bad(format!(
                "the window must hold at least 64 samples ({:.2} s at {fs} Hz), got {} s",
                64.0 / fs,
                self.window_s
            ));
        }
        if let Some(hop) = self.hop_s
            && !(hop > 0.0 && hop <= self.window_s)
        {
            return bad(format!("the hop must be in (0, window], got {hop} s"));
        }
        if !(self.samples_per_channel_sq >= 0.0 && self.samples_per_channel_sq <= 1e3) {
            return bad(format!(
                "samples per channel squared must be within 0..1000, got {}",
                self.samples_per_channel_sq
            ));
        }
        let (lo, hi) = self.band_hz;
        if dwt::levels_in_band(fs, (lo, hi)).is_empty() {
            return bad(format!(
                "the band {lo}-{hi} Hz holds no wavelet level at {fs} Hz (centres at 0.75 fs/2^j)"
            ));
        }
        for (name, v) in [
            ("candidate threshold", self.candidate_z),
            ("component threshold", self.component_z),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return bad(format!("the {name} must be positive, got {v}"));
            }
        }
        for (name, v) in [
            ("fraction of derivations", self.min_derivations),
            ("match fraction", self.min_match),
            ("share", self.min_share),
            ("relative height", self.min_relative_height),
            ("extent", self.extent),
            ("tracking similarity", self.track_cos),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("the {name} must be within 0..1, got {v}"));
            }
        }
        for (name, v) in [
            ("hit tolerance", self.hit_s),
            ("separation", self.min_separation_s),
            ("margin", self.margin_s),
            ("taper", self.taper_s),
        ] {
            if !(v >= 0.0 && v < self.window_s) {
                return bad(format!("the {name} must be within 0..window, got {v} s"));
            }
        }
        Ok(())
    }
}

/// The channels of a blink removal: ICA runs on all of them; detection on `derivations`
/// (anode, optional cathode, indices into the channels); `keep[i]` channels are not changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Channels {
    pub labels: Vec<String>,
    pub derivations: Vec<(usize, Option<usize>)>,
    pub keep: Vec<bool>,
}

impl Channels {
    /// The frontal pairs present among `labels` (`FRONTAL_PAIRS`, else `FALLBACK_PAIRS`), or
    /// the named ones: each entry a label or "A-B" of two labels. `keep` names channels to
    /// leave as they are; by default EOG channels.
    pub fn resolve(
        labels: &[String],
        detect: Option<&[String]>,
        keep: Option<&[String]>,
    ) -> Result<Self, BlinkError> {
        let find = |name: &str| -> Option<usize> {
            let exact = labels
                .iter()
                .position(|l| l.trim().eq_ignore_ascii_case(name.trim()));
            exact.or_else(|| {
                let want = electrode_name(name);
                labels.iter().position(|l| electrode_name(l) == want)
            })
        };
        let derivations = match detect {
            Some(names) => names
                .iter()
                .map(|n| {
                    if let Some(i) = find(n) {
                        return Ok((i, None));
                    }
                    match n.split_once('-') {
                        Some((a, b)) => match (find(a), find(b)) {
                            (Some(a), Some(b)) => Ok((a, Some(b))),
                            _ => Err(BlinkError::UnknownChannel(n.clone())),
                        },
                        None => Err(BlinkError::UnknownChannel(n.clone())),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => {
                let present = |pairs: &[(&str, &str)]| -> Vec<(usize, Option<usize>)> {
                    let by_name = |n: &str| labels.iter().position(|l| electrode_name(l) == n);
                    (pairs.iter())
                        .filter_map(|(a, b)| Some((by_name(a)?, Some(by_name(b)?))))
                        .collect()
                };
                let mut d = present(&FRONTAL_PAIRS);
                if d.is_empty() {
                    d = present(&FALLBACK_PAIRS);
                }
                d
            }
        };
        if derivations.is_empty() {
            return Err(BlinkError::NoFrontal {
                labels: summarize(labels),
            });
        }
        let keep = match keep {
            Some(names) => {
                let mut k = vec![false; labels.len()];
                for n in names.iter().filter(|n| !n.trim().is_empty()) {
                    k[find(n).ok_or_else(|| BlinkError::UnknownChannel(n.clone()))?] = true;
                }
                k
            }
            None => labels.iter().map(|l| is_eog(l)).collect(),
        };
        Ok(Channels {
            labels: labels.to_vec(),
            derivations,
            keep,
        })
    }

    /// "FP1-F3" style names of the derivations.
    pub fn derivation_names(&self) -> Vec<String> {
        (self.derivations.iter())
            .map(|&(a, b)| match b {
                Some(b) => format!("{}-{}", self.labels[a], self.labels[b]),
                None => self.labels[a].clone(),
            })
            .collect()
    }
}

pub fn is_eog(label: &str) -> bool {
    let l = label.to_ascii_uppercase();
    l.contains("EOG")
}

fn summarize(labels: &[String]) -> String {
    let shown: Vec<&str> = labels.iter().take(12).map(String::as_str).collect();
    let more = labels.len().saturating_sub(12);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// A detected blink, samples from the start of the data handed in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Blink {
    pub peak: usize,
    pub start: usize,
    pub end: usize,
}

/// What one window gave.
#[derive(Debug, Clone)]
pub struct WindowResult {
    /// First sample of the window.
    pub start: usize,
    pub len: usize,
    /// Candidate peaks on the frontal derivations (window samples).
    pub candidates: Vec<usize>,
    /// The ICA, unless the window had no candidates.
    pub ica: Option<Ica>,
    /// Components removed (rows of the ICA's sources).
    pub removed: Vec<usize>,
    /// Confirmed blinks (window samples).
    pub blinks: Vec<Blink>,
    /// The removed components' contribution to each channel; empty if nothing is removed.
    pub correction: Correction,
    /// Where the correction applies, 0..1 per sample (the blinks with their margins and
    /// fades; all 1 for `Scope::Window`); empty if nothing is removed.
    pub mask: Vec<f32>,
}

impl WindowResult {
    pub fn iterations(&self) -> usize {
        self.ica.as_ref().map_or(0, |i| i.iterations)
    }
    pub fn converged(&self) -> bool {
        self.ica.as_ref().is_none_or(|i| i.converged)
    }

    /// The removed components' topographies (mixing columns), unit length: what the next
    /// window of a stream tracks (`process_window`'s `known`).
    pub fn removed_topographies(&self) -> Vec<Vec<f64>> {
        let Some(ica) = &self.ica else {
            return Vec::new();
        };
        (self.removed.iter())
            .map(|&c| {
                let col = ica.mixing.column(c);
                let norm = col.norm().max(1e-300);
                col.iter().map(|v| v / norm).collect()
            })
            .collect()
    }

    /// Samples `range` of this window's data `x` (channels x len) cleaned on its own (a
    /// stream emits only its newest hop).
    pub fn clean(&self, x: &Observations, range: std::ops::Range<usize>) -> Observations {
        let mut y = x.block(x.rows, range.clone());
        if !self.mask.is_empty() {
            let mut corr = vec![0.0f32; range.len()];
            for (i, row) in y.data.chunks_exact_mut(range.len()).enumerate() {
                if self.correction.row_into(i, range.clone(), &mut corr) {
                    for ((v, c), m) in row.iter_mut().zip(&corr).zip(&self.mask[range.clone()]) {
                        *v -= c * m;
                    }
                }
            }
        }
        y
    }
}

/// The removed components' contribution to each channel, sum_c a_ic s_c(t), held as its
/// factors: the weights a_ic and the sources s_c (a channels x window matrix was 2.6 MB per
/// 64-channel live window, of which a hop uses a twentieth).
#[derive(Debug, Clone, Default)]
pub struct Correction {
    /// Per channel, its weights on the removed components (none for channels kept).
    weights: Vec<Vec<f32>>,
    /// The removed components' sources over the window.
    sources: Vec<Vec<f32>>,
}

impl Correction {
    /// Channel `i`'s correction over window samples `range`, into `out` (`range.len()`);
    /// false, with `out` untouched, where nothing is taken from the channel.
    pub fn row_into(&self, i: usize, range: std::ops::Range<usize>, out: &mut [f32]) -> bool {
        let Some(weights) = self.weights.get(i).filter(|w| !w.is_empty()) else {
            return false;
        };
        out.fill(0.0);
        for (&a, s) in weights.iter().zip(&self.sources) {
            for (o, &v) in out.iter_mut().zip(&s[range.clone()]) {
                *o += a * v;
            }
        }
        true
    }
}

/// ICA as the pipeline calls it: data and an optional warm start (a previous unmixing matrix).
pub type IcaFn<'a> = dyn FnMut(&Observations, Option<&DMatrix<f64>>) -> Result<Ica, IcaError> + 'a;

/// The frontal derivations, from a channel's samples by index.
fn frontal_derivations(channels: &Channels, row: impl Fn(usize) -> Vec<f32>) -> Vec<Vec<f32>> {
    (channels.derivations.iter())
        .map(|&(a, b)| {
            let mut d = row(a);
            if let Some(b) = b {
                d.iter_mut().zip(row(b)).for_each(|(v, w)| *v -= w);
            }
            d
        })
        .collect()
}

/// What a window starts from: the previous window's unmixing matrix (the warm start) and the
/// unit topographies of the components it removed (a stream tracks them: see
/// `BlinkParams::track_cos`; the batch tracks none).
#[derive(Debug, Clone, Copy, Default)]
pub struct Prior<'a> {
    pub warm: Option<&'a DMatrix<f64>>,
    pub known: &'a [Vec<f64>],
}

/// Runs steps 1-4 on one window `x` (channels x samples) from `prior`. `always_ica` runs ICA
/// even without candidates (the view shows components).
pub fn process_window(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
    ica: &mut IcaFn<'_>,
    prior: Prior<'_>,
    always_ica: bool,
) -> Result<WindowResult, IcaError> {
    let fitted = fit_window(x, fs, channels, p, ica, prior.warm, always_ica)?;
    Ok(finish_window(x, fs, channels, p, fitted, prior.known))
}

/// A window's steps 1-2: its candidates and, where it has any, its ICA. What steps 3-4
/// (`finish_window`) start from; a stream runs them beside the next window's fit.
#[derive(Debug, Clone)]
pub struct FittedWindow {
    /// The frontal derivations' blink bands.
    bands: Vec<Vec<f32>>,
    candidates: Vec<Peak>,
    ica: Option<Ica>,
}

impl FittedWindow {
    pub fn ica(&self) -> Option<&Ica> {
        self.ica.as_ref()
    }
}

/// Steps 1-2 of window `x` (see `process_window`), from the warm start `warm`.
pub fn fit_window(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
    ica: &mut IcaFn<'_>,
    warm: Option<&DMatrix<f64>>,
    always_ica: bool,
) -> Result<FittedWindow, IcaError> {
    let (bands, candidates) = detect_candidates(x, fs, channels, p);
    let ica = if candidates.is_empty() && !always_ica {
        None
    } else {
        Some(ica(x, warm)?)
    };
    Ok(FittedWindow {
        bands,
        candidates,
        ica,
    })
}

/// Steps 3-4 of window `x` from its fit, tracking the topographies `known`.
pub fn finish_window(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
    fitted: FittedWindow,
    known: &[Vec<f64>],
) -> WindowResult {
    let len = x.cols;
    let levels = dwt::levels_in_band(fs, p.band_hz);
    let FittedWindow {
        bands,
        candidates,
        ica,
    } = fitted;
    let mut out = WindowResult {
        start: 0,
        len,
        candidates: candidates.iter().map(|c| c.peak).collect(),
        ica: None,
        removed: Vec::new(),
        blinks: Vec::new(),
        correction: Correction::default(),
        mask: Vec::new(),
    };
    let Some(result) = ica else {
        return out;
    };
    if !candidates.is_empty() {
        let summed: Vec<f32> = (0..len).map(|t| bands.iter().map(|b| b[t]).sum()).collect();
        let peaks: Vec<usize> = candidates.iter().map(|c| c.peak).collect();
        let at_peaks = channel_bands_at(x, &peaks, &levels);
        let rows = (0..result.unmixing.nrows())
            .filter(|&c| {
                tracked(&result, c, known, p.track_cos)
                    || could_carry(&result, c, channels, &at_peaks, (&summed, &candidates), p)
            })
            .collect();
        let bands_of = WindowBands::of(&result, x, rows, &levels);
        confirm(
            &result,
            channels,
            (&summed, &candidates),
            &bands_of,
            known,
            p,
            fs,
            &mut out,
        );
        if !out.removed.is_empty() {
            out.mask = mask(&out, p, fs);
            out.correction = correction(&result, (x, channels), &out, &bands_of, p);
        }
    }
    out.ica = Some(result);
    out
}

/// The sources, and their blink band (`dwt::band`), of the components of a window that may
/// carry a blink.
struct WindowBands {
    levels: Vec<usize>,
    rows: Vec<usize>,
    /// The sources of the components in `rows`, in that order.
    sources: Observations,
    /// Their bands.
    bands: Observations,
}

impl WindowBands {
    fn of(ica: &Ica, x: &Observations, rows: Vec<usize>, levels: &[usize]) -> Self {
        let sources = ica.sources_of(&rows, x);
        let bands: Vec<Vec<f32>> = (0..rows.len())
            .into_par_iter()
            .map(|k| dwt::band(sources.row(k), levels))
            .collect();
        WindowBands {
            levels: levels.to_vec(),
            rows,
            sources,
            bands: Observations::from_rows(&bands),
        }
    }

    fn index(&self, c: usize) -> usize {
        let k = self.rows.iter().position(|&r| r == c);
        k.expect("a component whose band was computed")
    }

    /// The band of component `c`, one of `rows`.
    fn band(&self, c: usize) -> &[f32] {
        self.bands.row(self.index(c))
    }

    /// The source of component `c`, one of `rows`.
    fn source(&self, c: usize) -> &[f32] {
        self.sources.row(self.index(c))
    }
}

/// Every channel's band at each of `samples` (channels x samples, row-major), each from one
/// transform: the band at sample t is <band*(e_t), x_i> (`dwt::band_adjoint`).
fn channel_bands_at(x: &Observations, samples: &[usize], levels: &[usize]) -> Vec<Vec<f64>> {
    // Each transform is zero outside the reach of the filters around its sample (a third of
    // a 20 s window at 512 Hz): the products skip what would add exact zeros.
    let taps: Vec<(usize, Vec<f64>)> = (samples.par_iter())
        .map(|&t| {
            let mut e = vec![0.0; x.cols];
            e[t] = 1.0;
            let h = dwt::band_adjoint(&e, levels);
            let from = h.iter().position(|&v| v != 0.0).unwrap_or(h.len());
            let to = h.iter().rposition(|&v| v != 0.0).map_or(from, |k| k + 1);
            (from, h[from..to].to_vec())
        })
        .collect();
    (0..x.rows)
        .into_par_iter()
        .map(|i| {
            let row = x.row(i);
            (taps.iter())
                .map(|(from, h)| {
                    (row[*from..].iter().zip(h))
                        .map(|(&v, h)| v as f64 * h)
                        .sum()
                })
                .collect()
        })
        .collect()
}

/// Component `c`'s weight on the summed frontal derivations.
fn derivation_weight(ica: &Ica, channels: &Channels, c: usize) -> f64 {
    (channels.derivations.iter())
        .map(|&(a, b)| ica.mixing[(a, c)] - b.map_or(0.0, |b| ica.mixing[(b, c)]))
        .sum()
}

/// Whether component `c`'s topography is one the last window removed (`BlinkParams::
/// track_cos`).
fn tracked(ica: &Ica, c: usize, known: &[Vec<f64>], track_cos: f64) -> bool {
    let col = ica.mixing.column(c);
    let norm = col.norm().max(1e-300);
    (known.iter()).any(|k| {
        let dot: f64 = col.iter().zip(k).map(|(a, b)| a * b).sum();
        (dot / norm).abs() >= track_cos
    })
}

/// Whether component `c` can pass `confirm`'s share test at some candidate: its band there,
/// from the channels' bands at the candidates (`at_peaks`, channels x candidates), against
/// `min_share` of the summed derivations. A component that cannot (and is not tracked)
/// matches no candidate, so `confirm` need not band-pass it: with 64 channels that left 2
/// or 3 of the 64 components to band-pass and threshold. The margin covers the rounding of
/// the band `confirm` computes, so that no component it would keep is left out.
fn could_carry(
    ica: &Ica,
    c: usize,
    channels: &Channels,
    at_peaks: &[Vec<f64>],
    (summed, candidates): (&[f32], &[Peak]),
    p: &BlinkParams,
) -> bool {
    let w = derivation_weight(ica, channels, c);
    let u = ica.unmixing.row(c);
    candidates.iter().enumerate().any(|(k, cand)| {
        let there = summed[cand.peak];
        let (mut v, mut size) = (0.0f64, 0.0f64);
        for (i, &ui) in u.iter().enumerate() {
            let term = ui * at_peaks[i][k];
            v += term;
            size += term.abs();
        }
        there > 0.0 && w * v + 1e-4 * w.abs() * size >= (p.min_share as f32 * there) as f64
    })
}

/// Step 1 on window `x`: the band-passed frontal derivations and the candidates on them.
fn detect_candidates(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
) -> (Vec<Vec<f32>>, Vec<Peak>) {
    let levels = dwt::levels_in_band(fs, p.band_hz);
    let gap = (p.min_separation_s * fs).round().max(1.0) as usize;
    let half = (0.5 * fs).round() as usize;
    let hit = (p.hit_s * fs).round() as usize;
    let derivations = frontal_derivations(channels, |i| x.row(i).to_vec());
    let bands: Vec<Vec<f32>> = derivations
        .par_iter()
        .map(|d| dwt::band(d, &levels))
        .collect();
    let c = candidates(&bands, p, gap, half, hit);
    (bands, c)
}

/// The candidate blink peaks of window `x` (samples), before any ICA.
pub fn candidate_peaks(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
) -> Vec<usize> {
    detect_candidates(x, fs, channels, p)
        .1
        .iter()
        .map(|c| c.peak)
        .collect()
}

/// Step 1: peaks on the derivations that enough of them share; the tallest stands for each.
fn candidates(
    bands: &[Vec<f32>],
    p: &BlinkParams,
    gap: usize,
    half: usize,
    hit: usize,
) -> Vec<Peak> {
    let mut all: Vec<(Peak, usize)> = Vec::new();
    for (d, b) in bands.iter().enumerate() {
        let thr = p.candidate_z as f32 * robust_sigma(b);
        if thr <= 0.0 {
            continue;
        }
        all.extend(
            peaks(b, thr, gap, p.extent as f32, half)
                .into_iter()
                .map(|pk| (pk, d)),
        );
    }
    all.sort_by_key(|(pk, _)| pk.peak);
    let need = ((p.min_derivations * bands.len() as f64).ceil() as usize).max(1);
    let mut out: Vec<Peak> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        let mut seen = vec![false; bands.len()];
        while j < all.len() && all[j].0.peak - all[i].0.peak <= hit {
            seen[all[j].1] = true;
            j += 1;
        }
        if seen.iter().filter(|&&s| s).count() >= need {
            let best = all[i..j]
                .iter()
                .max_by(|a, b| a.0.height.total_cmp(&b.0.height))
                .map(|(pk, _)| *pk)
                .expect("non-empty");
            match out.last() {
                Some(last) if best.peak - last.peak < gap => {}
                _ => out.push(best),
            }
        }
        i = j;
    }
    out
}

/// Step 3: which components carry the candidates, and the blinks they show.
#[allow(clippy::too_many_arguments)]
fn confirm(
    ica: &Ica,
    channels: &Channels,
    (summed, candidates): (&[f32], &[Peak]),
    bands_of: &WindowBands,
    known: &[Vec<f64>],
    p: &BlinkParams,
    fs: f64,
    out: &mut WindowResult,
) {
    let gap = (p.min_separation_s * fs).round().max(1.0) as usize;
    let half = (0.5 * fs).round() as usize;
    let hit = (p.hit_s * fs).round() as isize;
    // The components' band-passed shares of the summed derivations and their thresholds, on
    // all cores.
    let shares: Vec<(usize, Vec<f32>, f32)> = (bands_of.rows.par_iter())
        .map(|&c| {
            let w = derivation_weight(ica, channels, c) as f32;
            let band: Vec<f32> = bands_of.band(c).iter().map(|&s| w * s).collect();
            let thr = p.component_z as f32 * robust_sigma(&band);
            (c, band, thr)
        })
        .collect();
    let mut scored: Vec<(usize, usize, Vec<Peak>)> = Vec::new();
    for (c, band, thr) in shares {
        if thr <= 0.0 {
            continue;
        }
        let own = peaks(&band, thr, gap, p.extent as f32, half);
        // An excursion of the component is a blink it carries when a candidate lies within
        // the hit tolerance and the component explains enough of the candidate's height.
        let carries = |pk: &Peak| {
            candidates.iter().any(|cand| {
                let there = summed[cand.peak];
                (pk.peak as isize - cand.peak as isize).abs() <= hit
                    && there > 0.0
                    && band[cand.peak] >= p.min_share as f32 * there
            })
        };
        let mut heights: Vec<f32> = own
            .iter()
            .filter(|pk| carries(pk))
            .map(|pk| pk.height)
            .collect();
        let matched = heights.len();
        let tracked = tracked(ica, c, known, p.track_cos);
        if tracked && matched == 0 {
            heights = own.iter().map(|pk| pk.height).collect();
        }
        if (tracked && !own.is_empty())
            || (matched > 0 && matched as f64 >= p.min_match * own.len() as f64)
        {
            // The band-pass rings: a clean blink source shows side lobes about 0.7 s either
            // side of each blink, which a robust threshold on a quiet component passes.
            heights.sort_by(f32::total_cmp);
            let floor = p.min_relative_height as f32 * heights[heights.len() / 2];
            let own: Vec<Peak> = own.into_iter().filter(|pk| pk.height >= floor).collect();
            scored.push((c, matched, own));
        }
    }
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(p.max_components);
    out.removed = scored.iter().map(|s| s.0).collect();
    out.removed.sort_unstable();
    let mut blinks: Vec<Blink> = (scored.iter())
        .flat_map(|s| s.2.iter())
        .map(|pk| Blink {
            peak: pk.peak,
            start: pk.start,
            end: pk.end,
        })
        .collect();
    blinks.sort_by_key(|b| b.peak);
    let mut merged: Vec<Blink> = Vec::new();
    for b in blinks {
        match merged.last_mut() {
            Some(last) if b.peak - last.peak < gap => {
                last.start = last.start.min(b.start);
                last.end = last.end.max(b.end);
            }
            _ => merged.push(b),
        }
    }
    out.blinks = merged;
}

/// Step 4: where the removal applies: the blinks' extent plus margins with raised-cosine
/// fades (`Scope::Blinks`), or everywhere (`Scope::Window`).
fn mask(w: &WindowResult, p: &BlinkParams, fs: f64) -> Vec<f32> {
    let len = w.len;
    match p.scope {
        Scope::Window => vec![1.0; len],
        Scope::Blinks => {
            let margin = p.margin_s * fs;
            let taper = (p.taper_s * fs).max(1e-9);
            let mut m = vec![0.0f32; len];
            for b in &w.blinks {
                let (lo, hi) = (b.start as f64 - margin, b.end as f64 + margin);
                let from = (lo - taper).floor().max(0.0) as usize;
                let to = ((hi + taper).ceil() as usize).min(len.saturating_sub(1));
                for (t, v) in m.iter_mut().enumerate().take(to + 1).skip(from) {
                    let tf = t as f64;
                    let f = if tf < lo {
                        0.5 - 0.5 * (std::f64::consts::PI * (tf - (lo - taper)) / taper).cos()
                    } else if tf > hi {
                        0.5 + 0.5 * (std::f64::consts::PI * (tf - hi) / taper).cos()
                    } else {
                        1.0
                    };
                    *v = v.max(f as f32);
                }
            }
            m
        }
    }
}

/// The removed components' contribution to every channel not kept. With `Scope::Blinks` each
/// channel's weights on the components are re-estimated over the blinks (least squares of
/// the channel's 1-8 Hz band on the components', inside the mask): there the blink dominates both,
/// while the mixing matrix's column, fitted to the whole window, carries some of whatever
/// else the component picked up (posterior alpha, in short windows).
fn correction(
    ica: &Ica,
    (x, channels): (&Observations, &Channels),
    w: &WindowResult,
    bands_of: &WindowBands,
    p: &BlinkParams,
) -> Correction {
    let n = channels.labels.len();
    let k = w.removed.len();
    // The components' bands, and their Gram matrix over the mask (the normal equations).
    let bands: Vec<&[f32]> = (w.removed.iter()).map(|&c| bands_of.band(c)).collect();
    let inner = |a: &[f32], b: &[f32]| -> f64 {
        (a.iter().zip(b).zip(&w.mask))
            .map(|((&u, &v), &m)| (m * u * v) as f64)
            .sum()
    };
    let gram = DMatrix::from_fn(k, k, |i, j| inner(bands[i], bands[j]));
    let solve = (p.scope == Scope::Blinks)
        .then(|| gram.clone().cholesky())
        .flatten();
    // A channel's masked inner product with a component's band, through the band-pass's
    // adjoint: <band(x_i), m b_c> = <x_i, band*(m b_c)>, one transform per removed component
    // instead of one per channel.
    let levels = &bands_of.levels;
    let adjoints: Vec<Vec<f64>> = match solve {
        Some(_) => (bands.par_iter())
            .map(|b| {
                let masked: Vec<f64> = (b.iter().zip(&w.mask))
                    .map(|(&v, &m)| (m * v) as f64)
                    .collect();
                dwt::band_adjoint(&masked, levels)
            })
            .collect(),
        None => Vec::new(),
    };
    let weights = (0..n)
        .into_par_iter()
        .map(|i| match &solve {
            _ if channels.keep[i] => Vec::new(),
            Some(chol) => {
                let xi = x.row(i);
                let rhs = nalgebra::DVector::from_iterator(
                    k,
                    (adjoints.iter()).map(|g| xi.iter().zip(g).map(|(&v, g)| v as f64 * g).sum()),
                );
                chol.solve(&rhs).iter().map(|&a| a as f32).collect()
            }
            None => (w.removed.iter())
                .map(|&c| ica.mixing[(i, c)] as f32)
                .collect(),
        })
        .collect();
    let sources = (w.removed.iter())
        .map(|&c| bands_of.source(c).to_vec())
        .collect();
    Correction { weights, sources }
}

/// The result of a whole recording (or stretch).
#[derive(Debug, Clone)]
pub struct Deblinked {
    /// Channels x samples, row-major.
    pub cleaned: Observations,
    /// Blinks, samples from the start, each reported by the window it is most central in.
    pub blinks: Vec<Blink>,
    pub windows: Vec<WindowResult>,
}

/// The window starts for `n` samples: every hop, the last one flush with the end.
pub fn window_starts(n: usize, window: usize, hop: usize) -> Vec<usize> {
    let mut starts: Vec<usize> = (0..)
        .map(|k| k * hop.max(1))
        .take_while(|&s| s + window <= n)
        .collect();
    if let Some(&last) = starts.last()
        && last + window < n
    {
        starts.push(n - window);
    }
    starts
}

/// Steps 1-5 over `x` (channels x samples) at `fs`. Flat channels not in the keep list are an
/// error; those in it are left out of ICA. `progress` hears (windows done, windows).
pub fn deblink(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
    ica: &mut IcaFn<'_>,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Deblinked, BlinkError> {
    p.validate(fs)?;
    let (n, total) = (x.rows, x.cols);
    let window = p.window_samples(n, fs, total);
    if window > total {
        return Err(BlinkError::WindowTooLong {
            window_s: p.window_s,
            length_s: total as f64 / fs,
        });
    }
    let hop = p.hop_samples(window, fs);
    let starts = window_starts(total, window, hop);
    // Flat channels: a keep-listed one is left out of ICA, any other is an error.
    let flat: Vec<bool> = (0..n)
        .map(|i| {
            let r = x.row(i);
            r.iter().all(|&v| v == r[0])
        })
        .collect();
    if let Some(i) = (0..n).find(|&i| flat[i] && !channels.keep[i]) {
        return Err(BlinkError::Flat(
            channels.labels[i].clone(),
            "the whole recording".into(),
        ));
    }
    let used: Vec<usize> = (0..n).filter(|&i| !flat[i]).collect();
    let sub = Channels {
        labels: used.iter().map(|&i| channels.labels[i].clone()).collect(),
        derivations: (channels.derivations.iter())
            .filter_map(|&(a, b)| {
                let a = used.iter().position(|&u| u == a)?;
                let b = match b {
                    Some(b) => Some(used.iter().position(|&u| u == b)?),
                    None => None,
                };
                Some((a, b))
            })
            .collect(),
        keep: used.iter().map(|&i| channels.keep[i]).collect(),
    };
    if sub.derivations.is_empty() {
        return Err(BlinkError::Flat(
            channels.derivation_names().join(", "),
            "the detection channels".into(),
        ));
    }
    let mut windows = Vec::with_capacity(starts.len());
    let mut warm: Option<DMatrix<f64>> = None;
    // Overlapping windows vote on each sample's correction with sin^2 weights. Only windows
    // that remove something there vote (a window that missed a blink near its edge must not
    // dilute the one that found it); the fade is the largest of the voters' masks.
    let mut correction_sum = vec![0.0f64; n * total];
    let mut weight_sum = vec![0.0f64; total];
    let mut fade = vec![0.0f32; total];
    for (k, &s) in starts.iter().enumerate() {
        if !progress(k, starts.len()) {
            return Err(BlinkError::Cancelled);
        }
        let data: Vec<f32> = used
            .iter()
            .flat_map(|&i| x.row(i)[s..s + window].iter().copied())
            .collect();
        let obs = Observations::new(used.len(), window, data);
        let mut w = process_window(
            &obs,
            fs,
            &sub,
            p,
            ica,
            Prior {
                warm: warm.as_ref(),
                known: &[],
            },
            false,
        )
        .map_err(|e| BlinkError::Ica {
            at_s: s as f64 / fs,
            source: e,
        })?;
        w.start = s;
        if let Some(i) = &w.ica {
            warm = Some(i.unmixing.clone());
        }
        let votes: Vec<(usize, f64)> = (0..window)
            .filter(|&t| w.mask.get(t).is_some_and(|&m| m > 0.0))
            .map(|t| {
                let h = (std::f64::consts::PI * (t as f64 + 0.5) / window as f64)
                    .sin()
                    .powi(2)
                    * w.mask[t] as f64;
                (t, h)
            })
            .collect();
        for &(t, h) in &votes {
            weight_sum[s + t] += h;
            fade[s + t] = fade[s + t].max(w.mask[t]);
        }
        let mut corr = vec![0.0f32; window];
        for (u, &i) in used.iter().enumerate() {
            if w.correction.row_into(u, 0..window, &mut corr) {
                for &(t, h) in &votes {
                    correction_sum[i * total + s + t] += h * corr[t] as f64;
                }
            }
        }
        windows.push(w);
    }
    progress(starts.len(), starts.len());
    let mut cleaned = x.clone();
    for i in 0..n {
        for t in (0..total).filter(|&t| weight_sum[t] > 0.0) {
            let c = correction_sum[i * total + t] / weight_sum[t];
            cleaned.data[i * total + t] -= (c * fade[t] as f64) as f32;
        }
    }
    Ok(Deblinked {
        cleaned,
        blinks: central_blinks(&windows, window),
        windows,
    })
}

/// Blinks of all windows, each taken from the window where it lies most centrally.
fn central_blinks(windows: &[WindowResult], window: usize) -> Vec<Blink> {
    let mut all: Vec<(Blink, usize)> = Vec::new();
    for w in windows {
        for b in &w.blinks {
            let centre = (b.peak as isize - window as isize / 2).unsigned_abs();
            all.push((
                Blink {
                    peak: b.peak + w.start,
                    start: b.start + w.start,
                    end: b.end + w.start,
                },
                centre,
            ));
        }
    }
    all.sort_by_key(|(b, _)| b.peak);
    let mut out: Vec<(Blink, usize)> = Vec::new();
    for (b, c) in all {
        match out.last_mut() {
            Some(last) if b.start <= last.0.end => {
                if c < last.1 {
                    *last = (b, c);
                }
            }
            _ => out.push((b, c)),
        }
    }
    out.into_iter().map(|(b, _)| b).collect()
}
