//! Blink removal (issue 8) on the open recording: ICA window by window over the browser's
//! visible stretch or the whole recording, on the shared worker (a change of any control
//! supersedes the running job). Blinks are marked on the browser's traces; the panel below
//! shows the original and cleaned channels overlaid or side by side with the blinks shaded,
//! and the independent components of the window under the browser's centre, the removed
//! ones in red. A whole-recording result can be saved in the recording's own format.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use eframe::egui::{self, Color32, Pos2, Rect};
use egui_plot::{Line, Plot, PlotPoints, VLine};

use super::AnalysisView;
use super::browser::Browser;
use super::envelope::{Envelopes, Lane};
use super::worker::{Compute, Outcome, Progress, Worker};
use crate::analysis::Backend;
use crate::analysis::blink::{DeblinkOptions, Deblinker, EegData, SHOWN_COMPONENTS, write_cleaned};
use crate::dsp::blink::classify::EventClass;
use crate::dsp::blink::{Deblinked, Scope};
use crate::dsp::ica::{Algorithm, Contrast, Ica};
use crate::gpu::GpuContext;
use crate::recording::Recording;

/// Which stretch is cleaned.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Extent {
    /// Seconds: the browser's visible span, widened to one ICA window if shorter.
    Visible(f64, f64),
    Whole,
}

#[derive(Debug, Clone, PartialEq)]
struct Request {
    options: DeblinkOptions,
    extent: Extent,
    backend: Backend,
}

struct Cleaned {
    data: Arc<EegData>,
    /// Each channel's robust SD over the cleaned stretch: the lane scale, computed once with
    /// the result instead of every frame.
    spread: Vec<f64>,
    /// First sample of the stretch in `data`.
    offset: usize,
    result: Deblinked,
    elapsed_s: f64,
    ran_on: String,
}

fn compute(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Compute<Request, Cleaned> {
    // The channels read, by the detection and keep lists they were resolved with.
    type Key = (Option<Vec<String>>, Option<Vec<String>>);
    let mut loaded: Option<(Key, Arc<EegData>)> = None;
    Box::new(move |req: &Request, progress: &Progress| {
        let key = (req.options.detect.clone(), req.options.keep.clone());
        let data = match &loaded {
            Some((k, d)) if *k == key => d.clone(),
            _ => {
                let d = Arc::new(EegData::load(&rec, &req.options).map_err(|e| e.to_string())?);
                loaded = Some((key, d.clone()));
                d
            }
        };
        let fs = data.fs;
        let total = data.data.cols;
        let (from, to) = match req.extent {
            Extent::Whole => (0, total),
            Extent::Visible(t0, t1) => {
                let window = (req.options.params).window_samples(data.data.rows, fs, total);
                let (a, b) = ((t0 * fs).max(0.0) as usize, (t1 * fs).ceil() as usize);
                let missing = window.saturating_sub(b.saturating_sub(a));
                let a = a.saturating_sub(missing / 2);
                let b = (a + (b - a).max(window)).min(total);
                (b.saturating_sub(window.max(b - a)), b)
            }
        };
        let stretch = data.stretch(from, to);
        let t = Instant::now();
        let on_gpu = gpu.as_ref().filter(|_| req.backend == Backend::Gpu);
        let mut deblinker = Deblinker::new(on_gpu);
        let ran_on = deblinker.ran_on(&req.options, stretch.data.rows).1;
        let result = deblinker.run(&stretch, &req.options, &mut |done, _| {
            progress.done.store(done, Ordering::Relaxed);
            !progress.cancelled()
        });
        if progress.cancelled() {
            return Ok(None);
        }
        let spread = (0..stretch.data.rows)
            .map(|i| crate::dsp::blink::detect::robust_sigma(stretch.data.row(i)).max(1e-9) as f64)
            .collect();
        Ok(Some(Cleaned {
            data,
            spread,
            offset: from,
            result: result.map_err(|e| e.to_string())?,
            elapsed_s: t.elapsed().as_secs_f64(),
            ran_on,
        }))
    })
}

/// What a session keeps of the view (options out of range show the pipeline's own error).
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    options: DeblinkOptions,
    keep: String,
    whole: bool,
    backend: Backend,
    side_by_side: bool,
    panel_height: f32,
}

pub struct BlinkView {
    rec: Arc<Recording>,
    gpu: Option<GpuContext>,
    options: DeblinkOptions,
    keep_text: String,
    whole: bool,
    backend: Backend,
    side_by_side: bool,
    panel_height: f32,
    worker: Worker<Request, Cleaned>,
    shown: Option<(Request, Cleaned)>,
    error: Option<String>,
    saved: Option<String>,
    /// Drawn while the shown result is borrowed: a cell.
    maps: std::cell::RefCell<super::scalp_map::ScalpMaps>,
}

impl BlinkView {
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        BlinkView {
            options: DeblinkOptions::default(),
            keep_text: String::new(),
            whole: false,
            backend: super::default_backend(gpu.as_ref()),
            side_by_side: false,
            panel_height: 380.0,
            worker: Worker::on_recording("ede blinks", &rec, &gpu, compute),
            maps: Default::default(),
            rec,
            gpu,
            shown: None,
            error: None,
            saved: None,
        }
    }

    pub fn set_contrast(&mut self, contrast: Contrast) {
        self.options.fastica.contrast = contrast;
    }

    pub fn set_whole(&mut self, whole: bool) {
        self.whole = whole;
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The cleaning shown: its options, the blinks (seconds) and the number of windows.
    pub fn shown(&self) -> Option<(&DeblinkOptions, Vec<f64>, usize)> {
        let (req, c) = self.shown.as_ref()?;
        let fs = c.data.fs;
        let blinks = (c.result.blinks.iter())
            .map(|b| (c.offset + b.peak) as f64 / fs)
            .collect();
        Some((&req.options, blinks, c.result.windows.len()))
    }

    fn request(&self, browser: &Browser) -> Request {
        let (t0, t1) = browser.visible_span();
        Request {
            options: self.options.clone(),
            extent: if self.whole {
                Extent::Whole
            } else {
                Extent::Visible(t0, t1)
            },
            backend: self.backend,
        }
    }

    fn receive(&mut self) {
        match self.worker.poll() {
            Some(Outcome::Done { request, output }) => {
                self.error = None;
                self.shown = Some((request, output));
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        ui.heading("Blinks");
        ui.label(
            "Eye blinks found on the EOG and frontal channels, told from eye movements and closures by their shape, confirmed on ICA components and removed.",
        );
        ui.add_space(4.0);
        ui.spacing_mut().slider_width = 130.0;
        ui.horizontal(|ui| {
            ui.radio_value(&mut self.whole, false, "visible stretch");
            ui.radio_value(&mut self.whole, true, "whole recording");
        });
        pipeline_controls(ui, &mut self.options);
        ui.horizontal(|ui| {
            ui.label("keep");
            ui.text_edit_singleline(&mut self.keep_text).on_hover_text(
                "channels left unchanged, comma-separated (empty: the EOG channels)",
            );
        });
        let keep: Vec<String> = (self.keep_text.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        self.options.keep = (!keep.is_empty()).then_some(keep);
        super::backend_picker(ui, &mut self.backend, self.gpu.as_ref());
        ui.separator();
        ui.checkbox(&mut self.side_by_side, "original and cleaned side by side");
        ui.add(egui::Slider::new(&mut self.panel_height, 200.0..=900.0).text("panel height"));
        ui.separator();
        self.worker.spinner(ui, "windows");
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        if let Some((req, c)) = &self.shown {
            let r = &c.result;
            let ica = r.windows.iter().filter(|w| w.ica.is_some()).count();
            ui.label(format!(
                "{} blinks · {} windows ({} with ICA)",
                r.blinks.len(),
                r.windows.len(),
                ica
            ));
            // Events a pooled field's source judged blinks went with them.
            let whole = req.options.params.remove_eye_movements;
            let count = |class: EventClass| {
                (r.events.iter())
                    .filter(|e| e.class == class)
                    .filter(|e| whole || !r.blinks.iter().any(|b| b.overlaps(&e.span)))
                    .count()
            };
            let (movements, closures) = (
                count(EventClass::EyeMovement),
                count(EventClass::EyeClosure),
            );
            let uncertain = count(EventClass::Uncertain);
            ui.label(if req.options.params.remove_eye_movements {
                format!(
                    "the eye's component removed throughout: with it {movements} eye \
                     movements, {closures} closures, {uncertain} uncertain events"
                )
            } else {
                format!(
                    "left alone: {movements} eye movements, {closures} closures, {uncertain} \
                     uncertain"
                )
            });
            ui.label(format!(
                "detection: {}",
                c.data.channels.derivation_names().join(", ")
            ));
            let kept: Vec<&str> = (c.data.channels.labels.iter().zip(&c.data.channels.keep))
                .filter(|(_, k)| **k)
                .map(|(l, _)| l.as_str())
                .collect();
            ui.label(format!(
                "kept: {}",
                if kept.is_empty() {
                    "none".into()
                } else {
                    kept.join(", ")
                }
            ));
            ui.label(format!("{}: {:.1} ms", c.ran_on, c.elapsed_s * 1e3));
            let whole = req.extent == Extent::Whole;
            let save = ui.add_enabled(whole, egui::Button::new("Save the cleaned recording…"));
            let save = save.on_disabled_hover_text("clean the whole recording first");
            if save.clicked() {
                self.save();
            }
        }
        if let Some(s) = &self.saved {
            ui.label(s);
        }
    }

    fn save(&mut self) {
        let Some((_, c)) = &self.shown else { return };
        // EDF and BDF are copied in their own format, the rest converted to BDF+.
        let ext = self.rec.format.edf_family().unwrap_or("bdf");
        let stem = self.rec.display_name();
        let stem = stem.rsplit_once('.').map_or(stem.as_str(), |s| s.0);
        let Some(path) = rfd::FileDialog::new()
            .set_file_name(format!("{stem}.deblinked.{ext}"))
            .add_filter(ext, &[ext])
            .save_file()
        else {
            return;
        };
        match write_cleaned(&self.rec, &c.data, &c.result.cleaned, &path) {
            Ok(()) => self.saved = Some(format!("saved {}", path.display())),
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    /// Markers on the browser's traces: the blinks removed, shaded red, and the eye events
    /// left alone (eye movements, closures, uncertain ones), outlined in amber with their class;
    /// where a component goes over the whole window (the eye's whole activity), those events
    /// go with it and are shaded red too, with their class.
    fn mark_blinks(&self, ui: &egui::Ui, browser: &Browser) {
        let Some((req, c)) = &self.shown else { return };
        let whole = req.options.params.removes_everywhere();
        let plot = browser.plot_rect;
        if !plot.is_positive() {
            return;
        }
        let (t0, t1) = browser.visible_span();
        let painter = ui.painter_at(plot);
        let red = Color32::from_rgb(220, 50, 47);
        let amber = Color32::from_rgb(203, 140, 20);
        let x = |t: f64| plot.left() + ((t - t0) / (t1 - t0)) as f32 * plot.width();
        let removed = c.result.blinks.iter().map(|b| (*b, "blink", red));
        let left = (c.result.events.iter())
            .filter(|e| !c.result.blinks.iter().any(|b| b.overlaps(&e.span)))
            .map(|e| (e.span, e.class.name(), if whole { red } else { amber }));
        // Each label in the lowest row where it clears the one before it ("eye move" and
        // "blink" side by side overprinted), on a backing so the traces under it do not hide it.
        let mut row_ends: Vec<f32> = Vec::new();
        let mut spans: Vec<_> = removed.chain(left).collect();
        spans.sort_by_key(|s| s.0.start);
        for (b, name, colour) in spans {
            let (a, z) = (
                (c.offset + b.start) as f64 / c.data.fs,
                (c.offset + b.end) as f64 / c.data.fs,
            );
            if z < t0 || a > t1 {
                continue;
            }
            let r = Rect::from_x_y_ranges(
                x(a).max(plot.left())..=x(z).min(plot.right()),
                plot.y_range(),
            );
            if colour == red {
                painter.rect_filled(r, 0.0, colour.gamma_multiply(0.25));
            } else {
                let stroke = egui::Stroke::new(1.0, colour.gamma_multiply(0.8));
                painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Inside);
            }
            let font = egui::FontId::proportional(11.0);
            let galley = painter.layout_no_wrap(name.to_string(), font, colour);
            let left = r.left() + 2.0;
            let row = match row_ends.iter().position(|&end| end + 3.0 <= left) {
                Some(k) => k,
                None => {
                    row_ends.push(f32::NEG_INFINITY);
                    row_ends.len() - 1
                }
            };
            row_ends[row] = left + galley.size().x;
            let at = Pos2::new(
                left,
                plot.bottom() - 2.0 - row as f32 * (galley.size().y + 1.0),
            );
            let label = Rect::from_min_size(at - egui::vec2(0.0, galley.size().y), galley.size());
            painter.rect_filled(label.expand(1.0), 2.0, Color32::from_white_alpha(210));
            painter.galley(label.min, galley, colour);
        }
    }

    fn panel(&mut self, ui: &mut egui::Ui, browser: &Browser) {
        let Some((_, c)) = &self.shown else {
            // A refused request (no EOG or frontal channel, a setting out of range) cleans
            // nothing: say why, not "cleaning".
            let text = self.error.as_deref().unwrap_or("cleaning…");
            ui.centered_and_justified(|ui| ui.label(text));
            return;
        };
        let fs = c.data.fs;
        let (t0, t1) = browser.visible_span();
        let len = c.result.cleaned.cols;
        let (a, b) = (
            ((t0 * fs) as usize).saturating_sub(c.offset).min(len),
            ((t1 * fs).ceil() as usize)
                .saturating_sub(c.offset)
                .min(len),
        );
        if b <= a {
            ui.centered_and_justified(|ui| ui.label("the cleaned stretch is not in view"));
            return;
        }
        let step = ((b - a) / 2000).max(1);
        let ch = &c.data.channels;
        // Lanes: each channel at a fixed offset, scaled by its robust spread over the stretch.
        let rows = c.data.data.rows;
        let spread = &c.spread;
        let lane = |i: usize| -((i as f64) * 8.0);
        let trace = |x: &[f32], i: usize| -> PlotPoints<'static> {
            (a..b)
                .step_by(step)
                .map(|k| {
                    let t = (c.offset + k) as f64 / fs;
                    [t, lane(i) + x[k] as f64 / spread[i]]
                })
                .collect()
        };
        let original = |i: usize| -> &[f32] { &c.data.data.row(i)[c.offset..c.offset + len] };
        let blink_lines: Vec<(f64, f64)> = (c.result.blinks.iter())
            .map(|bl| {
                (
                    (c.offset + bl.start) as f64 / fs,
                    (c.offset + bl.end) as f64 / fs,
                )
            })
            .filter(|&(s, e)| e >= t0 && s <= t1)
            .collect();
        let grey = ui.visuals().weak_text_color();
        let blue = Color32::from_rgb(90, 160, 230);
        let red = Color32::from_rgba_unmultiplied(220, 50, 47, 120);
        let text = ui.visuals().text_color();
        let names = &ch.labels;
        let draw_blinks = |p: &mut egui_plot::PlotUi<'_>| {
            for &(s, e) in &blink_lines {
                p.vline(VLine::new("", s).color(red));
                p.vline(VLine::new("", e).color(red));
            }
            lane_labels(p, names, |i| (t0, lane(i)), text);
        };
        let width = ui.available_width();
        let height = ui.available_height();
        ui.horizontal(|ui| {
            let traces_w = width * 0.62;
            ui.allocate_ui(egui::vec2(traces_w, height), |ui| {
                if self.side_by_side {
                    let link = ui.scope_id().with("blink traces");
                    ui.columns(2, |cols| {
                        for (k, col) in cols.iter_mut().enumerate() {
                            Plot::new(("blink traces", k))
                                .link_axis(link, [true, true])
                                .show_axes([true, false])
                                .x_axis_label(if k == 0 {
                                    "original (s)"
                                } else {
                                    "cleaned (s)"
                                })
                                .allow_scroll(false)
                                .show(col, |p| {
                                    for i in 0..rows {
                                        let (x, colour) = if k == 0 {
                                            (original(i), grey)
                                        } else {
                                            (c.result.cleaned.row(i), blue)
                                        };
                                        p.line(Line::new("", trace(x, i)).color(colour));
                                    }
                                    draw_blinks(p);
                                });
                        }
                    });
                } else {
                    Plot::new("blink traces")
                        .show_axes([true, false])
                        .x_axis_label("s · original grey, cleaned blue")
                        .allow_scroll(false)
                        .show(ui, |p| {
                            for i in 0..rows {
                                p.line(Line::new("", trace(original(i), i)).color(grey));
                                p.line(
                                    Line::new("", trace(c.result.cleaned.row(i), i)).color(blue),
                                );
                            }
                            draw_blinks(p);
                        });
                }
            });
            let right = ui.available_width();
            let layout = egui::Layout::top_down(egui::Align::Min);
            ui.allocate_ui_with_layout(egui::vec2(right, height), layout, |ui| {
                ui.set_max_width(right);
                self.components(ui, c, (t0, t1));
            });
        });
    }

    /// The components of the window whose centre is nearest the middle of `span` (seconds),
    /// over the part of `span` it covers, removed ones in red.
    fn components(&self, ui: &mut egui::Ui, c: &Cleaned, span: (f64, f64)) {
        let t = (span.0 + span.1) / 2.0;
        let fs = c.data.fs;
        let Some(w) = (c.result.windows.iter())
            .filter(|w| w.ica.is_some())
            .min_by(|x, y| {
                let d = |w: &crate::dsp::blink::WindowResult| {
                    ((c.offset + w.start) as f64 / fs + w.len as f64 / fs / 2.0 - t).abs()
                };
                d(x).total_cmp(&d(y))
            })
        else {
            ui.centered_and_justified(|ui| {
                ui.label("no window here needed ICA (no blink candidates)")
            });
            return;
        };
        let ica = w.ica.as_ref().expect("filtered");
        let label = format!(
            "s · window at {:.1} s, {} iterations{}",
            (c.offset + w.start) as f64 / fs,
            ica.iterations,
            if ica.converged {
                ""
            } else {
                " (not converged)"
            }
        );
        let start = (c.offset + w.start) as f64 / fs;
        let maps = &mut *self.maps.borrow_mut();
        // One row of every component: the panel is short, and the traces below need their
        // lanes.
        let at = (&c.data.channels.labels[..], &c.data.positions[..]);
        let every = ica.mixing.ncols();
        maps.ui(ui, at, ica, &w.removed, (every, every.max(1)));
        components_plot(
            ui,
            "blink components",
            ica,
            &w.removed,
            (start, fs),
            span,
            label,
        );
    }
}

/// The pipeline's controls, shared by the Blinks and Live tabs: ICA, contrast, window and the
/// detector's thresholds.
pub(super) fn pipeline_controls(ui: &mut egui::Ui, o: &mut DeblinkOptions) {
    ui.horizontal(|ui| {
        ui.label("ICA");
        ui.radio_value(&mut o.algorithm, Algorithm::Fastica, "FastICA");
        ui.radio_value(&mut o.algorithm, Algorithm::Jade, "JADE");
    });
    ui.add_enabled_ui(o.algorithm == Algorithm::Fastica, |ui| {
        ui.horizontal(|ui| {
            ui.label("contrast");
            ui.radio_value(&mut o.fastica.contrast, Contrast::Tanh, "tanh");
            ui.radio_value(&mut o.fastica.contrast, Contrast::Cube, "cube");
            ui.radio_value(&mut o.fastica.contrast, Contrast::Gauss, "gauss");
        });
    });
    let p = &mut o.params;
    ui.add(
        egui::Slider::new(&mut p.window_s, 2.0..=120.0)
            .logarithmic(true)
            .text("window (s)"),
    )
    .on_hover_text(
        "lengthened to hold 2.5 n² samples for n channels (30 n² where the eye's whole \
         activity goes)",
    );
    ui.add(egui::Slider::new(&mut p.candidate_z, 2.0..=10.0).text("candidate threshold (SD)"));
    ui.add(egui::Slider::new(&mut p.component_z, 2.0..=12.0).text("component threshold (SD)"));
    ui.add(egui::Slider::new(&mut p.min_match, 0.1..=1.0).text("match fraction"));
    ui.add(egui::Slider::new(&mut p.min_share, 0.05..=1.0).text("share of the blink"));
    ui.add(egui::Slider::new(&mut p.max_components, 1..=6).text("components at most"));
    ui.add(egui::Slider::new(&mut p.source_lowpass_hz, 0.0..=60.0).text("source low-pass (Hz)"))
        .on_hover_text(
            "the blink source is low-passed here before it is subtracted under the blinks: its \
             faster activity is EEG, muscle and noise, not blink (0: none)",
        );
    ui.horizontal(|ui| {
        ui.label("remove over");
        ui.radio_value(&mut p.scope, Scope::Blinks, "blinks");
        ui.radio_value(&mut p.scope, Scope::Window, "whole window");
    });
    ui.checkbox(
        &mut p.remove_eye_movements,
        "remove the eye's whole activity (movements, closures)",
    )
    .on_hover_text(
        "by default only events shaped like blinks are removed and uncertain ones never are; \
         this removes the eye's component everywhere, from an ICA of the EEG without the EOG \
         channels over minutes of data (the EOG channels still show the eyes)",
    );
}

/// Channel names at the left of their lanes: `at(i)` is (time, lane offset) of channel i.
pub(super) fn lane_labels(
    p: &mut egui_plot::PlotUi<'_>,
    names: &[String],
    at: impl Fn(usize) -> (f64, f64),
    colour: Color32,
) {
    for (i, name) in names.iter().enumerate() {
        let (t, y) = at(i);
        p.text(
            egui_plot::Text::new("", egui_plot::PlotPoint::new(t, y + 2.5), name.as_str())
                .anchor(egui::Align2::LEFT_CENTER)
                .color(colour),
        );
    }
}

/// The first `SHOWN_COMPONENTS` components of `ica` (a window starting at `start` seconds,
/// `fs` Hz) over the part of `span` (seconds) the window covers, one lane each, the `removed`
/// ones in red.
pub(super) fn components_plot(
    ui: &mut egui::Ui,
    id: &str,
    ica: &Ica,
    removed: &[usize],
    (start, fs): (f64, f64),
    span: (f64, f64),
    label: String,
) {
    let n = ica.sources.cols;
    let shown = ica.sources.rows.min(SHOWN_COMPONENTS);
    let first = ((span.0 - start) * fs).max(0.0) as usize;
    let last = (((span.1 - start) * fs).ceil().max(0.0) as usize).min(n);
    let red = Color32::from_rgb(220, 50, 47);
    let kept = ui.visuals().weak_text_color();
    let names: Vec<String> = (0..shown).map(|k| format!("IC {k}")).collect();
    Plot::new(id.to_string())
        .x_axis_label(label)
        .y_axis_formatter(move |mark, _| {
            let k = (-mark.value / 8.0).round();
            if (mark.value + k * 8.0).abs() < 1e-6 && k >= 0.0 {
                names.get(k as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_grid_spacer(egui_plot::uniform_grid_spacer(|_| [8.0, 8.0, 8.0]))
        .allow_scroll(false)
        .show(ui, |p| {
            let lanes = (0..shown).map(|k| {
                let gone = removed.contains(&k);
                Lane {
                    samples: [ica.sources.row(k), &[]],
                    runs: std::iter::once(first..last.max(first)).collect(),
                    offset: -(k as f64) * 8.0,
                    gain: 1.0,
                    color: if gone { red } else { kept },
                    width: if gone { 1.8 } else { 1.0 },
                }
            });
            p.add(Envelopes::new(
                "components",
                lanes.collect(),
                (start, fs),
                4.0,
            ));
        });
}

impl AnalysisView for BlinkView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.receive();
        egui::Panel::left("blink controls")
            .resizable(true)
            .default_size(260.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui));
            });
        let req = self.request(browser);
        self.worker.request(ui.ctx(), req);
        egui::Panel::bottom("blinks")
            .exact_size(self.panel_height)
            .show(ui, |ui| self.panel(ui, browser));
        browser.ui(ui);
        self.mark_blinks(ui, browser);
    }

    fn ready(&self) -> bool {
        self.worker.pending().is_none() && (self.shown.is_some() || self.error.is_some())
    }

    fn parameters(&self) -> serde_json::Value {
        super::to_saved(&Saved {
            options: self.options.clone(),
            keep: self.keep_text.clone(),
            whole: self.whole,
            backend: self.backend,
            side_by_side: self.side_by_side,
            panel_height: self.panel_height,
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        self.options = s.options;
        self.keep_text = s.keep;
        self.whole = s.whole;
        self.backend = super::saved_backend(s.backend, self.gpu.as_ref());
        self.side_by_side = s.side_by_side;
        self.panel_height = s.panel_height.clamp(200.0, 900.0);
    }
}
