//! Spherical-spline interpolation (Perrin, Pernier, Bertrand & Echallier 1989, "Spherical
//! splines for scalp potential and current density mapping"), as MNE-Python's
//! `_make_interpolation_matrix` and EEGLAB's `eeg_interp` compute it: electrode directions on
//! the unit sphere, the Green's function g(cos) = sum_{n=1..50} (2n+1) / (n^4 (n+1)^4 4 pi)
//! P_n(cos) (MNE's 50 Legendre terms; EEGLAB stops at 7), a ridge of 1e-5 on the diagonal,
//! and a constant term. The ridge makes it smooth rather than exact at the electrodes. Every scalp map
//! and the interpolation of bad channels use it, so a map and an interpolated lane agree.

use nalgebra::DMatrix;

use crate::recording::Recording;
pub use crate::recording::electrodes::direction;
use crate::recording::electrodes::head_position;

/// The spline's stiffness (m = 4) and its Legendre terms (50), as MNE's.
const STIFFNESS: i32 = 4;
const TERMS: usize = 50;
/// The ridge on the diagonal of the system (MNE's `alpha`).
const ALPHA: f64 = 1e-5;

/// The Green's function at the cosine of the angle between two directions.
pub fn green(cos: f64) -> f64 {
    green_terms(cos, TERMS)
}

fn green_terms(cos: f64, terms: usize) -> f64 {
    // Legendre polynomials by their recurrence: P_{n+1} = ((2n+1) x P_n - n P_{n-1}) / (n+1).
    let (mut p0, mut p1) = (1.0, cos);
    let mut g = 0.0;
    for n in 1..=terms {
        let nf = n as f64;
        g += (2.0 * nf + 1.0) / ((nf * (nf + 1.0)).powi(STIFFNESS) * 4.0 * std::f64::consts::PI)
            * p1;
        let p2 = ((2.0 * nf + 1.0) * cos * p1 - nf * p0) / (nf + 1.0);
        (p0, p1) = (p1, p2);
    }
    g
}

fn dot(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A spline through fixed electrodes, solved once: `matrix` then gives the weights that take
/// the electrodes' values to any other directions.
pub struct SphericalSpline {
    from: Vec<[f64; 3]>,
    /// The first n columns of the pseudo-inverse of [[G + alpha I, 1], [1^T, 0]].
    inverse: DMatrix<f64>,
}

impl SphericalSpline {
    /// A spline through electrodes at `positions` (any radius: only directions count).
    /// `None` for fewer than three electrodes or a position at the origin.
    pub fn new(positions: &[[f64; 3]]) -> Option<Self> {
        if positions.len() < 3 {
            return None;
        }
        let from: Vec<[f64; 3]> = positions
            .iter()
            .map(|&p| direction(p))
            .collect::<Option<_>>()?;
        let n = from.len();
        let mut c = DMatrix::<f64>::zeros(n + 1, n + 1);
        for i in 0..n {
            for j in 0..n {
                c[(i, j)] = green(dot(&from[i], &from[j]));
            }
            c[(i, i)] += ALPHA;
            c[(i, n)] = 1.0;
            c[(n, i)] = 1.0;
        }
        // A pseudo-inverse, as MNE's (SciPy's cut-off: singular values below the largest
        // times n times machine epsilon), so that coincident electrodes still give weights.
        let svd = c.svd(true, true);
        let cut = svd.singular_values.max() * (n + 1) as f64 * f64::EPSILON;
        let pinv = svd.pseudo_inverse(cut).ok()?;
        let inverse = pinv.columns(0, n).into_owned();
        Some(SphericalSpline { from, inverse })
    }

    /// Electrodes the spline goes through.
    pub fn len(&self) -> usize {
        self.from.len()
    }

    pub fn is_empty(&self) -> bool {
        self.from.is_empty()
    }

    /// Weights (one row per direction of `to`, one column per electrode) whose product with
    /// the electrodes' values gives the spline's value at each of `to`. A zero vector in `to`
    /// gets the electrodes' mean.
    pub fn matrix(&self, to: &[[f64; 3]]) -> DMatrix<f64> {
        let n = self.from.len();
        let mut g = DMatrix::<f64>::zeros(to.len(), n + 1);
        for (r, p) in to.iter().enumerate() {
            let Some(d) = direction(*p) else {
                g.row_mut(r).fill(0.0);
                g[(r, n)] = 1.0;
                continue;
            };
            for (j, e) in self.from.iter().enumerate() {
                g[(r, j)] = green(dot(&d, e));
            }
            g[(r, n)] = 1.0;
        }
        g * &self.inverse
    }
}

/// Bad scalp electrodes replaced by the spline through the good ones, as MNE's
/// `interpolate_bads(origin=(0, 0, 0))` does for EEG: positions from the file, else MNE's
/// `standard_1005` template for the label.
#[derive(Debug, Clone, PartialEq)]
pub struct BadInterpolation {
    /// Per interpolated bad channel: its index and its weights over `goods`.
    pub bads: Vec<(usize, Vec<f64>)>,
    /// The good scalp electrodes (with a position, at the bad channels' rate) they come from.
    pub goods: Vec<usize>,
    /// Bad channels that stay as recorded, with the reason.
    pub left: Vec<(usize, String)>,
}

impl BadInterpolation {
    /// The weights of the bad scalp electrodes of `rec` (`SignalInfo::bad`); each needs a
    /// position and three good electrodes with one at its rate.
    pub fn of(rec: &Recording) -> BadInterpolation {
        let scalp = rec.scalp_electrodes();
        let placed = |c: usize| {
            let s = &rec.signals[c];
            head_position(&s.label, s.position).and_then(direction)
        };
        let mut out = BadInterpolation {
            bads: Vec::new(),
            goods: Vec::new(),
            left: Vec::new(),
        };
        // Rates apart, one spline per rate the bad channels have.
        let mut splines: Vec<(f64, Vec<usize>, Option<SphericalSpline>)> = Vec::new();
        for &b in scalp.iter().filter(|&&c| rec.signals[c].bad) {
            let fs = rec.signals[b].fs;
            let Some(at) = placed(b) else {
                out.left.push((b, "no electrode position".into()));
                continue;
            };
            if !splines.iter().any(|s| s.0 == fs) {
                let goods: Vec<usize> = (scalp.iter().copied())
                    .filter(|&c| !rec.signals[c].bad && rec.signals[c].fs == fs)
                    .filter(|&c| placed(c).is_some())
                    .collect();
                let pos: Vec<[f64; 3]> = goods.iter().filter_map(|&c| placed(c)).collect();
                splines.push((fs, goods, SphericalSpline::new(&pos)));
            }
            let (_, goods, spline) = splines.iter().find(|s| s.0 == fs).expect("added above");
            let Some(spline) = spline else {
                out.left.push((
                    b,
                    "fewer than three good electrodes to interpolate from".into(),
                ));
                continue;
            };
            let row = spline.matrix(&[at]);
            // Weights over the union of goods (one rate in practice).
            for &g in goods {
                if !out.goods.contains(&g) {
                    out.goods.push(g);
                }
            }
            let mut w = vec![0.0; out.goods.len()];
            for (j, &g) in goods.iter().enumerate() {
                let k = out.goods.iter().position(|&x| x == g).expect("pushed");
                w[k] = row[(0, j)];
            }
            out.bads.push((b, w));
        }
        let n = out.goods.len();
        for (_, w) in &mut out.bads {
            w.resize(n, 0.0);
        }
        out
    }

    /// The weights of bad channel `c` as (good channel, weight), if it is interpolated.
    pub fn weights_of(&self, c: usize) -> Option<impl Iterator<Item = (usize, f64)> + '_> {
        let (_, w) = self.bads.iter().find(|(b, _)| *b == c)?;
        Some(self.goods.iter().copied().zip(w.iter().copied()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Legendre polynomials written out (P1..P7), for the recurrence.
    fn green_reference(x: f64) -> f64 {
        let p = [
            x,
            (3.0 * x * x - 1.0) / 2.0,
            (5.0 * x.powi(3) - 3.0 * x) / 2.0,
            (35.0 * x.powi(4) - 30.0 * x * x + 3.0) / 8.0,
            (63.0 * x.powi(5) - 70.0 * x.powi(3) + 15.0 * x) / 8.0,
            (231.0 * x.powi(6) - 315.0 * x.powi(4) + 105.0 * x * x - 5.0) / 16.0,
            (429.0 * x.powi(7) - 693.0 * x.powi(5) + 315.0 * x.powi(3) - 35.0 * x) / 16.0,
        ];
        (1..=7)
            .map(|n| {
                let n = n as f64;
                (2.0 * n + 1.0) / (n.powi(4) * (n + 1.0).powi(4) * 4.0 * std::f64::consts::PI)
                    * p[n as usize - 1]
            })
            .sum()
    }

    #[test]
    fn green_is_the_legendre_sum() {
        for k in 0..=20 {
            let x = -1.0 + k as f64 / 10.0;
            assert!(
                (green_terms(x, 7) - green_reference(x)).abs() < 1e-15,
                "{x}"
            );
        }
        // P_n(1) = 1 and P_n(-1) = (-1)^n for every n.
        let factor =
            |n: f64| (2.0 * n + 1.0) / ((n * (n + 1.0)).powi(4) * 4.0 * std::f64::consts::PI);
        let at_one: f64 = (1..=50).map(|n| factor(n as f64)).sum();
        let at_minus: f64 = (1..=50).map(|n| factor(n as f64) * (-1f64).powi(n)).sum();
        assert!((green(1.0) - at_one).abs() < 1e-15);
        assert!((green(-1.0) - at_minus).abs() < 1e-15);
    }

    fn sphere(n: usize) -> Vec<[f64; 3]> {
        // A spiral over the upper part of the sphere, as a cap of electrodes sits.
        (0..n)
            .map(|i| {
                let z = 1.0 - 1.2 * (i as f64 + 0.5) / n as f64;
                let r = (1.0 - z * z).sqrt();
                let a = i as f64 * 2.399963;
                [r * a.cos(), r * a.sin(), z]
            })
            .collect()
    }

    #[test]
    fn the_spline_passes_through_its_electrodes_and_keeps_constants() {
        let pos = sphere(32);
        let spline = SphericalSpline::new(&pos).unwrap();
        let m = spline.matrix(&pos);
        // Near the electrodes' values (the ridge smooths) ...
        let field: Vec<f64> = pos.iter().map(|p| p[0] + 0.5 * p[1] * p[2]).collect();
        for i in 0..32 {
            let at: f64 = (0..32).map(|j| m[(i, j)] * field[j]).sum();
            assert!(
                (at - field[i]).abs() < 0.05,
                "{i}: {at} against {}",
                field[i]
            );
        }
        // ... and a constant anywhere is that constant: each row sums to one.
        let elsewhere = spline.matrix(
            &sphere(7)
                .iter()
                .map(|p| [p[1], p[0], p[2]])
                .collect::<Vec<_>>(),
        );
        for r in 0..7 {
            assert!((elsewhere.row(r).sum() - 1.0).abs() < 1e-9);
        }
        assert!(SphericalSpline::new(&pos[..2]).is_none());
        assert!(SphericalSpline::new(&[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]).is_none());
    }
}
