//! Live blink removal of a recording played as a stream (`ede live`): the samples are handed
//! to `dsp::blink::stream::Streamer` in small chunks, at the pace they were recorded times
//! `speed` (or as fast as the pipeline goes), and every hop's processing time and latency are
//! measured. Latency is from the arrival of a hop's first sample (the time its chunk was handed
//! over) to the moment the hop came out cleaned: one hop of waiting plus the processing.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use nalgebra::DMatrix;
use serde::Serialize;

use super::blink::{BlinkTimes, DeblinkOptions, Deblinker, EegData, blink_times};
use crate::dsp::blink::stream::{Hop, StreamParams, Streamer};
use crate::dsp::blink::{Blink, BlinkError};
use crate::dsp::ica::Observations;

/// FastICA's iteration limit per hop. Each hop starts from the last hop's unmixing matrix, so
/// the estimate goes on converging across hops: on the EEGLAB sample (32 channels, 20 s
/// windows, 1 s hops) 30 iterations per hop left 5.0 % of FPz's blink height at 18 ms a hop,
/// 200 left 8.3 % at 26 ms (the weak components wander further when let run), 10 changed
/// O1/Oz/O2 by 1.7 % outside blinks at 12 ms.
pub const LIVE_MAX_ITER: usize = 30;

/// How a recording is played into the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveOptions {
    pub deblink: DeblinkOptions,
    pub hop_s: f64,
    pub lookahead_s: f64,
    /// Times real time; `None` for as fast as the pipeline goes.
    pub speed: Option<f64>,
    /// Seconds of the recording to play (all when `None`).
    pub duration_s: Option<f64>,
    /// Seconds of signal per chunk handed to the pipeline (an acquisition device's packets).
    pub chunk_s: f64,
}

impl Default for LiveOptions {
    fn default() -> Self {
        let mut deblink = DeblinkOptions::default();
        deblink.fastica.max_iter = LIVE_MAX_ITER;
        LiveOptions {
            deblink,
            hop_s: 1.0,
            lookahead_s: 0.0,
            speed: None,
            duration_s: None,
            chunk_s: 1.0 / 32.0,
        }
    }
}

impl LiveOptions {
    pub fn stream_params(&self) -> StreamParams {
        StreamParams {
            blink: self.deblink.params,
            hop_s: self.hop_s,
            lookahead_s: self.lookahead_s,
        }
    }
}

/// One hop as the report gives it.
#[derive(Debug, Clone, Serialize)]
pub struct HopReport {
    pub start_s: f64,
    pub duration_s: f64,
    pub window_start_s: f64,
    pub window_s: f64,
    /// Seconds the pipeline spent on this hop.
    pub processing_s: f64,
    /// Seconds from the arrival of the hop's first sample to its cleaned output.
    pub latency_s: f64,
    pub candidates: usize,
    pub components_removed: Vec<usize>,
    pub iterations: usize,
    pub converged: bool,
    pub blinks: usize,
    pub error: Option<String>,
}

/// What `ede live` writes.
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    pub file: String,
    pub channels: Vec<String>,
    pub fs: f64,
    pub options: LiveOptions,
    pub samples_in: u64,
    pub samples_out: u64,
    /// Samples the source failed to deliver (a recording played from a file loses none).
    pub dropped_samples: u64,
    pub blinks: Vec<BlinkTimes>,
    pub hops: Vec<HopReport>,
    /// Hops whose processing took longer than the hop lasts at the playing speed: the pipeline
    /// fell behind there.
    pub late_hops: usize,
    pub median_processing_s: f64,
    pub max_processing_s: f64,
    /// Seconds of signal per second of processing (over the hops' processing times).
    pub real_time_factor: f64,
    pub elapsed_s: f64,
}

/// A finished session: the report, and the original and cleaned signal as they came out.
pub struct Session {
    pub report: LiveReport,
    pub original: Observations,
    pub cleaned: Observations,
    pub blinks: Vec<Blink>,
}

/// Plays `data` through the streaming pipeline. `on_hop` sees each hop as it comes out and
/// stops the session by returning false; parameters may change through the `Streamer` it is
/// handed, from the next hop on.
pub fn play(
    data: &EegData,
    opts: &LiveOptions,
    deblinker: &mut Deblinker<'_>,
    file: &str,
    on_hop: &mut dyn FnMut(&Hop, &mut Streamer) -> bool,
) -> Result<Session, BlinkError> {
    let fs = data.fs;
    let x = &data.data;
    let mut streamer = Streamer::new(fs, data.channels.clone(), opts.stream_params())?;
    let total = match opts.duration_s {
        Some(d) => ((d * fs).round() as usize).min(x.cols),
        None => x.cols,
    };
    let chunk = ((opts.chunk_s * fs).round() as usize).max(1);
    let mut ica =
        |obs: &Observations, warm: Option<&DMatrix<f64>>| deblinker.ica(&opts.deblink, obs, warm);
    let mut out_original = vec![Vec::with_capacity(total); x.rows];
    let mut out_cleaned = vec![Vec::with_capacity(total); x.rows];
    let mut blinks = Vec::new();
    let mut hops = Vec::new();
    // When each chunk was handed over: (its first sample, the instant).
    let mut arrivals: VecDeque<(u64, Instant)> = VecDeque::new();
    let t0 = Instant::now();
    let mut record = |hop: &Hop, processing: f64, arrivals: &VecDeque<(u64, Instant)>| {
        let arrived = (arrivals.iter())
            .rev()
            .find(|(s, _)| *s <= hop.start)
            .map_or(t0, |a| a.1);
        for c in 0..x.rows {
            out_original[c].extend_from_slice(hop.original.row(c));
            out_cleaned[c].extend_from_slice(hop.cleaned.row(c));
        }
        blinks.extend_from_slice(&hop.blinks);
        hops.push(HopReport {
            start_s: hop.start as f64 / fs,
            duration_s: hop.cleaned.cols as f64 / fs,
            window_start_s: hop.window_start as f64 / fs,
            window_s: hop.window_len as f64 / fs,
            processing_s: processing,
            latency_s: arrived.elapsed().as_secs_f64(),
            candidates: hop.candidates,
            components_removed: hop.removed.clone(),
            iterations: hop.iterations,
            converged: hop.converged,
            blinks: hop.blinks.len(),
            error: hop.error.clone(),
        });
    };
    let mut stopped = false;
    for from in (0..total).step_by(chunk) {
        let to = (from + chunk).min(total);
        if let Some(speed) = opts.speed {
            // The chunk is complete when its last sample has been recorded.
            let due = t0 + Duration::from_secs_f64(to as f64 / fs / speed);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        arrivals.push_back((from as u64, Instant::now()));
        let part = x.block(x.rows, from..to);
        let started = Instant::now();
        let done = streamer.push(&part, &mut ica);
        let processing = started.elapsed().as_secs_f64() / done.len().max(1) as f64;
        for hop in &done {
            record(hop, processing, &arrivals);
            if !on_hop(hop, &mut streamer) {
                stopped = true;
            }
        }
        while arrivals.len() > 1 && arrivals[1].0 <= streamer.emitted() {
            arrivals.pop_front();
        }
        if stopped {
            break;
        }
    }
    let started = Instant::now();
    if let Some(hop) = streamer.finish(&mut ica) {
        record(&hop, started.elapsed().as_secs_f64(), &arrivals);
        on_hop(&hop, &mut streamer);
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    let original = Observations::from_rows(&out_original);
    let cleaned = Observations::from_rows(&out_cleaned);
    let mut processing: Vec<f64> = hops.iter().map(|h| h.processing_s).collect();
    processing.sort_by(f64::total_cmp);
    let busy: f64 = processing.iter().sum();
    let played = cleaned.cols as f64 / fs;
    // At full speed nothing is late: the next chunk waits for the pipeline.
    let speed = opts.speed.unwrap_or(f64::INFINITY);
    let report = LiveReport {
        file: file.to_string(),
        channels: data.channels.labels.clone(),
        fs,
        options: opts.clone(),
        samples_in: streamer.received(),
        samples_out: cleaned.cols as u64,
        dropped_samples: 0,
        blinks: blink_times(&blinks, fs),
        late_hops: hops
            .iter()
            .filter(|h| speed.is_finite() && h.processing_s > h.duration_s / speed)
            .count(),
        median_processing_s: processing.get(processing.len() / 2).copied().unwrap_or(0.0),
        max_processing_s: processing.last().copied().unwrap_or(0.0),
        real_time_factor: played / busy.max(1e-12),
        hops,
        elapsed_s,
    };
    Ok(Session {
        report,
        original,
        cleaned,
        blinks,
    })
}
