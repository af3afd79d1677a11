//! The CPU transform: one forward FFT per signal, then per scale a multiply over the band where
//! the daughter wavelet is not zero and one inverse FFT, scales in parallel (rayon). The plan
//! (FFTs and daughters) is made once per (N, dt, scales, omega0) and reused.

use std::sync::Arc;

use rayon::prelude::*;
use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

use super::{CwtError, MIN_SAMPLES, daughter, mean, padded_len};

/// A transform of signals of `n` samples, ready to run many times.
pub struct CwtPlan {
    pub n: usize,
    pub m: usize,
    pub dt: f64,
    pub scales: Vec<f64>,
    pub omega0: f64,
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    /// Per scale: the first k of its band and psi_hat(s w_k) / M over the band.
    daughters: Vec<(usize, Vec<f32>)>,
}

impl std::fmt::Debug for CwtPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CwtPlan(n {}, m {}, {} scales)",
            self.n,
            self.m,
            self.scales.len()
        )
    }
}

impl CwtPlan {
    pub fn new(n: usize, dt: f64, scales: &[f64], omega0: f64) -> Result<Self, CwtError> {
        if n < MIN_SAMPLES {
            return Err(CwtError::TooShort { n });
        }
        let m = padded_len(n);
        let mut planner = FftPlanner::new();
        let daughters = scales
            .iter()
            .map(|&s| {
                let (band, v) = daughter(m, dt, s, omega0);
                let scaled = v[band.clone()].iter().map(|&d| (d / m as f64) as f32);
                (band.start, scaled.collect())
            })
            .collect();
        Ok(CwtPlan {
            n,
            m,
            dt,
            scales: scales.to_vec(),
            omega0,
            forward: planner.plan_fft_forward(m),
            inverse: planner.plan_fft_inverse(m),
            daughters,
        })
    }

    /// X_k of `x` less `mu` (its mean, or a whole recording's for a piece of it), zero-padded
    /// to M.
    pub fn spectrum(&self, x: &[f32], mu: f64) -> Vec<Complex32> {
        assert_eq!(x.len(), self.n, "a plan transforms signals of one length");
        let mut buf = vec![Complex32::new(0.0, 0.0); self.m];
        for (b, &v) in buf.iter_mut().zip(x) {
            b.re = (v as f64 - mu) as f32;
        }
        self.forward.process(&mut buf);
        buf
    }

    /// Fills `out`, one row of `width` values per scale, with `fill(W, row)`: W_n(s_j) for
    /// n < M (the first N are the transform) from a `spectrum`. Scales run in parallel.
    pub fn rows_into<T: Send>(
        &self,
        spectrum: &[Complex32],
        out: &mut [T],
        width: usize,
        fill: impl Fn(&[Complex32], &mut [T]) + Sync,
    ) {
        assert_eq!(out.len(), width * self.scales.len());
        let zero = Complex32::new(0.0, 0.0);
        out.par_chunks_mut(width.max(1))
            .zip(&self.daughters)
            .for_each_init(
                || {
                    let scratch = self.inverse.get_inplace_scratch_len();
                    (vec![zero; self.m], vec![zero; scratch])
                },
                |(buf, scratch), (row, (k0, d))| {
                    buf.fill(zero);
                    for ((b, &xk), &dk) in buf[*k0..].iter_mut().zip(&spectrum[*k0..]).zip(d) {
                        *b = xk * dk;
                    }
                    self.inverse.process_with_scratch(buf, scratch);
                    fill(buf, row);
                },
            );
    }

    /// W as rows of N complex values, one per scale, row-major.
    pub fn coefficients(&self, x: &[f32]) -> Vec<Complex32> {
        let mut out = vec![Complex32::new(0.0, 0.0); self.scales.len() * self.n];
        let spectrum = self.spectrum(x, mean(x));
        self.rows_into(&spectrum, &mut out, self.n, |w, row| {
            row.copy_from_slice(&w[..row.len()])
        });
        out
    }

    /// |W| row-major, `[scale][n]`.
    pub fn magnitude(&self, x: &[f32]) -> Vec<f32> {
        let mut out = vec![0f32; self.scales.len() * self.n];
        self.magnitude_into(x, &mut out);
        out
    }

    /// |W| into `out`, `[scale][n]` (batch callers reuse one buffer).
    pub fn magnitude_into(&self, x: &[f32], out: &mut [f32]) {
        let spectrum = self.spectrum(x, mean(x));
        self.rows_into(&spectrum, out, self.n, |w, row| {
            for (o, c) in row.iter_mut().zip(w) {
                // Not `norm()`: hypot's care for overflow costs more than the whole FFT here.
                *o = c.norm_sqr().sqrt();
            }
        });
    }

    /// Mean |W|^2 over consecutive blocks of `block` samples of `range` (the last block may be
    /// shorter; its mean is over the samples it has), row-major `[scale][block]`; `mu` is the
    /// mean removed.
    pub fn block_power(
        &self,
        x: &[f32],
        mu: f64,
        range: std::ops::Range<usize>,
        block: usize,
    ) -> Vec<f64> {
        assert!(block > 0 && range.end <= self.n);
        let blocks = range.len().div_ceil(block);
        let mut out = vec![0f64; self.scales.len() * blocks];
        let spectrum = self.spectrum(x, mu);
        self.rows_into(&spectrum, &mut out, blocks, |w, row| {
            for (o, chunk) in row.iter_mut().zip(w[range.clone()].chunks(block)) {
                let sum: f64 = chunk.iter().map(|c| c.norm_sqr() as f64).sum();
                *o = sum / chunk.len() as f64;
            }
        });
        out
    }
}
