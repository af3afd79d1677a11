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

use super::filter::{FilterChain, butter};

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

/// A channel's aEEG computed as its samples stream in, segment by segment.
pub struct Aeeg {
    params: AeegParams,
    segment: usize,
    bp: FilterChain,
    lp: FilterChain,
    /// The envelope of the current, partial segment.
    pending: Vec<f32>,
    /// `(lower, upper)` per whole segment so far, microvolts.
    pub edges: Vec<(f32, f32)>,
}

impl Aeeg {
    pub fn new(fs: f64, params: AeegParams) -> Result<Self, String> {
        let segment = params.segment_len(fs)?;
        let bp = butter(
            8,
            vec![params.band_hz.0, params.band_hz.1],
            Band::Bandpass,
            fs,
        );
        let lp = butter(4, vec![params.envelope_hz], Band::Lowpass, fs);
        Ok(Aeeg {
            params,
            segment,
            bp: FilterChain::new(bp),
            lp: FilterChain::new(lp),
            pending: Vec::with_capacity(segment),
            edges: Vec::new(),
        })
    }

    /// Takes the next samples (in microvolts; a gap's NaN samples pass through and are left
    /// out of the percentiles).
    pub fn push(&mut self, uv: &[f32]) {
        let mut rest = uv;
        while !rest.is_empty() {
            let take = (self.segment - self.pending.len()).min(rest.len());
            let from = self.pending.len();
            self.pending.extend_from_slice(&rest[..take]);
            envelope(&mut self.bp, &mut self.lp, &mut self.pending[from..]);
            rest = &rest[take..];
            if self.pending.len() == self.segment {
                let e = self.edges_of_pending();
                self.edges.push(e);
                self.pending.clear();
            }
        }
    }

    fn edges_of_pending(&mut self) -> (f32, f32) {
        let p = &mut self.pending;
        p.retain(|v| v.is_finite());
        if p.is_empty() {
            return (f32::NAN, f32::NAN);
        }
        let n = p.len();
        let (lo, hi) = (
            rank(n, self.params.lower_pct),
            rank(n, self.params.upper_pct),
        );
        let cmp = |a: &f32, b: &f32| a.total_cmp(b);
        let upper = *p.select_nth_unstable_by(hi, cmp).1;
        // The `hi` values before the upper edge are the smallest: the lower one is among them.
        let lower = if lo < hi {
            *p[..hi].select_nth_unstable_by(lo, cmp).1
        } else {
            upper
        };
        (lower, upper)
    }

    /// The margins: per `margin_segments` whole segments, the medians of their lower and upper
    /// edges (a last, partial group is left out, as EDFbrowser does).
    pub fn margins(&self) -> Vec<(f32, f32)> {
        margins(&self.edges, self.params.margin_segments)
    }
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
    let bp = butter(
        8,
        vec![params.band_hz.0, params.band_hz.1],
        Band::Bandpass,
        fs,
    );
    let lp = butter(4, vec![params.envelope_hz], Band::Lowpass, fs);
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
                let burst = if (t / 40.0) as usize % 2 == 0 {
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
        let p = AeegParams::default();
        let want = aeeg_reference(&x, fs, p);
        let mut a = Aeeg::new(fs, p).unwrap();
        for piece in x.chunks(1000 + 7) {
            a.push(piece);
        }
        assert_eq!(a.edges.len(), 20);
        for (g, w) in a.edges.iter().zip(&want) {
            assert!((g.0 - w.0).abs() <= 1e-3 * w.1 && (g.1 - w.1).abs() <= 1e-3 * w.1);
        }
        assert_eq!(a.margins().len(), 1);
    }

    #[test]
    fn a_sine_s_edges_bracket_its_rectified_mean() {
        // A 10 Hz sine of amplitude A: the doubled, smoothed rectified sine is near 4A/pi.
        let fs = 256.0;
        let x: Vec<f32> = (0..256 * 60)
            .map(|i| (20.0 * (2.0 * std::f64::consts::PI * 10.0 * i as f64 / fs).sin()) as f32)
            .collect();
        let mut a = Aeeg::new(fs, AeegParams::default()).unwrap();
        a.push(&x);
        let (lo, hi) = a.edges[3];
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
        let bad = |p: AeegParams| Aeeg::new(100.0, p).is_err();
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
