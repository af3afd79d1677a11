//! Polyphase resampling as SciPy's `resample_poly` does it with its defaults (a Kaiser-window
//! low-pass FIR, beta 5, ten zero crossings each side; zeros beyond the ends). ICLabel's
//! autocorrelation feature is resampled this way, and matching its numbers means matching
//! SciPy's filter tap for tap.

/// `x` resampled by `up / down`: `ceil(len * up / down)` samples (after reducing the ratio).
pub fn resample_poly(x: &[f64], up: usize, down: usize) -> Vec<f64> {
    assert!(
        up >= 1 && down >= 1,
        "resample_poly: up and down must be >= 1"
    );
    let g = num_integer::gcd(up, down);
    let (up, down) = (up / g, down / g);
    if up == 1 && down == 1 {
        return x.to_vec();
    }
    let n_out = (x.len() * up).div_ceil(down);
    let max_rate = up.max(down);
    let half_len = 10 * max_rate;
    let h: Vec<f64> = (firwin_kaiser(2 * half_len + 1, 1.0 / max_rate as f64, 5.0).iter())
        .map(|v| v * up as f64)
        .collect();
    // SciPy pads the filter in front so that output samples fall on its centre.
    let pre_pad = down - half_len % down;
    let pre_remove = (half_len + pre_pad) / down;
    // upfirdn: y[k] = sum_i x[i] h_padded[k down - i up].
    (pre_remove..pre_remove + n_out)
        .map(|k| {
            let at = k * down;
            let mut sum = 0.0;
            for (i, &xi) in x.iter().enumerate() {
                let Some(j) = (at).checked_sub(i * up + pre_pad) else {
                    break;
                };
                if let Some(hj) = h.get(j) {
                    sum += xi * hj;
                }
            }
            sum
        })
        .collect()
}

/// SciPy's `firwin(numtaps, cutoff, window=('kaiser', beta))`: a low-pass of `cutoff` (a
/// fraction of Nyquist), scaled to unit gain at DC.
pub fn firwin_kaiser(taps: usize, cutoff: f64, beta: f64) -> Vec<f64> {
    let alpha = 0.5 * (taps as f64 - 1.0);
    let sinc = |x: f64| {
        if x == 0.0 {
            1.0
        } else {
            (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
        }
    };
    let mut h: Vec<f64> = (0..taps)
        .map(|n| {
            let m = n as f64 - alpha;
            let window =
                bessel_i0(beta * (1.0 - (m / alpha).powi(2)).max(0.0).sqrt()) / bessel_i0(beta);
            cutoff * sinc(cutoff * m) * window
        })
        .collect();
    let sum: f64 = h.iter().sum();
    h.iter_mut().for_each(|v| *v /= sum);
    h
}

/// The modified Bessel function of the first kind, order 0, by its power series (exact to
/// rounding for the window's arguments, |x| <= 20).
fn bessel_i0(x: f64) -> f64 {
    let q = x * x / 4.0;
    let (mut term, mut sum) = (1.0, 1.0);
    for k in 1..200 {
        term *= q / (k * k) as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SciPy 1.17.1: `resample_poly(x, up, down)` of x = cos(0.05 n) exp(-n / 60), n < 129.
    #[test]
    fn matches_scipy() {
        let x: Vec<f64> = (0..129)
            .map(|n| (n as f64 * 0.05).cos() * (-(n as f64) / 60.0).exp())
            .collect();
        let cases: [(usize, usize, usize, [f64; 5]); 3] = [
            (
                100,
                128,
                101,
                [0.89002507, 1.01311897, 0.77844813, -0.34358452, 0.10494334],
            ),
            (
                100,
                200,
                65,
                [0.74762254, 1.02981838, 0.60920455, -0.34364534, 0.08867023],
            ),
            (
                3,
                2,
                194,
                [1.00060617, 1.09075003, 0.91428668, -0.33886445, 0.0360816],
            ),
        ];
        for (up, down, len, want) in cases {
            let y = resample_poly(&x, up, down);
            assert_eq!(y.len(), len);
            for (&k, w) in [0, 1, 7, len / 2, len - 1].iter().zip(want) {
                assert!((y[k] - w).abs() < 1e-8, "{up}/{down} [{k}] {} vs {w}", y[k]);
            }
        }
        assert_eq!(resample_poly(&x, 100, 100), x);
    }
}
