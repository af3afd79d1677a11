//! The definition written out in f64, for tests: no tricks, separate loops for m and m+1.

use super::{Correction, XapenError, XapenParams, from_counts};

/// Population-SD normalization in f64; `None` for a flat series.
pub fn normalize(x: &[f64]) -> Option<Vec<f64>> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let sd = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    (sd > 0.0 && sd.is_finite()).then(|| x.iter().map(|v| (v - mean) / sd).collect())
}

/// N_i^m (N-m+1 entries) and N_i^{m+1} (N-m entries) of already normalized series.
pub fn counts(u: &[f64], v: &[f64], m: usize, r: f64) -> (Vec<u32>, Vec<u32>) {
    let n = u.len();
    let count = |len: usize| -> Vec<u32> {
        let windows = n - len + 1;
        (0..windows)
            .map(|i| {
                (0..windows)
                    .filter(|&j| (0..len).all(|k| (u[i + k] - v[j + k]).abs() <= r))
                    .count() as u32
            })
            .collect()
    };
    (count(m), count(m + 1))
}

/// Cross-ApEn(u||v) of raw series; `None` when either is flat.
pub fn cross_apen(
    u: &[f64],
    v: &[f64],
    m: usize,
    r: f64,
    correction: Correction,
) -> Result<Option<f64>, XapenError> {
    XapenParams {
        m,
        r: r as f32,
        correction,
    }
    .check(u.len())?;
    assert_eq!(u.len(), v.len(), "series differ in length");
    let (Some(u), Some(v)) = (normalize(u), normalize(v)) else {
        return Ok(None);
    };
    let (n_m, n_m1) = counts(&u, &v, m, r);
    Ok(Some(from_counts(&n_m, &n_m1, u.len(), m, correction)))
}
