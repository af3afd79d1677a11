//! Step 1, the candidates: the detection channels band-passed and turned so that blinks point
//! up, the peaks enough of them share, and the class of each (`classify`).

use super::*;

/// The detection channels' traces (a channel, or the difference of two), from a channel's
/// samples by index.
pub(super) fn detection_traces(
    channels: &Channels,
    row: impl Fn(usize) -> Vec<f32>,
) -> Vec<Vec<f32>> {
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

/// Step 1's outcome on a window.
#[derive(Debug, Clone)]
pub(super) struct Detection {
    /// The detection channels' blink bands, turned so that blinks point up.
    pub(super) bands: Vec<Vec<f32>>,
    /// Each detection channel's polarity (+1 or -1: `polarities`).
    pub(super) signs: Vec<f64>,
    /// The sum of the turned monopolar detection channels, smoothed (`classify::smooth`).
    pub(super) reference: Vec<f32>,
    /// The least rise and fall of an event on `reference` that `classify` takes for a blink.
    pub(super) min_height: f32,
    pub(super) candidates: Vec<Peak>,
    /// The class of each candidate.
    pub(super) classes: Vec<EventClass>,
}

impl Detection {
    /// The candidates whose class the removal takes.
    pub(super) fn removable(&self, p: &BlinkParams) -> Vec<Peak> {
        (self.candidates.iter().zip(&self.classes))
            .filter(|(_, c)| removable(**c, p))
            .map(|(pk, _)| *pk)
            .collect()
    }
}

/// Whether events of `class` are removed: blinks, and with `remove_eye_movements` every
/// class but uncertain.
pub(super) fn removable(class: EventClass, p: &BlinkParams) -> bool {
    match class {
        EventClass::Blink => true,
        EventClass::Uncertain => false,
        EventClass::EyeMovement | EventClass::EyeClosure => p.remove_eye_movements,
    }
}

/// How far from a band's peak the shape test looks for the event's own peak: the hit
/// tolerance.
pub(super) fn reach(p: &BlinkParams, fs: f64) -> usize {
    (p.hit_s * fs).round() as usize
}

/// Step 1 on window `x`: the band-passed detection channels, turned so that blinks point up,
/// the candidates on them and their classes.
pub(super) fn detect_candidates(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
) -> Detection {
    let levels = dwt::levels_in_band(fs, p.band_hz);
    let gap = (p.min_separation_s * fs).round().max(1.0) as usize;
    let half = (0.5 * fs).round() as usize;
    let hit = reach(p, fs);
    let mut derivations = detection_traces(channels, |i| x.row(i).to_vec());
    let mut bands: Vec<Vec<f32>> = derivations
        .par_iter()
        .map(|d| dwt::band(d, &levels))
        .collect();
    let signs = polarities(x, channels, &bands, &levels);
    for ((d, b), &s) in derivations.iter_mut().zip(&mut bands).zip(&signs) {
        if s < 0.0 {
            d.iter_mut().chain(b.iter_mut()).for_each(|v| *v = -*v);
        }
    }
    // The shape is judged on monopolar traces: a bipolar Fp - F derivation turns a negative
    // frontal wave into a positive peak (the EEGLAB sample at 203.1 s), a blink is positive
    // at Fp itself.
    let mut monopolar: Vec<usize> = Vec::new();
    let mut summed = vec![0.0f32; x.cols];
    for ((&(a, b), d), &sign) in channels.derivations.iter().zip(&derivations).zip(&signs) {
        if b.is_none() {
            summed.iter_mut().zip(d).for_each(|(v, &w)| *v += w);
        } else if !monopolar.contains(&a) {
            monopolar.push(a);
            let turned = x.row(a).iter().map(|&w| sign as f32 * w);
            summed.iter_mut().zip(turned).for_each(|(v, w)| *v += w);
        }
    }
    let reference = classify::smooth(&summed, fs);
    let min_height = 0.5 * p.candidate_z as f32 * robust_sigma(&dwt::band(&reference, &levels));
    let groups: Vec<bool> = (channels.derivations.iter())
        .map(|&(a, b)| b.is_none() && channels.eog[a])
        .collect();
    let candidates = candidates(&bands, &groups, p, (gap, half, hit));
    let mut classes: Vec<EventClass> = (candidates.iter())
        .map(|c| classify::classify(&reference, c.peak, hit, fs, min_height).0)
        .collect();
    falls_off_from_the_eyes(x, channels, &candidates, (&levels, fs), &mut classes);
    Detection {
        bands,
        signs,
        reference,
        min_height,
        candidates,
        classes,
    }
}

/// Each detection channel's polarity: +1 where blinks are positive on it. A bipolar frontal
/// derivation (Fp - F) always is; a single channel (an EOG) is turned to agree with the
/// frontopolar electrode's band where there is one (blinks are positive there in any
/// reference), else so that its band's largest excursions (skewness) point up.
pub(super) fn polarities(
    x: &Observations,
    channels: &Channels,
    bands: &[Vec<f32>],
    levels: &[usize],
) -> Vec<f64> {
    let frontopolar = ["FP1", "FP2", "FPZ", "AF7", "AF8", "AF3", "AF4"];
    let fp = (0..channels.labels.len()).find(|&i| {
        !channels.eog[i] && frontopolar.contains(&electrode_name(&channels.labels[i]).as_str())
    });
    let fp_band = (channels.derivations.iter().any(|d| d.1.is_none()))
        .then_some(fp)
        .flatten()
        .map(|i| dwt::band(x.row(i), levels));
    (channels.derivations.iter().zip(bands))
        .map(|(&(a, b), band)| {
            let agreement: f64 = match (b, &fp_band) {
                (Some(_), _) => 1.0,
                (None, Some(f)) if fp != Some(a) => {
                    band.iter().zip(f).map(|(&u, &v)| (u * v) as f64).sum()
                }
                _ => band.iter().map(|&v| (v as f64).powi(3)).sum(),
            };
            if agreement < 0.0 { -1.0 } else { 1.0 }
        })
        .collect()
}

/// The candidate blink peaks of window `x` (samples), before any ICA.
pub fn candidate_peaks(
    x: &Observations,
    fs: f64,
    channels: &Channels,
    p: &BlinkParams,
) -> Vec<usize> {
    (detect_candidates(x, fs, channels, p).candidates.iter())
        .map(|c| c.peak)
        .collect()
}

/// Step 1: peaks that enough of the derivations of one group share (`groups[d]`: EOG or
/// frontal); the tallest stands for each.
pub(super) fn candidates(
    bands: &[Vec<f32>],
    groups: &[bool],
    p: &BlinkParams,
    (gap, half, hit): (usize, usize, usize),
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
    let need = |g: bool| {
        let n = groups.iter().filter(|&&e| e == g).count();
        ((p.min_derivations * n as f64).ceil() as usize).max(1)
    };
    let (need_eog, need_frontal) = (need(true), need(false));
    let mut out: Vec<Peak> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        let mut seen = vec![false; bands.len()];
        while j < all.len() && all[j].0.peak - all[i].0.peak <= hit {
            seen[all[j].1] = true;
            j += 1;
        }
        let seen_in = |g: bool| {
            (seen.iter().zip(groups))
                .filter(|&(&s, &e)| s && e == g)
                .count()
        };
        if seen_in(true) >= need_eog || seen_in(false) >= need_frontal {
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

/// At the frontal row an eye's event is at most this share of the frontopolar one: a blink's
/// field falls off steeply from the eyes (the EEGLAB sample's blinks: F3, Fz, F4 at 0.12-0.46
/// of FPz), a burst of frontal EEG does not (its events at 176.3 and 235.4 s: 1.05-1.08).
const FRONTAL_ROW_SHARE: f32 = 0.95;
/// The span (s each side of a candidate's peak) over which each channel's band is measured
/// (RMS): an oscillation need not peak on every channel at the same sample.
const SPAN_S: f64 = 0.15;

/// Events whose band on the frontal row (the cathodes of the frontal pairs, Fp - F) reaches
/// `FRONTAL_ROW_SHARE` of the frontopolar one (their anodes), each the median over the pairs
/// of its RMS near the peak less the channel's own activity in quadrature (a small blink over
/// EEG as large as itself is still a blink), are no eye's: they become uncertain, and are
/// left alone. Without frontal pairs (EOG alone) nothing is judged.
fn falls_off_from_the_eyes(
    x: &Observations,
    channels: &Channels,
    candidates: &[Peak],
    (levels, fs): (&[usize], f64),
    classes: &mut [EventClass],
) {
    let pairs: Vec<(usize, usize)> = (channels.derivations.iter())
        .filter_map(|&(a, b)| Some((a, b?)))
        .collect();
    if pairs.is_empty() || classes.iter().all(|&c| c == EventClass::Uncertain) {
        return;
    }
    let mut rows: Vec<usize> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    rows.sort_unstable();
    rows.dedup();
    let bands: Vec<(Vec<f32>, f32)> = (rows.par_iter())
        .map(|&i| {
            let b = dwt::band(x.row(i), levels);
            let noise = robust_sigma(&b);
            (b, noise)
        })
        .collect();
    let half = (SPAN_S * fs).round() as usize;
    let excess = |i: usize, at: usize| {
        let (b, noise) = &bands[rows.binary_search(&i).expect("a pair's channel")];
        let r = &b[at.saturating_sub(half)..(at + half + 1).min(b.len())];
        let ms = r.iter().map(|v| v * v).sum::<f32>() / r.len() as f32;
        (ms - noise * noise).max(0.0).sqrt()
    };
    for (c, class) in candidates.iter().zip(classes.iter_mut()) {
        if *class == EventClass::Uncertain {
            continue;
        }
        let mut shares: Vec<f32> = (pairs.iter())
            .map(|&(a, b)| excess(b, c.peak) / excess(a, c.peak).max(f32::MIN_POSITIVE))
            .collect();
        shares.sort_by(f32::total_cmp);
        if shares[shares.len() / 2] >= FRONTAL_ROW_SHARE {
            *class = EventClass::Uncertain;
        }
    }
}
