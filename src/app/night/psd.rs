//! The power-spectrum dock: Welch's density (`analysis::trend::page_psd`: Hann, half-overlapped
//! segments, mean removed) of each trace of the page over the window, or over the selection
//! when there is one, recomputed as the page moves. Log or linear axes, the EEG bands shaded, a
//! readout where the pointer is; the spectra export as CSV and the dock as PNG.

use std::path::PathBuf;

use eframe::egui::{self, Color32};
use egui_plot::{HoverPosition, Line, Plot, PlotPoints, Span};

use std::sync::Arc;

use crate::analysis::trend::{PagePsd, page_psd};
use crate::app::browser::Browser;
use crate::app::browser::format::{nice_amplitude, unit_text};
use crate::app::worker::{Outcome, Worker};
use crate::dsp::montage::Derivation;
use crate::recording::Recording;

/// The bands shaded, Hz, by their Greek letters: a name must fit inside delta's few points on a 0-100 Hz
/// axis (the words were cut to "t…" and "al…").
const BANDS: [(&str, f64, f64); 5] = [
    ("δ", 0.5, 4.0),
    ("θ", 4.0, 8.0),
    ("α", 8.0, 13.0),
    ("β", 13.0, 30.0),
    ("γ", 30.0, 45.0),
];

/// What the spectra are of: the recording, its traces, the time range and segment seconds.
#[derive(Clone)]
struct PsdRequest {
    rec: Arc<Recording>,
    derivations: Vec<Derivation>,
    traces: Vec<usize>,
    range: (f64, f64),
    segment_s: f64,
}

impl PartialEq for PsdRequest {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.rec, &other.rec)
            && self.derivations == other.derivations
            && self.traces == other.traces
            && self.range == other.range
            && self.segment_s == other.segment_s
    }
}

pub struct PsdDock {
    log_y: bool,
    log_x: bool,
    bands: bool,
    segment_s: f64,
    /// Computes the spectra off the UI thread: a night's selection takes seconds on 2 cores.
    worker: Option<Worker<PsdRequest, PagePsd>>,
    shown: Option<Result<PagePsd, String>>,
    message: Option<Result<String, String>>,
    rect: egui::Rect,
}

impl Default for PsdDock {
    fn default() -> Self {
        PsdDock {
            log_y: true,
            log_x: false,
            bands: true,
            segment_s: 2.0,
            worker: None,
            shown: None,
            message: None,
            rect: egui::Rect::NOTHING,
        }
    }
}

/// `NAME.SUFFIX` beside the recording (in the working folder for one without a file).
pub fn beside(b: &Browser, suffix: &str) -> PathBuf {
    match &b.rec.path {
        Some(p) => {
            let stem = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("recording");
            p.with_file_name(format!("{stem}.{suffix}"))
        }
        None => PathBuf::from(format!("ede.{suffix}")),
    }
}

impl PsdDock {
    /// The spectra of the last request are there (or its error).
    pub fn ready(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.pending().is_none())
    }

    pub fn ui(&mut self, b: &mut Browser, ui: &mut egui::Ui) {
        let range = b.selection.unwrap_or_else(|| b.visible_span());
        let request = PsdRequest {
            rec: b.rec.clone(),
            derivations: b.traces.spec.derivations.clone(),
            traces: b.page_traces(),
            range,
            segment_s: self.segment_s,
        };
        let worker = self.worker.get_or_insert_with(|| {
            Worker::new("ede spectrum", || {
                Box::new(|r: &PsdRequest, _| {
                    page_psd(&r.rec, &r.derivations, &r.traces, r.range, r.segment_s)
                        .map(Some)
                        .map_err(|e| e.to_string())
                })
            })
        });
        worker.request(ui.ctx(), request);
        match worker.poll() {
            Some(Outcome::Done { output, .. }) => self.shown = Some(Ok(output)),
            Some(Outcome::Failed { message, .. }) => self.shown = Some(Err(message)),
            None => {}
        }
        if worker.pending().is_some() {
            // The last spectra stay drawn until the new ones come, said here.
            worker.spinner(ui, "s");
        }
        ui.horizontal_wrapped(|ui| {
            ui.strong("Power spectrum");
            let what = if b.selection.is_some() {
                "selection"
            } else {
                "page"
            };
            ui.label(format!("of the {what}, {:.1} s", range.1 - range.0));
        });
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut self.log_y, "log power");
            ui.checkbox(&mut self.log_x, "log frequency");
            ui.checkbox(&mut self.bands, "bands")
                .on_hover_text("δ 0.5-4, θ 4-8, α 8-13, β 13-30, γ 30-45 Hz");
            ui.add(
                egui::DragValue::new(&mut self.segment_s)
                    .range(0.25..=30.0)
                    .speed(0.1)
                    .suffix(" s segments"),
            );
        });
        // A copy (tens of KB): the buttons below write the dock's message.
        let Some(Ok(psd)) = self.shown.clone() else {
            if let Some(Err(e)) = &self.shown {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            return;
        };
        ui.horizontal(|ui| {
            if ui.button("Save CSV").clicked() {
                let path = beside(b, "psd.csv");
                self.message = Some(
                    crate::recording::write_whole(&path, psd.csv().as_bytes())
                        .map(|()| format!("saved {}", path.display()))
                        .map_err(|e| format!("cannot write {}: {e}", path.display())),
                );
            }
            if ui.button("Save PNG").clicked() {
                self.save_png(ui.ctx(), beside(b, "psd.png"));
            }
        });
        super::show_message(ui, &self.message);
        let (log_x, log_y) = (self.log_x, self.log_y);
        let fx = move |f: f64| if log_x { f.max(1e-3).log10() } else { f };
        let fy = move |p: f64| {
            if log_y {
                10.0 * p.max(1e-30).log10()
            } else {
                p
            }
        };
        let unit = unit_text(&psd.unit);
        let y_label = if log_y {
            format!("dB re 1 {unit}")
        } else {
            unit.clone()
        };
        // A legend in small type (a click on a name hides its trace); the readout names the
        // nearest trace too.
        let mut plot = Plot::new("psd plot")
            .x_axis_label("Hz")
            .y_axis_label(y_label)
            .legend(
                egui_plot::Legend::default()
                    .position(egui_plot::Corner::RightTop)
                    .text_style(egui::TextStyle::Small)
                    .background_alpha(0.8),
            );
        plot = match log_x {
            true => plot.x_axis_formatter(|m, _| format!("{:.3}", 10f64.powf(m.value))),
            // About six labelled steps of 1, 2 or 5 x 10^k Hz: egui_plot's own spacing left only
            // the 0 labelled.
            false => plot
                .x_grid_spacer(egui_plot::uniform_grid_spacer(|g| {
                    let step = nice_amplitude((g.bounds.1 - g.bounds.0) / 6.0);
                    [step / 2.0, step, 2.0 * step]
                }))
                .x_axis_formatter(|m, _| format!("{:.0}", m.value)),
        };
        let plot = plot.label_formatter(move |pos| {
            let (name, p) = match pos {
                HoverPosition::NearDataPoint {
                    plot_name,
                    position,
                    ..
                } => (*plot_name, position),
                HoverPosition::Elsewhere { position } => ("", position),
            };
            let f = if log_x { 10f64.powf(p.x) } else { p.x };
            let v = if log_y {
                format!("{:.1} dB", p.y)
            } else {
                format!("{:.3e} {unit}", p.y)
            };
            Some(format!("{name}\n{f:.2} Hz\n{v}"))
        });
        let response = plot.show(ui, |p| {
            if self.bands {
                for (k, (name, lo, hi)) in BANDS.iter().enumerate() {
                    let shade = if k % 2 == 0 { 18 } else { 34 };
                    p.span(
                        Span::new(*name, fx(*lo)..=fx(hi.min(psd.fs / 2.0)))
                            .fill(Color32::from_rgba_unmultiplied(60, 110, 200, shade)),
                    );
                }
            }
            for (label, values) in psd.labels.iter().zip(&psd.psd) {
                let points: PlotPoints = (psd.frequencies_hz.iter().zip(values))
                    .filter(|(f, _)| !log_x || **f > 0.0)
                    .map(|(&f, &v)| [fx(f), fy(v)])
                    .collect();
                p.line(Line::new(label.as_str(), points).width(1.2));
            }
        });
        self.rect = response.response.rect.union(ui.min_rect());
    }

    /// Saves what the dock shows, cut from a screenshot of the window.
    fn save_png(&mut self, ctx: &egui::Context, path: PathBuf) {
        let (rect, ppp) = (self.rect, ctx.pixels_per_point());
        self.message = Some(Ok(format!("saving {}", path.display())));
        ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
            egui::ScreenshotCallback::new(move |image| {
                if let Err(e) = crate::app::save_png(&image.region(&rect, Some(ppp)), &path) {
                    eprintln!("ede: {e}");
                }
            }),
        ));
    }
}
