//! FastICA written out plainly in f64 (loops, the C library's tanh and exp), from the same
//! whitening and starting rotation as the fast version: the yardstick of the tests.

use nalgebra::{DMatrix, DVector};

use super::{Approach, Contrast, FastIcaParams, Observations, symmetric_decorrelation};

fn g(c: Contrast, alpha: f64, y: f64) -> (f64, f64) {
    match c {
        Contrast::Tanh => {
            let t = (alpha * y).tanh();
            (t, alpha * (1.0 - t * t))
        }
        Contrast::Cube => (y * y * y, 3.0 * y * y),
        Contrast::Gauss => {
            let e = (-0.5 * y * y).exp();
            (y * e, (1.0 - y * y) * e)
        }
    }
}

/// w+ = E{z g(w^T z)} - E{g'(w^T z)} w for one unit vector.
fn step(z: &Observations, (c, alpha): (Contrast, f64), w: &DVector<f64>) -> DVector<f64> {
    let (r, t) = (z.rows, z.cols);
    let mut out = DVector::zeros(r);
    let mut gp_sum = 0.0;
    for s in 0..t {
        let y: f64 = (0..r).map(|i| w[i] * z.data[i * t + s] as f64).sum();
        let (gy, gp) = g(c, alpha, y);
        gp_sum += gp;
        for i in 0..r {
            out[i] += z.data[i * t + s] as f64 * gy;
        }
    }
    out / t as f64 - w * (gp_sum / t as f64)
}

/// FastICA on whitened `z` from rotation `w0`: (rotation, iterations, converged).
pub fn fastica_whitened(
    z: &Observations,
    p: &FastIcaParams,
    w0: &DMatrix<f64>,
) -> (DMatrix<f64>, usize, bool) {
    let r = z.rows;
    match p.approach {
        Approach::Symmetric => {
            let mut w = w0.clone();
            for it in 1..=p.max_iter {
                let mut next = DMatrix::zeros(r, r);
                for i in 0..r {
                    let row = step(z, (p.contrast, p.alpha), &w.row(i).transpose());
                    next.row_mut(i).copy_from(&row.transpose());
                }
                let next = symmetric_decorrelation(&next).expect("decorrelation");
                let change = (0..r)
                    .map(|i| (1.0 - next.row(i).dot(&w.row(i)).abs()).abs())
                    .fold(0.0, f64::max);
                w = next;
                if change < p.tol {
                    return (w, it, true);
                }
            }
            (w, p.max_iter, false)
        }
        Approach::Deflation => {
            let mut w = DMatrix::<f64>::zeros(r, r);
            let (mut most, mut all) = (0, true);
            for c in 0..r {
                let project = |mut v: DVector<f64>, w: &DMatrix<f64>| {
                    for k in 0..c {
                        let wk = w.row(k).transpose();
                        v -= &wk * wk.dot(&v);
                    }
                    v.normalize()
                };
                let mut v = project(w0.row(c).transpose(), &w);
                let mut done = false;
                let mut it = 0;
                while it < p.max_iter && !done {
                    it += 1;
                    let next = project(step(z, (p.contrast, p.alpha), &v), &w);
                    done = (1.0 - next.dot(&v).abs()).abs() < p.tol;
                    v = next;
                }
                most = most.max(it);
                all &= done;
                w.row_mut(c).copy_from(&v.transpose());
            }
            (w, most, all)
        }
    }
}
