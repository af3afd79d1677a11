//! Epochs around events and their average, as MNE-Python's `Epochs(...).average()` computes
//! them: the window's samples from `round(tmin * fs)` to `round(tmax * fs)` (ties to even, as
//! NumPy rounds), the baseline's samples those whose time `k / fs` lies in `[bmin, bmax]` (the
//! same float comparison as MNE's), an epoch dropped where a channel's peak-to-peak amplitude
//! exceeds its type's `reject` or falls below its `flat` limit (bad channels ignored), the mean
//! and the standard deviation over the kept epochs in f64. Everything here works on samples in
//! memory, channel-major; `analysis::epochs` reads them and names the events.

use rayon::prelude::*;

/// The window's first and last sample offsets from the event (inclusive).
pub fn window(tmin: f64, tmax: f64, fs: f64) -> Result<(i64, i64), String> {
    if !(tmin.is_finite() && tmax.is_finite() && fs > 0.0) {
        return Err(format!("tmin {tmin} s and tmax {tmax} s must be numbers"));
    }
    let (a, b) = (
        (tmin * fs).round_ties_even() as i64,
        (tmax * fs).round_ties_even() as i64,
    );
    if b < a {
        return Err(format!("tmax ({tmax} s) is before tmin ({tmin} s)"));
    }
    Ok((a, b))
}

/// The baseline's samples as indices into the window `first..=last` (offsets): those with
/// `bmin <= k / fs <= bmax` (`None` ends: the window's); an error where none is inside.
pub fn baseline_range(
    (first, last): (i64, i64),
    fs: f64,
    (bmin, bmax): (Option<f64>, Option<f64>),
) -> Result<(usize, usize), String> {
    let time = |k: i64| k as f64 / fs;
    let inside = |k: i64| bmin.is_none_or(|b| time(k) >= b) && bmax.is_none_or(|b| time(k) <= b);
    let lo = (first..=last).find(|&k| inside(k));
    let hi = (first..=last).rev().find(|&k| inside(k));
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo <= hi => Ok(((lo - first) as usize, (hi - first) as usize + 1)),
        _ => Err(format!(
            "the baseline ({} to {} s) holds no sample of the epoch ({} to {} s)",
            bmin.map_or("start".into(), |b| b.to_string()),
            bmax.map_or("end".into(), |b| b.to_string()),
            time(first),
            time(last)
        )),
    }
}

/// Per channel, the limits an epoch is judged by, in the channel's own unit (`None`: none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    pub reject: Vec<Option<f64>>,
    pub flat: Vec<Option<f64>>,
}

/// Why an epoch was dropped.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Keep,
    /// Channels whose peak-to-peak exceeded their `reject` limit.
    TooLarge(Vec<usize>),
    /// Channels whose peak-to-peak was under their `flat` limit.
    Flat(Vec<usize>),
}

/// The verdict on one epoch from each channel's peak-to-peak amplitude (NaN: a channel with
/// no data there, judged too large where it has a limit: nothing can be said of it).
pub fn judge(ptp: &[f64], limits: &Limits) -> Verdict {
    let mut large = Vec::new();
    let mut flat = Vec::new();
    for (c, &p) in ptp.iter().enumerate() {
        let r = limits.reject.get(c).copied().flatten();
        let f = limits.flat.get(c).copied().flatten();
        if r.is_some_and(|r| p > r || p.is_nan()) {
            large.push(c);
        } else if f.is_some_and(|f| p < f) {
            flat.push(c);
        }
    }
    match (large.is_empty(), flat.is_empty()) {
        (false, _) => Verdict::TooLarge(large),
        (true, false) => Verdict::Flat(flat),
        _ => Verdict::Keep,
    }
}

/// Peak-to-peak of `x`; NaN where it holds a NaN.
fn peak_to_peak(x: &[f32]) -> f64 {
    let (lo, hi) = (x.iter()).fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    });
    match x.iter().any(|v| v.is_nan()) {
        true => f64::NAN,
        false => hi as f64 - lo as f64,
    }
}

/// An epoch's samples baseline-corrected in place: each channel's mean over `baseline`
/// subtracted.
pub fn subtract_baseline(epoch: &mut [f64], n: usize, baseline: Option<(usize, usize)>) {
    let Some((a, b)) = baseline else { return };
    for x in epoch.chunks_exact_mut(n) {
        let mean = x[a..b].iter().sum::<f64>() / (b - a) as f64;
        x.iter_mut().for_each(|v| *v -= mean);
    }
}

/// The mean and the standard deviation (ddof 1; 0 for one epoch) of kept epochs, per channel
/// and sample, channel-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Average {
    pub n_epochs: usize,
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
}

/// Epochs whose channel `c` of epoch `i` is `read(i, c)` (`n` values; `None`: epoch `i` is
/// not available), judged, baseline-corrected and averaged; returns the average of the kept
/// ones and each epoch's verdict (`None` where `read` had no data). Two passes over the
/// samples where they lie, in parallel: the verdicts over epochs (peak-to-peak does not depend
/// on the baseline), then the sums over channels, whose accumulators stay in the cache
/// (summing whole epochs into channel-major accumulators of a megabyte was memory-bound).
pub fn average<'a>(
    count: usize,
    (channels, n): (usize, usize),
    baseline: Option<(usize, usize)>,
    limits: &Limits,
    read: impl Fn(usize, usize) -> Option<&'a [f32]> + Sync,
) -> (Average, Vec<Option<Verdict>>) {
    let judged = !limits
        .reject
        .iter()
        .chain(&limits.flat)
        .all(Option::is_none);
    let verdicts: Vec<Option<Verdict>> = (0..count)
        .into_par_iter()
        .map(|i| {
            let mut ptp = vec![0.0; channels];
            for (c, p) in ptp.iter_mut().enumerate() {
                let x = read(i, c)?;
                if judged {
                    *p = peak_to_peak(x);
                }
            }
            Some(judge(&ptp, limits))
        })
        .collect();
    let kept: Vec<usize> = (0..count)
        .filter(|&i| verdicts[i] == Some(Verdict::Keep))
        .collect();
    let k = kept.len() as f64;
    let per_channel: Vec<(Vec<f64>, Vec<f64>)> = (0..channels)
        .into_par_iter()
        .map(|c| {
            let (mut sum, mut sq) = (vec![0.0; n], vec![0.0; n]);
            for &i in &kept {
                let x = read(i, c).expect("read in the first pass");
                let level = baseline.map_or(0.0, |(a, b)| {
                    x[a..b].iter().map(|&v| v as f64).sum::<f64>() / (b - a) as f64
                });
                for ((s, q), &v) in sum.iter_mut().zip(&mut sq).zip(x) {
                    let v = v as f64 - level;
                    *s += v;
                    *q += v * v;
                }
            }
            let mean: Vec<f64> = sum.iter().map(|s| s / k.max(1.0)).collect();
            let sd = (sq.iter().zip(&mean))
                .map(|(q, m)| match kept.len() {
                    0 | 1 => 0.0,
                    _ => ((q - k * m * m) / (k - 1.0)).max(0.0).sqrt(),
                })
                .collect();
            (mean, sd)
        })
        .collect();
    let (mean, sd): (Vec<Vec<f64>>, Vec<Vec<f64>>) = per_channel.into_iter().unzip();
    (
        Average {
            n_epochs: kept.len(),
            mean: mean.concat(),
            sd: sd.concat(),
        },
        verdicts,
    )
}

/// The global field power of channel-major `data` (`n` samples per channel) over `channels`:
/// their standard deviation across channels at each sample (ddof 0), as MNE draws it for EEG.
pub fn gfp(data: &[f64], n: usize, channels: &[usize]) -> Vec<f64> {
    let k = channels.len().max(1) as f64;
    (0..n)
        .map(|t| {
            let m = channels.iter().map(|&c| data[c * n + t]).sum::<f64>() / k;
            let v = channels
                .iter()
                .map(|&c| (data[c * n + t] - m).powi(2))
                .sum::<f64>()
                / k;
            v.sqrt()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_baselines_are_decided_in_samples() {
        // 128 Hz: -0.2 s is -25.6 samples, 0.8 s 102.4 (MNE: -26..=102, 129 samples).
        assert_eq!(window(-0.2, 0.8, 128.0).unwrap(), (-26, 102));
        // Ties go to even, as NumPy's round: -24.5 -> -24, 2.5 -> 2.
        assert_eq!(window(-0.245, 0.025, 100.0).unwrap(), (-24, 2));
        assert!(window(0.5, 0.1, 100.0).is_err());
        // The baseline -0.2..0 at 128 Hz: from -25 (-0.1953 s) to 0, both inside.
        assert_eq!(
            baseline_range((-26, 102), 128.0, (Some(-0.2), Some(0.0))).unwrap(),
            (1, 27)
        );
        // At 1 kHz, -0.2 s is sample -200 exactly and is inside.
        assert_eq!(
            baseline_range((-200, 800), 1000.0, (Some(-0.2), Some(0.0))).unwrap(),
            (0, 201)
        );
        assert_eq!(
            baseline_range((-26, 102), 128.0, (None, Some(0.0))).unwrap(),
            (0, 27)
        );
        assert!(baseline_range((0, 10), 100.0, (Some(0.5), Some(0.6))).is_err());
    }

    #[test]
    fn epochs_are_judged_and_averaged_as_written_out() {
        let n = 5;
        // Two channels; epoch 1 has a 300 swing on channel 0; epoch 2 is flat on channel 1.
        let epochs: Vec<Vec<f64>> = vec![
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 12.0, 9.0, 11.0, 10.0],
            vec![0.0, 300.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0],
            vec![2.0, 1.0, 0.0, 1.0, 2.0, 5.0, 5.0, 5.0, 5.0, 5.0],
            vec![3.0, 3.0, 5.0, 2.0, 1.0, 8.0, 9.0, 7.0, 6.0, 9.0],
        ];
        let limits = Limits {
            reject: vec![Some(100.0), Some(100.0)],
            flat: vec![None, Some(0.5)],
        };
        let data: Vec<Vec<f32>> = (epochs.iter())
            .map(|e| e.iter().map(|&v| v as f32).collect())
            .collect();
        let (avg, verdicts) = average(4, (2, n), Some((0, 2)), &limits, |i, c| {
            Some(&data[i][c * n..(c + 1) * n])
        });
        assert_eq!(
            verdicts,
            vec![
                Some(Verdict::Keep),
                Some(Verdict::TooLarge(vec![0])),
                Some(Verdict::Flat(vec![1])),
                Some(Verdict::Keep)
            ]
        );
        assert_eq!(avg.n_epochs, 2);
        // By hand: epochs 0 and 3, each channel less its mean over samples 0 and 1.
        let corrected = |e: &Vec<f64>| -> Vec<f64> {
            (0..2)
                .flat_map(|c| {
                    let b = (e[c * n] + e[c * n + 1]) / 2.0;
                    (0..n).map(move |t| e[c * n + t] - b)
                })
                .collect()
        };
        let (a, b) = (corrected(&epochs[0]), corrected(&epochs[3]));
        for t in 0..2 * n {
            assert!((avg.mean[t] - (a[t] + b[t]) / 2.0).abs() < 1e-12);
            let sd = ((a[t] - b[t]).abs()) / 2f64.sqrt();
            assert!((avg.sd[t] - sd).abs() < 1e-12);
        }
        // GFP: the spread across channels, ddof 0.
        let g = gfp(&[1.0, 3.0, 3.0, 3.0], 2, &[0, 1]);
        assert_eq!(g, vec![1.0, 0.0]);
    }
}
