//! Block sums of a band-limited row from every D-th of its samples: how the GPU's band power
//! (gpu::cwt) avoids computing |W|^2 at every sample of the narrow scales.
//!
//! Let V be a row of M samples (periodic) whose spectrum F_k = sum_t V(t) e^(-2 pi i k t / M)
//! is zero for |k| >= P / 2, P a power of two dividing M, D = M / P. The decimated samples
//! g(n) = V(n D), n < P, have the P-point spectrum G_q = (P / M) F_q for |q| < P / 2 (nothing
//! aliases), so V is known from them, and the sum of V over samples a .. a + len (mod M) is
//!
//!   sum_{u < len} V(a + u) = (1 / M) sum_{|q| < P/2} F_q sum_u e^(2 pi i q (a + u) / M)
//!                          = sum_{n < P} g(n) kappa((a - n D) mod M),
//!   kappa(tau) = (1 / P) sum_{u < len} Dir(tau + u),  Dir(x) = sum_{|q| < P/2} e^(2 pi i q x / M)
//!              = sin(pi (P - 1) x / M) / sin(pi x / M)  (P - 1 at x = 0 mod M).
//!
//! kappa is real (the q range is symmetric) and the same for every row and block of one
//! (M, P, len): a table of M values. For |W|^2 of a wavelet row whose spectrum lies within L
//! bins, F lies within |k| < L: P >= 2 L is enough, and the block sums are exact, not an
//! approximation, whatever the block's length or position.

/// kappa(tau) for tau = 0..M (see the module's comment), one table for each of `lens`: block
/// sums of `len` samples of a row of `m` samples from its `p` decimated samples.
pub fn block_kernels(m: usize, p: usize, lens: &[usize]) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    assert!(
        p.is_power_of_two() && m.is_power_of_two() && p <= m && lens.iter().all(|&l| l <= m),
        "P and M powers of two, P <= M, len <= M"
    );
    let (mf, pf) = (m as f64, p as f64);
    let dir: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|x| {
            if x == 0 {
                return (pf - 1.0) / pf;
            }
            let a = std::f64::consts::PI * x as f64 / mf;
            ((pf - 1.0) * a).sin() / a.sin() / pf
        })
        .collect();
    block_sums_of(&dir, lens)
}

/// For each of `lens`, the sums of `len` consecutive values of the periodic `t` from every
/// offset tau: sum_{u < len} t((tau + u) mod M), from its prefix sums.
fn block_sums_of(t: &[f64], lens: &[usize]) -> Vec<Vec<f64>> {
    let m = t.len();
    // prefix[x] = sum of t[y] for y < x; a block wraps around the row's end.
    let mut prefix = Vec::with_capacity(m + 1);
    let mut sum = 0.0;
    prefix.push(0.0);
    for &v in t {
        sum += v;
        prefix.push(sum);
    }
    let table = |len: usize| {
        (0..m)
            .map(|tau| match tau + len {
                end if end <= m => prefix[end] - prefix[tau],
                end => prefix[m] - prefix[tau] + prefix[end - m],
            })
            .collect()
    };
    lens.iter().map(|&len| table(len)).collect()
}

/// Weights below this share of the largest are left out of `smooth_block_kernels`' windows.
const SMOOTH_CUT: f64 = 1e-13;

/// As `block_kernels`, for rows whose |W|^2 lies within |k| < `l` (l <= P / 2): the bins
/// l..P/2 hold nothing, so the weights' spectrum may take any values there, and one that falls
/// from 1 to 0 across them as an erfc does (instead of the step at P/2) gives weights that decay
/// like a Gaussian away from the block, not like 1/distance. The sums stay exact; only weights
/// below 1e-13 of the largest are left out. Returns the tables and their reach X: a block of
/// samples a..a + len needs only n D in a - X ..= a + len + X.
pub fn smooth_block_kernels(
    m: usize,
    p: usize,
    l: usize,
    lens: &[usize],
) -> (Vec<Vec<f64>>, usize) {
    use rustfft::FftPlanner;
    use rustfft::num_complex::Complex64;
    assert!(
        p.is_power_of_two() && m.is_power_of_two() && p <= m && 0 < l && l <= p / 2,
        "P and M powers of two, P <= M, 0 < l <= P / 2"
    );
    // T(q) = erfc((|q| - c) / s) / 2 from about 1 at q = l - 1 to about 0 at q = P / 2.
    let (lo, hi) = ((l - 1) as f64, (p / 2) as f64);
    let c = (lo + hi) / 2.0;
    let s = ((hi - lo) / 2.0 / 5.3).max(1e-9);
    let taper = |q: usize| 0.5 * libm::erfc((q as f64 - c) / s);
    let mut spectrum = vec![Complex64::new(0.0, 0.0); m];
    for q in 0..p / 2 {
        let v = if q < l { 1.0 } else { taper(q) } / p as f64;
        spectrum[q] = Complex64::new(v, 0.0);
        if q > 0 {
            spectrum[m - q] = Complex64::new(v, 0.0);
        }
    }
    FftPlanner::new().plan_fft_inverse(m).process(&mut spectrum);
    let t: Vec<f64> = spectrum.iter().map(|v| v.re).collect();
    let top = t.iter().fold(0f64, |a, &v| a.max(v.abs()));
    // t is even: its reach is the last x <= M / 2 where it is not negligible.
    let reach = (0..=m / 2)
        .rev()
        .find(|&x| t[x].abs() > SMOOTH_CUT * top)
        .unwrap_or(0);
    let tables = block_sums_of(&t, lens);
    (tables, reach)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustfft::num_complex::Complex64;

    /// |W|^2 of a random spectrum on `band`, at every sample of a row of `m`.
    fn power_row(m: usize, band: std::ops::Range<usize>, seed: u64) -> Vec<f64> {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let spectrum: Vec<(usize, Complex64)> =
            band.map(|k| (k, Complex64::new(next(), next()))).collect();
        (0..m)
            .map(|t| {
                let w: Complex64 = spectrum
                    .iter()
                    .map(|&(k, x)| {
                        let a = 2.0 * std::f64::consts::PI * (k * t) as f64 / m as f64;
                        x * Complex64::new(a.cos(), a.sin())
                    })
                    .sum();
                w.norm_sqr()
            })
            .collect()
    }

    #[test]
    fn block_sums_from_decimated_samples_equal_the_sums_of_every_sample() {
        let m = 512;
        // A band of 30 bins: |W|^2 lies within |k| < 30, so P = 64 (D = 8) is enough.
        for (band, p) in [(7..37, 64), (1..31, 64), (200..230, 128), (1..250, 512)] {
            let v = power_row(m, band.clone(), band.start as u64);
            let d = m / p;
            let lens = [1, 7, 64, 100, 333];
            for (len, kappa) in lens.into_iter().zip(block_kernels(m, p, &lens)) {
                for a in [0, 3, 101, 480] {
                    let want: f64 = (a..a + len).map(|t| v[t % m]).sum();
                    let got: f64 = (0..p).map(|n| v[n * d] * kappa[(a + m - n * d) % m]).sum();
                    let scale = v.iter().sum::<f64>() / m as f64 * len as f64;
                    assert!(
                        (got - want).abs() <= 1e-9 * scale,
                        "band {band:?}, P {p}, len {len}, a {a}: {got} against {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn smooth_weights_over_their_reach_give_the_same_sums() {
        // Bands of 30 bins (|W|^2 within 30): P = 64 leaves no room above 2 L (the weights
        // reach the whole row), P = 512 much.
        for (m, band, p) in [(1024, 7..37, 64), (4096, 1..31, 512), (4096, 200..230, 128)] {
            let l = band.len();
            let v = power_row(m, band.clone(), band.start as u64 + 3);
            let d = m / p;
            let lens = [1, 7, 64, 100, 333];
            let (tables, reach) = smooth_block_kernels(m, p, l, &lens);
            if p == 512 {
                assert!(reach < m / 8, "P {p}: reach {reach}");
            }
            for (len, kappa) in lens.into_iter().zip(&tables) {
                for a in [0, 3, 101, 1000] {
                    let want: f64 = (a..a + len).map(|t| v[t % m]).sum();
                    // Only the samples within reach.
                    let first = (a as i64 - reach as i64).div_euclid(d as i64);
                    let last = ((a + len + reach) as i64 / d as i64).min(first + p as i64 - 1);
                    let got: f64 = (first..=last)
                        .map(|n| {
                            let n = n.rem_euclid(p as i64) as usize;
                            v[n * d] * kappa[(a + m - n * d) % m]
                        })
                        .sum();
                    let scale = v.iter().sum::<f64>() / m as f64 * len as f64;
                    assert!(
                        (got - want).abs() <= 1e-9 * scale,
                        "band {band:?}, P {p}, len {len}, a {a}: {got} against {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn too_few_decimated_samples_are_not_enough() {
        // The same band with P = 32 < 2 L: |W|^2 aliases and the sums are wrong, so the test
        // above can fail.
        let m = 512;
        let v = power_row(m, 7..37, 7);
        let (p, len, a) = (32, 100, 3);
        let kappa = &block_kernels(m, p, &[len])[0];
        let want: f64 = (a..a + len).map(|t| v[t % m]).sum();
        let got: f64 = (0..p)
            .map(|n| v[n * 16] * kappa[(a + m - n * 16) % m])
            .sum();
        assert!((got - want).abs() > 1e-3 * want, "{got} against {want}");
    }
}
