//! Picard (Ablin, Cardoso & Gramfort 2018, "Faster independent component analysis by
//! preconditioning with Hessian approximations"), as `picard.picard` 0.8 runs it on whitened
//! data (`_core_picard.py`): the maximum-likelihood ICA problem solved by L-BFGS whose initial
//! Hessian is a cheap approximation of the true one, with a backtracking line search.
//!
//! - `ortho = false`: standard Picard. With `extended` it has extended Infomax's fixed points
//!   (MNE: "dict(ortho=False, extended=True) for extended Infomax"); without, plain Infomax's.
//! - `ortho = true`: Picard-O, W kept orthogonal (steps are matrix exponentials of
//!   antisymmetric directions). With `extended` it has FastICA's fixed points. MNE's
//!   `ICA(method='picard')` runs this (ortho and extended are picard's defaults).
//!
//! Every pass over the data (the loss, or the gradient and Hessian approximation) is
//! computed from the whitened samples and the current unmixing in f64, in column blocks in
//! parallel: the line search compares losses that differ by less than f32 resolves near the
//! optimum, and the stopping rule is a gradient below 1e-7.

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::{Contrast, IcaError, Observations};

/// Picard's parameters (picard's defaults, MNE's 500 iterations).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PicardParams {
    /// The density: logcosh (picard's "tanh", alpha 1), exp (alpha 0.1) or cube.
    pub density: Contrast,
    pub ortho: bool,
    pub extended: bool,
    /// Stop when the largest entry of the relative gradient is below this.
    pub tol: f64,
    pub max_iter: usize,
    /// L-BFGS's memory.
    pub m: usize,
    /// Backtracking line search's tries.
    pub ls_tries: usize,
    /// Eigenvalues of the Hessian approximation are raised to at least this.
    pub lambda_min: f64,
}

impl Default for PicardParams {
    /// MNE's `ICA(method='picard')`: Picard-O, extended, tanh, tolerance 1e-7, 500 iterations.
    fn default() -> Self {
        PicardParams {
            density: Contrast::Tanh,
            ortho: true,
            extended: true,
            tol: 1e-7,
            max_iter: 500,
            m: 7,
            ls_tries: 10,
            lambda_min: 0.01,
        }
    }
}

impl PicardParams {
    /// The extended Infomax problem (standard Picard, extended).
    pub fn extended_infomax() -> Self {
        PicardParams {
            ortho: false,
            ..PicardParams::default()
        }
    }

    pub fn validate(&self) -> Result<(), IcaError> {
        if self.tol.is_nan()
            || self.tol <= 0.0
            || self.max_iter == 0
            || self.m == 0
            || self.ls_tries == 0
        {
            return Err(IcaError::Params(format!(
                "Picard needs a positive tolerance, iterations, memory and line-search \
                 tries; got {self:?}"
            )));
        }
        Ok(())
    }
}

/// Samples per block of a pass.
const BLOCK: usize = 2048;

/// Minimises Picard's loss over the whitened data `z` (r x T) from the unmixing `start`
/// (r x r). Returns the unmixing of `z`, the iterations (counted as MNE's `n_iter_`) and
/// whether the gradient fell below the tolerance.
pub fn picard(
    z: &Observations,
    p: &PicardParams,
    start: DMatrix<f64>,
) -> Result<(DMatrix<f64>, usize, bool), IcaError> {
    p.validate()?;
    // Z Z^T / T (the whitened data are centred: no means to remove).
    let zero = vec![0.0; z.rows];
    let blocks = super::column_blocks(z.cols, BLOCK);
    let cov = DMatrix::from_row_slice(
        z.rows,
        z.rows,
        &super::centred_products(z, &zero, &blocks, 1.0 / z.cols as f64),
    );
    solve(&mut |w| Ok(Pass::at(z, w, p)), &cov, p, start, false)
}

/// Picard's iterations with the passes over the data made by `pass_at` (the CPU's here, the
/// GPU's in `gpu::picard`), from `start`, where `cov` is Z Z^T / T. With `until_stall`, a
/// line search that finds no step along L-BFGS's direction nor along picard's fallback, the
/// gradient, ends the iterations unconverged and before `max_iter` (the GPU's caller then
/// goes on with the CPU's passes); without, the fallback's last try is taken, as picard does.
pub fn solve(
    pass_at: &mut dyn FnMut(&DMatrix<f64>) -> Result<Pass, IcaError>,
    cov: &DMatrix<f64>,
    p: &PicardParams,
    start: DMatrix<f64>,
    until_stall: bool,
) -> Result<(DMatrix<f64>, usize, bool), IcaError> {
    p.validate()?;
    let n = cov.nrows();
    assert_eq!(start.shape(), (n, n), "Picard's start is r x r");
    let mut signs = vec![1.0; n];
    // Each pass at a W gives the loss for any signs and the next iteration's gradient: the
    // line search's accepted pass is the next iteration's. The pass's W is the one iterated
    // (the GPU's passes round it to f32, and the loss must be that of the W they used).
    let mut pass = pass_at(&start)?;
    let mut w = pass.w.clone();
    let mut current_loss = Some(pass.loss(p, &signs));
    let mut memory: Vec<(DMatrix<f64>, DMatrix<f64>, f64)> = Vec::new();
    let mut old_signs: Option<Vec<f64>> = None;
    let mut g_old: Option<DMatrix<f64>> = None;
    let mut step: Option<DMatrix<f64>> = None;
    let mut converged = false;
    let mut iteration = 0;
    let t = pass.samples;
    for it in 0..p.max_iter {
        iteration = it;
        let c = &w * cov * w.transpose();
        let mut psid = pass.psid.iter().map(|v| v / t).collect::<Vec<_>>();
        let mut h_sq = &pass.psid_y2 / t;
        let mut sign_change = false;
        if p.extended {
            for i in 0..n {
                let k = psid[i] * c[(i, i)] - pass.psi_y[(i, i)] / t;
                signs[i] = match k {
                    k if k > 0.0 => 1.0,
                    k if k < 0.0 => -1.0,
                    _ => 0.0,
                };
            }
            sign_change = old_signs.as_ref().is_some_and(|o| *o != signs);
            old_signs = Some(signs.clone());
            for i in 0..n {
                psid[i] *= signs[i];
                h_sq.row_mut(i).scale_mut(signs[i]);
            }
            if !p.ortho {
                for i in 0..n {
                    psid[i] += 1.0;
                    for j in 0..n {
                        h_sq[(i, j)] += pass.y2[j] / t;
                    }
                }
            }
        }
        let h_off: Vec<f64> = match p.ortho {
            true => (0..n).map(|i| signs[i] * pass.psi_y[(i, i)] / t).collect(),
            false => vec![1.0; n],
        };
        let h = match p.ortho {
            true => DMatrix::from_fn(n, n, |i, j| {
                (0.5 * (psid[i] + psid[j] - h_off[i] - h_off[j])).max(p.lambda_min)
            }),
            false => regularize_hessian(h_sq, &h_off, p.lambda_min),
        };
        let g = relative_gradient(&pass, &c, p, &signs);
        if g.amax() < p.tol {
            converged = true;
            break;
        }
        if let (Some(s), Some(g_old)) = (step.take(), g_old.as_ref()) {
            let y = &g - g_old;
            let r = 1.0 / s.dot(&y);
            memory.push((s, y, r));
            if memory.len() > p.m {
                memory.remove(0);
            }
        }
        if p.extended && sign_change {
            current_loss = None;
            memory.clear();
        }
        // The loss at W under this iteration's signs (picard recomputes it after a change).
        let current = current_loss.unwrap_or_else(|| pass.loss(p, &signs));
        let direction = lbfgs_direction(&g, &h, &h_off, &memory, p.ortho);
        let search = Search {
            w: &w,
            cov,
            signs: &signs,
            current,
        };
        let found = match line_search(pass_at, &search, p, (&direction, &g), p.ls_tries)? {
            Ok(found) => found,
            Err(_) => {
                memory.clear();
                match line_search(pass_at, &search, p, (&(-&g), &g), 10)? {
                    Ok(found) => found,
                    Err(_) if until_stall => return Ok((w, iteration, false)),
                    Err(tried) => tried,
                }
            }
        };
        w = found.pass.w.clone();
        current_loss = Some(found.loss);
        pass = found.pass;
        step = Some(found.step);
        g_old = Some(g);
        if !w.iter().all(|v| v.is_finite()) {
            return Err(IcaError::Params(
                "Picard diverged (the unmixing is no longer finite)".into(),
            ));
        }
    }
    Ok((w, iteration + 1, converged))
}

/// Picard's relative gradient at the pass's W under `signs`: psi(Y) Y^T / T signed, plus
/// the sources' covariance `c` (W C W^T) for extended standard Picard (extended Infomax's
/// psi(y) + y for sub- and super-Gaussian sources alike), minus I; antisymmetrised for
/// Picard-O.
fn relative_gradient(
    pass: &Pass,
    c: &DMatrix<f64>,
    p: &PicardParams,
    signs: &[f64],
) -> DMatrix<f64> {
    let n = signs.len();
    let mut g = &pass.psi_y / pass.samples;
    for (i, s) in signs.iter().enumerate() {
        g.row_mut(i).scale_mut(*s);
    }
    if p.extended && !p.ortho {
        g += c;
    }
    match p.ortho {
        true => (&g - g.transpose()) / 2.0,
        false => g - DMatrix::identity(n, n),
    }
}

/// What one pass over the samples at W accumulates (sums, not means) for Y = W Z: psi(y) y^T,
/// psi'(y), psi'(y) (y^2)^T (standard Picard's Hessian approximation), y^2, and each source's
/// negative log-likelihood.
pub struct Pass {
    /// The W of the pass (as the device holds it, for the GPU's).
    pub w: DMatrix<f64>,
    pub psi_y: DMatrix<f64>,
    pub psid: Vec<f64>,
    pub psid_y2: DMatrix<f64>,
    pub y2: Vec<f64>,
    pub log_lik: Vec<f64>,
    pub samples: f64,
    /// How far the loss can be off by the pass's rounding (0: exact for the line search).
    pub resolution: f64,
}

impl Pass {
    pub(crate) fn at(z: &Observations, w: &DMatrix<f64>, p: &PicardParams) -> Pass {
        let n = z.rows;
        let wr: Vec<f64> = w.transpose().as_slice().to_vec();
        let hessian = !p.ortho;
        let size = 2 * n * n + 3 * n;
        let zero = vec![0.0; n];
        let blocks = super::column_blocks(z.cols, BLOCK);
        let sums = blocks
            .par_iter()
            .map(|&(c0, len)| {
                let mut zb = Vec::with_capacity(n * len);
                super::centre_block(z, &zero, (c0, len), &mut zb);
                let mut y = vec![0.0; n * len];
                gemm(&wr, &zb, (n, n, len), false, &mut y);
                let mut psi = vec![0.0; n * len];
                let mut psid = vec![0.0; n * len];
                let mut out = vec![0.0; size];
                let (psi_y, rest) = out.split_at_mut(n * n);
                let (psid_y2, rows) = rest.split_at_mut(n * n);
                for i in 0..n {
                    let span = i * len..(i + 1) * len;
                    let (mut d_sum, mut sq, mut ll) = (0.0, 0.0, 0.0);
                    for ((&v, s), d) in (y[span.clone()].iter())
                        .zip(&mut psi[span.clone()])
                        .zip(&mut psid[span])
                    {
                        let (l, score, der) = density(p.density, v);
                        (*s, *d) = (score, der);
                        d_sum += der;
                        sq += v * v;
                        ll += l;
                    }
                    (rows[i], rows[n + i], rows[2 * n + i]) = (d_sum, sq, ll);
                }
                gemm(&psi, &y, (n, len, n), true, psi_y);
                if hessian {
                    y.iter_mut().for_each(|v| *v *= *v);
                    gemm(&psid, &y, (n, len, n), true, psid_y2);
                }
                out
            })
            .reduce(|| vec![0.0; size], add);
        let row = |k: usize| sums[2 * n * n + k * n..2 * n * n + (k + 1) * n].to_vec();
        Pass {
            w: w.clone(),
            psi_y: DMatrix::from_row_slice(n, n, &sums[..n * n]),
            psid_y2: DMatrix::from_row_slice(n, n, &sums[n * n..2 * n * n]),
            psid: row(0),
            y2: row(1),
            log_lik: row(2),
            samples: z.cols as f64,
            resolution: 0.0,
        }
    }

    /// Picard's loss at this pass's W under `signs`: -log|det W| (standard Picard) plus the
    /// mean negative log-likelihood of each source, signed, plus y^2 / 2 for extended
    /// standard Picard.
    fn loss(&self, p: &PicardParams, signs: &[f64]) -> f64 {
        let t = self.samples;
        let quadratic = p.extended && !p.ortho;
        let mut total = match p.ortho {
            true => 0.0,
            false => -log_abs_det(&self.w),
        };
        for ((s, ll), y2) in signs.iter().zip(&self.log_lik).zip(&self.y2) {
            total += s * ll / t;
            if quadratic {
                total += 0.5 * y2 / t;
            }
        }
        total
    }
}

fn log_abs_det(w: &DMatrix<f64>) -> f64 {
    let lu = w.clone().lu();
    (0..w.nrows()).map(|i| lu.u()[(i, i)].abs().ln()).sum()
}

/// Picard's densities at y: the negative log-likelihood (up to constants), the score
/// psi(y) and its derivative. logcosh shares one exponential among the three.
fn density(density: Contrast, y: f64) -> (f64, f64, f64) {
    match density {
        Contrast::Tanh => {
            let a = y.abs();
            let e = (-2.0 * a).exp();
            let s = ((1.0 - e) / (1.0 + e)).copysign(y);
            (a + e.ln_1p(), s, 1.0 - s * s)
        }
        Contrast::Gauss => {
            let y2 = y * y;
            let k = (-EXP_ALPHA / 2.0 * y2).exp();
            (-k / EXP_ALPHA, y * k, (1.0 - EXP_ALPHA * y2) * k)
        }
        Contrast::Cube => (y.powi(4) / 4.0, y * y * y, 3.0 * y * y),
    }
}

/// Picard's `Exp` density's alpha.
const EXP_ALPHA: f64 = 0.1;

/// A step tried by the line search: its loss, the step and its pass (with the new unmixing).
struct Step {
    loss: f64,
    step: DMatrix<f64>,
    pass: Pass,
}

/// Where a line search starts: W, Z Z^T / T, the signs and the loss at W.
struct Search<'s> {
    w: &'s DMatrix<f64>,
    cov: &'s DMatrix<f64>,
    signs: &'s [f64],
    current: f64,
}

/// The strong Wolfe condition's bound on the slope at a step, as a fraction of the slope at
/// its start (L-BFGS's usual 0.9).
const WOLFE: f64 = 0.9;

/// Tries steps 1, 1/2, ... along `direction` from `w` until the loss falls below `current`;
/// the step taken, or (as the inner `Err`) the last one tried. Where a pass's loss has a
/// rounding (`Pass::resolution`, the GPU's) and the step changes the loss by less, the exact
/// gradient decides instead: the step is taken if its loss is within the rounding and the
/// slope along `direction` there is at most `WOLFE` of the slope at `w` (`g` the gradient
/// there), as in the strong Wolfe condition.
#[allow(clippy::type_complexity)] // both arms are the step; Err says the loss did not fall
fn line_search(
    pass_at: &mut dyn FnMut(&DMatrix<f64>) -> Result<Pass, IcaError>,
    at: &Search,
    p: &PicardParams,
    (direction, g): (&DMatrix<f64>, &DMatrix<f64>),
    tries: usize,
) -> Result<Result<Step, Step>, IcaError> {
    let n = at.w.nrows();
    let slope = g.dot(direction);
    let mut alpha = 1.0;
    let mut last = None;
    for _ in 0..tries {
        let transform = match p.ortho {
            true => (direction * alpha).exp(),
            false => DMatrix::identity(n, n) + direction * alpha,
        };
        let pass = pass_at(&(&transform * at.w))?;
        let step = Step {
            loss: pass.loss(p, at.signs),
            step: direction * alpha,
            pass,
        };
        let unresolved = step.loss < at.current + step.pass.resolution
            && step.pass.resolution > 0.0
            && slope < 0.0
            && {
                let w = &step.pass.w;
                let c = w * at.cov * w.transpose();
                let there = relative_gradient(&step.pass, &c, p, at.signs).dot(direction);
                there.abs() <= WOLFE * slope.abs()
            };
        if step.loss < at.current || unresolved {
            return Ok(Ok(step));
        }
        last = Some(step);
        alpha /= 2.0;
    }
    Ok(Err(last.expect("at least one try")))
}

fn lbfgs_direction(
    g: &DMatrix<f64>,
    h: &DMatrix<f64>,
    h_off: &[f64],
    memory: &[(DMatrix<f64>, DMatrix<f64>, f64)],
    ortho: bool,
) -> DMatrix<f64> {
    let mut q = g.clone();
    let mut alphas = Vec::with_capacity(memory.len());
    for (s, y, r) in memory.iter().rev() {
        let a = r * s.dot(&q);
        alphas.push(a);
        q -= y * a;
    }
    let mut z = match ortho {
        true => {
            let z = q.component_div(h);
            (&z - z.transpose()) / 2.0
        }
        false => solve_hessian(h, h_off, &q),
    };
    for ((s, y, r), a) in memory.iter().zip(alphas.iter().rev()) {
        let beta = r * y.dot(&z);
        z += s * (a - beta);
    }
    -z
}

/// Raises the 2 x 2 blocks' smaller eigenvalue to `lambda_min` (off the diagonal).
fn regularize_hessian(mut h: DMatrix<f64>, h_off: &[f64], lambda_min: f64) -> DMatrix<f64> {
    let n = h.nrows();
    let ht = h.transpose();
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            let discr = ((h[(i, j)] - ht[(i, j)]).powi(2) + 4.0 * h_off[i] * h_off[j]).sqrt();
            let eigenvalue = 0.5 * (h[(i, j)] + ht[(i, j)] - discr);
            if eigenvalue < lambda_min {
                h[(i, j)] += lambda_min - eigenvalue;
            }
        }
    }
    h
}

/// The Hessian approximation's 2 x 2 blocks solved for G.
fn solve_hessian(h: &DMatrix<f64>, h_off: &[f64], g: &DMatrix<f64>) -> DMatrix<f64> {
    let n = h.nrows();
    DMatrix::from_fn(n, n, |i, j| {
        let det = h[(i, j)] * h[(j, i)] - h_off[i] * h_off[j];
        (h[(j, i)] * g[(i, j)] - h_off[i] * g[(j, i)]) / det
    })
}

fn add(mut a: Vec<f64>, b: Vec<f64>) -> Vec<f64> {
    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
    a
}

/// C (m x n) = A B, A m x k row-major, B k x n row-major, or (`transposed`) B^T with B
/// n x k row-major.
fn gemm(a: &[f64], b: &[f64], (m, k, n): (usize, usize, usize), transposed: bool, c: &mut [f64]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let (rsb, csb) = match transposed {
        true => (1, k as isize),
        false => (n as isize, 1),
    };
    // SAFETY: the slices hold the shapes asserted above; B's strides read it either way.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dsp::ica::{Whitening, amari_index, random_rotation};
    use crate::recording::demo::SplitMix;

    /// `n` sources of `t` samples (Laplacian, uniform and cubed Gaussian in turn) mixed by a
    /// random matrix: the mixture and the mixing matrix.
    pub(crate) fn mixture(n: usize, t: usize, seed: u64) -> (Observations, DMatrix<f64>) {
        let mut rng = SplitMix(seed);
        let mut s = vec![0.0f64; n * t];
        for i in 0..n {
            for k in 0..t {
                let u = rng.uniform() - 0.5;
                s[i * t + k] = match i % 3 {
                    0 => -(1.0 - 2.0 * u.abs()).ln() * u.signum(),
                    1 => u * 3.4,
                    _ => rng.gauss().powi(3),
                };
            }
        }
        let a = DMatrix::from_fn(n, n, |_, _| rng.gauss());
        let x = &a * DMatrix::from_row_slice(n, t, &s);
        let x = Observations::new(n, t, x.transpose().iter().map(|&v| v as f32).collect());
        (x, a)
    }

    /// Sub- and super-Gaussian sources mixed: both forms separate them.
    #[test]
    fn separates_sub_and_super_gaussian_sources() {
        let n = 4;
        let (x, a) = mixture(n, 20_000, 7);
        let wh = Whitening::of(&x, None).unwrap();
        for p in [PicardParams::default(), PicardParams::extended_infomax()] {
            let (w, iterations, converged) = picard(&wh.z, &p, random_rotation(n, 3)).unwrap();
            assert!(converged, "{p:?}: {iterations} iterations");
            let unmixing = &w * &wh.k;
            let amari = amari_index(&(unmixing * &a));
            assert!(amari < 0.02, "{p:?}: Amari index {amari}");
        }
    }

    #[test]
    fn the_hessian_solve_inverts_its_blocks() {
        let h = DMatrix::from_row_slice(2, 2, &[2.0, 3.0, 5.0, 7.0]);
        let g = DMatrix::from_row_slice(2, 2, &[1.0, 0.5, -0.25, 2.0]);
        let x = solve_hessian(&h, &[1.0, 1.0], &g);
        // The (0, 1) block: [h01 1; 1 h10] [x01; x10] = [g01; g10].
        assert!((h[(0, 1)] * x[(0, 1)] + x[(1, 0)] - g[(0, 1)]).abs() < 1e-12);
        assert!((x[(0, 1)] + h[(1, 0)] * x[(1, 0)] - g[(1, 0)]).abs() < 1e-12);
    }
}
