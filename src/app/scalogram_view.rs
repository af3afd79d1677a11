//! The scalogram view: Morlet wavelet scalograms of the chosen traces (stacked), in a panel
//! under the channel browser and on its time axis: scrolling or zooming either one moves both
//! and recomputes the visible window. With a GPU the compute shader writes the image straight
//! into a texture on the device egui draws with; only a hovered value comes back.

use std::sync::Arc;
use std::time::Instant;

use eframe::egui::{self, Color32, Pos2, Rect, Sense, Stroke, Vec2};
use eframe::wgpu;

use super::AnalysisView;
use super::browser::Browser;
use super::colormap::ColourMap;
use super::export::{self, Format};
use super::traces::TraceSpec;
use super::worker::{Compute, Outcome, Progress, Worker};
use crate::analysis::Backend;
use crate::analysis::cwt::{Axes, Image, Painted, PaintedCpu, Painter};
use crate::dsp::cwt::{CwtParams, PaintSpec, Quantity, ScaleSpec, fourier_factor, padded_len};
use crate::gpu::GpuContext;
use crate::gpu::context::EguiRenderer;
use crate::recording::Recording;

/// At most this many samples per trace: past it, zoom in (or use `ede cwt --band-power`).
const MAX_SAMPLES: usize = 1 << 21;

/// What the worker computes: which traces, which samples, which transform and look.
#[derive(Clone)]
struct Request {
    spec: Arc<TraceSpec>,
    traces: Vec<usize>,
    start: usize,
    n: usize,
    fs: f64,
    params: CwtParams,
    paint: PaintSpec,
    colours: ColourMap,
    backend: Backend,
}

impl PartialEq for Request {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.spec, &o.spec)
            && (&self.traces, self.start, self.n, self.fs) == (&o.traces, o.start, o.n, o.fs)
            && (self.params, self.paint, self.colours, self.backend)
                == (o.params, o.paint, o.colours, o.backend)
    }
}

impl Request {
    /// What the samples (and their spectra) depend on.
    fn input_key(&self) -> InputKey {
        (
            Arc::as_ptr(&self.spec) as usize,
            self.traces.clone(),
            self.start,
            self.n,
        )
    }
}

/// The recording, traces, first sample and length: what samples and spectra depend on.
type InputKey = (usize, Vec<usize>, usize, usize);

/// An image written by the compute shader, registered with eframe's renderer.
struct DeviceImage {
    id: egui::TextureId,
    renderer: EguiRenderer,
    painted: Painted,
    gpu: GpuContext,
}

impl Drop for DeviceImage {
    fn drop(&mut self) {
        self.renderer.write().free_texture(&self.id);
    }
}

/// Where a finished image lives.
enum Texture {
    Device(Box<DeviceImage>),
    /// Painted on the CPU (or read back from a GPU without a renderer, as in tests).
    Cpu {
        handle: Option<egui::TextureHandle>,
        image: egui::ColorImage,
        values: Vec<f32>,
    },
}

struct Scalogram {
    texture: Texture,
    axes: Axes,
    width: usize,
    height: usize,
    /// Each trace's top value, as shown (`PaintSpec::range` makes the colour ranges).
    tops: Vec<f32>,
    elapsed_s: f64,
    ran_on: String,
}

/// The worker's computation: reads the traces, keeps them while only the wavelet or the look
/// changes (the painter keeps their spectra on the GPU), paints, and hands a device image to
/// egui's renderer.
fn compute(gpu: Option<GpuContext>) -> Compute<Request, Scalogram> {
    let mut painter = Painter::new(gpu.as_ref());
    let mut samples: Option<(InputKey, Arc<Vec<Vec<f32>>>)> = None;
    Box::new(move |req: &Request, _progress: &Progress| {
        let t = Instant::now();
        let key = req.input_key();
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let xs = match &samples {
            Some((k, xs)) if *k == key => xs.clone(),
            _ => {
                let mut xs = req
                    .spec
                    .derive(&req.traces, req.start, req.n)
                    .map_err(|e| err(&e))?;
                // In the reader's unit (uV, fT, fT/cm) whatever the file's: the same EEG from
                // a FIF (V) and an EDF (uV) has the same dB.
                for (x, &d) in xs.iter_mut().zip(&req.traces) {
                    let unit = &req.spec.rec.signals[req.spec.derivations[d].plus].unit;
                    let k = crate::recording::reading_unit(unit).1 as f32;
                    if k != 1.0 {
                        x.iter_mut().for_each(|v| *v *= k);
                    }
                }
                if xs.iter().any(|x| x.iter().any(|v| !v.is_finite())) {
                    return Err(
                        "the window holds samples that are not numbers (a gap or the \
                                end of a signal): move it inside the recording"
                            .into(),
                    );
                }
                let xs = Arc::new(xs);
                samples = Some((key.clone(), xs.clone()));
                xs
            }
        };
        let refs: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
        let lut = req.colours.packed();
        let p = painter
            .paint(
                &key,
                &refs,
                req.fs,
                &req.params,
                &req.paint,
                &lut,
                req.backend,
            )
            .map_err(|e| err(&e))?;
        let on_cpu = |c: PaintedCpu| {
            let pixels = c
                .rgba
                .iter()
                .map(|c| Color32::from_rgba_unmultiplied(c[0], c[1], c[2], c[3]));
            Texture::Cpu {
                handle: None,
                image: egui::ColorImage::new([c.width, c.height], pixels.collect()),
                values: c.values,
            }
        };
        let texture = match p.image {
            Image::Cpu(c) => on_cpu(c),
            Image::Device(painted) => {
                let ctx = painter
                    .context()
                    .expect("device images come from a GPU")
                    .clone();
                match &ctx.renderer {
                    Some(renderer) => {
                        let view = painted.texture.create_view(&Default::default());
                        let id = renderer.write().register_native_texture(
                            &ctx.device,
                            &view,
                            wgpu::FilterMode::Linear,
                        );
                        Texture::Device(Box::new(DeviceImage {
                            id,
                            renderer: renderer.clone(),
                            painted,
                            gpu: ctx.clone(),
                        }))
                    }
                    // A device egui does not draw with (tests): the pixels come back once.
                    None => on_cpu(painter.read_back(&painted).map_err(|e| err(&e))?),
                }
            }
        };
        Ok(Some(Scalogram {
            texture,
            axes: p.axes,
            width: p.width,
            height: p.height,
            tops: p.tops,
            elapsed_s: t.elapsed().as_secs_f64(),
            ran_on: p.ran_on.1,
        }))
    })
}

/// How the scales are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum ScaleMode {
    Frequencies,
    Octaves,
}

pub struct ScalogramView {
    rec: Arc<Recording>,
    gpu: Option<GpuContext>,
    /// Traces shown (indices of the browser's derivations); empty until the first frame picks.
    traces: Vec<usize>,
    mode: ScaleMode,
    fmin: f64,
    fmax: f64,
    voices: usize,
    s0_ms: f64,
    dj: f64,
    j: usize,
    omega0: f64,
    quantity: Quantity,
    per_scale: bool,
    range_db: f32,
    colours: ColourMap,
    show_coi: bool,
    per_trace: bool,
    /// Height of the scalogram panel, points.
    panel_height: f32,
    backend: Backend,
    worker: Worker<Request, Scalogram>,
    shown: Option<(Request, Scalogram)>,
    error: Option<String>,
    /// The last hovered pixel and its value (one read back per new pixel).
    hovered: Option<((usize, usize), f32)>,
    image_rect: Rect,
    png_request: Option<std::path::PathBuf>,
}
/// What a session keeps of the view (traces by index of the session's montage, which the
/// session restores first).
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    traces: Vec<usize>,
    scales: ScaleMode,
    fmin: f64,
    fmax: f64,
    voices: usize,
    s0_ms: f64,
    dj: f64,
    j: usize,
    omega0: f64,
    quantity: Quantity,
    per_scale: bool,
    range_db: f32,
    colours: ColourMap,
    show_coi: bool,
    per_trace: bool,
    panel_height: f32,
    backend: Backend,
}

impl ScalogramView {
    pub fn new(rec: Arc<Recording>, gpu: Option<GpuContext>) -> Self {
        let backend = super::default_backend(gpu.as_ref());
        ScalogramView {
            rec,
            traces: Vec::new(),
            mode: ScaleMode::Frequencies,
            fmin: 1.0,
            fmax: 40.0,
            voices: 12,
            s0_ms: 20.0,
            dj: 0.125,
            j: 47,
            omega0: 6.0,
            quantity: Quantity::Db,
            per_scale: false,
            range_db: 40.0,
            colours: ColourMap::Viridis,
            show_coi: true,
            per_trace: true,
            panel_height: 330.0,
            backend,
            worker: Worker::new("ede scalogram", {
                let gpu = gpu.clone();
                move || compute(gpu.clone())
            }),
            gpu,
            shown: None,
            error: None,
            hovered: None,
            image_rect: Rect::NOTHING,
            png_request: None,
        }
    }

    pub fn set_omega0(&mut self, omega0: f64) {
        self.omega0 = omega0;
    }

    pub fn set_backend(&mut self, backend: Backend) {
        self.backend = backend;
    }

    /// The traces shown, as indices of the browser's derivations.
    pub fn set_traces(&mut self, traces: Vec<usize>) {
        self.traces = traces;
    }

    /// The parameters of the image on screen, and its pixels when they are held on the CPU.
    pub fn shown(&self) -> Option<(CwtParams, Option<&egui::ColorImage>)> {
        self.shown.as_ref().map(|(r, s)| {
            let image = match &s.texture {
                Texture::Cpu { image, .. } => Some(image),
                Texture::Device(_) => None,
            };
            (r.params, image)
        })
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    fn params(&self) -> CwtParams {
        let scales = match self.mode {
            ScaleMode::Frequencies => ScaleSpec::Frequencies {
                fmin: self.fmin,
                fmax: self.fmax,
                voices: self.voices,
            },
            ScaleMode::Octaves => ScaleSpec::Octaves {
                s0: self.s0_ms / 1e3,
                dj: self.dj,
                j: self.j,
            },
        };
        CwtParams {
            omega0: self.omega0,
            scales,
        }
    }

    /// The request for the browser's window, or why there is none.
    fn request_for(&mut self, browser: &Browser, width_px: usize) -> Result<Request, String> {
        let spec = browser.traces.spec.clone();
        if self.traces.is_empty() {
            // The clicked trace, else the first EEG trace, else the first.
            let eeg = spec
                .derivations
                .iter()
                .position(|d| self.rec.signals[d.plus].kind.is_brain());
            let first = browser
                .selected_trace()
                .or(eeg)
                .or((!spec.derivations.is_empty()).then_some(0));
            self.traces.extend(first);
        }
        self.traces.retain(|&d| d < spec.derivations.len());
        let &first = self.traces.first().ok_or("choose a trace")?;
        let fs = spec.fs(first);
        let traces: Vec<usize> = self
            .traces
            .iter()
            .copied()
            .filter(|&d| spec.fs(d) == fs)
            .collect();
        let (t0, t1) = browser.visible_span();
        let samples = traces
            .iter()
            .map(|&d| self.rec.signals[spec.derivations[d].plus].samples)
            .min()
            .unwrap_or(0);
        let start = ((t0 * fs).round().max(0.0) as usize).min(samples);
        let n = (((t1 - t0) * fs).round() as usize).min(samples - start);
        if n > MAX_SAMPLES {
            return Err(format!(
                "the window holds {n} samples a trace; the scalogram shows at most {MAX_SAMPLES}: \
                 zoom in (ede cwt --band-power covers whole recordings)"
            ));
        }
        let params = self.params();
        params.scales(1.0 / fs).map_err(|e| e.to_string())?;
        Ok(Request {
            spec,
            traces,
            start,
            n,
            fs,
            params,
            paint: PaintSpec {
                width: width_px.clamp(1, n.max(1)),
                quantity: self.quantity,
                per_scale: self.per_scale,
                range_db: self.range_db,
                per_trace: self.per_trace,
            },
            colours: self.colours,
            backend: self.backend,
        })
    }

    fn receive(&mut self) {
        match self.worker.poll() {
            Some(Outcome::Done { request, output }) => {
                self.error = None;
                self.hovered = None;
                self.shown = Some((request, output));
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui, browser: &Browser) {
        ui.heading("Scalogram");
        ui.label("Morlet wavelet transform of the chosen traces in the browser's window.");
        ui.add_space(4.0);
        ui.spacing_mut().slider_width = 130.0;
        ui.horizontal(|ui| {
            ui.radio_value(&mut self.mode, ScaleMode::Frequencies, "frequencies");
            ui.radio_value(&mut self.mode, ScaleMode::Octaves, "s0 / dj / J");
        });
        match self.mode {
            ScaleMode::Frequencies => {
                ui.add(
                    egui::Slider::new(&mut self.fmin, 0.1..=200.0)
                        .logarithmic(true)
                        .text("fmin (Hz)"),
                );
                ui.add(
                    egui::Slider::new(&mut self.fmax, 0.2..=1000.0)
                        .logarithmic(true)
                        .text("fmax (Hz)"),
                );
                ui.add(egui::Slider::new(&mut self.voices, 1..=32).text("voices / octave"));
            }
            ScaleMode::Octaves => {
                ui.add(
                    egui::Slider::new(&mut self.s0_ms, 0.5..=2000.0)
                        .logarithmic(true)
                        .text("s0 (ms)"),
                );
                ui.add(egui::Slider::new(&mut self.dj, 1.0 / 32.0..=1.0).text("dj (octaves)"));
                ui.add(egui::Slider::new(&mut self.j, 0..=255).text("J"));
            }
        }
        ui.add(
            egui::Slider::new(&mut self.omega0, 3.0..=20.0)
                .step_by(0.1)
                .text("ω0"),
        );
        ui.horizontal(|ui| {
            for q in [Quantity::Magnitude, Quantity::Power, Quantity::Db] {
                ui.radio_value(&mut self.quantity, q, q.name());
            }
        });
        if self.quantity == Quantity::Db {
            ui.add(egui::Slider::new(&mut self.range_db, 10.0..=100.0).text("range (dB)"));
        }
        ui.checkbox(&mut self.per_scale, "divide power by scale (|W|²/s)");
        ui.horizontal(|ui| {
            ui.label("Colours");
            self.colours.picker(ui, "scalogram colours");
            ui.checkbox(&mut self.show_coi, "cone of influence");
        });
        ui.checkbox(&mut self.per_trace, "colour range per trace")
            .on_hover_text("off: one range for all traces (compare their sizes)");
        ui.add(egui::Slider::new(&mut self.panel_height, 120.0..=900.0).text("panel height"));
        super::backend_picker(ui, &mut self.backend, self.gpu.as_ref());
        ui.separator();
        ui.label("Traces (stacked; one sampling rate)");
        ui.horizontal_wrapped(|ui| {
            ui.label("only");
            let spec = &browser.traces.spec;
            let kinds: Vec<_> = (spec.derivations.iter())
                .map(|d| self.rec.signals[d.plus].kind)
                .collect();
            let mut on: Vec<bool> = (0..kinds.len()).map(|d| self.traces.contains(&d)).collect();
            let before = on.clone();
            super::lanes::select_by_type(ui, &kinds, &mut on, |d| {
                !self.rec.signals[spec.derivations[d].plus].bad
            });
            if on != before {
                self.traces = (0..on.len()).filter(|&d| on[d]).collect();
            }
        });
        egui::ScrollArea::vertical()
            .id_salt("scalogram traces")
            .max_height(200.0)
            .show(ui, |ui| {
                let spec = &browser.traces.spec;
                for (d, der) in spec.derivations.iter().enumerate() {
                    let mut on = self.traces.contains(&d);
                    if ui.checkbox(&mut on, &der.label).changed() {
                        if on {
                            self.traces.push(d);
                        } else {
                            self.traces.retain(|&t| t != d);
                        }
                    }
                }
            });
        ui.separator();
        self.worker.spinner(ui, "");
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        if let Some((req, s)) = &self.shown {
            ui.label(format!(
                "{} trace(s) x {} scales x {} samples (padded to {})",
                req.traces.len(),
                s.axes.scales.len(),
                req.n,
                padded_len(req.n),
            ));
            // The time on a line of its own: its digits vary and must not reflow the rest.
            ui.label(format!("{}: {:.1} ms", s.ran_on, s.elapsed_s * 1e3));
            ui.small("Montage applied; the display filters are not.");
            if let Some((format, path)) = export::buttons(ui, "scalogram") {
                self.save(format, path, browser);
            }
        }
    }

    fn save(&mut self, format: Format, path: std::path::PathBuf, browser: &Browser) {
        let Some((req, s)) = &self.shown else {
            return;
        };
        let values = match &s.texture {
            Texture::Cpu { values, .. } => Ok(values.clone()),
            Texture::Device(d) => d.painted.values(&d.gpu).map_err(|e| e.to_string()),
        };
        let labels: Vec<String> = req
            .traces
            .iter()
            .map(|&d| browser.trace_label(d).to_string())
            .collect();
        let times: Vec<f64> = (0..s.width)
            .map(|x| {
                let r = crate::dsp::cwt::column_range(x, s.width, req.n);
                (req.start as f64 + (r.start + r.end) as f64 / 2.0) / req.fs
            })
            .collect();
        let result = values.and_then(|values| match format {
            Format::Png => {
                self.png_request = Some(path.clone());
                Ok(())
            }
            Format::Csv => {
                let mut out = String::from("trace,frequency_hz");
                for t in &times {
                    out.push_str(&format!(",{t:.4}"));
                }
                out.push('\n');
                let scales = s.axes.scales.len();
                for (row, line) in values.chunks(s.width).enumerate() {
                    let f = s.axes.frequencies_hz[row % scales];
                    out.push_str(&format!("{},{f:.4}", labels[row / scales]));
                    for v in line {
                        out.push_str(&format!(",{v}"));
                    }
                    out.push('\n');
                }
                export::write_atomic(&path, out.as_bytes())
            }
            Format::Json => {
                let rows: Vec<&[f32]> = values.chunks(s.width).collect();
                let json = serde_json::json!({
                    "file": self.rec.display_name(),
                    "traces": labels,
                    "fs": req.fs,
                    "start_s": req.start as f64 / req.fs,
                    "n": req.n,
                    "omega0": req.params.omega0,
                    "quantity": req.paint.quantity,
                    "per_scale": req.paint.per_scale,
                    "scales": s.axes.scales,
                    "frequencies_hz": s.axes.frequencies_hz,
                    "column_times_s": times,
                    "values": rows,
                });
                serde_json::to_string_pretty(&json)
                    .map_err(|e| e.to_string())
                    .and_then(|t| export::write_atomic(&path, t.as_bytes()))
            }
        });
        if let Err(e) = result {
            self.error = Some(e);
        }
    }

    /// The image, its axes, the cone of influence and hover, aligned with the traces above.
    fn image_ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        let full = ui.available_rect_before_wrap();
        let plot = browser.plot_rect;
        let (left, right) = if plot.is_positive() && plot.right() <= full.right() {
            (plot.left(), plot.right())
        } else {
            (full.left() + 110.0, full.right() - 60.0)
        };
        let rect = Rect::from_min_max(
            Pos2::new(left, full.top() + 6.0),
            Pos2::new(right, full.bottom() - 6.0),
        );
        self.image_rect = full;
        let response = ui.allocate_rect(rect, Sense::click_and_drag());
        let width_px = (rect.width() * ui.ctx().pixels_per_point())
            .round()
            .max(1.0) as usize;
        let request = self.request_for(browser, width_px);
        if let Some(e) = self.worker.request_or_refuse(ui.ctx(), request) {
            self.error = Some(e);
        }
        // Wheel over the scalogram moves the browser as over the traces.
        if response.hovered() {
            let (scroll, zoom, pointer) =
                ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta(), i.pointer.hover_pos()));
            let span = browser.settings.span_s;
            if zoom != 1.0 {
                let anchor = pointer.map_or(0.5, |p| ((p.x - rect.left()) / rect.width()) as f64);
                browser.zoom(1.0 / zoom as f64, anchor);
            } else if scroll.y != 0.0 || scroll.x != 0.0 {
                browser.scroll(-(scroll.y + scroll.x) as f64 / rect.width() as f64 * span);
            }
        }
        let painter = ui.painter_at(full);
        let text = ui.visuals().text_color();
        let Some((req, s)) = &mut self.shown else {
            painter.text(
                rect.center(),
                egui::Align2::CENTER_CENTER,
                "computing…",
                egui::FontId::proportional(14.0),
                text,
            );
            return;
        };
        let id = match &mut s.texture {
            Texture::Device(d) => d.id,
            Texture::Cpu { handle, image, .. } => handle
                .get_or_insert_with(|| {
                    ui.ctx()
                        .load_texture("scalogram", image.clone(), egui::TextureOptions::LINEAR)
                })
                .id(),
        };
        // Where the shown samples lie in the browser's window (it may have moved since).
        let (t0, t1) = browser.visible_span();
        let x_of = |t: f64| rect.left() + ((t - t0) / (t1 - t0)) as f32 * rect.width();
        let (a, b) = (
            req.start as f64 / req.fs,
            (req.start + req.n) as f64 / req.fs,
        );
        let image = Rect::from_min_max(
            Pos2::new(x_of(a), rect.top()),
            Pos2::new(x_of(b), rect.bottom()),
        );
        let clip = painter.with_clip_rect(rect);
        clip.image(
            id,
            image,
            Rect::from_min_max(Pos2::ZERO, Pos2::new(1.0, 1.0)),
            Color32::WHITE,
        );
        let scales = s.axes.scales.len();
        let bands = req.traces.len();
        let band_h = rect.height() / bands as f32;
        let f = &s.axes.frequencies_hz;
        let (fhi, flo) = (f[0], f[scales - 1]);
        // Row centres are log-spaced frequencies: a frequency's y is linear in its log.
        let y_of = |band: usize, freq: f64| {
            let u = if scales > 1 {
                (fhi / freq).log2() / (fhi / flo).log2()
            } else {
                0.5
            };
            let row = u * (scales - 1) as f64 + 0.5;
            rect.top() + band as f32 * band_h + (row / scales as f64) as f32 * band_h
        };
        if self.show_coi {
            // Periods longer than sqrt(2) s / (Fourier factor) x the distance to an edge are
            // marked by the edges: shade those frequencies.
            let factor = fourier_factor(req.params.omega0) / std::f64::consts::SQRT_2;
            let mut mesh = egui::Mesh::default();
            let shade = Color32::from_rgba_unmultiplied(255, 255, 255, 110);
            let step = 3.0;
            let mut x = image.left().max(rect.left());
            while x < image.right().min(rect.right()) {
                let t = t0 + ((x + step / 2.0 - rect.left()) / rect.width()) as f64 * (t1 - t0);
                let edge = (t - a).min(b - t).max(1e-9);
                let f_coi = 1.0 / (factor * edge);
                for band in 0..bands {
                    let bottom = rect.top() + (band + 1) as f32 * band_h;
                    let y = y_of(band, f_coi.clamp(flo, fhi * 2.0))
                        .clamp(rect.top() + band as f32 * band_h, bottom);
                    if f_coi > flo {
                        mesh.add_colored_rect(
                            Rect::from_min_max(Pos2::new(x, y), Pos2::new(x + step, bottom)),
                            shade,
                        );
                    }
                }
                x += step;
            }
            clip.add(egui::Shape::mesh(mesh));
        }
        // Frequency axis on the left of each band; band labels; separators.
        let font = egui::FontId::proportional(10.0);
        for (band, &d) in req.traces.iter().enumerate() {
            let top = rect.top() + band as f32 * band_h;
            if band > 0 {
                painter.line_segment(
                    [Pos2::new(rect.left(), top), Pos2::new(rect.right(), top)],
                    Stroke::new(1.5, Color32::WHITE),
                );
            }
            let label = browser.trace_label(d);
            painter.text(
                Pos2::new(full.left() + 4.0, top + 2.0),
                egui::Align2::LEFT_TOP,
                label,
                egui::FontId::proportional(12.0),
                text,
            );
            for tick in [
                0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
            ] {
                if tick < flo * 0.999 || tick > fhi * 1.001 {
                    continue;
                }
                let y = y_of(band, tick);
                if y - top < 8.0 && band_h > 40.0 && bands > 1 {
                    continue;
                }
                painter.line_segment(
                    [Pos2::new(rect.left() - 4.0, y), Pos2::new(rect.left(), y)],
                    Stroke::new(1.0, text),
                );
                painter.text(
                    Pos2::new(rect.left() - 6.0, y),
                    egui::Align2::RIGHT_CENTER,
                    format!("{tick} Hz"),
                    font.clone(),
                    text,
                );
            }
        }
        painter.rect_stroke(
            rect,
            0.0,
            Stroke::new(1.0, Color32::from_gray(120)),
            egui::StrokeKind::Outside,
        );
        // Colour bar to the right.
        let bar = Rect::from_min_size(
            Pos2::new(rect.right() + 10.0, rect.top()),
            Vec2::new(12.0, rect.height().min(220.0)),
        );
        // Per trace, the bar is the range of the band under the pointer (the first otherwise).
        let hovered_band = response
            .hover_pos()
            .map(|p| (((p.y - rect.top()) / band_h).max(0.0) as usize).min(bands - 1))
            .filter(|_| req.paint.per_trace)
            .unwrap_or(0);
        let (lo, hi) = req.paint.range(&s.tops, hovered_band);
        let unit = req.paint.quantity;
        self.colours.bar(
            &painter,
            bar,
            (lo as f64, hi as f64),
            text,
            |v| match unit {
                Quantity::Db => format!("{v:.0} dB"),
                _ => format!("{v:.3e}"),
            },
        );
        if req.paint.per_trace && bands > 1 {
            let name = browser.trace_label(req.traces[hovered_band]);
            painter.text(
                Pos2::new(bar.left(), bar.bottom() + 6.0),
                egui::Align2::LEFT_TOP,
                format!("range of {name}"),
                egui::FontId::proportional(10.0),
                text,
            );
        }
        // Hover: time, frequency, value (one value read back per new pixel on the GPU).
        if let Some(p) = response.hover_pos()
            && image.contains(p)
        {
            let col = (((p.x - image.left()) / image.width()) * s.width as f32) as usize;
            let row = (((p.y - image.top()) / image.height()) * s.height as f32) as usize;
            let (col, row) = (col.min(s.width - 1), row.min(s.height - 1));
            let value = match (&s.texture, self.hovered) {
                (_, Some((at, v))) if at == (col, row) => Some(v),
                (Texture::Cpu { values, .. }, _) => values.get(row * s.width + col).copied(),
                (Texture::Device(d), _) => d.painted.value_at(&d.gpu, col, row).ok(),
            };
            if let Some(v) = value {
                self.hovered = Some(((col, row), v));
                let t = t0 + ((p.x - rect.left()) / rect.width()) as f64 * (t1 - t0);
                let band = row / scales;
                let label = browser.trace_label(req.traces[band]);
                clip.line_segment(
                    [Pos2::new(p.x, rect.top()), Pos2::new(p.x, rect.bottom())],
                    Stroke::new(1.0, Color32::WHITE),
                );
                let of = &req.spec.rec.signals[req.spec.derivations[req.traces[band]].plus];
                let reading = crate::recording::reading_unit(&of.unit).0;
                response.clone().on_hover_text_at_pointer(format!(
                    "{label}\n{t:.3} s\n{:.2} Hz (scale {:.4} s)\n{} = {}",
                    f[row % scales],
                    s.axes.scales[row % scales],
                    unit.name(),
                    match unit {
                        Quantity::Db => format!("{v:.1} dB re 1 {reading}²"),
                        _ => format!("{v:.4e} ({reading})"),
                    }
                ));
            }
        }
    }
}

impl AnalysisView for ScalogramView {
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser) {
        self.receive();
        egui::Panel::left("scalogram controls")
            .resizable(true)
            .default_size(250.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui, browser));
            });
        // An exact height the view owns: egui's remembered size of a resizable panel changed
        // with the number of frames it took to appear.
        egui::Panel::bottom("scalogram")
            .exact_size(self.panel_height)
            .show(ui, |ui| self.image_ui(ui, browser));
        browser.ui(ui);
    }

    fn ready(&self) -> bool {
        self.worker.pending().is_none() && (self.shown.is_some() || self.error.is_some())
    }

    fn take_png_request(&mut self) -> Option<(std::path::PathBuf, Rect)> {
        Some((self.png_request.take()?, self.image_rect))
    }

    fn follow_recording(&mut self, rec: Arc<Recording>) -> bool {
        if !super::same_channels(&self.rec, &rec) {
            self.traces.clear();
        }
        self.rec = rec;
        true
    }

    fn parameters(&self) -> serde_json::Value {
        super::to_saved(&Saved {
            traces: self.traces.clone(),
            scales: self.mode,
            fmin: self.fmin,
            fmax: self.fmax,
            voices: self.voices,
            s0_ms: self.s0_ms,
            dj: self.dj,
            j: self.j,
            omega0: self.omega0,
            quantity: self.quantity,
            per_scale: self.per_scale,
            range_db: self.range_db,
            colours: self.colours,
            show_coi: self.show_coi,
            per_trace: self.per_trace,
            panel_height: self.panel_height,
            backend: self.backend,
        })
    }

    fn set_parameters(&mut self, parameters: &serde_json::Value) {
        let Some(s) = super::saved::<Saved>(parameters) else {
            return;
        };
        // Out-of-range traces are dropped when the view next picks its traces.
        self.traces = s.traces;
        self.mode = s.scales;
        self.fmin = s.fmin.clamp(0.1, 200.0);
        self.fmax = s.fmax.clamp(0.2, 1000.0);
        self.voices = s.voices.clamp(1, 32);
        self.s0_ms = s.s0_ms.clamp(0.5, 2000.0);
        self.dj = s.dj.clamp(1.0 / 32.0, 1.0);
        self.j = s.j.min(255);
        self.omega0 = s.omega0.clamp(3.0, 20.0);
        self.quantity = s.quantity;
        self.per_scale = s.per_scale;
        self.range_db = s.range_db.clamp(10.0, 100.0);
        self.colours = s.colours;
        self.show_coi = s.show_coi;
        self.per_trace = s.per_trace;
        self.panel_height = s.panel_height.clamp(120.0, 900.0);
        self.backend = super::saved_backend(s.backend, self.gpu.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_compare_by_recording_and_every_setting() {
        let rec = Arc::new(crate::recording::demo::demo_recording());
        let view = ScalogramView::new(rec.clone(), None);
        let spec = {
            let montage = crate::dsp::montage::BuiltIn::as_recorded(&rec);
            super::super::traces::Traces::new(rec, montage, Default::default(), Default::default())
                .spec
        };
        let req = Request {
            spec: spec.clone(),
            traces: vec![0],
            start: 0,
            n: 100,
            fs: 256.0,
            params: view.params(),
            paint: PaintSpec {
                width: 10,
                quantity: Quantity::Db,
                per_scale: false,
                range_db: 40.0,
                per_trace: true,
            },
            colours: ColourMap::Viridis,
            backend: Backend::Cpu,
        };
        let mut other = req.clone();
        assert!(req == other);
        other.params.omega0 = 7.0;
        assert!(req != other);
    }
}
