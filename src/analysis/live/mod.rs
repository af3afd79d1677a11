//! Live blink removal (`ede live`): a `Source` (a recording played at its pace, or an LSL
//! stream) hands chunks to `dsp::blink::stream::Streamer`, and every hop's processing time and
//! latency are measured. Latency is from the arrival of a hop's first sample (the time its
//! chunk was handed over) to the moment the hop came out cleaned: one hop of waiting plus the
//! processing. Samples a source lost are filled (`source::gap_fill`) so that time goes on
//! across the gap, and reported; so are stalls. The session may be recorded as it plays
//! (`record`). `play` is the headless session; `player` is the Live tab's, a thread the view
//! commands (play, pause, step, seek, record) and reads what it made from.

pub mod lsl;
pub mod player;
pub mod record;
pub mod source;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use nalgebra::DMatrix;
use serde::Serialize;

use super::blink::{
    BlinkJobError, BlinkTimes, DeblinkOptions, Deblinker, PIPELINE_MAX_ITER, SHOWN_COMPONENTS,
    blink_times,
};
use crate::dsp::blink::stream::{Hop, StreamParams, Streamer};
use crate::dsp::blink::{Blink, Channels, IcaFn};
use crate::dsp::ica::{Ica, IcaError, Observations};
use record::{RecordReport, SessionRecorder};
use source::{Event, Source, gap_fill};

/// FastICA's iteration limit per hop. Each hop starts from the last hop's unmixing matrix, so
/// the estimate goes on converging across hops; the first window, which starts cold, gets the
/// batch's `PIPELINE_MAX_ITER` (`LiveOptions::hop_ica`). With that cold start, on the EEGLAB
/// sample (32 channels, 20 s windows, 1 s hops) 30, 15, 10, 5 and 3 iterations per hop left
/// 8.1, 6.4, 8.1, 8.5 and 8.3 % of FPz's blink height and changed O1/Oz/O2 by 0.00 % outside
/// blinks; without it (every window limited alike) 10 iterations had changed them by 1.7 %.
/// 10 keeps a margin and costs a third of 30.
pub const LIVE_MAX_ITER: usize = 10;

/// Live mode fits each window's unmixing on at most this many samples (`DeblinkOptions::
/// fit_samples`): a 20 s window at 128 Hz whole, every 4th sample at 512 Hz.
pub const LIVE_FIT_SAMPLES: usize = 2560;

/// How a recording is played into the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveOptions {
    pub deblink: DeblinkOptions,
    pub hop_s: f64,
    pub lookahead_s: f64,
    /// Times real time; `None` for as fast as the pipeline goes.
    pub speed: Option<f64>,
    /// Seconds of the stream to play (until the source ends when `None`).
    pub duration_s: Option<f64>,
    /// Seconds of signal per chunk handed to the pipeline (an acquisition device's packets).
    pub chunk_s: f64,
    /// Where to record the session (EDF+ or BDF+), if anywhere.
    pub record: Option<PathBuf>,
    /// Keep the original and cleaned signal in the `Session` (off for long unattended runs,
    /// which record to a file instead).
    pub keep_signal: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        let mut deblink = DeblinkOptions::default();
        deblink.fastica.max_iter = LIVE_MAX_ITER;
        deblink.fit_samples = Some(LIVE_FIT_SAMPLES);
        deblink.source_rows = Some(0);
        LiveOptions {
            deblink,
            hop_s: 1.0,
            lookahead_s: crate::dsp::blink::stream::DEFAULT_LOOKAHEAD_S,
            speed: None,
            duration_s: None,
            chunk_s: 1.0 / 32.0,
            record: None,
            keep_signal: true,
        }
    }
}

impl LiveOptions {
    /// One hop's ICA of window `x`: from `warm` (the last hop's unmixing) with the per-hop
    /// iteration limit; the first window, which starts cold, gets the batch's
    /// `PIPELINE_MAX_ITER`, so that the hops after it start from a converged estimate.
    pub fn hop_ica(
        &self,
        deblinker: &mut Deblinker,
        x: &Observations,
        warm: Option<&DMatrix<f64>>,
    ) -> Result<Ica, IcaError> {
        if warm.is_none() && self.deblink.fastica.max_iter < PIPELINE_MAX_ITER {
            let mut cold = self.deblink.clone();
            cold.fastica.max_iter = PIPELINE_MAX_ITER;
            return deblinker.ica(&cold, x, None);
        }
        deblinker.ica(&self.deblink, x, warm)
    }

    pub fn stream_params(&self) -> StreamParams {
        StreamParams {
            blink: self.deblink.params,
            hop_s: self.hop_s,
            lookahead_s: self.lookahead_s,
            shown_sources: Some(SHOWN_COMPONENTS),
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
    /// The blinks the stream's field was fitted on (`Hop::field_blinks`).
    pub field_blinks: Option<usize>,
    pub error: Option<String>,
}

/// Samples a source lost, filled so that the stream's time goes on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapReport {
    /// Seconds from the session's start to the first lost sample.
    pub at_s: f64,
    pub samples: u64,
}

/// A stretch with nothing arriving.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StallReport {
    /// Seconds of stream time at which it began.
    pub at_s: f64,
    /// Seconds of wall-clock time until samples came again (to the end if they never did).
    pub lasted_s: f64,
}

/// What `ede live` writes.
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    pub source: String,
    pub channels: Vec<String>,
    pub fs: f64,
    pub options: LiveOptions,
    pub samples_in: u64,
    pub samples_out: u64,
    /// Samples the source lost (a recording played from a file loses none); each gap is also in
    /// `gaps` and, when recording, an annotation.
    pub dropped_samples: u64,
    pub gaps: Vec<GapReport>,
    pub stalls: Vec<StallReport>,
    /// Why the source ended, if it failed.
    pub source_error: Option<String>,
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
    pub record: Option<RecordReport>,
}

/// A finished session: the report, and the original and cleaned signal as they came out (empty
/// unless `LiveOptions::keep_signal`).
pub struct Session {
    pub report: LiveReport,
    pub original: Observations,
    pub cleaned: Observations,
    pub blinks: Vec<Blink>,
}

/// What the session has done so far, hop by hop.
struct Tally<'a> {
    opts: &'a LiveOptions,
    fs: f64,
    t0: Instant,
    original: Vec<Vec<f32>>,
    cleaned: Vec<Vec<f32>>,
    blinks: Vec<Blink>,
    hops: Vec<HopReport>,
    samples_out: u64,
    recorder: Option<SessionRecorder>,
    /// Gaps and stalls waiting for the recorder, which starts with the first hop.
    notes: Vec<Note>,
}

impl Tally<'_> {
    fn hop(
        &mut self,
        hop: &Hop,
        (processing, latency): (f64, f64),
        source: &dyn Source,
        channels: &Channels,
    ) -> Result<(), BlinkJobError> {
        if self.opts.keep_signal {
            for c in 0..hop.original.rows {
                self.original[c].extend_from_slice(hop.original.row(c));
                self.cleaned[c].extend_from_slice(hop.cleaned.row(c));
            }
        }
        self.samples_out += hop.cleaned.cols as u64;
        self.blinks.extend_from_slice(&hop.blinks);
        let fs = self.fs;
        self.hops.push(HopReport {
            start_s: hop.start as f64 / fs,
            duration_s: hop.cleaned.cols as f64 / fs,
            window_start_s: hop.window_start as f64 / fs,
            window_s: hop.window_len as f64 / fs,
            processing_s: processing,
            latency_s: latency,
            candidates: hop.candidates,
            components_removed: hop.removed.clone(),
            iterations: hop.iterations,
            converged: hop.converged,
            blinks: hop.blinks.len(),
            field_blinks: hop.field_blinks,
            error: hop.error.clone(),
        });
        if let Some(path) = &self.opts.record
            && self.recorder.is_none()
        {
            let protect = std::path::Path::new(&source.meta().name);
            self.recorder = Some(SessionRecorder::create(
                path,
                source.meta(),
                &channels.keep,
                hop,
                Some(protect),
            )?);
        }
        if let Some(r) = &mut self.recorder {
            for note in self.notes.drain(..) {
                r.event(&note);
            }
            r.hop(hop)?;
        }
        Ok(())
    }

    fn note(&mut self, note: Note) {
        match &mut self.recorder {
            Some(r) => r.event(&note),
            None => self.notes.push(note),
        }
    }
}

/// Something a pull from the source brought besides samples.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// `samples` were lost from stream sample `at` on (filled, so time goes on).
    Gap { at: u64, samples: u64 },
    /// Nothing has arrived for a while, from stream sample `at`.
    Stalled { at: u64 },
    /// Samples arrive again after a stall.
    Resumed,
    /// The source has ended, and why if it failed.
    Ended(Option<String>),
}

/// What one pull gave: the hops it completed (each took `processing_s`), each hop's latency
/// (seconds from the arrival of its first sample to now, when it came out cleaned), and what
/// else happened.
pub struct Pulled {
    pub hops: Vec<Hop>,
    pub latencies: Vec<f64>,
    pub processing_s: f64,
    pub note: Option<Note>,
}

/// The source side of a live session, shared by `play` (headless) and the Live tab: pulls a
/// source's events into a `Streamer`, filling gaps and noting stalls.
pub struct Feed {
    pub streamer: Streamer,
    pub channels: Channels,
    /// Each channel's last sample (what a gap is filled with).
    last: Vec<f32>,
    stalled: bool,
    /// Samples to play at most.
    limit: Option<u64>,
    /// When each chunk was handed over (its first sample, the instant), back to the oldest
    /// sample not yet emitted.
    arrivals: VecDeque<(u64, Instant)>,
    /// Seconds spent on pushes since the last hop came out (a hop's processing is the time
    /// since the one before, less the waits for the source).
    spent_s: f64,
}

impl Feed {
    pub fn new(meta: &source::StreamMeta, opts: &LiveOptions) -> Result<Self, BlinkJobError> {
        let d = &opts.deblink;
        let channels = Channels::resolve(
            &meta.labels,
            Some(&meta.eog),
            d.detect.as_deref(),
            d.keep.as_deref(),
        )?;
        let streamer = Streamer::new(meta.fs, channels.clone(), opts.stream_params())?;
        Ok(Feed {
            streamer,
            channels,
            last: vec![0.0; meta.labels.len()],
            stalled: false,
            limit: opts.duration_s.map(|d| (d * meta.fs).round() as u64),
            arrivals: VecDeque::new(),
            spent_s: 0.0,
        })
    }

    /// Whether the samples asked for have all come.
    pub fn done(&self) -> bool {
        self.limit.is_some_and(|t| self.streamer.received() >= t)
    }

    /// Takes the source's next event into the pipeline.
    pub fn pull(&mut self, source: &mut dyn Source, ica: &mut IcaFn<'_>) -> Pulled {
        let at = self.streamer.received();
        let room = self.limit.map_or(u64::MAX, |t| t.saturating_sub(at));
        let mut note = None;
        let chunk = match source.next() {
            Event::Samples(x) => {
                if std::mem::take(&mut self.stalled) {
                    note = Some(Note::Resumed);
                }
                let n = (x.cols as u64).min(room) as usize;
                if n < x.cols { x.block(x.rows, 0..n) } else { x }
            }
            Event::Gap(samples) => {
                note = Some(Note::Gap { at, samples });
                gap_fill(&self.last, samples.min(room) as usize)
            }
            Event::Stalled => {
                self.stalled = true;
                note = Some(Note::Stalled { at });
                Observations::new(self.last.len(), 0, Vec::new())
            }
            Event::Ended(why) => {
                note = Some(Note::Ended(why));
                Observations::new(self.last.len(), 0, Vec::new())
            }
        };
        if chunk.cols == 0 {
            return Pulled {
                hops: Vec::new(),
                latencies: Vec::new(),
                processing_s: 0.0,
                note,
            };
        }
        for (c, v) in self.last.iter_mut().enumerate() {
            *v = chunk.row(c)[chunk.cols - 1];
        }
        self.arrivals.push_back((at, Instant::now()));
        let started = Instant::now();
        self.streamer.set_overlap(source.unpaced());
        let hops = self.streamer.push(&chunk, ica);
        Pulled {
            processing_s: self.spent(started, hops.len()),
            latencies: self.latencies(&hops),
            hops,
            note,
        }
    }

    /// The rest once the stream has ended: the hops still due, the seconds each took and
    /// their latencies.
    pub fn finish(&mut self, ica: &mut IcaFn<'_>) -> Pulled {
        let started = Instant::now();
        let hops = self.streamer.finish(ica);
        Pulled {
            processing_s: self.spent(started, hops.len()),
            latencies: self.latencies(&hops),
            hops,
            note: None,
        }
    }

    /// Each of `hops` hops' share of the time since `started` and of the pushes before it
    /// that gave none.
    fn spent(&mut self, started: Instant, hops: usize) -> f64 {
        self.spent_s += started.elapsed().as_secs_f64();
        if hops == 0 {
            return 0.0;
        }
        std::mem::take(&mut self.spent_s) / hops as f64
    }

    /// Each hop's latency, then forgets the arrivals of samples already emitted.
    fn latencies(&mut self, hops: &[Hop]) -> Vec<f64> {
        let latencies = (hops.iter())
            .map(|hop| {
                (self.arrivals.iter())
                    .rev()
                    .find(|(at, _)| *at <= hop.start)
                    .map_or(0.0, |a| a.1.elapsed().as_secs_f64())
            })
            .collect();
        if let Some(last) = hops.last() {
            let emitted = last.start + last.cleaned.cols as u64;
            while self.arrivals.len() > 1 && self.arrivals[1].0 <= emitted {
                self.arrivals.pop_front();
            }
        }
        latencies
    }
}

/// Plays `source` through the streaming pipeline. `on_hop` sees each hop as it comes out and
/// stops the session by returning false; parameters may change through the `Streamer` it is
/// handed, from the next hop on.
pub fn play(
    source: &mut dyn Source,
    opts: &LiveOptions,
    deblinker: &mut Deblinker<'_>,
    on_hop: &mut dyn FnMut(&Hop, &mut Streamer) -> bool,
) -> Result<Session, BlinkJobError> {
    let meta = source.meta().clone();
    let fs = meta.fs;
    let rows = meta.labels.len();
    let mut feed = Feed::new(&meta, opts)?;
    let mut ica =
        |obs: &Observations, warm: Option<&DMatrix<f64>>| opts.hop_ica(deblinker, obs, warm);
    let mut tally = Tally {
        opts,
        fs,
        t0: Instant::now(),
        original: vec![Vec::new(); rows],
        cleaned: vec![Vec::new(); rows],
        blinks: Vec::new(),
        hops: Vec::new(),
        samples_out: 0,
        recorder: None,
        notes: Vec::new(),
    };
    let mut gaps = Vec::new();
    let mut stalls: Vec<StallReport> = Vec::new();
    let mut stalled: Option<Instant> = None;
    let mut source_error = None;
    let mut stopped = false;
    while !stopped && !feed.done() {
        let pulled = feed.pull(source, &mut ica);
        match pulled.note {
            Some(Note::Gap { at, samples }) => {
                gaps.push(GapReport {
                    at_s: at as f64 / fs,
                    samples,
                });
                tally.note(Note::Gap { at, samples });
            }
            Some(Note::Stalled { at }) => {
                stalled = Some(Instant::now());
                stalls.push(StallReport {
                    at_s: at as f64 / fs,
                    lasted_s: 0.0,
                });
                tally.note(Note::Stalled { at });
            }
            Some(Note::Resumed) => {
                if let (Some(since), Some(s)) = (stalled.take(), stalls.last_mut()) {
                    s.lasted_s = since.elapsed().as_secs_f64();
                }
            }
            Some(Note::Ended(why)) => {
                source_error = why;
                break;
            }
            None => {}
        }
        for (hop, &latency) in pulled.hops.iter().zip(&pulled.latencies) {
            tally.hop(hop, (pulled.processing_s, latency), source, &feed.channels)?;
            stopped |= !on_hop(hop, &mut feed.streamer);
        }
    }
    if let (Some(since), Some(s)) = (stalled, stalls.last_mut()) {
        s.lasted_s = since.elapsed().as_secs_f64();
    }
    let rest = feed.finish(&mut ica);
    for (hop, &latency) in rest.hops.iter().zip(&rest.latencies) {
        tally.hop(hop, (rest.processing_s, latency), source, &feed.channels)?;
        on_hop(hop, &mut feed.streamer);
    }
    let streamer = &feed.streamer;
    let record = tally.recorder.take().map(|r| r.finish()).transpose()?;
    let elapsed_s = tally.t0.elapsed().as_secs_f64();
    let hops = tally.hops;
    let mut processing: Vec<f64> = hops.iter().map(|h| h.processing_s).collect();
    processing.sort_by(f64::total_cmp);
    let busy: f64 = processing.iter().sum();
    let played = tally.samples_out as f64 / fs;
    // At full speed nothing is late: the next chunk waits for the pipeline.
    let speed = opts.speed.unwrap_or(f64::INFINITY);
    let report = LiveReport {
        source: meta.name.clone(),
        channels: meta.labels.clone(),
        fs,
        options: opts.clone(),
        samples_in: streamer.received(),
        samples_out: tally.samples_out,
        dropped_samples: gaps.iter().map(|g: &GapReport| g.samples).sum(),
        gaps,
        stalls,
        source_error,
        blinks: blink_times(&tally.blinks, fs),
        late_hops: hops
            .iter()
            .filter(|h| speed.is_finite() && h.processing_s > h.duration_s / speed)
            .count(),
        median_processing_s: processing.get(processing.len() / 2).copied().unwrap_or(0.0),
        max_processing_s: processing.last().copied().unwrap_or(0.0),
        real_time_factor: played / busy.max(1e-12),
        hops,
        elapsed_s,
        record,
    };
    Ok(Session {
        report,
        original: Observations::from_rows(&tally.original),
        cleaned: Observations::from_rows(&tally.cleaned),
        blinks: tally.blinks,
    })
}
