//! Display filters: second-order Butterworth high-pass and low-pass and a 50/60 Hz notch, run as
//! a cascade of biquads (the `biquad` crate), in one direction as EEG viewers do.

use biquad::{Biquad, Coefficients, DirectForm2Transposed, Q_BUTTERWORTH_F32, ToHertz, Type};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DisplayFilter {
    /// High-pass corner in Hz.
    pub highpass: Option<f32>,
    /// Low-pass corner in Hz.
    pub lowpass: Option<f32>,
    /// Mains frequency to notch out (50 or 60 Hz).
    pub notch: Option<f32>,
}

impl DisplayFilter {
    pub fn is_active(&self) -> bool {
        self.highpass.is_some() || self.lowpass.is_some() || self.notch.is_some()
    }

    /// Seconds of input to run through the filter before a window so its start has settled.
    pub fn warm_up_s(&self) -> f64 {
        match self.highpass {
            Some(f) if f > 0.0 => (3.0 / f as f64).clamp(0.5, 30.0),
            _ if self.is_active() => 0.5,
            _ => 0.0,
        }
    }

    /// The filter state machine for one channel at rate `fs`; corners at or above Nyquist are
    /// left out (they would be unstable).
    pub fn build(&self, fs: f64) -> FilterChain {
        let fs32 = fs as f32;
        let nyquist = fs32 / 2.0;
        let mut stages = Vec::new();
        let mut add = |t: Type<f32>, f: f32, q: f32| {
            if f > 0.0
                && f < nyquist * 0.98
                && let Ok(c) = Coefficients::<f32>::from_params(t, fs32.hz(), f.hz(), q)
            {
                stages.push(DirectForm2Transposed::<f32>::new(c));
            }
        };
        if let Some(f) = self.highpass {
            add(Type::HighPass, f, Q_BUTTERWORTH_F32);
        }
        if let Some(f) = self.lowpass {
            add(Type::LowPass, f, Q_BUTTERWORTH_F32);
        }
        if let Some(f) = self.notch {
            add(Type::Notch, f, 10.0);
        }
        FilterChain { stages }
    }
}

pub struct FilterChain {
    stages: Vec<DirectForm2Transposed<f32>>,
}

impl FilterChain {
    /// Filters in place, carrying state across calls (NaN gaps pass through as NaN without
    /// poisoning the state).
    pub fn run(&mut self, x: &mut [f32]) {
        if self.stages.is_empty() {
            return;
        }
        for v in x.iter_mut() {
            if !v.is_finite() {
                continue;
            }
            let mut y = *v;
            for s in &mut self.stages {
                y = s.run(y);
            }
            *v = y;
        }
    }

    pub fn reset(&mut self) {
        for s in &mut self.stages {
            s.reset_state();
        }
    }
}

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

/// Runs `filter` forward then backward (zero phase, squared magnitude response); each pass
/// starts settled on its first value so the ends do not ring. Non-finite samples pass through.
pub fn zero_phase(x: &mut [f32], fs: f64, filter: &DisplayFilter) {
    let run = |x: &mut [f32]| {
        let Some(start) = x.iter().copied().find(|v| v.is_finite()) else {
            return;
        };
        let mut chain = filter.build(fs);
        let mut warm = vec![start; (fs * 0.5) as usize + 1];
        chain.run(&mut warm);
        chain.run(x);
    };
    run(x);
    x.reverse();
    run(x);
    x.reverse();
}

/// A second-order Butterworth low-pass at `corner` Hz, run with `zero_phase`.
pub fn zero_phase_lowpass(x: &mut [f32], fs: f64, corner: f32) {
    let filter = DisplayFilter {
        lowpass: Some(corner),
        ..Default::default()
    };
    zero_phase(x, fs, &filter);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gain_at(f: &DisplayFilter, hz: f32) -> f32 {
        let fs = 256.0;
        let mut x: Vec<f32> = (0..4096)
            .map(|i| (2.0 * std::f32::consts::PI * hz * i as f32 / fs).sin())
            .collect();
        f.build(fs as f64).run(&mut x);
        let tail = &x[2048..];
        (tail.iter().map(|v| v * v).sum::<f32>() / tail.len() as f32 * 2.0).sqrt()
    }

    #[test]
    fn responses_match_the_corners() {
        let hp = DisplayFilter {
            highpass: Some(1.0),
            ..Default::default()
        };
        assert!(gain_at(&hp, 0.1) < 0.05);
        assert!((gain_at(&hp, 10.0) - 1.0).abs() < 0.02);
        let lp = DisplayFilter {
            lowpass: Some(30.0),
            ..Default::default()
        };
        assert!((gain_at(&lp, 30.0) - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.03);
        assert!(gain_at(&lp, 100.0) < 0.12);
        let notch = DisplayFilter {
            notch: Some(50.0),
            ..Default::default()
        };
        assert!(gain_at(&notch, 50.0) < 0.05);
        assert!((gain_at(&notch, 10.0) - 1.0).abs() < 0.02);
        // The pass band: 10 Hz either side of the notch within 5 %.
        assert!(gain_at(&notch, 40.0) > 0.95 && gain_at(&notch, 60.0) > 0.95);
        let notch60 = DisplayFilter {
            notch: Some(60.0),
            ..Default::default()
        };
        assert!(gain_at(&notch60, 60.0) < 0.05 && gain_at(&notch60, 50.0) > 0.95);
    }

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
