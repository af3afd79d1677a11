//! The Cross-ApEn view: pick channels, epochs and parameters; the channel-by-channel matrix
//! recomputes on a worker (the GPU when there is one) while r is dragged. Every change sends a
//! new request and cancels the one before; the worker takes only the newest, and a reply
//! for anything but the newest request is dropped, so a stale matrix is never shown as current.

use std::sync::Arc;
use std::time::Instant;

use eframe::egui::{self, Color32, Pos2, Rect, Sense, Stroke, Vec2};
use egui_plot::{Legend, Line, Plot, PlotPoint, PlotPoints};

use crate::analysis::Backend;
use crate::analysis::xapen::{
    self as xapen_job, EpochCount, XapenJob, XapenReport, default_epoch_len,
};
use crate::dsp::xapen::{self, Correction, Epochs, XapenParams};
use crate::gpu::GpuContext;
use crate::gpu::xapen::{Prepared, XapenKernels};
use crate::recording::Recording;

use super::colormap::{ColourMap, finite_range};
use super::export::{self, Format};
use super::worker::{Compute, Outcome, Progress, Worker};

/// Which epochs the matrix covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EpochSource {
    /// Consecutive epochs inside the browser's visible window (at least one).
    Visible,
    /// Consecutive epochs inside the browser's selection (shift+drag).
    Selection,
    /// Every whole epoch of the recording, averaged.
    Whole,
}

/// What the worker computes: a job on a recording, on a backend.
#[derive(Clone)]
struct Request {
    rec: Arc<Recording>,
    job: XapenJob,
    backend: Backend,
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.rec, &other.rec) && self.job == other.job && self.backend == other.backend
    }
}

/// A matrix computed for a request, numbered as it arrived (the detail plot's cache key).
struct Done {
    id: u64,
    job: XapenJob,
    report: XapenReport,
}

/// The brain channels (scalp electrodes, MEG) not marked bad, at their most common rate (the command
/// line's default too: `Recording::brain_signals`).
fn default_selection(rec: &Recording) -> Vec<bool> {
    let picked = rec.brain_signals();
    (0..rec.signals.len())
        .map(|c| picked.contains(&c))
        .collect()
}

/// What a session keeps of the view.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    channels: Vec<String>,
    epoch_len: usize,
    epochs: EpochSource,
    params: XapenParams,
    backend: Backend,
}

/// Epoch lengths offered.
const EPOCH_LENGTHS: [usize; 6] = [128, 256, 512, 1024, 2048, 4096];

/// The job without its parameters: what the cached input and device buffers depend on.
type InputKey = (usize, Vec<usize>, usize, usize, EpochCount);

fn input_key(rec: &Arc<Recording>, job: &XapenJob) -> InputKey {
    (
        Arc::as_ptr(rec) as usize,
        job.channels.clone(),
        job.epoch_len,
        job.start_sample,
        job.epochs,
    )
}

/// The worker's computation: reads and normalizes epochs, keeps them (and, on the GPU, their
/// sorted copies) while only the parameters change, and computes the matrix.
fn compute(gpu: Option<GpuContext>) -> Compute<Request, XapenReport> {
    let mut kernels = gpu.map(|g| XapenKernels::new(&g));
    let mut input: Option<(InputKey, Arc<Epochs>)> = None;
    let mut prepared: Option<(InputKey, usize, Prepared)> = None;
    Box::new(move |req: &Request, progress: &Progress| {
        let t = Instant::now();
        let key = input_key(&req.rec, &req.job);
        let gpu = kernels.as_mut().filter(|_| req.backend == Backend::Gpu);
        let cancel = Some(&*progress.cancel);
        let done = Some(&*progress.done);
        let err = |e: &dyn std::fmt::Display| e.to_string();
        if !req.job.fits_in_one_block(&req.rec).map_err(|e| err(&e))? {
            // Too large to keep: read and computed in blocks of epochs.
            return xapen_job::run(&req.rec, &req.job, gpu, cancel, done).map_err(|e| err(&e));
        }
        let ep = match &input {
            Some((k, ep)) if *k == key => ep.clone(),
            _ => {
                let ep = Arc::new(req.job.input(&req.rec).map_err(|e| err(&e))?);
                input = Some((key.clone(), ep.clone()));
                ep
            }
        };
        let params = req.job.params;
        let one_chunk = match gpu.as_deref() {
            Some(k) => k.chunk_epochs(&ep, params.m).map_err(|e| err(&e))? >= ep.epochs,
            None => false,
        };
        let (mean, ran_on) = match gpu {
            Some(k) if one_chunk => {
                // Sorted epochs stay on the device while r changes.
                let reuse = matches!(&prepared, Some((pk, m, _)) if *pk == key && *m == params.m);
                if !reuse {
                    let p = k
                        .prepare(&ep, 0..ep.epochs, params.m)
                        .map_err(|e| err(&e))?;
                    prepared = Some((key.clone(), params.m, p));
                }
                let (_, _, p) = prepared.as_ref().expect("just prepared");
                k.count(p, &params, true).map_err(|e| err(&e))?;
                let mean = k.read_mean(p).map_err(|e| err(&e))?;
                (mean, (Backend::Gpu, k.context().describe()))
            }
            gpu => {
                let computed = xapen_job::compute(&ep, &params, false, gpu, cancel, done)
                    .map_err(|e| err(&e))?;
                let Some((matrices, ran_on)) = computed else {
                    return Ok(None);
                };
                (matrices.mean, ran_on)
            }
        };
        Ok(Some(XapenReport::new(
            &req.rec,
            &req.job,
            ep.epochs,
            &mean,
            None,
            ran_on,
            t.elapsed().as_secs_f64(),
            &ep.flat_epochs(),
        )))
    })
}

/// The clicked pair's traces are for: (reply id, u, v, epoch).
type DetailKey = (u64, usize, usize, usize);

/// A matrix on screen.
struct Shown {
    done: Done,
    texture: egui::TextureHandle,
    range: (f64, f64),
}

pub struct XapenView {
    rec: Arc<Recording>,
    selected: Vec<bool>,
    epoch_len: usize,
    source: EpochSource,
    params: XapenParams,
    backend: Backend,
    gpu: Option<GpuContext>,
    worker: Worker<Request, XapenReport>,
    /// Results received so far (numbers them).
    received: u64,
    shown: Option<Shown>,
    error: Option<String>,
    cell: Option<(usize, usize)>,
    detail_epoch: usize,
    /// The normalized traces of the clicked pair: (reply id, u, v, epoch) and both series.
    detail: Option<(DetailKey, [Vec<PlotPoint>; 2])>,
    /// A PNG of the matrix panel asked for: the file and the panel's rectangle.
    png_request: Option<std::path::PathBuf>,
    matrix_rect: Rect,
}

impl XapenView {
    /// EEG channels of the most common rate are selected to begin with.
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        let selected = default_selection(&rec);
        let backend = super::default_backend(gpu.as_ref());
        let held = (0..rec.signals.len())
            .filter(|&c| selected[c])
            .map(|c| rec.signals[c].samples)
            .min()
            .unwrap_or(0);
        // The shortest of the lengths offered that fits the recording when 1024 does not.
        let epoch_len = (EPOCH_LENGTHS.into_iter())
            .filter(|&l| l <= default_epoch_len(held))
            .max()
            .unwrap_or(EPOCH_LENGTHS[0]);
        XapenView {
            rec,
            selected,
            epoch_len,
            source: EpochSource::Visible,
            backend,
            params: XapenParams {
                m: 1,
                r: 0.2,
                correction: Correction::Max,
            },
            worker: Worker::new("ede xapen", {
                let gpu = gpu.clone();
                move || compute(gpu.clone())
            }),
            gpu,
            received: 0,
            shown: None,
            error: None,
            cell: None,
            detail_epoch: 0,
            detail: None,
            png_request: None,
            matrix_rect: Rect::NOTHING,
        }
    }

    /// True once the matrix for the current settings is on screen (or failed).
    pub fn ready(&self) -> bool {
        self.worker.pending().is_none() && (self.shown.is_some() || self.error.is_some())
    }

    pub fn set_backend(&mut self, backend: Backend) {
        self.backend = backend;
    }

    pub fn set_source(&mut self, source: EpochSource) {
        self.source = source;
    }

    /// The first sample and the number of epochs of the matrix on screen.
    pub fn shown_epochs(&self) -> Option<(usize, usize)> {
        self.shown
            .as_ref()
            .map(|s| (s.done.job.start_sample, s.done.report.epochs))
    }

    pub fn set_r(&mut self, r: f32) {
        self.params.r = r;
    }

    pub fn params(&self) -> XapenParams {
        self.params
    }

    /// The matrix on screen: its channels, the r it was computed for, and its values.
    pub fn shown(&self) -> Option<(Vec<String>, f32, Vec<f64>)> {
        self.shown.as_ref().map(|s| {
            (
                s.done.report.channels.clone(),
                s.done.job.params.r,
                s.done.report.mean(),
            )
        })
    }

    fn job(&self, visible: (f64, f64), selection: Option<(f64, f64)>) -> Result<XapenJob, String> {
        let channels: Vec<usize> = (0..self.selected.len())
            .filter(|&c| self.selected[c])
            .collect();
        let first = *channels.first().ok_or("select at least one channel")?;
        let fs = self.rec.signals[first].fs;
        let (start_sample, epochs) = match self.source {
            EpochSource::Whole => (0, EpochCount::All),
            EpochSource::Visible | EpochSource::Selection => {
                let (start, end) = match self.source {
                    EpochSource::Visible => visible,
                    _ => selection
                        .ok_or("no selection: shift+drag over the traces in the browser")?,
                };
                let first = (start * fs).round().max(0.0) as usize;
                let k = (((end - start) * fs) as usize / self.epoch_len).max(1);
                (first, EpochCount::Count(k))
            }
        };
        Ok(XapenJob {
            channels,
            epoch_len: self.epoch_len,
            epochs,
            start_sample,
            params: self.params,
            per_epoch: false,
        })
    }

    /// Sends the current settings to the worker when they changed.
    fn request(&mut self, ctx: &egui::Context, visible: (f64, f64), selection: Option<(f64, f64)>) {
        match self.job(visible, selection) {
            Ok(job) => {
                let req = Request {
                    rec: self.rec.clone(),
                    job,
                    backend: self.backend,
                };
                self.worker.request(ctx, req);
            }
            Err(e) => {
                self.error = Some(e);
                self.worker.cancel();
                self.worker.forget();
            }
        }
    }

    fn receive(&mut self, ctx: &egui::Context) {
        match self.worker.poll() {
            Some(Outcome::Done { request, output }) => {
                self.error = None;
                self.received += 1;
                let b = output.channels.len();
                let (image, range) = matrix_image(&output.mean(), b);
                let texture =
                    ctx.load_texture("xapen matrix", image, egui::TextureOptions::NEAREST);
                if self.cell.is_some_and(|(u, v)| u >= b || v >= b) {
                    self.cell = None;
                }
                self.detail_epoch = self.detail_epoch.min(output.epochs - 1);
                self.shown = Some(Shown {
                    done: Done {
                        id: self.received,
                        job: request.job,
                        report: output,
                    },
                    texture,
                    range,
                });
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    /// The whole view; `visible` is the browser's window and `selection` its selected range,
    /// both (start, end) in seconds.
    pub fn ui(&mut self, ui: &mut egui::Ui, visible: (f64, f64), selection: Option<(f64, f64)>) {
        let ctx = ui.ctx().clone();
        self.receive(&ctx);
        egui::Panel::left("xapen controls")
            .resizable(true)
            .default_size(230.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui));
            });
        self.request(&ctx, visible, selection);
        egui::CentralPanel::default().show(ui, |ui| self.matrix_ui(ui));
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        ui.heading("Cross-ApEn");
        ui.label("Cross-Approximate Entropy of every ordered channel pair (row u, column v).");
        ui.add_space(6.0);
        ui.spacing_mut().slider_width = 140.0;
        ui.add(
            egui::Slider::new(&mut self.params.r, 0.02..=1.0)
                .text("r (SD)")
                .step_by(0.005),
        );
        ui.horizontal(|ui| {
            ui.label("m");
            ui.add(egui::DragValue::new(&mut self.params.m).range(1..=4));
        });
        ui.horizontal(|ui| {
            ui.label("Correction");
            ui.radio_value(&mut self.params.correction, Correction::Max, "bias max");
            ui.radio_value(&mut self.params.correction, Correction::Zero, "bias 0");
        });
        egui::ComboBox::from_label("Epoch length")
            .selected_text(format!("{} samples", self.epoch_len))
            .show_ui(ui, |ui| {
                for len in EPOCH_LENGTHS {
                    ui.selectable_value(&mut self.epoch_len, len, format!("{len} samples"));
                }
            });
        ui.horizontal(|ui| {
            ui.label("Epochs");
            ui.radio_value(&mut self.source, EpochSource::Visible, "visible window");
            ui.radio_value(&mut self.source, EpochSource::Selection, "selection")
                .on_hover_text("shift+drag over the traces in the browser");
        });
        ui.radio_value(
            &mut self.source,
            EpochSource::Whole,
            "whole recording (averaged)",
        );
        super::backend_picker(ui, &mut self.backend, self.gpu.as_ref());
        ui.separator();
        ui.horizontal(|ui| {
            ui.label("Channels");
            let fs = self.selected_rate();
            if ui.small_button("all").clicked() {
                for (c, s) in self.rec.signals.iter().enumerate() {
                    self.selected[c] = Some(s.fs) == fs || fs.is_none();
                }
            }
            if ui.small_button("none").clicked() {
                self.selected.fill(false);
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("only");
            let kinds: Vec<_> = self.rec.signals.iter().map(|s| s.kind).collect();
            // The type's channels at the rate most of them share.
            let rates: Vec<f64> = self.rec.signals.iter().map(|s| s.fs).collect();
            let before = self.selected.clone();
            super::lanes::select_by_type(ui, &kinds, &mut self.selected, |_| true);
            if self.selected != before {
                let fs = crate::recording::most_common_rate(
                    (0..rates.len())
                        .filter(|&c| self.selected[c])
                        .map(|c| rates[c]),
                );
                for (c, s) in self.selected.iter_mut().enumerate() {
                    *s &= Some(rates[c]) == fs && !self.rec.signals[c].bad;
                }
            }
        });
        let fs = self.selected_rate();
        egui::ScrollArea::vertical()
            .id_salt("xapen channels")
            .max_height(260.0)
            .show(ui, |ui| {
                for (c, s) in self.rec.signals.iter().enumerate() {
                    // One rate per matrix: other rates are shown but not selectable.
                    let enabled = fs.is_none_or(|f| f == s.fs);
                    let bad = if s.bad { ", bad" } else { "" };
                    ui.add_enabled(
                        enabled,
                        egui::Checkbox::new(
                            &mut self.selected[c],
                            format!("{} ({}, {} Hz{bad})", s.label, s.kind.name(), s.fs),
                        ),
                    );
                }
            });
        ui.separator();
        self.worker.spinner(ui, "pairs");
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        if let Some(s) = &self.shown {
            let d = &s.done;
            ui.label(format!(
                "{} channels x {} epoch(s) of {} samples, from sample {}",
                d.report.channels.len(),
                d.report.epochs,
                d.job.epoch_len,
                d.job.start_sample
            ));
            ui.label(format!(
                "m = {}, r = {:.3}, bias {}; {:.1} ms on {}",
                d.job.params.m,
                d.job.params.r,
                d.job.params.correction.name(),
                d.report.elapsed_s * 1e3,
                d.report.adapter
            ));
            for (label, k) in &d.report.flat {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("{label} is flat in {k} epoch(s): NaN (grey) there"),
                );
            }
            if let Some((format, path)) = export::buttons(ui, "xapen") {
                self.save(format, path);
            }
        }
    }

    fn selected_rate(&self) -> Option<f64> {
        (0..self.selected.len())
            .find(|&c| self.selected[c])
            .map(|c| self.rec.signals[c].fs)
    }

    fn matrix_ui(&mut self, ui: &mut egui::Ui) {
        let Some(shown) = &self.shown else {
            ui.centered_and_justified(|ui| {
                ui.label(if self.worker.pending().is_some() {
                    "computing…"
                } else {
                    "no matrix yet"
                });
            });
            return;
        };
        let labels = &shown.done.report.channels;
        let b = labels.len();
        let full = ui.available_rect_before_wrap();
        let detail_h = if self.cell.is_some() {
            (full.height() * 0.3).max(160.0)
        } else {
            0.0
        };
        let label_w = 70.0;
        let bar_w = 70.0;
        let side = (full.width() - label_w - bar_w - 20.0)
            .min(full.height() - label_w - detail_h - 10.0)
            .max(40.0);
        let map = Rect::from_min_size(full.min + Vec2::new(label_w, label_w), Vec2::splat(side));
        self.matrix_rect = Rect::from_min_max(full.min, map.max + Vec2::new(bar_w + 10.0, 6.0));
        let response = ui.allocate_rect(map, Sense::click());
        let painter = ui.painter_at(full);
        painter.image(
            shown.texture.id(),
            map,
            Rect::from_min_max(Pos2::ZERO, Pos2::new(1.0, 1.0)),
            Color32::WHITE,
        );
        painter.rect_stroke(
            map,
            0.0,
            Stroke::new(1.0, Color32::from_gray(120)),
            egui::StrokeKind::Outside,
        );
        let cell = side / b as f32;
        // Every k-th label, so labels never overlap.
        let every = (11.0 / cell).ceil().max(1.0) as usize;
        let font = egui::FontId::proportional((cell * 0.8).clamp(7.0, 12.0));
        let text = ui.visuals().text_color();
        for (k, label) in labels.iter().enumerate().step_by(every) {
            let y = map.top() + (k as f32 + 0.5) * cell;
            painter.text(
                Pos2::new(map.left() - 4.0, y),
                egui::Align2::RIGHT_CENTER,
                label,
                font.clone(),
                text,
            );
            let x = map.left() + (k as f32 + 0.5) * cell;
            let galley = painter.layout_no_wrap(label.clone(), font.clone(), text);
            let pos = Pos2::new(x - galley.size().y / 2.0, map.top() - 4.0);
            painter.add(
                egui::epaint::TextShape::new(pos, galley, text)
                    .with_angle(-std::f32::consts::FRAC_PI_2),
            );
        }
        painter.text(
            Pos2::new(full.left() + 2.0, full.top() + 2.0),
            egui::Align2::LEFT_TOP,
            "u \\ v",
            egui::FontId::proportional(11.0),
            Color32::GRAY,
        );
        MATRIX_COLOURS.bar(
            &painter,
            Rect::from_min_size(
                Pos2::new(map.right() + 14.0, map.top()),
                Vec2::new(16.0, side),
            ),
            shown.range,
            text,
            |v| format!("{v:.3}"),
        );

        let at = |p: Pos2| -> Option<(usize, usize)> {
            let u = ((p.y - map.top()) / cell) as usize;
            let v = ((p.x - map.left()) / cell) as usize;
            (map.contains(p) && u < b && v < b).then_some((u, v))
        };
        if let Some((u, v)) = response.hover_pos().and_then(at) {
            let value = shown.done.report.matrix[u][v];
            painter.rect_stroke(
                Rect::from_min_size(
                    map.min + Vec2::new(v as f32 * cell, u as f32 * cell),
                    Vec2::splat(cell),
                ),
                0.0,
                Stroke::new(1.5, Color32::BLACK),
                egui::StrokeKind::Middle,
            );
            response.clone().on_hover_text_at_pointer(format!(
                "Cross-ApEn({} || {}) = {}\nclick: show both traces",
                labels[u],
                labels[v],
                if value.is_nan() {
                    "NaN (flat channel)".into()
                } else {
                    format!("{value:.4}")
                }
            ));
        }
        if response.clicked()
            && let Some(c) = response.interact_pointer_pos().and_then(at)
        {
            self.cell = Some(c);
        }
        if let Some((u, v)) = self.cell {
            painter.rect_stroke(
                Rect::from_min_size(
                    map.min + Vec2::new(v as f32 * cell, u as f32 * cell),
                    Vec2::splat(cell),
                ),
                0.0,
                Stroke::new(2.0, Color32::from_rgb(220, 30, 30)),
                egui::StrokeKind::Middle,
            );
            let detail =
                Rect::from_min_max(Pos2::new(full.left(), full.bottom() - detail_h), full.max);
            let mut child = ui.new_child(egui::UiBuilder::new().max_rect(detail));
            self.detail_ui(&mut child, u, v);
        }
    }

    fn detail_ui(&mut self, ui: &mut egui::Ui, u: usize, v: usize) {
        let Some(shown) = &self.shown else {
            return;
        };
        let d = &shown.done;
        let labels = &d.report.channels;
        let epochs = d.report.epochs;
        ui.horizontal(|ui| {
            ui.label(format!(
                "{} (u) and {} (v), normalized, epoch",
                labels[u], labels[v]
            ));
            ui.add(egui::DragValue::new(&mut self.detail_epoch).range(0..=epochs - 1));
            ui.label(format!("of {epochs}; value {:.4}", d.report.matrix[u][v]));
            if ui.small_button("close").clicked() {
                self.cell = None;
            }
        });
        // Read from the recording (large jobs do not keep their epochs), once per pair and
        // epoch shown, not every frame.
        let e = self.detail_epoch.min(epochs - 1);
        let key = (d.id, u, v, e);
        if self.detail.as_ref().is_none_or(|(k, _)| *k != key) {
            let n = d.job.epoch_len;
            let start = d.job.start_sample + e * n;
            let series = |c: usize| -> Vec<PlotPoint> {
                let mut raw = vec![0f32; n];
                self.rec
                    .read(d.job.channels[c], start, &mut raw)
                    .ok()
                    .and_then(|()| xapen::normalize(&raw))
                    .unwrap_or_else(|| vec![f32::NAN; n])
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| PlotPoint::new(i as f64, x as f64))
                    .collect()
            };
            self.detail = Some((key, [series(u), series(v)]));
        }
        let Some((_, [su, sv])) = &self.detail else {
            return;
        };
        Plot::new("xapen detail")
            .legend(Legend::default())
            .allow_scroll(false)
            .show(ui, |plot| {
                plot.line(Line::new(labels[u].clone(), PlotPoints::Borrowed(su)));
                plot.line(Line::new(labels[v].clone(), PlotPoints::Borrowed(sv)));
            });
    }

    fn save(&mut self, format: Format, path: std::path::PathBuf) {
        let Some(shown) = &self.shown else {
            return;
        };
        let report = &shown.done.report;
        let result = match format {
            Format::Csv => export::write_atomic(
                &path,
                matrix_csv(&report.channels, &report.mean()).as_bytes(),
            ),
            Format::Json => serde_json::to_string_pretty(report)
                .map_err(|e| e.to_string())
                .and_then(|t| export::write_atomic(&path, t.as_bytes())),
            Format::Png => {
                // Taken by the app after this frame, cropped to the matrix.
                self.png_request = Some(path);
                Ok(())
            }
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
    }
}

impl super::AnalysisView for XapenView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut super::browser::Browser) {
        XapenView::ui(self, ui, browser.visible_span(), browser.selection);
    }

    fn ready(&self) -> bool {
        XapenView::ready(self)
    }

    fn take_png_request(&mut self) -> Option<(std::path::PathBuf, Rect)> {
        Some((self.png_request.take()?, self.matrix_rect))
    }

    fn follow_recording(&mut self, rec: Arc<Recording>) -> bool {
        if !super::same_channels(&self.rec, &rec) {
            self.selected = default_selection(&rec);
        }
        self.rec = rec;
        true
    }

    fn parameters(&self) -> serde_json::Value {
        super::to_saved(&Saved {
            channels: (self.rec.signals.iter().zip(&self.selected))
                .filter(|(_, on)| **on)
                .map(|(s, _)| s.label.clone())
                .collect(),
            epoch_len: self.epoch_len,
            epochs: self.source,
            params: self.params,
            backend: self.backend,
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        let chosen: Vec<bool> = (self.rec.signals.iter())
            .map(|sig| s.channels.contains(&sig.label))
            .collect();
        if chosen.iter().filter(|&&c| c).count() >= 2 {
            self.selected = chosen;
        }
        if EPOCH_LENGTHS.contains(&s.epoch_len) {
            self.epoch_len = s.epoch_len;
        }
        self.source = s.epochs;
        self.params = XapenParams {
            m: s.params.m.clamp(1, 4),
            r: s.params.r.clamp(0.02, 1.0),
            correction: s.params.correction,
        };
        self.backend = super::saved_backend(s.backend, self.gpu.as_ref());
    }
}

/// The matrix's colours (the colour bar and the image agree).
const MATRIX_COLOURS: ColourMap = ColourMap::Viridis;

/// The matrix in viridis over its finite range (NaN grey), one pixel a cell, and that range.
pub fn matrix_image(mean: &[f64], channels: usize) -> (egui::ColorImage, (f64, f64)) {
    let range = finite_range(mean);
    let colour = MATRIX_COLOURS.colours(range);
    let pixels = mean.iter().map(|&v| colour(v)).collect();
    (egui::ColorImage::new([channels, channels], pixels), range)
}

/// The matrix as CSV: a header of v labels, then one row per u (NaN for flat channels).
pub fn matrix_csv(labels: &[String], mean: &[f64]) -> String {
    let mut out = String::from("u\\v");
    for l in labels {
        out.push(',');
        out.push_str(l);
    }
    out.push('\n');
    for (u, row) in mean.chunks(labels.len()).enumerate() {
        out.push_str(&labels[u]);
        for v in row {
            out.push_str(&format!(",{v}"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_a_header_of_labels_and_a_row_per_channel() {
        let labels = vec!["Fp1".to_string(), "O2".to_string()];
        let csv = matrix_csv(&labels, &[1.0, 2.5, f64::NAN, 0.25]);
        assert_eq!(csv, "u\\v,Fp1,O2\nFp1,1,2.5\nO2,NaN,0.25\n");
    }
}
