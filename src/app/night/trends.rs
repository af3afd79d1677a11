//! The CDSA and aEEG strips: both trends of every good EEG trace of the montage in one pass
//! (`analysis::trend`) on the background worker, again when the montage or the bad channels
//! change. The CDSA shows one trace, or the mean spectrum of the left or right hemisphere or of
//! all traces (averaged as power, not dB); the aEEG one trace, on its semi-log scale.

use std::sync::{Arc, Mutex};

use eframe::egui::{self, Color32, ColorImage, Pos2, Rect, Stroke, TextureHandle};

use super::{TimeAxis, clicked_time, strip_frame};
use crate::analysis::Backend;
use crate::analysis::trend::{self, CdsaParams, Group, TrendJob};
use crate::app::browser::Browser;
use crate::app::browser::format::unit_text;
use crate::app::colormap::ColourMap;
use crate::app::worker::{Outcome, Worker};
use crate::dsp::aeeg::{AeegParams, LINEAR_UP_TO_UV, semilog};
use crate::dsp::montage::Derivation;
use crate::gpu::GpuContext;
use crate::gpu::trend::TrendKernels;
use crate::recording::{ChannelType, Recording};

/// The CDSA shows frequencies up to this.
const CDSA_MAX_HZ: f64 = 30.0;
/// The aEEG scale's top, microvolts.
const AEEG_TOP_UV: f64 = 100.0;

#[derive(Clone)]
pub struct TrendRequest {
    rec: Arc<Recording>,
    derivations: Vec<Derivation>,
    traces: Vec<usize>,
}

impl PartialEq for TrendRequest {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.rec, &other.rec)
            && self.derivations == other.derivations
            && self.traces == other.traces
    }
}

/// Which CDSA row is shown.
#[derive(Clone, Copy, PartialEq, Default)]
enum Row {
    #[default]
    All,
    Left,
    Right,
    Trace(usize),
}

/// The CDSA's image: its row, request number and segments, and its colours' range.
struct CdsaImage {
    row: Row,
    number: usize,
    segments: usize,
    tex: TextureHandle,
    range: (f64, f64),
}

/// The trends of the job running, as they grow (the GPU's chunk by chunk), and the request
/// they answer.
#[derive(Default)]
struct Growing {
    request: Mutex<Option<TrendRequest>>,
    trends: Mutex<Option<trend::Trends>>,
}

/// A lock that a panicked job left poisoned still holds what it held.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
pub struct Trends {
    worker: Option<Worker<TrendRequest, (trend::Trends, Backend)>>,
    /// The result, the request it answers and that request's number (`results`).
    shown: Option<(TrendRequest, trend::Trends, usize)>,
    /// Where the result was computed.
    ran_on: Option<Backend>,
    /// The job running's trends so far, shared with it.
    growing: Arc<Growing>,
    /// The request running and its number, while its growing trends are drawn.
    partial: Option<(TrendRequest, usize)>,
    error: Option<String>,
    row: Row,
    /// The aEEG's trace (an index into the result's channels).
    aeeg_trace: usize,
    texture: Option<CdsaImage>,
    /// The CDSA row's dB per segment so far (its row and request number): a growing strip
    /// adds only its new segments.
    rows: Option<(Row, usize, Vec<Vec<f64>>)>,
    /// Counts requests: a result and the partial trends before it share one number.
    results: usize,
    message: Option<Result<String, String>>,
    /// The montage has no good EEG trace: no CDSA or aEEG to show.
    no_eeg: bool,
    /// The device the trends run on, where it is not a software one (else the CPU).
    pub(super) gpu: Option<GpuContext>,
}

impl Trends {
    /// The last result and where it was computed.
    pub fn result(&self) -> Option<(&trend::Trends, Backend)> {
        let (_, t, _) = self.shown.as_ref()?;
        Some((t, self.ran_on?))
    }

    /// A result or an error is there for the last request.
    pub fn ready(&self) -> bool {
        let answered = self.shown.is_some() || self.error.is_some();
        let idle = self.worker.as_ref().is_none_or(|w| w.pending().is_none());
        self.no_eeg || (answered && idle)
    }

    pub fn has_cdsa(&self) -> bool {
        !self.no_eeg
    }

    pub fn has_aeeg(&self) -> bool {
        !self.no_eeg && self.shown.as_ref().is_none_or(|(_, t, _)| t.aeeg.is_some())
    }

    /// Sends the montage's good EEG traces to the worker (nothing when they are unchanged)
    /// and takes its result.
    pub fn update(&mut self, b: &Browser, ctx: &egui::Context) {
        let derivations = b.traces.spec.derivations.clone();
        let rate = |d: &Derivation| b.rec.signals[d.plus].fs;
        let eeg: Vec<usize> = (0..derivations.len())
            .filter(|&d| {
                let s = &b.rec.signals[derivations[d].plus];
                s.kind == ChannelType::Eeg && !s.bad
            })
            .collect();
        let fs = crate::recording::most_common_rate(eeg.iter().map(|&d| rate(&derivations[d])));
        let traces: Vec<usize> = eeg
            .into_iter()
            .filter(|&d| Some(rate(&derivations[d])) == fs)
            .collect();
        self.no_eeg = traces.is_empty();
        if self.no_eeg {
            return;
        }
        let request = TrendRequest {
            rec: b.rec.clone(),
            derivations,
            traces,
        };
        let gpu = self.gpu.clone();
        let growing = self.growing.clone();
        let worker = self.worker.get_or_insert_with(|| {
            Worker::new("ede trends", move || {
                let mut kernels = gpu.as_ref().and_then(TrendKernels::new);
                let growing = growing.clone();
                Box::new(move |req: &TrendRequest, progress| {
                    let job = TrendJob {
                        derivations: req.derivations.clone(),
                        cdsa_groups: (req.traces.iter())
                            .map(|&t| Group {
                                name: req.derivations[t].label.trim().to_string(),
                                traces: vec![t],
                            })
                            .collect(),
                        cdsa: CdsaParams::default(),
                        aeeg_traces: (req.traces.iter())
                            .copied()
                            .filter(|&t| {
                                let unit = &req.rec.signals[req.derivations[t].plus].unit;
                                crate::recording::volts_per_unit(unit).is_some()
                            })
                            .collect(),
                        aeeg: AeegParams::default(),
                    };
                    *lock(&growing.trends) = None;
                    *lock(&growing.request) = Some(req.clone());
                    let (cancel, done) = (&progress.cancel, &progress.done);
                    let ran = trend::run_growing(
                        &req.rec,
                        &job,
                        kernels.as_mut(),
                        cancel,
                        done,
                        &growing.trends,
                    );
                    *lock(&growing.request) = None;
                    let trends = lock(&growing.trends).take();
                    ran.map(|b| b.zip(trends).map(|(b, t)| (t, b)))
                        .map_err(|e| e.to_string())
                })
            })
        });
        if worker.request(ctx, request) {
            self.results += 1;
        }
        match worker.poll() {
            Some(Outcome::Done { request, output }) => {
                self.ran_on = Some(output.1);
                self.shown = Some((request, output.0, self.results));
                self.error = None;
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
        // The job running's trends so far, drawn once they hold a segment.
        self.partial = None;
        if let Some(p) = worker.pending() {
            let segments = lock(&self.growing.trends).as_ref().map_or(0, |t| {
                let cdsa = (t.cdsa.as_ref()).map_or(0, |c| c.power.first().map_or(0, Vec::len));
                let aeeg = (t.aeeg.as_ref()).map_or(0, |a| a.upper_uv.first().map_or(0, Vec::len));
                cdsa.max(aeeg)
            });
            if segments > 0 && lock(&self.growing.request).as_ref() == Some(&p.request) {
                self.partial = Some((p.request.clone(), self.results));
            }
            ctx.request_repaint_after(std::time::Duration::from_millis(30));
        }
    }

    /// The header's controls: the CDSA row, the aEEG trace, the progress.
    pub fn controls(&mut self, b: &Browser, ui: &mut egui::Ui) {
        if let Some(w) = &self.worker
            && w.pending().is_some()
        {
            let total = b.rec.time_span_s().max(1.0);
            let done = w.progress() as f64 / total;
            ui.add(
                egui::ProgressBar::new(done as f32)
                    .desired_width(180.0)
                    .text(format!("trends {:.0} %", 100.0 * done)),
            );
        }
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        let Some((_, t, _)) = &self.shown else {
            return;
        };
        if let Some(on) = self.ran_on {
            let on = if on == Backend::Gpu { "GPU" } else { "CPU" };
            ui.small(format!("trends: {on}, {:.2} s", t.seconds));
        }
        if ui
            .button("Save trends")
            .on_hover_text("CDSA and aEEG as JSON, as ede trend writes them")
            .clicked()
        {
            let path = super::psd::beside(b, "trends.json");
            self.message = Some(
                serde_json::to_vec(t)
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| {
                        crate::recording::write_whole(&path, &bytes).map_err(|e| e.to_string())
                    })
                    .map(|()| format!("saved {}", path.display()))
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
            );
        }
        super::show_message(ui, &self.message);
        let Some(cdsa) = &t.cdsa else { return };
        let name = |r: Row| match r {
            Row::All => format!("mean of {}", cdsa.channels.len()),
            Row::Left => "left hemisphere".into(),
            Row::Right => "right hemisphere".into(),
            Row::Trace(k) => cdsa.channels.get(k).cloned().unwrap_or_default(),
        };
        egui::ComboBox::from_label("CDSA")
            .selected_text(name(self.row))
            .show_ui(ui, |ui| {
                for r in [Row::All, Row::Left, Row::Right]
                    .into_iter()
                    .chain((0..cdsa.channels.len()).map(Row::Trace))
                {
                    ui.selectable_value(&mut self.row, r, name(r));
                }
            });
        if let Some(a) = &t.aeeg {
            egui::ComboBox::from_label("aEEG")
                .selected_text(a.channels.get(self.aeeg_trace).cloned().unwrap_or_default())
                .show_ui(ui, |ui| {
                    for (k, c) in a.channels.iter().enumerate() {
                        ui.selectable_value(&mut self.aeeg_trace, k, c);
                    }
                });
        }
    }

    pub fn cdsa_strip(&mut self, ui: &mut egui::Ui, rect: Rect, axis: TimeAxis) -> Option<f64> {
        let (area, response) = strip_frame(ui, rect, axis, "CDSA, Hz");
        let growing = self.growing.clone();
        let growing = lock(&growing.trends);
        let (shown, partial) = (self.shown.take(), self.partial.take());
        match drawn(&partial, &growing, &shown) {
            Some((req, t, number)) => {
                self.draw_cdsa(ui, (rect, area, &response), axis, req, t, number)
            }
            None => pending(ui, area),
        }
        (self.shown, self.partial) = (shown, partial);
        clicked_time(&response, axis)
    }

    /// The CDSA of `t` (the answer to request `req`, number `number`) in `area`.
    fn draw_cdsa(
        &mut self,
        ui: &mut egui::Ui,
        (rect, area, response): (Rect, Rect, &egui::Response),
        axis: TimeAxis,
        req: &TrendRequest,
        t: &trend::Trends,
        number: usize,
    ) {
        let Some(c) = &t.cdsa else { return };
        let segment_s = c.segment_s;
        // Each segment's dB once per row and request: a growing strip adds only its new ones.
        let mut rows = match self.rows.take() {
            Some((r, n, rows)) if r == self.row && n == number => rows,
            _ => Vec::new(),
        };
        let segments = c.power.first().map_or(0, Vec::len);
        if rows.len() < segments {
            rows.extend(cdsa_rows(req, c, self.row, rows.len()));
        }
        let stale = !(self.texture.as_ref())
            .is_some_and(|i| i.row == self.row && i.number == number && i.segments == rows.len());
        if stale && !rows.is_empty() {
            let bins = rows[0].len();
            let mut values: Vec<f64> = (rows.iter().flatten().copied())
                .filter(|v| v.is_finite())
                .collect();
            let range = percentile_range(&mut values);
            let colour = ColourMap::Viridis.colours(range);
            let (w, h) = (rows.len(), bins.max(1));
            let mut image = ColorImage::filled([w, h], Color32::BLACK);
            for (s, r) in rows.iter().enumerate() {
                for (k, v) in r.iter().enumerate() {
                    image.pixels[(h - 1 - k) * w + s] = colour(*v);
                }
            }
            let tex = ui
                .ctx()
                .load_texture("cdsa", image, egui::TextureOptions::NEAREST);
            self.texture = Some(CdsaImage {
                row: self.row,
                number,
                segments: rows.len(),
                tex,
                range,
            });
        }
        self.rows = Some((self.row, number, rows));
        if let Some(CdsaImage { tex, range, .. }) = &self.texture {
            let segments = tex.size()[0] as f64;
            let image_rect = Rect::from_x_y_ranges(
                area.left()..=axis.x(segments * segment_s),
                area.top() + 1.0..=area.bottom() - 1.0,
            );
            let uv = Rect::from_min_max(Pos2::ZERO, Pos2::new(1.0, 1.0));
            ui.painter_at(area)
                .image(tex.id(), image_rect, uv, Color32::WHITE);
            // The colours' dB range, in the label column under the strip's name.
            let bar = Rect::from_min_size(
                Pos2::new(rect.left() + 6.0, rect.bottom() - 24.0),
                egui::vec2(62.0, 7.0),
            );
            let last = range.1;
            ColourMap::Viridis.bar(
                ui.painter(),
                bar,
                *range,
                Color32::from_gray(60),
                |v| match v == last {
                    true => format!("{v:.0} dB"),
                    false => format!("{v:.0}"),
                },
            );
            for (hz, align) in [
                (0.0, egui::Align2::RIGHT_BOTTOM),
                (10.0, egui::Align2::RIGHT_CENTER),
                (20.0, egui::Align2::RIGHT_CENTER),
                (CDSA_MAX_HZ, egui::Align2::RIGHT_TOP),
            ] {
                let y = area.bottom() - (hz / CDSA_MAX_HZ) as f32 * area.height();
                ui.painter().text(
                    Pos2::new(area.left() - 3.0, y),
                    align,
                    format!("{hz:.0}"),
                    egui::FontId::proportional(9.0),
                    Color32::from_gray(110),
                );
            }
            if let Some(pos) = response.hover_pos() {
                let f = CDSA_MAX_HZ * ((area.bottom() - pos.y) / area.height()) as f64;
                response.clone().on_hover_text(format!(
                    "{} , {f:.1} Hz; colours {:.0} to {:.0} {}",
                    super::clock(axis.t(pos.x)),
                    range.0,
                    range.1,
                    unit_text(&c.unit)
                ));
            }
        }
    }

    pub fn aeeg_strip(&mut self, ui: &mut egui::Ui, rect: Rect, axis: TimeAxis) -> Option<f64> {
        let (area, response) = strip_frame(ui, rect, axis, "aEEG µV");
        let growing = self.growing.clone();
        let growing = lock(&growing.trends);
        let drawn = drawn(&self.partial, &growing, &self.shown);
        let Some(a) = drawn.and_then(|(_, t, _)| t.aeeg.as_ref()) else {
            pending(ui, area);
            return clicked_time(&response, axis);
        };
        let p = ui.painter_at(area);
        let y = |uv: f64| {
            area.bottom() - 2.0 - (semilog(uv, AEEG_TOP_UV) as f32) * (area.height() - 4.0)
        };
        for (uv, label) in [
            (5.0, "5"),
            (LINEAR_UP_TO_UV, "10"),
            (25.0, "25"),
            (50.0, "50"),
            (100.0, "100"),
        ] {
            let yy = y(uv);
            p.line_segment(
                [Pos2::new(area.left(), yy), Pos2::new(area.right(), yy)],
                Stroke::new(
                    if uv == LINEAR_UP_TO_UV { 1.0 } else { 0.5 },
                    Color32::from_gray(200),
                ),
            );
            ui.painter().text(
                Pos2::new(area.left() - 3.0, yy),
                egui::Align2::RIGHT_CENTER,
                label,
                egui::FontId::proportional(9.0),
                Color32::from_gray(110),
            );
        }
        let k = self.aeeg_trace.min(a.channels.len().saturating_sub(1));
        let seg = a.params.segment_s;
        let blue = Color32::from_rgb(20, 40, 140);
        for (s, (lo, hi)) in a.lower_uv[k].iter().zip(&a.upper_uv[k]).enumerate() {
            if !(lo.is_finite() && hi.is_finite()) {
                continue;
            }
            let (x0, x1) = (axis.x(s as f64 * seg), axis.x((s + 1) as f64 * seg));
            let r = Rect::from_x_y_ranges(x0..=x1.max(x0 + 0.6), y(*hi as f64)..=y(*lo as f64));
            p.rect_filled(r, 0.0, blue);
        }
        let group = a.params.margin_segments as f64 * seg;
        let green = Stroke::new(1.5, Color32::from_rgb(20, 160, 60));
        for (margins, _) in [(&a.upper_margin_uv[k], 0), (&a.lower_margin_uv[k], 1)] {
            for (g, v) in margins.iter().enumerate() {
                let yy = y(*v as f64);
                let (x0, x1) = (axis.x(g as f64 * group), axis.x((g + 1) as f64 * group));
                p.line_segment([Pos2::new(x0, yy), Pos2::new(x1, yy)], green);
            }
        }
        if let Some(pos) = response.hover_pos() {
            let t = axis.t(pos.x);
            let s = (t / seg).floor().max(0.0) as usize;
            if let (Some(lo), Some(hi)) = (a.lower_uv[k].get(s), a.upper_uv[k].get(s)) {
                response.clone().on_hover_text(format!(
                    "{} {}: {lo:.1} to {hi:.1} µV",
                    a.channels[k],
                    super::clock(t)
                ));
            }
        }
        clicked_time(&response, axis)
    }
}

/// The trends to draw: the job running's so far (`partial`, their request and its number, with
/// `growing`), else the last result (`shown`).
fn drawn<'a>(
    partial: &'a Option<(TrendRequest, usize)>,
    growing: &'a Option<trend::Trends>,
    shown: &'a Option<(TrendRequest, trend::Trends, usize)>,
) -> Option<(&'a TrendRequest, &'a trend::Trends, usize)> {
    match (partial, growing) {
        (Some((req, n)), Some(t)) => Some((req, t, *n)),
        _ => shown.as_ref().map(|(req, t, n)| (req, t, *n)),
    }
}

/// The CDSA row `row` of `c` (answering `req`) in dB from segment `from` on: `[segment][bin]` up
/// to `CDSA_MAX_HZ`, the mean of its traces' densities (power, not dB).
fn cdsa_rows(req: &TrendRequest, c: &trend::CdsaTrend, row: Row, from: usize) -> Vec<Vec<f64>> {
    let bins = (c.frequencies_hz.iter())
        .filter(|&&f| f <= CDSA_MAX_HZ)
        .count();
    let members: Vec<usize> = match row {
        Row::All => (0..c.channels.len()).collect(),
        Row::Trace(k) => vec![k.min(c.channels.len().saturating_sub(1))],
        Row::Left | Row::Right => {
            let groups = trend::hemispheres(&req.derivations, &req.traces);
            let want = if row == Row::Left { "left" } else { "right" };
            let Some(g) = groups.iter().find(|g| g.name.starts_with(want)) else {
                return Vec::new();
            };
            // Group members are derivation indices; the rows follow `req.traces`.
            (g.traces.iter())
                .filter_map(|t| req.traces.iter().position(|x| x == t))
                .collect()
        }
    };
    let Some(&first) = members.first() else {
        return Vec::new();
    };
    (from..c.power[first].len())
        .map(|s| {
            (0..bins)
                .map(|k| {
                    let mean = (members.iter())
                        .map(|&m| 10f64.powf(c.power[m][s][k] as f64 / 10.0))
                        .sum::<f64>()
                        / members.len() as f64;
                    10.0 * mean.log10()
                })
                .collect()
        })
        .collect()
}

/// "computing" across a strip whose result is not there yet.
fn pending(ui: &egui::Ui, area: Rect) {
    ui.painter().text(
        area.center(),
        egui::Align2::CENTER_CENTER,
        "computing over the whole recording...",
        egui::FontId::proportional(12.0),
        Color32::from_gray(120),
    );
}

/// The 2nd and 99th percentiles: a few extreme segments (artefacts) do not wash out the rest.
fn percentile_range(values: &mut [f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 1.0);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    let (lo, hi) = (at(0.02), at(0.99));
    if hi > lo { (lo, hi) } else { (lo, lo + 1.0) }
}
