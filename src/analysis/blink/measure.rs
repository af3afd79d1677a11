//! Measuring blink removal: simulated blinks with their truth and the score against it, and
//! the effect of any cleaning (ede's, MNE's) on a real recording, judged on blinks and eye
//! events found on the original independently of the cleaner.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::{BlinkJobError, DeblinkOptions, EegData};
use crate::dsp::blink::simulate::{self, SimBlink, microvolts_per_unit, propagation};
use crate::dsp::blink::{self, BlinkParams, dwt};
use crate::dsp::ica::Observations;
use crate::recording::ChannelType;
use crate::recording::Recording;

/// The ground truth `ede blinks simulate` writes beside the recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub seed: u64,
    pub rate_per_min: f64,
    pub amplitude_uv: f64,
    pub blinks: Vec<SimBlink>,
    /// Each channel that received blinks and its propagation factor (negative on an EOG channel
    /// where the recording's own blinks are inverted).
    pub channels: Vec<(String, f64)>,
    /// Peaks (seconds) of blinks the recording already had (`base_blinks`): simulated blinks
    /// keep 1 s away from them, and the score leaves out 0.5 s around each, since removing
    /// a real blink is no error.
    #[serde(default)]
    pub base_blinks: Vec<f64>,
}

/// The blinks a recording already has, for simulation on real EEG: excursions of the EOG
/// channels (both polarities; EOG montages differ) band-passed to 1-8 Hz above 5 robust SDs,
/// and the candidates of the blink detector on the frontal derivations (before any ICA).
/// Both err towards too many: a stretch left out of the score costs nothing, a real blink
/// scored as a false detection misleads. Peaks in seconds.
pub fn base_blinks(rec: &Recording) -> Result<Vec<f64>, BlinkJobError> {
    let params = BlinkParams::default();
    let gap_s = params.min_separation_s;
    let mut peaks: Vec<f64> = Vec::new();
    let eog: Vec<usize> = (0..rec.signals.len())
        .filter(|&i| rec.signals[i].kind == ChannelType::Eog && rec.signals[i].samples > 0)
        .collect();
    for &i in &eog {
        let fs = rec.signals[i].fs;
        let levels = dwt::levels_in_band(fs, params.band_hz);
        let b = dwt::band(&rec.read_all(i)?, &levels);
        let sigma = crate::dsp::blink::detect::robust_sigma(&b);
        let gap = (gap_s * fs) as usize;
        let half = (0.5 * fs) as usize;
        for sign in [1.0f32, -1.0] {
            let signed: Vec<f32> = b.iter().map(|v| sign * v).collect();
            let found = crate::dsp::blink::detect::peaks(&signed, 5.0 * sigma, gap, 0.2, half);
            peaks.extend(found.iter().map(|p| p.peak as f64 / fs));
        }
    }
    if let Ok(data) = EegData::load(rec, &DeblinkOptions::default()) {
        let c = data.candidates(&params);
        peaks.extend(c.iter().map(|&p| p as f64 / data.fs));
    }
    peaks.sort_by(f64::total_cmp);
    peaks.dedup_by(|a, b| (*a - *b).abs() < gap_s);
    Ok(peaks)
}

impl Truth {
    /// The added blinks of signal `i` of `rec`, in its physical unit (zeros if none).
    pub fn added(&self, rec: &Recording, i: usize) -> Vec<f32> {
        let s = &rec.signals[i];
        let factor = (self.channels.iter())
            .find(|(l, _)| *l == s.label)
            .map_or(0.0, |c| c.1);
        let per_unit = microvolts_per_unit(&s.unit).unwrap_or(1.0);
        if factor == 0.0 {
            return vec![0.0; s.samples];
        }
        (simulate::waveform(&self.blinks, s.fs, s.samples).into_iter())
            .map(|v| (v * factor / per_unit) as f32)
            .collect()
    }
}

/// Whole signals to write in place of the recording's: (signal index, samples).
pub type NewSamples = Vec<(usize, Vec<f32>)>;

/// The factors with each EOG channel's sign as the recording's own blinks have it: an EOG
/// electrode below the eye sees a blink with the opposite sign of one above it (the EEGLAB
/// sample's EOG1), so a simulated blink added with the frontal sign everywhere would contradict
/// every real blink of the recording there. The sign is that of the channel's 1-8 Hz band's
/// agreement with the frontopolar channel's at the recording's own blinks and eye events
/// (`base`, seconds); without those, or without a frontopolar channel, the factors stay
/// positive.
fn eog_polarities(
    rec: &Recording,
    channels: Vec<(String, f64)>,
    base: &[f64],
) -> Result<Vec<(String, f64)>, BlinkJobError> {
    let band_of = |i: usize| -> Result<Vec<f32>, BlinkJobError> {
        let levels = dwt::levels_in_band(rec.signals[i].fs, BlinkParams::default().band_hz);
        Ok(dwt::band(&rec.read_all(i)?, &levels))
    };
    let frontal = (channels.iter())
        .filter(|(l, f)| *f >= 0.85 && !crate::recording::channel::is_eog(l))
        .find_map(|(l, _)| rec.signal_index(l));
    let Some(frontal) = frontal.filter(|_| !base.is_empty()) else {
        return Ok(channels);
    };
    let reference = band_of(frontal)?;
    let fs = rec.signals[frontal].fs;
    let at: Vec<usize> = (base.iter())
        .map(|&t| (t * fs).round() as usize)
        .filter(|&k| k < reference.len())
        .collect();
    let mut out = Vec::with_capacity(channels.len());
    for (label, factor) in channels {
        let i = rec.signal_index(&label);
        let sign = match i {
            Some(i)
                if crate::recording::channel::is_eog(&label)
                    && rec.signals[i].samples == rec.signals[frontal].samples =>
            {
                let b = band_of(i)?;
                let dot: f64 = at.iter().map(|&k| (b[k] * reference[k]) as f64).sum();
                if dot < 0.0 { -1.0 } else { 1.0 }
            }
            _ => 1.0,
        };
        out.push((label, sign * factor));
    }
    Ok(out)
}

/// Adds simulated blinks to every channel with a propagation factor: the new samples of each
/// such signal and the truth.
pub fn simulate_blinks(
    rec: &Recording,
    seed: u64,
    rate_per_min: f64,
    amplitude_uv: f64,
) -> Result<(NewSamples, Truth), BlinkJobError> {
    if !(rate_per_min > 0.0 && rate_per_min <= 120.0) {
        return Err(BlinkJobError::Selection(format!(
            "the rate must be within (0, 120] blinks per minute, got {rate_per_min}"
        )));
    }
    if !(amplitude_uv > 0.0 && amplitude_uv.is_finite()) {
        return Err(BlinkJobError::Selection(format!(
            "the amplitude must be positive (microvolts), got {amplitude_uv}"
        )));
    }
    let channels: Vec<(String, f64)> = (rec.signals.iter())
        .filter(|s| microvolts_per_unit(&s.unit).is_some())
        .filter_map(|s| Some((s.label.clone(), propagation(&s.label)?)))
        .collect();
    if channels.is_empty() {
        return Err(BlinkJobError::Selection(
            "no channel has a known 10-20/10-10 position or an EOG label to put blinks on".into(),
        ));
    }
    let base = base_blinks(rec)?;
    let channels = eog_polarities(rec, channels, &base)?;
    let near_base = |b: &SimBlink| {
        (base.iter()).any(|&p| p > b.onset_s - 1.0 && p < b.onset_s + b.duration_s + 1.0)
    };
    let truth = Truth {
        seed,
        rate_per_min,
        amplitude_uv,
        blinks: simulate::schedule(rec.duration_s(), rate_per_min, amplitude_uv, seed)
            .into_iter()
            .filter(|b| !near_base(b))
            .collect(),
        channels,
        base_blinks: base,
    };
    let mut out = Vec::new();
    for (i, s) in rec.signals.iter().enumerate() {
        if !truth.channels.iter().any(|(l, _)| *l == s.label) {
            continue;
        }
        let mut x = rec.read_all(i)?;
        x.iter_mut()
            .zip(truth.added(rec, i))
            .for_each(|(v, a)| *v += a);
        out.push((i, x));
    }
    Ok((out, truth))
}

/// How a cleaning did against the truth.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    pub blinks_true: usize,
    pub blinks_found: usize,
    pub true_positives: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// RMS of (cleaned - clean) inside the true blinks over RMS of the added blinks there, %,
    /// over the cleaned EEG channels that received blinks.
    pub residual_inside_pct: f64,
    /// RMS of (cleaned - clean) outside the blinks (0.5 s margins) over the clean signal's
    /// RMS there, %, same channels.
    pub change_outside_pct: f64,
    pub rmse_inside: f64,
    pub rmse_outside: f64,
    /// The residual inside blinks that removing the ideal spatial filter's output would leave:
    /// see `spatial_floor_pct`. `None` when it cannot be computed (no blink added, or a
    /// singular covariance).
    pub spatial_floor_pct: Option<f64>,
    pub elapsed_s: f64,
}

/// A hit is a found blink within this many seconds of a true one (one-to-one).
pub const HIT_S: f64 = 0.15;

/// True blinks (peaks, seconds) matched one to one by found ones within `HIT_S`, the nearest
/// first.
pub fn matched(truth: &[f64], found: &[f64]) -> usize {
    let mut used = vec![false; found.len()];
    let mut tp = 0;
    for &t in truth {
        let best = (0..found.len())
            .filter(|&k| !used[k] && (found[k] - t).abs() <= HIT_S)
            .min_by(|&a, &b| (found[a] - t).abs().total_cmp(&(found[b] - t).abs()));
        if let Some(k) = best {
            used[k] = true;
            tp += 1;
        }
    }
    tp
}

/// The channels a score compares: without blinks, the blinks added, after cleaning, and
/// which channels count.
pub struct Compared<'a> {
    pub clean: &'a Observations,
    pub added: &'a Observations,
    pub cleaned: &'a Observations,
    pub scored: &'a [bool],
}

/// Scores found blink peaks (seconds) and a cleaning against the truth.
pub fn score(truth: &Truth, found_s: &[f64], fs: f64, c: &Compared<'_>, elapsed_s: f64) -> Score {
    let real = |t: f64| truth.base_blinks.iter().any(|&p| (p - t).abs() < 0.5);
    let found_s: Vec<f64> = found_s.iter().copied().filter(|&t| !real(t)).collect();
    let found_s = found_s.as_slice();
    let peaks: Vec<f64> = truth.blinks.iter().map(|b| b.peak_s).collect();
    let tp = matched(&peaks, found_s);
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let precision = ratio(tp, found_s.len());
    let recall = ratio(tp, truth.blinks.len());
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let n = c.clean.cols;
    let mut inside = vec![false; n];
    let mut near = vec![false; n];
    for b in &truth.blinks {
        let span = |a: f64, z: f64| {
            ((a * fs).floor().max(0.0) as usize)..((z * fs).ceil() as usize).min(n)
        };
        inside[span(b.onset_s, b.onset_s + b.duration_s)].fill(true);
        near[span(b.onset_s - 0.5, b.onset_s + b.duration_s + 0.5)].fill(true);
    }
    for &p in &truth.base_blinks {
        let lo = ((p - 0.5) * fs).floor().max(0.0) as usize;
        near[lo.min(n)..(((p + 0.5) * fs).ceil() as usize).min(n)].fill(true);
    }
    let blink = simulate::waveform(&truth.blinks, fs, n);
    let r = residuals(c, &blink, &inside, &near);
    Score {
        blinks_true: truth.blinks.len(),
        blinks_found: found_s.len(),
        true_positives: tp,
        precision,
        recall,
        f1,
        residual_inside_pct: r.inside_pct,
        change_outside_pct: r.outside_pct,
        rmse_inside: r.rmse_inside,
        rmse_outside: r.rmse_outside,
        spatial_floor_pct: r.floor_pct,
        elapsed_s,
    }
}

/// What a cleaning left of simulated blinks and what it changed besides.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Residuals {
    /// RMS of (cleaned - clean) where `inside` over RMS of the added blinks there, %, over
    /// the scored channels.
    pub inside_pct: f64,
    /// RMS of (cleaned - clean) where neither `inside` nor `near` over the clean signal's
    /// RMS there (less its mean), %.
    pub outside_pct: f64,
    pub rmse_inside: f64,
    pub rmse_outside: f64,
    /// `spatial_floor_pct` over `inside`.
    pub floor_pct: Option<f64>,
}

/// The residuals of cleaning `c` inside blinks (`inside`) and outside them (away from `near`);
/// `blink` is the added waveform at factor 1 (for the floor).
pub fn residuals(c: &Compared<'_>, blink: &[f64], inside: &[bool], near: &[bool]) -> Residuals {
    let n = c.clean.cols;
    let (mut err_in, mut blink_in, mut err_out, mut sig_out) = (0.0, 0.0, 0.0, 0.0);
    let (mut n_in, mut n_out) = (0usize, 0usize);
    for i in (0..c.clean.rows).filter(|&i| c.scored[i]) {
        let (x, a, y) = (c.clean.row(i), c.added.row(i), c.cleaned.row(i));
        let mean_out = {
            let (s, k) = (0..n)
                .filter(|&t| !near[t] && !inside[t])
                .fold((0.0, 0usize), |(s, k), t| (s + x[t] as f64, k + 1));
            s / k.max(1) as f64
        };
        for t in 0..n {
            let e = (y[t] - x[t]) as f64;
            if inside[t] {
                err_in += e * e;
                blink_in += (a[t] as f64).powi(2);
                n_in += 1;
            } else if !near[t] {
                err_out += e * e;
                sig_out += (x[t] as f64 - mean_out).powi(2);
                n_out += 1;
            }
        }
    }
    let pct = |e: f64, s: f64| if s > 0.0 { 100.0 * (e / s).sqrt() } else { 0.0 };
    Residuals {
        inside_pct: pct(err_in, blink_in),
        outside_pct: pct(err_out, sig_out),
        rmse_inside: (err_in / n_in.max(1) as f64).sqrt(),
        rmse_outside: (err_out / n_out.max(1) as f64).sqrt(),
        floor_pct: spatial_floor_pct(c, blink, inside, near),
    }
}

/// A reference for the residual inside blinks: any removal that subtracts the blink
/// topography a times a spatially filtered trace w^T x (ICA's A_c s_c is one) also subtracts
/// w^T times the EEG, a (w^T e(t)), inside the blinks. Over filters that pass the blink whole
/// (w^T a = 1), the minimum-variance one, w = C^-1 a / (a^T C^-1 a) with C the clean signal's
/// covariance outside blinks, leaves the least; this is its residual, % of the added blinks,
/// with the true topography (`blink` is the added waveform at factor 1, per sample). It
/// depends on the recording, not the method: frontal EEG the blink's topography cannot tell
/// apart stays in any spatial estimate of the blink.
fn spatial_floor_pct(
    c: &Compared<'_>,
    blink: &[f64],
    inside: &[bool],
    near: &[bool],
) -> Option<f64> {
    let rows: Vec<usize> = (0..c.clean.rows).filter(|&i| c.scored[i]).collect();
    let bb: f64 = blink.iter().map(|v| v * v).sum();
    if rows.len() < 2 || bb <= 0.0 {
        return None;
    }
    // Each channel's factor: the least-squares gain of its added blinks on the waveform.
    let a = nalgebra::DVector::from_iterator(
        rows.len(),
        rows.iter().map(|&i| {
            let added = c.added.row(i);
            blink
                .iter()
                .zip(added)
                .map(|(b, &v)| b * v as f64)
                .sum::<f64>()
                / bb
        }),
    );
    let out: Vec<usize> = (0..c.clean.cols).filter(|&t| !near[t]).collect();
    let centred: Vec<Vec<f64>> = (rows.iter())
        .map(|&i| {
            let x = c.clean.row(i);
            let mean = out.iter().map(|&t| x[t] as f64).sum::<f64>() / out.len().max(1) as f64;
            x.iter().map(|&v| v as f64 - mean).collect()
        })
        .collect();
    let cov = DMatrix::from_fn(rows.len(), rows.len(), |i, j| {
        out.iter()
            .map(|&t| centred[i][t] * centred[j][t])
            .sum::<f64>()
            / out.len().max(1) as f64
    });
    let ca = cov.cholesky()?.solve(&a);
    let w = &ca / a.dot(&ca);
    let (mut leak, mut held) = (0.0, 0.0);
    for t in (0..blink.len()).filter(|&t| inside[t]) {
        let l: f64 = (0..rows.len()).map(|k| w[k] * centred[k][t]).sum();
        leak += l * l;
        held += blink[t] * blink[t];
    }
    (held > 0.0).then(|| 100.0 * (leak / held).sqrt())
}

/// The clean channels of a simulated recording (`data` minus the truth's blinks) and the
/// blinks added to each.
pub fn unblinked(rec: &Recording, data: &EegData, truth: &Truth) -> (Observations, Observations) {
    let n = data.data.cols;
    let mut clean = data.data.clone();
    let mut added = Observations::new(data.data.rows, n, vec![0.0; data.data.rows * n]);
    for (k, &i) in data.signals.iter().enumerate() {
        let a = truth.added(rec, i);
        let row = k * n..(k + 1) * n;
        clean.data[row.clone()]
            .iter_mut()
            .zip(&a)
            .for_each(|(v, a)| *v -= a);
        added.data[row].copy_from_slice(&a[..n]);
    }
    (clean, added)
}

/// The effect of a cleaning on a real recording, judged on events found on the original
/// independently of any cleaner (`independent_events`), so that ede's and another tool's
/// cleanings are measured alike and a removal where no blink was cannot hide.
#[derive(Debug, Clone, Serialize)]
pub struct RealBlinkEffect {
    /// Blinks found on the frontal channel's band (`independent_events`).
    pub blinks: usize,
    /// Blinks and other eye events (the frontal and EOG channels' bands): what "outside
    /// blinks" stays away from.
    pub eye_events: usize,
    pub frontal: String,
    /// The blink-locked residual on the frontal channel, % (`blink_locked_residual`).
    pub frontal_residual_pct: f64,
    /// What that residual would be if the cleaned channel held no trace of any blink: the
    /// median, over random draws, of the same average taken at as many random times away from
    /// eye events (`residual_floor`). EEG that is not locked to blinks averages out only as
    /// one over the root of the epochs' count: below this no cleaning can go.
    pub frontal_floor_pct: f64,
    /// The same for every channel.
    pub residual_by_channel: Vec<ChannelValue>,
    pub posterior: Vec<String>,
    /// RMS of the change over RMS of the original outside +-0.5 s of every eye event,
    /// averaged over the posterior channels, %.
    pub posterior_change_pct: f64,
    /// Parietal and occipital channels present of `TRANSIENT_CHANNELS`.
    pub transient_channels: Vec<String>,
    /// Samples of those channels changed by more than `TRANSIENT_UV`: where a removal left a
    /// bump or a spike of its own, a blink has little weight.
    pub samples_changed_over_20uv: usize,
    /// The change of channels in the keep list, as `posterior_change_pct` (0 when they are
    /// left unchanged).
    pub kept_change_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChannelValue {
    pub channel: String,
    pub value: f64,
}

/// Channels whose large changes count as new transients: a blink barely reaches them.
pub const TRANSIENT_CHANNELS: [&str; 9] = ["O1", "Oz", "O2", "Pz", "POz", "PO3", "PO4", "P3", "P4"];
pub const TRANSIENT_UV: f64 = 20.0;

/// The independent detector's band, its threshold in SDs (plain, ddof = 0) and the least
/// distance of two peaks.
const EVENT_BAND_HZ: (f32, f32) = (1.0, 10.0);
const EVENT_SD: f64 = 4.0;
const EVENT_GAP_S: f64 = 1.0;

/// A channel band-passed to `EVENT_BAND_HZ` by second-order Butterworth high- and low-passes
/// run forwards and backwards: a filter the cleaner does not use.
fn event_band(x: &[f32], fs: f64) -> Vec<f32> {
    let mut b = x.to_vec();
    let filter = crate::dsp::filter::DisplayFilter {
        highpass: Some(EVENT_BAND_HZ.0),
        lowpass: Some(EVENT_BAND_HZ.1),
        ..Default::default()
    };
    crate::dsp::filter::zero_phase(&mut b, fs, &filter);
    b
}

/// The SD of `v` (ddof = 0).
fn sd(v: &[f32]) -> f64 {
    crate::dsp::stats::mean_sd(v.iter().map(|&a| a as f64)).1
}

/// Local maxima of `v` above `EVENT_SD` times `sd`, the tallest kept first where two lie
/// closer than `gap` samples (as scipy's `find_peaks` with `height` and `distance`).
fn tall_peaks(v: &[f32], sd: f64, gap: usize) -> Vec<usize> {
    let thr = (EVENT_SD * sd) as f32;
    let mut maxima: Vec<usize> = (1..v.len().saturating_sub(1))
        .filter(|&t| v[t] > thr && v[t] > v[t - 1] && v[t] >= v[t + 1])
        .collect();
    maxima.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
    let mut kept: Vec<usize> = Vec::new();
    for t in maxima {
        if kept.iter().all(|&k| k.abs_diff(t) >= gap) {
            kept.push(t);
        }
    }
    kept.sort_unstable();
    kept
}

/// Blinks and eye events of a recording found without any cleaner: blinks are the peaks of
/// the frontal channel's 1-10 Hz band above 4 SD, 1 s apart; eye events add the peaks of
/// each EOG channel's |band| (blinks, saccades, closures, either polarity). Samples.
pub fn independent_events(data: &EegData, frontal: usize) -> (Vec<usize>, Vec<usize>) {
    let gap = (EVENT_GAP_S * data.fs).round() as usize;
    let band = event_band(data.data.row(frontal), data.fs);
    let blinks = tall_peaks(&band, sd(&band), gap);
    let mut events = blinks.clone();
    for i in (0..data.data.rows).filter(|&i| data.channels.eog[i]) {
        let band = event_band(data.data.row(i), data.fs);
        let magnitude: Vec<f32> = band.iter().map(|v| v.abs()).collect();
        events.extend(tall_peaks(&magnitude, sd(&band), gap));
    }
    events.sort_unstable();
    events.dedup();
    (blinks, events)
}

/// The blink-locked residual of a channel: the original and the cleaned trace, high-passed
/// at 0.3 Hz, averaged over epochs from 1 s before to 1.5 s after each blink peak, each
/// average less its mean over the first 0.5 s; RMS of the cleaned average over the
/// original's, %. Leftover blink shape, and humps or steps a removal added beside it, all
/// stay in the average; EEG not locked to blinks averages out.
pub fn blink_locked_residual(original: &[f32], cleaned: &[f32], blinks: &[usize], fs: f64) -> f64 {
    blink_locked_ratio(original, blinks, cleaned, blinks, fs)
}

/// RMS of `cleaned`'s average at `at` over `original`'s at `blinks`, both taken as
/// `blink_locked_residual` takes them, %.
fn blink_locked_ratio(
    original: &[f32],
    blinks: &[usize],
    cleaned: &[f32],
    at: &[usize],
    fs: f64,
) -> f64 {
    let (pre, post) = ((1.0 * fs).round() as usize, (1.5 * fs).round() as usize);
    let base = (0.5 * fs).round() as usize;
    let average = |x: &[f32], at: &[usize]| -> Vec<f64> {
        let mut hp = x.to_vec();
        let filter = crate::dsp::filter::DisplayFilter {
            highpass: Some(0.3),
            ..Default::default()
        };
        crate::dsp::filter::zero_phase(&mut hp, fs, &filter);
        let mut avg = vec![0.0f64; pre + post];
        let mut k = 0usize;
        for &b in at.iter().filter(|&&b| b >= pre && b + post <= hp.len()) {
            for (a, &v) in avg.iter_mut().zip(&hp[b - pre..b + post]) {
                *a += v as f64;
            }
            k += 1;
        }
        avg.iter_mut().for_each(|a| *a /= k.max(1) as f64);
        let b0 = avg[..base].iter().sum::<f64>() / base.max(1) as f64;
        avg.iter().map(|a| a - b0).collect()
    };
    let rms = |v: &[f64]| (v.iter().map(|a| a * a).sum::<f64>() / v.len().max(1) as f64).sqrt();
    let (o, c) = (rms(&average(original, blinks)), rms(&average(cleaned, at)));
    if o > 0.0 { 100.0 * c / o } else { 0.0 }
}

/// The floor of `blink_locked_residual` on `cleaned` for `count` epochs: the median over
/// `FLOOR_DRAWS` draws of `count` random times at least 1.5 s from every eye event in
/// `events` (the epochs' own span), each average taken and normalised as the blinks' is
/// against the original's blink-locked average at `blinks`. 0 where no such times exist.
pub fn residual_floor(
    original: &[f32],
    cleaned: &[f32],
    (blinks, events): (&[usize], &[usize]),
    fs: f64,
) -> f64 {
    let (pre, post) = ((1.0 * fs).round() as usize, (1.5 * fs).round() as usize);
    let n = cleaned.len();
    let clear = |t: usize| events.iter().all(|&e| e.abs_diff(t) as f64 >= 1.5 * fs);
    let free: Vec<usize> = (pre..n.saturating_sub(post))
        .filter(|&t| clear(t))
        .collect();
    let count = blinks.len();
    if free.is_empty() || count == 0 {
        return 0.0;
    }
    let mut rng = crate::recording::demo::SplitMix(0x00f1_0012);
    let mut draws: Vec<f64> = (0..FLOOR_DRAWS)
        .map(|_| {
            let times: Vec<usize> = (0..count)
                .map(|_| free[((rng.uniform() * free.len() as f64) as usize).min(free.len() - 1)])
                .collect();
            blink_locked_ratio(original, blinks, cleaned, &times, fs)
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    draws[draws.len() / 2]
}

/// Random draws of `residual_floor`.
const FLOOR_DRAWS: usize = 200;

/// Measures `cleaned` (channels as `original`'s) against `original` on events found on the
/// original's `frontal` channel and its EOG channels (`independent_events`).
pub fn real_blink_effect(
    original: &EegData,
    cleaned: &Observations,
    frontal: &str,
    posterior: &[String],
) -> Result<RealBlinkEffect, BlinkJobError> {
    let labels = &original.channels.labels;
    let find = |name: &str| {
        (labels.iter())
            .position(|l| l.trim().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| BlinkJobError::Selection(format!("no channel named {name:?}")))
    };
    let f = find(frontal)?;
    let post: Vec<usize> = posterior
        .iter()
        .map(|p| find(p))
        .collect::<Result<_, _>>()?;
    let (fs, x) = (original.fs, &original.data);
    let n = x.cols;
    let (blinks, events) = independent_events(original, f);
    let residual_by_channel: Vec<ChannelValue> = (0..x.rows)
        .map(|i| ChannelValue {
            channel: labels[i].clone(),
            value: blink_locked_residual(x.row(i), cleaned.row(i), &blinks, fs),
        })
        .collect();
    let margin = (0.5 * fs) as usize;
    let mut near = vec![false; n];
    for &p in &events {
        near[p.saturating_sub(margin)..(p + margin).min(n)].fill(true);
    }
    let out: Vec<usize> = (0..n).filter(|&t| !near[t]).collect();
    let change = |rows: &[usize]| -> f64 {
        let per: Vec<f64> = (rows.iter())
            .map(|&i| {
                let (o, c) = (x.row(i), cleaned.row(i));
                let mean = out.iter().map(|&t| o[t] as f64).sum::<f64>() / out.len().max(1) as f64;
                let e: f64 = out.iter().map(|&t| ((c[t] - o[t]) as f64).powi(2)).sum();
                let s: f64 = out.iter().map(|&t| (o[t] as f64 - mean).powi(2)).sum();
                if s > 0.0 { 100.0 * (e / s).sqrt() } else { 0.0 }
            })
            .collect();
        per.iter().sum::<f64>() / per.len().max(1) as f64
    };
    let transient: Vec<usize> = (TRANSIENT_CHANNELS.iter())
        .filter_map(|name| find(name).ok())
        .collect();
    let samples_changed_over_20uv = (transient.iter())
        .map(|&i| {
            // Rows are in microvolts (`EegData::scale`).
            let limit = TRANSIENT_UV as f32;
            (x.row(i).iter().zip(cleaned.row(i)))
                .filter(|(o, c)| (*c - *o).abs() > limit)
                .count()
        })
        .sum();
    let kept: Vec<usize> = (0..x.rows).filter(|&i| original.channels.keep[i]).collect();
    Ok(RealBlinkEffect {
        blinks: blinks.len(),
        eye_events: events.len(),
        frontal: labels[f].clone(),
        frontal_residual_pct: residual_by_channel[f].value,
        frontal_floor_pct: residual_floor(x.row(f), cleaned.row(f), (&blinks, &events), fs),
        residual_by_channel,
        posterior: post.iter().map(|&i| labels[i].clone()).collect(),
        posterior_change_pct: change(&post),
        transient_channels: transient.iter().map(|&i| labels[i].clone()).collect(),
        samples_changed_over_20uv,
        kept_change_pct: change(&kept),
    })
}

/// The score of a cleaning of a simulated recording `rec` (whose truth is `truth`).
pub fn score_cleaning(
    rec: &Recording,
    data: &EegData,
    truth: &Truth,
    cleaned: &Observations,
    blinks: &[blink::Blink],
    elapsed_s: f64,
) -> Score {
    let (clean, added) = unblinked(rec, data, truth);
    let scored: Vec<bool> = (0..data.data.rows)
        .map(|k| !data.channels.keep[k] && added.row(k).iter().any(|&v| v != 0.0))
        .collect();
    let found: Vec<f64> = blinks.iter().map(|b| b.peak as f64 / data.fs).collect();
    let compared = Compared {
        clean: &clean,
        added: &added,
        cleaned,
        scored: &scored,
    };
    score(truth, &found, data.fs, &compared, elapsed_s)
}
