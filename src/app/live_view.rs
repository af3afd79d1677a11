//! Live mode (issue 10) on the open recording: it is played as a stream through the blink
//! removal pipeline, hop by hop, on a thread of its own (`dsp::blink::stream`). The panel
//! scrolls the last seconds of the original and cleaned channels (overlaid or side by side)
//! with the blinks shaded, shows the newest window's components with the removed ones in red
//! (their traces, and scalp maps where the labels name 10-10 positions), and a meter: processing per hop against the hop's duration, latency, hops that fell behind.
//! It starts where the browser is. Play, pause, step one hop, speed and seek; every control
//! applies from the next hop, while playing or paused.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eframe::egui::{self, Color32};
use egui_plot::{Line, Plot, PlotPoints, Polygon};
use nalgebra::DMatrix;

use super::AnalysisView;
use super::browser::Browser;
use super::scalp_map::ScalpMaps;
use crate::analysis::blink::{Deblinker, EegData};
use crate::analysis::live::LiveOptions;
use crate::dsp::blink::Blink;
use crate::dsp::blink::stream::{Hop, Streamer};
use crate::dsp::ica::{Contrast, Ica, Observations};
use crate::gpu::GpuContext;
use crate::recording::Recording;

/// Seconds of signal kept for display.
const KEPT_S: f64 = 60.0;
/// Seconds of the newest signal the lane scales are taken from.
const SPREAD_S: f64 = 10.0;
/// Hops the meter averages over.
const METER_HOPS: usize = 20;
/// Components with scalp maps.
const MAPS: usize = 12;

/// What the player thread is told.
enum Command {
    Play,
    Pause,
    Step,
    Speed(Option<f64>),
    Options(Box<LiveOptions>),
    Seek(f64),
}

/// The newest window, for the components plot.
struct Window {
    ica: Ica,
    removed: Vec<usize>,
    start: u64,
}

/// What the player thread shares with the view.
#[derive(Default)]
struct Shared {
    /// Absolute sample of `original[c][0]` and `cleaned[c][0]`.
    start: u64,
    original: Vec<VecDeque<f32>>,
    cleaned: Vec<VecDeque<f32>>,
    blinks: VecDeque<Blink>,
    window: Option<Window>,
    /// Each channel's robust SD over the last `SPREAD_S` seconds: the lane scale, updated per
    /// hop rather than every frame.
    spread: Vec<f64>,
    processing: VecDeque<f64>,
    latency: VecDeque<f64>,
    hops: usize,
    late: usize,
    /// Samples received (the play position).
    received: u64,
    playing: bool,
    ended: bool,
    error: Option<String>,
}

impl Shared {
    fn clear(&mut self, channels: usize, at: u64) {
        *self = Shared {
            start: at,
            original: vec![VecDeque::new(); channels],
            cleaned: vec![VecDeque::new(); channels],
            received: at,
            playing: self.playing,
            ..Shared::default()
        };
    }

    /// Appends `hop`, whose sample numbers count from the recording's sample `origin` (where
    /// its stream began).
    fn add(&mut self, hop: Hop, origin: u64, meter: (f64, f64, bool), fs: f64) {
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
        self.spread = (self.original.iter())
            .map(|q| {
                let from = q.len().saturating_sub((SPREAD_S * fs) as usize);
                let v: Vec<f32> = q.range(from..).copied().collect();
                crate::dsp::blink::detect::robust_sigma(&v).max(1e-9) as f64
            })
            .collect();
        let at = origin as usize;
        self.blinks.extend(hop.blinks.iter().map(|b| Blink {
            peak: b.peak + at,
            start: b.start + at,
            end: b.end + at,
        }));
        while (self.blinks.front()).is_some_and(|b| (b.end as u64) < self.start) {
            self.blinks.pop_front();
        }
        if let Some(ica) = hop.ica {
            self.window = Some(Window {
                ica,
                removed: hop.removed,
                start: origin + hop.window_start,
            });
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
        self.late += usize::from(late);
        if let Some(e) = hop.error {
            self.error = Some(e);
        }
    }
}

/// The player: pushes the recording into a `Streamer` chunk by chunk at the chosen speed,
/// obeying `commands` between chunks (so a hop in flight always finishes as it began).
fn player(
    data: Arc<EegData>,
    mut opts: LiveOptions,
    gpu: Option<GpuContext>,
    shared: Arc<Mutex<Shared>>,
    commands: Receiver<Command>,
    ctx: egui::Context,
    from: u64,
) {
    let fs = data.fs;
    let x = &data.data;
    let total = x.cols as u64;
    let chunk = ((opts.chunk_s * fs).round() as u64).max(1);
    let mut deblinker = Deblinker::new(gpu.as_ref());
    let fresh = |opts: &LiveOptions| Streamer::new(fs, data.channels.clone(), opts.stream_params());
    let mut streamer = match fresh(&opts) {
        Ok(s) => s,
        Err(e) => {
            shared.lock().expect("live state").error = Some(e.to_string());
            return;
        }
    };
    let (mut playing, mut stepping) = (true, false);
    // The pace: sample `paced_from` was due at `clock`.
    let (mut clock, mut paced_from) = (Instant::now(), 0u64);
    let mut pos = from.min(total.saturating_sub(1));
    // The recording's sample where the current stream began (the streamer counts from 0).
    let mut origin = pos;
    shared.lock().expect("live state").clear(x.rows, pos);
    loop {
        // The view is gone when its sender is: the player ends with it.
        let next = if playing || stepping {
            match commands.try_recv() {
                Err(TryRecvError::Disconnected) => return,
                next => next.ok(),
            }
        } else {
            match commands.recv_timeout(Duration::from_millis(100)) {
                Err(RecvTimeoutError::Disconnected) => return,
                next => next.ok(),
            }
        };
        match next {
            Some(Command::Play) => {
                playing = true;
                // Play at the end starts over.
                if pos >= total {
                    (pos, origin) = (0, 0);
                    if let Ok(s) = fresh(&opts) {
                        streamer = s;
                    }
                    shared.lock().expect("live state").clear(x.rows, 0);
                }
            }
            Some(Command::Pause) => playing = false,
            Some(Command::Step) => stepping = true,
            Some(Command::Speed(s)) => opts.speed = s,
            Some(Command::Options(o)) => {
                if let Err(e) = streamer.set_params(o.stream_params()) {
                    shared.lock().expect("live state").error = Some(e.to_string());
                } else {
                    opts = LiveOptions {
                        speed: opts.speed,
                        ..*o
                    };
                }
            }
            Some(Command::Seek(t)) => {
                pos = ((t * fs) as u64).min(total.saturating_sub(1));
                origin = pos;
                if let Ok(s) = fresh(&opts) {
                    streamer = s;
                }
                shared.lock().expect("live state").clear(x.rows, pos);
            }
            None => {}
        }
        {
            let mut s = shared.lock().expect("live state");
            s.playing = playing;
            s.received = pos;
        }
        if !(playing || stepping) {
            (clock, paced_from) = (Instant::now(), pos);
            continue;
        }
        let mut ica =
            |o: &Observations, warm: Option<&DMatrix<f64>>| deblinker.ica(&opts.deblink, o, warm);
        let started = Instant::now();
        let hops: Vec<Hop> = if pos >= total {
            playing = false;
            shared.lock().expect("live state").ended = true;
            streamer.finish(&mut ica).into_iter().collect()
        } else {
            let to = (pos + chunk).min(total);
            // The first window fills at once (as if recorded before the demo began); from
            // then on each chunk waits for its last sample to be due.
            let (window, _) = streamer.window_and_hop();
            if let Some(speed) = opts.speed.filter(|_| streamer.received() >= window as u64) {
                let due = clock + Duration::from_secs_f64((to - paced_from) as f64 / fs / speed);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            } else {
                (clock, paced_from) = (Instant::now(), to);
            }
            let part = x.block(x.rows, pos as usize..to as usize);
            pos = to;
            streamer.push(&part, &mut ica)
        };
        if hops.is_empty() {
            continue;
        }
        let processing = started.elapsed().as_secs_f64() / hops.len() as f64;
        let mut s = shared.lock().expect("live state");
        for hop in hops {
            let duration = hop.cleaned.cols as f64 / fs;
            let late = opts.speed.is_some_and(|v| processing > duration / v);
            // A hop's first sample arrived one hop (at this speed) before its last.
            let latency = processing + opts.speed.map_or(0.0, |v| duration / v);
            s.add(hop, origin, (processing, latency, late), fs);
        }
        s.received = pos;
        drop(s);
        stepping = false;
        ctx.request_repaint();
    }
}

pub struct LiveView {
    data: Option<Arc<EegData>>,
    opts: LiveOptions,
    sent: LiveOptions,
    speed: Option<f64>,
    side_by_side: bool,
    display_s: f64,
    /// The position the seek slider is being dragged to.
    seek_drag: Option<f64>,
    shared: Arc<Mutex<Shared>>,
    commands: Option<Sender<Command>>,
    gpu: Option<GpuContext>,
    error: Option<String>,
    maps: ScalpMaps,
}

impl LiveView {
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        let opts = LiveOptions {
            speed: Some(1.0),
            ..LiveOptions::default()
        };
        let (data, error) = match EegData::load(&rec, &opts.deblink) {
            Ok(d) => (Some(Arc::new(d)), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let channels = data.as_ref().map_or(0, |d| d.data.rows);
        let mut shared = Shared::default();
        shared.clear(channels, 0);
        LiveView {
            data,
            sent: opts.clone(),
            speed: opts.speed,
            opts,
            side_by_side: false,
            display_s: 10.0,
            seek_drag: None,
            shared: Arc::new(Mutex::new(shared)),
            commands: None,
            gpu,
            error,
            maps: ScalpMaps::default(),
        }
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Hops cleaned so far, whether it is playing, and the contrast now in force.
    pub fn progress(&self) -> (usize, bool, Contrast) {
        let s = self.shared.lock().expect("live state");
        (s.hops, s.playing, self.sent.deblink.fastica.contrast)
    }

    fn send(&self, c: Command) {
        if let Some(tx) = &self.commands {
            let _ = tx.send(c);
        }
    }

    pub fn play(&self) {
        self.send(Command::Play);
    }
    pub fn pause(&self) {
        self.send(Command::Pause);
    }
    pub fn step(&self) {
        self.send(Command::Step);
    }
    pub fn set_speed(&mut self, speed: Option<f64>) {
        self.speed = speed;
    }
    pub fn set_contrast(&mut self, contrast: Contrast) {
        self.opts.deblink.fastica.contrast = contrast;
    }

    /// Starts the player at `from_s` seconds (where the browser is).
    fn start(&mut self, ctx: &egui::Context, from_s: f64) {
        let Some(data) = &self.data else { return };
        if self.commands.is_some() {
            return;
        }
        let (tx, rx) = channel();
        let from = (from_s.max(0.0) * data.fs) as u64;
        let (data, opts, gpu, shared, ctx) = (
            data.clone(),
            self.opts.clone(),
            self.gpu.clone(),
            self.shared.clone(),
            ctx.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("ede live".into())
            .spawn(move || player(data, opts, gpu, shared, rx, ctx, from));
        match spawned {
            Ok(_) => self.commands = Some(tx),
            Err(e) => self.error = Some(format!("cannot start the player: {e}")),
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        ui.heading("Live");
        ui.label("The recording streamed through blink removal, hop by hop.");
        ui.add_space(4.0);
        let (playing, received, ended) = {
            let s = self.shared.lock().expect("live state");
            (s.playing, s.received, s.ended)
        };
        let fs = self.data.as_ref().map_or(1.0, |d| d.fs);
        let length = self.data.as_ref().map_or(0.0, |d| d.duration_s());
        ui.horizontal(|ui| {
            if playing {
                if ui.button("Pause").clicked() {
                    self.pause();
                }
            } else if ui.button("Play").clicked() {
                self.play();
            }
            if ui
                .add_enabled(!playing, egui::Button::new("Step one hop"))
                .clicked()
            {
                self.step();
            }
        });
        ui.horizontal(|ui| {
            ui.label("speed");
            for (label, v) in [
                ("1x", Some(1.0)),
                ("2x", Some(2.0)),
                ("4x", Some(4.0)),
                ("8x", Some(8.0)),
                ("max", None),
            ] {
                ui.radio_value(&mut self.speed, v, label);
            }
        });
        // The slider follows the stream, except while the user holds it.
        let mut at = self.seek_drag.unwrap_or(received as f64 / fs);
        let seek = ui.add(
            egui::Slider::new(&mut at, 0.0..=length.max(1e-3))
                .text("position (s)")
                .fixed_decimals(1),
        );
        if seek.dragged() {
            self.seek_drag = Some(at);
        }
        if seek.drag_stopped() || seek.clicked() {
            self.seek_drag = None;
            self.send(Command::Seek(at));
        }
        if ended {
            ui.small("the recording has ended: seek or play from a position");
        }
        ui.separator();
        super::blink_view::pipeline_controls(ui, &mut self.opts.deblink);
        let o = &mut self.opts;
        ui.add(egui::Slider::new(&mut o.hop_s, 0.25..=5.0).text("hop (s)"));
        ui.add(egui::Slider::new(&mut o.lookahead_s, 0.0..=1.0).text("lookahead (s)"));
        ui.separator();
        ui.checkbox(&mut self.side_by_side, "original and cleaned side by side");
        ui.add(egui::Slider::new(&mut self.display_s, 2.0..=KEPT_S).text("seconds shown"));
        ui.separator();
        self.meter(ui);
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
    }

    /// Processing per hop against the hop, latency, hops that fell behind.
    fn meter(&self, ui: &mut egui::Ui) {
        let s = self.shared.lock().expect("live state");
        if s.processing.is_empty() {
            ui.label(format!(
                "{} hops · the meter starts with the second hop",
                s.hops
            ));
            return;
        }
        let mean = |q: &VecDeque<f64>| q.iter().sum::<f64>() / q.len() as f64;
        let (processing, latency) = (mean(&s.processing), mean(&s.latency));
        let budget = self.sent.hop_s / self.sent.speed.unwrap_or(f64::INFINITY);
        let share = if budget.is_finite() {
            (processing / budget) as f32
        } else {
            0.0
        };
        ui.label(format!(
            "{} hops · processing {:.1} ms per {:.2} s hop",
            s.hops,
            processing * 1e3,
            self.sent.hop_s
        ));
        let colour = if share < 0.5 {
            Color32::from_rgb(80, 170, 90)
        } else if share < 1.0 {
            Color32::from_rgb(220, 170, 40)
        } else {
            Color32::from_rgb(220, 50, 47)
        };
        ui.add(
            egui::ProgressBar::new(share.min(1.0))
                .fill(colour)
                .text(if budget.is_finite() {
                    format!("{:.0} % of real time", share * 100.0)
                } else {
                    format!("{:.0}x real time", self.sent.hop_s / processing.max(1e-9))
                }),
        );
        ui.label(format!(
            "latency {:.0} ms · {} hops fell behind",
            latency * 1e3,
            s.late
        ));
        if let Some(e) = &s.error {
            ui.colored_label(ui.visuals().warn_fg_color, format!("last failed hop: {e}"));
        }
    }

    fn panel(&mut self, ui: &mut egui::Ui) {
        let Some(data) = &self.data else { return };
        let s = self.shared.lock().expect("live state");
        let fs = data.fs;
        let len = s.original.first().map_or(0, VecDeque::len);
        if len == 0 {
            ui.centered_and_justified(|ui| ui.label("filling the first window…"));
            return;
        }
        let shown = ((self.display_s * fs) as usize).min(len);
        let from = len - shown;
        let step = (shown / 1500).max(1);
        let t_of = |k: usize| (s.start + k as u64) as f64 / fs;
        let (t0, t1) = (t_of(from), t_of(len));
        let rows = data.data.rows;
        let spread = &s.spread;
        let lane = |i: usize| -((i as f64) * 8.0);
        let trace = |q: &VecDeque<f32>, i: usize| -> PlotPoints<'static> {
            (from..len)
                .step_by(step)
                .map(|k| [t_of(k), lane(i) + q[k] as f64 / spread[i]])
                .collect()
        };
        let grey = ui.visuals().weak_text_color();
        let blue = Color32::from_rgb(90, 160, 230);
        let shade = Color32::from_rgba_unmultiplied(220, 50, 47, 40);
        let text = ui.visuals().text_color();
        let bottom = lane(rows) + 4.0;
        let blinks: Vec<(f64, f64)> = (s.blinks.iter())
            .map(|b| (b.start as f64 / fs, b.end as f64 / fs))
            .filter(|&(a, z)| z >= t0 && a <= t1)
            .collect();
        let labels = &data.channels.labels;
        let decorate = |p: &mut egui_plot::PlotUi<'_>| {
            for &(a, z) in &blinks {
                let (a, z) = (a.max(t0), z.min(t1));
                p.polygon(
                    Polygon::new("blink", vec![[a, bottom], [z, bottom], [z, 6.0], [a, 6.0]])
                        .fill_color(shade)
                        .stroke(egui::Stroke::NONE),
                );
            }
            super::blink_view::lane_labels(p, labels, |i| (t0, lane(i)), text);
        };
        let width = ui.available_width();
        let height = ui.available_height();
        ui.horizontal(|ui| {
            ui.allocate_ui(egui::vec2(width * 0.66, height), |ui| {
                let plot = |id: &str, label: &str| {
                    Plot::new(id.to_string())
                        .show_axes([true, false])
                        .x_axis_label(label.to_string())
                        .allow_scroll(false)
                        .allow_drag(false)
                        .include_x(t0)
                        .include_x(t1)
                        .auto_bounds(egui::Vec2b::new(true, true))
                };
                if self.side_by_side {
                    ui.columns(2, |cols| {
                        plot("live original", "original (s)").show(&mut cols[0], |p| {
                            for i in 0..rows {
                                p.line(Line::new("", trace(&s.original[i], i)).color(grey));
                            }
                            decorate(p);
                        });
                        plot("live cleaned", "cleaned (s)").show(&mut cols[1], |p| {
                            for i in 0..rows {
                                p.line(Line::new("", trace(&s.cleaned[i], i)).color(blue));
                            }
                            decorate(p);
                        });
                    });
                } else {
                    plot("live traces", "s · original grey, cleaned blue").show(ui, |p| {
                        for i in 0..rows {
                            p.line(Line::new("", trace(&s.original[i], i)).color(grey));
                            p.line(Line::new("", trace(&s.cleaned[i], i)).color(blue));
                        }
                        decorate(p);
                    });
                }
            });
            let right = ui.available_width();
            let layout = egui::Layout::top_down(egui::Align::Min);
            ui.allocate_ui_with_layout(egui::vec2(right, height), layout, |ui| {
                ui.set_max_width(right);
                if let Some(w) = &s.window {
                    self.maps.ui(ui, labels, &w.ica, &w.removed, MAPS);
                }
                components(ui, s.window.as_ref(), fs, (t0, t1));
            });
        });
    }
}

/// The newest window's components over the shown span, removed ones in red.
fn components(ui: &mut egui::Ui, w: Option<&Window>, fs: f64, span: (f64, f64)) {
    let Some(w) = w else {
        ui.centered_and_justified(|ui| ui.label("no window needed ICA yet"));
        return;
    };
    let label = format!(
        "s · newest window's components, {} iterations{}",
        w.ica.iterations,
        if w.ica.converged { "" } else { " (so far)" }
    );
    let start = w.start as f64 / fs;
    let ica = &w.ica;
    super::blink_view::components_plot(
        ui,
        "live components",
        ica,
        &w.removed,
        (start, fs),
        span,
        label,
    );
}

impl AnalysisView for LiveView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.start(ui.ctx(), browser.visible_span().0);
        if self.speed != self.sent.speed {
            self.send(Command::Speed(self.speed));
            self.sent.speed = self.speed;
        }
        let wanted = LiveOptions {
            speed: self.sent.speed,
            ..self.opts.clone()
        };
        if wanted != self.sent {
            self.send(Command::Options(Box::new(wanted.clone())));
            self.sent = wanted;
        }
        egui::Panel::left("live controls")
            .resizable(true)
            .default_size(270.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui));
            });
        egui::CentralPanel::default().show(ui, |ui| self.panel(ui));
        ui.ctx().request_repaint_after(Duration::from_millis(50));
    }

    fn ready(&self) -> bool {
        let s = self.shared.lock().expect("live state");
        self.error.is_some() || s.error.is_some() || s.hops > 0
    }
}
