//! The discrete wavelet transform blink detection uses: Daubechies-4 (8 taps), periodized
//! (pywt's "periodization" mode) after a symmetric extension of the signal, so that a window's
//! ends do not wrap into each other. `band` keeps the detail levels whose centre frequency
//! (0.75 fs / 2^j for level j, band fs/2^(j+1) .. fs/2^j) lies in a range and reconstructs
//! their sum: a band-pass that follows a blink's 1-8 Hz shape without ringing far from it.

/// The Daubechies-4 scaling filter h (pywt's db4 rec_lo); the wavelet filter is
/// g[n] = (-1)^n h[7 - n].
const H: [f64; 8] = [
    0.230_377_813_308_855_23,
    0.714_846_570_552_541_5,
    0.630_880_767_929_590_4,
    -0.027_983_769_416_983_85,
    -0.187_034_811_718_881_14,
    0.030_841_381_835_986_965,
    0.032_883_011_666_982_945,
    -0.010_597_401_784_997_278,
];

fn g(n: usize) -> f64 {
    let h = H[7 - n];
    if n.is_multiple_of(2) { h } else { -h }
}

/// One level: approximation and detail of a periodic signal of even length.
fn analyze(x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = x.len();
    let half = n / 2;
    let mut a = vec![0.0; half];
    let mut d = vec![0.0; half];
    let gs: [f64; 8] = std::array::from_fn(g);
    for k in 0..half {
        let (mut sa, mut sd) = (0.0, 0.0);
        if 2 * k + 8 <= n {
            // Away from the wrap: no index arithmetic in the inner loop.
            let w = &x[2 * k..2 * k + 8];
            for t in 0..8 {
                sa += H[t] * w[t];
                sd += gs[t] * w[t];
            }
        } else {
            for t in 0..8 {
                let v = x[(2 * k + t) % n];
                sa += H[t] * v;
                sd += gs[t] * v;
            }
        }
        a[k] = sa;
        d[k] = sd;
    }
    (a, d)
}

/// The inverse of `analyze`.
fn synthesize(a: &[f64], d: &[f64]) -> Vec<f64> {
    let n = 2 * a.len();
    let gs: [f64; 8] = std::array::from_fn(g);
    let mut x = vec![0.0; n];
    for k in 0..a.len() {
        let (ak, dk) = (a[k], d[k]);
        if 2 * k + 8 <= n {
            let w = &mut x[2 * k..2 * k + 8];
            for t in 0..8 {
                w[t] += H[t] * ak + gs[t] * dk;
            }
        } else {
            for t in 0..8 {
                x[(2 * k + t) % n] += H[t] * ak + gs[t] * dk;
            }
        }
    }
    x
}

/// Multilevel decomposition of `x` (length a multiple of 2^levels): details of levels
/// 1..=levels (finest first) and the last approximation.
pub fn wavedec(x: &[f64], levels: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut details = Vec::with_capacity(levels);
    let mut a = x.to_vec();
    for _ in 0..levels {
        let (next, d) = analyze(&a);
        details.push(d);
        a = next;
    }
    (details, a)
}

/// Reconstruction from `wavedec`'s output.
pub fn waverec(details: &[Vec<f64>], approximation: &[f64]) -> Vec<f64> {
    let mut a = approximation.to_vec();
    for d in details.iter().rev() {
        a = synthesize(&a, d);
    }
    a
}

/// The levels whose centre frequency lies in `lo..=hi` Hz at `fs`.
pub fn levels_in_band(fs: f64, (lo, hi): (f64, f64)) -> Vec<usize> {
    (1..=20)
        .filter(|&j| {
            let centre = 0.75 * fs / (1u64 << j) as f64;
            centre >= lo && centre <= hi
        })
        .collect()
}

/// `x` band-passed to the detail levels `levels` (see `levels_in_band`).
pub fn band(x: &[f32], levels: &[usize]) -> Vec<f32> {
    let n = x.len();
    let Some(&depth) = levels.iter().max() else {
        return vec![0.0; n];
    };
    if n < 2 {
        return vec![0.0; n];
    }
    // Symmetric extension by up to the deepest wavelet's support on each side, then up to a
    // multiple of 2^depth.
    let block = 1usize << depth;
    let margin = (7 * block).min(n - 1);
    let len = (n + 2 * margin).div_ceil(block) * block;
    let reflect = |i: isize| -> f64 {
        let period = 2 * n as isize - 2;
        let mut k = i.rem_euclid(period.max(1));
        if k >= n as isize {
            k = period - k;
        }
        x[k as usize] as f64
    };
    let ext: Vec<f64> = (0..len)
        .map(|i| reflect(i as isize - margin as isize))
        .collect();
    let (mut details, approx) = wavedec(&ext, depth);
    for (j, d) in details.iter_mut().enumerate() {
        if !levels.contains(&(j + 1)) {
            d.fill(0.0);
        }
    }
    let y = waverec(&details, &vec![0.0; approx.len()]);
    y[margin..margin + n].iter().map(|&v| v as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconstruction_is_perfect_and_energy_kept() {
        let x: Vec<f64> = (0..256)
            .map(|i| ((i * 37 % 101) as f64).sin() + i as f64 * 0.01)
            .collect();
        let (d, a) = wavedec(&x, 5);
        let energy: f64 = d.iter().flatten().chain(&a).map(|v| v * v).sum();
        let want: f64 = x.iter().map(|v| v * v).sum();
        assert!((energy - want).abs() < 1e-9 * want);
        let y = waverec(&d, &a);
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 1e-10));
    }

    #[test]
    fn band_keeps_its_frequencies_and_drops_others() {
        let fs = 128.0;
        let levels = levels_in_band(fs, (1.0, 8.0));
        assert_eq!(levels, vec![4, 5, 6]);
        let tone = |f: f64| -> Vec<f32> {
            (0..1280)
                .map(|i| (std::f64::consts::TAU * f * i as f64 / fs).sin() as f32)
                .collect()
        };
        let rms = |x: &[f32]| (x[200..1080].iter().map(|v| v * v).sum::<f32>() / 880.0).sqrt();
        assert!(rms(&band(&tone(3.0), &levels)) > 0.6);
        assert!(rms(&band(&tone(40.0), &levels)) < 0.05);
        assert!(rms(&band(&tone(0.1), &levels)) < 0.05);
    }
}
