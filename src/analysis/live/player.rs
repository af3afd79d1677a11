//! The Live tab's player (`app::live_view`): a thread of its own that plays the open
//! recording (from a sample, seekable) or an LSL stream through the blink removal pipeline hop
//! by hop (a `Feed`, as the headless `play` does), obeys the view's `Command`s between pulls,
//! records the session when told to, and keeps what the view draws in `Shared` (the last
//! `KEPT_S` seconds, blinks, gaps, the newest window's components, the meter). It knows nothing
//! of the interface: the view hands it a callback that asks for a repaint.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nalgebra::DMatrix;

use super::lsl::{InletOptions, LslSource};
use super::record::SessionRecorder;
use super::source::{FileSource, Source, StreamMeta};
use super::{Feed, LiveOptions, Note};
use crate::analysis::blink::{Deblinker, EegData};
use crate::dsp::blink::stream::{Hop, lower_thread_priority};
use crate::dsp::blink::{Blink, EyeEvent};
use crate::dsp::ica::{Ica, Observations};
use crate::gpu::GpuContext;
use crate::recording::Recording;

/// Seconds of signal kept for display.
pub const KEPT_S: f64 = 60.0;
/// Seconds of the newest signal the lane scales are taken from.
const SPREAD_S: f64 = 10.0;
/// Hops the meter averages over.
const METER_HOPS: usize = 20;

/// What the player thread is told.
pub enum Command {
    Play,
    Pause,
    Step,
    Speed(Option<f64>),
    Options(Box<LiveOptions>),
    Seek(f64),
    /// Start recording to this file from the next hop, or stop.
    Record(Option<PathBuf>),
}

/// Where the stream comes from.
#[derive(Clone)]
pub enum Input {
    /// The open recording, played from a sample on.
    Recording(Arc<EegData>, Arc<Recording>, u64),
    /// An LSL stream: its name or PROPERTY=VALUE.
    Lsl(String),
}

/// The newest window, for the components plot.
pub struct Window {
    pub ica: Ica,
    pub removed: Vec<usize>,
    pub start: u64,
}

/// What the player thread shares with the view.
#[derive(Default)]
pub struct Shared {
    /// The stream's name, channels and rate, once the source is open.
    pub meta: Option<StreamMeta>,
    /// Absolute sample of `original[c][0]` and `cleaned[c][0]`.
    pub start: u64,
    pub original: Vec<VecDeque<f32>>,
    pub cleaned: Vec<VecDeque<f32>>,
    pub blinks: VecDeque<Blink>,
    /// Eye events left alone (eye movements, closures, uncertain ones).
    pub left_alone: VecDeque<EyeEvent>,
    /// Samples the source lost (start, count), filled with the last value.
    pub gaps: VecDeque<(u64, u64)>,
    pub window: Option<Window>,
    /// The newest window (absolute first sample, length), with or without an ICA: what the
    /// other tabs follow.
    pub newest: Option<(u64, usize)>,
    /// Each channel's robust SD over the last `SPREAD_S` seconds: the lane scale, updated per
    /// hop rather than every frame.
    pub spread: Vec<f64>,
    pub processing: VecDeque<f64>,
    pub latency: VecDeque<f64>,
    pub hops: usize,
    /// The blinks of the newest hop's field (`Hop::field_blinks`).
    pub field_blinks: Option<usize>,
    pub late: usize,
    pub lost: u64,
    /// Samples received (the play position).
    pub received: u64,
    pub playing: bool,
    pub stalled: bool,
    pub ended: bool,
    /// The file being recorded, and what the last recording saved.
    pub recording: Option<String>,
    pub recorded: Option<String>,
    pub error: Option<String>,
}

impl Shared {
    fn clear(&mut self, channels: usize, at: u64) {
        *self = Shared {
            meta: self.meta.take(),
            start: at,
            original: vec![VecDeque::new(); channels],
            cleaned: vec![VecDeque::new(); channels],
            received: at,
            playing: self.playing,
            recorded: self.recorded.take(),
            ..Shared::default()
        };
    }

    /// Appends `hop`, whose sample numbers count from the recording's sample `origin` (where
    /// its stream began), with what the player made of it outside the lock.
    fn add(&mut self, hop: &Hop, origin: u64, meter: (f64, f64, bool), fs: f64, made: Made) {
        let (processing, latency, late) = meter;
        if self.original.iter().all(VecDeque::is_empty) {
            self.start = origin + hop.start;
        }
        for c in 0..self.original.len() {
            self.original[c].extend(hop.original.row(c));
            self.cleaned[c].extend(hop.cleaned.row(c));
        }
        let kept = (KEPT_S * fs) as usize;
        let len = self.original.first().map_or(0, VecDeque::len);
        if len > kept {
            let drop = len - kept;
            for c in 0..self.original.len() {
                self.original[c].drain(..drop);
                self.cleaned[c].drain(..drop);
            }
            self.start += drop as u64;
        }
        self.spread = made.spread;
        let at = origin as usize;
        self.blinks.extend(hop.blinks.iter().map(|b| b.shifted(at)));
        while (self.blinks.front()).is_some_and(|b| (b.end as u64) < self.start) {
            self.blinks.pop_front();
        }
        self.left_alone
            .extend(hop.left_alone.iter().map(|&e| EyeEvent {
                span: e.span.shifted(at),
                ..e
            }));
        while (self.left_alone.front()).is_some_and(|e| (e.span.end as u64) < self.start) {
            self.left_alone.pop_front();
        }
        while (self.gaps.front()).is_some_and(|g| g.0 + g.1 < self.start) {
            self.gaps.pop_front();
        }
        self.newest = Some((origin + hop.window_start, hop.window_len));
        if made.window.is_some() {
            self.window = made.window;
        }
        // The first hop is the first window, filled at once: not a hop of the meter.
        if self.hops > 0 {
            for (q, v) in [
                (&mut self.processing, processing),
                (&mut self.latency, latency),
            ] {
                q.push_back(v);
                if q.len() > METER_HOPS {
                    q.pop_front();
                }
            }
        }
        self.hops += 1;
        self.field_blinks = hop.field_blinks;
        self.late += usize::from(late);
        if let Some(e) = &hop.error {
            self.error = Some(e.clone());
        }
    }
}

/// What the player makes of a hop before it takes the lock the frames wait on: the lane
/// scales sort the last 10 s of every channel (64 x 5120 samples at 512 Hz), which a frame
/// would otherwise wait for.
struct Made {
    spread: Vec<f64>,
    window: Option<Window>,
}

/// An open source and the pipeline it feeds.
struct Session<'a> {
    source: Box<dyn Source + 'a>,
    feed: Feed,
    /// The recording's sample where the stream began (the streamer counts from 0).
    origin: u64,
    recorder: Option<SessionRecorder>,
    /// The last `SPREAD_S` seconds of each original channel, for the lanes' scale.
    recent: Vec<VecDeque<f32>>,
}

impl<'a> Session<'a> {
    /// The recording from sample `from` (its first window at once), or the LSL stream.
    fn open(input: &'a Input, from: u64, opts: &LiveOptions) -> Result<Self, String> {
        let bad = |e: crate::analysis::blink::BlinkJobError| e.to_string();
        let (source, feed, origin): (Box<dyn Source + 'a>, _, _) = match input {
            Input::Recording(data, rec, _) => {
                let from = from.min(data.data.cols.saturating_sub(1) as u64);
                let source = FileSource::new(data, Some(rec), opts).starting_at(from as usize);
                let feed = Feed::new(source.meta(), opts).map_err(bad)?;
                let (window, _) = feed.streamer.window_and_hop();
                (Box::new(source.unpaced(window)), feed, from)
            }
            Input::Lsl(query) => {
                let source = LslSource::resolve(query, InletOptions::default())?;
                let feed = Feed::new(source.meta(), opts).map_err(bad)?;
                (Box::new(source), feed, 0)
            }
        };
        let rows = source.meta().labels.len();
        Ok(Session {
            source,
            feed,
            origin,
            recorder: None,
            recent: vec![VecDeque::new(); rows],
        })
    }

    /// Each channel's robust SD over the last `SPREAD_S` seconds once `hop` is in, and its
    /// window's components (if it ran ICA).
    fn make(&mut self, hop: &Hop, fs: f64) -> Made {
        let kept = (SPREAD_S * fs) as usize;
        let spread = (self.recent.iter_mut().enumerate())
            .map(|(c, q)| {
                q.extend(hop.original.row(c));
                let drop = q.len().saturating_sub(kept);
                q.drain(..drop);
                let v: Vec<f32> = q.iter().copied().collect();
                crate::dsp::blink::detect::robust_sigma(&v).max(1e-9) as f64
            })
            .collect();
        let window = hop.ica.as_ref().map(|ica| Window {
            ica: ica.clone(),
            removed: hop.removed.clone(),
            start: self.origin + hop.window_start,
        });
        Made { spread, window }
    }

    /// Starts the same input over from sample `at` (a recording's seek); a recording of the
    /// session ends, since a file holds one continuous stretch.
    fn reopen(&mut self, input: &'a Input, at: u64, opts: &LiveOptions, shared: &Mutex<Shared>) {
        self.stop_recording(shared);
        match Session::open(input, at, opts) {
            Ok(s) => {
                *self = s;
                let rows = self.source.meta().labels.len();
                shared.lock().expect("live state").clear(rows, self.origin);
            }
            Err(e) => shared.lock().expect("live state").error = Some(e),
        }
    }

    /// Stops recording; says what was saved.
    fn stop_recording(&mut self, shared: &Mutex<Shared>) {
        let Some(r) = self.recorder.take() else {
            return;
        };
        let mut s = shared.lock().expect("live state");
        s.recording = None;
        match r.finish() {
            Ok(r) => {
                s.recorded = Some(format!(
                    "saved {} ({}, {:.1} s)",
                    r.path,
                    r.format,
                    r.samples as f64 / self.source.meta().fs
                ))
            }
            Err(e) => s.error = Some(e.to_string()),
        }
    }
}

/// The player: pulls the source into the pipeline at its pace, obeying `commands` between
/// pulls (so a hop in flight always finishes as it began), and records when told to.
/// `repaint` asks the view to draw again.
fn player(
    input: Input,
    mut opts: LiveOptions,
    gpu: Option<GpuContext>,
    shared: Arc<Mutex<Shared>>,
    commands: Receiver<Command>,
    repaint: impl Fn(),
) {
    let fail = |e: String| {
        shared.lock().expect("live state").error = Some(e);
        repaint();
    };
    let from = match &input {
        Input::Recording(_, _, from) => *from,
        Input::Lsl(_) => 0,
    };
    let file_input = matches!(input, Input::Recording(..));
    let mut session = match Session::open(&input, from, &opts) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    {
        let mut s = shared.lock().expect("live state");
        s.meta = Some(session.source.meta().clone());
        let rows = session.source.meta().labels.len();
        s.clear(rows, session.origin);
    }
    let fs = session.source.meta().fs;
    let mut deblinker = Deblinker::new(gpu.as_ref());
    let (mut playing, mut stepping) = (true, false);
    let mut record_to: Option<PathBuf> = None;
    loop {
        // The view is gone when its sender is: the player ends with it.
        let next = if playing || stepping {
            match commands.try_recv() {
                Err(TryRecvError::Disconnected) => break,
                next => next.ok(),
            }
        } else {
            match commands.recv_timeout(Duration::from_millis(100)) {
                Err(RecvTimeoutError::Disconnected) => break,
                next => next.ok(),
            }
        };
        let ended = shared.lock().expect("live state").ended;
        match next {
            Some(Command::Play) => {
                playing = true;
                // Play at the end of a recording starts over.
                if ended && file_input {
                    session.reopen(&input, 0, &opts, &shared);
                }
            }
            Some(Command::Pause) => playing = false,
            Some(Command::Step) => stepping = true,
            Some(Command::Speed(v)) => {
                opts.speed = v;
                session.source.set_speed(v);
            }
            Some(Command::Options(o)) => {
                if let Err(e) = session.feed.streamer.set_params(o.stream_params()) {
                    shared.lock().expect("live state").error = Some(e.to_string());
                } else {
                    opts = LiveOptions {
                        speed: opts.speed,
                        ..*o
                    };
                }
            }
            Some(Command::Seek(t)) if file_input => {
                session.reopen(&input, (t * fs) as u64, &opts, &shared)
            }
            Some(Command::Record(Some(path))) => record_to = Some(path),
            Some(Command::Record(None)) => {
                record_to = None;
                session.stop_recording(&shared);
            }
            _ => {}
        }
        {
            let mut s = shared.lock().expect("live state");
            s.playing = playing;
            s.received = session.origin + session.feed.streamer.received();
        }
        if !(playing || stepping) || ended {
            session.source.paused();
            if ended {
                playing = false;
            }
            continue;
        }
        let mut ica =
            |o: &Observations, warm: Option<&DMatrix<f64>>| opts.hop_ica(&mut deblinker, o, warm);
        let mut pulled = session.feed.pull(session.source.as_mut(), &mut ica);
        if let Some(Note::Ended(_)) = &pulled.note {
            let rest = session.feed.finish(&mut ica);
            if !rest.hops.is_empty() {
                pulled.hops.extend(rest.hops);
                pulled.latencies.extend(rest.latencies);
                pulled.processing_s = rest.processing_s;
            }
        }
        let made: Vec<Made> = (pulled.hops.iter())
            .map(|hop| session.make(hop, fs))
            .collect();
        let mut s = shared.lock().expect("live state");
        if let (Some(r), Some(note)) = (&mut session.recorder, &pulled.note) {
            r.event(note);
        }
        match pulled.note.take() {
            Some(Note::Gap { at, samples }) => {
                s.gaps.push_back((session.origin + at, samples));
                s.lost += samples;
            }
            Some(Note::Stalled { .. }) => s.stalled = true,
            Some(Note::Resumed) => s.stalled = false,
            Some(Note::Ended(why)) => {
                s.ended = true;
                if let Some(why) = why {
                    s.error = Some(why);
                }
            }
            None => {}
        }
        for ((hop, &latency), made) in pulled.hops.iter().zip(&pulled.latencies).zip(made) {
            let duration = hop.cleaned.cols as f64 / fs;
            let late = opts
                .speed
                .is_some_and(|v| pulled.processing_s > duration / v);
            s.add(
                hop,
                session.origin,
                (pulled.processing_s, latency, late),
                fs,
                made,
            );
            if let Some(path) = record_to.take() {
                let protect = match &input {
                    Input::Recording(_, rec, _) => rec.path.clone(),
                    Input::Lsl(_) => None,
                };
                let meta = session.source.meta();
                let keep = &session.feed.channels.keep;
                match SessionRecorder::create(&path, meta, keep, hop, protect.as_deref()) {
                    Ok(r) => {
                        s.recording = Some(path.display().to_string());
                        session.recorder = Some(r);
                    }
                    Err(e) => s.error = Some(e.to_string()),
                }
            }
            if let Some(r) = &mut session.recorder
                && let Err(e) = r.hop(hop)
            {
                s.error = Some(e.to_string());
            }
        }
        s.received = session.origin + session.feed.streamer.received();
        let ended = s.ended;
        drop(s);
        if ended && session.recorder.is_some() {
            session.stop_recording(&shared);
        }
        if !pulled.hops.is_empty() {
            stepping = false;
            repaint();
        }
    }
    session.stop_recording(&shared);
}

/// Starts the player on a thread of its own on `input` (see `player`); `repaint` asks the view
/// to draw again. The sender commands it; dropping it ends the player.
pub fn spawn(
    input: Input,
    opts: LiveOptions,
    gpu: Option<GpuContext>,
    shared: Arc<Mutex<Shared>>,
    repaint: impl Fn() + Send + 'static,
) -> std::io::Result<Sender<Command>> {
    let (tx, rx) = channel();
    let spawned = std::thread::Builder::new()
        .name("ede live".into())
        .spawn(move || {
            // The pipeline's parallel parts run on their own pool of one core fewer than
            // the machine has: at maximum speed they would otherwise take every core and
            // hold up the frames (on two cores a quarter of them went over 16 ms). Its
            // threads also yield to the interface's where the machine is busier than that.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(cores.saturating_sub(1).max(1))
                .thread_name(|i| format!("ede live {i}"))
                .start_handler(|_| below_the_interface())
                .build();
            match pool {
                Ok(pool) => pool.install(|| player(input, opts, gpu, shared, rx, repaint)),
                Err(_) => player(input, opts, gpu, shared, rx, repaint),
            }
        });
    spawned.map(|_| tx)
}

/// Lowers the calling thread's priority (nice 10) so that the interface's threads win a
/// contended core: frames keep their deadline while the player catches up at maximum speed.
fn below_the_interface() {
    lower_thread_priority(10);
}
