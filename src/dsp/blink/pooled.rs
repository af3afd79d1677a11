//! Step 4 with the blink's topography pooled over every blink found (issue 43). A window of
//! 20 s holds about five blinks: the topography its ICA component (or a refit over its
//! blinks) gives carries the EEG those few blinks happened to coincide with, and that error
//! scales with the blink. On the independent families (docs/BENCHMARKS.md) it left 2-3x the
//! residual of the ideal spatial filter at every amplitude. The blink's field is the same
//! for all of a recording's blinks, so it is estimated once from all of them:
//!
//! 1. The blink subspace: the leading generalised eigenvector of the channels' 1-8 Hz
//!    covariance over the blinks against that away from every eye event (the spatial filter
//!    that best tells blink from EEG); the topography is the difference of the two
//!    covariances times it.
//! 2. The blink source: the minimum-variance filter of that topography under the EEG's
//!    covariance away from eye events (`C^-1 a / a^T C^-1 a`, what the score's floor uses
//!    with the true topography), applied to the whole recording.
//! 3. Blinks are found again on that source, where they stand out of far less EEG than on
//!    any single channel or ICA component: a 50 uV blink the windows' detector missed, or
//!    one the detection channels called an eye movement because it sat on a saccade, is
//!    found there, and a missed blink leaves all of itself (one in twenty is a 22 %
//!    residual). Each reaches to where the source is back at its level (`widened`).
//! 4. The field is fitted again over those blinks' cores (`cores`), and its topography times
//!    its source, less the source's straight line under each blink, is subtracted over the
//!    blinks (with margins and fades) from every channel not kept.
//!
//! The batch gathers the covariances over the whole recording (`BlinkField::fit`); a stream
//! adds each hop's to running sums (`FieldSums`), so that its field is that of every blink so
//! far.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::classify::{self, EventClass};
use super::detect::{peaks, robust_sigma};
use super::{Blink, BlinkParams, dwt};
use crate::dsp::ica::Observations;

/// The recording's blink: its topography (per channel, microvolts per unit of the source)
/// and the filter that gives the source (`filter . x`, `filter . topography = 1`).
#[derive(Debug, Clone)]
pub struct BlinkField {
    pub topography: Vec<f64>,
    pub filter: Vec<f64>,
}

/// The blinks' spans widened by this much for the fit, seconds: on the independent families
/// 0.05 s left less than 0.1 s and 0.15 s (raised cosines 1.09-1.18x the floor against
/// 1.65-1.67x and 1.79-1.82x), and no margin left the fit without the blinks' edges
/// (undershoot 2.1x).
const FIT_MARGIN_S: f64 = 0.05;

/// At least this many blinks before a stream's field is fitted.
pub const MIN_BLINKS: usize = 3;

/// A stream's field is settled from this many blinks on: its topography carries the EEG of
/// the blinks it was fitted on, tens of percent of it with a dozen (docs/BENCHMARKS.md in git history, "What
/// the blinks so far allow"). On the independent families at 50-200 uV live leaves 0.59-1.43x
/// the ideal spatial filter's residual over the blinks from the 30th on, 0.65-1.64x from the
/// 20th and up to 2.6x over the whole recording; a stream replayed with the true blink
/// waveform behind its topography does little better (up to 2.43x over the whole recording).
pub const SETTLED_BLINKS: usize = 30;

/// At least this many blinks found by the windows before the batch pools a field; with fewer
/// it keeps the windows' own fields. A stream's field from its first 5-15 blinks shrank the
/// topography away from the frontopolar sites (F3 0.38 against 0.45 after 50 blinks) and
/// left 22-28 % inside them against the windows' 10-13 %; a stream has no better choice
/// (its windows alone left more still), a batch of few blinks has.
pub const MIN_BATCH_BLINKS: usize = 15;

/// Running sums of the products of a few channels' samples: what a covariance over samples
/// gathered piecewise (a stream's hops) needs.
#[derive(Debug, Clone)]
struct Sums {
    products: DMatrix<f64>,
    sums: DVector<f64>,
    count: f64,
}

impl Sums {
    fn new(n: usize) -> Self {
        Sums {
            products: DMatrix::zeros(n, n),
            sums: DVector::zeros(n),
            count: 0.0,
        }
    }

    /// Adds the columns `at` of `rows`.
    fn add(&mut self, rows: &[&[f32]], at: &[usize]) {
        if at.is_empty() {
            return;
        }
        let data = DMatrix::from_fn(rows.len(), at.len(), |i, k| rows[i][at[k]] as f64);
        self.products += &data * data.transpose();
        self.sums += data.column_sum();
        self.count += at.len() as f64;
    }

    fn merge(&mut self, other: &Sums) {
        self.products += &other.products;
        self.sums += &other.sums;
        self.count += other.count;
    }

    fn covariance(&self) -> DMatrix<f64> {
        let c = self.count.max(1.0);
        &self.products / c - (&self.sums * self.sums.transpose()) / (c * c)
    }
}

/// What a field is fitted from, gathered over a recording or a stream's hops: the channels'
/// 1-8 Hz covariance over the blinks and away from eye events, and their broadband covariance
/// away from eye events.
#[derive(Debug, Clone)]
pub struct FieldSums {
    blink_band: Sums,
    quiet_band: Sums,
    quiet: Sums,
    /// Blinks added.
    pub blinks: usize,
}

/// At most this many samples go into a covariance from one call of `FieldSums::add`
/// (evenly spread): 64 channels need far fewer, and a night has hundreds of millions.
const MAX_COV_SAMPLES: usize = 200_000;

fn thinned(at: Vec<usize>) -> Vec<usize> {
    let step = at.len().div_ceil(MAX_COV_SAMPLES).max(1);
    at.into_iter().step_by(step).collect()
}

impl FieldSums {
    pub fn new(channels: usize) -> Self {
        FieldSums {
            blink_band: Sums::new(channels),
            quiet_band: Sums::new(channels),
            quiet: Sums::new(channels),
            blinks: 0,
        }
    }

    /// Adds samples `range` of `x` (channels x samples) and its channels' `bands`: those of
    /// `blinks` (widened by `FIT_MARGIN_S`) and those at least half a second from every span
    /// of `events` (eye events and blinks). Blinks count where they peak in `range`.
    pub fn add(
        &mut self,
        (x, bands): (&Observations, &Observations),
        range: std::ops::Range<usize>,
        blinks: &[Blink],
        events: &[Blink],
        fs: f64,
    ) {
        let len = x.cols;
        let margin = (FIT_MARGIN_S * fs).round() as usize;
        let mut is_blink = vec![false; len];
        for b in blinks {
            is_blink[b.start.saturating_sub(margin)..(b.end + margin + 1).min(len)].fill(true);
        }
        let quiet_margin = (0.5 * fs).round() as usize;
        let mut near = vec![false; len];
        for b in events.iter().chain(blinks) {
            near[b.start.saturating_sub(quiet_margin)..(b.end + quiet_margin + 1).min(len)]
                .fill(true);
        }
        let range = range.start.min(len)..range.end.min(len);
        let inside: Vec<usize> = range.clone().filter(|&t| is_blink[t]).collect();
        let quiet: Vec<usize> = range.clone().filter(|&t| !near[t]).collect();
        let (inside, quiet) = (thinned(inside), thinned(quiet));
        let band_rows: Vec<&[f32]> = (0..x.rows).map(|i| bands.row(i)).collect();
        let raw_rows: Vec<&[f32]> = (0..x.rows).map(|i| x.row(i)).collect();
        self.blink_band.add(&band_rows, &inside);
        self.quiet_band.add(&band_rows, &quiet);
        self.quiet.add(&raw_rows, &quiet);
        self.blinks += blinks.iter().filter(|b| range.contains(&b.peak)).count();
    }

    /// Adds what `other` gathered.
    pub fn merge(&mut self, other: &FieldSums) {
        self.blink_band.merge(&other.blink_band);
        self.quiet_band.merge(&other.quiet_band);
        self.quiet.merge(&other.quiet);
        self.blinks += other.blinks;
    }

    /// The field (steps 1-2 of the module's notes); `None` with fewer than `MIN_BLINKS`
    /// blinks, too few samples or singular covariances.
    pub fn field(&self) -> Option<BlinkField> {
        let n = self.quiet.sums.len();
        if self.blinks < MIN_BLINKS
            || self.quiet.count < (4 * n) as f64
            || self.blink_band.count < n as f64
        {
            return None;
        }
        let (cb, cn, c) = (
            self.blink_band.covariance(),
            self.quiet_band.covariance(),
            self.quiet.covariance(),
        );
        let ridge = |m: &DMatrix<f64>| m + DMatrix::identity(n, n) * (1e-9 * m.trace() / n as f64);
        // The leading generalised eigenvector of (cb, cn): with cn = L L^T, the leading
        // eigenvector v of L^-1 cb L^-T, and w = L^-T v.
        let lower = ridge(&cn).cholesky()?.l();
        let linv = lower.try_inverse()?;
        let m = &linv * &cb * linv.transpose();
        let m = (&m + m.transpose()) * 0.5;
        let eig = m.symmetric_eigen();
        let top = (0..n).max_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]))?;
        let w = linv.transpose() * eig.eigenvectors.column(top);
        let a: DVector<f64> = (&cb - &cn) * &w;
        // The minimum-variance filter of `a` under the EEG's broadband covariance.
        let ca = ridge(&c).cholesky()?.solve(&a);
        let norm = a.dot(&ca);
        if !(norm.is_finite() && norm > 0.0) {
            return None;
        }
        let filter = ca / norm;
        Some(BlinkField {
            topography: a.iter().copied().collect(),
            filter: filter.iter().copied().collect(),
        })
    }
}

impl BlinkField {
    /// The field of `blinks` (samples of `x`, channels x samples) against the EEG away from
    /// `events` (every eye event and blink), from the channels' `bands` (`dwt::band` of each
    /// row), turned so that blinks point up on its source. `None` as `FieldSums::field`.
    pub fn fit(
        x: &Observations,
        bands: &Observations,
        blinks: &[Blink],
        events: &[Blink],
        fs: f64,
    ) -> Option<BlinkField> {
        let mut sums = FieldSums::new(x.rows);
        sums.add((x, bands), 0..x.cols, blinks, events, fs);
        sums.field()?.pointing_up(x, blinks)
    }

    /// The field turned so that its source is positive at `blinks` on `x` (together), or
    /// as it is where there are none.
    pub fn pointing_up(mut self, x: &Observations, blinks: &[Blink]) -> Option<BlinkField> {
        let source = self.source(x);
        let at_peaks: f64 = blinks.iter().map(|b| source[b.peak] as f64).sum();
        if at_peaks < 0.0 {
            self.topography.iter_mut().for_each(|v| *v = -*v);
            self.filter.iter_mut().for_each(|v| *v = -*v);
        }
        Some(self)
    }

    /// The blink source of `x` (channels as the field's).
    pub fn source(&self, x: &Observations) -> Vec<f32> {
        let mut s = vec![0.0f64; x.cols];
        for (i, &f) in self.filter.iter().enumerate() {
            for (v, &u) in s.iter_mut().zip(x.row(i)) {
                *v += f * u as f64;
            }
        }
        s.into_iter().map(|v| v as f32).collect()
    }
}

/// Blinks on the field's `source` (step 3): peaks of its 1-8 Hz band above `component_z`
/// robust SDs and `min_relative_height` of the windows' blinks' median height there, shaped as
/// blinks on the smoothed source (`classify`), away from the other eye events `others`
/// (peaks); the windows' own `blinks` stay. Sorted by peak, merged where closer than
/// `min_separation_s`.
pub fn blinks_on_source(
    source: &[f32],
    blinks: &[Blink],
    others: &[usize],
    p: &BlinkParams,
    fs: f64,
) -> Vec<Blink> {
    let levels = dwt::levels_in_band(fs, p.band_hz);
    let band = dwt::band(source, &levels);
    let mut heights: Vec<f32> = blinks.iter().map(|b| band[b.peak]).collect();
    heights.sort_by(f32::total_cmp);
    let typical = heights.get(heights.len() / 2).copied().unwrap_or(0.0);
    let threshold =
        (p.component_z as f32 * robust_sigma(&band)).max(p.min_relative_height as f32 * typical);
    let gap = (p.min_separation_s * fs).round().max(1.0) as usize;
    let half = (0.5 * fs).round() as usize;
    let hit = (p.hit_s * fs).round() as usize;
    let reference = classify::smooth(source, fs);
    let min_height = 0.5 * threshold;
    let mut out: Vec<Blink> = blinks.to_vec();
    for pk in peaks(&band, threshold, gap, p.extent as f32, half) {
        let known = blinks.iter().any(|b| b.peak.abs_diff(pk.peak) <= hit);
        let other = others.iter().any(|&o| o.abs_diff(pk.peak) <= hit);
        if known || other {
            continue;
        }
        if classify::classify(&reference, pk.peak, hit, fs, min_height).0 == EventClass::Blink {
            out.push(Blink {
                peak: pk.peak,
                start: pk.start,
                end: pk.end,
            });
        }
    }
    out.sort_by_key(|b| b.peak);
    super::merged(out.into_iter().map(|b| widened(b, &reference, fs)), gap)
}

/// A blink's extent on the smoothed source `r` widened, against its level before the blink
/// (the median over 0.6-0.3 s before the peak) and within `RETURN` of its height: back to the
/// last sample before the peak at that level (up to `BEFORE_S`), and on to the last sample
/// away from it up to `AFTER_S` after. The band-pass's extent cuts a slow fall and the lid's
/// overshoot as it reopens, whose residual then stays (the `undershoot` family: 4.5x the floor
/// at 100 uV). The start is not the first sample away from the level: a blink on a saccade
/// (the EEGLAB sample's 4.1 and 73.2 s) is away from the level the saccade left, and a
/// removal from there put the saccade's step, through the field, on every channel (180 uV at
/// FPz, 11 uV at the back of the head).
fn widened(b: Blink, r: &[f32], fs: f64) -> Blink {
    let Some(level) = level_before(&b, r, fs) else {
        return b;
    };
    let height = r[b.peak] - level;
    if height <= 0.0 {
        return b;
    }
    let at = |s: f64| (b.peak as f64 + s * fs).round().max(0.0) as usize;
    let away = |t: usize| (r[t] - level).abs() >= RETURN * height;
    let first = at(-BEFORE_S).min(b.peak);
    let last = at(AFTER_S).min(r.len() - 1);
    let start = (first..b.peak)
        .rev()
        .find(|&t| r[t] - level < RETURN * height)
        .map_or(first, |t| t + 1);
    let end = (b.peak..=last).rev().find(|&t| away(t)).unwrap_or(b.peak);
    Blink {
        peak: b.peak,
        start: b.start.min(start),
        end: b.end.max(end),
    }
}

/// Each blink's core on the smoothed source `r`: the samples around its peak within which the
/// source stays above `CORE` of its height over the level before it. The field is fitted
/// there: samples where the blink is small add the EEG's chance covariance with it and little
/// of the blink.
pub fn cores(blinks: &[Blink], r: &[f32], fs: f64) -> Vec<Blink> {
    (blinks.iter())
        .map(|b| {
            let Some(level) = level_before(b, r, fs) else {
                return *b;
            };
            let cut = level + CORE * (r[b.peak] - level);
            let start = (b.start..b.peak)
                .rev()
                .find(|&t| r[t] < cut)
                .map_or(b.start, |t| t + 1);
            let end = (b.peak..=b.end.min(r.len() - 1))
                .find(|&t| r[t] < cut)
                .unwrap_or(b.end);
            Blink {
                peak: b.peak,
                start,
                end,
            }
        })
        .collect()
}

const CORE: f32 = 0.3;

/// The smoothed source's level before blink `b` (its median over 0.6-0.3 s before the peak,
/// as `classify` reads it); `None` at the data's start.
fn level_before(b: &Blink, r: &[f32], fs: f64) -> Option<f32> {
    let at = |s: f64| (b.peak as f64 + s * fs).round().max(0.0) as usize;
    let (lo, hi) = (at(-0.6).min(r.len()), at(-0.3).min(r.len()));
    if hi <= lo + 1 || b.peak >= r.len() {
        return None;
    }
    let mut before = r[lo..hi].to_vec();
    let mid = before.len() / 2;
    Some(*before.select_nth_unstable_by(mid, f32::total_cmp).1)
}

/// See `widened`.
const RETURN: f32 = 0.1;
const BEFORE_S: f64 = 0.3;
const AFTER_S: f64 = 0.8;

/// What a field removes from `x` (a recording or a stream's window): the blinks on its
/// source (`blinks_on_source`, from the windows' `found` and away from `others`) and the
/// source to subtract, times each channel's topography: low-passed (`removal::lowpassed`),
/// under the blinks' mask (margins and fades), less its straight line under each stretch
/// (`removal::detrend_under`).
pub fn removed(
    field: &BlinkField,
    x: &Observations,
    (found, others): (&[Blink], &[usize]),
    p: &BlinkParams,
    fs: f64,
) -> (Vec<Blink>, Vec<f32>, Vec<f32>) {
    let (blinks, source) = found_on(field, x, (found, others), p, fs);
    let mask = super::removal::blink_mask(&blinks, x.cols, p, fs);
    let taper = ((p.taper_s * fs).round() as usize).max(1);
    let slow = super::removal::lowpassed(&source, p, fs);
    let masked = (super::detrend_under(&slow, &mask, taper).iter().zip(&mask))
        .map(|(v, m)| v * m)
        .collect();
    (blinks, masked, source)
}

/// The blinks on a field's source over `x` (`blinks_on_source`) and the source.
pub fn found_on(
    field: &BlinkField,
    x: &Observations,
    (found, others): (&[Blink], &[usize]),
    p: &BlinkParams,
    fs: f64,
) -> (Vec<Blink>, Vec<f32>) {
    let source = field.source(x);
    (blinks_on_source(&source, found, others, p, fs), source)
}

/// The channels' 1-8 Hz bands over `range` of `x` (zeros elsewhere): each band-passed over
/// `range` and the deepest filter's reach either side, which is all a stream's hop adds to
/// the field's sums (the whole window each hop took the 64 x 512 Hz stream from 75x to 58x
/// real time).
pub fn channel_bands_near(
    x: &Observations,
    range: std::ops::Range<usize>,
    p: &BlinkParams,
    fs: f64,
) -> Observations {
    let levels = dwt::levels_in_band(fs, p.band_hz);
    let reach = 8 << levels.iter().max().copied().unwrap_or(0);
    let (lo, hi) = (
        range.start.saturating_sub(reach),
        (range.end + reach).min(x.cols),
    );
    let rows: Vec<Vec<f32>> = (0..x.rows)
        .into_par_iter()
        .map(|i| {
            let mut row = vec![0.0f32; x.cols];
            if lo < hi {
                row[lo..hi].copy_from_slice(&dwt::band(&x.row(i)[lo..hi], &levels));
            }
            row
        })
        .collect();
    Observations::from_rows(&rows)
}

/// The channels' 1-8 Hz bands (`dwt::band` of each row).
pub fn channel_bands(x: &Observations, p: &BlinkParams, fs: f64) -> Observations {
    let levels = dwt::levels_in_band(fs, p.band_hz);
    let rows: Vec<Vec<f32>> = (0..x.rows)
        .into_par_iter()
        .map(|i| dwt::band(x.row(i), &levels))
        .collect();
    Observations::from_rows(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::demo::SplitMix;

    /// The source is low-passed before it is subtracted: white noise on every channel (what
    /// a spatial filter passes of sensor noise and muscle) stays where it was instead of
    /// going, through the topography, onto every channel under each blink, and the blinks
    /// themselves are still removed whole.
    #[test]
    fn the_removal_leaves_the_sources_fast_noise_and_takes_the_blink() {
        let (fs, len) = (128.0, 60 * 128);
        let topography = [1.0, 0.6, 0.45, 0.3, 0.2, 0.1, 0.05, 0.04];
        let norm: f64 = topography.iter().map(|a| a * a).sum();
        let field = BlinkField {
            topography: topography.to_vec(),
            filter: topography.iter().map(|a| a / norm).collect(),
        };
        let peaks: Vec<usize> = (0..12).map(|k| (3.0 * fs) as usize + k * 600).collect();
        let mut blink = vec![0.0f64; len];
        for &p in &peaks {
            for (t, v) in blink.iter_mut().enumerate() {
                let dt = (t as f64 - p as f64) / fs;
                let sd = if dt < 0.0 { 0.03 } else { 0.08 };
                *v += 100.0 * (-0.5 * (dt / sd).powi(2)).exp();
            }
        }
        let mut rng = SplitMix(7);
        let with_noise = |sd: f64, rng: &mut SplitMix| {
            let rows: Vec<Vec<f32>> = (topography.iter())
                .map(|a| {
                    (blink.iter())
                        .map(|b| (a * b + sd * rng.gauss()) as f32)
                        .collect()
                })
                .collect();
            Observations::from_rows(&rows)
        };
        let x = with_noise(3.0, &mut rng);
        let found: Vec<Blink> = (peaks.iter())
            .map(|&p| Blink {
                peak: p,
                start: p - 13,
                end: p + 38,
            })
            .collect();
        let removed_with = |hz: f64, x: &Observations| {
            let p = BlinkParams {
                source_lowpass_hz: hz,
                ..BlinkParams::default()
            };
            removed(&field, x, (&found, &[]), &p, fs)
        };
        // What the removal gets wrong under the mask: the subtracted source less the blink.
        let error = |(_, masked, _): &(Vec<Blink>, Vec<f32>, Vec<f32>)| -> f64 {
            (masked.iter().zip(&blink))
                .filter(|(m, _)| **m != 0.0)
                .map(|(&m, &b)| (m as f64 - b).powi(2))
                .sum()
        };
        let (filtered, raw) = (removed_with(24.0, &x), removed_with(0.0, &x));
        assert_eq!(filtered.0.len(), peaks.len());
        assert!(
            error(&filtered) < 0.5 * error(&raw),
            "{} against {}",
            error(&filtered),
            error(&raw)
        );
        // Without noise, the blinks go whole.
        let alone = removed_with(24.0, &with_noise(0.0, &mut rng));
        assert!(error(&alone) < 1e-4 * blink.iter().map(|b| b * b).sum::<f64>());
    }
}
