//! Cross-Approximate Entropy (Cross-ApEn) of every ordered channel pair, as defined in
//! ../shared/papers/cross-apen-gpu-meg-2013.txt and issue 3:
//!
//! - each series of N samples is normalized to zero mean and unit population SD (divide by N);
//! - windows of m samples match when every component differs by at most r (in SD units);
//! - N_i^m counts the v-windows matching the u-window at i (N-m+1 of each), N_i^{m+1} likewise
//!   for windows of m+1 (N-m of each), both counted in one pass;
//! - C = N / (number of windows), zero counts corrected by `Correction`;
//! - Cross-ApEn(u||v) = mean ln C^m - mean ln C^{m+1}. It is not symmetric: a matrix holds every
//!   ordered pair (row u, column v), and its diagonal is each channel's own ApEn.
//!
//! Three implementations: `reference` (f64, the definition written out, for tests), `fast`
//! (f32, sorted v and match bitsets, the CPU path) and `brute` (f32, the paper's Fig. 1 merged
//! loop, the baseline the fast path is measured against). The f32 paths compare a sample b
//! against a window sample a as `fl(a - r) <= b <= fl(a + r)`, the same test the GPU kernel
//! makes, so CPU and GPU counts are equal exactly.

pub mod brute;
pub mod fast;
pub mod reference;

use serde::{Deserialize, Serialize};

/// How a window without matches is counted (Bias 0 and Bias max in the paper).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// C^m = 1 when N^m = 0; C^{m+1} = 1/(N-m+1) when N^{m+1} = 0.
    Max,
    /// Both C = 1 when both counts are 0; C^{m+1} = 1/(N-m) when only N^{m+1} is 0.
    Zero,
}

impl Correction {
    pub fn name(self) -> &'static str {
        match self {
            Correction::Max => "max",
            Correction::Zero => "zero",
        }
    }
}

/// The statistic's parameters: window length m, tolerance r (in SD units), correction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct XapenParams {
    pub m: usize,
    pub r: f32,
    pub correction: Correction,
}

/// Largest tolerance accepted: beyond 2 sqrt(N) every window matches anyway, and the GPU
/// kernel marks missing samples with a value no bound may reach.
pub const MAX_R: f32 = 1e6;

/// Longest window supported: the fast path shifts 64-bit match words by up to m.
pub const MAX_M: usize = 16;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum XapenError {
    #[error("an epoch of {n} samples is too short for m = {m}: it needs more than m + 1 samples")]
    TooShort { n: usize, m: usize },
    #[error("m = {0} is out of range: it must be between 1 and {MAX_M}")]
    BadM(usize),
    #[error("r = {0} is out of range: it must be between 0 and {MAX_R} (in units of SD)")]
    BadR(f32),
    #[error("the input has no channels or no epochs")]
    Empty,
}

impl XapenParams {
    /// Checks the parameters against an epoch length.
    pub fn check(&self, n: usize) -> Result<(), XapenError> {
        if self.m == 0 || self.m > MAX_M {
            return Err(XapenError::BadM(self.m));
        }
        if !(self.r >= 0.0 && self.r <= MAX_R) {
            return Err(XapenError::BadR(self.r));
        }
        if n <= self.m + 1 {
            return Err(XapenError::TooShort { n, m: self.m });
        }
        Ok(())
    }
}

/// Zero mean, unit population SD, computed in f64. `None` for a flat series (SD = 0) or one
/// with non-finite samples: its entropy is undefined.
pub fn normalize(x: &[f32]) -> Option<Vec<f32>> {
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    let sd = var.sqrt();
    // A series whose spread is at rounding level of its mean is flat too.
    if !(sd.is_finite() && sd > 1e-12 * mean.abs().max(f64::MIN_POSITIVE)) {
        return None;
    }
    Some(x.iter().map(|&v| ((v as f64 - mean) / sd) as f32).collect())
}

/// Cross-ApEn from the counts of one pair: `n_m` has N-m+1 entries, `n_m1` N-m.
pub fn from_counts(n_m: &[u32], n_m1: &[u32], n: usize, m: usize, correction: Correction) -> f64 {
    let windows_m = (n - m + 1) as f64;
    let windows_m1 = (n - m) as f64;
    debug_assert_eq!(n_m.len(), n - m + 1);
    debug_assert_eq!(n_m1.len(), n - m);
    let mut sum_m = 0.0;
    let mut sum_m1 = 0.0;
    let windows = (windows_m.ln(), windows_m1.ln());
    for (i, &cm) in n_m.iter().enumerate() {
        let (ln_m, ln_m1) = ln_c(cm, n_m1.get(i).copied(), windows, correction);
        sum_m += ln_m;
        sum_m1 += ln_m1.unwrap_or(0.0);
    }
    sum_m / windows_m - sum_m1 / windows_m1
}

/// ln C_i^m and ln C_i^{m+1} (the latter only where the (m+1)-window exists) with the
/// correction applied; `ln_windows` holds ln(N-m+1) and ln(N-m).
fn ln_c(
    cm: u32,
    cm1: Option<u32>,
    (ln_wm, ln_wm1): (f64, f64),
    correction: Correction,
) -> (f64, Option<f64>) {
    let ln_m = if cm == 0 { 0.0 } else { ln_count(cm) - ln_wm };
    let ln_m1 = cm1.map(|c1| match (c1, correction) {
        (0, Correction::Max) => -ln_wm,
        (0, Correction::Zero) if cm == 0 => 0.0,
        (0, Correction::Zero) => -ln_wm1,
        (c1, _) => ln_count(c1) - ln_wm1,
    });
    (ln_m, ln_m1)
}

/// Counts up to this have their logarithm in a table (`ln_count`).
const LN_TABLE: usize = 1 << 13;

/// ln(count), from a table for the counts of epochs up to `LN_TABLE` samples: a pair's
/// thousand counts took a thousand calls to the C library's log, a tenth of the CPU path's
/// time.
fn ln_count(count: u32) -> f64 {
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| (0..=LN_TABLE).map(|k| (k as f64).ln()).collect());
    match table.get(count as usize) {
        Some(&ln) => ln,
        None => (count as f64).ln(),
    }
}

/// Epochs of several channels, normalized, ready for any backend: `[epoch][channel][sample]`.
#[derive(Debug, Clone)]
pub struct Epochs {
    pub n: usize,
    pub channels: usize,
    pub epochs: usize,
    /// Normalized samples; a flat channel-epoch holds NaN.
    pub data: Vec<f32>,
    /// `[epoch][channel]`: false where the series was flat or not finite.
    pub valid: Vec<bool>,
}

impl Epochs {
    /// Normalizes raw samples laid out `[epoch][channel][sample]`.
    pub fn normalize(raw: &[f32], n: usize, channels: usize) -> Result<Self, XapenError> {
        use rayon::prelude::*;
        if n == 0 || channels == 0 || raw.is_empty() {
            return Err(XapenError::Empty);
        }
        assert_eq!(
            raw.len() % (n * channels),
            0,
            "raw samples are not whole epochs"
        );
        let epochs = raw.len() / (n * channels);
        let mut data = vec![0f32; raw.len()];
        let valid: Vec<bool> = data
            .par_chunks_mut(n)
            .zip(raw.par_chunks(n))
            .map(|(out, x)| match normalize(x) {
                Some(z) => {
                    out.copy_from_slice(&z);
                    true
                }
                None => {
                    out.fill(f32::NAN);
                    false
                }
            })
            .collect();
        Ok(Epochs {
            n,
            channels,
            epochs,
            data,
            valid,
        })
    }

    pub fn series(&self, epoch: usize, channel: usize) -> &[f32] {
        let at = (epoch * self.channels + channel) * self.n;
        &self.data[at..at + self.n]
    }

    pub fn is_valid(&self, epoch: usize, channel: usize) -> bool {
        self.valid[epoch * self.channels + channel]
    }

    /// Per channel, the number of epochs where it is flat (or not finite).
    pub fn flat_epochs(&self) -> Vec<usize> {
        (0..self.channels)
            .map(|c| (0..self.epochs).filter(|&e| !self.is_valid(e, c)).count())
            .collect()
    }

    /// Per cell `[u][v]`, the number of epochs where both channels are valid: the weight of
    /// the cell's mean.
    pub fn valid_pair_epochs(&self) -> Vec<usize> {
        let b = self.channels;
        (0..b * b)
            .map(|cell| {
                (0..self.epochs)
                    .filter(|&e| self.is_valid(e, cell / b) && self.is_valid(e, cell % b))
                    .count()
            })
            .collect()
    }
}

/// The mean matrix over epochs (and, when asked for, each epoch's); NaN where a channel was
/// flat in every epoch. Row u, column v holds Cross-ApEn(u||v).
#[derive(Debug, Clone)]
pub struct XapenMatrices {
    pub channels: usize,
    pub epochs: usize,
    /// `[u][v]`: the mean over the epochs where both channels are valid.
    pub mean: Vec<f64>,
    /// `[epoch][u][v]`, NaN where either channel is invalid in that epoch.
    pub per_epoch: Option<Vec<f64>>,
}

impl XapenMatrices {
    /// Builds the mean from per-epoch matrices (the rule the GPU's accumulation follows).
    pub fn from_per_epoch(channels: usize, epochs: usize, per_epoch: Vec<f64>) -> Self {
        let b2 = channels * channels;
        let mean = (0..b2)
            .map(|k| {
                let (sum, count) = (0..epochs)
                    .map(|e| per_epoch[e * b2 + k])
                    .filter(|v| !v.is_nan())
                    .fold((0.0, 0.0), |(s, c), v| (s + v, c + 1.0));
                mean_of(sum, count)
            })
            .collect();
        XapenMatrices {
            channels,
            epochs,
            mean,
            per_epoch: Some(per_epoch),
        }
    }

    pub fn epoch(&self, e: usize) -> Option<&[f64]> {
        let b2 = self.channels * self.channels;
        self.per_epoch.as_ref().map(|p| &p[e * b2..(e + 1) * b2])
    }
}

/// `sum / count` of a cell's valid epochs; NaN when there are none (the channel is flat in
/// every epoch).
pub fn mean_of(sum: f64, count: f64) -> f64 {
    if count == 0.0 { f64::NAN } else { sum / count }
}

/// Which CPU algorithm fills the matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMethod {
    /// Sorted v and match bitsets (`fast`).
    Fast,
    /// Every window against every window (`brute`): the baseline of the benchmark.
    Brute,
}

/// Every ordered pair of every epoch on the CPU (rayon over rows of the matrix). `done` counts
/// finished pairs for a progress bar; `Ok(None)` when cancelled.
pub fn cpu_matrices(
    ep: &Epochs,
    params: &XapenParams,
    method: CpuMethod,
    cancel: Cancel,
    done: Option<&std::sync::atomic::AtomicUsize>,
) -> Result<Option<XapenMatrices>, XapenError> {
    use rayon::prelude::*;
    params.check(ep.n)?;
    let (n, b, m, r) = (ep.n, ep.channels, params.m, params.r);
    let mut per_epoch = vec![f64::NAN; ep.epochs * b * b];
    for (e, out) in per_epoch.chunks_mut(b * b).enumerate() {
        if cancelled(cancel) {
            return Ok(None);
        }
        let prepared: Vec<Option<fast::Prepared>> = (0..b)
            .into_par_iter()
            .map(|c| {
                (method == CpuMethod::Fast && ep.is_valid(e, c))
                    .then(|| fast::prepare(ep.series(e, c)))
            })
            .collect();
        out.par_chunks_mut(b).enumerate().for_each_init(
            || {
                (
                    fast::Scratch::default(),
                    vec![0u32; n - m + 1],
                    vec![0u32; n - m],
                )
            },
            |(scratch, n_m, n_m1), (u, row)| {
                if !ep.is_valid(e, u) || cancelled(cancel) {
                    return;
                }
                for (v, cell) in row.iter_mut().enumerate() {
                    if !ep.is_valid(e, v) {
                        continue;
                    }
                    match (method, &prepared[u], &prepared[v]) {
                        (CpuMethod::Fast, Some(pu), Some(pv)) => {
                            fast::counts_into(pu, pv, m, r, scratch, n_m, n_m1)
                        }
                        _ => {
                            let (a, c) = brute::counts(ep.series(e, u), ep.series(e, v), m, r);
                            n_m.copy_from_slice(&a);
                            n_m1.copy_from_slice(&c);
                        }
                    }
                    *cell = from_counts(n_m, n_m1, n, m, params.correction);
                }
                if let Some(d) = done {
                    d.fetch_add(b, std::sync::atomic::Ordering::Relaxed);
                }
            },
        );
    }
    if cancelled(cancel) {
        return Ok(None);
    }
    Ok(Some(XapenMatrices::from_per_epoch(b, ep.epochs, per_epoch)))
}

/// Whether to stop: checked between units of work by long runs.
pub type Cancel<'a> = Option<&'a std::sync::atomic::AtomicBool>;

pub(crate) fn cancelled(cancel: Cancel) -> bool {
    cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
}

/// The f32 window test shared by the fast, brute-force and GPU paths: `b` matches a window
/// sample `a` when `lo <= b <= hi` with `lo = fl(a - r)`, `hi = fl(a + r)`.
#[inline]
pub(crate) fn bounds(a: f32, r: f32) -> (f32, f32) {
    (a - r, a + r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_checked_corrections() {
        // N = 4, m = 1: three (m+1)-windows, four m-windows.
        // counts: window 0 has no match at all, window 1 only an m-match, windows 2 and 3 match.
        let n_m = [0, 2, 1, 3];
        let n_m1 = [0, 0, 1];
        let (wm, wm1) = (4f64, 3f64);
        let max = (0.0 + (2.0 / wm).ln() + (1.0 / wm).ln() + (3.0 / wm).ln()) / wm
            - ((1.0 / wm).ln() + (1.0 / wm).ln() + (1.0 / wm1).ln()) / wm1;
        assert!((from_counts(&n_m, &n_m1, 4, 1, Correction::Max) - max).abs() < 1e-12);
        let zero = (0.0 + (2.0 / wm).ln() + (1.0 / wm).ln() + (3.0 / wm).ln()) / wm
            - (0.0 + (1.0 / wm1).ln() + (1.0 / wm1).ln()) / wm1;
        assert!((from_counts(&n_m, &n_m1, 4, 1, Correction::Zero) - zero).abs() < 1e-12);
    }

    #[test]
    fn parameters_out_of_range_are_errors() {
        let p = |m, r| XapenParams {
            m,
            r,
            correction: Correction::Max,
        };
        assert_eq!(p(1, 0.2).check(2), Err(XapenError::TooShort { n: 2, m: 1 }));
        assert!(p(1, 0.2).check(3).is_ok());
        assert_eq!(p(0, 0.2).check(100), Err(XapenError::BadM(0)));
        assert_eq!(p(1, -0.1).check(100), Err(XapenError::BadR(-0.1)));
        assert!(p(1, f32::NAN).check(100).is_err());
    }

    #[test]
    fn flat_series_do_not_normalize() {
        assert!(normalize(&[3.0; 50]).is_none());
        assert!(normalize(&[1.0, f32::NAN, 2.0]).is_none());
        let z = normalize(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let mean: f32 = z.iter().sum::<f32>() / 4.0;
        let var: f32 = z.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-6);
    }
}
