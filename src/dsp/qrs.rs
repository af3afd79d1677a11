//! QRS detection after Pan & Tompkins (1985), for recordings whose beats are not annotated:
//!
//! 1. band-pass 5-15 Hz (Butterworth, zero phase, so no delay to undo);
//! 2. five-point derivative, squared;
//! 3. moving-window integration over 150 ms, centred;
//! 4. peaks of the integrated signal at least 200 ms apart (the refractory period) are
//!    classified with adaptive signal and noise levels: threshold = noise + 0.25 (signal -
//!    noise), levels learnt over the first 2 s and updated by 1/8 per peak;
//! 5. search back: when no QRS came for 1.66 mean RR intervals (the last 8), the largest
//!    skipped peak above half the threshold is taken;
//! 6. T-wave check: a peak within 360 ms of the previous QRS whose steepest slope is below
//!    half of that QRS's is a T wave;
//! 7. the fiducial point is the largest deflection of the band-passed signal near the
//!    integrated peak, moved to the largest deflection of the ECG (high-passed at 1 Hz,
//!    low-passed at 40 Hz) within 50 ms of it: the R peak, where MIT-BIH annotates beats.

use super::filter::{DisplayFilter, zero_phase};

/// The R peaks (sample indices, increasing) of ECG `x` sampled at `fs`. Non-finite samples
/// (gaps) are read as zero.
pub fn detect(x: &[f32], fs: f64) -> Vec<usize> {
    let n = x.len();
    let secs = |s: f64| (s * fs).round().max(1.0) as usize;
    if n < secs(1.0) || fs < 50.0 {
        return Vec::new();
    }
    let clean: Vec<f32> = x
        .iter()
        .map(|v| if v.is_finite() { *v } else { 0.0 })
        .collect();
    let band = |lo: f32, hi: f32| {
        let mut y = clean.clone();
        let f = DisplayFilter {
            highpass: Some(lo),
            lowpass: Some(hi),
            ..Default::default()
        };
        zero_phase(&mut y, fs, &f);
        y
    };
    let bp = band(5.0, 15.0);
    let ecg = band(1.0, 40.0);
    let mut slope = vec![0f32; n];
    for i in 2..n.saturating_sub(2) {
        slope[i] = (2.0 * (bp[i + 1] - bp[i - 1]) + bp[i + 2] - bp[i - 2]) * (fs as f32 / 8.0);
    }
    let mwi = moving_average(&slope.iter().map(|d| d * d).collect::<Vec<_>>(), secs(0.15));
    let refractory = secs(0.2);
    let peaks = separated_peaks(&mwi, refractory);

    let learn = secs(2.0).min(n);
    let mut signal = mwi[..learn].iter().copied().fold(0.0, f32::max) / 3.0;
    let mut noise = mwi[..learn].iter().sum::<f32>() / learn as f32 / 2.0;
    let threshold = |s: f32, nz: f32| nz + 0.25 * (s - nz);
    let max_slope = |p: usize| {
        let (a, b) = (p.saturating_sub(secs(0.075)), (p + secs(0.075)).min(n));
        slope[a..b].iter().map(|v| v.abs()).fold(0.0, f32::max)
    };
    let mut qrs: Vec<usize> = Vec::new();
    let mut last_slope = 0.0f32;
    let mut rr: Vec<usize> = Vec::new();
    for (pi, &p) in peaks.iter().enumerate() {
        let v = mwi[p];
        // Search back over the peaks skipped since the last QRS.
        if let (Some(&last), false) = (qrs.last(), rr.is_empty()) {
            let mean_rr = rr.iter().sum::<usize>() as f64 / rr.len() as f64;
            if (p - last) as f64 > 1.66 * mean_rr {
                let half = 0.5 * threshold(signal, noise);
                let missed = peaks[..pi]
                    .iter()
                    .copied()
                    .filter(|&q| q > last + refractory && q + refractory < p && mwi[q] > half)
                    .max_by(|&a, &b| mwi[a].total_cmp(&mwi[b]));
                if let Some(q) = missed {
                    signal = 0.25 * mwi[q] + 0.75 * signal;
                    push_rr(&mut rr, q - last);
                    qrs.push(q);
                    last_slope = max_slope(q);
                }
            }
        }
        if v >= threshold(signal, noise) {
            let s = max_slope(p);
            let t_wave = qrs
                .last()
                .is_some_and(|&last| p - last < secs(0.36) && s < 0.5 * last_slope);
            if t_wave {
                noise = 0.125 * v + 0.875 * noise;
                continue;
            }
            if let Some(&last) = qrs.last() {
                push_rr(&mut rr, p - last);
            }
            qrs.push(p);
            last_slope = s;
            signal = 0.125 * v + 0.875 * signal;
        } else {
            noise = 0.125 * v + 0.875 * noise;
        }
    }
    qrs.iter()
        .map(|&p| {
            let q = largest_deflection(&bp, p, secs(0.075));
            largest_deflection(&ecg, q, secs(0.05))
        })
        .collect()
}

fn push_rr(rr: &mut Vec<usize>, interval: usize) {
    if rr.len() == 8 {
        rr.remove(0);
    }
    rr.push(interval);
}

/// The centred moving average over `width` samples (shorter at the ends).
fn moving_average(x: &[f32], width: usize) -> Vec<f32> {
    let mut prefix = Vec::with_capacity(x.len() + 1);
    prefix.push(0f64);
    for &v in x {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + v as f64);
    }
    let half = width / 2;
    (0..x.len())
        .map(|i| {
            let (a, b) = (i.saturating_sub(half), (i + half + 1).min(x.len()));
            ((prefix[b] - prefix[a]) / (b - a) as f64) as f32
        })
        .collect()
}

/// Local maxima of `x`, each the largest within `distance` samples either side (the earlier
/// one of equal neighbours).
fn separated_peaks(x: &[f32], distance: usize) -> Vec<usize> {
    let mut candidates: Vec<usize> = (1..x.len().saturating_sub(1))
        .filter(|&i| x[i] > x[i - 1] && x[i] >= x[i + 1])
        .collect();
    // Largest first: each kept peak silences its neighbourhood.
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        x[candidates[b]]
            .total_cmp(&x[candidates[a]])
            .then(a.cmp(&b))
    });
    let mut keep = vec![true; candidates.len()];
    for &k in &order {
        if !keep[k] {
            continue;
        }
        let p = candidates[k];
        let from = candidates.partition_point(|&c| c + distance <= p);
        let to = candidates.partition_point(|&c| c < p + distance);
        for (j, keep_j) in keep.iter_mut().enumerate().take(to).skip(from) {
            if j != k {
                *keep_j = false;
            }
        }
    }
    let mut j = 0;
    candidates.retain(|_| {
        j += 1;
        keep[j - 1]
    });
    candidates
}

/// The index of the largest |x| within `radius` samples of `at`.
fn largest_deflection(x: &[f32], at: usize, radius: usize) -> usize {
    let (a, b) = (at.saturating_sub(radius), (at + radius + 1).min(x.len()));
    (a..b)
        .max_by(|&i, &j| x[i].abs().total_cmp(&x[j].abs()))
        .unwrap_or(at)
}

/// Detected beats against reference beats: each reference beat matches at most one detection
/// within `tolerance` samples (the usual 150 ms), nearest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeatMatch {
    pub true_positives: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
}

impl BeatMatch {
    pub fn new(detected: &[usize], reference: &[usize], tolerance: usize) -> Self {
        let mut used = vec![false; detected.len()];
        let mut tp = 0;
        for &r in reference {
            let from = detected.partition_point(|&d| d + tolerance < r);
            let best = (from..detected.len())
                .take_while(|&i| detected[i] <= r + tolerance)
                .filter(|&i| !used[i])
                .min_by_key(|&i| detected[i].abs_diff(r));
            if let Some(i) = best {
                used[i] = true;
                tp += 1;
            }
        }
        BeatMatch {
            true_positives: tp,
            false_positives: detected.len() - tp,
            false_negatives: reference.len() - tp,
        }
    }

    /// TP / (TP + FN).
    pub fn sensitivity(&self) -> f64 {
        self.true_positives as f64 / (self.true_positives + self.false_negatives).max(1) as f64
    }

    /// TP / (TP + FP).
    pub fn positive_predictivity(&self) -> f64 {
        self.true_positives as f64 / (self.true_positives + self.false_positives).max(1) as f64
    }
}
