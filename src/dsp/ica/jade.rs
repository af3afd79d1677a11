//! JADE (Cardoso & Souloumiac 1993; Cardoso's jadeR): the m(m+1)/2 fourth-order cumulant
//! matrices Q_ij[k,l] = E{z_i z_j z_k z_l} - d_ij d_kl - d_ik d_jl - d_il d_jk of the whitened
//! data (times sqrt 2 for i != j), jointly diagonalized by Jacobi rotations until no rotation
//! angle exceeds 1e-6 / sqrt(T). The moments come from one matrix product, P P^T / T, where
//! the rows of P are the pairwise products z_i z_j: the same numbers as jadeR's per-pair
//! products in a fraction of the passes over the data.

use nalgebra::DMatrix;

use super::{Ica, IcaError, Observations, Whitening, sgemm_rows};

/// Joint diagonalization gives up after this many sweeps (it needs about 10 on EEG).
pub const MAX_SWEEPS: usize = 100;

/// JADE of `x` on at most `components` leading principal components (`None`: all).
pub fn jade(x: &Observations, components: Option<usize>) -> Result<Ica, IcaError> {
    let wh = Whitening::of(x, components)?;
    let (v, sweeps, converged) =
        joint_diagonalization(&cumulant_matrices(&wh.z), wh.z.rows, wh.z.cols);
    Ok(wh.finish(&v.transpose(), sweeps, converged))
}

/// The cumulant matrices, each m x m row-major, one after another.
pub fn cumulant_matrices(z: &Observations) -> Vec<f64> {
    let (m, t) = (z.rows, z.cols);
    let pairs: Vec<(usize, usize)> = (0..m).flat_map(|i| (i..m).map(move |j| (i, j))).collect();
    let np = pairs.len();
    let mut p = vec![0.0f32; np * t];
    for (row, &(i, j)) in p.chunks_exact_mut(t).zip(&pairs) {
        for ((o, a), b) in row.iter_mut().zip(z.row(i)).zip(z.row(j)) {
            *o = a * b;
        }
    }
    let pt: Vec<f32> = {
        let mut pt = vec![0.0f32; t * np];
        for (r, row) in p.chunks_exact(t).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                pt[c * np + r] = v;
            }
        }
        pt
    };
    let mut moments = vec![0.0f32; np * np];
    sgemm_rows(np, t, np, &p, &pt, &mut moments);
    let index = |a: usize, b: usize| {
        let (a, b) = (a.min(b), a.max(b));
        pairs.partition_point(|&q| q < (a, b))
    };
    let delta = |a: usize, b: usize| if a == b { 1.0 } else { 0.0 };
    let mut cm = vec![0.0f64; np * m * m];
    for (q, &(i, j)) in pairs.iter().enumerate() {
        let scale = if i == j {
            1.0
        } else {
            std::f64::consts::SQRT_2
        };
        for k in 0..m {
            for l in 0..m {
                let moment = moments[q * np + index(k, l)] as f64 / t as f64;
                let c = moment
                    - delta(i, j) * delta(k, l)
                    - delta(i, k) * delta(j, l)
                    - delta(i, l) * delta(j, k);
                cm[(q * m + k) * m + l] = scale * c;
            }
        }
    }
    cm
}

/// Jacobi rotations V (m x m) that jointly diagonalize the matrices; sweeps and convergence.
pub fn joint_diagonalization(cm: &[f64], m: usize, t: usize) -> (DMatrix<f64>, usize, bool) {
    let mut cm = cm.to_vec();
    let count = cm.len() / (m * m);
    let mut v = DMatrix::<f64>::identity(m, m);
    let threshold = 1e-6 / (t as f64).sqrt();
    for sweep in 1..=MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..m.saturating_sub(1) {
            for q in p + 1..m {
                let (mut g11, mut g12, mut g22) = (0.0, 0.0, 0.0);
                for k in 0..count {
                    let at = |a: usize, b: usize| cm[(k * m + a) * m + b];
                    let d = at(p, p) - at(q, q);
                    let o = at(p, q) + at(q, p);
                    g11 += d * d;
                    g12 += d * o;
                    g22 += o * o;
                }
                let (ton, toff) = (g11 - g22, 2.0 * g12);
                let theta = 0.5 * toff.atan2(ton + (ton * ton + toff * toff).sqrt());
                if theta.abs() <= threshold {
                    continue;
                }
                rotated = true;
                let (c, s) = (theta.cos(), theta.sin());
                for r in 0..m {
                    let (a, b) = (v[(r, p)], v[(r, q)]);
                    v[(r, p)] = c * a + s * b;
                    v[(r, q)] = -s * a + c * b;
                }
                for k in 0..count {
                    let mat = &mut cm[k * m * m..(k + 1) * m * m];
                    for col in 0..m {
                        let (a, b) = (mat[p * m + col], mat[q * m + col]);
                        mat[p * m + col] = c * a + s * b;
                        mat[q * m + col] = -s * a + c * b;
                    }
                    for row in 0..m {
                        let (a, b) = (mat[row * m + p], mat[row * m + q]);
                        mat[row * m + p] = c * a + s * b;
                        mat[row * m + q] = -s * a + c * b;
                    }
                }
            }
        }
        if !rotated {
            return (v, sweep, true);
        }
    }
    (v, MAX_SWEEPS, false)
}
