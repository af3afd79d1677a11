//! The continuous wavelet transform with a Morlet mother wavelet, as defined by Torrence &
//! Compo (1998) and issue 11 (../shared/papers/morlet-cwt-gpgpu-eeg-2012.txt computes it the
//! same way on the GPU):
//!
//! - x_n, n = 0..N-1, sampling interval dt, mean removed, zero-padded to M = the next power of
//!   two >= N; X_k = FFT(x);
//! - w_k = 2 pi k / (M dt) for k <= M/2, negative above;
//! - psi_hat(s w) = sqrt(2 pi s / dt) pi^(-1/4) H(w) exp(-(s w - w0)^2 / 2), H the Heaviside
//!   step with H(0) = 0 (the mean is removed, so X_0 = 0 anyway);
//! - W_n(s) = IFFT_k(X_k psi_hat(s w_k)) for n < N (the IFFT divides by M);
//! - scales s_j = s0 2^(j dj), j = 0..J; Fourier period lambda = 4 pi s / (w0 + sqrt(2 + w0^2));
//! - cone of influence: the e-folding time sqrt(2) s from either edge.
//!
//! `reference` is the definition written as a direct (circular) convolution in f64, for tests;
//! `fast` is the CPU path (rustfft planned once, rayon across scales); the GPU path is
//! `gpu::cwt`. All report |W| (or W) row by row, one row per scale, smallest scale first.

pub mod decimated;
pub mod fast;
pub mod reference;

use serde::{Deserialize, Serialize};

pub use fast::CwtPlan;

/// The Morlet wavelet's central angular frequency used when none is given (the paper's).
pub const DEFAULT_OMEGA0: f64 = 6.0;
/// At most this many scales in one transform.
pub const MAX_SCALES: usize = 1024;
/// Below this many samples a transform says nothing useful.
pub const MIN_SAMPLES: usize = 4;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CwtError {
    #[error("omega0 must be between 1 and 40 (6 is usual), got {0}")]
    Omega0(f64),
    #[error("{0}")]
    Scales(String),
    #[error("{n} samples are too few for a wavelet transform (at least {MIN_SAMPLES})")]
    TooShort { n: usize },
    #[error("{0}")]
    TooLarge(String),
}

/// How the scales are chosen: by octaves from the smallest scale, or by a frequency range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScaleSpec {
    /// s_j = s0 2^(j dj), j = 0..=j (so j + 1 scales); s0 in seconds.
    Octaves { s0: f64, dj: f64, j: usize },
    /// Scales whose Fourier frequencies run from `fmax` down to at least `fmin` (Hz), `voices`
    /// per octave (dj = 1/voices).
    Frequencies { fmin: f64, fmax: f64, voices: usize },
}

/// What the transform needs besides the signal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CwtParams {
    pub omega0: f64,
    pub scales: ScaleSpec,
}

impl Default for CwtParams {
    /// 1 to 40 Hz at 8 voices per octave: the EEG bands from delta to low gamma.
    fn default() -> Self {
        CwtParams {
            omega0: DEFAULT_OMEGA0,
            scales: ScaleSpec::Frequencies {
                fmin: 1.0,
                fmax: 40.0,
                voices: 8,
            },
        }
    }
}

/// Fourier period over scale: lambda = factor * s.
pub fn fourier_factor(omega0: f64) -> f64 {
    4.0 * std::f64::consts::PI / (omega0 + (2.0 + omega0 * omega0).sqrt())
}

impl CwtParams {
    /// The scales in seconds, smallest first, for a signal sampled every `dt` seconds.
    pub fn scales(&self, dt: f64) -> Result<Vec<f64>, CwtError> {
        if !(1.0..=40.0).contains(&self.omega0) {
            return Err(CwtError::Omega0(self.omega0));
        }
        let bad = |m: String| Err(CwtError::Scales(m));
        let (s0, dj, j) = match self.scales {
            ScaleSpec::Octaves { s0, dj, j } => {
                if !(s0.is_finite() && s0 > 0.0) {
                    return bad(format!("s0 must be a positive number of seconds, got {s0}"));
                }
                if !(dj.is_finite() && dj > 0.0 && dj <= 4.0) {
                    return bad(format!("dj must be in (0, 4] octaves, got {dj}"));
                }
                (s0, dj, j)
            }
            ScaleSpec::Frequencies { fmin, fmax, voices } => {
                let nyquist = 0.5 / dt;
                if !(fmin.is_finite() && fmax.is_finite() && fmin > 0.0 && fmin < fmax) {
                    return bad(format!(
                        "the frequency range must satisfy 0 < fmin < fmax, got {fmin} to {fmax} Hz"
                    ));
                }
                if fmax > nyquist * (1.0 + 1e-9) {
                    return bad(format!(
                        "fmax {fmax} Hz is above the Nyquist frequency {nyquist} Hz of this signal"
                    ));
                }
                if !(1..=64).contains(&voices) {
                    return bad(format!("voices per octave must be 1 to 64, got {voices}"));
                }
                let dj = 1.0 / voices as f64;
                let s0 = 1.0 / (fmax * fourier_factor(self.omega0));
                // Enough scales to reach fmin (the last may go a little below it).
                let j = ((fmax / fmin).log2() / dj - 1e-9).ceil().max(0.0) as usize;
                (s0, dj, j)
            }
        };
        if j + 1 > MAX_SCALES {
            return bad(format!(
                "{} scales are asked for; at most {MAX_SCALES}",
                j + 1
            ));
        }
        Ok((0..=j).map(|k| s0 * 2f64.powf(k as f64 * dj)).collect())
    }

    /// The Fourier frequency (Hz) of scale `s`.
    pub fn frequency(&self, s: f64) -> f64 {
        1.0 / (fourier_factor(self.omega0) * s)
    }
}

/// The padded length: the next power of two >= n.
pub fn padded_len(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// The cone of influence at each sample, as Torrence & Compo give it: the largest Fourier
/// period (seconds) whose e-folding time sqrt(2) s still fits between sample n and the nearer
/// edge; values of longer periods at n are marked by edge effects.
pub fn cone_of_influence(n: usize, dt: f64, omega0: f64) -> Vec<f64> {
    let f = fourier_factor(omega0) / std::f64::consts::SQRT_2;
    (0..n).map(|k| f * dt * (k.min(n - 1 - k) as f64)).collect()
}

/// The sampled daughter wavelet in Fourier space, psi_hat(s w_k) for k = 0..=M/2 (zero above,
/// where w < 0), without the 1/M of the inverse transform. Values smaller than f64 can hold
/// after the Gaussian are exactly 0; `band` gives the range of k where it is not.
pub fn daughter(m: usize, dt: f64, s: f64, omega0: f64) -> (std::ops::Range<usize>, Vec<f64>) {
    let norm = daughter_norm(s, dt);
    let dw = 2.0 * std::f64::consts::PI / (m as f64 * dt);
    let values: Vec<f64> = (0..=m / 2)
        .map(|k| {
            if k == 0 {
                return 0.0;
            }
            let e = s * dw * k as f64 - omega0;
            // exp(-745) is the smallest f64: past it the factor is 0 exactly.
            if e * e > 1400.0 {
                0.0
            } else {
                norm * (-0.5 * e * e).exp()
            }
        })
        .collect();
    let first = values.iter().position(|&v| v != 0.0).unwrap_or(0);
    let last = values.iter().rposition(|&v| v != 0.0).map_or(0, |l| l + 1);
    (first..last.max(first), values)
}

/// psi_hat's factor sqrt(2 pi s / dt) pi^(-1/4).
pub fn daughter_norm(s: f64, dt: f64) -> f64 {
    (2.0 * std::f64::consts::PI * s / dt).sqrt() * std::f64::consts::PI.powf(-0.25)
}

/// The mean of `x` in f64 (the transform removes it).
pub fn mean(x: &[f32]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().map(|&v| v as f64).sum::<f64>() / x.len() as f64
    }
}

/// How a scalogram's values are shown.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Quantity {
    /// |W|
    Magnitude,
    /// |W|^2
    #[default]
    Power,
    /// 10 log10 |W|^2
    Db,
}

impl Quantity {
    pub fn name(self) -> &'static str {
        match self {
            Quantity::Magnitude => "|W|",
            Quantity::Power => "|W|²",
            Quantity::Db => "dB",
        }
    }
}

/// What one displayed value is, from a mean power `p` over a pixel's samples at scale `s`:
/// |W| (the root of the mean power), |W|^2 or dB, each optionally divided by the scale
/// (|W|^2/s, Liu et al. 2007's bias correction); the same formula the GPU paint kernel uses.
pub fn display_value(p: f64, s: f64, quantity: Quantity, per_scale: bool) -> f64 {
    let p = if per_scale { p / s } else { p };
    match quantity {
        Quantity::Magnitude => p.sqrt(),
        Quantity::Power => p,
        Quantity::Db => 10.0 * p.max(1e-30).log10(),
    }
}

/// How a scalogram image shows values (the GPU paint kernel follows the same rules).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaintSpec {
    /// Columns of the image (at most one per sample); each shows the mean power over its
    /// samples floor(x N / width) .. floor((x + 1) N / width).
    pub width: usize,
    pub quantity: Quantity,
    /// Divide the power by the scale.
    pub per_scale: bool,
    /// The range shown below the top, in dB (dB only).
    pub range_db: f32,
    /// Each trace's colours span its own range (traces of other units or sizes stay
    /// readable); otherwise one range spans them all.
    pub per_trace: bool,
}

impl PaintSpec {
    /// The colour range of trace `c`: from 0 (or `range_db` below the top, in dB) to its top
    /// or the top of all.
    pub fn range(&self, tops: &[f32], c: usize) -> (f32, f32) {
        let top = if self.per_trace {
            tops[c]
        } else {
            tops.iter().copied().fold(f32::NEG_INFINITY, f32::max)
        };
        let lo = if self.quantity == Quantity::Db {
            top - self.range_db
        } else {
            0.0
        };
        (lo, top)
    }
}

/// The samples of image column `x` of `width` over `n` samples.
pub fn column_range(x: usize, width: usize, n: usize) -> std::ops::Range<usize> {
    let at = |x: usize| x * (n / width) + (x * (n % width)) / width;
    at(x)..at(x + 1)
}

/// Each pixel's shown value, `[signal][scale][column]`, the image width and each signal's top
/// (the shown value of its largest mean power).
pub fn pixel_values(
    plan: &CwtPlan,
    signals: &[&[f32]],
    spec: &PaintSpec,
) -> (usize, Vec<f32>, Vec<f32>) {
    use rayon::prelude::*;
    let width = spec.width.clamp(1, plan.n);
    let s = plan.scales.len();
    let mut out = vec![0f32; signals.len() * s * width];
    for (x, rows) in signals.iter().zip(out.chunks_mut(s * width)) {
        let spectrum = plan.spectrum(x, mean(x));
        // Mean power per pixel (divided by the scale when asked), then shown as asked.
        plan.rows_into(&spectrum, rows, width, |w, row| {
            for (c, o) in row.iter_mut().enumerate() {
                let r = column_range(c, width, plan.n);
                let p: f32 = w[r.clone()].iter().map(|v| v.norm_sqr()).sum();
                *o = p / r.len().max(1) as f32;
            }
        });
        if spec.per_scale {
            for (row, &scale) in rows.chunks_mut(width).zip(&plan.scales) {
                row.iter_mut().for_each(|q| *q /= scale as f32);
            }
        }
    }
    let show = |q: f32| display_value(q as f64, 1.0, spec.quantity, false) as f32;
    let tops = out
        .chunks(s * width)
        .map(|rows| show(rows.iter().copied().fold(0f32, f32::max)))
        .collect();
    out.par_iter_mut().for_each(|q| *q = show(*q));
    (width, out, tops)
}

/// Colours shown values (signal after signal, as `pixel_values` gives them) with `lut` (RGBA8, r in the low byte) over each signal's range: the paint kernel's rule.
pub fn colour_pixels(
    values: &[f32],
    tops: &[f32],
    spec: &PaintSpec,
    lut: &[u32; 256],
) -> Vec<[u8; 4]> {
    use rayon::prelude::*;
    let per_signal = values.len() / tops.len().max(1);
    values
        .par_iter()
        .enumerate()
        .map(|(i, &v)| {
            let (lo, top) = spec.range(tops, i / per_signal.max(1));
            let t = if top > lo {
                ((v - lo) / (top - lo)).clamp(0.0, 1.0)
            } else {
                0.0
            };
            lut[(t * 255.0).round() as usize].to_le_bytes()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequency_range_scales_reach_fmin_from_fmax() {
        let p = CwtParams {
            omega0: 6.0,
            scales: ScaleSpec::Frequencies {
                fmin: 1.0,
                fmax: 32.0,
                voices: 4,
            },
        };
        let s = p.scales(1.0 / 256.0).unwrap();
        assert_eq!(s.len(), 21);
        assert!((p.frequency(s[0]) - 32.0).abs() < 1e-9);
        assert!((p.frequency(s[20]) - 1.0).abs() < 1e-9);
        let f = fourier_factor(6.0);
        assert!((f - 1.033_043_9).abs() < 1e-6, "{f}");
    }

    #[test]
    fn bad_parameters_are_refused_with_reasons() {
        let p = |scales| CwtParams {
            omega0: 6.0,
            scales,
        };
        let e = p(ScaleSpec::Frequencies {
            fmin: 1.0,
            fmax: 200.0,
            voices: 8,
        })
        .scales(1.0 / 256.0)
        .unwrap_err();
        assert!(e.to_string().contains("Nyquist"), "{e}");
        assert!(
            p(ScaleSpec::Octaves {
                s0: 0.0,
                dj: 0.1,
                j: 3
            })
            .scales(0.01)
            .is_err()
        );
        assert!(
            p(ScaleSpec::Octaves {
                s0: 0.01,
                dj: 0.01,
                j: 5000
            })
            .scales(0.01)
            .is_err()
        );
        let mut q = p(ScaleSpec::Octaves {
            s0: 0.01,
            dj: 0.1,
            j: 3,
        });
        q.omega0 = f64::NAN;
        assert!(matches!(q.scales(0.01), Err(CwtError::Omega0(_))));
    }

    #[test]
    fn daughter_peaks_at_the_central_frequency() {
        let (m, dt, s) = (1024, 0.01, 0.1);
        let (band, v) = daughter(m, dt, s, 6.0);
        let peak = (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
        let w = 2.0 * std::f64::consts::PI * peak as f64 / (m as f64 * dt);
        assert!((w * s - 6.0).abs() < 2.0 * std::f64::consts::PI * s / (m as f64 * dt));
        assert!(band.contains(&peak) && band.start > 0);
    }
}
