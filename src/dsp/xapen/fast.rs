//! The CPU path: v is sorted once, so the samples of v within r of u(i) form one range of the
//! sorted order; prefix bitsets of that order turn the range into the set S_i of matching j
//! with one XOR per 64 samples. A window matches where every component does:
//! N_i^m = |S_i ∩ (S_{i+1} >> 1) ∩ ... ∩ (S_{i+m-1} >> m-1)|, and one more AND gives N_i^{m+1}.
//! For N = 1024 that is 16 words per component instead of 1024 comparisons.

use super::bounds;

/// A series prepared as the "v" side of many pairs.
pub struct Prepared {
    n: usize,
    words: usize,
    sorted: Vec<f32>,
    /// `(n + 1) x words`: row k is the set of the original indices of the k smallest samples.
    prefix: Vec<u64>,
}

pub fn prepare(v: &[f32]) -> Prepared {
    let n = v.len();
    let words = n.div_ceil(64);
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| v[a as usize].total_cmp(&v[b as usize]));
    let sorted = order.iter().map(|&k| v[k as usize]).collect();
    let mut prefix = vec![0u64; (n + 1) * words];
    for (k, &j) in order.iter().enumerate() {
        let (prev, next) = prefix.split_at_mut((k + 1) * words);
        next[..words].copy_from_slice(&prev[k * words..]);
        next[j as usize / 64] |= 1 << (j % 64);
    }
    Prepared {
        n,
        words,
        sorted,
        prefix,
    }
}

/// Reusable per-thread memory for `counts_into`.
#[derive(Default)]
pub struct Scratch {
    sets: Vec<u64>,
}

/// N_i^m and N_i^{m+1} of normalized `u` against prepared `v`, written to `n_m` (N-m+1) and
/// `n_m1` (N-m).
pub fn counts_into(
    u: &[f32],
    v: &Prepared,
    m: usize,
    r: f32,
    scratch: &mut Scratch,
    n_m: &mut [u32],
    n_m1: &mut [u32],
) {
    let (n, w) = (v.n, v.words);
    assert_eq!(u.len(), n, "series differ in length");
    scratch.sets.resize(n * w, 0);
    let sets = &mut scratch.sets;
    for (i, &a) in u.iter().enumerate() {
        let (lo, hi) = bounds(a, r);
        // The same tests as the brute-force loop, on the sorted samples.
        let first = v.sorted.partition_point(|&b| b < lo);
        let end = v.sorted.partition_point(|&b| b <= hi).max(first);
        let (p_end, p_first) = (&v.prefix[end * w..][..w], &v.prefix[first * w..][..w]);
        for (s, (x, y)) in sets[i * w..(i + 1) * w]
            .iter_mut()
            .zip(p_end.iter().zip(p_first))
        {
            *s = x ^ y;
        }
    }
    let set = |i: usize| &sets[i * w..(i + 1) * w];
    for i in 0..=n - m {
        let has_m1 = i < n - m;
        let (mut cm, mut cm1) = (0u32, 0u32);
        for k in 0..w {
            let mut acc = set(i)[k];
            for t in 1..m {
                acc &= shifted(set(i + t), k, t);
            }
            cm += acc.count_ones();
            if has_m1 {
                cm1 += (acc & shifted(set(i + m), k, m)).count_ones();
            }
        }
        n_m[i] = cm;
        if has_m1 {
            n_m1[i] = cm1;
        }
    }
}

/// Word k of the bitset `x` shifted down by t bits (bit j of the result is bit j + t of x).
#[inline]
fn shifted(x: &[u64], k: usize, t: usize) -> u64 {
    let low = x[k] >> t;
    match x.get(k + 1) {
        Some(next) if t > 0 => low | (next << (64 - t)),
        _ => low,
    }
}

/// Convenience for tests: the counts of one pair.
pub fn counts(u: &[f32], v: &[f32], m: usize, r: f32) -> (Vec<u32>, Vec<u32>) {
    let n = u.len();
    let (mut n_m, mut n_m1) = (vec![0; n - m + 1], vec![0; n - m]);
    counts_into(
        u,
        &prepare(v),
        m,
        r,
        &mut Scratch::default(),
        &mut n_m,
        &mut n_m1,
    );
    (n_m, n_m1)
}
