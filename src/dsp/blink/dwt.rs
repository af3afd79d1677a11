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
    let (a, d) = analyze_with(x, true);
    (a, d.expect("detail"))
}

/// Buffers that the transforms reuse from level to level (and a band-pass from call to call
/// on one thread): allocating and zeroing them afresh was half of a band-pass's time.
#[derive(Default)]
struct Scratch {
    even: Vec<f64>,
    odd: Vec<f64>,
    phase: Vec<f64>,
}

/// `analyze`, the detail only when `detail` (a band-pass discards most of them).
fn analyze_with(x: &[f64], detail: bool) -> (Vec<f64>, Option<Vec<f64>>) {
    let (mut a, mut d) = (Vec::new(), detail.then(Vec::new));
    analyze_into(x, &mut a, d.as_mut(), &mut Scratch::default());
    (a, d)
}

/// `analyze_with` into `approx` and `detail`.
///
/// Written in polyphase form (even and odd samples apart) so that the loops over outputs run
/// on contiguous slices and vectorize; each output sums its eight taps in the same order as
/// the plain form (`tests::analyze_plain`), so the results are the same to the bit.
fn analyze_into(x: &[f64], approx: &mut Vec<f64>, detail: Option<&mut Vec<f64>>, s: &mut Scratch) {
    let n = x.len();
    let half = n / 2;
    let gs: [f64; 8] = std::array::from_fn(g);
    // Outputs k < inner read x[2k..2k + 8] without wrapping.
    let inner = (half + 1).saturating_sub(4);
    s.even.clear();
    s.even.extend(x.iter().step_by(2));
    s.odd.clear();
    s.odd.extend(x.iter().skip(1).step_by(2));
    let (even, odd) = (&s.even, &s.odd);
    let filter = |taps: &[f64; 8], out: &mut Vec<f64>| {
        out.clear();
        out.resize(half, 0.0);
        let acc = &mut out[..inner];
        for (t, &tap) in taps.iter().enumerate().filter(|_| inner > 0) {
            let src = if t % 2 == 0 { even } else { odd };
            let src = &src[t / 2..t / 2 + inner];
            acc.iter_mut().zip(src).for_each(|(a, &v)| *a += tap * v);
        }
        for (k, o) in out.iter_mut().enumerate().skip(inner) {
            for (t, &tap) in taps.iter().enumerate() {
                *o += tap * x[(2 * k + t) % n];
            }
        }
    };
    filter(&H, approx);
    if let Some(d) = detail {
        filter(&gs, d);
    }
}

/// The inverse of `analyze`.
fn synthesize(a: &[f64], d: &[f64]) -> Vec<f64> {
    synthesize_with(a, Some(d))
}

/// `synthesize`; `None` for a detail of zeros (skipped: its terms would add exact zeros).
fn synthesize_with(a: &[f64], d: Option<&[f64]>) -> Vec<f64> {
    let mut x = Vec::new();
    synthesize_into(a, d, &mut x, &mut Scratch::default());
    x
}

/// `synthesize_with` into `x`.
///
/// Output 2j + p (p = 0, 1) gathers tap 2i + p of coefficient j - i, i = 3, 2, 1, 0: the
/// order in which the plain form (`tests::synthesize_plain`, coefficient by coefficient)
/// adds them, so the results are the same to the bit. Outputs below 6 also gather the last
/// coefficients (the wrap), which the plain form adds after the first ones: they are summed
/// apart in that order.
fn synthesize_into(a: &[f64], d: Option<&[f64]>, x: &mut Vec<f64>, s: &mut Scratch) {
    let half = a.len();
    let n = 2 * half;
    let gs: [f64; 8] = std::array::from_fn(g);
    let term = |t: usize, k: usize| match d {
        Some(d) => H[t] * a[k] + gs[t] * d[k],
        None => H[t] * a[k],
    };
    x.clear();
    x.resize(n, 0.0);
    if half < 8 {
        for k in 0..half {
            for t in 0..8 {
                x[(2 * k + t) % n] += term(t, k);
            }
        }
        return;
    }
    for p in 0..2 {
        let out = &mut s.phase;
        out.clear();
        out.resize(half - 3, 0.0);
        for i in (0..4).rev() {
            let t = 2 * i + p;
            let (h, g) = (H[t], gs[t]);
            let from = 3 - i;
            let ak = &a[from..from + half - 3];
            match d {
                Some(d) => {
                    let dk = &d[from..from + half - 3];
                    (out.iter_mut().zip(ak).zip(dk)).for_each(|((o, &a), &d)| *o += h * a + g * d);
                }
                None => out.iter_mut().zip(ak).for_each(|(o, &a)| *o += h * a),
            }
        }
        for (j, &v) in out.iter().enumerate() {
            x[2 * (j + 3) + p] = v;
        }
    }
    for k in [0, 1, 2, half - 3, half - 2, half - 1] {
        for t in 0..8 {
            let m = (2 * k + t) % n;
            if m < 6 {
                x[m] += term(t, k);
            }
        }
    }
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

/// How `band` extends a signal of `n` samples before the transform: symmetrically by up to
/// the deepest wavelet's support on each side, then up to a multiple of 2^depth.
struct Extension {
    n: usize,
    margin: usize,
    len: usize,
}

impl Extension {
    fn new(n: usize, depth: usize) -> Self {
        let block = 1usize << depth;
        let margin = (7 * block).min(n - 1);
        Extension {
            n,
            margin,
            len: (n + 2 * margin).div_ceil(block) * block,
        }
    }

    /// The sample that position `j` of the extended signal copies.
    fn source(&self, j: usize) -> usize {
        let period = 2 * self.n as isize - 2;
        let mut k = (j as isize - self.margin as isize).rem_euclid(period.max(1));
        if k >= self.n as isize {
            k = period - k;
        }
        k as usize
    }
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
    let e = Extension::new(n, depth);
    BAND_WORK.with_borrow_mut(|w| {
        w.a.clear();
        w.a.extend((0..e.len).map(|j| x[e.source(j)] as f64));
        w.keep_levels(depth, levels);
        w.a[e.margin..e.margin + n]
            .iter()
            .map(|&v| v as f32)
            .collect()
    })
}

/// The adjoint (transpose) of `band` as a linear map of `n`-sample signals: <band(x), v> =
/// <x, band_adjoint(v)> for every x. With it, a channel's band enters a sum over samples
/// (its value at one sample, its weighted inner product with another band) through one
/// transform of the other side, not one transform per channel. The periodized transform is
/// orthogonal, so keeping levels is symmetric; what is left is the extension, whose
/// transpose adds each extended position back onto the sample it copies.
pub fn band_adjoint(v: &[f64], levels: &[usize]) -> Vec<f64> {
    let n = v.len();
    let mut out = vec![0.0; n];
    let Some(&depth) = levels.iter().max() else {
        return out;
    };
    if n < 2 {
        return out;
    }
    let e = Extension::new(n, depth);
    BAND_WORK.with_borrow_mut(|w| {
        w.a.clear();
        w.a.resize(e.len, 0.0);
        w.a[e.margin..e.margin + n].copy_from_slice(v);
        w.keep_levels(depth, levels);
        for (j, &y) in w.a.iter().enumerate() {
            out[e.source(j)] += y;
        }
    });
    out
}

/// `band_adjoint` of the unit impulse at sample `t` of `n`-sample signals, as the span where
/// it is not zero: its first sample and its values. The same numbers to the bit, from a
/// transform of `AROUND_BLOCKS` blocks of 2^depth samples around the impulse instead of the
/// whole extended signal. A detail of level j reaches 7 (2^j - 1) samples either way, so
/// nothing the impulse makes meets that stretch's ends (where its periodized transform wraps),
/// and every sum adds the same terms in the same order as the whole transform's. Next to a
/// short signal's ends, the whole transform. Blink detection takes every channel's band at
/// each candidate through one of these: over a live window of 240 s at 512 Hz with its dozens
/// of candidates, the whole transforms took 24 ms a refit.
pub fn band_adjoint_at(n: usize, t: usize, levels: &[usize]) -> (usize, Vec<f64>) {
    let nonzero = |h: &[f64], first: usize| {
        let from = h.iter().position(|&v| v != 0.0).unwrap_or(h.len());
        let to = h.iter().rposition(|&v| v != 0.0).map_or(from, |k| k + 1);
        (first + from, h[from..to].to_vec())
    };
    let whole = || {
        let mut e = vec![0.0; n];
        e[t] = 1.0;
        nonzero(&band_adjoint(&e, levels), 0)
    };
    let Some(&depth) = levels.iter().max() else {
        return whole();
    };
    if n < 2 {
        return whole();
    }
    let e = Extension::new(n, depth);
    let block = 1usize << depth;
    let p = e.margin + t;
    // The stretch starts on a block's boundary, so that every level's coefficients line up
    // with the whole transform's, 8 blocks before the one holding the impulse.
    let from = match (p / block).checked_sub(8) {
        Some(b) if (b + AROUND_BLOCKS) * block <= e.len => b * block,
        _ => return whole(),
    };
    let span = AROUND_BLOCKS * block;
    BAND_WORK.with_borrow_mut(|w| {
        w.a.clear();
        w.a.resize(span, 0.0);
        w.a[p - from] = 1.0;
        w.keep_levels(depth, levels);
        // The extension's transpose, as `band_adjoint` adds it (in the same order).
        let sources: Vec<(usize, f64)> = (w.a.iter().enumerate())
            .filter(|(_, y)| **y != 0.0)
            .map(|(j, &y)| (e.source(from + j), y))
            .collect();
        let lo = sources.iter().map(|s| s.0).min().unwrap_or(t);
        let hi = sources.iter().map(|s| s.0 + 1).max().unwrap_or(t);
        let mut out = vec![0.0; hi - lo];
        for (k, y) in sources {
            out[k - lo] += y;
        }
        nonzero(&out, lo)
    })
}

/// The blocks of 2^depth samples `band_adjoint_at` transforms: 8 before the impulse's, its own
/// and 9 after, which the 7 (2^depth - 1) samples a detail reaches either way leave clear.
const AROUND_BLOCKS: usize = 18;

/// What `band` reuses on each thread: the signal at the current level, the next level, the
/// details kept and the transforms' scratch.
#[derive(Default)]
struct BandWork {
    a: Vec<f64>,
    next: Vec<f64>,
    details: Vec<Vec<f64>>,
    scratch: Scratch,
}

impl BandWork {
    /// Replaces the extended signal in `a` by the sum of its detail levels `levels` (the
    /// deepest is `depth`).
    fn keep_levels(&mut self, depth: usize, levels: &[usize]) {
        let BandWork {
            a,
            next,
            details,
            scratch,
        } = self;
        // Only the levels kept need their details; the approximation at `depth` is dropped.
        details.resize_with(depth, Vec::new);
        for j in 1..=depth {
            let keep = levels.contains(&j);
            analyze_into(a, next, keep.then_some(&mut details[j - 1]), scratch);
            std::mem::swap(a, next);
        }
        a.fill(0.0);
        for j in (1..=depth).rev() {
            let d = levels.contains(&j).then(|| details[j - 1].as_slice());
            synthesize_into(a, d, next, scratch);
            std::mem::swap(a, next);
        }
    }
}

thread_local! {
    static BAND_WORK: std::cell::RefCell<BandWork> = std::cell::RefCell::new(BandWork::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `analyze` as the filter bank is written on paper.
    fn analyze_plain(x: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let n = x.len();
        let gs: [f64; 8] = std::array::from_fn(g);
        let (mut a, mut d) = (vec![0.0; n / 2], vec![0.0; n / 2]);
        for k in 0..n / 2 {
            for t in 0..8 {
                a[k] += H[t] * x[(2 * k + t) % n];
                d[k] += gs[t] * x[(2 * k + t) % n];
            }
        }
        (a, d)
    }

    /// `synthesize` as the filter bank is written on paper.
    fn synthesize_plain(a: &[f64], d: &[f64]) -> Vec<f64> {
        let n = 2 * a.len();
        let gs: [f64; 8] = std::array::from_fn(g);
        let mut x = vec![0.0; n];
        for k in 0..a.len() {
            for t in 0..8 {
                x[(2 * k + t) % n] += H[t] * a[k] + gs[t] * d[k];
            }
        }
        x
    }

    #[test]
    fn polyphase_forms_equal_the_plain_ones_to_the_bit() {
        for n in [2, 4, 6, 8, 14, 16, 18, 30, 64, 1000] {
            let x: Vec<f64> = (0..n)
                .map(|i| ((i * 71 % 37) as f64 * 0.61).sin())
                .collect();
            let (a, d) = analyze(&x);
            assert_eq!(
                (a.clone(), d.clone()),
                analyze_plain(&x),
                "analysis, n = {n}"
            );
            assert_eq!(
                synthesize(&a, &d),
                synthesize_plain(&a, &d),
                "synthesis, n = {n}"
            );
            let zeros = vec![0.0; d.len()];
            assert_eq!(
                synthesize_with(&a, None),
                synthesize_plain(&a, &zeros),
                "synthesis without detail, n = {n}"
            );
        }
    }

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

    #[test]
    fn band_adjoint_is_the_transpose_of_band() {
        for (n, levels) in [
            (1000, vec![4, 5, 6]),
            (37, vec![2]),
            (300, vec![1, 3]),
            (5, vec![6]),
        ] {
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 53 % 97) as f32 * 0.37).sin())
                .collect();
            let v: Vec<f64> = (0..n)
                .map(|i| ((i * 31 % 89) as f64 * 0.71).cos())
                .collect();
            let bx: f64 = (band(&x, &levels).iter().zip(&v))
                .map(|(&a, b)| a as f64 * b)
                .sum();
            let xv: f64 = (x.iter().zip(band_adjoint(&v, &levels)))
                .map(|(&a, b)| a as f64 * b)
                .sum();
            let size: f64 = v.iter().map(|b| b.abs()).sum();
            assert!(
                (bx - xv).abs() < 1e-6 * size,
                "n {n}, levels {levels:?}: {bx} vs {xv}"
            );
        }
    }

    #[test]
    fn band_adjoint_at_one_sample_equals_the_whole_transforms_to_the_bit() {
        for (n, levels) in [
            (5000, vec![4, 5, 6]),
            (4099, vec![2, 3]),
            (300, vec![1, 3]),
            (37, vec![2]),
            (5, vec![6]),
            (9000, vec![]),
        ] {
            for t in (0..n).step_by(7).chain([n - 1]) {
                let mut e = vec![0.0; n];
                e[t] = 1.0;
                let h = band_adjoint(&e, &levels);
                let from = h.iter().position(|&v| v != 0.0).unwrap_or(h.len());
                let to = h.iter().rposition(|&v| v != 0.0).map_or(from, |k| k + 1);
                let (at, values) = band_adjoint_at(n, t, &levels);
                assert_eq!(at, from, "n {n}, levels {levels:?}, t {t}");
                assert_eq!(values, h[from..to], "n {n}, levels {levels:?}, t {t}");
            }
        }
    }

    #[test]
    fn band_equals_the_full_decomposition_with_other_levels_zeroed() {
        let x: Vec<f32> = (0..1000)
            .map(|i| ((i * 53 % 97) as f32 * 0.37).sin() * 20.0 + (i as f32 * 0.05).cos())
            .collect();
        for levels in [vec![4, 5, 6], vec![2], vec![1, 3]] {
            let depth = *levels.iter().max().unwrap();
            let block = 1usize << depth;
            let margin = (7 * block).min(x.len() - 1);
            let len = (x.len() + 2 * margin).div_ceil(block) * block;
            let n = x.len() as isize;
            let ext: Vec<f64> = (0..len as isize)
                .map(|i| {
                    let period = 2 * n - 2;
                    let mut k = (i - margin as isize).rem_euclid(period);
                    if k >= n {
                        k = period - k;
                    }
                    x[k as usize] as f64
                })
                .collect();
            let (mut d, a) = wavedec(&ext, depth);
            for (j, dj) in d.iter_mut().enumerate() {
                if !levels.contains(&(j + 1)) {
                    dj.fill(0.0);
                }
            }
            let want: Vec<f32> = waverec(&d, &vec![0.0; a.len()])[margin..margin + x.len()]
                .iter()
                .map(|&v| v as f32)
                .collect();
            assert_eq!(band(&x, &levels), want, "levels {levels:?}");
        }
    }
}
