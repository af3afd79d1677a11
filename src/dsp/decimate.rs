//! Min/max decimation for drawing: a pyramid of per-block minima and maxima so that a screen
//! of 24 hours costs as much as a screen of 10 seconds (a fixed number of blocks per pixel).
//!
//! Level 0 holds one `[min, max]` per `BASE` samples; each level above combines `FACTOR` blocks.
//! NaN samples (gaps, invalid WFDB samples) are ignored; an all-NaN block is `[NaN, NaN]`.

pub const BASE: usize = 64;
pub const FACTOR: usize = 8;

#[derive(Debug, Clone, Default)]
pub struct MinMaxPyramid {
    /// Samples summarised.
    pub len: usize,
    levels: Vec<Vec<[f32; 2]>>,
}

fn merge(a: [f32; 2], b: [f32; 2]) -> [f32; 2] {
    // f32::min/max ignore a NaN operand, which is what gaps need.
    [a[0].min(b[0]), a[1].max(b[1])]
}

const EMPTY: [f32; 2] = [f32::NAN, f32::NAN];

/// Min and max of a slice, ignoring NaN.
pub fn slice_min_max(x: &[f32]) -> [f32; 2] {
    x.iter().fold(EMPTY, |m, &v| merge(m, [v, v]))
}

impl MinMaxPyramid {
    /// Builds the pyramid from samples fed in order, in chunks of any size.
    pub fn builder(len: usize) -> PyramidBuilder {
        PyramidBuilder {
            len,
            level0: Vec::with_capacity(len.div_ceil(BASE)),
            partial: EMPTY,
            in_partial: 0,
        }
    }

    /// Block size in samples of level `k`.
    pub fn block(k: usize) -> usize {
        BASE * FACTOR.pow(k as u32)
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// `[min, max]` of each of `columns` pixel columns, column `c` covering samples
    /// `first + c * spp .. first + (c + 1) * spp` (clipped to the signal), with column edges
    /// snapped to blocks of the finest level that still gives at least two blocks a column.
    pub fn columns(&self, first: f64, spp: f64, columns: usize) -> Vec<[f32; 2]> {
        let mut k = 0;
        while k + 1 < self.levels.len() && (Self::block(k + 1) as f64) * 2.0 <= spp {
            k += 1;
        }
        let b = Self::block(k) as f64;
        let level = &self.levels[k];
        (0..columns)
            .map(|c| {
                let s = ((first + c as f64 * spp) / b).floor().max(0.0) as usize;
                let e = ((first + (c + 1) as f64 * spp) / b).floor().max(0.0) as usize;
                let e = e.max(s + 1).min(level.len());
                if s >= e {
                    return EMPTY;
                }
                level[s..e].iter().fold(EMPTY, |m, &v| merge(m, v))
            })
            .collect()
    }
}

pub struct PyramidBuilder {
    len: usize,
    level0: Vec<[f32; 2]>,
    partial: [f32; 2],
    in_partial: usize,
}

impl PyramidBuilder {
    pub fn push(&mut self, mut x: &[f32]) {
        while !x.is_empty() {
            let take = (BASE - self.in_partial).min(x.len());
            self.partial = merge(self.partial, slice_min_max(&x[..take]));
            self.in_partial += take;
            x = &x[take..];
            if self.in_partial == BASE {
                self.level0.push(self.partial);
                self.partial = EMPTY;
                self.in_partial = 0;
            }
        }
    }

    pub fn finish(mut self) -> MinMaxPyramid {
        if self.in_partial > 0 {
            self.level0.push(self.partial);
        }
        let mut levels = vec![self.level0];
        while levels.last().is_some_and(|l| l.len() > FACTOR) {
            let next = levels
                .last()
                .map(|l| {
                    l.chunks(FACTOR)
                        .map(|c| c.iter().fold(EMPTY, |m, &v| merge(m, v)))
                        .collect()
                })
                .unwrap_or_default();
            levels.push(next);
        }
        MinMaxPyramid {
            len: self.len,
            levels,
        }
    }
}

/// `[min, max]` per pixel column straight from samples (for zooms below one block a column):
/// column `c` covers `samples[c * spp .. (c + 1) * spp]` with `samples[0]` at column 0's start.
pub fn raw_columns(samples: &[f32], spp: f64, columns: usize) -> Vec<[f32; 2]> {
    (0..columns)
        .map(|c| {
            let s = ((c as f64 * spp).floor() as usize).min(samples.len());
            let e = (((c + 1) as f64 * spp).floor() as usize).clamp(s, samples.len());
            if s == e {
                // Fewer samples than columns: the sample under the column.
                samples.get(s).map(|&v| [v, v]).unwrap_or(EMPTY)
            } else {
                slice_min_max(&samples[s..e])
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition: min and max of the samples in the snapped block range.
    fn reference(x: &[f32], first: f64, spp: f64, columns: usize) -> Vec<[f32; 2]> {
        let mut k = 0;
        let levels = {
            let mut n = x.len().div_ceil(BASE);
            let mut l = 1;
            while n > FACTOR {
                n = n.div_ceil(FACTOR);
                l += 1;
            }
            l
        };
        while k + 1 < levels && (MinMaxPyramid::block(k + 1) as f64) * 2.0 <= spp {
            k += 1;
        }
        let b = MinMaxPyramid::block(k);
        let nblocks = x.len().div_ceil(b);
        (0..columns)
            .map(|c| {
                let s = ((first + c as f64 * spp) / b as f64).floor().max(0.0) as usize;
                let e = (((first + (c + 1) as f64 * spp) / b as f64).floor().max(0.0) as usize)
                    .max(s + 1)
                    .min(nblocks);
                if s >= e {
                    return [f32::NAN; 2];
                }
                let seg = &x[s * b..(e * b).min(x.len())];
                let lo = seg
                    .iter()
                    .cloned()
                    .filter(|v| !v.is_nan())
                    .fold(f32::INFINITY, f32::min);
                let hi = seg
                    .iter()
                    .cloned()
                    .filter(|v| !v.is_nan())
                    .fold(f32::NEG_INFINITY, f32::max);
                if lo > hi { [f32::NAN; 2] } else { [lo, hi] }
            })
            .collect()
    }

    #[test]
    fn pyramid_matches_the_plain_definition() {
        let mut state = 7u64;
        for &n in &[1usize, 63, 64, 65, 1000, 70_001, 300_000] {
            let x: Vec<f32> = (0..n)
                .map(|i| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    if i % 997 == 5 {
                        f32::NAN
                    } else {
                        (state >> 40) as f32 / 1e5 - 80.0
                    }
                })
                .collect();
            let mut b = MinMaxPyramid::builder(n);
            for chunk in x.chunks(777) {
                b.push(chunk);
            }
            let p = b.finish();
            for &(first, spp, cols) in &[
                (0.0, 64.0, 100),
                (100.0, 700.0, 400),
                (0.0, n as f64 / 1500.0, 1500),
                (5000.0, 20_000.0, 20),
            ] {
                let got = p.columns(first, spp.max(1.0), cols);
                let want = reference(&x, first, spp.max(1.0), cols);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        g[0] == w[0] || (g[0].is_nan() && w[0].is_nan()),
                        "n={n} {g:?} {w:?}"
                    );
                    assert!(g[1] == w[1] || (g[1].is_nan() && w[1].is_nan()));
                }
            }
        }
    }

    #[test]
    fn raw_columns_cover_every_sample() {
        let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let c = raw_columns(&x, 10.0, 10);
        assert_eq!(c[0], [0.0, 9.0]);
        assert_eq!(c[9], [90.0, 99.0]);
        let z = raw_columns(&x[..3], 0.5, 6);
        assert_eq!(z[1], [0.0, 0.0]);
        assert_eq!(z[2], [1.0, 1.0]);
    }
}
