//! Amplitude-integrated EEG as EDFbrowser computes it (`aeeg_dialog.cpp`, after Zhang & Ding,
//! 2013): the channel in microvolts band-passed 2-15 Hz (Butterworth, order 8 per edge, causal),
//! rectified, smoothed by a 0.5 Hz fourth-order Butterworth low-pass and doubled; per 15 s
//! segment the envelope's 9th and 93rd percentiles are the trace's lower and upper edges; per
//! 20 segments the medians of those are the lower and upper margins.
//!
//! EDFbrowser cites Zhang & Ding's asymmetric filter but designs a plain Butterworth band-pass;
//! ede follows EDFbrowser, whose aEEG its users compare against. Its margin median of 20 values
//! takes the 11th and 12th sorted; ede takes the true median (10th and 11th).

use sci_rs::signal::filter::design::FilterBandType as Band;
use serde::{Deserialize, Serialize};

use super::filter::{FilterChain, Section, butter};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AeegParams {
    pub segment_s: f64,
    pub band_hz: (f64, f64),
    pub envelope_hz: f64,
    /// Percentiles of the envelope in a segment that make its lower and upper edges.
    pub lower_pct: f64,
    pub upper_pct: f64,
    /// Segments per margin value.
    pub margin_segments: usize,
}

impl Default for AeegParams {
    fn default() -> Self {
        AeegParams {
            segment_s: 15.0,
            band_hz: (2.0, 15.0),
            envelope_hz: 0.5,
            lower_pct: 9.0,
            upper_pct: 93.0,
            margin_segments: 20,
        }
    }
}

/// The display's break: linear below, logarithmic above (microvolts).
pub const LINEAR_UP_TO_UV: f64 = 10.0;

/// The semi-log display scale: 0-10 uV fill the lower half linearly, 10 uV up to `top` the
/// upper half logarithmically; values are clamped to `[0, 1]`.
pub fn semilog(uv: f64, top: f64) -> f64 {
    let v = if uv <= LINEAR_UP_TO_UV {
        0.5 * uv.max(0.0) / LINEAR_UP_TO_UV
    } else {
        0.5 + 0.5 * (uv / LINEAR_UP_TO_UV).log10() / (top / LINEAR_UP_TO_UV).log10()
    };
    v.clamp(0.0, 1.0)
}

impl AeegParams {
    /// Samples per segment at `fs`, checked with the filter corners.
    pub fn segment_len(&self, fs: f64) -> Result<usize, String> {
        let n = (self.segment_s * fs).round();
        let (lo, hi) = self.band_hz;
        if !(n >= 1.0 && n.is_finite()) {
            return Err(format!(
                "aEEG segments of {} s hold no sample",
                self.segment_s
            ));
        }
        if !(lo > 0.0 && lo < hi && hi < fs / 2.0) {
            return Err(format!(
                "the aEEG band {lo}-{hi} Hz must lie between 0 and Nyquist ({} Hz)",
                fs / 2.0
            ));
        }
        if !(self.envelope_hz > 0.0 && self.envelope_hz < fs / 2.0) {
            return Err(format!(
                "the envelope low-pass {} Hz is out of range",
                self.envelope_hz
            ));
        }
        let pct = 0.0..=100.0;
        if !(pct.contains(&self.lower_pct)
            && pct.contains(&self.upper_pct)
            && self.lower_pct <= self.upper_pct)
        {
            return Err("aEEG percentiles must lie between 0 and 100, lower first".into());
        }
        if self.margin_segments == 0 {
            return Err("a margin needs at least one segment".into());
        }
        Ok(n as usize)
    }
}

/// The envelope of `uv` (microvolts): band-passed, rectified, smoothed, doubled, by `state`.
fn envelope(bp: &mut FilterChain, lp: &mut FilterChain, uv: &mut [f32]) {
    bp.run(uv);
    uv.iter_mut().for_each(|v| *v = v.abs());
    lp.run(uv);
    uv.iter_mut().for_each(|v| *v *= 2.0);
}

/// The sample at rank `round(n * pct / 100)` of the sorted segment (EDFbrowser's index).
pub(crate) fn rank(n: usize, pct: f64) -> usize {
    ((n as f64 * pct / 100.0 + 0.5) as usize).min(n - 1)
}

/// Channels an `Aeeg` filters together: independent recursions in step fill the pipeline
/// that one channel's recursion leaves idle.
pub const LANES: usize = 8;

/// Samples taken through every section before the next ones: the block stays in the first
/// cache level instead of streaming through the second once per section.
const TILE: usize = 128;

/// The envelope's filters run on `LANES` channels at once: the band-pass, the rectifier and
/// the low-pass (transposed direct form II, as `FilterChain`; a lane's non-finite sample
/// passes through and leaves its state alone).
struct LaneEnvelope {
    /// The band-pass's sections, then the low-pass's.
    sections: Vec<Section>,
    band_pass: usize,
    state: Vec<[[f64; LANES]; 2]>,
}

impl LaneEnvelope {
    fn new(band_pass: Vec<Section>, low_pass: Vec<Section>) -> Self {
        let count = band_pass.len();
        let sections: Vec<Section> = band_pass.into_iter().chain(low_pass).collect();
        let state = vec![[[0.0; LANES]; 2]; sections.len()];
        LaneEnvelope {
            sections,
            band_pass: count,
            state,
        }
    }

    /// Replaces `x` by its envelope, halved (the caller doubles it as it stores it).
    fn run(&mut self, x: &mut [[f64; LANES]]) {
        let gaps = x.iter().flatten().any(|v| !v.is_finite());
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe {
                match gaps {
                    false => self.run_fma::<false>(x),
                    true => self.run_fma::<true>(x),
                }
            };
        }
        match gaps {
            false => self.run_any::<false, false>(x),
            true => self.run_any::<false, true>(x),
        }
    }

    /// `run_any` compiled for AVX2 and FMA: a recursion step is two fused operations long
    /// where it was four, and four lanes are one vector.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn run_fma<const GAPS: bool>(&mut self, x: &mut [[f64; LANES]]) {
        self.run_any::<true, GAPS>(x)
    }

    /// Tile by tile: the band-pass's sections, the rectifier, the low-pass's. `FMA`: fused
    /// multiply-adds (slow library calls without the instruction); `GAPS`: the block holds
    /// non-finite samples.
    #[inline(always)]
    fn run_any<const FMA: bool, const GAPS: bool>(&mut self, x: &mut [[f64; LANES]]) {
        let madd = |a: f64, b: f64, c: f64| if FMA { a.mul_add(b, c) } else { a * b + c };
        for tile in x.chunks_mut(TILE) {
            for (k, (s, z)) in self.sections.iter().zip(&mut self.state).enumerate() {
                if k == self.band_pass {
                    tile.iter_mut().flatten().for_each(|v| *v = v.abs());
                }
                let [mut z0, mut z1] = *z;
                let [b0, b1, b2] = s.b;
                let (a1, a2) = (-s.a[1], -s.a[2]);
                for v in tile.iter_mut() {
                    for l in 0..LANES {
                        let x = v[l];
                        let y = madd(b0, x, z0[l]);
                        let n0 = madd(a1, y, madd(b1, x, z1[l]));
                        let n1 = madd(a2, y, b2 * x);
                        if GAPS && !x.is_finite() {
                            continue;
                        }
                        z0[l] = n0;
                        z1[l] = n1;
                        v[l] = y;
                    }
                }
                *z = [z0, z1];
            }
        }
    }
}

/// The aEEG of up to `LANES` channels computed as their samples stream in, segment by segment.
pub struct Aeeg {
    params: AeegParams,
    segment: usize,
    /// Microvolts per unit, per channel.
    scales: Vec<f64>,
    filters: LaneEnvelope,
    /// Per channel, the envelope of the current segment as `key`s, `filled` of them so far.
    pending: Vec<Vec<i32>>,
    filled: usize,
    /// Per channel, `(lower, upper)` per whole segment so far, microvolts.
    pub edges: Vec<Vec<(f32, f32)>>,
    /// The keys a segment's selection narrows to.
    inside: Vec<i32>,
    buf: Vec<[f64; LANES]>,
}

impl Aeeg {
    /// For channels whose samples times `scales` are microvolts (1 to `LANES` of them).
    pub fn new(fs: f64, params: AeegParams, scales: &[f64]) -> Result<Self, String> {
        assert!((1..=LANES).contains(&scales.len()), "1 to {LANES} channels");
        let segment = params.segment_len(fs)?;
        let (bp, lp) = design(fs, &params);
        Ok(Aeeg {
            params,
            segment,
            scales: scales.to_vec(),
            filters: LaneEnvelope::new(bp, lp),
            pending: vec![vec![0; segment]; scales.len()],
            filled: 0,
            edges: vec![Vec::new(); scales.len()],
            inside: vec![0; segment],
            buf: Vec::with_capacity(segment),
        })
    }

    /// Takes the next samples of every channel (slices of one length; a gap's NaN samples pass
    /// through and are left out of the percentiles).
    pub fn push(&mut self, channels: &[&[f32]]) {
        let len = channels.first().map_or(0, |c| c.len());
        let mut at = 0;
        while at < len {
            let take = (self.segment - self.filled).min(len - at);
            self.envelope(channels, at..at + take);
            // Row by row, each lane's key to its channel: the rows are read in order.
            for (i, row) in self.buf.iter().enumerate() {
                for (p, v) in self.pending.iter_mut().zip(row) {
                    p[self.filled + i] = key((2.0 * v) as f32);
                }
            }
            at += take;
            self.filled += take;
            if self.filled == self.segment {
                for (p, e) in self.pending.iter_mut().zip(&mut self.edges) {
                    e.push(edges_of(p, &mut self.inside, &self.params));
                }
                self.filled = 0;
            }
        }
    }

    /// Runs the filters over samples before the first segment and drops their envelope: a
    /// piece of a recording started some seconds early leaves the filters as one pass over
    /// the whole would have (they forget their start in about a second).
    pub fn prime(&mut self, channels: &[&[f32]]) {
        let len = channels.first().map_or(0, |c| c.len());
        for at in (0..len).step_by(self.segment) {
            self.envelope(channels, at..(at + self.segment).min(len));
        }
    }

    /// The halved envelope of `range` of every channel into `self.buf`.
    fn envelope(&mut self, channels: &[&[f32]], range: std::ops::Range<usize>) {
        assert_eq!(channels.len(), self.scales.len());
        self.buf.clear();
        self.buf.extend(range.map(|i| {
            let mut v = [0.0; LANES];
            for (l, (c, k)) in channels.iter().zip(&self.scales).enumerate() {
                v[l] = c[i] as f64 * k;
            }
            v
        }));
        self.filters.run(&mut self.buf);
    }

    /// Channel `c`'s margins: per `margin_segments` whole segments, the medians of their lower
    /// and upper edges (a last, partial group is left out, as EDFbrowser does).
    pub fn margins(&self, c: usize) -> Vec<(f32, f32)> {
        margins(&self.edges[c], self.params.margin_segments)
    }
}

/// The band-pass and the envelope's low-pass.
pub(crate) fn design(fs: f64, p: &AeegParams) -> (Vec<Section>, Vec<Section>) {
    let bp = butter(8, vec![p.band_hz.0, p.band_hz.1], Band::Bandpass, fs);
    let lp = butter(4, vec![p.envelope_hz], Band::Lowpass, fs);
    (bp, lp)
}

/// An integer per float that orders as `f32::total_cmp` does (twice as fast to select on);
/// the map is its own inverse.
fn key(v: f32) -> i32 {
    let b = v.to_bits() as i32;
    b ^ ((((b >> 31) as u32) >> 1) as i32)
}

fn value(k: i32) -> f32 {
    f32::from_bits(key(f32::from_bits(k as u32)) as u32)
}

/// A segment's envelope edges: the percentiles of the finite values among its `keys`
/// (reordered; a gap's are dropped).
fn edges_of(keys: &mut Vec<i32>, inside: &mut [i32], params: &AeegParams) -> (f32, f32) {
    let finite = key(f32::MIN)..=key(f32::MAX);
    let gaps = keys.iter().any(|k| !finite.contains(k));
    let mut keys = keys.as_mut_slice();
    let mut kept;
    if gaps {
        kept = keys.to_vec();
        kept.retain(|k| finite.contains(k));
        keys = &mut kept;
    }
    if keys.is_empty() {
        return (f32::NAN, f32::NAN);
    }
    let n = keys.len();
    let (lo, hi) = (rank(n, params.lower_pct), rank(n, params.upper_pct));
    // A strided sample of the keys, sorted, brackets each rank.
    let mut sample: Vec<i32> = keys.iter().step_by(n.div_ceil(SAMPLE)).copied().collect();
    sample.sort_unstable();
    let lower =
        bracketed(keys, lo, &sample, inside).unwrap_or_else(|| *keys.select_nth_unstable(lo).1);
    let upper =
        bracketed(keys, hi, &sample, inside).unwrap_or_else(|| *keys.select_nth_unstable(hi).1);
    (value(lower), value(upper))
}

/// Keys sampled per segment to bracket a rank, and the sample's ranks on either side of the
/// estimate the bracket spans (about three standard errors of a sample quantile).
const SAMPLE: usize = 64;
const MARGIN: usize = 6;

/// The key at rank `r` of `keys`: one pass counts the keys below a bracket taken from the
/// sorted `sample` and gathers those within it into `inside`, and the rank is selected among
/// those few. `None` when the bracket misses the rank (the caller selects among all).
fn bracketed(keys: &[i32], r: usize, sample: &[i32], inside: &mut [i32]) -> Option<i32> {
    let at = r * sample.len() / keys.len();
    let low = match at.checked_sub(MARGIN) {
        Some(i) => sample[i],
        None => i32::MIN,
    };
    let high = sample.get(at + MARGIN).copied().unwrap_or(i32::MAX);
    let (mut below, mut count) = (0, 0);
    for &k in keys {
        below += (k < low) as usize;
        // Written always, kept when inside: no branch to mispredict.
        inside[count] = k;
        count += (k >= low && k <= high) as usize;
    }
    let inside = &mut inside[..count];
    (below <= r && r < below + count).then(|| *inside.select_nth_unstable(r - below).1)
}

/// The medians of each group of `group` edges, lower and upper apart.
pub fn margins(edges: &[(f32, f32)], group: usize) -> Vec<(f32, f32)> {
    let median = |mut v: Vec<f32>| -> f32 {
        v.retain(|x| x.is_finite());
        if v.is_empty() {
            return f32::NAN;
        }
        v.sort_by(f32::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    edges
        .chunks_exact(group)
        .map(|g| {
            (
                median(g.iter().map(|e| e.0).collect()),
                median(g.iter().map(|e| e.1).collect()),
            )
        })
        .collect()
}

/// The plain definition, for tests: the whole channel filtered at once, each segment sorted.
pub fn aeeg_reference(uv: &[f32], fs: f64, params: AeegParams) -> Vec<(f32, f32)> {
    let segment = params.segment_len(fs).expect("valid parameters");
    let mut env = uv.to_vec();
    let (bp, lp) = design(fs, &params);
    envelope(
        &mut FilterChain::new(bp),
        &mut FilterChain::new(lp),
        &mut env,
    );
    env.chunks_exact(segment)
        .map(|s| {
            let mut s: Vec<f32> = s.iter().copied().filter(|v| v.is_finite()).collect();
            s.sort_by(f32::total_cmp);
            let n = s.len();
            (s[rank(n, params.lower_pct)], s[rank(n, params.upper_pct)])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eeg(n: usize, fs: f64) -> Vec<f32> {
        let mut s = 1u64;
        (0..n)
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                let t = i as f64 / fs;
                let burst = if ((t / 40.0) as usize).is_multiple_of(2) {
                    40.0
                } else {
                    5.0
                };
                (burst * (2.0 * std::f64::consts::PI * 8.0 * t).sin()
                    + 10.0 * ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5)) as f32
            })
            .collect()
    }

    #[test]
    fn streaming_in_any_pieces_equals_the_definition() {
        let fs = 128.0;
        let x = eeg(128 * 300, fs);
        let mut y: Vec<f32> = x.iter().rev().map(|v| v * 0.01).collect();
        y[5000..5100].fill(f32::NAN);
        let p = AeegParams::default();
        // The second channel in millivolts.
        let mut a = Aeeg::new(fs, p, &[1.0, 1000.0, 1.0]).unwrap();
        for k in (0..x.len()).step_by(1007) {
            let r = k..(k + 1007).min(x.len());
            a.push(&[&x[r.clone()], &y[r.clone()], &x[r]]);
        }
        let y_uv: Vec<f32> = y.iter().map(|v| v * 1000.0).collect();
        for (c, input) in [&x, &y_uv, &x].into_iter().enumerate() {
            let want = aeeg_reference(input, fs, p);
            assert_eq!(a.edges[c].len(), 20);
            for (g, w) in a.edges[c].iter().zip(&want) {
                assert!((g.0 - w.0).abs() <= 1e-3 * w.1 && (g.1 - w.1).abs() <= 1e-3 * w.1);
            }
            assert_eq!(a.margins(c).len(), 1);
        }
    }

    #[test]
    fn a_piece_started_twenty_seconds_early_equals_one_pass() {
        // A large offset makes the band-pass's start-up transient large.
        let fs = 128.0;
        let x: Vec<f32> = eeg(128 * 300, fs).iter().map(|v| v + 3000.0).collect();
        let p = AeegParams::default();
        let want = aeeg_reference(&x, fs, p);
        let (segment, warm) = (15 * 128, 20 * 128);
        let start = 8 * segment;
        let mut a = Aeeg::new(fs, p, &[1.0]).unwrap();
        a.prime(&[&x[start - warm..start]]);
        a.push(&[&x[start..]]);
        assert_eq!(a.edges[0].len(), want.len() - 8);
        for (g, w) in a.edges[0].iter().zip(&want[8..]) {
            assert!((g.0 - w.0).abs() <= 1e-4 * w.1 && (g.1 - w.1).abs() <= 1e-4 * w.1);
        }
    }

    #[test]
    fn edges_are_the_sorted_segment_s_percentiles() {
        let p = AeegParams::default();
        let mut s = 7u64;
        let mut random = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        let n = 3840;
        let cases: Vec<Vec<f32>> = vec![
            (0..n).map(|_| random()).collect(),
            (0..n).map(|i| (i as f32 * 0.01).sin() + 2.0).collect(),
            (0..n).map(|i| i as f32).collect(),
            (0..n).rev().map(|i| i as f32).collect(),
            vec![3.0; n],
            (0..n).map(|i| (i % 3) as f32).collect(),
            (0..n).map(|_| -random()).collect(),
            (0..17).map(|_| random()).collect(),
        ];
        let mut inside = vec![0; n];
        for x in cases {
            let mut sorted = x.clone();
            sorted.sort_by(f32::total_cmp);
            let want = (
                sorted[rank(x.len(), p.lower_pct)],
                sorted[rank(x.len(), p.upper_pct)],
            );
            let mut keys: Vec<i32> = x.iter().map(|&v| key(v)).collect();
            assert_eq!(edges_of(&mut keys, &mut inside, &p), want);
        }
    }

    #[test]
    fn a_sine_s_edges_bracket_its_rectified_mean() {
        // A 10 Hz sine of amplitude A: the doubled, smoothed rectified sine is near 4A/pi.
        let fs = 256.0;
        let x: Vec<f32> = (0..256 * 60)
            .map(|i| (20.0 * (2.0 * std::f64::consts::PI * 10.0 * i as f64 / fs).sin()) as f32)
            .collect();
        let mut a = Aeeg::new(fs, AeegParams::default(), &[1.0]).unwrap();
        a.push(&[&x]);
        let (lo, hi) = a.edges[0][3];
        let level = 4.0 * 20.0 / std::f32::consts::PI;
        assert!(
            lo < level * 1.05 && hi > level * 0.95 && hi < level * 1.2,
            "{lo} {hi}"
        );
    }

    #[test]
    fn semilog_breaks_at_ten_microvolts() {
        assert_eq!(semilog(0.0, 100.0), 0.0);
        assert_eq!(semilog(10.0, 100.0), 0.5);
        assert!((semilog(100.0, 100.0) - 1.0).abs() < 1e-12);
        assert!((semilog(5.0, 100.0) - 0.25).abs() < 1e-12);
        assert_eq!(semilog(1e4, 100.0), 1.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let bad = |p: AeegParams| Aeeg::new(100.0, p, &[1.0]).is_err();
        let d = AeegParams::default();
        assert!(bad(AeegParams {
            band_hz: (2.0, 60.0),
            ..d
        }));
        assert!(bad(AeegParams {
            segment_s: 0.0,
            ..d
        }));
        assert!(bad(AeegParams {
            lower_pct: -1.0,
            ..d
        }));
        assert!(bad(AeegParams {
            margin_segments: 0,
            ..d
        }));
    }
}
