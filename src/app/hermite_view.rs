//! The beat explorer: every beat of an ECG channel fitted with Hermite functions (issue 7).
//! Beats are marked on the browser's traces with their labels; the panel below shows the
//! selected beat with its reconstruction and residual, its coefficients, and a scatter of all
//! beats (sigma against MSE, or two coefficients) where a click selects a beat and moves the
//! browser to it. The order and sigma sliders refit every beat on the worker; the beats stay
//! on the GPU between refits.

use std::sync::Arc;
use std::time::Instant;

use eframe::egui::{self, Color32, Pos2, Rect, Stroke};
use egui_plot::{Bar, BarChart, Legend, Line, Plot, PlotPoints, Points};

use super::AnalysisView;
use super::browser::Browser;
use super::colormap::{ColourMap, finite_range};
use super::export::{self, Format};
use super::worker::{Compute, Outcome, Progress, Worker};
use crate::analysis::Backend;
use crate::analysis::hermite::{EcgBeats, EcgFilter, Fitter, HermiteReport, default_ecg_channel};
use crate::dsp::hermite::{self, Fits, HermiteParams};
use crate::gpu::GpuContext;
use crate::recording::Recording;

/// Which beats, fitted how: the worker's request.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    signal: usize,
    filter: EcgFilter,
    detector: bool,
    params: HermiteParams,
    backend: Backend,
}

/// What the beats depend on (their samples and windows).
type BeatsKey = (usize, EcgFilter, bool);

struct BeatFits {
    beats: Arc<EcgBeats>,
    fits: Fits,
    sigmas: Vec<f64>,
    /// The beats by label, the commonest label first (the scatter draws rare ones on top).
    groups: Arc<LabelGroups>,
    elapsed_s: f64,
    ran_on: String,
}

fn compute(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Compute<Request, BeatFits> {
    let mut on_gpu = gpu.as_ref().map(|g| Fitter::<BeatsKey>::new(Some(g)));
    let mut on_cpu = Fitter::<BeatsKey>::new(None);
    let mut cached: Option<(BeatsKey, Arc<EcgBeats>, Arc<LabelGroups>)> = None;
    Box::new(move |req: &Request, progress: &Progress| {
        let t = Instant::now();
        let key = (req.signal, req.filter, req.detector);
        let (beats, groups) = match &cached {
            Some((k, b, g)) if *k == key => (b.clone(), g.clone()),
            _ => {
                let b = EcgBeats::prepare(&rec, req.signal, req.filter, req.detector)
                    .map_err(|e| e.to_string())?;
                let g = Arc::new(by_label(&b.labels));
                let b = Arc::new(b);
                cached = Some((key, b.clone(), g.clone()));
                (b, g)
            }
        };
        if progress.cancelled() {
            return Ok(None);
        }
        let sigmas = req.params.sigma_grid().map_err(|e| e.to_string())?;
        let fitter = match (req.backend, on_gpu.as_mut()) {
            (Backend::Gpu, Some(f)) => f,
            _ => &mut on_cpu,
        };
        let (fits, (_, ran_on)) = match fitter.fit(
            &key,
            &beats.windows,
            beats.fs,
            &req.params,
            Some(&progress.cancel),
        ) {
            Ok(r) => r,
            Err(crate::analysis::hermite::HermiteJobError::Cancelled) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        Ok(Some(BeatFits {
            beats,
            fits,
            sigmas,
            groups,
            elapsed_s: t.elapsed().as_secs_f64(),
            ran_on,
        }))
    })
}

/// Beat indices by label.
type LabelGroups = Vec<(Option<String>, Vec<usize>)>;

/// Beat indices by label, the commonest label first.
fn by_label(labels: &[Option<String>]) -> LabelGroups {
    let mut groups: LabelGroups = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        match groups.iter_mut().find(|(g, _)| g == l) {
            Some((_, v)) => v.push(i),
            None => groups.push((l.clone(), vec![i])),
        }
    }
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    groups
}

/// What the scatter plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum ScatterAxes {
    SigmaMse,
    Coefficients(usize, usize),
}

/// A colour per beat label: normal beats quiet, ectopic ones loud.
fn label_colour(label: Option<&str>) -> Color32 {
    match label {
        Some("N") => Color32::from_rgb(90, 140, 200),
        Some("V") => Color32::from_rgb(220, 50, 47),
        Some("A" | "a" | "J" | "S") => Color32::from_rgb(240, 150, 20),
        Some("L" | "R" | "B") => Color32::from_rgb(60, 170, 90),
        Some("F" | "f") => Color32::from_rgb(170, 90, 200),
        Some("/" | "Q" | "?") => Color32::from_rgb(150, 150, 150),
        Some(_) => Color32::from_rgb(200, 180, 60),
        None => Color32::from_rgb(120, 200, 220),
    }
}

/// What a session keeps of the view.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    /// The ECG channel's label.
    signal: Option<String>,
    filter: EcgFilter,
    detector: bool,
    order: usize,
    sigmas: usize,
    range_ms: Option<(f64, f64)>,
    backend: Backend,
    scatter: ScatterAxes,
    by_mse: bool,
    colours: ColourMap,
    panel_height: f32,
}

pub struct HermiteView {
    rec: Arc<Recording>,
    gpu: Option<GpuContext>,
    signal: Option<usize>,
    filter: EcgFilter,
    detector: bool,
    order: usize,
    sigmas: usize,
    /// Sigma range in ms; `None` for the defaults of the order.
    range_ms: Option<(f64, f64)>,
    backend: Backend,
    scatter: ScatterAxes,
    /// Colour the scatter by MSE (a colour map) instead of by label.
    by_mse: bool,
    colours: ColourMap,
    panel_height: f32,
    worker: Worker<Request, BeatFits>,
    shown: Option<(Request, BeatFits)>,
    error: Option<String>,
    /// Index of the selected beat among the fitted ones.
    selected: usize,
    /// Move the browser to the selected beat in the next frame.
    follow: bool,
    /// Select the first beat in the browser's window in the next frame (new beats arrived).
    pick_visible: bool,
    panel_rect: Rect,
    png_request: Option<std::path::PathBuf>,
}

impl HermiteView {
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        let backend = super::default_backend(gpu.as_ref());
        HermiteView {
            signal: default_ecg_channel(&rec),
            filter: EcgFilter::Default,
            detector: false,
            order: 6,
            sigmas: 100,
            range_ms: None,
            backend,
            scatter: ScatterAxes::SigmaMse,
            by_mse: false,
            colours: ColourMap::Viridis,
            panel_height: 360.0,
            worker: Worker::on_recording("ede beats", &rec, &gpu, compute),
            rec,
            gpu,
            shown: None,
            error: None,
            selected: 0,
            follow: false,
            pick_visible: false,
            panel_rect: Rect::NOTHING,
            png_request: None,
        }
    }

    pub fn set_order(&mut self, order: usize) {
        self.order = order;
    }

    pub fn set_backend(&mut self, backend: Backend) {
        self.backend = backend;
    }

    pub fn set_detector(&mut self, on: bool) {
        self.detector = on;
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The order, the fits and the beats' labels shown.
    pub fn shown(&self) -> Option<(usize, &Fits, &[Option<String>])> {
        self.shown
            .as_ref()
            .map(|(r, s)| (r.params.order, &s.fits, s.beats.labels.as_slice()))
    }

    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The selected beat's time, seconds from the recording start.
    pub fn selected_time(&self) -> Option<f64> {
        let (_, s) = self.shown.as_ref()?;
        s.beats.times.get(self.selected).copied()
    }

    /// Selects beat `i` and moves the browser to it.
    pub fn select(&mut self, i: usize) {
        self.selected = i;
        self.follow = true;
    }

    /// The next (or previous) beat with the selected beat's label, if any.
    pub fn step_same_label(&mut self, forward: bool) -> bool {
        let Some((_, s)) = &self.shown else {
            return false;
        };
        let labels = &s.beats.labels;
        let Some(want) = labels.get(self.selected) else {
            return false;
        };
        let found = if forward {
            (self.selected + 1..labels.len()).find(|&i| &labels[i] == want)
        } else {
            (0..self.selected).rev().find(|&i| &labels[i] == want)
        };
        if let Some(i) = found {
            self.select(i);
        }
        found.is_some()
    }

    fn params(&self) -> HermiteParams {
        HermiteParams {
            order: self.order,
            sigmas: self.sigmas,
            sigma_min: self.range_ms.map(|r| r.0 / 1e3),
            sigma_max: self.range_ms.map(|r| r.1 / 1e3),
        }
    }

    fn request(&self) -> Result<Request, String> {
        let signal =
            (self.signal).ok_or("the recording has no ECG channel: pick one under Channel")?;
        let params = self.params();
        params.sigma_grid().map_err(|e| e.to_string())?;
        Ok(Request {
            signal,
            filter: self.filter,
            detector: self.detector,
            params,
            backend: self.backend,
        })
    }

    fn receive(&mut self) {
        match self.worker.poll() {
            Some(Outcome::Done { request, output }) => {
                self.error = None;
                let same_beats = self.shown.as_ref().is_some_and(|(r, _)| {
                    (r.signal, r.filter, r.detector)
                        == (request.signal, request.filter, request.detector)
                });
                if !same_beats {
                    self.selected = 0;
                    self.pick_visible = true;
                }
                self.selected = self.selected.min(output.fits.len().saturating_sub(1));
                self.shown = Some((request, output));
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        ui.heading("Beats");
        ui.label("Hermite-function fits of every QRS complex of an ECG channel.");
        ui.add_space(4.0);
        ui.spacing_mut().slider_width = 130.0;
        let label = |s: usize| self.rec.signals[s].label.trim().to_string();
        egui::ComboBox::from_label("channel")
            .selected_text(self.signal.map(label).unwrap_or_default())
            .show_ui(ui, |ui| {
                for s in 0..self.rec.signals.len() {
                    ui.selectable_value(&mut self.signal, Some(s), label(s));
                }
            });
        let mut filtered = self.filter == EcgFilter::Default;
        ui.checkbox(&mut filtered, "baseline removal + 40 Hz low-pass")
            .on_hover_text("200 and 600 ms median baseline, zero-phase Butterworth low-pass");
        self.filter = if filtered {
            EcgFilter::Default
        } else {
            EcgFilter::None
        };
        ui.checkbox(&mut self.detector, "beats from the QRS detector")
            .on_hover_text("off: the recording's beat annotations, when it has them");
        ui.separator();
        ui.add(egui::Slider::new(&mut self.order, 1..=40).text("N (functions)"));
        ui.add(
            egui::Slider::new(&mut self.sigmas, 2..=400)
                .logarithmic(true)
                .text("S (sigmas)"),
        );
        let mut custom = self.range_ms.is_some();
        ui.checkbox(&mut custom, "own sigma range")
            .on_hover_text("off: 0.2 s / sqrt(2N - 1) down to a tenth of it");
        let (dmin, dmax) = self.params().sigma_range();
        match (custom, self.range_ms.as_mut()) {
            (false, _) => {
                self.range_ms = None;
                ui.label(format!("σ {:.1} … {:.1} ms", dmin * 1e3, dmax * 1e3));
            }
            (true, None) => self.range_ms = Some((dmin * 1e3, dmax * 1e3)),
            (true, Some((lo, hi))) => {
                ui.add(
                    egui::Slider::new(lo, 0.5..=100.0)
                        .logarithmic(true)
                        .text("σ min (ms)"),
                );
                ui.add(
                    egui::Slider::new(hi, 0.5..=200.0)
                        .logarithmic(true)
                        .text("σ max (ms)"),
                );
                *hi = hi.max(*lo);
            }
        }
        super::backend_picker(ui, &mut self.backend, self.gpu.as_ref());
        ui.separator();
        ui.horizontal(|ui| {
            ui.label("Scatter");
            let mut mse = self.scatter == ScatterAxes::SigmaMse;
            ui.radio_value(&mut mse, true, "σ vs MSE");
            ui.radio_value(&mut mse, false, "coefficients");
            self.scatter = match (mse, self.scatter) {
                (true, _) => ScatterAxes::SigmaMse,
                (false, ScatterAxes::Coefficients(a, b)) => ScatterAxes::Coefficients(a, b),
                (false, ScatterAxes::SigmaMse) => {
                    ScatterAxes::Coefficients(0, 1.min(self.order - 1))
                }
            };
        });
        if let ScatterAxes::Coefficients(a, b) = &mut self.scatter {
            let top = self.order - 1;
            ui.horizontal(|ui| {
                ui.add(egui::DragValue::new(a).range(0..=top).prefix("x: c"));
                ui.add(egui::DragValue::new(b).range(0..=top).prefix("y: c"));
            });
            *a = (*a).min(top);
            *b = (*b).min(top);
        }
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.by_mse, "colour by MSE");
            if self.by_mse {
                self.colours.picker(ui, "beat colours");
            }
        });
        ui.add(egui::Slider::new(&mut self.panel_height, 200.0..=900.0).text("panel height"));
        ui.separator();
        self.worker.spinner(ui, "");
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        let mut export = None;
        if let Some((req, s)) = &self.shown {
            let (mean, sd) =
                crate::analysis::hermite::mean_sd(s.fits.mse.iter().map(|&m| m as f64));
            let unit = self.rec.signals[req.signal].unit.trim();
            ui.label(format!(
                "{} beats ({}), {} skipped",
                s.fits.len(),
                match s.beats.source {
                    crate::analysis::hermite::BeatSource::Annotations => "annotations",
                    crate::analysis::hermite::BeatSource::Detector => "detector",
                    crate::analysis::hermite::BeatSource::Given => "given",
                },
                s.beats.skipped.len()
            ));
            ui.label(format!("MSE {mean:.3e} ± {sd:.2e} {unit}²"));
            ui.label(format!("{}: {:.1} ms", s.ran_on, s.elapsed_s * 1e3));
            export = export::buttons(ui, "beats");
        }
        if let Some((format, path)) = export {
            self.save(format, path);
        }
    }

    fn report(&self) -> Option<Result<HermiteReport, String>> {
        let (req, s) = self.shown.as_ref()?;
        Some(
            HermiteReport::new(
                self.rec.display_name(),
                self.rec.signals[req.signal].unit.trim().to_string(),
                &s.beats,
                &req.params,
                &s.fits,
                (s.elapsed_s, s.ran_on.clone()),
            )
            .map_err(|e| e.to_string()),
        )
    }

    fn save(&mut self, format: Format, path: std::path::PathBuf) {
        let result = match format {
            Format::Png => {
                self.png_request = Some(path);
                Ok(())
            }
            Format::Csv | Format::Json => match self.report() {
                None => Ok(()),
                Some(report) => report.and_then(|r| {
                    let text = match format {
                        Format::Csv => Ok(r.csv()),
                        _ => serde_json::to_string_pretty(&r).map_err(|e| e.to_string()),
                    }?;
                    export::write_atomic(&path, text.as_bytes())
                }),
            },
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
    }

    /// Beat markers with their labels along the top of the browser's traces.
    fn mark_beats(&self, ui: &egui::Ui, browser: &Browser) {
        let Some((_, s)) = &self.shown else { return };
        let plot = browser.plot_rect;
        if !plot.is_positive() {
            return;
        }
        let (t0, t1) = browser.visible_span();
        let first = s.beats.times.partition_point(|&t| t < t0);
        let last = s.beats.times.partition_point(|&t| t <= t1);
        if last - first > 400 {
            return; // too many to read: zoom in
        }
        let painter = ui.painter_at(plot);
        let font = egui::FontId::proportional(11.0);
        for i in first..last {
            let x = plot.left() + ((s.beats.times[i] - t0) / (t1 - t0)) as f32 * plot.width();
            let label = s.beats.labels[i].as_deref();
            let colour = label_colour(label);
            // A tick and the label at the bottom (the browser writes annotations at the top);
            // the selected beat gets a line across every trace.
            let top = if i == self.selected {
                plot.top()
            } else {
                plot.bottom() - 16.0
            };
            painter.line_segment(
                [Pos2::new(x, top), Pos2::new(x, plot.bottom())],
                Stroke::new(2.0, colour),
            );
            painter.text(
                Pos2::new(x + 3.0, plot.bottom() - 2.0),
                egui::Align2::LEFT_BOTTOM,
                label.unwrap_or("·"),
                font.clone(),
                colour,
            );
        }
    }

    fn panel(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.panel_rect = ui.max_rect();
        if let (true, Some((_, s))) = (self.pick_visible, &self.shown) {
            let t0 = browser.visible_span().0;
            self.selected = s
                .beats
                .times
                .partition_point(|&t| t < t0)
                .min(s.fits.len().saturating_sub(1));
            self.pick_visible = false;
        }
        let Some((req, s)) = &self.shown else {
            // Nothing is fitting while the request itself is refused: say why, not "fitting".
            let text = self.error.as_deref().unwrap_or("fitting…");
            ui.centered_and_justified(|ui| ui.label(text));
            return;
        };
        if s.fits.is_empty() {
            ui.centered_and_justified(|ui| ui.label("no beats to fit on this channel"));
            return;
        }
        let i = self.selected.min(s.fits.len() - 1);
        let label = s.beats.labels[i].clone();
        let sigma = s.sigmas[s.fits.sigma_index[i] as usize];
        let mut step = None;
        ui.horizontal(|ui| {
            if ui
                .button("< previous")
                .on_hover_text("the previous beat with this label")
                .clicked()
            {
                step = Some(false);
            }
            if ui
                .button("next >")
                .on_hover_text("the next beat with this label")
                .clicked()
            {
                step = Some(true);
            }
            ui.label(format!(
                "beat {} of {} · label {} · t = {:.3} s · σ = {:.2} ms · MSE = {:.3e}",
                i + 1,
                s.fits.len(),
                label.as_deref().unwrap_or("none"),
                s.beats.times[i],
                sigma * 1e3,
                s.fits.mse[i],
            ));
        });
        let fs = s.beats.fs;
        let window = s.beats.window;
        let x = hermite::padded(window, s.beats.window_of(i));
        let xhat = hermite::reconstruct(fs, sigma, s.fits.coefficients_of(i)).unwrap_or_default();
        let ms: Vec<f64> = window.times(fs).iter().map(|t| t * 1e3).collect();
        let series = |v: &[f64]| -> PlotPoints<'static> {
            ms.iter().zip(v).map(|(&t, &y)| [t, y]).collect()
        };
        let resid: Vec<f64> = x.iter().zip(&xhat).map(|(a, b)| a - b).collect();
        let width = ui.available_width();
        let height = ui.available_height();
        let mut clicked = None;
        let text = ui.visuals().text_color();
        ui.horizontal(|ui| {
            ui.allocate_ui(egui::vec2(width * 0.36, height), |ui| {
                Plot::new("beat")
                    .legend(Legend::default())
                    .x_axis_label("ms from the beat")
                    .allow_scroll(false)
                    .show(ui, |p| {
                        p.line(Line::new("beat", series(&x)).color(text).width(2.0));
                        p.line(
                            Line::new(format!("N = {} fit", req.params.order), series(&xhat))
                                .color(Color32::from_rgb(240, 150, 20)),
                        );
                        p.line(
                            Line::new("residual", series(&resid))
                                .color(Color32::from_rgb(220, 50, 47)),
                        );
                    });
            });
            ui.allocate_ui(egui::vec2(width * 0.24, height), |ui| {
                let bars = s
                    .fits
                    .coefficients_of(i)
                    .iter()
                    .enumerate()
                    .map(|(n, &c)| Bar::new(n as f64, c as f64).width(0.7))
                    .collect();
                Plot::new("coefficients")
                    .x_axis_label("n")
                    .allow_scroll(false)
                    .show(ui, |p| {
                        p.bar_chart(
                            BarChart::new("c_n", bars).color(label_colour(label.as_deref())),
                        );
                    });
            });
            ui.allocate_ui(egui::vec2(ui.available_width(), height), |ui| {
                clicked = self.scatter_plot(ui);
            });
        });
        if let Some(k) = step {
            self.step_same_label(k);
        }
        if let Some(k) = clicked {
            self.select(k);
        }
        if self.follow {
            self.follow = false;
            if let Some((_, s)) = &self.shown {
                let span = browser.settings.span_s;
                browser.show(
                    (s.beats.times[self.selected] - span / 2.0).max(0.0),
                    Some(span),
                );
            }
        }
    }

    /// The scatter of all beats; returns the beat clicked.
    fn scatter_plot(&self, ui: &mut egui::Ui) -> Option<usize> {
        let (_, s) = self.shown.as_ref()?;
        let point = |i: usize| -> [f64; 2] {
            match self.scatter {
                // MSE spans decades between beats: its logarithm spreads them out.
                ScatterAxes::SigmaMse => [
                    s.sigmas[s.fits.sigma_index[i] as usize] * 1e3,
                    (s.fits.mse[i] as f64).max(1e-30).log10(),
                ],
                ScatterAxes::Coefficients(a, b) => {
                    let c = s.fits.coefficients_of(i);
                    [c[a] as f64, c[b] as f64]
                }
            }
        };
        let (xl, yl) = match self.scatter {
            ScatterAxes::SigmaMse => ("σ (ms)".to_string(), "log10 MSE".to_string()),
            ScatterAxes::Coefficients(a, b) => (format!("c{a}"), format!("c{b}")),
        };
        let n = s.fits.len();
        let response = Plot::new("beat scatter")
            .legend(Legend::default())
            .x_axis_label(xl)
            .y_axis_label(yl)
            .allow_scroll(false)
            .show(ui, |p| {
                if self.by_mse {
                    let mse: Vec<f64> = s.fits.mse.iter().map(|&m| m as f64).collect();
                    let range = finite_range(&mse);
                    // One series per colour step keeps the draw calls few.
                    let mut bins: Vec<Vec<[f64; 2]>> = vec![Vec::new(); 16];
                    for (i, m) in mse.iter().enumerate() {
                        let u = ((m - range.0) / (range.1 - range.0).max(1e-30)).clamp(0.0, 1.0);
                        bins[(u * 15.0).round() as usize].push(point(i));
                    }
                    for (b, pts) in bins.into_iter().enumerate() {
                        let c = self.colours.colour(b as f64 / 15.0, (0.0, 1.0));
                        p.points(Points::new("", pts).color(c).radius(2.0));
                    }
                } else {
                    for (label, beats) in s.groups.iter() {
                        let pts: Vec<[f64; 2]> = beats.iter().map(|&i| point(i)).collect();
                        let l = label.as_deref();
                        let name = format!("{} ({})", l.unwrap_or("unlabelled"), pts.len());
                        p.points(Points::new(name, pts).color(label_colour(l)).radius(2.0));
                    }
                }
                let sel = point(self.selected.min(n - 1));
                p.points(
                    Points::new("selected", vec![sel])
                        .color(Color32::WHITE)
                        .radius(5.0)
                        .filled(false),
                );
                let clicked = p.response().clicked();
                let pointer = p.response().hover_pos();
                (clicked, pointer, *p.transform())
            });
        let (clicked, pointer, transform) = response.inner;
        let pos = pointer.filter(|_| clicked)?;
        (0..n)
            .map(|i| {
                let [x, y] = point(i);
                let q = transform.position_from_point(&egui_plot::PlotPoint::new(x, y));
                (i, q.distance(pos))
            })
            .filter(|&(_, d)| d < 12.0)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }
}

impl AnalysisView for HermiteView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.receive();
        egui::Panel::left("beat controls")
            .resizable(true)
            .default_size(250.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui));
            });
        let request = self.request();
        if let Some(e) = self.worker.request_or_refuse(ui.ctx(), request) {
            self.error = Some(e);
        }
        egui::Panel::bottom("beats")
            .exact_size(self.panel_height)
            .show(ui, |ui| self.panel(ui, browser));
        browser.ui(ui);
        self.mark_beats(ui, browser);
    }

    fn ready(&self) -> bool {
        self.worker.pending().is_none() && (self.shown.is_some() || self.error.is_some())
    }

    fn take_png_request(&mut self) -> Option<(std::path::PathBuf, Rect)> {
        Some((self.png_request.take()?, self.panel_rect))
    }

    fn parameters(&self) -> serde_json::Value {
        super::to_saved(&Saved {
            signal: self.signal.map(|c| self.rec.signals[c].label.clone()),
            filter: self.filter,
            detector: self.detector,
            order: self.order,
            sigmas: self.sigmas,
            range_ms: self.range_ms,
            backend: self.backend,
            scatter: self.scatter,
            by_mse: self.by_mse,
            colours: self.colours,
            panel_height: self.panel_height,
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        if let Some(c) =
            (s.signal).and_then(|l| self.rec.signals.iter().position(|sig| sig.label == l))
        {
            self.signal = Some(c);
        }
        self.filter = s.filter;
        self.detector = s.detector;
        self.order = s.order.clamp(1, 40);
        self.sigmas = s.sigmas.clamp(2, 400);
        self.range_ms = (s.range_ms)
            .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
            .map(|(lo, hi)| (lo.clamp(0.5, 100.0), hi.clamp(lo.clamp(0.5, 100.0), 200.0)));
        self.backend = super::saved_backend(s.backend, self.gpu.as_ref());
        let top = self.order - 1;
        self.scatter = match s.scatter {
            ScatterAxes::Coefficients(a, b) => ScatterAxes::Coefficients(a.min(top), b.min(top)),
            axes => axes,
        };
        self.by_mse = s.by_mse;
        self.colours = s.colours;
        self.panel_height = s.panel_height.clamp(200.0, 900.0);
    }
}
