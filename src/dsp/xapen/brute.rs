//! The paper's Fig. 1 loop in f32: every window of v against every window of u, N^m and
//! N^{m+1} counted in the same pass. The baseline `ede bench xapen` measures the fast path
//! against; tests check it against the reference.

use super::bounds;

/// Counts of one pair of normalized series (see `reference::counts`).
pub fn counts(u: &[f32], v: &[f32], m: usize, r: f32) -> (Vec<u32>, Vec<u32>) {
    let n = u.len();
    let (lo, hi): (Vec<f32>, Vec<f32>) = u.iter().map(|&a| bounds(a, r)).unzip();
    let matches = |i: usize, j: usize| lo[i] <= v[j] && v[j] <= hi[i];
    let mut n_m = vec![0u32; n - m + 1];
    let mut n_m1 = vec![0u32; n - m];
    for i in 0..=n - m {
        for j in 0..=n - m {
            if (0..m).all(|k| matches(i + k, j + k)) {
                n_m[i] += 1;
                if i < n - m && j < n - m && matches(i + m, j + m) {
                    n_m1[i] += 1;
                }
            }
        }
    }
    (n_m, n_m1)
}
