//! Infomax ICA (Bell & Sejnowski 1995) and its extended form for sub- and super-Gaussian
//! sources (Lee, Girolami & Sejnowski 1999), as EEGLAB's `runica` and MNE's `infomax` run it on
//! whitened data: stochastic natural-gradient steps over blocks of randomly permuted samples,
//! W += l (B I - diag(k) tanh(u) u^T - u u^T) W with u = W z_block + b (extended; the plain
//! rule uses the logistic), the signs k re-estimated from the sources' kurtosis after every
//! block, the learning rate annealed when the direction of change turns by more than 60
//! degrees, and a restart at a lower rate when the weights blow up. Two sets of defaults:
//! - `runica` (EEGLAB's, what ICLabel was trained on): rate 0.00065 / ln(r), blocks of
//!   ceil(min(5 ln T, 0.3 T)) samples, annealing by 0.98, stop when the squared change is below
//!   1e-6, at most 512 steps;
//! - `mne` (`mne.preprocessing.infomax`): rate 0.01 / ln(r^2), blocks of floor(sqrt(T / 3)),
//!   annealing by 0.9, stop below 1e-12 or after 20 steps in a row without annealing. Its rate
//!   falls tenfold every 22 steps, so a fit freezes where its random sample order left it:
//!   on the EEGLAB sample (20 components) two random orders give maps matched at a median
//!   |r| of 0.70-0.88 (MNE's own code with numpy's Generator), runica's 0.97 and above.

use nalgebra::DMatrix;

use super::{IcaError, Observations};
use crate::recording::demo::SplitMix;

/// Extended Infomax's parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InfomaxParams {
    /// Extended (sub- and super-Gaussian sources) rather than the logistic rule.
    pub extended: bool,
    /// Steps (passes over the data) at most.
    pub max_iter: usize,
    /// Seeds the sample order of every step and the kurtosis subsets.
    pub seed: u64,
    pub defaults: InfomaxDefaults,
}

/// Whose defaults: EEGLAB's `runica` or MNE's `infomax` (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InfomaxDefaults {
    Runica,
    Mne,
}

impl Default for InfomaxParams {
    /// Extended Infomax as EEGLAB's runica runs it (512 steps at most).
    fn default() -> Self {
        InfomaxParams {
            extended: true,
            max_iter: 512,
            seed: 1,
            defaults: InfomaxDefaults::Runica,
        }
    }
}

/// The rate, block length, annealing factor, stopping change and small-angle limit for `r`
/// components of `t` samples.
fn schedule(d: InfomaxDefaults, extended: bool, r: usize, t: usize) -> Schedule {
    match d {
        InfomaxDefaults::Runica => Schedule {
            rate: 0.00065 / (r as f64).ln(),
            block: (5.0 * (t as f64).ln()).min(0.3 * t as f64).ceil() as usize,
            anneal: if extended { 0.98 } else { 0.9 },
            w_change: 1e-6,
            small_angle_steps: None,
        },
        InfomaxDefaults::Mne => Schedule {
            rate: 0.01 / ((r * r) as f64).ln(),
            block: (t as f64 / 3.0).sqrt().floor() as usize,
            anneal: 0.9,
            w_change: 1e-12,
            small_angle_steps: Some(20),
        },
    }
}

struct Schedule {
    rate: f64,
    block: usize,
    anneal: f64,
    w_change: f64,
    small_angle_steps: Option<usize>,
}

const MAX_WEIGHT: f64 = 1e8;
const RESTART_FACTOR: f64 = 0.9;
const MIN_RATE: f64 = 1e-10;
const ANNEAL_DEG: f64 = 60.0;
const BLOWUP: f64 = 1e4;
const BLOWUP_FACTOR: f64 = 0.5;
const KURT_SIZE: usize = 6000;
const EXT_MOMENTUM: f64 = 0.5;
const SIGNS_BIAS: f64 = 0.02;
const SIGNCOUNT_THRESHOLD: usize = 25;

/// Infomax of whitened `z` (r x T): the unmixing rotation (r x r, not orthogonal), the steps
/// taken and whether it stopped on a small change (rather than at `max_iter`).
pub fn infomax(
    z: &Observations,
    p: &InfomaxParams,
) -> Result<(DMatrix<f64>, usize, bool), IcaError> {
    let (r, t) = (z.rows, z.cols);
    if r < 2 || t <= r {
        return Err(IcaError::Shape { rows: r, cols: t });
    }
    if p.max_iter == 0 {
        return Err(IcaError::Params("at least one step is needed".into()));
    }
    let mut rng = SplitMix(p.seed);
    let plan = schedule(p.defaults, p.extended, r, t);
    let mut rate = plan.rate;
    let block = plan.block.clamp(1, t);
    let blocks = t / block;
    let kurt_size = KURT_SIZE.min(t);
    let initial_signs = || {
        let mut s = vec![1.0f64; r];
        s[0] = -1.0;
        s
    };
    let mut max_iter = p.max_iter;
    'restart: loop {
        let mut w = DMatrix::<f64>::identity(r, r);
        let mut bias = vec![0.0f64; r];
        let mut old_w = w.clone();
        let mut old_delta: Option<DMatrix<f64>> = None;
        let mut old_change = 0.0;
        let mut signs = initial_signs();
        let mut old_signs = vec![0.0f64; r];
        let mut old_kurt = vec![0.0f64; r];
        let (mut ext_blocks, mut signcount, mut block_no) = (1usize, 0usize, 0usize);
        let mut small_angles = 0;
        let mut step = 0;
        // The block's samples, row-major r x block, and the step's buffers.
        let mut xb = vec![0.0f64; r * block];
        let mut buffers = Buffers::new(r, block);
        while step < max_iter {
            let order = permutation(t, &mut rng);
            for b in 0..blocks {
                for (c, &s) in order[b * block..(b + 1) * block].iter().enumerate() {
                    for i in 0..r {
                        xb[i * block + c] = z.data[i * t + s] as f64;
                    }
                }
                let y_sums = buffers.step(&mut w, &xb, &bias, (&signs, p.extended), rate);
                for (b, sum) in bias.iter_mut().zip(y_sums) {
                    *b += rate * sum;
                }
                block_no += 1;
                if w.amax() > MAX_WEIGHT || !w.iter().all(|v| v.is_finite()) {
                    rate *= RESTART_FACTOR;
                    if rate <= MIN_RATE {
                        return Err(IcaError::Params(
                            "Infomax diverged: the unmixing matrix may not be invertible".into(),
                        ));
                    }
                    continue 'restart;
                }
                if p.extended && block_no.is_multiple_of(ext_blocks) {
                    let kurt = kurtosis(&w, z, kurt_size, &mut rng);
                    for i in 0..r {
                        old_kurt[i] = EXT_MOMENTUM * old_kurt[i] + (1.0 - EXT_MOMENTUM) * kurt[i];
                        signs[i] = (old_kurt[i] + SIGNS_BIAS).signum();
                    }
                    match signs == old_signs {
                        true => signcount += 1,
                        false => signcount = 0,
                    }
                    old_signs.clone_from(&signs);
                    if signcount >= SIGNCOUNT_THRESHOLD {
                        ext_blocks *= 2;
                        signcount = 0;
                    }
                }
            }
            let delta = &w - &old_w;
            step += 1;
            let change = delta.norm_squared();
            let angle = match (&old_delta, step > 2) {
                (Some(od), true) => {
                    let cos = delta.dot(od) / (change * old_change).sqrt();
                    cos.clamp(-1.0, 1.0).acos().to_degrees()
                }
                _ => 0.0,
            };
            old_w.copy_from(&w);
            if angle > ANNEAL_DEG {
                rate *= plan.anneal;
                old_delta = Some(delta);
                old_change = change;
                small_angles = 0;
            } else {
                if step == 1 {
                    old_delta = Some(delta);
                    old_change = change;
                }
                small_angles += 1;
                if plan
                    .small_angle_steps
                    .is_some_and(|most| small_angles > most)
                {
                    max_iter = step;
                }
            }
            if step > 2 && change < plan.w_change {
                return Ok((w, step, true));
            } else if change > BLOWUP {
                rate *= BLOWUP_FACTOR;
            }
        }
        return Ok((w, step, step < p.max_iter));
    }
}

/// One block's natural-gradient step in buffers kept across blocks: the products straight
/// through matrixmultiply, nothing allocated (a step of the EEGLAB sample's 29 components is
/// 600 blocks of 52 samples; fresh matrices made each block cost more than the arithmetic).
struct Buffers {
    r: usize,
    block: usize,
    /// u = W x + b and y = g(u), row-major r x block.
    u: Vec<f64>,
    y: Vec<f64>,
    /// u u^T and y u^T, row-major r x r; then the gradient; then gradient x W (column-major).
    uu: Vec<f64>,
    yu: Vec<f64>,
    product: Vec<f64>,
}

impl Buffers {
    fn new(r: usize, block: usize) -> Self {
        Buffers {
            r,
            block,
            u: vec![0.0; r * block],
            y: vec![0.0; r * block],
            uu: vec![0.0; r * r],
            yu: vec![0.0; r * r],
            product: vec![0.0; r * r],
        }
    }

    /// W += rate (B I - diag(k) tanh(u) u^T - u u^T) W (extended; the logistic rule's
    /// B I + (1 - 2 logistic(u)) u^T otherwise) for the block `xb` (row-major r x block).
    /// Returns the bias's gradient per row: -2 sum tanh(u) (extended), sum (1 - 2 logistic(u)).
    fn step(
        &mut self,
        w: &mut DMatrix<f64>,
        xb: &[f64],
        bias: &[f64],
        (signs, extended): (&[f64], bool),
        rate: f64,
    ) -> Vec<f64> {
        let (r, n) = (self.r, self.block);
        let (ri, ni) = (r as isize, n as isize);
        // SAFETY (every product): the slices hold the shapes and strides given (W is
        // column-major r x r, the others as their comments say).
        unsafe {
            matrixmultiply::dgemm(
                r,
                r,
                n,
                1.0,
                w.as_ptr(),
                1,
                ri,
                xb.as_ptr(),
                ni,
                1,
                0.0,
                self.u.as_mut_ptr(),
                ni,
                1,
            );
        }
        for (row, &b) in self.u.chunks_exact_mut(n).zip(bias) {
            row.iter_mut().for_each(|v| *v += b);
        }
        let sums: Vec<f64> = (self.u.chunks_exact(n).zip(self.y.chunks_exact_mut(n)))
            .map(|(u, y)| {
                let mut sum = 0.0;
                for (y, &u) in y.iter_mut().zip(u) {
                    *y = if extended {
                        u.tanh()
                    } else {
                        1.0 - 2.0 / (1.0 + (-u).exp())
                    };
                    sum += *y;
                }
                if extended { -2.0 * sum } else { sum }
            })
            .collect();
        unsafe {
            matrixmultiply::dgemm(
                r,
                n,
                r,
                1.0,
                self.u.as_ptr(),
                ni,
                1,
                self.u.as_ptr(),
                1,
                ni,
                0.0,
                self.uu.as_mut_ptr(),
                ri,
                1,
            );
            matrixmultiply::dgemm(
                r,
                n,
                r,
                1.0,
                self.y.as_ptr(),
                ni,
                1,
                self.u.as_ptr(),
                1,
                ni,
                0.0,
                self.yu.as_mut_ptr(),
                ri,
                1,
            );
        }
        // The gradient, in place of u u^T.
        for (k, g) in self.uu.iter_mut().enumerate() {
            let (i, j) = (k / r, k % r);
            let eye = if i == j { n as f64 } else { 0.0 };
            *g = match extended {
                true => eye - signs[i] * self.yu[k] - *g,
                false => eye + self.yu[k],
            };
        }
        unsafe {
            matrixmultiply::dgemm(
                r,
                r,
                r,
                1.0,
                self.uu.as_ptr(),
                ri,
                1,
                w.as_ptr(),
                1,
                ri,
                0.0,
                self.product.as_mut_ptr(),
                1,
                ri,
            );
        }
        for (v, d) in w.as_mut_slice().iter_mut().zip(&self.product) {
            *v += rate * d;
        }
        sums
    }
}

/// A random order of 0..t (Fisher-Yates).
fn permutation(t: usize, rng: &mut SplitMix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..t).collect();
    for i in (1..t).rev() {
        let j = (rng.uniform() * (i + 1) as f64) as usize;
        order.swap(i, j.min(i));
    }
    order
}

/// Each source's excess kurtosis (biased moments, as scipy's default) over `size` samples
/// drawn at random (all of them when `size` is the whole length).
fn kurtosis(w: &DMatrix<f64>, z: &Observations, size: usize, rng: &mut SplitMix) -> Vec<f64> {
    let (r, t) = (z.rows, z.cols);
    let picks: Vec<usize> = match size < t {
        true => (0..size)
            .map(|_| (rng.uniform() * (t - 1) as f64) as usize)
            .collect(),
        false => (0..t).collect(),
    };
    let xs = DMatrix::from_fn(r, picks.len(), |i, c| z.data[i * t + picks[c]] as f64);
    let u = w * xs;
    (0..r)
        .map(|i| {
            let row = u.row(i);
            let n = row.len() as f64;
            let mean = row.sum() / n;
            let (m2, m4) = row.iter().fold((0.0, 0.0), |(a, b), &v| {
                let d = (v - mean) * (v - mean);
                (a + d, b + d * d)
            });
            let (m2, m4) = (m2 / n, m4 / n);
            if m2 > 0.0 { m4 / (m2 * m2) - 3.0 } else { 0.0 }
        })
        .collect()
}
