//! Blink removal on a stream (live mode): samples arrive in chunks of any size; every hop the
//! most recent window is refitted (warm-started from the previous window's unmixing matrix),
//! blinks are detected and confirmed as in `process_window`, and the newest hop comes out
//! cleaned by that window alone.
//!
//! How it differs from the batch `deblink`: there, overlapping windows vote on each sample
//! with sin^2 weights, which needs windows that end after the sample; here a sample is cleaned
//! by the first window that holds it `lookahead` seconds before the window's end, so it leaves
//! one hop (plus the lookahead) after it arrived. With no lookahead the newest hop sits at the
//! window's edge, where the wavelet band-pass sees only half of a blink that straddles the
//! hop's end: such a blink is cleaned in the next hop, and its first part in this one only if
//! this window found it. A lookahead of a few tenths of a second closes that gap at the cost of
//! latency.
//!
//! The first output waits for the first full window (the window's length is `BlinkParams`'s,
//! lengthened for many channels as in the batch), then covers everything before it. A change
//! of parameters (`set_params`) applies from the next hop on: the hop in flight finishes with
//! the old ones. A window shorter than the new length, after a change, uses what is kept.

use std::collections::VecDeque;

use nalgebra::DMatrix;

use super::{Blink, BlinkError, BlinkParams, Channels, IcaFn, Prior, process_window};
use crate::dsp::ica::{Ica, Observations};

/// How a stream is cut: the window and its parameters, the hop and the lookahead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamParams {
    pub blink: BlinkParams,
    /// Seconds between refits; each emits this much cleaned signal.
    pub hop_s: f64,
    /// Seconds a hop waits after its end before it is cleaned (0: the newest hop).
    pub lookahead_s: f64,
}

impl Default for StreamParams {
    fn default() -> Self {
        StreamParams {
            blink: BlinkParams::default(),
            hop_s: 1.0,
            lookahead_s: 0.0,
        }
    }
}

/// What one hop gave: `original` and `cleaned` (channels x samples) starting at absolute
/// sample `start`, the blinks that peak in it, and the window it came from.
#[derive(Debug, Clone)]
pub struct Hop {
    pub start: u64,
    pub original: Observations,
    pub cleaned: Observations,
    pub blinks: Vec<Blink>,
    pub window_start: u64,
    pub window_len: usize,
    pub candidates: usize,
    pub removed: Vec<usize>,
    pub iterations: usize,
    pub converged: bool,
    /// Why this hop went out uncleaned (an ICA that failed on it), if it did.
    pub error: Option<String>,
    /// The window's ICA (its sources span the whole window), for display.
    pub ica: Option<Ica>,
}

pub struct Streamer {
    fs: f64,
    channels: Channels,
    params: StreamParams,
    next_params: Option<StreamParams>,
    /// The most recent samples per channel; `kept[c][0]` is absolute sample `kept_from`.
    kept: Vec<VecDeque<f32>>,
    kept_from: u64,
    received: u64,
    /// The next sample to emit.
    emitted: u64,
    /// Where the next window ends.
    next_end: u64,
    warm: Option<DMatrix<f64>>,
    /// The topographies of the components the last window removed (tracked into the next).
    known: Vec<Vec<f64>>,
}

impl Streamer {
    pub fn new(fs: f64, channels: Channels, params: StreamParams) -> Result<Self, BlinkError> {
        let n = channels.labels.len();
        validate(&params, n, fs)?;
        let window = window_len(&params, n, fs);
        Ok(Streamer {
            fs,
            kept: vec![VecDeque::new(); n],
            channels,
            params,
            next_params: None,
            kept_from: 0,
            received: 0,
            emitted: 0,
            next_end: window as u64,
            warm: None,
            known: Vec::new(),
        })
    }

    pub fn params(&self) -> &StreamParams {
        self.next_params.as_ref().unwrap_or(&self.params)
    }

    /// New parameters, from the next hop on; the current ones stay if these are invalid.
    pub fn set_params(&mut self, params: StreamParams) -> Result<(), BlinkError> {
        validate(&params, self.channels.labels.len(), self.fs)?;
        self.next_params = Some(params);
        Ok(())
    }

    /// Samples received so far, per channel.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Samples emitted so far (cleaned), per channel.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// The window in samples and the hop in samples now in force.
    pub fn window_and_hop(&self) -> (usize, usize) {
        let p = &self.params;
        (
            window_len(p, self.channels.labels.len(), self.fs),
            hop_len(p, self.fs),
        )
    }

    /// Appends `chunk` (channels x samples) and returns the hops it completed.
    pub fn push(&mut self, chunk: &Observations, ica: &mut IcaFn<'_>) -> Vec<Hop> {
        assert_eq!(chunk.rows, self.kept.len(), "channels of a chunk");
        for (c, kept) in self.kept.iter_mut().enumerate() {
            kept.extend(chunk.row(c));
        }
        self.received += chunk.cols as u64;
        let mut hops = Vec::new();
        while self.received >= self.next_end {
            let end = self.next_end;
            let lookahead = self.lookahead();
            hops.push(self.hop(end, end.saturating_sub(lookahead), ica));
        }
        hops
    }

    /// The rest of the stream, once it has ended: one last window ending at the last sample.
    pub fn finish(&mut self, ica: &mut IcaFn<'_>) -> Option<Hop> {
        (self.emitted < self.received).then(|| self.hop(self.received, self.received, ica))
    }

    fn lookahead(&self) -> u64 {
        (self.params.lookahead_s * self.fs).round() as u64
    }

    /// Refits the window ending at `end` and emits `emitted..upto` from it.
    fn hop(&mut self, end: u64, upto: u64, ica: &mut IcaFn<'_>) -> Hop {
        if let Some(p) = self.next_params.take() {
            self.params = p;
        }
        let (window, hop) = self.window_and_hop();
        let from = end.saturating_sub(window as u64).max(self.kept_from);
        let len = (end - from) as usize;
        let at = (from - self.kept_from) as usize;
        let mut data = Vec::with_capacity(self.kept.len() * len);
        for k in &self.kept {
            data.extend(k.range(at..at + len));
        }
        let x = Observations::new(self.kept.len(), len, data);
        let out_from = (self.emitted - from) as usize;
        let out_to = (upto.max(self.emitted) - from) as usize;
        let mut h = Hop {
            start: self.emitted,
            original: x.block(x.rows, out_from..out_to),
            cleaned: x.block(x.rows, out_from..out_to),
            blinks: Vec::new(),
            window_start: from,
            window_len: len,
            candidates: 0,
            removed: Vec::new(),
            iterations: 0,
            converged: true,
            error: None,
            ica: None,
        };
        let prior = Prior {
            warm: self.warm.as_ref(),
            known: &self.known,
        };
        let p = &self.params.blink;
        match process_window(&x, self.fs, &self.channels, p, ica, prior, false) {
            Ok(w) => {
                // A window without candidates runs no ICA: what was known stays known.
                if let Some(i) = &w.ica {
                    self.warm = Some(i.unmixing.clone());
                    self.known = w.removed_topographies();
                }
                h.cleaned = w.clean(&x, out_from..out_to);
                h.blinks = (w.blinks.iter())
                    .filter(|b| (out_from..out_to).contains(&b.peak))
                    .map(|b| Blink {
                        peak: b.peak + from as usize,
                        start: b.start + from as usize,
                        end: b.end + from as usize,
                    })
                    .collect();
                h.candidates = w.candidates.len();
                h.iterations = w.iterations();
                h.converged = w.converged();
                h.removed = w.removed;
                h.ica = w.ica;
            }
            Err(e) => h.error = Some(e.to_string()),
        }
        self.emitted = upto.max(self.emitted);
        self.next_end = end + hop as u64;
        // Keep what the next window (at its present length) and the next output need.
        let keep_from = (self.next_end.saturating_sub(window as u64)).min(self.emitted);
        if keep_from > self.kept_from {
            let drop = (keep_from - self.kept_from) as usize;
            for k in &mut self.kept {
                k.drain(..drop.min(k.len()));
            }
            self.kept_from = keep_from;
        }
        h
    }
}

fn window_len(p: &StreamParams, channels: usize, fs: f64) -> usize {
    p.blink.window_samples(channels, fs, usize::MAX)
}

fn hop_len(p: &StreamParams, fs: f64) -> usize {
    ((p.hop_s * fs).round() as usize).max(1)
}

fn validate(p: &StreamParams, channels: usize, fs: f64) -> Result<(), BlinkError> {
    p.blink.validate(fs)?;
    let window = window_len(p, channels, fs) as f64 / fs;
    let bad = |m: String| Err(BlinkError::Params(m));
    if !(p.hop_s * fs >= 1.0 && p.hop_s <= window) {
        return bad(format!(
            "the hop must be within one sample and the window ({window:.1} s), got {} s",
            p.hop_s
        ));
    }
    if !(p.lookahead_s >= 0.0 && p.lookahead_s + p.hop_s <= window) {
        return bad(format!(
            "the lookahead must be within 0 and the window less the hop ({:.1} s), got {} s",
            window - p.hop_s,
            p.lookahead_s
        ));
    }
    Ok(())
}
