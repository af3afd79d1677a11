//! The ERP tab: epochs around events of the page's traces (its montage, reference and filters,
//! run zero-phase here by default: a causal filter shifts latencies) and their averages per
//! condition, as MNE's joint plot shows them: scalp maps at chosen latencies and at the hovered
//! one, the butterfly (each channel coloured by its place on the head) with the GFP, one
//! channel's average with its 95 % band, and the epochs image of that channel (or of the GFP)
//! sorted by another event's latency. Every slider recomputes on the worker; the EEGLAB sample
//! takes a few milliseconds.

mod plots;

use std::sync::Arc;
use std::time::Instant;

use eframe::egui::{self, Rect};

use super::AnalysisView;
use super::browser::Browser;
use super::export::{self, Format};
use super::scalp_map::ScalpMaps;
use super::traces::TraceSpec;
use super::worker::{Compute, Outcome, Progress, Worker};
use crate::analysis::epochs::{self, EpochParams, Epochs};
use crate::gpu::GpuContext;
use crate::recording::{Annotation, ChannelType, Recording};

/// What the worker epochs: the page's traces, the reviewer's events and the parameters.
#[derive(Clone)]
struct Request {
    spec: Arc<TraceSpec>,
    events: Arc<EventList>,
    params: EpochParams,
    zero_phase: bool,
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.spec, &other.spec)
            && Arc::ptr_eq(&self.events, &other.events)
            && self.params == other.params
            && self.zero_phase == other.zero_phase
    }
}

struct Computed {
    epochs: Epochs,
    elapsed_s: f64,
}

fn compute(_rec: Arc<Recording>, _gpu: Option<GpuContext>) -> Compute<Request, Computed> {
    // The placed events and read traces, kept while only the baseline or the limits change.
    let mut kept: Option<(Request, epochs::Prepared)> = None;
    Box::new(move |req: &Request, progress: &Progress| {
        let t = Instant::now();
        let same_traces = |old: &Request| {
            Arc::ptr_eq(&old.spec, &req.spec)
                && Arc::ptr_eq(&old.events, &req.events)
                && old.zero_phase == req.zero_phase
                && (old.params.events.iter().eq(&req.params.events))
                && (old.params.tmin, old.params.tmax) == (req.params.tmin, req.params.tmax)
                && old.params.reject_by_annotation == req.params.reject_by_annotation
        };
        if !kept.as_ref().is_some_and(|(old, _)| same_traces(old)) {
            let spec = &req.spec;
            let filter_of = |d: usize| {
                let mut f = spec.filter_of(d);
                f.zero_phase |= req.zero_phase;
                f
            };
            let prepared = epochs::prepare(
                &spec.rec,
                &req.events.list,
                &spec.derivations,
                &filter_of,
                &req.params,
            )
            .map_err(|e| e.to_string())?;
            kept = Some((req.clone(), prepared));
        }
        if progress.cancelled() {
            return Ok(None);
        }
        let (_, prepared) = kept.as_ref().expect("prepared above");
        let e = prepared.average(&req.params).map_err(|e| e.to_string())?;
        Ok(Some(Computed {
            epochs: e,
            elapsed_s: t.elapsed().as_secs_f64(),
        }))
    })
}

/// What the plots show of the conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Shown {
    Condition(usize),
    /// The first condition less the second.
    Difference(usize, usize),
}

/// The epochs image's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum ImageOf {
    Channel,
    Gfp,
}

/// What a session keeps of the view.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    params: EpochParams,
    zero_phase: bool,
    channel: Option<String>,
    sort_by: Option<String>,
    latencies_ms: Vec<f64>,
}

pub struct ErpView {
    params: EpochParams,
    /// Run the page's filters forward and backward.
    zero_phase: bool,
    /// Rejection limits typed per type, in uV (0: none), for the sliders.
    reject_uv: [f64; 2],
    flat_uv: f64,
    shown_as: Shown,
    /// The channel of the band plot and the image, by label.
    channel: Option<String>,
    image_of: ImageOf,
    /// The event whose latency after each epoch's event sorts the image.
    sort_by: Option<String>,
    /// The maps' latencies (s); empty: the GFP's three largest peaks.
    latencies: Vec<f64>,
    /// The latency under the pointer in the butterfly, for its map.
    hovered: Option<f64>,
    worker: Worker<Request, Computed>,
    shown: Option<(Request, Computed)>,
    events: Option<Arc<EventList>>,
    /// Counts the results shown: the epochs image is made again for a new one.
    generation: u64,
    error: Option<String>,
    maps: ScalpMaps,
    image: plots::ImageCache,
    panel_rect: Rect,
    png_request: Option<std::path::PathBuf>,
}

/// The reviewer's events as of one version of the list, with their texts counted: made again
/// only when the list changes, not every frame.
struct EventList {
    version: u64,
    list: Vec<Annotation>,
    kinds: Vec<(String, usize)>,
}

/// Event texts of `events` with their counts, commonest first (bad spans aside).
fn event_kinds(events: &[Annotation]) -> Vec<(String, usize)> {
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for a in events {
        let d = a.description().trim();
        if d.is_empty() || d.to_ascii_lowercase().starts_with("bad") {
            continue;
        }
        match kinds.iter_mut().find(|(k, _)| k == d) {
            Some((_, n)) => *n += 1,
            None => kinds.push((d.to_string(), 1)),
        }
    }
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    kinds
}

impl ErpView {
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        let first = event_kinds(&rec.annotations).into_iter().next();
        ErpView {
            params: EpochParams {
                events: first.map(|(k, _)| vec![k]).unwrap_or_default(),
                ..Default::default()
            },
            zero_phase: true,
            reject_uv: [0.0, 0.0],
            flat_uv: 0.0,
            shown_as: Shown::Condition(0),
            channel: None,
            image_of: ImageOf::Channel,
            sort_by: None,
            latencies: Vec::new(),
            hovered: None,
            worker: Worker::on_recording("ede erp", &rec, &gpu, compute),
            shown: None,
            events: None,
            generation: 0,
            error: None,
            maps: ScalpMaps::default(),
            image: plots::ImageCache::default(),
            panel_rect: Rect::NOTHING,
            png_request: None,
        }
    }

    /// The events epoched, one condition each.
    pub fn set_events(&mut self, events: &[&str]) {
        self.params.events = events.iter().map(|s| s.to_string()).collect();
    }

    pub fn set_window(&mut self, tmin: f64, tmax: f64) {
        (self.params.tmin, self.params.tmax) = (tmin, tmax);
    }

    pub fn set_baseline(&mut self, baseline: Option<(Option<f64>, Option<f64>)>) {
        self.params.baseline = baseline;
    }

    /// The EEG and EOG peak-to-peak limits in uV (0: none).
    pub fn set_reject_uv(&mut self, eeg: f64, eog: f64) {
        self.reject_uv = [eeg, eog];
    }

    pub fn set_channel(&mut self, label: &str) {
        self.channel = Some(label.to_string());
    }

    pub fn set_sort_by(&mut self, event: Option<&str>) {
        self.sort_by = event.map(str::to_string);
    }

    pub fn set_latencies_ms(&mut self, ms: &[f64]) {
        self.latencies = ms.iter().map(|m| m / 1e3).collect();
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The epochs shown, if any.
    pub fn epochs(&self) -> Option<&Epochs> {
        self.shown.as_ref().map(|(_, c)| &c.epochs)
    }

    /// The browser's events, as last listed unless they changed since.
    fn events(&mut self, browser: &Browser) -> Arc<EventList> {
        let version = browser.events.version;
        match &self.events {
            Some(e) if e.version == version => e.clone(),
            _ => {
                let list = browser.events.list().to_vec();
                let e = Arc::new(EventList {
                    version,
                    kinds: event_kinds(&list),
                    list,
                });
                self.events = Some(e.clone());
                e
            }
        }
    }

    fn request(&mut self, browser: &Browser) -> Result<Request, String> {
        let mut params = self.params.clone();
        params.reject = [
            (ChannelType::Eeg, self.reject_uv[0]),
            (ChannelType::Eog, self.reject_uv[1]),
        ]
        .into_iter()
        .filter(|(_, v)| *v > 0.0)
        .map(|(k, v)| (k, v * 1e-6))
        .collect();
        params.flat = match self.flat_uv > 0.0 {
            true => vec![(ChannelType::Eeg, self.flat_uv * 1e-6)],
            false => Vec::new(),
        };
        if params.events.is_empty() {
            return Err("choose an event to epoch around".into());
        }
        Ok(Request {
            spec: browser.traces.spec.clone(),
            events: self.events(browser),
            params,
            zero_phase: self.zero_phase,
        })
    }

    fn receive(&mut self) {
        match self.worker.poll() {
            Some(Outcome::Done { request, output }) => {
                self.error = None;
                let n = output.epochs.conditions.len();
                self.shown_as = match self.shown_as {
                    Shown::Condition(c) if c < n => Shown::Condition(c),
                    Shown::Difference(a, b) if a < n && b < n => Shown::Difference(a, b),
                    _ => Shown::Condition(0),
                };
                self.shown = Some((request, output));
                self.generation += 1;
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui, browser: &Browser) {
        ui.heading("ERP");
        ui.label("Epochs around events of the page's traces, and their averages.");
        ui.add_space(4.0);
        ui.label("Conditions (events)");
        for (kind, count) in self.events(browser).kinds.clone() {
            let mut on = self.params.events.contains(&kind);
            if ui.checkbox(&mut on, format!("{kind} ({count})")).changed() {
                match on {
                    true => self.params.events.push(kind.clone()),
                    false => self.params.events.retain(|e| *e != kind),
                }
            }
        }
        ui.separator();
        ui.spacing_mut().slider_width = 120.0;
        let p = &mut self.params;
        ui.add(
            egui::Slider::new(&mut p.tmin, -2.0..=0.0)
                .step_by(0.01)
                .text("tmin (s)"),
        );
        ui.add(
            egui::Slider::new(&mut p.tmax, 0.05..=3.0)
                .step_by(0.01)
                .text("tmax (s)"),
        );
        let mut baseline = p.baseline.is_some();
        ui.checkbox(&mut baseline, "baseline");
        match (baseline, &mut p.baseline) {
            (false, b) => *b = None,
            (true, None) => p.baseline = Some((None, Some(0.0))),
            (true, Some((lo, hi))) => {
                let mut a = lo.unwrap_or(p.tmin);
                let mut b = hi.unwrap_or(0.0);
                ui.add(
                    egui::Slider::new(&mut a, p.tmin..=p.tmax)
                        .step_by(0.01)
                        .text("from (s)"),
                );
                ui.add(
                    egui::Slider::new(&mut b, p.tmin..=p.tmax)
                        .step_by(0.01)
                        .text("to (s)"),
                );
                *lo = (a > p.tmin + 1e-9).then_some(a);
                *hi = Some(b.max(a));
            }
        }
        ui.label("Reject when peak-to-peak exceeds (0: never)");
        ui.add(
            egui::Slider::new(&mut self.reject_uv[0], 0.0..=500.0)
                .step_by(5.0)
                .text("EEG (uV)"),
        );
        ui.add(
            egui::Slider::new(&mut self.reject_uv[1], 0.0..=1000.0)
                .step_by(10.0)
                .text("EOG (uV)"),
        );
        ui.add(
            egui::Slider::new(&mut self.flat_uv, 0.0..=10.0)
                .step_by(0.5)
                .text("flat EEG under (uV)"),
        );
        ui.checkbox(
            &mut self.params.reject_by_annotation,
            "drop epochs in spans marked bad",
        );
        ui.checkbox(&mut self.zero_phase, "filters zero-phase")
            .on_hover_text(
                "the page's filters run forward and backward: a causal filter delays every latency",
            );
        if !self.zero_phase {
            ui.small("causal filters, as on the page: latencies are delayed");
        }
        ui.small(format!("page: {}", browser.traces.spec.montage.name));
        ui.separator();
        self.worker.spinner(ui, "");
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        let mut export = None;
        if let Some((_, c)) = &self.shown {
            for cond in &c.epochs.conditions {
                ui.label(format!(
                    "{}: {} kept, {} dropped",
                    cond.name,
                    cond.average.n_epochs,
                    cond.dropped.len()
                ));
                if !cond.dropped.is_empty() {
                    egui::CollapsingHeader::new(format!("why ({})", cond.name))
                        .id_salt(("dropped", &cond.name))
                        .show(ui, |ui| {
                            for d in cond.dropped.iter().take(200) {
                                ui.small(format!(
                                    "#{} at {:.2} s: {}",
                                    d.index, d.onset_s, d.reason
                                ));
                            }
                        });
                }
            }
            ui.small(format!("{:.1} ms", c.elapsed_s * 1e3));
            export = export::buttons(ui, "erp");
        }
        if let Some((format, path)) = export {
            self.save(format, path);
        }
    }

    fn save(&mut self, format: Format, path: std::path::PathBuf) {
        let Some((req, c)) = &self.shown else { return };
        let result = match format {
            Format::Png => {
                self.png_request = Some(path);
                Ok(())
            }
            Format::Csv => {
                let k = match self.shown_as {
                    Shown::Condition(k) | Shown::Difference(k, _) => k,
                };
                export::write_atomic(&path, c.epochs.csv(k).as_bytes())
            }
            Format::Json => {
                let filter = req.spec.filter.describe();
                serde_json::to_string_pretty(&c.epochs.report(&req.params, filter))
                    .map_err(|e| e.to_string())
                    .and_then(|t| export::write_atomic(&path, t.as_bytes()))
            }
        };
        if let Err(e) = result {
            self.error = Some(e);
        }
    }
}

impl AnalysisView for ErpView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.receive();
        egui::Panel::left("erp controls")
            .resizable(true)
            .default_size(250.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui, browser));
            });
        match self.request(browser) {
            Ok(r) => {
                self.worker.request(ui.ctx(), r);
            }
            Err(e) => self.error = Some(e),
        }
        egui::CentralPanel::default().show(ui, |ui| {
            self.panel_rect = ui.max_rect();
            self.plots(ui);
        });
    }

    fn ready(&self) -> bool {
        self.worker.pending().is_none() && (self.shown.is_some() || self.error.is_some())
    }

    fn take_png_request(&mut self) -> Option<(std::path::PathBuf, Rect)> {
        Some((self.png_request.take()?, self.panel_rect))
    }

    fn parameters(&self) -> serde_json::Value {
        let mut params = self.params.clone();
        params.reject = vec![
            (ChannelType::Eeg, self.reject_uv[0]),
            (ChannelType::Eog, self.reject_uv[1]),
        ];
        params.flat = vec![(ChannelType::Eeg, self.flat_uv)];
        super::to_saved(&Saved {
            params,
            zero_phase: self.zero_phase,
            channel: self.channel.clone(),
            sort_by: self.sort_by.clone(),
            latencies_ms: self.latencies.iter().map(|l| l * 1e3).collect(),
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        let limit = |list: &[(ChannelType, f64)], k: ChannelType| {
            list.iter()
                .find(|(t, _)| *t == k)
                .map_or(0.0, |(_, v)| v.clamp(0.0, 1000.0))
        };
        self.reject_uv = [
            limit(&s.params.reject, ChannelType::Eeg),
            limit(&s.params.reject, ChannelType::Eog),
        ];
        self.flat_uv = limit(&s.params.flat, ChannelType::Eeg).min(10.0);
        self.params = EpochParams {
            tmin: s.params.tmin.clamp(-2.0, 0.0),
            tmax: s.params.tmax.clamp(0.05, 3.0),
            reject: Vec::new(),
            flat: Vec::new(),
            ..s.params
        };
        self.zero_phase = s.zero_phase;
        self.channel = s.channel;
        self.sort_by = s.sort_by;
        self.latencies = s.latencies_ms.iter().map(|m| m / 1e3).collect();
    }
}
