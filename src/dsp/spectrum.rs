//! Power spectral density by Welch's method, as `scipy.signal.welch` defines it with its
//! defaults: a periodic Hann window, segments every `segment - overlap` samples (the last partial
//! one dropped), each segment's mean removed, a one-sided density in unit^2/Hz (the bins between
//! DC and Nyquist doubled), the segments' periodograms averaged.
//!
//! `welch_reference` is the plain definition (a direct DFT) the tests hold the fast path to;
//! `Welch` plans its FFT once and is reused across channels and pages.

use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

/// How a signal is cut into segments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WelchParams {
    /// Samples per segment (also the FFT length).
    pub segment: usize,
    /// Samples each segment shares with the next.
    pub overlap: usize,
}

impl WelchParams {
    /// Segments of `segment_s` seconds overlapping by the fraction `overlap` (0 to <1).
    pub fn from_seconds(fs: f64, segment_s: f64, overlap: f64) -> Result<Self, String> {
        if !(fs.is_finite() && fs > 0.0) {
            return Err(format!("the sampling rate must be positive, got {fs}"));
        }
        if !(segment_s.is_finite() && segment_s > 0.0) {
            return Err(format!("the segment must be positive, got {segment_s} s"));
        }
        if !(0.0..1.0).contains(&overlap) {
            return Err(format!("the overlap must be in [0, 1), got {overlap}"));
        }
        let segment = (segment_s * fs).round() as usize;
        if segment < 2 {
            return Err(format!(
                "a {segment_s} s segment holds fewer than 2 samples at {fs} Hz"
            ));
        }
        if segment > 1 << 24 {
            return Err(format!("a {segment_s} s segment is too long at {fs} Hz"));
        }
        // SciPy: noverlap = nperseg // 2 for the default 0.5; the nearest sample otherwise.
        let overlap = ((segment as f64 * overlap).floor() as usize).min(segment - 1);
        Ok(WelchParams { segment, overlap })
    }

    pub fn step(&self) -> usize {
        self.segment - self.overlap
    }

    /// Whole segments in `n` samples.
    pub fn segments(&self, n: usize) -> usize {
        if n < self.segment {
            0
        } else {
            (n - self.overlap) / self.step()
        }
    }

    /// Frequency bins of the one-sided spectrum.
    pub fn bins(&self) -> usize {
        self.segment / 2 + 1
    }

    /// The bins' frequencies in Hz.
    pub fn frequencies(&self, fs: f64) -> Vec<f64> {
        (0..self.bins())
            .map(|k| k as f64 * fs / self.segment as f64)
            .collect()
    }
}

/// The periodic Hann window (SciPy's `get_window('hann', n)`).
pub fn hann(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos())
        .collect()
}

/// The periodic Hamming window (SciPy's `get_window('hamming', n)`, MNE's Welch window).
pub fn hamming(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 0.54 - 0.46 * (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos())
        .collect()
}

/// Density scale and the one-sided doubling of bin `k` of `n`.
fn one_sided(k: usize, n: usize) -> f64 {
    if k == 0 || (n.is_multiple_of(2) && k == n / 2) {
        1.0
    } else {
        2.0
    }
}

/// The plain definition: a direct DFT of every windowed, demeaned segment. `None` when `x`
/// holds no whole segment.
pub fn welch_reference(x: &[f64], fs: f64, p: WelchParams) -> Option<Vec<f64>> {
    let segments = p.segments(x.len());
    if segments == 0 {
        return None;
    }
    let n = p.segment;
    let w = hann(n);
    let scale = 1.0 / (fs * w.iter().map(|v| v * v).sum::<f64>());
    let mut psd = vec![0.0; p.bins()];
    for s in 0..segments {
        let seg = &x[s * p.step()..s * p.step() + n];
        let mean = seg.iter().sum::<f64>() / n as f64;
        for (k, out) in psd.iter_mut().enumerate() {
            let (mut re, mut im) = (0.0, 0.0);
            for (i, v) in seg.iter().enumerate() {
                let a = -2.0 * std::f64::consts::PI * (k * i % n) as f64 / n as f64;
                let y = (v - mean) * w[i];
                re += y * a.cos();
                im += y * a.sin();
            }
            *out += (re * re + im * im) * scale * one_sided(k, n);
        }
    }
    psd.iter_mut().for_each(|v| *v /= segments as f64);
    Some(psd)
}

/// Welch's method with its FFT planned once: make one per segment length and reuse it.
pub struct Welch {
    params: WelchParams,
    fs: f64,
    window: Vec<f64>,
    scale: f64,
    fft: Arc<dyn RealToComplex<f64>>,
}

impl Welch {
    pub fn new(fs: f64, params: WelchParams) -> Self {
        Welch::with_window(fs, params, hann(params.segment))
    }

    /// With another window of `params.segment` samples (MNE's Welch: Hamming).
    pub fn with_window(fs: f64, params: WelchParams, window: Vec<f64>) -> Self {
        assert_eq!(window.len(), params.segment, "a window per segment sample");
        let scale = 1.0 / (fs * window.iter().map(|v| v * v).sum::<f64>());
        let fft = RealFftPlanner::new().plan_fft_forward(params.segment);
        Welch {
            params,
            fs,
            window,
            scale,
            fft,
        }
    }

    pub fn params(&self) -> WelchParams {
        self.params
    }

    pub fn frequencies(&self) -> Vec<f64> {
        self.params.frequencies(self.fs)
    }

    /// The density of `x` (`None` when it holds no whole segment). Samples that are not
    /// finite (a gap, an invalid sample) make the segment's bins NaN, as SciPy's would be.
    pub fn psd<T: Copy + Into<f64>>(&self, x: &[T]) -> Option<Vec<f64>> {
        let p = self.params;
        let segments = p.segments(x.len());
        if segments == 0 {
            return None;
        }
        let n = p.segment;
        let mut buf = self.fft.make_input_vec();
        let mut spectrum = self.fft.make_output_vec();
        let mut scratch = self.fft.make_scratch_vec();
        let mut psd = vec![0.0; p.bins()];
        for s in 0..segments {
            let seg = &x[s * p.step()..s * p.step() + n];
            let mean = sum(seg) / n as f64;
            for ((b, &v), w) in buf.iter_mut().zip(seg).zip(&self.window) {
                *b = (v.into() - mean) * w;
            }
            self.fft
                .process_with_scratch(&mut buf, &mut spectrum, &mut scratch)
                .expect("buffers made by the plan");
            for (out, c) in psd.iter_mut().zip(&spectrum) {
                *out += c.re * c.re + c.im * c.im;
            }
        }
        let norm = self.scale / segments as f64;
        for (k, v) in psd.iter_mut().enumerate() {
            *v *= norm * one_sided(k, n);
        }
        Some(psd)
    }
}

/// The sum of `x` in four running sums: one is a chain of dependent additions, the
/// longest part of a Welch segment after its FFT.
fn sum<T: Copy + Into<f64>>(x: &[T]) -> f64 {
    let mut acc = [0.0f64; 4];
    let chunks = x.chunks_exact(4);
    let rest: f64 = chunks.remainder().iter().map(|&v| v.into()).sum();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v.into();
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest
}

/// The mean density over `[lo, hi)` Hz times the bin width: the band's power in unit^2.
pub fn band_power(frequencies: &[f64], psd: &[f64], (lo, hi): (f64, f64)) -> f64 {
    let df = frequencies.get(1).copied().unwrap_or(0.0);
    (frequencies.iter().zip(psd))
        .filter(|(f, _)| **f >= lo && **f < hi)
        .map(|(_, p)| p * df)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) + (i as f64 * 0.3).sin() + 3.0
            })
            .collect()
    }

    #[test]
    fn the_fast_path_equals_the_definition() {
        for (n, seg, overlap, fs) in [
            (1000, 128, 64, 100.0),
            (777, 100, 0, 256.0),
            (513, 51, 25, 1.0),
        ] {
            let x = noise(n, n as u64);
            let p = WelchParams {
                segment: seg,
                overlap,
            };
            let want = welch_reference(&x, fs, p).unwrap();
            let got = Welch::new(fs, p).psd(&x).unwrap();
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() <= 1e-9 * want.iter().cloned().fold(0.0, f64::max));
            }
        }
    }

    #[test]
    fn parseval_white_noise_power_is_its_variance() {
        let x = noise(1 << 16, 7);
        let fs = 200.0;
        let p = WelchParams::from_seconds(fs, 2.0, 0.5).unwrap();
        let w = Welch::new(fs, p);
        let psd = w.psd(&x).unwrap();
        let total = band_power(&w.frequencies(), &psd, (0.0, f64::INFINITY));
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / x.len() as f64;
        assert!((total / var - 1.0).abs() < 0.02, "{total} vs {var}");
    }

    #[test]
    fn too_short_and_odd_parameters() {
        assert!(
            Welch::new(
                1.0,
                WelchParams {
                    segment: 8,
                    overlap: 4
                }
            )
            .psd(&[1.0f32; 7])
            .is_none()
        );
        assert!(WelchParams::from_seconds(100.0, 0.0, 0.5).is_err());
        assert!(WelchParams::from_seconds(100.0, 2.0, 1.0).is_err());
        assert!(WelchParams::from_seconds(f64::NAN, 2.0, 0.5).is_err());
        assert_eq!(
            WelchParams::from_seconds(100.0, 2.0, 0.5).unwrap().overlap,
            100
        );
    }
}
