//! Min/max decimation for drawing: a pyramid of per-block minima and maxima so that a screen
//! of 24 hours costs as much as a screen of 10 seconds (a fixed number of blocks per pixel).
//!
//! Level 0 holds one `[min, max]` per `BASE` samples; each level above combines `FACTOR` blocks.
//! NaN samples (gaps, invalid WFDB samples) are ignored; an all-NaN block is `[NaN, NaN]`.

pub const BASE: usize = 64;
pub const FACTOR: usize = 8;
/// Blocks per page; a page shares one quantization range.
const PAGE: usize = 4096;
/// The code of an all-NaN block's minimum (its maximum is 0, so that max folds ignore it).
const NAN_CODE: u16 = u16::MAX;
/// The code of a page's maximum.
const TOP_CODE: u16 = u16::MAX - 1;

/// The pyramid is stored as 16-bit codes, half the memory of f32 pairs: the overview of a
/// 2 GB recording is about 1/28 of its size instead of 1/14. Each page of `PAGE` blocks is
/// quantized to its own range, minima rounded down and maxima up, so a column's envelope
/// always contains its samples and is wider by at most 1/65534 of its page's range.
#[derive(Debug, Clone, Default)]
pub struct MinMaxPyramid {
    /// Samples summarised.
    pub len: usize,
    levels: Vec<Level>,
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

/// Up to `PAGE` blocks quantized to the page's own `[lo, hi]`.
#[derive(Debug, Clone)]
struct Page {
    lo: f32,
    hi: f32,
    /// `(hi - lo) / TOP_CODE`, kept to spare a division per value.
    step: f32,
    codes: Vec<[u16; 2]>,
}

impl Page {
    fn quantize(blocks: &[[f32; 2]]) -> Page {
        // Infinities (a diverging filter) are drawn at the largest finite value.
        let finite = |v: f32| v.clamp(-f32::MAX, f32::MAX);
        let [lo, hi] = blocks.iter().fold(EMPTY, |m, &b| merge(m, b));
        let (lo, hi) = if lo.is_nan() {
            (0.0, 0.0)
        } else {
            (finite(lo), finite(hi))
        };
        let span = hi as f64 - lo as f64;
        let mut page = Page {
            lo,
            hi,
            step: (span / TOP_CODE as f64) as f32,
            codes: Vec::with_capacity(blocks.len()),
        };
        let scale = if span > 0.0 {
            TOP_CODE as f64 / span
        } else {
            0.0
        };
        let nearest = |v: f32| ((v as f64 - lo as f64) * scale).clamp(0.0, TOP_CODE as f64);
        for &[min, max] in blocks {
            if min.is_nan() {
                page.codes.push([NAN_CODE, 0]);
                continue;
            }
            let (min, max) = (finite(min), finite(max));
            // Rounding may land a code inside the value: step outwards until it contains it.
            let mut cmin = nearest(min).floor() as u16;
            while cmin > 0 && page.value(cmin) > min {
                cmin -= 1;
            }
            let mut cmax = nearest(max).ceil() as u16;
            while cmax < TOP_CODE && page.value(cmax) < max {
                cmax += 1;
            }
            page.codes.push([cmin, cmax]);
        }
        page
    }

    /// The value a code stands for; monotonic in the code, exact at both ends.
    fn value(&self, code: u16) -> f32 {
        match code {
            0 => self.lo,
            TOP_CODE.. => self.hi,
            c => self.lo + self.step * c as f32,
        }
    }

    /// `[min, max]` of blocks `s..e` of the page, in codes folded as integers.
    fn fold(&self, s: usize, e: usize) -> [f32; 2] {
        let (cmin, cmax) = self.codes[s..e]
            .iter()
            .fold((NAN_CODE, 0), |(a, b), c| (a.min(c[0]), b.max(c[1])));
        if cmin == NAN_CODE {
            EMPTY
        } else {
            [self.value(cmin), self.value(cmax)]
        }
    }
}

/// One level of the pyramid: its blocks in pages.
#[derive(Debug, Clone, Default)]
struct Level {
    pages: Vec<Page>,
    len: usize,
}

impl Level {
    /// `[min, max]` of blocks `s..e`.
    fn fold(&self, s: usize, e: usize) -> [f32; 2] {
        let (p, o) = (s / PAGE, s % PAGE);
        if o + (e - s) <= PAGE {
            return self.pages[p].fold(o, o + (e - s));
        }
        let mut out = EMPTY;
        let mut i = s;
        while i < e {
            let (p, o) = (i / PAGE, i % PAGE);
            let take = (PAGE - o).min(e - i);
            out = merge(out, self.pages[p].fold(o, o + take));
            i += take;
        }
        out
    }
}

/// Number of levels for `len` samples: the top level has at most `FACTOR` blocks.
fn level_count(len: usize) -> usize {
    let mut n = len.div_ceil(BASE);
    let mut levels = 1;
    while n > FACTOR {
        n = n.div_ceil(FACTOR);
        levels += 1;
    }
    levels
}

impl MinMaxPyramid {
    /// Builds the pyramid from samples fed in order, in chunks of any size.
    pub fn builder(len: usize) -> PyramidBuilder {
        PyramidBuilder {
            len,
            levels: (0..level_count(len)).map(|_| LevelBuilder::new()).collect(),
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
        let Some(level) = self.levels.get(k) else {
            return vec![EMPTY; columns];
        };
        (0..columns)
            .map(|c| {
                let s = ((first + c as f64 * spp) / b).floor().max(0.0) as usize;
                let e = ((first + (c + 1) as f64 * spp) / b).floor().max(0.0) as usize;
                let e = e.max(s + 1).min(level.len);
                if s >= e {
                    return EMPTY;
                }
                level.fold(s, e)
            })
            .collect()
    }
}

/// A level being built: full pages, the blocks of the page being filled, and the merge of
/// the `in_up` blocks that will make the next level's next block.
struct LevelBuilder {
    pages: Vec<Page>,
    pending: Vec<[f32; 2]>,
    up: [f32; 2],
    in_up: usize,
}

impl LevelBuilder {
    fn new() -> Self {
        LevelBuilder {
            pages: Vec::new(),
            pending: Vec::new(),
            up: EMPTY,
            in_up: 0,
        }
    }

    fn finish(mut self) -> Level {
        if !self.pending.is_empty() {
            self.pages.push(Page::quantize(&self.pending));
        }
        let len = self.pages.iter().map(|p| p.codes.len()).sum();
        Level {
            pages: self.pages,
            len,
        }
    }
}

/// Every level is built from exact f32 blocks as they stream past (not from the quantized
/// level below), so no level is more than one code wider than its samples.
pub struct PyramidBuilder {
    len: usize,
    levels: Vec<LevelBuilder>,
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
                self.push_block(0, self.partial);
                self.partial = EMPTY;
                self.in_partial = 0;
            }
        }
    }

    /// Adds a block to level `k`, and every `FACTOR` blocks one to the level above.
    fn push_block(&mut self, k: usize, block: [f32; 2]) {
        let Some(level) = self.levels.get_mut(k) else {
            return;
        };
        level.pending.push(block);
        if level.pending.len() == PAGE {
            level.pages.push(Page::quantize(&level.pending));
            level.pending.clear();
        }
        level.up = merge(level.up, block);
        level.in_up += 1;
        if level.in_up == FACTOR {
            let up = std::mem::replace(&mut level.up, EMPTY);
            level.in_up = 0;
            self.push_block(k + 1, up);
        }
    }

    pub fn finish(mut self) -> MinMaxPyramid {
        if self.in_partial > 0 {
            self.push_block(0, self.partial);
        }
        // Partial groups go up level by level; a lower level's remainder may complete one.
        for k in 0..self.levels.len() {
            let level = &mut self.levels[k];
            if level.in_up > 0 {
                let up = std::mem::replace(&mut level.up, EMPTY);
                level.in_up = 0;
                self.push_block(k + 1, up);
            }
        }
        MinMaxPyramid {
            len: self.len,
            levels: self.levels.into_iter().map(LevelBuilder::finish).collect(),
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
        let levels = level_count(x.len());
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
                    return EMPTY;
                }
                slice_min_max(&x[s * b..(e * b).min(x.len())])
            })
            .collect()
    }

    fn pyramid(x: &[f32]) -> MinMaxPyramid {
        let mut b = MinMaxPyramid::builder(x.len());
        for chunk in x.chunks(777) {
            b.push(chunk);
        }
        b.finish()
    }

    /// Every column contains the plain definition's and is wider by at most `tol` each side.
    fn assert_contains(got: &[[f32; 2]], want: &[[f32; 2]], tol: f32, what: &str) {
        for (g, w) in got.iter().zip(want) {
            if w[0].is_nan() {
                assert!(g[0].is_nan() && g[1].is_nan(), "{what}: {g:?} {w:?}");
                continue;
            }
            assert!(g[0] <= w[0] && w[0] - g[0] <= tol, "{what}: {g:?} {w:?}");
            assert!(g[1] >= w[1] && g[1] - w[1] <= tol, "{what}: {g:?} {w:?}");
        }
    }

    fn noise(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..n)
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
            .collect()
    }

    #[test]
    fn pyramid_matches_the_plain_definition() {
        for &n in &[0usize, 1, 63, 64, 65, 1000, 70_001, 300_000, 2_000_000] {
            let x = noise(n, 7);
            let p = pyramid(&x);
            assert_eq!(p.levels(), level_count(n));
            let [lo, hi] = slice_min_max(&x);
            let tol = if n == 0 {
                0.0
            } else {
                (hi - lo) / 65534.0 * 1.01
            };
            for &(first, spp, cols) in &[
                (0.0, 64.0, 100),
                (100.0, 700.0, 400),
                (0.0, n as f64 / 1500.0, 1500),
                (5000.0, 20_000.0, 20),
                (0.0, 1e7, 3),
            ] {
                let got = p.columns(first, spp.max(1.0), cols);
                let want = reference(&x, first, spp.max(1.0), cols);
                assert_contains(&got, &want, tol, &format!("n={n} spp={spp}"));
            }
        }
    }

    /// A page is quantized to its own range: a huge artifact in one part of a recording does
    /// not coarsen the rest, and a flat signal stays exact.
    #[test]
    fn quantization_follows_each_page() {
        let page = BASE * PAGE;
        let mut x: Vec<f32> = (0..3 * page)
            .map(|i| (i as f32 * 0.01).sin() * 50.0)
            .collect();
        x[10] = 1e6;
        x[2 * page..].iter_mut().for_each(|v| *v = 12.5);
        let p = pyramid(&x);
        let quiet = p.columns(page as f64, BASE as f64, PAGE);
        let want = reference(&x, page as f64, BASE as f64, PAGE);
        assert_contains(&quiet, &want, 100.0 / 65534.0 * 1.01, "quiet page");
        let flat = p.columns(2.0 * page as f64, BASE as f64, 10);
        assert!(flat.iter().all(|c| *c == [12.5, 12.5]), "{flat:?}");
        let loud = p.columns(0.0, BASE as f64, 1);
        assert_eq!(loud[0][1], 1e6);
    }

    #[test]
    fn infinities_and_all_nan_pages_draw_without_panicking() {
        let mut x = vec![f32::NAN; BASE * PAGE + 5];
        x[3] = f32::INFINITY;
        x[4] = f32::NEG_INFINITY;
        x[5] = 1.0;
        let p = pyramid(&x);
        let c = p.columns(0.0, BASE as f64, 3);
        assert_eq!(c[0], [-f32::MAX, f32::MAX]);
        assert!(c[1][0].is_nan() && c[2][1].is_nan());
        let top = p.columns(0.0, x.len() as f64, 1);
        assert_eq!(top[0], [-f32::MAX, f32::MAX]);
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
