//! The channel browser: every trace stacked with its label, a time axis in seconds and clock
//! time, annotations on the axis and in a side panel, montages, display filters, and
//! EDFbrowser-like navigation (PageUp/PageDown, arrows, wheel, ctrl+wheel or pinch to zoom,
//! up/down for amplitude, click a label to select, right-click to hide).

use std::collections::HashMap;
use std::sync::Arc;

use eframe::egui::{self, Color32, Pos2, Rect, Sense, Stroke, Vec2};
use serde::{Deserialize, Serialize};

use super::events::{EventAction, Events};
use super::lanes::{Lanes, PER_PAGE_CHOICES, trace_colour};
use super::traces::{Screen, Traces};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::MontageKind;
use crate::recording::{Annotation, ChannelType, Recording};

const LABEL_WIDTH: f32 = 110.0;
const AXIS_HEIGHT: f32 = 38.0;
const TIMEBASES_S: [f64; 16] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0,
    28800.0, 86400.0,
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserSettings {
    pub montage: MontageKind,
    pub filter: DisplayFilter,
    /// Seconds on one screen.
    pub span_s: f64,
    /// Multiplies every channel's amplitude.
    pub gain: f32,
    pub show_annotations: bool,
    /// Let traces leave their lanes (off: each is clipped to its own lane).
    pub overlap: bool,
    /// Lanes on one page (0: all), as MNE-Python's and EDFbrowser's browsers page them.
    pub channels_per_page: usize,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        Self {
            montage: MontageKind::AsRecorded,
            filter: DisplayFilter::default(),
            span_s: 10.0,
            gain: 1.0,
            show_annotations: true,
            overlap: false,
            channels_per_page: 20,
        }
    }
}

pub struct Browser {
    pub rec: Arc<Recording>,
    pub settings: BrowserSettings,
    pub traces: Traces,
    /// Left edge of the window, seconds from the recording start.
    pub t0: f64,
    /// Per-trace amplitude multiplier on top of the unit's default scale.
    channel_gain: Vec<f32>,
    /// Fit every shown trace to its lane from the next screen's values.
    fit_requested: bool,
    /// The page of lanes shown and the traces hidden.
    lanes: Lanes,
    /// Wheel movement not yet a whole lane.
    lane_wheel: f32,
    selected: Option<usize>,
    /// A time range (seconds) chosen with shift+drag, for analyses of a stretch.
    pub selection: Option<(f64, f64)>,
    /// Where a shift+drag started.
    selecting_from: Option<f64>,
    cache: Option<(CacheKey, Arc<Screen>)>,
    /// The annotation list's filter text, and the indices of the annotations matching the
    /// filter they were computed for.
    annotation_filter: String,
    annotation_matches: (String, u64, Vec<usize>),
    /// The annotations as the reviewer edits them (the recording keeps the originals).
    pub events: Events,
    /// The last save's outcome, shown above the annotation list.
    pub message: Option<Result<String, String>>,
    /// Where an alt+drag of the selected event started: (pointer time, event onset).
    moving: Option<(f64, f64)>,
    /// Where the traces were drawn last frame (views align their time axes with it).
    pub plot_rect: Rect,
    /// Size of the recording's file: large files get a memory figure in the status line.
    file_bytes: u64,
    /// The two-point measurement: up to two points, set with ctrl+click on a trace.
    pub measure: Vec<MeasurePoint>,
    /// Whether the selection's statistics window is open.
    pub show_stats: bool,
    /// The statistics shown, and the selection and traces they are of.
    stats: Option<SelectionStats>,
}

/// Statistics of the shown traces over a selection: `(selection, traces, per trace)`.
type SelectionStats = ((f64, f64), Vec<usize>, Vec<TraceStats>);

/// A point of a two-point measurement: a time, a trace and the trace's value there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasurePoint {
    pub t: f64,
    pub trace: usize,
    pub value: f32,
}

/// Two points measured against each other.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Seconds from the first point to the second.
    pub dt: f64,
    /// The frequency that time difference implies (1 / |dt|).
    pub hz: f64,
    /// Second value minus first; `None` when the traces have different units.
    pub dv: Option<f32>,
}

/// One trace's statistics over the selection.
#[derive(Debug, Clone)]
pub struct TraceStats {
    pub label: String,
    pub unit: String,
    pub summary: Option<crate::dsp::stats::Summary>,
}

/// Statistics are computed for selections of at most this many samples in all.
const MAX_STATS_SAMPLES: usize = 50_000_000;

#[derive(Debug, Clone, Copy, PartialEq)]
struct CacheKey {
    t0: f64,
    span: f64,
    columns: usize,
    exact_possible: bool,
}

/// Physical amplitude of one channel slot before gains: what clinicians expect per unit.
fn default_scale(unit: &str, physical_range: f64, kind: ChannelType) -> f32 {
    // An ECG is millivolts where EEG is tens of microvolts: 2 mV a slot, in its own unit.
    let volts = match unit.trim() {
        "uV" | "µV" | "microvolt" => Some(1e-6),
        "mV" => Some(1e-3),
        "V" => Some(1.0),
        "nV" => Some(1e-9),
        _ => None,
    };
    match (kind, volts) {
        (ChannelType::Ecg, Some(v)) => (2e-3 / v) as f32,
        (_, Some(v)) => (100e-6 / v) as f32,
        (_, None) => match unit.trim() {
            "T" => 1e-12,
            "T/m" => 4e-11,
            _ if physical_range.is_finite() && physical_range > 0.0 => {
                (physical_range / 2.0) as f32
            }
            _ => 1.0,
        },
    }
}

impl Browser {
    pub fn new(rec: Arc<Recording>, settings: BrowserSettings) -> Self {
        let traces = Traces::new(rec.clone(), settings.montage, settings.filter);
        let n = traces.spec.derivations.len();
        let n_annotations = rec.annotations.len();
        let mut b = Self {
            rec: rec.clone(),
            settings,
            traces,
            t0: 0.0,
            channel_gain: vec![1.0; n],
            fit_requested: false,
            lanes: Lanes::default(),
            lane_wheel: 0.0,
            selected: None,
            selection: None,
            selecting_from: None,
            cache: None,
            annotation_filter: String::new(),
            annotation_matches: (String::new(), 0, (0..n_annotations).collect()),
            events: Events::new(rec.annotations.clone()),
            message: None,
            moving: None,
            plot_rect: Rect::NOTHING,
            file_bytes: 0,
            measure: Vec::new(),
            show_stats: false,
            stats: None,
        };
        b.file_bytes = (b.rec.path.as_ref())
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        b.settings.span_s = b.settings.span_s.clamp(0.1, b.total_s().max(1.0));
        b
    }

    /// The visible window `(start, end)` in seconds.
    pub fn visible_span(&self) -> (f64, f64) {
        (self.t0, self.t0 + self.settings.span_s)
    }

    /// True once what the screen shows is exact (the overview is built or not needed).
    pub fn ready(&self) -> bool {
        self.traces.overview_ready() || self.cache.as_ref().is_some_and(|(_, s)| s.exact)
    }

    /// The trace clicked last (an index in `traces.spec.derivations`).
    pub fn selected_trace(&self) -> Option<usize> {
        self.selected
    }

    /// The label of trace `d` (empty for an index past the traces).
    pub fn trace_label(&self, d: usize) -> &str {
        self.traces
            .spec
            .derivations
            .get(d)
            .map_or("", |der| der.label.as_str())
    }

    /// The labels of the lanes on the current page.
    pub fn page_labels(&mut self) -> Vec<String> {
        let total = self.traces.spec.derivations.len();
        (self
            .lanes
            .page(total, self.settings.channels_per_page)
            .into_iter())
        .map(|d| self.trace_label(d).to_string())
        .collect()
    }

    pub fn trace_labels(&self) -> Vec<String> {
        self.traces
            .spec
            .derivations
            .iter()
            .map(|d| d.label.clone())
            .collect()
    }

    fn total_s(&self) -> f64 {
        self.rec.time_span_s()
    }

    /// New traces for the settings; a new montage also resets what belongs to its traces
    /// (gains, hidden traces, their own filters, the selected trace).
    fn rebuild(&mut self, montage_changed: bool) {
        let own = if montage_changed {
            HashMap::new()
        } else {
            self.traces.spec.channel_filters.clone()
        };
        self.new_traces(own);
        if !montage_changed {
            return;
        }
        self.channel_gain = vec![1.0; self.traces.spec.derivations.len()];
        self.lanes = Lanes::default();
        self.selected = None;
    }

    fn clamp_view(&mut self) {
        let total = self.total_s().max(0.1);
        self.settings.span_s = self.settings.span_s.clamp(0.05, total.max(1.0) * 1.05);
        self.t0 = self.t0.clamp(0.0, (total - self.settings.span_s).max(0.0));
    }

    /// Shows `span` seconds (the whole recording when `None`) from `start`, within the recording.
    pub fn show(&mut self, start: f64, span: Option<f64>) {
        self.settings.span_s = span.unwrap_or_else(|| self.total_s());
        self.clamp_view();
        self.t0 = start;
        self.clamp_view();
    }

    /// Scrolls by `seconds` (positive: later).
    pub fn scroll(&mut self, seconds: f64) {
        self.t0 += seconds;
        self.clamp_view();
    }

    /// Zooms the time axis by `factor` (>1 shows more time) keeping `anchor` (0..1) fixed.
    pub fn zoom(&mut self, factor: f64, anchor: f64) {
        let at = self.t0 + anchor * self.settings.span_s;
        self.settings.span_s *= factor;
        self.clamp_view();
        self.t0 = at - anchor * self.settings.span_s;
        self.clamp_view();
    }

    /// Montage, filter and timebase menus for the menu bar.
    pub fn menus(&mut self, ui: &mut egui::Ui) {
        let before = (self.settings.montage, self.settings.filter);
        ui.menu_button("Montage", |ui| {
            for m in MontageKind::ALL {
                let available = crate::dsp::montage::derivations(&self.rec, m).is_some();
                ui.add_enabled_ui(available, |ui| {
                    ui.radio_value(&mut self.settings.montage, m, m.name());
                });
            }
        });
        ui.menu_button("Filter", |ui| {
            ui.label("Every channel (right-click a channel's label for its own)");
            ui.separator();
            filter_choices(ui, &mut self.settings.filter);
        });
        ui.menu_button("Channels", |ui| {
            let labels = self.trace_labels();
            let kinds: Vec<ChannelType> = (self.traces.spec.derivations.iter())
                .map(|d| self.rec.signals[d.plus].kind)
                .collect();
            self.lanes.menu(ui, &labels, &kinds);
        });
        egui::ComboBox::from_id_salt("channels per page")
            .selected_text(match self.settings.channels_per_page {
                0 => "all channels".to_string(),
                n => format!("{n} channels"),
            })
            .show_ui(ui, |ui| {
                for n in PER_PAGE_CHOICES {
                    let text = if n == 0 {
                        "all".to_string()
                    } else {
                        n.to_string()
                    };
                    ui.selectable_value(&mut self.settings.channels_per_page, n, text);
                }
            })
            .response
            .on_hover_text(
                "lanes on one page (Shift+PageUp/PageDown, the wheel or the scrollbar move it)",
            );
        ui.separator();
        egui::ComboBox::from_label("per page")
            .selected_text(format_span(self.settings.span_s))
            .show_ui(ui, |ui| {
                let longest = self.total_s().max(1.0) * 1.01;
                for s in TIMEBASES_S.into_iter().filter(|&s| s <= longest) {
                    if ui
                        .selectable_label(self.settings.span_s == s, format_span(s))
                        .clicked()
                    {
                        self.settings.span_s = s;
                        self.clamp_view();
                    }
                }
                if ui.selectable_label(false, "whole recording").clicked() {
                    self.settings.span_s = self.total_s().max(0.1);
                    self.t0 = 0.0;
                }
            });
        if ui.button("Amplitude −").clicked() {
            self.settings.gain /= 1.25;
        }
        if ui.button("Amplitude +").clicked() {
            self.settings.gain *= 1.25;
        }
        if ui
            .button("Fit")
            .on_hover_text("scale each channel to its own range in this window (F)")
            .clicked()
        {
            self.fit_requested = true;
        }
        ui.toggle_value(&mut self.settings.overlap, "Overlap")
            .on_hover_text("let traces leave their lanes (off: each is clipped to its own)");
        ui.toggle_value(&mut self.settings.show_annotations, "Annotations");
        if before != (self.settings.montage, self.settings.filter) {
            self.rebuild(before.0 != self.settings.montage);
        }
    }

    pub fn status(&mut self, ui: &mut egui::Ui) {
        let rec = &self.rec;
        ui.label(format!(
            "{} · {} · {} signals · {}",
            rec.display_name(),
            rec.format,
            rec.signals.len(),
            format_span(rec.duration_s())
        ));
        ui.separator();
        ui.label(format!(
            "{} – {}",
            self.clock(self.t0),
            self.clock(self.t0 + self.settings.span_s)
        ));
        ui.separator();
        ui.label(self.traces.spec.montage.name());
        ui.separator();
        let own = &self.traces.spec.channel_filters;
        let text = match own.len() {
            0 => describe_filter(&self.settings.filter),
            n => format!(
                "{} ({n} channel(s) their own)",
                describe_filter(&self.settings.filter)
            ),
        };
        let details: Vec<String> = (own.iter())
            .map(|(&d, f)| format!("{}: {}", self.trace_label(d), describe_filter(f)))
            .collect();
        let label = ui.label(text);
        if !details.is_empty() {
            label.on_hover_text(details.join("\n"));
        }
        if let Some((a, b)) = self.selection {
            ui.separator();
            ui.label(format!(
                "selection {} – {} ({})",
                format_time(a),
                format_time(b),
                format_span(b - a)
            ))
            .on_hover_text("shift+drag selects a time range; Esc clears it");
            ui.toggle_value(&mut self.show_stats, "statistics")
                .on_hover_text("per channel: mean, SD, min, max, peak to peak, RMS");
        }
        if let Some(m) = self.measurement() {
            ui.separator();
            let dv = match m.dv {
                Some(v) => {
                    let (v, unit) = shown_in(v, self.trace_unit(self.measure[1].trace));
                    format!(" · Δ {} {unit}", fmt_value(v))
                }
                None => String::new(),
            };
            ui.label(format!("Δt {:.3} s · {:.2} Hz{dv}", m.dt, m.hz))
                .on_hover_text("ctrl+click two points on the traces; Esc clears");
        }
        if !self.traces.overview_ready() {
            ui.separator();
            ui.add(
                egui::ProgressBar::new(self.traces.overview_progress())
                    .desired_width(140.0)
                    .text("building overview"),
            );
        }
        if self.file_bytes > 64 << 20
            && let Some(m) = ProcessMemory::now()
        {
            ui.separator();
            ui.label(format!("memory {} MB", m.own >> 20))
                .on_hover_text(format!(
                    "{} MB of ede's own, plus {} MB of the file's pages the system keeps cached \
                 (handed back after the overview; reclaimed whenever memory is needed)",
                    m.own >> 20,
                    m.file_pages >> 20
                ));
        }
        if !rec.warnings.is_empty() {
            ui.separator();
            ui.colored_label(
                Color32::from_rgb(200, 140, 0),
                // No warning sign: egui's fonts have none (a UI test drew tofu and failed).
                match rec.warnings.len() {
                    1 => "1 warning".to_string(),
                    n => format!("{n} warnings"),
                },
            )
            .on_hover_text(rec.warnings.join("\n"));
        }
    }

    fn clock(&self, t: f64) -> String {
        let at = self.rec.start + chrono::Duration::milliseconds((t * 1000.0).round() as i64);
        at.format("%H:%M:%S%.3f").to_string()
    }

    /// Side panel (annotations) and the traces.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if self.settings.show_annotations {
            egui::Panel::right("annotations")
                .default_size(230.0)
                .show(ui, |ui| self.annotation_list(ui));
        }
        egui::CentralPanel::default()
            .frame(egui::Frame::new().fill(Color32::from_rgb(252, 252, 250)))
            .show(ui, |ui| self.traces_ui(ui));
        self.stats_window(ui.ctx());
    }

    /// Recomputes which annotations contain the filter text (any case) when it changed.
    fn refresh_annotation_matches(&mut self) {
        let filter = self.annotation_filter.trim().to_lowercase();
        let version = self.events.version;
        if (&self.annotation_matches.0, self.annotation_matches.1) != (&filter, version) {
            let matches = (self.events.list().iter().enumerate())
                .filter(|(_, a)| filter.is_empty() || a.text.to_lowercase().contains(&filter))
                .map(|(k, _)| k)
                .collect();
            self.annotation_matches = (filter, version, matches);
        }
    }

    /// Puts annotation time `t` near the left edge, as a click in the list does.
    fn jump_to(&mut self, t: f64) {
        self.t0 = t - 0.1 * self.settings.span_s;
        self.clamp_view();
    }

    fn annotation_list(&mut self, ui: &mut egui::Ui) {
        match self.events.editor_ui(ui, &self.rec) {
            Some(EventAction::Jump(t)) => self.jump_to(t),
            Some(EventAction::SaveCopy(p)) => {
                let r = self.events.save_copy(&self.rec, &p);
                self.message = Some(r.map(|()| format!("saved {}", p.display())));
            }
            Some(EventAction::SaveTsv(p)) => {
                let r = self.events.save_tsv(&p);
                self.message = Some(r.map(|()| format!("saved {}", p.display())));
            }
            None => {}
        }
        match &self.message {
            Some(Ok(m)) => {
                ui.small(m);
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            None => {}
        }
        ui.separator();
        self.refresh_annotation_matches();
        let total = self.events.list().len();
        let shown = self.annotation_matches.2.len();
        if shown == total {
            ui.heading(format!("Annotations ({total})"));
        } else {
            ui.heading(format!("Annotations ({shown} of {total})"));
        }
        let edit = ui.add(
            egui::TextEdit::singleline(&mut self.annotation_filter)
                .hint_text("filter, e.g. V or spindle")
                .desired_width(f32::INFINITY),
        );
        if edit.changed() {
            // The list above was made with the old text: show the new one's next frame.
            ui.ctx().request_repaint();
        }
        let (annotations, matches) = (self.events.list(), &self.annotation_matches.2);
        let onsets = || matches.iter().map(|&k| annotations[k].onset);
        // Previous/next matching annotation relative to where a jump puts one.
        let here = self.t0 + 0.1 * self.settings.span_s;
        let mut jump = None;
        ui.horizontal(|ui| {
            if ui.button("< Previous").clicked() {
                jump = onsets().filter(|&t| t < here - 1e-6).max_by(f64::total_cmp);
            }
            if ui.button("Next >").clicked() {
                jump = onsets().filter(|&t| t > here + 1e-6).min_by(f64::total_cmp);
            }
        });
        ui.separator();
        let (t0, t1) = (self.t0, self.t0 + self.settings.span_s);
        let mut select = None;
        egui::ScrollArea::vertical().show_rows(ui, 18.0, matches.len(), |ui, rows| {
            for &k in &matches[rows] {
                let a = &annotations[k];
                let visible = a.onset >= t0 && a.onset < t1;
                let text = format!("{}  {}", format_time(a.onset), a.text);
                let chosen = self.events.selected == Some(k);
                if ui.selectable_label(visible || chosen, text).clicked() {
                    jump = Some(a.onset);
                    select = Some(k);
                }
            }
        });
        if let Some(t) = jump {
            self.jump_to(t);
        }
        if select.is_some() {
            self.events.selected = select;
        }
    }

    /// `paged`: more lanes than one page holds (the vertical wheel then moves the lanes);
    /// `row_h`: a lane's height.
    fn handle_input(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        plot: Rect,
        (paged, row_h): (bool, f32),
    ) {
        let span = self.settings.span_s;
        // Keys typed into a text field (the annotation filter) are not navigation.
        let typing = ui.ctx().egui_wants_keyboard_input();
        ui.input(|i| {
            if typing {
                return;
            }
            let page = self.settings.channels_per_page.max(1) as isize;
            match (
                i.key_pressed(egui::Key::PageDown),
                i.key_pressed(egui::Key::PageUp),
            ) {
                (true, _) if i.modifiers.shift => self.lanes.scroll(page),
                (_, true) if i.modifiers.shift => self.lanes.scroll(-page),
                (true, _) => self.scroll(span),
                (_, true) => self.scroll(-span),
                _ => {}
            }
            if i.key_pressed(egui::Key::ArrowRight) {
                self.scroll(span / 10.0);
            }
            if i.key_pressed(egui::Key::ArrowLeft) {
                self.scroll(-span / 10.0);
            }
            if i.key_pressed(egui::Key::Home) {
                self.t0 = 0.0;
            }
            if i.key_pressed(egui::Key::End) {
                self.t0 = self.total_s();
                self.clamp_view();
            }
            for (key, f) in [(egui::Key::ArrowUp, 1.25f32), (egui::Key::ArrowDown, 0.8)] {
                if i.key_pressed(key) {
                    match (i.modifiers.shift, self.selected) {
                        (true, Some(s)) => self.channel_gain[s] *= f,
                        _ => self.settings.gain *= f,
                    }
                }
            }
            if i.key_pressed(egui::Key::Plus) || i.key_pressed(egui::Key::Equals) {
                self.zoom(0.5, 0.5);
            }
            if i.key_pressed(egui::Key::Minus) {
                self.zoom(2.0, 0.5);
            }
            if i.key_pressed(egui::Key::Escape) {
                self.selection = None;
                self.measure.clear();
            }
            if i.key_pressed(egui::Key::F) && !i.modifiers.any() {
                self.fit_requested = true;
            }
            if i.modifiers.command && i.key_pressed(egui::Key::Z) {
                if i.modifiers.shift {
                    self.events.redo();
                } else {
                    self.events.undo();
                }
            }
            if i.modifiers.command && i.key_pressed(egui::Key::Y) {
                self.events.redo();
            }
            if (i.key_pressed(egui::Key::Delete) || i.key_pressed(egui::Key::Backspace))
                && let Some(k) = self.events.selected
            {
                self.events.delete(k);
            }
        });
        if response.hovered() {
            let (scroll, zoom, ctrl, pointer) = ui.input(|i| {
                (
                    i.smooth_scroll_delta,
                    i.zoom_delta(),
                    i.modifiers.ctrl || i.modifiers.command,
                    i.pointer.hover_pos(),
                )
            });
            let anchor = pointer
                .map(|p| ((p.x - plot.left()) / plot.width()).clamp(0.0, 1.0) as f64)
                .unwrap_or(0.5);
            if zoom != 1.0 {
                self.zoom(1.0 / zoom as f64, anchor);
            } else if !ctrl && paged && scroll.y != 0.0 {
                self.lane_wheel -= scroll.y / row_h.max(1.0);
                let rows = self.lane_wheel.trunc();
                self.lane_wheel -= rows;
                self.lanes.scroll(rows as isize);
            } else if !ctrl {
                let d = if scroll.x != 0.0 { scroll.x } else { scroll.y };
                if d != 0.0 {
                    self.scroll(-(d as f64) / plot.width() as f64 * span);
                }
            }
        }
        // Shift+drag selects a time range; alt+drag moves the selected event; a plain drag pans.
        let (t0, total) = (self.t0, self.total_s());
        let time_at =
            |x: f32| (t0 + ((x - plot.left()) / plot.width()) as f64 * span).clamp(0.0, total);
        // Events: double-click adds one with the first label, keys 1-9 their labels.
        let latest = ui.input(|i| i.pointer.latest_pos());
        if let Some(p) = latest.filter(|p| plot.contains(*p) && response.contains_pointer()) {
            let t = time_at(p.x);
            let mut add = None;
            if response.double_clicked() {
                add = Some(self.events.shortcut(1).unwrap_or_else(|| "event".into()));
            }
            let typing = ui.ctx().egui_wants_keyboard_input();
            const KEYS: [egui::Key; 9] = [
                egui::Key::Num1,
                egui::Key::Num2,
                egui::Key::Num3,
                egui::Key::Num4,
                egui::Key::Num5,
                egui::Key::Num6,
                egui::Key::Num7,
                egui::Key::Num8,
                egui::Key::Num9,
            ];
            for (k, key) in KEYS.iter().enumerate() {
                if !typing && ui.input(|i| i.key_pressed(*key) && !i.modifiers.any()) {
                    add = add.or(self.events.shortcut(k + 1));
                }
            }
            if let Some(text) = add {
                self.events.add(Annotation {
                    onset: t,
                    duration: 0.0,
                    text,
                });
            }
        }
        let pointer = response.interact_pointer_pos();
        let alt = ui.input(|i| i.modifiers.alt);
        if response.drag_started()
            && alt
            && let (Some(k), Some(p)) = (self.events.selected, pointer)
            && let Some(a) = self.events.list().get(k)
        {
            self.moving = Some((time_at(p.x), a.onset));
            self.events.checkpoint();
        }
        if let (Some((from, onset)), Some(p), Some(k)) =
            (self.moving, pointer, self.events.selected)
        {
            if response.dragged()
                && let Some(a) = self.events.list().get(k)
            {
                let moved = Annotation {
                    onset: (onset + time_at(p.x) - from).clamp(0.0, total),
                    ..a.clone()
                };
                self.events.set_quietly(k, moved);
            }
            if response.drag_stopped() {
                self.moving = None;
            }
            return;
        }
        if response.drag_started() && ui.input(|i| i.modifiers.shift) {
            self.selecting_from = pointer.map(|p| time_at(p.x));
        }
        if response.dragged() {
            match (self.selecting_from, pointer) {
                (Some(a), Some(p)) => {
                    let b = time_at(p.x);
                    self.selection = Some((a.min(b), a.max(b)));
                }
                _ => {
                    let dx = response.drag_delta().x as f64;
                    self.scroll(-dx / plot.width() as f64 * span);
                }
            }
        }
        if response.drag_stopped() && self.selecting_from.take().is_some() {
            self.selection = self.selection.filter(|(a, b)| b > a);
        }
    }

    fn traces_ui(&mut self, ui: &mut egui::Ui) {
        let full = ui.available_rect_before_wrap();
        let response = ui.allocate_rect(full, Sense::click_and_drag());
        let total = self.traces.spec.derivations.len();
        let per_page = self.settings.channels_per_page;
        let visible = self.lanes.page(total, per_page);
        let shown = self.lanes.shown(total).len();
        let paged = visible.len() < shown;
        let plot = Rect::from_min_max(
            Pos2::new(full.left() + LABEL_WIDTH, full.top() + 4.0),
            Pos2::new(
                full.right() - if paged { 16.0 } else { 6.0 },
                full.bottom() - AXIS_HEIGHT,
            ),
        );
        if plot.width() < 20.0 || plot.height() < 20.0 {
            return;
        }
        if self.plot_rect != plot {
            // Views aligned with the traces draw with this next frame.
            ui.ctx().request_repaint();
        }
        self.plot_rect = plot;
        let row_h = plot.height() / visible.len().max(1) as f32;
        self.handle_input(ui, &response, plot, (paged, row_h));
        self.clamp_view();
        let track = Rect::from_min_max(
            Pos2::new(plot.right() + 4.0, plot.top()),
            Pos2::new(full.right() - 2.0, plot.bottom()),
        );
        self.lanes.scrollbar(ui, track, visible.len(), shown);
        let ppp = ui.ctx().pixels_per_point();
        let columns = (plot.width() * ppp).round().max(1.0) as usize;
        let screen = self.screen(columns);
        if !screen.exact {
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(100));
        }
        let painter = ui.painter_at(full);
        if std::mem::take(&mut self.fit_requested) {
            self.fit(&screen, &visible);
        }
        self.draw_time_grid(&painter, plot, full);
        let annotation_labels = self.draw_annotations(&painter, plot);
        let mut mesh = egui::Mesh::default();
        let col_w = plot.width() / columns as f32;
        let label_font = egui::FontId::proportional(12.0_f32.min(row_h * 0.8).max(7.0));
        for (row, &d) in visible.iter().enumerate() {
            let der = &self.traces.spec.derivations[d];
            let sig = &self.rec.signals[der.plus];
            let center = plot.top() + (row as f32 + 0.5) * row_h;
            let selected = self.selected == Some(d);
            let color = if selected {
                Color32::from_rgb(200, 30, 30)
            } else {
                trace_colour(sig.kind)
            };
            let scale = self.lane_scale(d);
            let cols = &screen.columns[d];
            let baseline = screen.baselines[d];
            let px_per_unit = row_h / scale;
            let mut prev: Option<(f32, f32)> = None;
            for (c, v) in cols.iter().enumerate() {
                if v[0].is_nan() {
                    prev = None;
                    continue;
                }
                let mut lo = center - (v[1] - baseline) * px_per_unit;
                let mut hi = center - (v[0] - baseline) * px_per_unit;
                if let Some((plo, phi)) = prev {
                    // Join neighbouring columns so steep edges stay connected.
                    lo = lo.min(phi);
                    hi = hi.max(plo);
                }
                prev = Some((
                    center - (v[1] - baseline) * px_per_unit,
                    center - (v[0] - baseline) * px_per_unit,
                ));
                let x = plot.left() + c as f32 * col_w;
                // Each trace keeps to its lane unless overlapping is asked for.
                let (slot_top, slot_bottom) = if self.settings.overlap {
                    (plot.top(), plot.bottom())
                } else {
                    (center - row_h / 2.0, center + row_h / 2.0)
                };
                let top = lo.clamp(slot_top, slot_bottom);
                let bottom = hi.clamp(slot_top, slot_bottom).max(top + 1.0 / ppp);
                mesh.add_colored_rect(
                    Rect::from_min_max(
                        Pos2::new(x, top),
                        Pos2::new(x + col_w.max(1.0 / ppp), bottom),
                    ),
                    color,
                );
            }
            // The label, with the amplitude of a slot.
            let label_rect = Rect::from_min_max(
                Pos2::new(full.left(), center - row_h / 2.0),
                Pos2::new(plot.left() - 4.0, center + row_h / 2.0),
            );
            if selected {
                painter.rect_filled(label_rect, 2.0, Color32::from_rgb(255, 225, 225));
            }
            // A channel the file marks bad keeps its lane, its label struck in red.
            let (text, ink) = if sig.bad {
                (
                    format!("{} (bad)", der.label),
                    Color32::from_rgb(190, 40, 40),
                )
            } else {
                (der.label.clone(), Color32::from_gray(20))
            };
            painter.text(
                Pos2::new(full.left() + 6.0, center),
                egui::Align2::LEFT_CENTER,
                text,
                label_font.clone(),
                ink,
            );
            if row_h > 26.0 {
                painter.text(
                    Pos2::new(plot.left() - 6.0, center + row_h * 0.25),
                    egui::Align2::RIGHT_CENTER,
                    {
                        let (v, unit) = shown_in(scale, &sig.unit);
                        format!("{} {unit}", fmt_amp(v))
                    },
                    egui::FontId::proportional(9.0),
                    Color32::from_gray(120),
                );
            }
            let id = ui.scope_id().with(("label", d));
            let r = ui.interact(label_rect, id, Sense::click());
            if r.clicked() {
                self.selected = if selected { None } else { Some(d) };
            }
            let r = r.on_hover_text(format!(
                "{} · {} Hz · {}\nclick: select (shift+↑/↓ scales it) · right-click: hide, \
                 this channel's filters",
                der.label, sig.fs, sig.unit
            ));
            let mut own = self.traces.spec.channel_filters.get(&d).copied();
            let before = own;
            r.context_menu(|ui| {
                if ui.button("Hide").clicked() {
                    self.lanes.hidden.insert(d);
                    ui.close();
                }
                ui.separator();
                let mut custom = own.is_some();
                ui.checkbox(&mut custom, "own filters")
                    .on_hover_text("off: the Filter menu's, as every channel");
                own = match (custom, own) {
                    (false, _) => None,
                    (true, None) => Some(self.settings.filter),
                    (true, Some(f)) => Some(f),
                };
                if let Some(f) = own.as_mut() {
                    filter_choices(ui, f);
                }
            });
            if own != before {
                self.set_channel_filter(d, own);
            }
        }
        painter.add(egui::Shape::mesh(mesh));
        // Labels go over the traces so that a large deflection cannot hide them.
        painter.extend(annotation_labels);
        self.cursor_and_measure(ui, &response, &painter, plot, &visible, row_h);
        painter.rect_stroke(
            plot,
            0.0,
            Stroke::new(1.0, Color32::from_gray(170)),
            egui::StrokeKind::Outside,
        );
    }

    /// Sets each shown trace's gain so that its deflections in `screen` (the 99th percentile
    /// of the columns' distances from its baseline, so one spike does not flatten the rest)
    /// fill 45 % of the lane each side of its centre. Flat traces keep their gain.
    fn fit(&mut self, screen: &Screen, visible: &[usize]) {
        for &d in visible {
            let base = screen.baselines[d];
            let mut extents: Vec<f32> = screen.columns[d]
                .iter()
                .filter(|v| v[0].is_finite() && v[1].is_finite())
                .map(|v| (v[1] - base).max(base - v[0]))
                .collect();
            if extents.is_empty() {
                continue;
            }
            let k = ((extents.len() - 1) as f32 * 0.99).round() as usize;
            let (_, &mut extent, _) = extents.select_nth_unstable_by(k, f32::total_cmp);
            if !(extent.is_finite() && extent > 0.0) {
                continue;
            }
            let sig = &self.rec.signals[self.traces.spec.derivations[d].plus];
            let unit_scale =
                default_scale(&sig.unit, sig.physical_max - sig.physical_min, sig.kind);
            // px_per_unit = row_h / scale and extent * px_per_unit = 0.45 row_h.
            self.channel_gain[d] = unit_scale * 0.45 / (extent * self.settings.gain);
        }
    }

    /// The amplitude of one lane of trace `d` (physical units), gains applied.
    pub fn lane_scale(&self, d: usize) -> f32 {
        let sig = &self.rec.signals[self.traces.spec.derivations[d].plus];
        default_scale(&sig.unit, sig.physical_max - sig.physical_min, sig.kind)
            / (self.settings.gain * self.channel_gain[d])
    }

    /// Gives trace `d` its own display filter (`None`: the Filter menu's again).
    pub fn set_channel_filter(&mut self, d: usize, filter: Option<DisplayFilter>) {
        let mut own = self.traces.spec.channel_filters.clone();
        match filter {
            Some(f) => own.insert(d, f),
            None => own.remove(&d),
        };
        self.new_traces(own);
    }

    /// Traces for the current montage and filters, with `own` filters for some of them.
    fn new_traces(&mut self, own: HashMap<usize, DisplayFilter>) {
        self.traces = Traces::with_channel_filters(
            self.rec.clone(),
            self.settings.montage,
            self.settings.filter,
            own,
        );
        self.settings.montage = self.traces.spec.montage;
        self.cache = None;
    }

    /// The recording's signals behind the shown traces (each trace's electrode and, for a
    /// bipolar montage, its reference), in recording order.
    pub fn shown_signals(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for (d, der) in self.traces.spec.derivations.iter().enumerate() {
            if self.lanes.hidden.contains(&d) {
                continue;
            }
            out.push(der.plus);
            if let crate::dsp::montage::Reference::Channel(r) = der.reference {
                out.push(r);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Writes the visible window (the whole data records covering it) of the shown traces'
    /// signals, with the events inside it, as EDF+/BDF+ at `path`.
    pub fn export_visible_clip(&self, path: &std::path::Path) -> Result<(), String> {
        use crate::recording::edf_write::{Clip, write_clip};
        let clip = Clip::covering(&self.rec, self.visible_span(), self.shown_signals());
        write_clip(&self.rec, path, self.events.list(), Some(&clip)).map_err(|e| e.to_string())
    }

    /// The unit of trace `d`.
    fn trace_unit(&self, d: usize) -> &str {
        self.rec.signals[self.traces.spec.derivations[d].plus]
            .unit
            .trim()
    }

    /// The value of trace `d` (montage applied, display filters not) at the sample nearest to
    /// time `t`; `None` in a gap or outside the recording.
    pub fn value_at(&self, d: usize, t: f64) -> Option<f32> {
        let der = self.traces.spec.derivations.get(d)?;
        let k = self.rec.sample_at(der.plus, t)?;
        let v = *self.traces.spec.derive(&[d], k, 1).ok()?.first()?.first()?;
        v.is_finite().then_some(v)
    }

    /// Adds a point to the two-point measurement (a third starts a new one).
    pub fn add_measure_point(&mut self, d: usize, t: f64) {
        if let Some(value) = self.value_at(d, t) {
            if self.measure.len() == 2 {
                self.measure.clear();
            }
            self.measure.push(MeasurePoint { t, trace: d, value });
        }
    }

    /// The two points against each other, once both are set.
    pub fn measurement(&self) -> Option<Measurement> {
        let [a, b] = self.measure.as_slice() else {
            return None;
        };
        let dt = b.t - a.t;
        Some(Measurement {
            dt,
            hz: 1.0 / dt.abs(),
            dv: (self.trace_unit(a.trace) == self.trace_unit(b.trace)).then_some(b.value - a.value),
        })
    }

    /// The cursor (time and the value of the trace under the pointer) and the measured points;
    /// ctrl+click sets a point.
    fn cursor_and_measure(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        painter: &egui::Painter,
        plot: Rect,
        visible: &[usize],
        row_h: f32,
    ) {
        let (t0, span) = (self.t0, self.settings.span_s);
        let x_of = |t: f64| plot.left() + ((t - t0) / span) as f32 * plot.width();
        let orange = Color32::from_rgb(230, 120, 0);
        for (k, p) in self.measure.iter().enumerate() {
            let x = x_of(p.t);
            if x >= plot.left() && x <= plot.right() {
                painter.line_segment(
                    [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                    Stroke::new(1.5, orange),
                );
                painter.text(
                    Pos2::new(x + 3.0, plot.bottom() - 3.0),
                    egui::Align2::LEFT_BOTTOM,
                    ["A", "B"][k],
                    egui::FontId::proportional(12.0),
                    orange,
                );
            }
        }
        let Some(pos) = response.hover_pos().filter(|p| plot.contains(*p)) else {
            return;
        };
        let row = (((pos.y - plot.top()) / row_h) as usize).min(visible.len().saturating_sub(1));
        let Some(&d) = visible.get(row) else {
            return;
        };
        let t = t0 + ((pos.x - plot.left()) / plot.width()) as f64 * span;
        // The modifiers the click itself carried (they may have changed since in this frame).
        let ctrl_click = ui.input(|i| {
            i.events.iter().any(|e| {
                matches!(e, egui::Event::PointerButton { pressed: false, modifiers, .. }
                    if modifiers.command || modifiers.ctrl)
            })
        });
        if response.clicked() && ctrl_click {
            self.add_measure_point(d, t);
        }
        painter.line_segment(
            [
                Pos2::new(pos.x, plot.top()),
                Pos2::new(pos.x, plot.bottom()),
            ],
            Stroke::new(1.0, Color32::from_gray(150)),
        );
        let value = match self.value_at(d, t) {
            Some(v) => {
                let (v, unit) = shown_in(v, self.trace_unit(d));
                format!("{} {unit}", fmt_value(v))
            }
            None => "no data".into(),
        };
        let text = format!("{} · {} · {value}", self.clock(t), self.trace_label(d));
        let font = egui::FontId::proportional(12.0);
        let galley = painter.layout_no_wrap(text, font, Color32::from_gray(20));
        let at = Pos2::new(
            (pos.x + 10.0).min(plot.right() - galley.size().x - 4.0),
            (pos.y - galley.size().y - 8.0).max(plot.top() + 2.0),
        );
        painter.rect_filled(
            Rect::from_min_size(at, galley.size()).expand(3.0),
            3.0,
            Color32::from_rgba_unmultiplied(255, 255, 240, 235),
        );
        painter.galley(at, galley, Color32::from_gray(20));
    }

    /// Each shown trace's statistics over the selection (recomputed when either changes).
    pub fn selection_stats(&mut self) -> Option<&[TraceStats]> {
        let (a, b) = self.selection?;
        let visible = self.lanes.shown(self.traces.spec.derivations.len());
        let fresh = self
            .stats
            .as_ref()
            .is_some_and(|(sel, v, _)| *sel == (a, b) && *v == visible);
        if !fresh {
            let spec = self.traces.spec.clone();
            let total: usize = (visible.iter())
                .map(|&d| ((b - a) * spec.fs(d)) as usize)
                .sum();
            let stats = visible
                .iter()
                .map(|&d| {
                    let plus = spec.derivations[d].plus;
                    let summary = (total <= MAX_STATS_SAMPLES)
                        .then(|| {
                            let k0 = self.rec.sample_at(plus, a)?;
                            let k1 = self.rec.sample_at(plus, b)?;
                            let x = spec.derive(&[d], k0, k1.saturating_sub(k0) + 1).ok()?;
                            crate::dsp::stats::Summary::of(x.first()?)
                        })
                        .flatten();
                    TraceStats {
                        label: spec.derivations[d].label.clone(),
                        unit: self.rec.signals[plus].unit.trim().to_string(),
                        summary,
                    }
                })
                .collect();
            self.stats = Some(((a, b), visible, stats));
        }
        self.stats.as_ref().map(|(_, _, s)| s.as_slice())
    }

    fn stats_window(&mut self, ctx: &egui::Context) {
        if !self.show_stats || self.selection.is_none() {
            return;
        }
        let mut open = true;
        let (a, b) = self.selection.unwrap_or_default();
        let range = format!(
            "{} – {} ({})",
            format_time(a),
            format_time(b),
            format_span(b - a)
        );
        let rows = self
            .selection_stats()
            .map(<[TraceStats]>::to_vec)
            .unwrap_or_default();
        egui::Window::new("Selection statistics")
            .open(&mut open)
            .default_pos(self.plot_rect.center())
            .show(ctx, |ui| {
                ui.label(range);
                egui::ScrollArea::vertical()
                    .max_height(400.0)
                    .show(ui, |ui| {
                        egui::Grid::new("stats grid").striped(true).show(ui, |ui| {
                            for h in ["channel", "mean", "SD", "min", "max", "p-p", "RMS", ""] {
                                ui.strong(h);
                            }
                            ui.end_row();
                            for r in &rows {
                                ui.label(&r.label);
                                match &r.summary {
                                    Some(s) => {
                                        for v in
                                            [s.mean, s.sd, s.min, s.max, s.peak_to_peak(), s.rms]
                                        {
                                            ui.label(fmt_value(v as f32));
                                        }
                                    }
                                    None => {
                                        for _ in 0..6 {
                                            ui.label("–");
                                        }
                                    }
                                }
                                ui.label(&r.unit);
                                ui.end_row();
                            }
                        });
                    });
                if rows.iter().all(|r| r.summary.is_none()) {
                    ui.label(format!(
                        "no samples: the selection is empty, in a gap, or over \
                         {MAX_STATS_SAMPLES} samples"
                    ));
                }
            });
        self.show_stats = open;
    }

    /// Asks for "Fit" at the next frame (as the button and the F key do).
    pub fn request_fit(&mut self) {
        self.fit_requested = true;
    }

    fn screen(&mut self, columns: usize) -> Arc<Screen> {
        let key = CacheKey {
            t0: self.t0,
            span: self.settings.span_s,
            columns,
            exact_possible: self.traces.overview_ready(),
        };
        if let Some((k, s)) = &self.cache
            && *k == key
            && (s.exact || !key.exact_possible)
        {
            return s.clone();
        }
        let s = Arc::new(self.traces.screen(self.t0, self.settings.span_s, columns));
        self.cache = Some((key, s.clone()));
        s
    }

    fn draw_time_grid(&self, painter: &egui::Painter, plot: Rect, full: Rect) {
        let span = self.settings.span_s;
        let step = nice_step(span / 10.0);
        let first = (self.t0 / step).ceil() as i64;
        let last = ((self.t0 + span) / step).floor() as i64;
        let x_of = |t: f64| plot.left() + ((t - self.t0) / span) as f32 * plot.width();
        // One-second minor lines when they are at least 8 px apart.
        if step > 1.0 && plot.width() / span as f32 >= 8.0 {
            for s in (self.t0.ceil() as i64)..=((self.t0 + span) as i64) {
                let x = x_of(s as f64);
                painter.line_segment(
                    [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                    Stroke::new(0.5, Color32::from_gray(235)),
                );
            }
        }
        for k in first..=last {
            let t = k as f64 * step;
            let x = x_of(t);
            painter.line_segment(
                [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                Stroke::new(1.0, Color32::from_gray(215)),
            );
            painter.text(
                Pos2::new(x, plot.bottom() + 3.0),
                egui::Align2::CENTER_TOP,
                format_time(t),
                egui::FontId::proportional(11.0),
                Color32::from_gray(40),
            );
            painter.text(
                Pos2::new(x, plot.bottom() + 18.0),
                egui::Align2::CENTER_TOP,
                self.clock(t),
                egui::FontId::proportional(10.0),
                Color32::from_gray(110),
            );
        }
        // Gaps of discontinuous recordings.
        let segs = &self.rec.segments;
        for w in segs.windows(2) {
            let end = w[0].start_s + w[0].records as f64 * self.rec.record_duration;
            let (a, b) = (
                x_of(end).max(plot.left()),
                x_of(w[1].start_s).min(plot.right()),
            );
            if b > a {
                painter.rect_filled(
                    Rect::from_min_max(Pos2::new(a, plot.top()), Pos2::new(b, plot.bottom())),
                    0.0,
                    Color32::from_gray(225),
                );
                painter.text(
                    Pos2::new((a + b) / 2.0, plot.top() + 4.0),
                    egui::Align2::CENTER_TOP,
                    "gap",
                    egui::FontId::proportional(10.0),
                    Color32::from_gray(100),
                );
            }
        }
        let _ = full;
    }

    /// Draws the selection, annotation bands and markers (under the traces) and returns the
    /// labels, to be drawn over them.
    fn draw_annotations(&self, painter: &egui::Painter, plot: Rect) -> Vec<egui::Shape> {
        let (t0, t1) = self.visible_span();
        let span = self.settings.span_s;
        let x_of = |t: f64| plot.left() + ((t - t0) / span) as f32 * plot.width();
        if let Some((a, b)) = self.selection.filter(|&(a, b)| b >= t0 && a <= t1) {
            let (xa, xb) = (x_of(a).max(plot.left()), x_of(b).min(plot.right()));
            painter.rect_filled(
                Rect::from_min_max(Pos2::new(xa, plot.top()), Pos2::new(xb, plot.bottom())),
                0.0,
                Color32::from_rgba_unmultiplied(255, 200, 60, 50),
            );
        }
        let color = Color32::from_rgb(30, 120, 200);
        let chosen = self.events.selected.and_then(|i| self.events.list().get(i));
        let visible: Vec<_> = (self.events.list().iter())
            .filter(|a| a.onset + a.duration >= t0 && a.onset <= t1)
            .collect();
        // Dense markers (the beats of an ECG seen over minutes) would hide the traces: they
        // become ticks along the top edge, one per pixel column, without labels.
        let dense = visible.len() as f32 > plot.width() / 6.0;
        let marker_bottom = if dense {
            plot.top() + 8.0
        } else {
            plot.bottom()
        };
        let mut last_column = f32::NEG_INFINITY;
        let mut label_end = f32::NEG_INFINITY;
        let mut labels = Vec::new();
        for a in visible {
            let x = x_of(a.onset);
            if a.duration > 0.0 {
                let x2 = x_of(a.onset + a.duration).min(plot.right());
                painter.rect_filled(
                    Rect::from_min_max(
                        Pos2::new(x.max(plot.left()), plot.top()),
                        Pos2::new(x2, plot.bottom()),
                    ),
                    0.0,
                    Color32::from_rgba_unmultiplied(30, 120, 200, 18),
                );
            }
            if x < plot.left() {
                continue;
            }
            if chosen.is_some_and(|c| std::ptr::eq(c, a)) {
                painter.line_segment(
                    [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                    Stroke::new(2.5, Color32::from_rgb(220, 60, 140)),
                );
            } else if x.round() != last_column {
                last_column = x.round();
                painter.line_segment(
                    [Pos2::new(x, plot.top()), Pos2::new(x, marker_bottom)],
                    Stroke::new(1.0, color.gamma_multiply(0.6)),
                );
            }
            // A label that would overlap the one before is left out (the list has them all).
            if dense || x + 2.0 < label_end {
                continue;
            }
            let galley_pos = Pos2::new(x + 2.0, plot.top() + 1.0);
            let text =
                painter.layout_no_wrap(a.text.clone(), egui::FontId::proportional(11.0), color);
            label_end = galley_pos.x + text.size().x + 6.0;
            labels.push(egui::Shape::rect_filled(
                Rect::from_min_size(galley_pos, text.size() + Vec2::new(4.0, 0.0)),
                2.0,
                Color32::from_rgba_unmultiplied(255, 255, 255, 220),
            ));
            labels.push(egui::Shape::galley(
                galley_pos + Vec2::new(2.0, 0.0),
                text,
                color,
            ));
        }
        labels
    }
}

/// 1, 2 or 5 times a power of ten, or a clock-friendly step for long spans.
fn nice_step(raw: f64) -> f64 {
    for s in [
        60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0,
    ] {
        if raw > 30.0 && raw <= s {
            return s;
        }
    }
    if raw > 21600.0 {
        return 43200.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

fn format_time(t: f64) -> String {
    if t.abs() >= 3600.0 {
        let s = t.round() as i64;
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else if t.abs() >= 60.0 {
        format!("{}:{:04.1}", (t / 60.0).floor() as i64, t % 60.0)
    } else {
        format!("{} s", (t * 100.0).round() / 100.0)
    }
}

fn format_span(s: f64) -> String {
    if s >= 3600.0 {
        format!("{} h", (s / 3600.0 * 100.0).round() / 100.0)
    } else if s >= 60.0 {
        format!("{} min", (s / 60.0 * 100.0).round() / 100.0)
    } else {
        format!("{} s", (s * 100.0).round() / 100.0)
    }
}

/// A value in the unit a reader expects: MEG's tesla as femtotesla, T/m as fT/cm, EEG-sized
/// volts (FIF keeps EEG in V) as microvolts; the file and every computation keep SI units.
fn shown_in(v: f32, unit: &str) -> (f32, &str) {
    match unit.trim() {
        "T" => (v * 1e15, "fT"),
        "T/m" => (v * 1e13, "fT/cm"),
        "V" if v.abs() < 0.1 => (v * 1e6, "µV"),
        u => (v, u),
    }
}

fn fmt_amp(v: f32) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A measured value with four significant digits.
fn fmt_value(v: f32) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{:.*}", 3 - a.log10().floor() as usize, v)
    } else {
        format!("{v:.4}")
    }
}

/// High-pass, low-pass and notch choices, as in the Filter menu.
fn filter_choices(ui: &mut egui::Ui, f: &mut DisplayFilter) {
    ui.label("High-pass");
    for hp in [None, Some(0.1), Some(0.5), Some(1.0), Some(5.0)] {
        ui.radio_value(&mut f.highpass, hp, hz(hp));
    }
    ui.separator();
    ui.label("Low-pass");
    for lp in [None, Some(15.0), Some(35.0), Some(70.0)] {
        ui.radio_value(&mut f.lowpass, lp, hz(lp));
    }
    ui.separator();
    ui.label("Notch");
    for n in [None, Some(50.0), Some(60.0)] {
        ui.radio_value(&mut f.notch, n, hz(n));
    }
}

/// "HP 0.5 Hz · LP 35 Hz · notch 50 Hz", or "no filter".
pub fn describe_filter(f: &DisplayFilter) -> String {
    let parts: Vec<String> = [("HP", f.highpass), ("LP", f.lowpass), ("notch", f.notch)]
        .iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name} {v} Hz")))
        .collect();
    if parts.is_empty() {
        "no filter".into()
    } else {
        parts.join(" · ")
    }
}

fn hz(v: Option<f32>) -> String {
    v.map(|f| format!("{f} Hz")).unwrap_or_else(|| "off".into())
}

/// The process's resident memory, split as `top` does not: its own (heap, stacks) and the
/// pages of mapped files, which the system may take back at any time.
struct ProcessMemory {
    own: u64,
    file_pages: u64,
}

impl ProcessMemory {
    /// From /proc/self/status, read at most once a second (the status line draws every frame).
    fn now() -> Option<Self> {
        use std::sync::Mutex;
        use std::time::Instant;
        static LAST: Mutex<Option<(Instant, u64, u64)>> = Mutex::new(None);
        let mut last = LAST.lock().ok()?;
        if last.is_none_or(|(t, _, _)| t.elapsed().as_secs_f64() > 1.0) {
            let text = std::fs::read_to_string("/proc/self/status").ok()?;
            let kb = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                    .map(|k| k * 1024)
            };
            let own = kb("RssAnon:")? + kb("RssShmem:").unwrap_or(0);
            *last = Some((Instant::now(), own, kb("RssFile:")?));
        }
        let (_, own, file_pages) = (*last)?;
        Some(ProcessMemory { own, file_pages })
    }
}
