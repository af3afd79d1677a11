//! Live mode (issue 10) on the open recording: it is played as a stream through the blink
//! removal pipeline, hop by hop, on a thread of its own (`analysis::live::player`, which runs
//! `dsp::blink::stream` and shares what it made with this view; this file holds the controls
//! and the drawing). The panel scrolls the last seconds of the original and cleaned channels
//! (overlaid or side by side) with the blinks shaded, shows the newest window's components with
//! the removed ones in red (their traces, and scalp maps where the labels name 10-10
//! positions), and a meter: processing per hop against the hop's duration, latency, hops that
//! fell behind.
//! It starts where the browser is. Play, pause, step one hop, speed and seek; every control
//! applies from the next hop, while playing or paused.

use std::collections::VecDeque;
use std::iter::once;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eframe::egui::{self, Color32};
use egui_plot::{Plot, Polygon};

use super::AnalysisView;
use super::browser::Browser;
use super::envelope::{Envelopes, Lane};
use super::scalp_map::ScalpMaps;
use crate::analysis::blink::EegData;
use crate::analysis::live::LiveOptions;
use crate::analysis::live::player::{self, Command, Input, KEPT_S, Shared, Window};
use crate::dsp::ica::Contrast;
use crate::gpu::GpuContext;
use crate::recording::{Annotation, Format, Recording, in_memory};

/// How often the copy of an LSL stream that the other tabs follow is made again, at most.
const STREAM_COPY_EVERY: Duration = Duration::from_secs(1);
/// Scalp maps to a row (every component has one).
const MAPS_PER_ROW: usize = 6;

/// What a session keeps of the tab (not the stream or recording it was playing).
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    deblink: crate::analysis::blink::DeblinkOptions,
    hop_s: f64,
    lookahead_s: f64,
    speed: Option<f64>,
    side_by_side: bool,
    display_s: f64,
    lsl: String,
    follow: bool,
}

pub struct LiveView {
    rec: Arc<Recording>,
    data: Option<Arc<EegData>>,
    opts: LiveOptions,
    sent: LiveOptions,
    speed: Option<f64>,
    side_by_side: bool,
    display_s: f64,
    /// The position the seek slider is being dragged to.
    seek_drag: Option<f64>,
    /// The LSL stream asked for (name or PROPERTY=VALUE); the open recording when `None`.
    lsl: Option<String>,
    lsl_text: String,
    record_path: String,
    /// The other tabs show the newest window of the recording being played.
    follow: bool,
    shared: Arc<Mutex<Shared>>,
    commands: Option<Sender<Command>>,
    gpu: Option<GpuContext>,
    error: Option<String>,
    maps: ScalpMaps,
    /// The LSL stream's newest samples as a recording, for the tabs that follow it, with the
    /// hop and the moment it was made at.
    stream_copy: Option<(usize, Instant, Arc<Recording>)>,
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
        let record_path = match &rec.path {
            Some(p) => {
                let stem = p.file_stem().map_or("ede".into(), |s| s.to_string_lossy());
                let ext = if rec.format.edf_family() == Some("edf") {
                    "edf"
                } else {
                    "bdf"
                };
                p.with_file_name(format!("{stem}-live.{ext}"))
                    .display()
                    .to_string()
            }
            None => "ede-live.bdf".into(),
        };
        LiveView {
            rec,
            data,
            sent: opts.clone(),
            speed: opts.speed,
            opts,
            side_by_side: false,
            display_s: 10.0,
            seek_drag: None,
            lsl: None,
            lsl_text: "type=EEG".into(),
            record_path,
            follow: false,
            shared: Arc::new(Mutex::new(Shared::default())),
            commands: None,
            gpu,
            error,
            maps: ScalpMaps::default(),
            stream_copy: None,
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

    /// Records the session to `path` (EDF+ or BDF+) from the next hop on, or stops.
    pub fn record(&self, path: Option<PathBuf>) {
        self.send(Command::Record(path));
    }

    /// Where it is recording to, and what the last recording saved.
    pub fn recording(&self) -> (Option<String>, Option<String>) {
        let s = self.shared.lock().expect("live state");
        (s.recording.clone(), s.recorded.clone())
    }

    /// The newest window of the recording being played (start and length, seconds), when the
    /// other tabs are to follow the stream.
    pub fn follow_span(&self) -> Option<(f64, f64)> {
        if !self.follow || self.lsl.is_some() {
            return None;
        }
        let s = self.shared.lock().expect("live state");
        let ((start, len), fs) = (s.newest?, s.meta.as_ref()?.fs);
        Some((start as f64 / fs, len as f64 / fs))
    }

    /// With "other tabs follow the stream" on an LSL stream (which has no file for them to
    /// read): the stream's newest samples as a recording (the `KEPT_S` seconds this tab keeps,
    /// as they arrived, blinks as annotations; times from its first sample) and the newest
    /// window in it. Made again when a hop arrives.
    pub fn follow_stream(&mut self) -> Option<(Arc<Recording>, f64, f64)> {
        if !self.follow || self.lsl.is_none() {
            self.stream_copy = None;
            return None;
        }
        let s = self.shared.lock().expect("live state");
        let ((start, len), meta) = (s.newest?, s.meta.as_ref()?);
        let fs = meta.fs;
        let t0 = start.saturating_sub(s.start) as f64 / fs;
        let span = len as f64 / fs;
        // At most one copy a second: at 4x or more a copy per hop would supersede the
        // following tabs' jobs (newest wins) before the slower ones (blinks) could finish.
        if let Some((hops, made, rec)) = &self.stream_copy
            && (*hops == s.hops || made.elapsed() < STREAM_COPY_EVERY)
        {
            let (t0, span) = (rec.duration_s() - span, span);
            return Some((rec.clone(), t0.max(0.0), span));
        }
        let data: Vec<Vec<f32>> = (s.original.iter())
            .map(|q| q.iter().copied().collect())
            .collect();
        let seconds = |samples: u64| samples as f64 / fs;
        let annotations = (s.blinks.iter())
            .filter(|b| b.start as u64 >= s.start)
            .map(|b| Annotation {
                onset: seconds(b.start as u64 - s.start),
                duration: seconds((b.end - b.start) as u64),
                text: "blink".into(),
            })
            .collect();
        let start =
            meta.start + chrono::Duration::milliseconds((seconds(s.start) * 1e3).round() as i64);
        let signals = (meta.labels.iter().zip(&meta.units))
            .map(|(l, u)| (l.clone(), u.clone(), fs))
            .collect();
        let kept = data.first().map_or(0, Vec::len) as f64 / fs;
        let mut rec = in_memory(
            Some(PathBuf::from(format!("LSL {}", meta.name))),
            Format::Lsl,
            start,
            signals,
            data,
            annotations,
            Vec::new(),
        );
        rec.recording_info = format!(
            "the newest {kept:.0} s of the LSL stream {}, as they arrived",
            meta.name
        );
        let rec = Arc::new(rec);
        self.stream_copy = Some((s.hops, Instant::now(), rec.clone()));
        Some((rec, t0, span))
    }

    pub fn set_follow(&mut self, follow: bool) {
        self.follow = follow;
    }

    /// Switches to the LSL stream `query` (name or PROPERTY=VALUE), or back to the recording.
    pub fn use_lsl(&mut self, query: Option<String>) {
        if let Some(q) = &query {
            self.lsl_text = q.clone();
        }
        self.lsl = query;
        // Dropping the sender ends the player; the next frame starts one on the new input.
        self.commands = None;
        self.shared = Arc::new(Mutex::new(Shared::default()));
    }

    /// Starts the player, on the recording at `from_s` seconds (where the browser is) or on
    /// the LSL stream.
    fn start(&mut self, ctx: &egui::Context, from_s: f64) {
        if self.commands.is_some() {
            return;
        }
        let input = match (&self.lsl, &self.data) {
            (Some(q), _) => Input::Lsl(q.clone()),
            (None, Some(data)) => {
                let from = (from_s.max(0.0) * data.fs) as u64;
                Input::Recording(data.clone(), self.rec.clone(), from)
            }
            (None, None) => return,
        };
        let (opts, gpu, shared, ctx) = (
            self.sent.clone(),
            self.gpu.clone(),
            self.shared.clone(),
            ctx.clone(),
        );
        let spawned = player::spawn(input, opts, gpu, shared, move || ctx.request_repaint());
        match spawned {
            Ok(tx) => self.commands = Some(tx),
            Err(e) => self.error = Some(format!("cannot start the player: {e}")),
        }
    }

    /// The source: the open recording or an LSL stream.
    fn source_controls(&mut self, ui: &mut egui::Ui) {
        let mut lsl = self.lsl.is_some();
        ui.horizontal(|ui| {
            ui.label("source");
            ui.radio_value(&mut lsl, false, "this recording");
            ui.radio_value(&mut lsl, true, "LSL stream");
        });
        if !lsl && self.lsl.is_some() {
            self.use_lsl(None);
        }
        if lsl {
            ui.horizontal(|ui| {
                ui.add(
                    egui::TextEdit::singleline(&mut self.lsl_text)
                        .desired_width(150.0)
                        .hint_text("name or type=EEG"),
                );
                let text = self.lsl_text.trim().to_string();
                if ui.button("Connect").clicked() && !text.is_empty() {
                    self.use_lsl(Some(text));
                }
            });
            if self.lsl.is_none() {
                ui.small("a stream's name, or type=EEG for the first EEG stream");
            }
        }
    }

    /// Start and stop recording the session.
    fn record_controls(&mut self, ui: &mut egui::Ui) {
        let (recording, recorded) = self.recording();
        match recording {
            Some(path) => {
                ui.colored_label(
                    Color32::from_rgb(220, 50, 47),
                    format!("REC · recording to {path}"),
                );
                if ui.button("Stop recording").clicked() {
                    self.record(None);
                }
            }
            None => {
                ui.horizontal(|ui| {
                    let field =
                        egui::TextEdit::singleline(&mut self.record_path).desired_width(170.0);
                    ui.add(field).on_hover_text(&self.record_path);
                    if ui.button("Record").clicked() {
                        self.record(Some(PathBuf::from(self.record_path.trim())));
                    }
                });
                ui.small(
                    "raw and cleaned channels with blinks and gaps as annotations; .edf or .bdf",
                );
            }
        }
        if let Some(r) = recorded {
            ui.small(r);
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        ui.heading("Live");
        ui.label("A stream cleaned of blinks hop by hop: the recording played, or an LSL stream.");
        ui.add_space(4.0);
        self.source_controls(ui);
        let (playing, received, ended, stalled, meta) = {
            let s = self.shared.lock().expect("live state");
            (s.playing, s.received, s.ended, s.stalled, s.meta.clone())
        };
        let Some(meta) = meta else {
            ui.label(match &self.lsl {
                Some(q) => format!("looking for LSL stream {q:?}…"),
                None => "opening…".into(),
            });
            if let Some(e) = self.shared.lock().expect("live state").error.clone() {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            return;
        };
        let fs = meta.fs;
        let live = self.lsl.is_some();
        if live {
            ui.small(format!(
                "{}: {} channels at {} Hz",
                meta.name,
                meta.labels.len(),
                fs
            ));
        }
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
        if stalled {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                "the source has stalled: waiting",
            );
        }
        if live {
            ui.small("paused, the stream is buffered and caught up on Play");
        } else {
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
            let length = self.data.as_ref().map_or(0.0, |d| d.duration_s());
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
        }
        if !live {
            ui.checkbox(&mut self.follow, "other tabs follow the stream")
                .on_hover_text(
                    "the browser, Cross-ApEn, scalogram and beat tabs show the newest window \
                     while it plays",
                );
        }
        ui.separator();
        self.record_controls(ui);
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
        // A live stream comes at its own pace: real time.
        let speed = if self.lsl.is_some() {
            Some(1.0)
        } else {
            self.sent.speed
        };
        let budget = self.sent.hop_s / speed.unwrap_or(f64::INFINITY);
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
        if !self.sent.deblink.params.removes_everywhere() {
            use crate::dsp::blink::pooled::SETTLED_BLINKS;
            match s.field_blinks {
                Some(n) if n >= SETTLED_BLINKS => {
                    ui.label(format!("blink field of {n} blinks · settled"));
                }
                Some(n) => {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!("blink field of {n} blinks · settling until {SETTLED_BLINKS}"),
                    )
                    .on_hover_text(
                        "the blinks' topography is fitted on the blinks so far and carries the \
                         EEG they coincided with: until it has about 30, blinks are cleaned \
                         less well than later",
                    );
                }
                None => {
                    ui.label("no blink field yet: each window's own components clean blinks");
                }
            }
        }
        if s.lost > 0 {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!(
                    "{} samples lost by the source ({} gaps shown grey)",
                    s.lost,
                    s.gaps.len()
                ),
            );
        }
        if let Some(e) = &s.error {
            ui.colored_label(ui.visuals().warn_fg_color, format!("last failed hop: {e}"));
        }
    }

    fn panel(&mut self, ui: &mut egui::Ui) {
        let s = self.shared.lock().expect("live state");
        let Some(meta) = &s.meta else { return };
        let fs = meta.fs;
        let len = s.original.first().map_or(0, VecDeque::len);
        if len == 0 {
            ui.centered_and_justified(|ui| ui.label("filling the first window…"));
            return;
        }
        let shown = ((self.display_s * fs) as usize).min(len);
        let from = len - shown;
        let t_of = |k: usize| (s.start + k as u64) as f64 / fs;
        let (t0, t1) = (t_of(from), t_of(len));
        let rows = meta.labels.len();
        let spread = &s.spread;
        let lane = |i: usize| -((i as f64) * 8.0);
        let trace =
            |q, i: usize, runs, color| Lane::of(q, runs, color).at(lane(i), 1.0 / spread[i]);
        let traces = |lanes| Envelopes::new("traces", lanes, (t_of(0), fs), 4.0);
        let grey = ui.visuals().weak_text_color();
        let blue = Color32::from_rgb(90, 160, 230);
        let shade = Color32::from_rgba_unmultiplied(220, 50, 47, 40);
        let text = ui.visuals().text_color();
        let bottom = lane(rows) + 4.0;
        let blinks: Vec<(f64, f64)> = (s.blinks.iter())
            .map(|b| (b.start as f64 / fs, b.end as f64 / fs))
            .filter(|&(a, z)| z >= t0 && a <= t1)
            .collect();
        // Samples the source lost, held at the last value: shaded grey.
        let gaps: Vec<(f64, f64)> = (s.gaps.iter())
            .map(|&(a, n)| (a as f64 / fs, (a + n) as f64 / fs))
            .filter(|&(a, z)| z >= t0 && a <= t1)
            .collect();
        let gap_shade = Color32::from_rgba_unmultiplied(128, 128, 128, 70);
        // Eye events left alone: an amber outline, named by their class at the top.
        let left_alone: Vec<(f64, f64, &str)> = (s.left_alone.iter())
            .map(|e| {
                let span = (e.span.start as f64 / fs, e.span.end as f64 / fs);
                (span.0, span.1, e.class.name())
            })
            .filter(|&(a, z, _)| z >= t0 && a <= t1)
            .collect();
        let amber = Color32::from_rgb(203, 140, 20);
        let labels = &meta.labels;
        let decorate = |p: &mut egui_plot::PlotUi<'_>| {
            for (spans, colour, name) in [(&blinks, shade, "blink"), (&gaps, gap_shade, "gap")] {
                for &(a, z) in spans {
                    let (a, z) = (a.max(t0), z.min(t1));
                    p.polygon(
                        Polygon::new(name, vec![[a, bottom], [z, bottom], [z, 6.0], [a, 6.0]])
                            .fill_color(colour)
                            .stroke(egui::Stroke::NONE),
                    );
                }
            }
            for &(a, z, name) in &left_alone {
                let (a, z) = (a.max(t0), z.min(t1));
                p.polygon(
                    Polygon::new(name, vec![[a, bottom], [z, bottom], [z, 6.0], [a, 6.0]])
                        .fill_color(Color32::TRANSPARENT)
                        .stroke(egui::Stroke::new(1.0, amber)),
                );
                p.text(
                    egui_plot::Text::new(name, egui_plot::PlotPoint::new(a, bottom - 1.0), name)
                        .color(amber)
                        .anchor(egui::Align2::LEFT_TOP),
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
                        for (col, (id, label, qs, colour)) in cols.iter_mut().zip([
                            ("live original", "original (s)", &s.original, grey),
                            ("live cleaned", "cleaned (s)", &s.cleaned, blue),
                        ]) {
                            plot(id, label).show(col, |p| {
                                p.add(traces(
                                    (qs.iter().enumerate())
                                        .map(|(i, q)| {
                                            trace(q, i, once(from..len).collect(), colour)
                                        })
                                        .collect(),
                                ));
                                decorate(p);
                            });
                        }
                    });
                } else {
                    plot("live traces", "s · original grey, cleaned blue").show(ui, |p| {
                        // The cleaned trace covers the original wherever they agree (all but
                        // the blinks): only where they part is there grey to draw.
                        let pairs = s.original.iter().zip(&s.cleaned).zip(spread);
                        let lanes = (pairs.enumerate()).flat_map(|(i, ((o, c), &scale))| {
                            let runs = parted(o, c, scale, from..len);
                            [
                                trace(o, i, runs, grey),
                                trace(c, i, once(from..len).collect(), blue),
                            ]
                        });
                        p.add(traces(lanes.collect()));
                        decorate(p);
                    });
                }
            });
            let right = ui.available_width();
            let layout = egui::Layout::top_down(egui::Align::Min);
            ui.allocate_ui_with_layout(egui::vec2(right, height), layout, |ui| {
                ui.set_max_width(right);
                if let Some(w) = &s.window {
                    let at = (&labels[..], &meta.positions[..]);
                    let every = w.ica.mixing.ncols();
                    self.maps
                        .ui(ui, at, &w.ica, &w.removed, (every, MAPS_PER_ROW));
                }
                components(ui, s.window.as_ref(), fs, (t0, t1));
            });
        });
    }
}

/// The stretches of `span` (one sample wider each side, so that they join the rest) where
/// `original` and `cleaned` differ by more than a hundredth of the lane's scale `spread`:
/// where they agree the cleaned trace hides the original.
fn parted(
    original: &VecDeque<f32>,
    cleaned: &VecDeque<f32>,
    spread: f64,
    span: Range<usize>,
) -> Vec<Range<usize>> {
    let tolerance = (0.01 * spread) as f32;
    let mut runs: Vec<Range<usize>> = Vec::new();
    let pairs = original
        .range(span.clone())
        .zip(cleaned.range(span.clone()));
    for (k, (o, c)) in (span.start..).zip(pairs) {
        if (o - c).abs() <= tolerance {
            continue;
        }
        let (a, z) = (k.saturating_sub(1).max(span.start), (k + 2).min(span.end));
        match runs.last_mut() {
            Some(last) if last.end >= a => last.end = z,
            _ => runs.push(a..z),
        }
    }
    runs
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

    fn parameters(&self) -> serde_json::Value {
        super::to_saved(&Saved {
            deblink: self.opts.deblink.clone(),
            hop_s: self.opts.hop_s,
            lookahead_s: self.opts.lookahead_s,
            speed: self.speed,
            side_by_side: self.side_by_side,
            display_s: self.display_s,
            lsl: self.lsl_text.clone(),
            follow: self.follow,
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        self.opts.deblink = s.deblink;
        self.opts.hop_s = s.hop_s.clamp(0.25, 5.0);
        self.opts.lookahead_s = s.lookahead_s.clamp(0.0, 1.0);
        self.speed = s.speed.filter(|v| v.is_finite() && *v > 0.0);
        self.side_by_side = s.side_by_side;
        self.display_s = s.display_s.clamp(2.0, KEPT_S);
        self.lsl_text = s.lsl;
        self.follow = s.follow;
        if self.commands.is_none() {
            // Not playing yet: the player starts with these.
            self.sent = LiveOptions {
                speed: self.speed,
                ..self.opts.clone()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_where_the_traces_part_is_the_original_drawn() {
        let original: VecDeque<f32> = (0..40).map(|k| (k as f32 * 0.3).sin()).collect();
        let mut cleaned = original.clone();
        assert!(parted(&original, &cleaned, 1.0, 0..40).is_empty());
        // A blink at 10..13 and another at 15 (one sample from the first's margin: one run),
        // a lone sample at 30, and one at the very end.
        for k in [10, 11, 12, 15, 30, 39] {
            cleaned[k] -= 0.5;
        }
        // Below a hundredth of the lane's scale the cleaned trace hides the difference.
        cleaned[20] += 0.009;
        assert_eq!(
            parted(&original, &cleaned, 1.0, 0..40),
            vec![9..17, 29..32, 38..40]
        );
        // Within a span, the runs keep to it.
        assert_eq!(
            parted(&original, &cleaned, 1.0, 12..31),
            vec![12..17, 29..31]
        );
        // The same differences are nothing on a lane a thousand times wider.
        assert!(parted(&original, &cleaned, 1000.0, 0..40).is_empty());
    }
}
