//! Eye-blink detection and removal with ICA, after the thesis
//! (../shared/papers/ica-blink-removal-gpgpu-thesis-excerpt.txt, `blinkRemove`). Its chapters
//! on the detector are missing; what is here is designed to work and says so where it chooses.
//!
//! Per window (10 s by default, lengthened to hold `samples_per_channel_sq` n^2 samples;
//! consecutive windows overlap by half):
//! 1. **Candidates**: the detection channels are the recording's vertical EOG channels (all
//!    EOG channels where none is labelled vertical or horizontal) and the frontal bipolar
//!    derivations (FP1-F3, FP1-F7, FP2-F4, FP2-F8, from the channel labels; Fpz and AF sites
//!    where those are missing). Each is band-passed to 1-8 Hz by a Daubechies-4 wavelet
//!    decomposition (`dwt::band`) and turned so that blinks point up (EOG montages differ:
//!    `candidates::polarities`); a candidate is a positive excursion above `candidate_z`
//!    robust SDs that at least half of the EOG channels, or half of the frontal derivations,
//!    show within `hit_s`. Each candidate is classed by its shape on the monopolar detection
//!    channels (`classify`): blink, eye movement, eye closure or uncertain, and uncertain too
//!    where the frontal row shows it as large as the frontopolar one (a blink's field falls
//!    off from the eyes: `candidates::falls_off_from_the_eyes`); only blinks go on (all but
//!    uncertain ones with `remove_eye_movements`).
//! 2. **ICA** of all channels of the window (FastICA or JADE; any function can be passed in,
//!    so the GPU and warm starts plug in here); with `remove_eye_movements`, of the channels
//!    not kept (without the EOG), over windows of `eye_samples_per_channel_sq` n^2 samples.
//! 3. **Confirmation on the components**: each component's share of the summed frontal
//!    derivations, A_c (frontal) s_c, runs through the same detector. A component carries
//!    blinks when at least `min_match` of its own excursions above `component_z` coincide with
//!    candidates and explain at least `min_share` of their height there, or where it explains
//!    that share of the window's candidates on average. Candidates no such component carries
//!    are rejected (the thesis's defence against FIRDA and triphasic waves); the excursions of
//!    a confirmed component, and the candidates it explains `confirmed_share` of, are the
//!    blinks, less those under
//!    `min_relative_height` of its typical blink (the band-pass's side lobes) and those at
//!    events of another class.
//! 4. **Removal**: the confirmed components' contribution A_c s_c is subtracted from every
//!    channel not in the keep list. With `Scope::Blinks` (the default) it is subtracted only
//!    over the blinks' extent, plus `margin_s`, faded in and out over `taper_s`: the components
//!    also carry frontal EEG, and outside blinks there is nothing to remove. `Scope::Window`
//!    subtracts them over the whole window, as the thesis does. Over the blinks, each channel's
//!    weights on the removed components are refitted there by least squares (`correction`),
//!    and each removed source loses the straight line through its levels at the ends of each
//!    stretch of the mask (`removal::detrend_under`): what is taken away is the blink's
//!    excursion, not the component's slow drift, so the edges of a removal leave no step and
//!    the stretch no hump. Where a channel's refitted weight is small, it is the smaller of the
//!    refit and the mixing matrix's (`removal::smaller_of`). With `remove_eye_movements` one
//!    component, the eye's, is removed over the whole window, weighted by its refit over the
//!    blinks.
//! 5. **Joining**: overlapping windows' corrections are averaged with sin^2 weights (times
//!    their masks), so the output has no seams; windows that remove nothing at a sample do not
//!    vote there.
//! 6. **Pooling** (blinks only, from `pooled::MIN_BATCH_BLINKS` blinks on): steps 4-5 are
//!    redone with one blink field for the whole recording (`pooled`): its topography from
//!    all the windows' blinks, its minimum-variance source, blinks found again on that
//!    source. A window's few blinks give its component a topography that carries the EEG they
//!    coincided with, an error that grows with the blink (issue 43, BENCHMARKS).
//!
//! A window without candidates the removal takes (blinks, unless the eye's whole activity
//! goes) is returned unchanged, without running ICA.

mod candidates;
mod channels;
pub mod classify;
pub mod detect;
pub mod dwt;
pub mod families;
mod params;
pub mod pooled;
mod removal;
pub mod simulate;
pub mod stream;

use nalgebra::DMatrix;
use rayon::prelude::*;
use serde::Serialize;

use crate::dsp::ica::{Ica, IcaError, Observations};
use crate::recording::electrodes::electrode_name;
pub use candidates::candidate_peaks;
use candidates::*;
pub use channels::*;
use classify::EventClass;
use detect::{Peak, peaks, robust_sigma};
pub use params::{BlinkParams, Scope};
pub use removal::*;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BlinkError {
    #[error(
        "no EOG or frontal channels for blink detection among {labels}: it needs an EOG channel \
         (a label with EOG, VEO, LOC or ROC), or Fp1 with F3 or F7, or \
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

/// A detected blink, samples from the start of the data handed in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Blink {
    pub peak: usize,
    pub start: usize,
    pub end: usize,
}

impl Blink {
    pub fn overlaps(&self, other: &Blink) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// The same span `by` samples later.
    pub fn shifted(self, by: usize) -> Blink {
        Blink {
            peak: self.peak + by,
            start: self.start + by,
            end: self.end + by,
        }
    }
}

/// A candidate of the detector and what its shape says it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EyeEvent {
    /// Where it lies, as a `Blink` does.
    #[serde(flatten)]
    pub span: Blink,
    pub class: EventClass,
}

/// What one window gave.
#[derive(Debug, Clone)]
pub struct WindowResult {
    /// First sample of the window.
    pub start: usize,
    pub len: usize,
    /// The candidates on the detection channels with their class (window samples).
    pub events: Vec<EyeEvent>,
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

    /// Whether this window's removal reaches `span`: a blink it removes overlaps it, or the
    /// removal covers the whole window (the eye's whole activity, `Scope::Window`).
    pub fn removes(&self, span: &Blink) -> bool {
        self.removes_everywhere() || self.blinks.iter().any(|b| b.overlaps(span))
    }

    /// Whether this window's removal covers the whole window.
    pub fn removes_everywhere(&self) -> bool {
        !self.mask.is_empty() && self.mask.iter().all(|&m| m >= 1.0)
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

/// ICA as the pipeline calls it: data and an optional warm start (a previous unmixing matrix).
pub type IcaFn<'a> = dyn FnMut(&Observations, Option<&DMatrix<f64>>) -> Result<Ica, IcaError> + 'a;

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
    detection: Detection,
    ica: Option<Ica>,
}

impl FittedWindow {
    pub fn ica(&self) -> Option<&Ica> {
        self.ica.as_ref()
    }

    /// Whether an eye event the removal takes peaks in `span` (samples of the window).
    pub fn removes_in(&self, p: &BlinkParams, span: std::ops::Range<usize>) -> bool {
        (self.detection.removable(p).iter()).any(|c| span.contains(&c.peak))
    }

    /// Window `x`'s candidates alone, without ICA: its eye events, for a stream's hop that a
    /// standing removal cleans (`Everywhere`).
    pub fn detected(x: &Observations, fs: f64, channels: &Channels, p: &BlinkParams) -> Self {
        FittedWindow {
            detection: detect_candidates(x, fs, channels, p),
            ica: None,
        }
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
    let detection = detect_candidates(x, fs, channels, p);
    // Without a candidate the removal takes, a window's ICA would change nothing.
    let ica = if detection.removable(p).is_empty() && !always_ica {
        None
    } else {
        // To remove the eye's whole activity, ICA sees only the channels it cleans, and the
        // kept ones (EOG) are regressed on its sources (`Ica::over_channels`): with the EOG
        // channels ICA splits the eye into a lid's and an eyeball's component, whose
        // movements then stay. For blinks alone the EOG channels help ICA isolate the lid.
        let fitted: Vec<usize> = (0..x.rows).filter(|&i| !channels.keep[i]).collect();
        if !p.remove_eye_movements || fitted.len() == x.rows || fitted.len() < 2 {
            Some(ica(x, warm)?)
        } else {
            let warm = warm.map(|w| w.select_columns(&fitted));
            let sub = x.select_rows(&fitted);
            Some(ica(&sub, warm.as_ref())?.over_channels(x, &fitted))
        }
    };
    Ok(FittedWindow { detection, ica })
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
    let FittedWindow { detection, ica } = fitted;
    let mut out = WindowResult {
        start: 0,
        len,
        events: (detection.candidates.iter().zip(&detection.classes))
            .map(|(c, &class)| EyeEvent {
                span: Blink {
                    peak: c.peak,
                    start: c.start,
                    end: c.end,
                },
                class,
            })
            .collect(),
        ica: None,
        removed: Vec::new(),
        blinks: Vec::new(),
        correction: Correction::default(),
        mask: Vec::new(),
    };
    let Some(result) = ica else {
        return out;
    };
    let candidates = detection.removable(p);
    if !candidates.is_empty() {
        let bands = &detection.bands;
        let summed: Vec<f32> = (0..len).map(|t| bands.iter().map(|b| b[t]).sum()).collect();
        let peaks: Vec<usize> = candidates.iter().map(|c| c.peak).collect();
        let at_peaks = channel_bands_at(x, &peaks, &levels);
        let derivation = Derivation {
            channels,
            signs: &detection.signs,
        };
        let rows = (0..result.unmixing.nrows())
            .filter(|&c| {
                tracked(&result, c, known, p.track_cos)
                    || could_carry(&result, c, derivation, &at_peaks, (&summed, &candidates), p)
            })
            .collect();
        let bands_of = WindowBands::of(&result, x, rows, &levels);
        let others: Vec<usize> = (out.events.iter())
            .filter(|e| !removable(e.class, p))
            .map(|e| e.span.peak)
            .collect();
        confirm(
            &result,
            derivation,
            (&summed, &candidates, &others),
            &bands_of,
            known,
            p,
            fs,
            &mut out,
        );
        out.blinks.retain(|b| {
            let near = (out.events.iter())
                .filter(|e| e.span.peak.abs_diff(b.peak) <= reach(p, fs))
                .min_by_key(|e| e.span.peak.abs_diff(b.peak));
            let class = match near {
                Some(e) => e.class,
                None => {
                    let r = &detection.reference;
                    classify::classify(r, b.peak, reach(p, fs), fs, detection.min_height).0
                }
            };
            removable(class, p)
        });
        if out.blinks.is_empty() {
            out.removed.clear();
        }
        if !out.removed.is_empty() {
            out.mask = mask(&out, p, fs);
            out.correction = correction(&result, (x, channels), &out, &bands_of, p, fs);
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
        .map(|&t| dwt::band_adjoint_at(x.cols, t, levels))
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

/// The detection channels of a window with their polarities.
#[derive(Clone, Copy)]
struct Derivation<'a> {
    channels: &'a Channels,
    signs: &'a [f64],
}

/// Component `c`'s weight on the summed, turned detection channels.
fn derivation_weight(ica: &Ica, d: Derivation<'_>, c: usize) -> f64 {
    (d.channels.derivations.iter().zip(d.signs))
        .map(|(&(a, b), s)| s * (ica.mixing[(a, c)] - b.map_or(0.0, |b| ica.mixing[(b, c)])))
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
    channels: Derivation<'_>,
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

/// Step 3: which components carry the candidates, and the blinks they show.
#[allow(clippy::too_many_arguments)]
fn confirm(
    ica: &Ica,
    channels: Derivation<'_>,
    (summed, candidates, others): (&[f32], &[Peak], &[usize]),
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
        // The eye's components carry its other events too (a vertical saccade, a closure):
        // excursions there are no evidence against a blink source, only unexplained ones are.
        let at_others = (own.iter())
            .filter(|pk| {
                !carries(pk) && others.iter().any(|&o| o.abs_diff(pk.peak) <= hit as usize)
            })
            .count();
        let judged = own.len() - at_others;
        // A small blink's component shows excursions of its own beside the candidates (blinks
        // under the candidate threshold, and EEG at 5 of its robust SDs): where it explains the
        // window's candidates on average as `min_share` asks, it carries them all the same.
        let mean_share = (candidates.iter())
            .map(|cand| match summed[cand.peak] {
                there if there > 0.0 => (band[cand.peak] / there).clamp(-1.0, 1.5),
                _ => 0.0,
            })
            .sum::<f32>()
            / candidates.len().max(1) as f32;
        let covers = candidates.len() >= 2 && matched > 0 && mean_share >= p.min_share as f32;
        if (tracked && !own.is_empty())
            || (matched > 0 && matched as f64 >= p.min_match * judged as f64)
            || covers
        {
            // The band-pass rings: a clean blink source shows side lobes about 0.7 s either
            // side of each blink, which a robust threshold on a quiet component passes.
            heights.sort_by(f32::total_cmp);
            let floor = p.min_relative_height as f32 * heights[heights.len() / 2];
            let mut own: Vec<Peak> = own.into_iter().filter(|pk| pk.height >= floor).collect();
            // Blink candidates the component explains (`confirmed_share` of them) are its
            // blinks too where its own excursion there stays under the component threshold
            // (small blinks).
            let unmatched: Vec<Peak> = (candidates.iter())
                .filter(|cand| {
                    let there = summed[cand.peak];
                    there > 0.0
                        && band[cand.peak] >= p.confirmed_share as f32 * there
                        && !own
                            .iter()
                            .any(|pk| pk.peak.abs_diff(cand.peak) <= hit as usize)
                })
                .copied()
                .collect();
            own.extend(unmatched);
            scored.push((c, matched, own));
        }
    }
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(p.components_removed());
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
    out.blinks = merged(blinks, gap);
}

/// `blinks` (sorted by peak) with those whose peaks lie closer than `gap` samples made one,
/// spanning both.
fn merged(blinks: impl IntoIterator<Item = Blink>, gap: usize) -> Vec<Blink> {
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
    merged
}

/// The result of a whole recording (or stretch).
#[derive(Debug, Clone)]
pub struct Deblinked {
    /// Channels x samples, row-major.
    pub cleaned: Observations,
    /// Blinks, samples from the start, each reported by the window it is most central in.
    pub blinks: Vec<Blink>,
    /// Every candidate with its class, likewise.
    pub events: Vec<EyeEvent>,
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
        eog: used.iter().map(|&i| channels.eog[i]).collect(),
    };
    if sub.derivations.is_empty() {
        return Err(BlinkError::Flat(
            channels.derivation_names().join(", "),
            "the detection channels".into(),
        ));
    }
    let mut windows = Vec::with_capacity(starts.len());
    let mut warm: Option<DMatrix<f64>> = None;
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
        windows.push(w);
    }
    progress(starts.len(), starts.len());
    let events = central(&windows, window, |w| &w.events, |e| &mut e.span);
    let found = central_blinks(&windows, window);
    let pooled = match p.removes_everywhere() {
        true => None,
        false => {
            let rows: Vec<Vec<f32>> = used.iter().map(|&i| x.row(i).to_vec()).collect();
            let obs = Observations::from_rows(&rows);
            pooled_removal(&obs, (&found, &events), p, fs)
        }
    };
    let (cleaned, blinks) = match pooled {
        Some((field, masked, blinks)) => {
            let mut cleaned = x.clone();
            for (u, &i) in used.iter().enumerate().filter(|(u, _)| !sub.keep[*u]) {
                let a = field.topography[u] as f32;
                for (v, m) in cleaned.data[i * total..(i + 1) * total]
                    .iter_mut()
                    .zip(&masked)
                {
                    *v -= a * m;
                }
            }
            (cleaned, blinks)
        }
        None => (joined(x, &used, &windows, window), found),
    };
    Ok(Deblinked {
        cleaned,
        blinks,
        events,
        windows,
    })
}

/// Step 4 with the field pooled over the recording (`pooled`): the field, its masked source
/// (`pooled::removed`: each channel not kept loses its topography times it) and the blinks
/// removed; `None` where no field can be fitted.
fn pooled_removal(
    x: &Observations,
    (found, events): (&[Blink], &[EyeEvent]),
    p: &BlinkParams,
    fs: f64,
) -> Option<(pooled::BlinkField, Vec<f32>, Vec<Blink>)> {
    if found.len() < pooled::MIN_BATCH_BLINKS {
        return None;
    }
    let spans: Vec<Blink> = (events.iter().map(|e| e.span))
        .chain(found.iter().copied())
        .collect();
    let bands = pooled::channel_bands(x, p, fs);
    let others = judged_elsewhere(events, p);
    // The field from the windows' blinks finds the blinks on its source; fitted again over
    // their cores (`pooled::cores`), it gives the source the removal uses.
    let first = pooled::BlinkField::fit(x, &bands, found, &spans, fs)?;
    let (blinks, source) = pooled::found_on(&first, x, (found, &others), p, fs);
    let cores = pooled::cores(&blinks, &classify::smooth(&source, fs), fs);
    let spans: Vec<Blink> = spans.iter().chain(&blinks).copied().collect();
    let field = pooled::BlinkField::fit(x, &bands, &cores, &spans, fs).unwrap_or(first);
    let (blinks, masked, _) = pooled::removed(&field, x, (found, &others), p, fs);
    Some((field, masked, blinks))
}

/// The peaks of the eye events a pooled field's source leaves alone: closures (and what the
/// removal does not take). Events the detection channels called uncertain or eye movements
/// are judged again by their shape on the source, where far less EEG is left beside a blink
/// and a blink on a saccade's step stands out of it (on the independent families a tenth of
/// the blinks at 50 uV fell on a base's eye movement and stayed whole: 1.5-1.9x the floor).
pub(super) fn judged_elsewhere(events: &[EyeEvent], p: &BlinkParams) -> Vec<usize> {
    (events.iter())
        .filter(|e| e.class == EventClass::EyeClosure && !removable(e.class, p))
        .map(|e| e.span.peak)
        .collect()
}

/// The windows' own corrections joined (step 5): overlapping windows vote on each sample's
/// correction with sin^2 weights. Only windows that remove something there vote (a window
/// that missed a blink near its edge must not dilute the one that found it); the fade is the
/// largest of the voters' masks.
fn joined(
    x: &Observations,
    used: &[usize],
    windows: &[WindowResult],
    window: usize,
) -> Observations {
    let (n, total) = (x.rows, x.cols);
    let mut correction_sum = vec![0.0f64; n * total];
    let mut weight_sum = vec![0.0f64; total];
    let mut fade = vec![0.0f32; total];
    for w in windows {
        let s = w.start;
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
    }
    let mut cleaned = x.clone();
    for i in 0..n {
        for t in (0..total).filter(|&t| weight_sum[t] > 0.0) {
            let c = correction_sum[i * total + t] / weight_sum[t];
            cleaned.data[i * total + t] -= (c * fade[t] as f64) as f32;
        }
    }
    cleaned
}

/// Blinks of all windows, each taken from the window where it lies most centrally.
fn central_blinks(windows: &[WindowResult], window: usize) -> Vec<Blink> {
    central(windows, window, |w| &w.blinks, |b| b)
}

/// `of` each window in recording samples, each item taken from the window where its span
/// (`span`) lies most centrally; items whose spans overlap are one.
pub fn central<T: Copy>(
    windows: &[WindowResult],
    window: usize,
    of: impl Fn(&WindowResult) -> &[T],
    span: fn(&mut T) -> &mut Blink,
) -> Vec<T> {
    let mut all: Vec<(T, Blink, usize)> = Vec::new();
    for w in windows {
        for item in of(w) {
            let mut item = *item;
            let b = span(&mut item);
            let centre = (b.peak as isize - window as isize / 2).unsigned_abs();
            *b = b.shifted(w.start);
            let b = *b;
            all.push((item, b, centre));
        }
    }
    all.sort_by_key(|(_, b, _)| b.peak);
    let mut out: Vec<(T, Blink, usize)> = Vec::new();
    for (item, b, c) in all {
        match out.last_mut() {
            Some(last) if b.start <= last.1.end => {
                if c < last.2 {
                    *last = (item, b, c);
                }
            }
            _ => out.push((item, b, c)),
        }
    }
    out.into_iter().map(|(item, _, _)| item).collect()
}
