//! Simulated blinks with known times, for measuring blink removal against ground truth.
//!
//! - Shape: a smooth asymmetric bump of duration D (uniform in 200-400 ms): a half-cosine rise
//!   over the first 40 % of D and a half-cosine fall over the remaining 60 % (blinks rise
//!   faster than they decay), peak 1 at 0.4 D.
//! - Times: a renewal process at `rate` blinks per minute (exponential intervals, but never
//!   closer than 1 s), starting 0.5 s in and ending 0.5 s before the end.
//! - Amplitude: `amplitude` (microvolts, at the frontopolar sites) times a uniform 0.8-1.2
//!   jitter per blink, times each channel's propagation factor.
//! - Propagation: exp(-(theta - theta_Fpz) / 0.66), capped at 1, where theta is the angle on the
//!   head sphere between the electrode and the nasion (the eyes' nearest scalp point): Fp1 0.90,
//!   F3 0.46, Fz 0.39, C3 0.16, Cz 0.15, P3 0.06, O1 0.035 - the fall-off of published
//!   propagation factors (Fp 1, F ~0.5, C ~0.2, P/O < 0.1). EOG channels get 1 (-1 where the
//!   recording's own blinks are inverted there); channels with no known position get none.

use serde::{Deserialize, Serialize};

use crate::recording::demo::SplitMix;
use crate::recording::electrodes::electrode_position;

/// Angle (radians) over which the blink field falls by 1/e.
pub const FALL_OFF_RAD: f64 = 0.66;
/// The shortest and longest simulated blink, seconds.
pub const DURATION_S: (f64, f64) = (0.2, 0.4);
/// Fraction of the duration the rise takes.
pub const RISE: f64 = 0.4;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SimBlink {
    pub peak_s: f64,
    pub onset_s: f64,
    pub duration_s: f64,
    /// At a propagation factor of 1, microvolts.
    pub amplitude_uv: f64,
}

/// The blink's value at `t` seconds after its onset (0 outside).
pub fn shape(t: f64, duration: f64) -> f64 {
    let rise = RISE * duration;
    if t <= 0.0 || t >= duration {
        0.0
    } else if t < rise {
        0.5 - 0.5 * (std::f64::consts::PI * t / rise).cos()
    } else {
        0.5 + 0.5 * (std::f64::consts::PI * (t - rise) / (duration - rise)).cos()
    }
}

/// Blinks over `length_s` seconds.
pub fn schedule(length_s: f64, rate_per_min: f64, amplitude_uv: f64, seed: u64) -> Vec<SimBlink> {
    let mut rng = SplitMix(seed ^ 0x5eed_b11c);
    let mean = 60.0 / rate_per_min.max(1e-9);
    let mut out = Vec::new();
    let mut t = 0.5;
    loop {
        t += (-(1.0 - rng.uniform()).ln() * mean).max(1.0);
        let duration = DURATION_S.0 + (DURATION_S.1 - DURATION_S.0) * rng.uniform();
        let amplitude = amplitude_uv * (0.8 + 0.4 * rng.uniform());
        if t + duration > length_s - 0.5 {
            return out;
        }
        out.push(SimBlink {
            peak_s: t + RISE * duration,
            onset_s: t,
            duration_s: duration,
            amplitude_uv: amplitude,
        });
        t += duration;
    }
}

/// The propagation factor of a channel (see the module's notes).
pub fn propagation(label: &str) -> Option<f64> {
    if crate::recording::channel::is_eog(label) {
        return Some(1.0);
    }
    let p = electrode_position(label)?;
    let nasion = electrode_position("Nz")?;
    let fpz = electrode_position("Fpz")?;
    let angle = |a: [f64; 3]| {
        (a[0] * nasion[0] + a[1] * nasion[1] + a[2] * nasion[2])
            .clamp(-1.0, 1.0)
            .acos()
    };
    Some((-(angle(p) - angle(fpz)) / FALL_OFF_RAD).exp().min(1.0))
}

/// Microvolts per unit of a channel's physical dimension, or `None` if it is no voltage.
pub fn microvolts_per_unit(unit: &str) -> Option<f64> {
    match unit.trim() {
        "uV" | "µV" | "μV" | "microV" | "microvolts" => Some(1.0),
        "mV" | "millivolts" => Some(1e3),
        "V" | "volts" => Some(1e6),
        "nV" => Some(1e-3),
        _ => None,
    }
}

/// The blinks' waveform at sample rate `fs` for `samples` samples, at factor 1, microvolts.
pub fn waveform(blinks: &[SimBlink], fs: f64, samples: usize) -> Vec<f64> {
    let mut w = vec![0.0; samples];
    for b in blinks {
        let first = (b.onset_s * fs).ceil().max(0.0) as usize;
        let last =
            (((b.onset_s + b.duration_s) * fs).floor() as usize).min(samples.saturating_sub(1));
        for (k, v) in w.iter_mut().enumerate().take(last + 1).skip(first) {
            *v += b.amplitude_uv * shape(k as f64 / fs - b.onset_s, b.duration_s);
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_factors() {
        assert_eq!(shape(0.4 * 0.3, 0.3), 1.0);
        assert_eq!(shape(-0.1, 0.3), 0.0);
        assert!((propagation("Fpz").unwrap() - 1.0).abs() < 1e-9);
        let f3 = propagation("F3").unwrap();
        let o1 = propagation("O1").unwrap();
        assert!(f3 > 0.4 && f3 < 0.5 && o1 < 0.05, "{f3} {o1}");
        assert_eq!(propagation("EOG1"), Some(1.0));
        assert_eq!(propagation("ECG"), None);
        let s = schedule(600.0, 15.0, 100.0, 3);
        assert!(s.len() > 100 && s.len() < 200, "{}", s.len());
        assert!(s.windows(2).all(|w| w[1].onset_s - w[0].onset_s >= 1.0));
    }
}
