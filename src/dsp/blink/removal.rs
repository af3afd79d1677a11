//! Step 4, the removal: where it applies (the mask), what it subtracts from each channel
//! (`Correction`: refitted weights times the removed sources, less their baseline).

use super::*;

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

/// A removal that goes everywhere (the eye's whole activity, `Scope::Window`) as a linear map
/// of the channels, for samples after the window it was fitted on: each channel less its
/// weights times the removed components' sources, `W_c (x - mu)`, as `Correction` holds them
/// over the window. A stream that removes the eye's whole activity fits minutes-long windows
/// (`BlinkParams::eye_samples_per_channel_sq`), which a one-second hop barely moves; it refits
/// every `stream::EVERYWHERE_REFIT` of its window and cleans the hops between with this.
#[derive(Debug, Clone, PartialEq)]
pub struct Everywhere {
    /// Per channel, its weights on the removed components (none for channels kept).
    weights: Vec<Vec<f32>>,
    /// The removed components' unmixing rows, over every channel.
    unmixing: DMatrix<f64>,
    means: Vec<f64>,
}

impl Everywhere {
    /// Window `w`'s removal, where it removes something everywhere.
    pub fn of(w: &WindowResult) -> Option<Everywhere> {
        let ica = w.ica.as_ref()?;
        if !w.removes_everywhere() || w.removed.is_empty() {
            return None;
        }
        Some(Everywhere {
            weights: w.correction.weights.clone(),
            unmixing: ica.unmixing.select_rows(&w.removed),
            means: ica.channel_means.clone(),
        })
    }

    /// `x` (the window's channels x any samples) cleaned.
    pub fn clean(&self, x: &Observations) -> Observations {
        // The same product the window's sources came from (`Ica::sources_of`).
        let sources = crate::dsp::ica::rotate_centred(&self.unmixing, x, &self.means);
        let mut y = x.clone();
        for (row, weights) in y.data.chunks_exact_mut(x.cols.max(1)).zip(&self.weights) {
            for (c, &a) in weights.iter().enumerate() {
                row.iter_mut()
                    .zip(sources.row(c))
                    .for_each(|(v, &u)| *v -= a * u);
            }
        }
        y
    }
}

/// Step 4: where the removal applies: the blinks' extent plus margins with raised-cosine
/// fades (`Scope::Blinks`), or everywhere (`Scope::Window`, and the eye's whole activity,
/// `BlinkParams::remove_eye_movements`).
pub(super) fn mask(w: &WindowResult, p: &BlinkParams, fs: f64) -> Vec<f32> {
    if p.removes_everywhere() {
        vec![1.0; w.len]
    } else {
        blink_mask(&w.blinks, w.len, p, fs)
    }
}

/// The extent of `blinks` over `len` samples plus `margin_s` each side, faded in and out over
/// `taper_s` by raised cosines.
pub(super) fn blink_mask<'a>(
    blinks: impl IntoIterator<Item = &'a Blink>,
    len: usize,
    p: &BlinkParams,
    fs: f64,
) -> Vec<f32> {
    let margin = p.margin_s * fs;
    let taper = (p.taper_s * fs).max(1e-9);
    let mut m = vec![0.0f32; len];
    for b in blinks {
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

/// The removed components' contribution to every channel not kept. Each channel's weights on
/// the components are re-estimated over the removed events (least squares of the channel's
/// 1-8 Hz band on the components', inside `blink_mask`), whatever the extent of the removal:
/// there the eye dominates both, while the mixing matrix's column, fitted to the whole window,
/// carries some of whatever else the component picked up (posterior alpha, frontal bursts).
/// On the EEGLAB sample's one-window ICA (with the EOG channels), removed everywhere, the
/// refit took the change of O1/Oz/O2 outside eye events from 2.12 % to 1.60 % and the
/// posterior samples changed by more than 20 uV from 389 to 137.
pub(super) fn correction(
    ica: &Ica,
    (x, channels): (&Observations, &Channels),
    w: &WindowResult,
    bands_of: &WindowBands,
    p: &BlinkParams,
    fs: f64,
) -> Correction {
    let n = channels.labels.len();
    let k = w.removed.len();
    // The components' bands, and their Gram matrix over the mask (the normal equations).
    let bands: Vec<&[f32]> = (w.removed.iter()).map(|&c| bands_of.band(c)).collect();
    // Where eye movements and closures are removed too, the weights are still fitted over the
    // blinks alone: a step's or a plateau's band holds as much frontal EEG as eye.
    let is_blink = |b: &&Blink| {
        !p.remove_eye_movements
            || (w.events.iter()).any(|e| e.class == EventClass::Blink && e.span.overlaps(b))
    };
    let fit_mask = blink_mask(w.blinks.iter().filter(is_blink), w.len, p, fs);
    let inner = |a: &[f32], b: &[f32]| -> f64 {
        (a.iter().zip(b).zip(&fit_mask))
            .map(|((&u, &v), &m)| (m * u * v) as f64)
            .sum()
    };
    let gram = DMatrix::from_fn(k, k, |i, j| inner(bands[i], bands[j]));
    let solve = gram.clone().cholesky();
    // A channel's masked inner product with a component's band, through the band-pass's
    // adjoint: <band(x_i), m b_c> = <x_i, band*(m b_c)>, one transform per removed component
    // instead of one per channel.
    let levels = &bands_of.levels;
    let adjoints: Vec<Vec<f64>> = match solve {
        Some(_) => (bands.par_iter())
            .map(|b| {
                let masked: Vec<f64> = (b.iter().zip(&fit_mask))
                    .map(|(&v, &m)| (m * v) as f64)
                    .collect();
                dwt::band_adjoint(&masked, levels)
            })
            .collect(),
        None => Vec::new(),
    };
    let refit: Vec<Option<Vec<f64>>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let chol = solve.as_ref().filter(|_| !channels.keep[i])?;
            let xi = x.row(i);
            let rhs = nalgebra::DVector::from_iterator(
                k,
                (adjoints.iter()).map(|g| xi.iter().zip(g).map(|(&v, g)| v as f64 * g).sum()),
            );
            Some(chol.solve(&rhs).iter().copied().collect())
        })
        .collect();
    // Each component's largest refitted weight: channels far below it are where the eye has
    // little weight.
    let largest: Vec<f64> = (0..k)
        .map(|c| {
            (refit.iter().flatten())
                .map(|f| f[c].abs())
                .fold(0.0, f64::max)
        })
        .collect();
    let weights = (0..n)
        .map(|i| match &refit[i] {
            _ if channels.keep[i] => Vec::new(),
            Some(fit) => (fit.iter().zip(&w.removed).zip(&largest))
                .map(|((&a, &c), &top)| {
                    let m = ica.mixing[(i, c)];
                    (if a.abs() < SMALL_WEIGHT * top {
                        smaller_of(a, m)
                    } else {
                        a
                    }) as f32
                })
                .collect(),
            None => (w.removed.iter())
                .map(|&c| ica.mixing[(i, c)] as f32)
                .collect(),
        })
        .collect();
    let taper = ((p.taper_s * fs).round() as usize).max(1);
    let sources = (w.removed.iter())
        .map(|&c| match p.removes_everywhere() {
            true => bands_of.source(c).to_vec(),
            false => detrend_under(&lowpassed(bands_of.source(c), p, fs), &w.mask, taper),
        })
        .collect();
    Correction { weights, sources }
}

/// A blink source as it is subtracted under the blinks: low-passed at
/// `BlinkParams::source_lowpass_hz` (zero phase). A blink has next to nothing above 15 Hz; the
/// source, a spatial filter of every channel, carries the EEG, muscle and sensor noise it lets
/// through at every frequency, and subtracted, that goes onto every channel. On the
/// independent families (issue 43, batch, every family at 50-200 uV, three seeds) 24 Hz took
/// the residual inside the blinks from 0.76-1.56x the ideal spatial filter's to 0.50-1.41x;
/// 10 Hz cut the blinks' own edges at 200 uV (runs 0.94 -> 1.69x), 20-32 Hz were within a few
/// percent of 24 Hz. The eye's whole activity (removed everywhere, steps and all) is not
/// filtered.
pub(super) fn lowpassed(source: &[f32], p: &BlinkParams, fs: f64) -> Vec<f32> {
    let mut out = source.to_vec();
    if p.source_lowpass_hz > 0.0 {
        crate::dsp::filter::zero_phase_lowpass(&mut out, fs, p.source_lowpass_hz as f32);
    }
    out
}

/// Below this fraction of a component's largest refitted weight, a channel's weight is
/// `smaller_of` the refit and the mixing matrix's.
const SMALL_WEIGHT: f64 = 0.5;

/// Of two estimates of a channel's weight on a component (the refit over the blinks and the
/// mixing matrix's), the smaller where they agree in sign, none where they do not: where the
/// blink has little weight (the back of the head) either estimate is mostly the EEG the fit
/// happened to see, and what is not removed cannot add a transient. On the EEGLAB sample
/// (20 s windows) this took the change of O1/Oz/O2 outside eye events from 1.88 % to 0.27 %
/// and the posterior samples changed by more than 20 uV from 334 to 182; the residual inside
/// simulated blinks fell too (50 uV: 60/78/65 % to 57/61/52 %).
fn smaller_of(refit: f64, mixing: f64) -> f64 {
    if refit * mixing <= 0.0 {
        0.0
    } else if refit.abs() < mixing.abs() {
        refit
    } else {
        mixing
    }
}

/// `source` less, over each stretch where `mask` is non-zero, the straight line through its
/// mean levels over the stretch's first and last `edge` samples (the fades); unchanged
/// elsewhere (the mask is zero there). A component carries slow activity besides the blink
/// (drift, frontal delta): subtracted under a mask, that would leave a step at each fade
/// and a hump between; less the line, only the excursion under the mask goes. With a mask
/// all ones (`Scope::Window`) nothing is changed.
pub fn detrend_under(source: &[f32], mask: &[f32], edge: usize) -> Vec<f32> {
    let mut out = source.to_vec();
    if mask.iter().all(|&m| m >= 1.0) {
        return out;
    }
    let mut t = 0;
    while t < mask.len() {
        if mask[t] <= 0.0 {
            t += 1;
            continue;
        }
        let from = t;
        while t < mask.len() && mask[t] > 0.0 {
            t += 1;
        }
        let to = t;
        let k = edge.clamp(1, ((to - from) / 2).max(1));
        let level = |r: std::ops::Range<usize>| -> (f64, f64) {
            let n = r.len() as f64;
            let mean = source[r.clone()].iter().map(|&v| v as f64).sum::<f64>() / n;
            (0.5 * (r.start + r.end - 1) as f64, mean)
        };
        let (t0, v0) = level(from..from + k);
        let (t1, v1) = level(to - k..to);
        // A stretch cut by the data's edge (a stream's newest samples, mid-blink) has no level
        // at that end: the other end's level holds across.
        let (v0, slope) = match (from == 0, to == mask.len()) {
            (false, false) if t1 > t0 => (v0, (v1 - v0) / (t1 - t0)),
            (false, _) => (v0, 0.0),
            (true, false) => (v1, 0.0),
            (true, true) => continue,
        };
        for (u, o) in out[from..to].iter_mut().enumerate() {
            *o -= (v0 + slope * ((from + u) as f64 - t0)) as f32;
        }
    }
    out
}
