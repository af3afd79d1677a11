//! The ICA tab: the whole recording decomposed (`analysis::ica`), every component's scalp map
//! in a grid with its share of the variance and its EOG/ECG marks; a click opens its
//! properties (map, spectrum, time course, variance over time, epochs image, correlations);
//! components are rejected by click or key with undo, browsed as lanes (Sources), and the
//! page is shown cleaned of the rejected ones over the original (Cleaned). Changing the
//! algorithm, contrast, alpha or number of components refits in the background, warm-started
//! from the last unmixing, and the grid follows: a component that matches one shown keeps its
//! place and its mark.

mod pages;
mod properties;

use std::collections::BTreeSet;
use std::sync::Arc;

use eframe::egui::{self, Color32, Key};
use serde::{Deserialize, Serialize};

use super::AnalysisView;
use super::browser::Browser;
use super::scalp_map::{Caption, ScalpMaps};
use super::worker::{Compute, Outcome, Progress, Worker};
use crate::analysis::Backend;
use crate::analysis::ica::iclabel::{SHORT, Thresholds, top_class};
use crate::analysis::ica::marks::ArtifactScores;
use crate::analysis::ica::report::{Fitted, auto_excluded};
use crate::analysis::ica::{
    ComponentCount, Decomposition, IcaMethod, IcaSettings, PicardForm, decompose, iclabel_filter,
};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::ica::Contrast;
use crate::dsp::montage::Reference;
use crate::gpu::GpuContext;
use crate::gpu::picard::GpuPicard;
use crate::recording::Recording;

/// What a fit is asked for.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    settings: IcaSettings,
    reference: Reference,
    filter: DisplayFilter,
    backend: Backend,
}

/// A fit as the tab shows it: its components in the order shown, their scores likewise.
struct Shown {
    fitted: Arc<Fitted>,
    decomposition: Decomposition,
    scores: Vec<ArtifactScores>,
    /// ICLabel's probabilities, or why there are none.
    iclabel: Result<Vec<[f64; 7]>, String>,
}

impl Shown {
    fn labels(&self) -> &[[f64; 7]] {
        self.iclabel.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Mode {
    Components,
    Sources,
    Cleaned,
}

pub struct IcaView {
    gpu: Option<GpuContext>,
    worker: Worker<Request, Arc<Fitted>>,
    settings: IcaSettings,
    average_reference: bool,
    highpass: Option<f32>,
    lowpass: Option<f32>,
    backend: Backend,
    /// The ICLabel classes (and probabilities) that mark components.
    marks: Thresholds,
    shown: Option<Shown>,
    error: Option<String>,
    rejected: BTreeSet<usize>,
    history: Vec<BTreeSet<usize>>,
    /// Marks of a session, put back on its first fit.
    restored: Option<BTreeSet<usize>>,
    selected: usize,
    mode: Mode,
    maps: ScalpMaps,
    big_map: ScalpMaps,
    properties: properties::Cache,
}

/// The worker's computation: the data read once per reference and filter, each fit
/// warm-started from the last one of the same channels and size.
fn compute(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Compute<Request, Arc<Fitted>> {
    let mut data: Option<(Reference, DisplayFilter, Arc<crate::analysis::ica::IcaData>)> = None;
    let mut last: Option<Decomposition> = None;
    Box::new(move |req: &Request, progress: &Progress| {
        let fresh = !matches!(&data, Some((r, f, _)) if *r == req.reference && *f == req.filter);
        if fresh {
            let d = crate::analysis::ica::IcaData::load(&rec, &req.reference, &req.filter)
                .map_err(|e| e.to_string())?;
            data = Some((req.reference.clone(), req.filter, Arc::new(d)));
            last = None;
        }
        if progress.cancelled() {
            return Ok(None);
        }
        let d = data.as_ref().expect("loaded above").2.clone();
        let started = std::time::Instant::now();
        let warm = last
            .as_ref()
            .filter(|_| req.settings.method != IcaMethod::Infomax);
        let decomposition = decompose(&d, &req.settings, (req.backend, gpu.as_ref()), warm)
            .map_err(|e| e.to_string())?;
        let seconds = started.elapsed().as_secs_f64();
        last = Some(decomposition.clone());
        let fitted = Fitted::judged(&rec, d, decomposition, seconds).map_err(|e| e.to_string())?;
        Ok(Some(Arc::new(fitted)))
    })
}

impl IcaView {
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        let proposed = iclabel_filter(&rec);
        IcaView {
            worker: Worker::on_recording("ede ica", &rec, &gpu, compute),
            backend: super::default_backend(gpu.as_ref()),
            gpu,
            settings: IcaSettings::default(),
            average_reference: true,
            highpass: proposed.highpass,
            lowpass: proposed.lowpass,
            marks: Thresholds::default(),
            shown: None,
            error: None,
            rejected: BTreeSet::new(),
            history: Vec::new(),
            restored: None,
            selected: 0,
            mode: Mode::Components,
            maps: ScalpMaps::default(),
            big_map: ScalpMaps::default(),
            properties: properties::Cache::default(),
        }
    }

    fn request(&self) -> Result<Request, String> {
        self.settings.validate().map_err(|e| e.to_string())?;
        let filter = DisplayFilter {
            highpass: self.highpass,
            lowpass: self.lowpass,
            highpass_order: 4,
            lowpass_order: 4,
            zero_phase: true,
            ..Default::default()
        };
        filter.validate().map_err(|e| e.to_string())?;
        Ok(Request {
            settings: self.settings,
            reference: match self.average_reference {
                true => Reference::Average,
                false => Reference::AsRecorded,
            },
            filter,
            backend: self.backend,
        })
    }

    fn receive(&mut self) {
        match self.worker.poll() {
            Some(Outcome::Done { output, .. }) => {
                self.error = None;
                let mut d = output.decomposition.clone();
                let mut scores = output.scores.clone();
                let mut iclabel = output.iclabel.clone();
                let mut rejected = BTreeSet::new();
                if let Some(previous) = &self.shown {
                    // The refit follows the grid: matched components keep place and mark.
                    let (order, continues) = d.following(&previous.decomposition);
                    d = d.reordered(&order);
                    scores = scores.iter().map(|s| s.reordered(&order)).collect();
                    iclabel = iclabel.map(|p| order.iter().map(|&k| p[k]).collect());
                    rejected = (self.rejected.iter())
                        .copied()
                        .filter(|&k| continues.get(k) == Some(&true))
                        .collect();
                }
                if let Some(saved) = self.restored.take() {
                    rejected = saved.into_iter().filter(|&k| k < d.components()).collect();
                }
                if rejected != self.rejected {
                    self.history.push(std::mem::take(&mut self.rejected));
                }
                self.rejected = rejected;
                self.selected = self.selected.min(d.components().saturating_sub(1));
                self.shown = Some(Shown {
                    fitted: output,
                    decomposition: d,
                    scores,
                    iclabel,
                });
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    /// Rejects or keeps component `k` (undoable).
    fn toggle(&mut self, k: usize) {
        self.history.push(self.rejected.clone());
        if !self.rejected.remove(&k) {
            self.rejected.insert(k);
        }
    }

    fn set_rejected(&mut self, rejected: BTreeSet<usize>) {
        if rejected != self.rejected {
            self.history
                .push(std::mem::replace(&mut self.rejected, rejected));
        }
    }

    fn undo(&mut self) {
        if let Some(previous) = self.history.pop() {
            self.rejected = previous;
        }
    }

    /// The components rejected, ascending.
    pub fn rejected(&self) -> Vec<usize> {
        self.rejected.iter().copied().collect()
    }

    pub fn set_rejected_components(&mut self, components: &[usize]) {
        self.set_rejected(components.iter().copied().collect());
    }

    pub fn select(&mut self, k: usize) {
        self.selected = k;
    }

    pub fn set_contrast(&mut self, contrast: Contrast) {
        self.settings.contrast = contrast;
    }

    pub fn set_method(&mut self, method: IcaMethod) {
        self.settings.method = method;
        (self.settings.max_iter, self.settings.tol) = method.default_limits();
        if method == IcaMethod::Picard {
            self.settings.alpha = 1.0;
        }
    }

    pub fn set_components(&mut self, components: ComponentCount) {
        self.settings.components = components;
    }

    pub fn show_mode(&mut self, mode: &str) {
        self.mode = match mode {
            "sources" => Mode::Sources,
            "cleaned" => Mode::Cleaned,
            _ => Mode::Components,
        };
    }

    /// The decomposition shown (components in the grid's order).
    pub fn decomposition(&self) -> Option<&Decomposition> {
        self.shown.as_ref().map(|s| &s.decomposition)
    }

    /// ICLabel's probabilities of the components shown, in their order, or why there are none.
    pub fn iclabel(&self) -> Option<Result<&[[f64; 7]], &str>> {
        (self.shown.as_ref()).map(|v| v.iclabel.as_deref().map_err(String::as_str))
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        ui.heading("ICA");
        let mut method = self.settings.method;
        ui.horizontal(|ui| {
            ui.label("algorithm");
            ui.radio_value(&mut method, IcaMethod::Fastica, "FastICA");
            ui.radio_value(&mut method, IcaMethod::Infomax, "ext. Infomax");
            ui.radio_value(&mut method, IcaMethod::Picard, "Picard");
        });
        if method != self.settings.method {
            self.set_method(method);
        }
        let s = &mut self.settings;
        if s.method == IcaMethod::Picard {
            ui.horizontal(|ui| {
                ui.label("solves").on_hover_text(
                    "Picard-O finds FastICA's components; standard Picard extended Infomax's",
                );
                ui.radio_value(&mut s.picard, PicardForm::Fastica, "FastICA's");
                ui.radio_value(&mut s.picard, PicardForm::Infomax, "ext. Infomax's");
            });
        }
        ui.add_enabled_ui(s.method != IcaMethod::Infomax, |ui| {
            ui.horizontal(|ui| {
                ui.label(match s.method {
                    IcaMethod::Picard => "density",
                    _ => "contrast",
                });
                ui.radio_value(&mut s.contrast, Contrast::Tanh, "logcosh");
                ui.radio_value(&mut s.contrast, Contrast::Gauss, "exp");
                ui.radio_value(&mut s.contrast, Contrast::Cube, "cube");
            });
            // Picard's densities have fixed parameters (MNE cannot pass another alpha).
            ui.add_enabled(
                s.contrast == Contrast::Tanh && s.method == IcaMethod::Fastica,
                egui::Slider::new(&mut s.alpha, 1.0..=2.0).text("alpha"),
            );
        });
        let n = self
            .shown
            .as_ref()
            .map_or(64, |v| v.decomposition.labels.len());
        ui.horizontal(|ui| {
            ui.label("components");
            let mut all = s.components == ComponentCount::All;
            if ui.checkbox(&mut all, "all").changed() {
                s.components = match all {
                    true => ComponentCount::All,
                    false => ComponentCount::Count(n.clamp(2, 20)),
                };
            }
            if let ComponentCount::Count(k) = &mut s.components {
                ui.add(egui::DragValue::new(k).range(2..=n.max(2)));
            }
        });
        ui.horizontal(|ui| {
            ui.label("seed");
            ui.add(egui::DragValue::new(&mut s.seed).range(0..=u32::MAX as u64));
        });
        ui.separator();
        ui.label("data (ICLabel's conditions: average reference, 1-100 Hz)");
        ui.checkbox(&mut self.average_reference, "average reference");
        corner(ui, "high-pass", &mut self.highpass, 1.0);
        corner(ui, "low-pass", &mut self.lowpass, 100.0);
        let fs = self.shown.as_ref().map(|v| v.decomposition.fs);
        let lp_ok = match (self.lowpass, fs) {
            (Some(lp), _) => lp <= 100.0,
            (None, Some(fs)) => fs / 2.0 <= 100.0,
            (None, None) => true,
        };
        let met = self.average_reference && self.highpass.is_some_and(|h| h >= 1.0) && lp_ok;
        if !met {
            ui.colored_label(
                Color32::from_rgb(200, 120, 0),
                "not ICLabel's conditions: its classes would be read off data unlike its own",
            );
        }
        ui.separator();
        super::backend_picker(ui, &mut self.backend, self.gpu.as_ref());
        if self.backend == Backend::Gpu {
            let f64_shaders = (self.gpu.as_ref()).is_some_and(GpuPicard::supported);
            let on_cpu = match self.settings.method {
                IcaMethod::Infomax => Some("runica's Infomax runs on the CPU"),
                IcaMethod::Picard if !f64_shaders => {
                    Some("Picard runs on the CPU here (the GPU has no f64 in shaders)")
                }
                _ => None,
            };
            if let Some(why) = on_cpu {
                ui.small(why);
            }
        }
        self.worker.spinner(ui, "");
        if let Some(v) = &self.shown {
            let d = &v.decomposition;
            ui.small(format!(
                "{} channels, {} components; {} in {:.2} s, {} iterations{}",
                d.labels.len(),
                d.components(),
                d.settings.describe(),
                v.fitted.seconds,
                d.iterations,
                if d.converged { "" } else { " (NOT converged)" }
            ));
            match &v.iclabel {
                Ok(_) => ui.small(format!("ICLabel in {:.2} s", v.fitted.label_seconds)),
                Err(why) => {
                    ui.colored_label(Color32::from_rgb(200, 120, 0), format!("no ICLabel: {why}"))
                }
            };
        }
        ui.separator();
        marks_editor(ui, &mut self.marks);
        if let Some(v) = &self.shown {
            let marked = auto_excluded(&v.scores, v.labels(), &self.marks);
            let channels: Vec<&str> = (v.scores.iter())
                .filter(|s| s.kind != "muscle")
                .map(|s| s.channel.as_str())
                .collect();
            if channels.is_empty() {
                ui.small("no EOG or ECG channel to correlate with");
            }
            if ui
                .add_enabled(
                    !marked.is_empty(),
                    egui::Button::new(format!("Reject the marked ({})", marked.len())),
                )
                .on_hover_text(format!(
                    "components ICLabel classes as above, those whose correlation with an \
                     EOG (1-10 Hz) or ECG (8-16 Hz) channel stands out (|z| > 3), as MNE's \
                     find_bads_eog/ecg{}, and those MNE's find_bads_muscle would mark (7-45 Hz \
                     slope, peripheral focus, rough map)",
                    if channels.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", channels.join(", "))
                    }
                ))
                .clicked()
            {
                let mut all = self.rejected.clone();
                all.extend(marked);
                self.set_rejected(all);
            }
        }
        if let Some(e) = &self.error {
            ui.colored_label(Color32::from_rgb(220, 50, 47), e);
        }
        ui.separator();
        ui.horizontal(|ui| {
            ui.selectable_value(&mut self.mode, Mode::Components, "Components");
            ui.selectable_value(&mut self.mode, Mode::Sources, "Sources");
            ui.selectable_value(&mut self.mode, Mode::Cleaned, "Cleaned page");
        });
        ui.small(
            "click a map to see its properties, right-click (or R) to reject or keep it, \
             Ctrl+Z to undo; the Left and Right arrows select",
        );
        ui.horizontal(|ui| {
            if ui
                .add_enabled(!self.history.is_empty(), egui::Button::new("Undo"))
                .clicked()
            {
                self.undo();
            }
            if ui
                .add_enabled(!self.rejected.is_empty(), egui::Button::new("Keep all"))
                .clicked()
            {
                self.set_rejected(BTreeSet::new());
            }
        });
        ui.small(format!("rejected: {:?}", self.rejected()));
    }

    fn keys(&mut self, ui: &egui::Ui) {
        let typing = ui.ctx().memory(|m| m.focused().is_some());
        let Some(n) = self.shown.as_ref().map(|v| v.decomposition.components()) else {
            return;
        };
        if typing || n == 0 {
            return;
        }
        let (r, undo, left, right) = ui.input(|i| {
            (
                i.key_pressed(Key::R),
                i.modifiers.command && i.key_pressed(Key::Z),
                i.key_pressed(Key::ArrowLeft),
                i.key_pressed(Key::ArrowRight),
            )
        });
        if undo {
            self.undo();
        } else if r {
            self.toggle(self.selected);
        }
        if left {
            self.selected = self.selected.saturating_sub(1);
        }
        if right {
            self.selected = (self.selected + 1).min(n - 1);
        }
    }

    fn captions(&self, v: &Shown) -> Vec<Caption> {
        let d = &v.decomposition;
        (0..d.components())
            .map(|k| {
                let marks: Vec<String> = (v.scores.iter())
                    .filter(|s| s.marked.contains(&k))
                    .map(|s| format!("{} {:.2}", s.channel, s.scores[k]))
                    .collect();
                // Two lines: the component, then its class and marks.
                let mut text = format!("IC{k} {:.1} %\n", 100.0 * d.explained_variance[k]);
                let mut second = Vec::new();
                if let Some(p) = v.labels().get(k) {
                    let top = top_class(p);
                    second.push(format!("{} {:.0}%", SHORT[top], 100.0 * p[top]));
                }
                second.extend(marks);
                text += &second.join(" · ");
                Caption {
                    text,
                    gone: self.rejected.contains(&k),
                }
            })
            .collect()
    }

    fn components(&mut self, ui: &mut egui::Ui) {
        let Some(v) = &self.shown else {
            return;
        };
        let captions = self.captions(v);
        let d = &v.decomposition;
        let channels = (&d.labels[..], &d.positions[..]);
        let n = d.components();
        let mut clicked = None;
        let mut toggled = false;
        egui::Panel::right("ica properties")
            .resizable(true)
            .default_size(ui.available_width() * 0.45)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    toggled = properties::panel(
                        ui,
                        (v, self.selected, &captions[self.selected.min(n - 1)]),
                        &mut self.big_map,
                        &mut self.properties,
                    );
                });
            });
        egui::CentralPanel::default().show(ui, |ui| {
            let per_row = ((n as f32).sqrt().ceil() as usize).max(4);
            clicked = self.maps.grid(
                ui,
                channels,
                &d.mixing,
                &captions,
                (n, per_row.min(n), true),
                Some(self.selected),
            );
        });
        if toggled {
            self.toggle(self.selected);
        }
        if let Some(c) = clicked {
            self.selected = c.component;
            if c.secondary {
                self.toggle(c.component);
            }
        }
    }
}

/// The ICLabel classes that mark components, each with a switch and its probability.
fn marks_editor(ui: &mut egui::Ui, marks: &mut Thresholds) {
    ui.label("automatic marks: ICLabel classes at or above");
    egui::Grid::new("iclabel marks")
        .num_columns(2)
        .show(ui, |ui| {
            for (c, name) in SHORT.iter().enumerate() {
                let mut on = marks.0[c].is_some();
                if ui.checkbox(&mut on, *name).changed() {
                    marks.0[c] = on.then_some(0.9);
                }
                if let Some(t) = &mut marks.0[c] {
                    ui.add(egui::DragValue::new(t).range(0.0..=1.0).speed(0.01));
                }
                ui.end_row();
            }
        });
}

/// A corner frequency with a switch: on at `default` Hz, off for none.
fn corner(ui: &mut egui::Ui, what: &str, value: &mut Option<f32>, default: f32) {
    ui.horizontal(|ui| {
        let mut on = value.is_some();
        if ui.checkbox(&mut on, what).changed() {
            *value = on.then_some(default);
        }
        if let Some(v) = value {
            ui.add(
                egui::DragValue::new(v)
                    .range(0.01..=1000.0)
                    .speed(0.1)
                    .suffix(" Hz"),
            );
        }
    });
}

#[derive(Serialize, Deserialize)]
struct Saved {
    settings: IcaSettings,
    average_reference: bool,
    highpass: Option<f32>,
    lowpass: Option<f32>,
    backend: Backend,
    rejected: Vec<usize>,
    mode: Mode,
    #[serde(default)]
    marks: Thresholds,
}

impl AnalysisView for IcaView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.receive();
        self.keys(ui);
        egui::Panel::left("ica controls")
            .resizable(true)
            .default_size(270.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui));
            });
        let request = self.request();
        if let Some(e) = self.worker.request_or_refuse(ui.ctx(), request) {
            self.error = Some(e);
        }
        if self.shown.is_none() {
            // In a panel of its own: on the bare window the message would be unreadable.
            egui::CentralPanel::default().show(ui, |ui| {
                ui.centered_and_justified(|ui| {
                    ui.label(
                        self.error
                            .as_deref()
                            .unwrap_or("decomposing the recording…"),
                    )
                });
            });
            return;
        }
        match self.mode {
            Mode::Components => self.components(ui),
            Mode::Sources | Mode::Cleaned => {
                let v = self.shown.as_ref().expect("checked above");
                let rejected = self.rejected();
                pages::page(ui, browser, v, &rejected, self.mode == Mode::Sources);
            }
        }
    }

    fn ready(&self) -> bool {
        self.worker.pending().is_none() && (self.shown.is_some() || self.error.is_some())
    }

    fn parameters(&self) -> serde_json::Value {
        super::to_saved(&Saved {
            settings: self.settings,
            average_reference: self.average_reference,
            highpass: self.highpass,
            lowpass: self.lowpass,
            backend: self.backend,
            rejected: self.rejected(),
            mode: self.mode,
            marks: self.marks,
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        if s.settings.validate().is_ok() {
            self.settings = s.settings;
        }
        self.average_reference = s.average_reference;
        self.highpass = s.highpass.filter(|v| v.is_finite() && *v > 0.0);
        self.lowpass = s.lowpass.filter(|v| v.is_finite() && *v > 0.0);
        self.backend = super::saved_backend(s.backend, self.gpu.as_ref());
        self.mode = s.mode;
        if s.marks.0.iter().flatten().all(|t| (0.0..=1.0).contains(t)) {
            self.marks = s.marks;
        }
        self.restored = Some(s.rejected.into_iter().collect());
    }
}
