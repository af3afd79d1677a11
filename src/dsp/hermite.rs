//! Hermite-function characterization of QRS complexes, as Gil et al. (2016,
//! ../shared/papers/hermite-ecg-gpu-2016.md) and issue 7 define it:
//!
//! - a beat at sample a is the window a-h .. a+h-1, h = round(0.1 fs) (a-36 .. a+35 at 360 Hz),
//!   padded with h zeros on both sides: L = 4h samples (144 at 360 Hz) at times
//!   t_k = (k - (L-1)/2) / fs;
//! - phi_n(t, sigma) = exp(-t^2 / 2 sigma^2) H_n(t/sigma) / sqrt(sigma 2^n n! sqrt(pi)), from the
//!   three-term recurrence of the normalized functions (`hermite_functions`);
//! - b_n(t_k) = sqrt(dt) phi_n(t_k, sigma); c_n = sum_k x_k b_n(t_k);
//!   xhat = sum_{n<N} c_n b_n; MSE = sum_k (x_k - xhat_k)^2 over all L samples;
//! - sigmas: S values spaced linearly in [sigma_min, sigma_max], by default
//!   sigma_max = 0.2 s / sqrt(2N - 1), sigma_min = sigma_max / 10, S = 100. The best sigma has
//!   the least MSE; ties go to the smaller sigma.
//!
//! The basis depends on sigma and N only, never on the beat, so `Basis` samples it once and
//! `Basis::fit` runs every block of beats as two matrix products (coefficients for all sigmas
//! at once, then each sigma's reconstruction of the non-zero part); the padding's share of
//! the MSE is c^T G_pad c with G_pad the Gram matrix of the basis over the padding. The
//! residual is formed sample by sample (not as |x|^2 - 2|c|^2 + c^T G c), so rounding errors
//! of c enter the MSE only at second order and f32 arithmetic keeps it to about 1e-6.
//! `reference` is the definition written out per beat and sigma in f64, for tests.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The largest number of Hermite functions a fit may use.
pub const MAX_ORDER: usize = 64;
/// The most sigma values one fit may try.
pub const MAX_SIGMAS: usize = 4096;
/// Half-width of the beat window and of each zero pad, in seconds (100 ms).
pub const HALF_WINDOW_S: f64 = 0.1;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HermiteError {
    #[error("the order (number of Hermite functions) must be 1 to {MAX_ORDER}, got {0}")]
    Order(usize),
    #[error("the number of sigma values must be 1 to {MAX_SIGMAS}, got {0}")]
    Sigmas(usize),
    #[error(
        "the sigma range must satisfy 0 < sigma_min <= sigma_max (seconds), got {min} .. {max}"
    )]
    SigmaRange { min: f64, max: f64 },
    #[error("a sampling rate of {0} Hz leaves no samples in a 100 ms window (at least 5 Hz)")]
    Rate(f64),
}

/// What a fit needs besides the beats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HermiteParams {
    /// N, the number of Hermite functions (orders 0..N-1).
    pub order: usize,
    /// S, the number of sigma values tried.
    pub sigmas: usize,
    /// Seconds; `None` for sigma_max / 10.
    pub sigma_min: Option<f64>,
    /// Seconds; `None` for 0.2 / sqrt(2N - 1).
    pub sigma_max: Option<f64>,
}

impl Default for HermiteParams {
    fn default() -> Self {
        HermiteParams {
            order: 6,
            sigmas: 100,
            sigma_min: None,
            sigma_max: None,
        }
    }
}

impl HermiteParams {
    /// The default widest sigma for `order` functions: the widest function then just fills
    /// the 400 ms window.
    pub fn default_sigma_max(order: usize) -> f64 {
        0.2 / ((2 * order.max(1) - 1) as f64).sqrt()
    }

    /// (sigma_min, sigma_max) in seconds, defaults filled in.
    pub fn sigma_range(&self) -> (f64, f64) {
        let max = self
            .sigma_max
            .unwrap_or_else(|| Self::default_sigma_max(self.order));
        (self.sigma_min.unwrap_or(max / 10.0), max)
    }

    /// The sigma grid, smallest first (S linearly spaced values; one value is sigma_min).
    pub fn sigma_grid(&self) -> Result<Vec<f64>, HermiteError> {
        if !(1..=MAX_ORDER).contains(&self.order) {
            return Err(HermiteError::Order(self.order));
        }
        if !(1..=MAX_SIGMAS).contains(&self.sigmas) {
            return Err(HermiteError::Sigmas(self.sigmas));
        }
        let (min, max) = self.sigma_range();
        if !(min.is_finite() && max.is_finite() && min > 0.0 && min <= max && max < 10.0) {
            return Err(HermiteError::SigmaRange { min, max });
        }
        let s = self.sigmas;
        Ok((0..s)
            .map(|j| match s {
                1 => min,
                _ => min + (max - min) * j as f64 / (s - 1) as f64,
            })
            .collect())
    }
}

/// The sample layout of a beat at rate `fs`: h samples each side of the fiducial point, h
/// zeros of padding each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeatWindow {
    pub half: usize,
}

impl BeatWindow {
    pub fn new(fs: f64) -> Result<Self, HermiteError> {
        let half = (HALF_WINDOW_S * fs).round();
        if !(fs.is_finite() && (1.0..1e6).contains(&half)) {
            return Err(HermiteError::Rate(fs));
        }
        Ok(BeatWindow {
            half: half as usize,
        })
    }

    /// Samples taken from the signal (2h).
    pub fn width(&self) -> usize {
        2 * self.half
    }

    /// Samples with the padding (4h).
    #[allow(clippy::len_without_is_empty)] // a window is never empty (h >= 1)
    pub fn len(&self) -> usize {
        4 * self.half
    }

    /// t_k = (k - (L-1)/2) / fs, k = 0..L.
    pub fn times(&self, fs: f64) -> Vec<f64> {
        let c = (self.len() as f64 - 1.0) / 2.0;
        (0..self.len()).map(|k| (k as f64 - c) / fs).collect()
    }

    /// The first signal sample of the beat at `sample`, or `None` when the window would leave
    /// a signal of `n` samples.
    pub fn start(&self, sample: usize, n: usize) -> Option<usize> {
        let first = sample.checked_sub(self.half)?;
        (first + self.width() <= n).then_some(first)
    }
}

/// psi_n(u) for n = 0..out.len(), the normalized Hermite functions of unit width
/// (phi_n(t, sigma) = psi_n(t / sigma) / sqrt(sigma)), by the recurrence
/// psi_0 = pi^(-1/4) e^(-u^2/2), psi_1 = sqrt(2) u psi_0,
/// psi_n = sqrt(2/n) u psi_{n-1} - sqrt((n-1)/n) psi_{n-2}.
/// The Gaussian is applied last, with the polynomial part rescaled as it grows, so that
/// neither underflows where the product does not (the GPU runs the same steps in f32).
pub fn hermite_functions(u: f64, out: &mut [f64]) {
    const BIG: f64 = 1e100;
    let mut log_scale = -0.5 * u * u;
    let (mut prev, mut cur) = (0.0, std::f64::consts::PI.powf(-0.25));
    for (n, value) in out.iter_mut().enumerate() {
        if n > 0 {
            let next =
                (2.0 / n as f64).sqrt() * u * cur - ((n - 1) as f64 / n as f64).sqrt() * prev;
            prev = cur;
            cur = next;
        }
        if cur.abs() > BIG {
            cur /= BIG;
            prev /= BIG;
            log_scale += BIG.ln();
        }
        *value = cur * log_scale.exp();
    }
}

/// b_n(t_k) = sqrt(dt) phi_n(t_k, sigma), `[n][k]`, for `order` functions on `times`.
pub fn sampled_basis(times: &[f64], fs: f64, sigma: f64, order: usize) -> Vec<f64> {
    let scale = (1.0 / (fs * sigma)).sqrt();
    let mut psi = vec![0.0; order];
    let mut out = vec![0.0; order * times.len()];
    for (k, &t) in times.iter().enumerate() {
        hermite_functions(t / sigma, &mut psi);
        for n in 0..order {
            out[n * times.len() + k] = scale * psi[n];
        }
    }
    out
}

/// The best fit of each beat: `sigma_index[i]`, `mse[i]` and `coefficients[i * order ..]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fits {
    pub order: usize,
    pub sigma_index: Vec<u32>,
    pub mse: Vec<f32>,
    pub coefficients: Vec<f32>,
}

impl Fits {
    pub fn len(&self) -> usize {
        self.mse.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mse.is_empty()
    }

    pub fn coefficients_of(&self, beat: usize) -> &[f32] {
        &self.coefficients[beat * self.order..(beat + 1) * self.order]
    }

    pub fn append(&mut self, mut other: Fits) {
        self.order = other.order;
        self.sigma_index.append(&mut other.sigma_index);
        self.mse.append(&mut other.mse);
        self.coefficients.append(&mut other.coefficients);
    }
}

/// The sampled basis for one rate, order and sigma grid: built once, used for every beat.
///
/// Parity (as shaders/hermite.wgsl): the window is symmetric about its centre and
/// phi_n(-t) = (-1)^n phi_n(t), so with u_j = (x_a + x_b) / 2 and w_j = (x_a - x_b) / 2 over the
/// pairs of mirrored signal samples (x_a right of the centre), the even functions fit u and the
/// odd ones w over h samples each, and the signal's squared residual is twice the sum of the
/// two halves'. G_pad is zero across parities. Half the multiply-adds of the definition.
pub struct Basis {
    pub window: BeatWindow,
    pub order: usize,
    pub sigmas: Vec<f64>,
    /// The even functions n = 2e, then the odd ones n = 2e + 1.
    parities: [Parity; 2],
}

/// One parity's functions: `count` of them.
struct Parity {
    count: usize,
    /// `[j][s * count + e]` over the h signal samples right of the centre: the coefficients of
    /// a block of beats for every sigma are one product with it.
    inner: Vec<f32>,
    /// `[s][a][b]`: G_pad between this parity's functions, over the 2h padding samples.
    pad_gram: Vec<f32>,
}

/// Beats fitted per block: large enough for efficient products, small enough to stay in cache.
const BLOCK: usize = 128;

impl Basis {
    pub fn new(fs: f64, params: &HermiteParams) -> Result<Self, HermiteError> {
        let window = BeatWindow::new(fs)?;
        let sigmas = params.sigma_grid()?;
        let (order, h, w, l) = (params.order, window.half, window.width(), window.len());
        let times = window.times(fs);
        let per_sigma: Vec<Vec<f64>> = sigmas
            .par_iter()
            .map(|&s| sampled_basis(&times, fs, s, order))
            .collect();
        let pad = |k: usize| k < h || k >= h + w;
        let parities = [0, 1].map(|parity| {
            let count = (order + 1 - parity) / 2;
            let sn = sigmas.len() * count;
            let mut inner = vec![0f32; h * sn];
            let mut pad_gram = vec![0f32; sigmas.len() * count * count];
            for (s, b) in per_sigma.iter().enumerate() {
                for e in 0..count {
                    let n = 2 * e + parity;
                    for j in 0..h {
                        inner[j * sn + s * count + e] = normal_f32(b[n * l + 2 * h + j]);
                    }
                }
                for a in 0..count {
                    for c in 0..count {
                        let (i, j) = (2 * a + parity, 2 * c + parity);
                        let g: f64 = (0..l)
                            .filter(|&k| pad(k))
                            .map(|k| b[i * l + k] * b[j * l + k])
                            .sum();
                        pad_gram[(s * count + a) * count + c] = normal_f32(g);
                    }
                }
            }
            Parity {
                count,
                inner,
                pad_gram,
            }
        });
        Ok(Basis {
            window,
            order,
            sigmas,
            parities,
        })
    }

    /// Fits `beats` (`[beat][2h]` samples, no padding) on all threads; `cancel` stops it
    /// early with `None`.
    pub fn fit(
        &self,
        beats: &[f32],
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Option<Fits> {
        let w = self.window.width();
        let blocks: Vec<Option<Fits>> = beats
            .par_chunks(BLOCK * w)
            .map(|block| {
                if cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)) {
                    return None;
                }
                Some(self.fit_block(block))
            })
            .collect();
        let mut out = Fits {
            order: self.order,
            ..Default::default()
        };
        for b in blocks {
            out.append(b?);
        }
        Some(out)
    }

    fn fit_block(&self, x: &[f32]) -> Fits {
        let (order, h) = (self.order, self.window.half);
        let w = 2 * h;
        let nb = x.len() / w;
        let sigmas = self.sigmas.len();
        // u and w of each beat, `[beat][j]`.
        let halves: [Vec<f32>; 2] = [1.0, -1.0].map(|sign| {
            x.chunks_exact(w)
                .flat_map(|beat| (0..h).map(move |j| 0.5 * (beat[h + j] + sign * beat[h - 1 - j])))
                .collect()
        });
        // mse[i * sigmas + s], both parities' shares summed.
        let mut mse = vec![0f32; nb * sigmas];
        let coefficients: Vec<Vec<f32>> = (self.parities.iter().zip(&halves))
            .map(|(par, half)| par.fit(half, nb, h, sigmas, &mut mse))
            .collect();
        let mut fits = Fits {
            order,
            sigma_index: Vec::with_capacity(nb),
            mse: Vec::with_capacity(nb),
            coefficients: Vec::with_capacity(nb * order),
        };
        for (i, per_sigma) in mse.chunks_exact(sigmas).enumerate() {
            // Strictly less: a tie keeps the smaller sigma.
            let (s, best) =
                (per_sigma.iter().enumerate()).fold((0, f32::INFINITY), |b, (s, &m)| {
                    if m < b.1 { (s, m) } else { b }
                });
            fits.sigma_index.push(s as u32);
            fits.mse.push(best);
            fits.coefficients.extend((0..order).map(|n| {
                let (par, c) = (&self.parities[n % 2], &coefficients[n % 2]);
                c[(i * sigmas + s) * par.count + n / 2]
            }));
        }
        fits
    }
}

impl Parity {
    /// This parity's coefficients of `nb` beats for every sigma (`[beat][s * count + e]`),
    /// its share of each MSE added to `mse[beat * sigmas + s]`. `half` is u or w, `[beat][h]`.
    fn fit(&self, half: &[f32], nb: usize, h: usize, sigmas: usize, mse: &mut [f32]) -> Vec<f32> {
        let count = self.count;
        let sn = sigmas * count;
        // C = 2 U B: [beat][s * count + e] for every sigma at once (u, w are half sums).
        let mut c = vec![0f32; nb * sn];
        let mut resid = vec![0f32; nb * h];
        let mut cg = vec![0f32; nb * count];
        if count > 0 {
            // SAFETY: each pointer and stride addresses inside the slice it comes from, for
            // the nb x h, h x sn and nb x sn shapes given.
            unsafe {
                matrixmultiply::sgemm(
                    nb,
                    h,
                    sn,
                    2.0,
                    half.as_ptr(),
                    h as isize,
                    1,
                    self.inner.as_ptr(),
                    sn as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    sn as isize,
                    1,
                );
            }
        }
        for s in 0..sigmas {
            resid.copy_from_slice(half);
            if count > 0 {
                let cs = &c[s * count..];
                // SAFETY (both): C_s is nb x count with row stride sn, B_s^T count x h (the
                // transposed view of inner's columns s * count ..), G_pad count x count.
                unsafe {
                    // R = U - C_s B_s^T over the half window.
                    matrixmultiply::sgemm(
                        nb,
                        count,
                        h,
                        -1.0,
                        cs.as_ptr(),
                        sn as isize,
                        1,
                        self.inner.as_ptr().add(s * count),
                        1,
                        sn as isize,
                        1.0,
                        resid.as_mut_ptr(),
                        h as isize,
                        1,
                    );
                    // C_s G_pad, for the padding's share c^T G_pad c.
                    matrixmultiply::sgemm(
                        nb,
                        count,
                        count,
                        1.0,
                        cs.as_ptr(),
                        sn as isize,
                        1,
                        self.pad_gram.as_ptr().add(s * count * count),
                        count as isize,
                        1,
                        0.0,
                        cg.as_mut_ptr(),
                        count as isize,
                        1,
                    );
                }
            }
            for i in 0..nb {
                let r = &resid[i * h..(i + 1) * h];
                let ci = &c[i * sn + s * count..i * sn + (s + 1) * count];
                mse[i * sigmas + s] += 2.0 * dot(r, r) + dot(&cg[i * count..(i + 1) * count], ci);
            }
        }
        c
    }
}

/// `v` as f32, with values too small for a normal f32 as zero: subnormal operands slow the
/// products many times over, and values below 1e-30 change no fit.
fn normal_f32(v: f64) -> f32 {
    if v.abs() < 1e-30 { 0.0 } else { v as f32 }
}

/// a . b, in eight independent sums so that it vectorizes.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = (a8.remainder().iter().zip(b8.remainder()))
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The padded window: h zeros, the 2h signal samples, h zeros.
pub fn padded(window: BeatWindow, beat: &[f32]) -> Vec<f64> {
    let h = window.half;
    let mut x = vec![0.0; window.len()];
    for (k, &v) in beat.iter().enumerate() {
        x[h + k] = v as f64;
    }
    x
}

/// The reconstruction sum_n c_n b_n over the padded window, for plotting a fit.
pub fn reconstruct(fs: f64, sigma: f64, coefficients: &[f32]) -> Result<Vec<f64>, HermiteError> {
    let window = BeatWindow::new(fs)?;
    let times = window.times(fs);
    let order = coefficients.len();
    let b = sampled_basis(&times, fs, sigma, order);
    Ok((0..times.len())
        .map(|k| {
            (0..order)
                .map(|n| coefficients[n] as f64 * b[n * times.len() + k])
                .sum()
        })
        .collect())
}

/// The definition, one beat and one sigma at a time in f64, for tests: (best sigma index, MSE,
/// coefficients).
pub fn reference(fs: f64, params: &HermiteParams, beat: &[f32]) -> (usize, f64, Vec<f64>) {
    let window = BeatWindow::new(fs).expect("valid rate");
    let sigmas = params.sigma_grid().expect("valid parameters");
    let times = window.times(fs);
    let x = padded(window, beat);
    let l = times.len();
    let mut best = (0, f64::INFINITY, Vec::new());
    for (s, &sigma) in sigmas.iter().enumerate() {
        let b = sampled_basis(&times, fs, sigma, params.order);
        let c: Vec<f64> = (0..params.order)
            .map(|n| (0..l).map(|k| x[k] * b[n * l + k]).sum())
            .collect();
        let mse: f64 = (0..l)
            .map(|k| {
                let xhat: f64 = (0..params.order).map(|n| c[n] * b[n * l + k]).sum();
                (x[k] - xhat).powi(2)
            })
            .sum();
        if mse < best.1 {
            best = (s, mse, c);
        }
    }
    best
}
