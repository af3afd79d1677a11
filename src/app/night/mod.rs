//! Reading a night: strips of the whole recording above the traces (CDSA, aEEG, hypnogram,
//! heart rate), computed in the background and sharing the traces' left and right edges (a
//! click jumps there); the power-spectrum dock of the page or selection; sleep scoring by
//! 30 s epochs; the sleep statistics and HRV windows; a Sleep-EDF hypnogram found beside its
//! PSG attached, or any annotation file loaded.
//!
//! `trends` the CDSA and aEEG worker and strips, `heart` the heart-rate strip and HRV, `psd`
//! the spectrum dock, `scoring` the scoring keys, the hypnogram strip and the statistics.

mod heart;
mod psd;
mod scoring;
mod trends;

use std::path::{Path, PathBuf};

use eframe::egui::{self, Color32, Pos2, Rect, Sense, Stroke};

use super::browser::Browser;
use crate::recording::{OpenOptions, Recording, sibling_hypnogram};

/// Heights of the strips, points.
const CDSA_H: f32 = 72.0;
const AEEG_H: f32 = 64.0;
const HYPNOGRAM_H: f32 = 58.0;
const HEART_H: f32 = 52.0;
/// The clock-time axis under the strips.
const AXIS_H: f32 = 16.0;
/// The label column, as wide as the traces' (`browser::LABEL_WIDTH`).
const LABEL_W: f32 = 110.0;

#[derive(Default)]
pub struct Night {
    /// The strips above the traces are shown.
    pub strips: bool,
    pub psd_open: bool,
    pub scoring: bool,
    pub stats_open: bool,
    pub hrv_open: bool,
    trends: trends::Trends,
    hypnogram: scoring::Hypnogram,
    heart: heart::Heart,
    psd: psd::PsdDock,
    /// The recording whose sibling hypnogram was looked for.
    attached_for: Option<PathBuf>,
    pub message: Option<Result<String, String>>,
}

/// Maps times of the whole recording onto a strip's x range.
#[derive(Clone, Copy)]
struct TimeAxis {
    left: f32,
    right: f32,
    total_s: f64,
    /// The recording's first sample, in clock time: the axis reads the time of day.
    start: chrono::NaiveDateTime,
}

impl TimeAxis {
    fn x(&self, t: f64) -> f32 {
        self.left + ((t / self.total_s.max(1e-9)) as f32) * (self.right - self.left)
    }

    fn t(&self, x: f32) -> f64 {
        ((x - self.left) / (self.right - self.left).max(1.0)) as f64 * self.total_s
    }

    /// Clock-time ticks under the strips, on whole steps of the time of day (a step that
    /// leaves room for each label: 1 min to 6 h).
    fn draw(&self, p: &egui::Painter, rect: Rect) {
        use chrono::Timelike;
        let colour = Color32::from_gray(90);
        p.line_segment(
            [
                Pos2::new(self.left, rect.top()),
                Pos2::new(self.right, rect.top()),
            ],
            Stroke::new(1.0, Color32::from_gray(160)),
        );
        let width = (self.right - self.left).max(1.0) as f64;
        let fits = (width / 70.0).max(1.0);
        let step = [60.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0]
            .into_iter()
            .find(|&s| self.total_s / s <= fits)
            .unwrap_or(21600.0);
        let day_s =
            self.start.num_seconds_from_midnight() as f64 + self.start.nanosecond() as f64 * 1e-9;
        let mut tick = (day_s / step).ceil() * step - day_s;
        while tick <= self.total_s {
            let x = self.x(tick);
            p.line_segment(
                [Pos2::new(x, rect.top()), Pos2::new(x, rect.top() + 4.0)],
                Stroke::new(1.0, colour),
            );
            let at = (self.start + chrono::Duration::milliseconds((tick * 1e3).round() as i64))
                .format(if step < 3600.0 { "%H:%M" } else { "%H:00" });
            p.text(
                Pos2::new(x, rect.top() + 4.0),
                egui::Align2::CENTER_TOP,
                at.to_string(),
                egui::FontId::proportional(10.0),
                colour,
            );
            tick += step;
        }
    }
}

impl Night {
    /// The device the night's trends run on: the render device unless it is a software one
    /// (lavapipe is slower than the CPU's pass); a worker already started keeps the one it had.
    pub fn use_gpu(&mut self, gpu: Option<&crate::gpu::GpuContext>) {
        let on_gpu = crate::app::default_backend(gpu) == crate::analysis::Backend::Gpu;
        if let Some(g) = gpu.filter(|_| on_gpu && self.trends.gpu.is_none()) {
            self.trends.gpu = Some(g.clone());
        }
    }

    /// The last CDSA and aEEG computed, and where (tests).
    pub fn trends(&self) -> Option<(&crate::analysis::trend::Trends, crate::analysis::Backend)> {
        self.trends.result()
    }

    /// The trends on `gpu` whatever it is: tests run the GPU's path on lavapipe.
    pub fn trends_on(&mut self, gpu: crate::gpu::GpuContext) {
        self.trends.gpu = Some(gpu);
    }

    /// The night's panels (strips on top, the spectrum dock on the right) and its keys: call
    /// before the traces' central panel.
    pub fn panels(&mut self, b: &mut Browser, ui: &mut egui::Ui) {
        self.attach_hypnogram(b);
        if self.scoring {
            scoring::keys(b, ui.ctx());
        }
        if self.psd_open {
            egui::Panel::right("psd")
                .default_size(380.0)
                .resizable(true)
                .show(ui, |ui| self.psd.ui(b, ui));
        }
        let hypnogram = self.hypnogram.of(b).to_vec();
        let show_hypnogram = !hypnogram.is_empty() || self.scoring;
        if !(self.strips || self.scoring) {
            return;
        }
        self.trends.update(b, ui.ctx());
        self.heart.update(b, ui.ctx());
        let heights = [
            (self.strips && self.trends.has_cdsa()).then_some(CDSA_H),
            (self.strips && self.trends.has_aeeg()).then_some(AEEG_H),
            show_hypnogram.then_some(HYPNOGRAM_H),
            (self.strips && self.heart.available()).then_some(HEART_H),
        ];
        let total: f32 = heights.iter().flatten().sum::<f32>() + AXIS_H + 30.0;
        egui::Panel::top("night strips")
            .exact_size(total)
            .frame(egui::Frame::new().fill(Color32::from_rgb(246, 246, 243)))
            .show(ui, |ui| {
                let full = ui.available_rect_before_wrap();
                let right = if b.plot_rect.is_positive() {
                    b.plot_rect.right()
                } else {
                    full.right() - 6.0
                };
                let axis = TimeAxis {
                    left: full.left() + LABEL_W,
                    right,
                    total_s: b.rec.time_span_s(),
                    start: b.rec.start,
                };
                let header = ui.horizontal(|ui| self.header(b, ui)).response.rect;
                let mut top = header.bottom() + 2.0;
                let mut row = |h: f32| {
                    let r = Rect::from_min_max(
                        Pos2::new(full.left(), top),
                        Pos2::new(full.right(), top + h - 3.0),
                    );
                    top += h;
                    r
                };
                let mut jump = None;
                if let Some(h) = heights[0] {
                    jump = jump.or(self.trends.cdsa_strip(ui, row(h), axis));
                }
                if let Some(h) = heights[1] {
                    jump = jump.or(self.trends.aeeg_strip(ui, row(h), axis));
                }
                if let Some(h) = heights[2] {
                    jump = jump.or(scoring::hypnogram_strip(ui, row(h), axis, &hypnogram));
                }
                if let Some(h) = heights[3] {
                    jump = jump.or(self.heart.strip(ui, row(h), axis));
                }
                axis.draw(ui.painter(), row(AXIS_H));
                let strips = Rect::from_min_max(
                    Pos2::new(axis.left, header.bottom() + 2.0),
                    Pos2::new(axis.right, top - 3.0),
                );
                let (t0, t1) = b.visible_span();
                let window = Rect::from_x_y_ranges(
                    axis.x(t0)..=axis.x(t1).max(axis.x(t0) + 2.0),
                    strips.y_range(),
                );
                let p = ui.painter();
                p.rect_filled(
                    window,
                    0.0,
                    Color32::from_rgba_unmultiplied(255, 80, 40, 28),
                );
                p.rect_stroke(
                    window,
                    0.0,
                    Stroke::new(1.0, Color32::from_rgb(210, 60, 30)),
                    egui::StrokeKind::Inside,
                );
                if let Some(t) = jump {
                    let span = t1 - t0;
                    let start = if self.scoring {
                        (t / scoring::EPOCH_S).floor() * scoring::EPOCH_S
                    } else {
                        t - span / 2.0
                    };
                    b.show(start, Some(span));
                }
            });
    }

    fn header(&mut self, b: &mut Browser, ui: &mut egui::Ui) {
        ui.add_space(4.0);
        self.trends.controls(b, ui);
        ui.separator();
        if self.scoring {
            // Where the scorer is: the epoch on the page, of how many, and its stage so far.
            let (t0, _) = b.visible_span();
            let epoch = (t0 / scoring::EPOCH_S + 1e-6).floor() as usize;
            let epochs = (b.rec.time_span_s() / scoring::EPOCH_S).ceil() as usize;
            let stage = (self.hypnogram.of(b).get(epoch)).map_or("unscored", |s| s.yasa());
            ui.label(
                egui::RichText::new(format!(
                    "Epoch {} of {epochs} ({}): {stage}",
                    epoch + 1,
                    clock(t0)
                ))
                .strong(),
            )
            .on_hover_text(
                "W 1 2 3 R (or 0-5) score and advance, ? unscored, M movement; Backspace undoes",
            );
        }
        show_message(ui, &self.message);
    }

    /// Shows the strips and the spectrum dock (`--night`), and starts scoring (`--score`).
    pub fn open_with(b: &mut Browser, strips: bool, score: bool) {
        b.night.strips |= strips || score;
        b.night.psd_open |= strips;
        if score {
            b.night.scoring = true;
            scoring::start(b);
        }
    }

    /// Whether the strips shown have their results (a screenshot waits for them).
    pub fn ready(&self) -> bool {
        let strips = !self.strips || (self.trends.ready() && self.heart.ready());
        strips && (!self.psd_open || self.psd.ready())
    }

    /// The Night menu.
    pub fn menu(&mut self, b: &mut Browser, ui: &mut egui::Ui) {
        ui.menu_button("Night", |ui| {
            ui.checkbox(
                &mut self.strips,
                "Trends above the traces (CDSA, aEEG, heart rate)",
            );
            ui.checkbox(
                &mut self.psd_open,
                "Power spectrum of the page or selection",
            );
            if ui
                .checkbox(&mut self.scoring, "Score sleep (30 s pages)")
                .changed()
                && self.scoring
            {
                scoring::start(b);
            }
            ui.checkbox(&mut self.stats_open, "Sleep statistics");
            ui.checkbox(&mut self.hrv_open, "Heart rate variability");
            ui.separator();
            if ui.button("Save the hypnogram as CSV (YASA)").clicked() {
                self.message = Some(scoring::save_csv(b, self.hypnogram.of(b)));
            }
            ui.separator();
            scoring::labels_editor(b, ui);
        });
    }

    /// The statistics and HRV windows.
    pub fn windows(&mut self, b: &mut Browser, ctx: &egui::Context) {
        if self.stats_open {
            scoring::statistics_window(self.hypnogram.of(b), ctx, &mut self.stats_open);
        }
        if self.hrv_open {
            self.heart.update(b, ctx);
            self.heart.hrv_window(b, ctx, &mut self.hrv_open);
        }
    }

    /// A Sleep-EDF PSG (`SC4001E0-PSG.edf`) gets the hypnogram beside it (`SC4001EC-
    /// Hypnogram.edf`: the same first six characters), once per recording.
    fn attach_hypnogram(&mut self, b: &mut Browser) {
        let Some(path) = b.rec.path.clone() else {
            return;
        };
        if self.attached_for.as_ref() == Some(&path) {
            return;
        }
        self.attached_for = Some(path.clone());
        if let Some(hyp) = sibling_hypnogram(&path) {
            let unsaved = b.events.unsaved;
            self.message = Some(load_annotations(b, &hyp));
            // Its events are in the hypnogram file: nothing new to save.
            b.events.unsaved = unsaved;
            self.strips = true;
        }
    }
}

/// Adds the events of an annotation file to the browser's (one undo step).
pub fn load_annotations(b: &mut Browser, path: &Path) -> Result<String, String> {
    let other = Recording::open(path, &OpenOptions::default()).map_err(|e| e.to_string())?;
    if other.annotations.is_empty() {
        return Err(format!("{} has no annotations", path.display()));
    }
    let mut list = b.events.list().to_vec();
    let n = other.annotations.len();
    list.extend(other.annotations);
    b.events.replace_all(list);
    Ok(format!("{n} events from {}", path.display()))
}

/// Draws a strip's label and frame; the strip's area right of the labels, and its response.
fn strip_frame(
    ui: &mut egui::Ui,
    rect: Rect,
    axis: TimeAxis,
    label: &str,
) -> (Rect, egui::Response) {
    let area = Rect::from_min_max(
        Pos2::new(axis.left, rect.top()),
        Pos2::new(axis.right, rect.bottom()),
    );
    let response = ui.allocate_rect(area, Sense::click_and_drag());
    let p = ui.painter();
    p.rect_filled(area, 0.0, Color32::WHITE);
    p.rect_stroke(
        area,
        0.0,
        Stroke::new(1.0, Color32::from_gray(190)),
        egui::StrokeKind::Inside,
    );
    p.text(
        Pos2::new(rect.left() + 6.0, rect.center().y),
        egui::Align2::LEFT_CENTER,
        label,
        egui::FontId::proportional(12.0),
        Color32::from_gray(40),
    );
    (area, response)
}

/// A save's outcome (or a load's), in the error colour when it failed.
fn show_message(ui: &mut egui::Ui, message: &Option<Result<String, String>>) {
    match message {
        Some(Ok(s)) => {
            ui.label(s);
        }
        Some(Err(e)) => {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        None => {}
    }
}

/// The time a click or drag on a strip points at.
fn clicked_time(response: &egui::Response, axis: TimeAxis) -> Option<f64> {
    (response.clicked() || response.dragged())
        .then(|| response.interact_pointer_pos())
        .flatten()
        .map(|p| axis.t(p.x).clamp(0.0, axis.total_s))
}

/// "01:23:45" from seconds.
fn clock(t: f64) -> String {
    let s = t.max(0.0).round() as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
