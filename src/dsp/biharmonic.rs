//! Biharmonic spline interpolation of scattered 2-D points (Sandwell 1987, "Biharmonic spline
//! interpolation of GEOS-3 and SEASAT altimeter data"), as MATLAB's `griddata(..., 'v4')`
//! computes it: the surface sum_j w_j g(|x - x_j|) with Green's function g(d) = d^2 (ln d - 1),
//! through every point. ICLabel's scalp images are made this way.

use nalgebra::{DMatrix, DVector, linalg::LU};

/// The spline's points, factorised once: any number of value sets interpolate through them.
pub struct Biharmonic {
    points: Vec<(f64, f64)>,
    /// For each input point, the merged point it belongs to (coincident points are averaged).
    merged: Vec<usize>,
    counts: Vec<usize>,
    lu: LU<f64, nalgebra::Dyn, nalgebra::Dyn>,
}

fn green(d: f64) -> f64 {
    // g(0) = 0: the limit, and MATLAB's fixup of the diagonal.
    if d.abs() <= 1e-8 {
        0.0
    } else {
        d * d * (d.ln() - 1.0)
    }
}

impl Biharmonic {
    /// Points closer than `eps` in both coordinates count as one (MATLAB's `mergepoints2D`
    /// tolerance: the cube root of the spacing of half the span). `None` when the points
    /// do not determine a spline (fewer than one, or a singular system).
    pub fn new(xy: &[(f64, f64)]) -> Option<Biharmonic> {
        if xy.is_empty() {
            return None;
        }
        let span = |f: fn(&(f64, f64)) -> f64| {
            let (lo, hi) = xy
                .iter()
                .map(f)
                .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
            spacing(0.5 * (hi - lo)).cbrt()
        };
        let (ex, ey) = (span(|p| p.0), span(|p| p.1));
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut counts = Vec::new();
        let merged: Vec<usize> = (xy.iter())
            .map(|&(x, y)| {
                let same = |p: &(f64, f64)| (p.0 - x).abs() < ex && (p.1 - y).abs() < ey;
                match points.iter().position(same) {
                    Some(k) => {
                        counts[k] += 1;
                        k
                    }
                    None => {
                        points.push((x, y));
                        counts.push(1);
                        points.len() - 1
                    }
                }
            })
            .collect();
        let n = points.len();
        let g = DMatrix::from_fn(n, n, |i, j| {
            green(((points[i].0 - points[j].0).hypot(points[i].1 - points[j].1)).abs())
        });
        let lu = g.lu();
        if !lu.is_invertible() {
            return None;
        }
        Some(Biharmonic {
            points,
            merged,
            counts,
            lu,
        })
    }

    /// The spline's weights through `values` (one per input point).
    pub fn weights(&self, values: &[f64]) -> DVector<f64> {
        let mut v = DVector::zeros(self.points.len());
        for (&k, &value) in self.merged.iter().zip(values) {
            v[k] += value / self.counts[k] as f64;
        }
        self.lu.solve(&v).unwrap_or(v)
    }

    /// The spline with `weights` at (x, y).
    pub fn at(&self, weights: &DVector<f64>, x: f64, y: f64) -> f64 {
        (self.points.iter().zip(weights.iter()))
            .map(|(p, w)| green((x - p.0).hypot(y - p.1)) * w)
            .sum()
    }
}

/// numpy's `spacing`: the distance from |x| to the next larger double.
fn spacing(x: f64) -> f64 {
    let x = x.abs();
    f64::from_bits(x.to_bits() + 1) - x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_through_its_points_and_merges_coincident_ones() {
        let pts = [(0.0, 0.0), (1.0, 0.2), (0.3, 0.9), (-0.5, 0.4), (0.2, -0.7)];
        let values = [1.0, -2.0, 0.5, 3.0, -1.0];
        let s = Biharmonic::new(&pts).unwrap();
        let w = s.weights(&values);
        for (p, v) in pts.iter().zip(values) {
            assert!((s.at(&w, p.0, p.1) - v).abs() < 1e-10);
        }
        // A repeated point is one point with the mean of its values.
        let mut twice = pts.to_vec();
        twice.push((1.0, 0.2));
        let s2 = Biharmonic::new(&twice).unwrap();
        let w2 = s2.weights(&[1.0, -2.0, 0.5, 3.0, -1.0, 0.0]);
        assert!((s2.at(&w2, 1.0, 0.2) + 1.0).abs() < 1e-10);
        assert!(Biharmonic::new(&[]).is_none());
    }
}
