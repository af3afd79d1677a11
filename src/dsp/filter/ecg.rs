//! The ECG conditioning of the Hermite beat fits: baseline wander out by running medians, noise
//! out by a zero-phase low-pass.

use super::zero_phase_lowpass;

/// The ECG conditioning of the Hermite beat fits (`ede hermite --filter default`):
///
/// - baseline wander removed by subtracting the baseline that two median filters in a row
///   estimate, 200 ms (drops the QRS) then 600 ms (drops P and T), as de Chazal et al. (2004)
///   do on the MIT-BIH records;
/// - high-frequency noise removed by a second-order Butterworth low-pass at 40 Hz run forward
///   and backward (zero phase, so the QRS does not move and the fit windows stay centred).
///
/// Non-finite samples (gaps) stay non-finite and are left out of the medians.
pub fn condition_ecg(x: &[f32], fs: f64) -> Vec<f32> {
    let short = median_filter(x, odd_width(0.2, fs));
    let baseline = median_filter(&short, odd_width(0.6, fs));
    let mut y: Vec<f32> = x.iter().zip(&baseline).map(|(v, b)| v - b).collect();
    zero_phase_lowpass(&mut y, fs, 40.0);
    y
}

/// An odd number of samples spanning about `seconds`.
fn odd_width(seconds: f64, fs: f64) -> usize {
    2 * ((seconds * fs / 2.0).round() as usize) + 1
}

/// The running median over `width` samples centred on each one (shorter at the ends), over
/// the finite samples only.
pub fn median_filter(x: &[f32], width: usize) -> Vec<f32> {
    let half = width / 2;
    let mut window: Vec<f32> = Vec::with_capacity(width + 1);
    let insert = |w: &mut Vec<f32>, v: f32| {
        if v.is_finite() {
            let at = w.partition_point(|&u| u < v);
            w.insert(at, v);
        }
    };
    let remove = |w: &mut Vec<f32>, v: f32| {
        if v.is_finite() {
            let at = w.partition_point(|&u| u < v);
            w.remove(at);
        }
    };
    for &v in x.iter().take(half) {
        insert(&mut window, v);
    }
    let mut out = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if let Some(&v) = x.get(i + half) {
            insert(&mut window, v);
        }
        if i > half {
            remove(&mut window, x[i - half - 1]);
        }
        out.push(match (x[i].is_finite(), window.len()) {
            (false, _) | (_, 0) => x[i],
            (true, n) if n % 2 == 1 => window[n / 2],
            (true, n) => 0.5 * (window[n / 2 - 1] + window[n / 2]),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_filter_matches_sorting_each_window() {
        let x: Vec<f32> = (0..200)
            .map(|i| ((i * 37) % 23) as f32 - (i / 50) as f32)
            .collect();
        let y = median_filter(&x, 9);
        for i in 0..x.len() {
            let mut w: Vec<f32> = x[i.saturating_sub(4)..(i + 5).min(x.len())].to_vec();
            w.sort_by(f32::total_cmp);
            let n = w.len();
            let m = if n % 2 == 1 {
                w[n / 2]
            } else {
                0.5 * (w[n / 2 - 1] + w[n / 2])
            };
            assert_eq!(y[i], m, "at {i}");
        }
    }

    #[test]
    fn ecg_conditioning_removes_the_baseline_and_keeps_a_spike_in_place() {
        let fs = 360.0;
        let mut x: Vec<f32> = (0..3600)
            .map(|i| 2.0 + (2.0 * std::f32::consts::PI * 0.3 * i as f32 / fs as f32).sin())
            .collect();
        for k in 0..9 {
            x[1800 - 4 + k] += 1.0 - (k as f32 - 4.0).abs() / 5.0;
        }
        let y = condition_ecg(&x, fs);
        let peak = (0..y.len()).max_by(|&a, &b| y[a].total_cmp(&y[b])).unwrap();
        assert_eq!(peak, 1800);
        // A 0.3 Hz wander of amplitude 1 (offset 2) is 95 % gone, even at its extremes.
        assert!(
            y[900].abs() < 0.05 && y[2700].abs() < 0.05,
            "{} {}",
            y[900],
            y[2700]
        );
    }
}
