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
fn rank(n: usize, pct: f64) -> usize {
    ((n as f64 * pct / 100.0 + 0.5) as usize).min(n - 1)
}

/// Channels an `Aeeg` filters together: independent recursions in step fill the pipeline
/// that one channel's recursion leaves idle.
pub const LANES: usize = 8;

/// A cascade of sections run on `LANES` channels at once (transposed direct form II, as
/// `FilterChain`; a lane's non-finite sample passes through and leaves its state alone).
struct LaneChain {
    sections: Vec<Section>,
    state: Vec<[[f64; LANES]; 2]>,
}

impl LaneChain {
    fn new(sections: Vec<Section>) -> Self {
        let state = vec![[[0.0; LANES]; 2]; sections.len()];
        LaneChain { sections, state }
    }

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

    /// The cascade, section by section over the block. `FMA`: fused multiply-adds (slow
    /// library calls without the instruction); `GAPS`: the block holds non-finite samples.
    #[inline(always)]
    fn run_any<const FMA: bool, const GAPS: bool>(&mut self, x: &mut [[f64; LANES]]) {
        let madd = |a: f64, b: f64, c: f64| if FMA { a.mul_add(b, c) } else { a * b + c };
        for (s, z) in self.sections.iter().zip(&mut self.state) {
            let [mut z0, mut z1] = *z;
            let [b0, b1, b2] = s.b;
            let (a1, a2) = (-s.a[1], -s.a[2]);
            for v in x.iter_mut() {
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

/// The aEEG of up to `LANES` channels computed as their samples stream in, segment by segment.
pub struct Aeeg {
    params: AeegParams,
    segment: usize,
    /// Microvolts per unit, per channel.
    scales: Vec<f64>,
    bp: LaneChain,
    lp: LaneChain,
    /// Per channel, the envelope of the current, partial segment.
    pending: Vec<Vec<f32>>,
    /// Per channel, `(lower, upper)` per whole segment so far, microvolts.
    pub edges: Vec<Vec<(f32, f32)>>,
    keys: Vec<i32>,
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
            bp: LaneChain::new(bp),
            lp: LaneChain::new(lp),
            pending: vec![Vec::with_capacity(segment); scales.len()],
            edges: vec![Vec::new(); scales.len()],
            keys: Vec::with_capacity(segment),
        })
    }

    /// Takes the next samples of every channel (slices of one length; a gap's NaN samples pass
    /// through and are left out of the percentiles).
    pub fn push(&mut self, channels: &[&[f32]]) {
        assert_eq!(channels.len(), self.scales.len());
        let len = channels.first().map_or(0, |c| c.len());
        let mut buf: Vec<[f64; LANES]> = Vec::new();
        let mut at = 0;
        while at < len {
            let take = (self.segment - self.pending[0].len()).min(len - at);
            buf.clear();
            buf.extend((at..at + take).map(|i| {
                let mut v = [0.0; LANES];
                for (l, (c, k)) in channels.iter().zip(&self.scales).enumerate() {
                    v[l] = c[i] as f64 * k;
                }
                v
            }));
            self.bp.run(&mut buf);
            buf.iter_mut().flatten().for_each(|v| *v = v.abs());
            self.lp.run(&mut buf);
            for (l, p) in self.pending.iter_mut().enumerate() {
                p.extend(buf.iter().map(|v| (2.0 * v[l]) as f32));
            }
            at += take;
            if self.pending[0].len() == self.segment {
                for (p, e) in self.pending.iter_mut().zip(&mut self.edges) {
                    e.push(edges_of(p, &mut self.keys, &self.params));
                    p.clear();
                }
            }
        }
    }

    /// Channel `c`'s margins: per `margin_segments` whole segments, the medians of their lower
    /// and upper edges (a last, partial group is left out, as EDFbrowser does).
    pub fn margins(&self, c: usize) -> Vec<(f32, f32)> {
        margins(&self.edges[c], self.params.margin_segments)
    }
}

/// The band-pass and the envelope's low-pass.
fn design(fs: f64, p: &AeegParams) -> (Vec<Section>, Vec<Section>) {
    let bp = butter(8, vec![p.band_hz.0, p.band_hz.1], Band::Bandpass, fs);
    let lp = butter(4, vec![p.envelope_hz], Band::Lowpass, fs);
    (bp, lp)
}

/// A segment's envelope edges (its finite samples' percentiles), selected on integer keys
/// that order as the floats do (`f32::total_cmp`'s, twice as fast to select on).
fn edges_of(p: &[f32], keys: &mut Vec<i32>, params: &AeegParams) -> (f32, f32) {
    let key = |v: f32| {
        let b = v.to_bits() as i32;
        b ^ ((((b >> 31) as u32) >> 1) as i32)
    };
    keys.clear();
    keys.extend(p.iter().filter(|v| v.is_finite()).map(|&v| key(v)));
    if keys.is_empty() {
        return (f32::NAN, f32::NAN);
    }
    let n = keys.len();
    let (lo, hi) = (rank(n, params.lower_pct), rank(n, params.upper_pct));
    let upper = *keys.select_nth_unstable(hi).1;
    // The `hi` values before the upper edge are the smallest: the lower one is among them.
    let lower = if lo < hi {
        *keys[..hi].select_nth_unstable(lo).1
    } else {
        upper
    };
    // The key is its own inverse.
    let value = |k: i32| f32::from_bits(key(f32::from_bits(k as u32)) as u32);
    (value(lower), value(upper))
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
