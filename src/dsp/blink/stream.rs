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
//! this window found it, and a blink whose fall has not arrived cannot be told from the start
//! of an eye movement (`classify`), so it is left alone. The lookahead closes that gap at the
//! cost of latency: half a second by default (`DEFAULT_LOOKAHEAD_S`).
//!
//! The first output waits for the first full window (the window's length is `BlinkParams`'s,
//! lengthened for many channels as in the batch), then covers everything before it. A change
//! of parameters (`set_params`) applies from the next hop on: the hop in flight finishes with
//! the old ones. A window shorter than the new length, after a change, uses what is kept.
//!
//! Where the samples come faster than real time (`set_overlap`: a recording played at maximum
//! speed), a hop's steps 3-4 (`finish_window`) run on a thread of their own, at the lowest
//! priority, beside the next window's fit: the fit's symmetric decorrelations leave a core
//! idle. Each hop then comes out when the next one's fit is done, with the same result. A
//! change of parameters made when a hop comes out still applies from the next hop: its fit,
//! already done with the old ones, is redone.
//!
//! Where the eye's whole activity goes, its windows hold minutes; a hop refits only every
//! `EVERYWHERE_REFIT` of the window (and, while the windows grow, where an eye event peaks in
//! it), and the hops between are cleaned by the last refit's removal (`Everywhere`). The fit
//! after such a refit waits for it to finish, overlapping or not, so that both clean the same.

use std::collections::VecDeque;
use std::sync::mpsc;

use nalgebra::DMatrix;

use super::pooled::{self, BlinkField, FieldSums};
use super::{
    Blink, BlinkError, BlinkParams, Channels, Everywhere, EyeEvent, FittedWindow, IcaFn, classify,
    finish_window, fit_window, judged_elsewhere, removable,
};
use crate::dsp::ica::{Ica, Observations};

/// How a stream is cut: the window and its parameters, the hop and the lookahead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamParams {
    pub blink: BlinkParams,
    /// Seconds between refits; each emits this much cleaned signal.
    pub hop_s: f64,
    /// Seconds a hop waits after its end before it is cleaned (0: the newest hop).
    pub lookahead_s: f64,
    /// Each hop's ICA carries the sources of at least this many leading components over its
    /// window (what a view draws), unmixed when the hop finishes; `None`: those the ICA kept.
    pub shown_sources: Option<usize>,
}

/// The default lookahead, seconds: a blink peaking in the emitted hop has at least this much
/// after it in the window, enough for `classify` to see it come back down (a blink is at most
/// 0.35 s wide at half height) and to read the level after it.
pub const DEFAULT_LOOKAHEAD_S: f64 = 0.5;

impl Default for StreamParams {
    fn default() -> Self {
        StreamParams {
            blink: BlinkParams::default(),
            hop_s: 1.0,
            lookahead_s: DEFAULT_LOOKAHEAD_S,
            shown_sources: None,
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
    /// The eye events peaking in it that were left alone (eye movements, closures, uncertain
    /// ones), with their class.
    pub left_alone: Vec<EyeEvent>,
    /// The window its eye events were found in: between refits of a removal that goes
    /// everywhere, a blink removal's short window (the removal is the last refit's).
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
    /// The blinks the pooled field that cleaned it was fitted on (none where the windows'
    /// own components did, or the eye's whole activity goes): a field of fewer than
    /// `pooled::SETTLED_BLINKS` is still settling.
    pub field_blinks: Option<usize>,
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
    /// The blink field's sums over the hops so far (`pooled`), and the last field used.
    sums: FieldSums,
    field: Option<BlinkField>,
    /// Where the removal goes everywhere: the last refit's removal with its parameters, and
    /// where the next refit's window ends (see `EVERYWHERE_REFIT`).
    standing: Option<(StreamParams, (Everywhere, usize))>,
    refit_at: u64,
    /// The hop finishing refits such a removal: the next fit waits for it, overlapping or
    /// not, so that both clean the next hop with it.
    refit_in_flight: bool,
    /// Finish each hop beside the next one's fit (see the module's notes).
    overlap: bool,
    /// The next hop, fitted and not yet finishing.
    fitted: Option<Fitting>,
    /// The hop finishing.
    finishing: Option<Finishing>,
    /// The low-priority thread hops finish on when they overlap.
    finisher: Option<rayon::ThreadPool>,
}

/// A hop's window with its steps 1-2 done.
struct Fitting {
    end: u64,
    upto: u64,
    params: StreamParams,
    from: u64,
    x: Observations,
    fit: Result<FittedWindow, String>,
    /// The standing removal that cleans this hop, where it runs no ICA of its own.
    standing: Option<Everywhere>,
}

/// A hop with its steps 3-4 done or under way: the hop, the topographies its window removed
/// (`None` where it ran no ICA), what it adds to the field's sums, the field it used, and,
/// where it refitted a removal that goes everywhere, that removal (`Some(None)`: none).
struct Finished {
    hop: Hop,
    known: Option<Vec<Vec<f64>>>,
    sums: Option<FieldSums>,
    field: Option<BlinkField>,
    refit: Option<Option<(StreamParams, (Everywhere, usize))>>,
}

impl Finished {
    /// A hop that leaves the stream's state as it was (no ICA of its own).
    fn alone(hop: Hop) -> Self {
        Finished {
            hop,
            known: None,
            sums: None,
            field: None,
            refit: None,
        }
    }
}

enum Finishing {
    Done(Box<Finished>),
    Beside(mpsc::Receiver<Finished>),
}

impl Streamer {
    pub fn new(fs: f64, channels: Channels, params: StreamParams) -> Result<Self, BlinkError> {
        let n = channels.labels.len();
        validate(&params, n, fs)?;
        let window = first_window_len(&params, n, fs);
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
            sums: FieldSums::new(n),
            field: None,
            standing: None,
            refit_at: 0,
            refit_in_flight: false,
            overlap: false,
            fitted: None,
            finishing: None,
            finisher: None,
        })
    }

    /// Whether each hop finishes beside the next one's fit: for samples that come faster than
    /// real time (a hop then comes out one fit later; the paced and live ones at once).
    pub fn set_overlap(&mut self, overlap: bool) {
        self.overlap = overlap;
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
        // Overlapping, one hop at a time: the caller may change the parameters before the
        // next one commits.
        self.advance(ica, self.overlap)
    }

    /// The rest of the stream, once it has ended: the hops due, then one last window ending at
    /// the last sample.
    pub fn finish(&mut self, ica: &mut IcaFn<'_>) -> Vec<Hop> {
        let mut hops = self.advance(ica, false);
        hops.extend(self.join());
        if self.emitted < self.received {
            let f = self.fit(self.received, self.received, ica);
            self.commit(f, ica);
            hops.extend(self.join());
        }
        hops
    }

    fn lookahead(&self) -> u64 {
        (self.params.lookahead_s * self.fs).round() as u64
    }

    /// Fits and finishes the hops whose windows have come, at most one when `one`.
    fn advance(&mut self, ica: &mut IcaFn<'_>, one: bool) -> Vec<Hop> {
        let mut hops = Vec::new();
        loop {
            if let Some(f) = self.fitted.take() {
                self.commit(f, ica);
            }
            if !self.overlap {
                hops.extend(self.join());
            }
            if self.received < self.next_end {
                return hops;
            }
            let end = self.next_end;
            let early = match self.refit_in_flight {
                true => self.join(),
                false => None,
            };
            let f = self.fit(end, end.saturating_sub(self.lookahead()), ica);
            let done = early.or_else(|| self.join());
            self.fitted = Some(f);
            if let Some(hop) = done {
                hops.push(hop);
                if one {
                    return hops;
                }
            }
        }
    }

    /// Steps 1-2 of the window ending at `end`, with the parameters the next hop will have.
    fn fit(&self, end: u64, upto: u64, ica: &mut IcaFn<'_>) -> Fitting {
        let params = self.next_params.unwrap_or(self.params);
        let n = self.channels.labels.len();
        let (fs, channels, p) = (self.fs, &self.channels, &params.blink);
        // Between refits of a removal that goes everywhere, the standing one cleans the hop,
        // and a window as long as a blink removal's finds the eye events to report. While the
        // windows grow, a hop with an eye event of its own is refitted (see
        // `EVERYWHERE_REFIT`).
        let full = window_len(&params, n, fs);
        let standing = (self.standing.as_ref())
            .filter(|(p, _)| *p == params && end < self.refit_at)
            .map(|(_, (standing, fitted_on))| (standing, *fitted_on < full));
        if let Some((standing, growing)) = standing {
            let (from, x) = self.window(end, first_window_len(&params, n, fs));
            let fit = FittedWindow::detected(&x, fs, channels, p);
            let out = (self.emitted.max(from) - from) as usize..(upto.max(from) - from) as usize;
            if !(growing && fit.removes_in(p, out)) {
                return Fitting {
                    end,
                    upto,
                    params,
                    from,
                    fit: Ok(fit),
                    x,
                    standing: Some(standing.clone()),
                };
            }
        }
        let (from, x) = self.window(end, full);
        let fit = fit_window(&x, fs, channels, p, ica, self.warm.as_ref(), false)
            .map_err(|e| e.to_string());
        Fitting {
            end,
            upto,
            params,
            from,
            x,
            fit,
            standing: None,
        }
    }

    /// The kept samples of the window of `len` samples ending at `end`, and where it starts.
    fn window(&self, end: u64, len: usize) -> (u64, Observations) {
        let from = end.saturating_sub(len as u64).max(self.kept_from);
        let len = (end - from) as usize;
        let at = (from - self.kept_from) as usize;
        let mut data = Vec::with_capacity(self.kept.len() * len);
        for k in &self.kept {
            data.extend(k.range(at..at + len));
        }
        (from, Observations::new(self.kept.len(), len, data))
    }

    /// Makes fitted hop `f` the stream's (refitted if the parameters changed since its fit)
    /// and starts its steps 3-4, which emit `emitted..upto`.
    fn commit(&mut self, f: Fitting, ica: &mut IcaFn<'_>) {
        debug_assert!(self.finishing.is_none(), "the last hop is joined first");
        if let Some(p) = self.next_params.take() {
            self.params = p;
        }
        let f = if f.params == self.params {
            f
        } else {
            self.fit(f.end, f.upto, ica)
        };
        if let Some(i) = f.fit.as_ref().ok().and_then(FittedWindow::ica) {
            self.warm = Some(i.unmixing.clone());
        }
        let (window, hop) = self.window_and_hop();
        let refits = f.standing.is_none() && self.params.blink.removes_everywhere();
        if refits {
            self.refit_at = f.end + (EVERYWHERE_REFIT * f.x.cols as f64).round() as u64;
        }
        self.refit_in_flight = refits;
        let out = (self.emitted - f.from) as usize..(f.upto.max(self.emitted) - f.from) as usize;
        let skeleton = Hop {
            start: self.emitted,
            original: f.x.block(f.x.rows, out.clone()),
            cleaned: Observations::new(0, 0, Vec::new()),
            blinks: Vec::new(),
            left_alone: Vec::new(),
            window_start: f.from,
            window_len: f.x.cols,
            candidates: 0,
            removed: Vec::new(),
            iterations: 0,
            converged: true,
            error: None,
            ica: None,
            field_blinks: None,
        };
        self.emitted = f.upto.max(self.emitted);
        self.next_end = f.end + hop as u64;
        // Keep what the next window (at its present length) and the next output need.
        let keep_from = (self.next_end.saturating_sub(window as u64)).min(self.emitted);
        if keep_from > self.kept_from {
            let drop = (keep_from - self.kept_from) as usize;
            for k in &mut self.kept {
                k.drain(..drop.min(k.len()));
            }
            self.kept_from = keep_from;
        }
        let (fs, channels, known) = (self.fs, self.channels.clone(), self.known.clone());
        let prior = (!self.params.blink.removes_everywhere()).then(|| self.sums.clone());
        let last = self.field.as_ref().map(|f| f.topography.clone());
        let job = move || finish_hop(skeleton, f, out, fs, &channels, &known, (prior, last));
        let beside = if self.overlap { self.finisher() } else { None };
        self.finishing = Some(match beside {
            Some(pool) => {
                let (tx, rx) = mpsc::sync_channel(1);
                pool.spawn(move || {
                    // The receiver is gone only where the stream was dropped meanwhile.
                    let _ = tx.send(job());
                });
                Finishing::Beside(rx)
            }
            _ => Finishing::Done(Box::new(job())),
        });
    }

    /// The pool hops finish on beside the next fit, started the first time it is asked for;
    /// `None` where no thread can be started (hops then finish in turn).
    fn finisher(&mut self) -> Option<&rayon::ThreadPool> {
        if self.finisher.is_none() {
            self.finisher = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "ede hop finisher".into())
                .start_handler(|_| lower_thread_priority(19))
                // A panic drops the job's sender: `join` reports it on the stream's thread.
                .panic_handler(|_| {})
                .build()
                .ok();
        }
        self.finisher.as_ref()
    }

    /// The hop last committed, once its steps 3-4 are done.
    fn join(&mut self) -> Option<Hop> {
        let done = match self.finishing.take()? {
            Finishing::Done(done) => *done,
            Finishing::Beside(rx) => rx.recv().expect("a hop's steps 3-4 panicked"),
        };
        // A window without candidates runs no ICA: what was known stays known.
        if let Some(known) = done.known {
            self.known = known;
        }
        if let Some(sums) = done.sums {
            self.sums.merge(&sums);
        }
        if done.field.is_some() {
            self.field = done.field;
        }
        if let Some(refit) = done.refit {
            self.standing = refit;
        }
        Some(done.hop)
    }
}

/// Steps 3-4 of fitted hop `f`, into `hop`: its samples `out` of the window cleaned. Where the
/// removal is the blinks' alone (`prior` given: the field's sums of the hops before), with the
/// field of the blinks so far and this hop's (`pooled`), turned as the `last` one used (else
/// by this window's blinks), once there are enough of them.
fn finish_hop(
    mut hop: Hop,
    f: Fitting,
    out: std::ops::Range<usize>,
    fs: f64,
    channels: &Channels,
    known: &[Vec<f64>],
    (prior, last): (Option<FieldSums>, Option<Vec<f64>>),
) -> Finished {
    let fit = match f.fit {
        Ok(fit) => fit,
        Err(e) => {
            hop.cleaned = hop.original.clone();
            hop.error = Some(e);
            return Finished::alone(hop);
        }
    };
    let p = &f.params.blink;
    let w = finish_window(&f.x, fs, channels, p, fit, known);
    let from = f.from as usize;
    if let Some(standing) = &f.standing {
        hop.cleaned = standing.clean(&hop.original);
        let (blinks, others): (Vec<EyeEvent>, Vec<EyeEvent>) = (w.events.iter())
            .filter(|e| out.contains(&e.span.peak))
            .map(|&e| EyeEvent {
                span: e.span.shifted(from),
                ..e
            })
            .partition(|e| removable(e.class, p));
        hop.blinks = blinks.iter().map(|e| e.span).collect();
        hop.left_alone = others;
        hop.candidates = w.events.len();
        return Finished::alone(hop);
    }
    let refit = p
        .removes_everywhere()
        .then(|| Everywhere::of(&w).map(|e| (f.params, (e, f.x.cols))));
    let known = w.ica.as_ref().map(|_| w.removed_topographies());
    let bands = (prior.as_ref()).map(|_| pooled::channel_bands_near(&f.x, out.clone(), p, fs));
    let spans: Vec<Blink> = (w.events.iter().map(|e| e.span))
        .chain(w.blinks.iter().copied())
        .collect();
    let others = judged_elsewhere(&w.events, p);
    let turned = |mut field: BlinkField, like: Option<&[f64]>| match like {
        Some(like) => {
            let dot: f64 = (field.topography.iter().zip(like))
                .map(|(a, b)| a * b)
                .sum();
            if dot < 0.0 {
                field.topography.iter_mut().for_each(|v| *v = -*v);
                field.filter.iter_mut().for_each(|v| *v = -*v);
            }
            Some(field)
        }
        None if !w.blinks.is_empty() => field.pointing_up(&f.x, &w.blinks),
        None => None,
    };
    // As the batch does (`pooled_removal`): the field with this window's blinks finds the
    // blinks on its source, and refitted over their cores it gives the source removed.
    let mut sums = None;
    let mut field = None;
    if let (Some(prior), Some(bands)) = (&prior, &bands) {
        let with = |blinks: &[Blink], spans: &[Blink]| {
            let mut add = FieldSums::new(f.x.rows);
            add.add((&f.x, bands), out.clone(), blinks, spans, fs);
            let mut all = prior.clone();
            all.merge(&add);
            (add, all.field())
        };
        let (add, first) = with(&w.blinks, &spans);
        sums = Some(add);
        if let Some(first) = first.and_then(|f| turned(f, last.as_deref())) {
            let (found, source) = pooled::found_on(&first, &f.x, (&w.blinks, &others), p, fs);
            let cores = pooled::cores(&found, &classify::smooth(&source, fs), fs);
            let spans: Vec<Blink> = spans.iter().chain(&found).copied().collect();
            let (add, refit) = with(&cores, &spans);
            sums = Some(add);
            field = refit
                .and_then(|r| turned(r, Some(&first.topography)))
                .or(Some(first));
        }
    }
    let mut blinks = w.blinks.clone();
    match &field {
        Some(field) => {
            let (found, masked, _) = pooled::removed(field, &f.x, (&w.blinks, &others), p, fs);
            let mut cleaned = hop.original.clone();
            for i in (0..channels.labels.len()).filter(|&i| !channels.keep[i]) {
                let a = field.topography[i] as f32;
                let row = &mut cleaned.data[i * out.len()..(i + 1) * out.len()];
                for (v, &m) in row.iter_mut().zip(&masked[out.clone()]) {
                    *v -= a * m;
                }
            }
            hop.cleaned = cleaned;
            hop.field_blinks = Some((prior.iter().chain(&sums)).map(|s| s.blinks).sum());
            blinks = found;
        }
        None => hop.cleaned = w.clean(&f.x, out.clone()),
    }
    let removes = |span: &Blink| match &field {
        Some(_) => blinks.iter().any(|b| b.overlaps(span)),
        None => w.removes(span),
    };
    hop.left_alone = (w.events.iter())
        .filter(|e| out.contains(&e.span.peak) && !removes(&e.span))
        .map(|&e| EyeEvent {
            span: e.span.shifted(from),
            ..e
        })
        .collect();
    hop.blinks = (blinks.iter())
        .filter(|b| out.contains(&b.peak))
        .map(|b| b.shifted(from))
        .collect();
    hop.candidates = w.events.len();
    hop.iterations = w.iterations();
    hop.converged = w.converged();
    hop.removed = w.removed;
    hop.ica = match (w.ica, f.params.shown_sources) {
        (Some(ica), Some(rows)) => Some(ica.with_leading_sources(&f.x, rows)),
        (ica, _) => ica,
    };
    Finished {
        hop,
        known,
        sums,
        field,
        refit,
    }
}

/// Lowers the calling thread's priority to `nice` (Linux keeps one per thread), so that other
/// threads win a contended core.
pub fn lower_thread_priority(nice: i32) {
    // SAFETY: setpriority with PRIO_PROCESS and 0 changes only the calling thread's nice
    // value; its failure leaves the priority as it was.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// A removal that goes everywhere is refitted when the stream has moved on by this fraction of
/// its window (10 s of 240 s), and the hops between are cleaned by the last fit
/// (`Everywhere`). Those windows hold minutes (30 n^2 samples), which a hop moves by a second:
/// refitting every hop took a 64 x 512 Hz stream to 106 ms a hop (9x real time), mostly passes
/// over the whole window. Measured on the EEGLAB sample played twice, over its second pass:
/// FPz's blink-locked residual 7.8 % against 8.2 % refitting every hop, O1/Oz/O2 changed by
/// 1.84 % against 1.97 %.
///
/// While the windows grow from the first 20 s, a hop in which an eye event peaks is refitted
/// too: a fit of few blinks moves with each new one. On the EEGLAB sample started at 0, 10,
/// 20, 30 and 40 s (its windows grow throughout), FPz's blink-locked residual averaged 9.55 %
/// this way against 9.71 % refitting every hop, and O1/Oz/O2 changed by 3.91 % against 4.12 %;
/// refitting every 1/24 alone had left 10.84 % (started at 0-40 s). The 64 x 512 Hz stream's
/// growing hops took 17 ms on the mean against 59-65 ms refitting every hop.
pub const EVERYWHERE_REFIT: f64 = 1.0 / 24.0;

fn window_len(p: &StreamParams, channels: usize, fs: f64) -> usize {
    p.blink.window_samples(channels, fs, usize::MAX)
}

/// The first window's length: a stream that removes the eye's whole activity, whose windows
/// hold minutes (`BlinkParams::eye_samples_per_channel_sq`), starts when a blink removal's
/// window has come and lets its windows grow with the stream up to their length.
fn first_window_len(p: &StreamParams, channels: usize, fs: f64) -> usize {
    let blinks = BlinkParams {
        remove_eye_movements: false,
        ..p.blink
    };
    blinks.window_samples(channels, fs, usize::MAX)
}

fn hop_len(p: &StreamParams, fs: f64) -> usize {
    ((p.hop_s * fs).round() as usize).max(1)
}

fn validate(p: &StreamParams, channels: usize, fs: f64) -> Result<(), BlinkError> {
    p.blink.validate(fs)?;
    let window = first_window_len(p, channels, fs) as f64 / fs;
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
