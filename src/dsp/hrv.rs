//! Heart-rate variability of a beat sequence (Task Force of the ESC and NASPE, 1996): the
//! time-domain measures over NN intervals, and LF/HF power of the tachogram resampled evenly.
//!
//! An NN interval joins two consecutive beats that are both normal; a successive difference
//! joins two NN intervals that share a beat, so an ectopic beat removes the two intervals
//! around it and the differences that would span it.

use serde::Serialize;

use super::spectrum::{Welch, WelchParams, band_power};

/// The MIT-BIH labels of beats that start in the sinus node: normal, bundle branch block
/// (left, right), and atrial and nodal escape beats.
pub const NORMAL_LABELS: [&str; 5] = ["N", "L", "R", "e", "j"];

/// Whether a beat with this label counts as normal. An unlabelled beat (the detector's) does:
/// the detector does not classify.
pub fn is_normal(label: Option<&str>) -> bool {
    label.is_none_or(|l| NORMAL_LABELS.contains(&l))
}

/// The rate the tachogram is resampled at for its spectrum, and the Welch segment over it.
pub const RESAMPLE_HZ: f64 = 4.0;
pub const SPECTRUM_SEGMENT_S: f64 = 64.0;
/// The frequency bands, Hz, half-open.
pub const LF_BAND: (f64, f64) = (0.04, 0.15);
pub const HF_BAND: (f64, f64) = (0.15, 0.4);

/// The NN intervals of beats at `times` (seconds, increasing) with their normal flags, as
/// `(time of the interval's second beat, interval in ms, index of its first beat)`.
pub fn nn_intervals(times: &[f64], normal: &[bool]) -> Vec<(f64, f64, usize)> {
    (0..times.len().saturating_sub(1))
        .filter(|&i| normal[i] && normal[i + 1])
        .map(|i| (times[i + 1], (times[i + 1] - times[i]) * 1e3, i))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hrv {
    pub mean_nn_ms: f64,
    /// Sample standard deviation (ddof 1).
    pub sdnn_ms: f64,
    pub rmssd_ms: f64,
    /// Share of successive differences over 50 ms, percent.
    pub pnn50_pct: f64,
    /// The mean of the instantaneous rates 60000 / NN.
    pub mean_hr_bpm: f64,
    /// Power in the bands, ms^2; `None` when the NN series spans less than one spectrum segment.
    pub lf_ms2: Option<f64>,
    pub hf_ms2: Option<f64>,
    pub lf_hf: Option<f64>,
    pub beats: usize,
    pub nn_intervals: usize,
    pub successive_differences: usize,
}

/// Whether a successive difference of `diff_ms` is over 50 ms (pNN50's count). Beats found on
/// a grid of `fs` samples per second are decided in whole samples: at 360 Hz a difference of
/// exactly 18 samples is 50 ms and does not count, whatever float noise its milliseconds carry
/// (a third of record 100's differences at the boundary were counted before).
pub fn over_50_ms(diff_ms: f64, fs: Option<f64>) -> bool {
    match fs {
        Some(fs) if fs > 0.0 => (diff_ms * fs / 1e3).round().abs() * 1e3 > 50.0 * fs,
        _ => diff_ms.abs() > 50.0,
    }
}

/// The measures of beats at `times` (seconds, increasing) whose `normal` flags say which are
/// normal, on a grid of `fs` samples per second where they were found on one (`over_50_ms`);
/// `None` with fewer than two NN intervals.
pub fn hrv(times: &[f64], normal: &[bool], fs: Option<f64>) -> Option<Hrv> {
    assert_eq!(times.len(), normal.len());
    let nn = nn_intervals(times, normal);
    if nn.len() < 2 {
        return None;
    }
    let values: Vec<f64> = nn.iter().map(|v| v.1).collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sdnn = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let diffs: Vec<f64> = (nn.windows(2))
        .filter(|w| w[1].2 == w[0].2 + 1)
        .map(|w| w[1].1 - w[0].1)
        .collect();
    let (rmssd, pnn50) = if diffs.is_empty() {
        (f64::NAN, f64::NAN)
    } else {
        let k = diffs.len() as f64;
        (
            (diffs.iter().map(|d| d * d).sum::<f64>() / k).sqrt(),
            100.0 * diffs.iter().filter(|&&d| over_50_ms(d, fs)).count() as f64 / k,
        )
    };
    let (lf, hf) = match band_powers(&nn) {
        Some((lf, hf)) => (Some(lf), Some(hf)),
        None => (None, None),
    };
    Some(Hrv {
        mean_nn_ms: mean,
        sdnn_ms: sdnn,
        rmssd_ms: rmssd,
        pnn50_pct: pnn50,
        mean_hr_bpm: values.iter().map(|v| 60_000.0 / v).sum::<f64>() / n,
        lf_ms2: lf,
        hf_ms2: hf,
        lf_hf: lf.zip(hf).map(|(l, h)| l / h),
        beats: times.len(),
        nn_intervals: nn.len(),
        successive_differences: diffs.len(),
    })
}

/// The tachogram (NN interval in ms at its second beat's time) linearly interpolated at
/// `RESAMPLE_HZ` from its first to its last point.
pub fn resample(nn: &[(f64, f64, usize)]) -> Vec<f64> {
    let Some((first, last)) = nn.first().zip(nn.last()) else {
        return Vec::new();
    };
    let n = ((last.0 - first.0) * RESAMPLE_HZ).floor() as usize + 1;
    let mut j = 0;
    (0..n)
        .map(|i| {
            let t = first.0 + i as f64 / RESAMPLE_HZ;
            while j + 2 < nn.len() && nn[j + 1].0 <= t {
                j += 1;
            }
            let (a, b) = (nn[j], nn[(j + 1).min(nn.len() - 1)]);
            if b.0 <= a.0 {
                a.1
            } else {
                a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0)
            }
        })
        .collect()
}

/// LF and HF power (ms^2) of the resampled tachogram by Welch (Hann, 64 s segments, half
/// overlapped, mean removed per segment).
fn band_powers(nn: &[(f64, f64, usize)]) -> Option<(f64, f64)> {
    let even = resample(nn);
    let params = WelchParams::from_seconds(RESAMPLE_HZ, SPECTRUM_SEGMENT_S, 0.5).ok()?;
    let welch = Welch::new(RESAMPLE_HZ, params);
    let psd = welch.psd(&even)?;
    let f = welch.frequencies();
    Some((band_power(&f, &psd, LF_BAND), band_power(&f, &psd, HF_BAND)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ectopic_beats_break_intervals_and_differences() {
        let times = [0.0, 1.0, 2.1, 2.5, 3.6, 4.6, 5.5];
        let normal = [true, true, true, false, true, true, true];
        let nn = nn_intervals(&times, &normal);
        let ms: Vec<f64> = nn.iter().map(|v| v.1.round()).collect();
        assert_eq!(ms, [1000.0, 1100.0, 1000.0, 900.0]);
        let h = hrv(&times, &normal, None).unwrap();
        // Differences: 1100-1000 and 900-1000 only (none across the ectopic beat).
        assert_eq!(h.successive_differences, 2);
        assert!((h.rmssd_ms - 100.0).abs() < 1e-9);
        assert_eq!(h.pnn50_pct, 100.0);
        assert!((h.mean_nn_ms - 1000.0).abs() < 1e-9);
        assert!(h.lf_ms2.is_none());
    }

    #[test]
    fn fifty_ms_is_decided_in_samples() {
        // 18 samples at 360 Hz are 50 ms: not over it, though the float difference may be.
        let fs = 360.0;
        let d = (300.0 + 18.0) / fs * 1e3 - 300.0 / fs * 1e3;
        assert!(over_50_ms(d, None) || d <= 50.0);
        assert!(!over_50_ms(d, Some(fs)));
        assert!(!over_50_ms(-d, Some(fs)));
        assert!(over_50_ms(19.0 / fs * 1e3, Some(fs)));
        assert!(over_50_ms(50.1, None) && !over_50_ms(50.0, None));
    }

    #[test]
    fn a_slow_sinusoidal_rhythm_puts_its_power_in_lf() {
        // 0.1 Hz modulation (LF) of a 60 bpm rhythm, 10 minutes. (Beats sample the rhythm
        // once a second and linear interpolation damps what it passes: at 0.1 Hz by 7 %.)
        let mut times = vec![0.0];
        while *times.last().unwrap() < 600.0 {
            let t: f64 = *times.last().unwrap();
            times.push(t + 1.0 + 0.05 * (2.0 * std::f64::consts::PI * 0.1 * t).sin());
        }
        let normal = vec![true; times.len()];
        let h = hrv(&times, &normal, None).unwrap();
        let (lf, hf) = (h.lf_ms2.unwrap(), h.hf_ms2.unwrap());
        assert!(lf > 20.0 * hf, "lf {lf} hf {hf}");
        // A sine of amplitude 50 ms holds 1250 ms^2.
        assert!((lf / 1250.0 - 1.0).abs() < 0.15, "lf {lf}");
    }

    #[test]
    fn resampling_interpolates_between_points() {
        let nn = [(0.0, 1000.0, 0), (1.0, 1200.0, 1), (2.0, 1000.0, 2)];
        let r = resample(&nn);
        assert_eq!(r.len(), 9);
        assert!((r[2] - 1100.0).abs() < 1e-9 && (r[6] - 1100.0).abs() < 1e-9);
    }
}
