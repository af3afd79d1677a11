//! FastICA on the CPU: each iteration is one pass over the whitened data computing both
//! expectations of the fixed-point update, E{g(W z) z^T} and E{g'(W z)}, as two f32 matrix
//! products per block of samples (blocks in parallel), with the nonlinearity in between from
//! a vectorizable exp. The small r x r algebra (update, decorrelation, convergence) is f64.

use nalgebra::DMatrix;
use rayon::prelude::*;

use super::{
    Approach, Contrast, FastIcaParams, Ica, IcaError, Observations, Whitening,
    symmetric_decorrelation, whiten_beside_start,
};

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Samples per block of the data pass: large enough for the matrix products to run near
/// their peak, small enough that two cores share the work of a 5000-sample window.
const BLOCK: usize = 1024;

/// FastICA of `x`. `warm` is a previous unmixing matrix over the same channels (r x n); it
/// replaces the random start when its shape fits this data's whitening.
pub fn fastica(
    x: &Observations,
    p: &FastIcaParams,
    warm: Option<&DMatrix<f64>>,
) -> Result<Ica, IcaError> {
    fastica_with_sources_of(x, None, p, warm)
}

/// `fastica` of `x`, with the sources of `data`'s first `rows` components when it is given
/// (`data` holds `x`'s samples and more: `x` is a subsample of it, see
/// `Whitening::finish_with_sources_of`).
pub fn fastica_with_sources_of(
    x: &Observations,
    data: Option<(&Observations, usize)>,
    p: &FastIcaParams,
    warm: Option<&DMatrix<f64>>,
) -> Result<Ica, IcaError> {
    p.validate()?;
    let whiten = || Whitening::of(x, p.components);
    let (wh, w0) = whiten_beside_start(x, p, warm, whiten, |wh| &wh.k_inv)?;
    let (w, iterations, converged) = match p.approach {
        Approach::Symmetric => symmetric(&wh.z, p, w0),
        Approach::Deflation => deflation(&wh.z, p, w0),
    };
    Ok(wh.finish_with_sources_of(&w, (iterations, converged), data))
}

/// Symmetric FastICA from the rotation `w`: returns the rotation, iterations and convergence.
pub fn symmetric(
    z: &Observations,
    p: &FastIcaParams,
    mut w: DMatrix<f64>,
) -> (DMatrix<f64>, usize, bool) {
    for it in 1..=p.max_iter {
        let next = update(&w, z, p);
        let Some(next) = symmetric_decorrelation(&next) else {
            return (w, it, false);
        };
        let change = max_angle_change(&next, &w);
        w = next;
        if change < p.tol {
            return (w, it, true);
        }
    }
    (w, p.max_iter, false)
}

/// One fixed-point step for every row of `w`: E{z g(w^T z)} - E{g'(w^T z)} w. The logcosh
/// contrast's alpha scales the projections: tanh(alpha y) is the unit contrast of (alpha w)^T z,
/// and its derivative alpha times the unit one's.
pub fn update(w: &DMatrix<f64>, z: &Observations, p: &FastIcaParams) -> DMatrix<f64> {
    let alpha = match p.contrast {
        Contrast::Tanh => p.alpha,
        _ => 1.0,
    };
    let (gz, gp) = match alpha == 1.0 {
        true => expectations(w, z, p.contrast),
        false => expectations(&(w * alpha), z, p.contrast),
    };
    let mut next = gz;
    for i in 0..w.nrows() {
        for j in 0..w.ncols() {
            next[(i, j)] -= alpha * gp[i] * w[(i, j)];
        }
    }
    next
}

/// max_i | 1 - |<w_i, v_i>| |: the thesis's convergence measure (rows are unit vectors).
pub fn max_angle_change(w: &DMatrix<f64>, previous: &DMatrix<f64>) -> f64 {
    (0..w.nrows())
        .map(|i| (1.0 - w.row(i).dot(&previous.row(i)).abs()).abs())
        .fold(0.0, f64::max)
}

/// Deflation FastICA: one unit vector at a time, Gram-Schmidt against those found. Row i of
/// `w0` starts component i.
pub fn deflation(
    z: &Observations,
    p: &FastIcaParams,
    w0: DMatrix<f64>,
) -> (DMatrix<f64>, usize, bool) {
    let r = z.rows;
    let mut w = DMatrix::<f64>::zeros(r, r);
    let mut most = 0;
    let mut all_converged = true;
    for c in 0..r {
        let mut v = orthonormal_to(&w, c, w0.row(c).transpose());
        let mut converged = false;
        let mut it = 0;
        while it < p.max_iter {
            it += 1;
            let next = update(&DMatrix::from_row_slice(1, r, v.as_slice()), z, p)
                .row(0)
                .transpose();
            let next = orthonormal_to(&w, c, next);
            let change = (1.0 - next.dot(&v).abs()).abs();
            v = next;
            if change < p.tol {
                converged = true;
                break;
            }
        }
        most = most.max(it);
        all_converged &= converged;
        w.row_mut(c).copy_from(&v.transpose());
    }
    (w, most, all_converged)
}

/// `v` minus its projections on the first `found` rows of `w`, normalized (a fresh unit
/// direction orthogonal to them if nothing is left).
fn orthonormal_to(
    w: &DMatrix<f64>,
    found: usize,
    mut v: nalgebra::DVector<f64>,
) -> nalgebra::DVector<f64> {
    for k in 0..found {
        let wk = w.row(k).transpose();
        v -= &wk * wk.dot(&v);
    }
    let norm = v.norm();
    if norm > 1e-12 {
        return v / norm;
    }
    let mut e = nalgebra::DVector::zeros(v.len());
    for i in 0..v.len() {
        e.fill(0.0);
        e[i] = 1.0;
        let mut u = e.clone();
        for k in 0..found {
            let wk = w.row(k).transpose();
            u -= &wk * wk.dot(&u);
        }
        if u.norm() > 0.5 {
            return u.normalize();
        }
    }
    e
}

/// E{g(W z) z^T} (m x r) and E{g'(W z)} (m) over the samples of `z`.
pub fn expectations(
    w: &DMatrix<f64>,
    z: &Observations,
    contrast: Contrast,
) -> (DMatrix<f64>, Vec<f64>) {
    let (m, r, t) = (w.nrows(), z.rows, z.cols);
    assert_eq!(w.ncols(), r, "unmixing width");
    let wf: Vec<f32> = w.transpose().as_slice().iter().map(|&v| v as f32).collect();
    let blocks = super::column_blocks(t, BLOCK);
    let (gz, gp) = blocks
        .par_iter()
        .map(|&(c0, len)| {
            let mut gz = vec![0.0f32; m * r];
            // The block's W z lives in a buffer each worker thread keeps: a fresh one per
            // iteration cost more in page faults than the products.
            SCRATCH.with_borrow_mut(|y| {
                y.resize(m * len, 0.0);
                // SAFETY: `y` is m x len, this task's own.
                unsafe { super::sgemm_columns(&wf, m, z, (c0, len), y.as_mut_ptr(), len) };
                let gp: Vec<f64> = y
                    .chunks_exact_mut(len)
                    .map(|row| nonlinearity(contrast, row))
                    .collect();
                // SAFETY: `y` is m x len; the block of z read transposed is len x r (element
                // (l, j) at j * t + c0 + l); `gz` is m x r.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        len,
                        r,
                        1.0,
                        y.as_ptr(),
                        len as isize,
                        1,
                        z.data.as_ptr().add(c0),
                        1,
                        t as isize,
                        0.0,
                        gz.as_mut_ptr(),
                        r as isize,
                        1,
                    );
                }
                (gz, gp)
            })
        })
        .reduce(
            || (vec![0.0f32; m * r], vec![0.0f64; m]),
            |(mut a, mut ap), (b, bp)| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                ap.iter_mut().zip(&bp).for_each(|(x, y)| *x += y);
                (a, ap)
            },
        );
    let inv_t = 1.0 / t as f64;
    (
        DMatrix::from_row_slice(m, r, &gz).map(|v| v as f64 * inv_t),
        gp.into_iter().map(|v| v * inv_t).collect(),
    )
}

/// Replaces `y` by g(y) and returns the sum of g'(y): with AVX2 and FMA where the processor
/// has them (8 lanes instead of the x86-64 baseline's 4; the contrast was a quarter of a
/// pipeline run).
fn nonlinearity(contrast: Contrast, y: &mut [f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: both features were just detected on this processor.
        return unsafe { nonlinearity_avx2(contrast, y) };
    }
    nonlinearity_portable(contrast, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn nonlinearity_avx2(contrast: Contrast, y: &mut [f32]) -> f64 {
    nonlinearity_portable(contrast, y)
}

#[inline(always)]
fn nonlinearity_portable(contrast: Contrast, y: &mut [f32]) -> f64 {
    match contrast {
        Contrast::Tanh => apply(y, |v| {
            let g = 1.0 - 2.0 / (exp(2.0 * v) + 1.0);
            (g, 1.0 - g * g)
        }),
        Contrast::Cube => apply(y, |v| (v * v * v, 3.0 * v * v)),
        Contrast::Gauss => apply(y, |v| {
            let e = exp(-0.5 * v * v);
            (v * e, (1.0 - v * v) * e)
        }),
    }
}

/// `y` replaced by the first of `f(y)`, the second summed. Eight independent partial sums let
/// the compiler vectorize the loop (one running float sum would pin its order).
#[inline(always)]
fn apply(y: &mut [f32], f: impl Fn(f32) -> (f32, f32)) -> f64 {
    let mut acc = [0.0f32; 8];
    let mut chunks = y.chunks_exact_mut(8);
    for c in &mut chunks {
        for (v, a) in c.iter_mut().zip(acc.iter_mut()) {
            let (g, gp) = f(*v);
            *v = g;
            *a += gp;
        }
    }
    let mut sum: f64 = acc.iter().map(|&a| a as f64).sum();
    for v in chunks.into_remainder() {
        let (g, gp) = f(*v);
        *v = g;
        sum += gp as f64;
    }
    sum
}

/// e^x in f32: 1e-6 relative for |x| < 8, 1e-5 out to |x| = 80 (the f32 rounding of x log2 e),
/// branch-free so the loops above vectorize (the C library's expf and tanhf are calls, and
/// dominated the iteration).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // Round to nearest by adding 1.5 * 2^23, which leaves the integer in the low mantissa
    // bits: `round`, `floor` and the saturating `as i32` are calls or fix-ups on the x86-64
    // baseline and would stop the loops from vectorizing.
    const MAGIC: f32 = 12_582_912.0;
    let t = x.clamp(-87.0, 88.0) * std::f32::consts::LOG2_E;
    let shifted = t + MAGIC;
    let i = shifted - MAGIC;
    let n = (shifted.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let f = (t - i) * std::f32::consts::LN_2; // |f| <= ln2 / 2
    let p = 1.0
        + f * (1.0
            + f * (0.5
                + f * (1.0 / 6.0 + f * (1.0 / 24.0 + f * (1.0 / 120.0 + f * (1.0 / 720.0))))));
    f32::from_bits((n.wrapping_add(127) as u32) << 23) * p
}

#[cfg(test)]
mod tests {
    #[test]
    fn fast_exp_is_accurate() {
        for k in -8000..8000 {
            let x = k as f32 * 0.01;
            let want = (x as f64).exp();
            let got = super::exp(x) as f64;
            let tol = if x.abs() < 8.0 { 1e-6 } else { 1e-5 };
            assert!(
                ((got - want) / want).abs() < tol,
                "exp({x}) = {got}, want {want}"
            );
        }
    }
}
