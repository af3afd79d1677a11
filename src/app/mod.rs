//! The egui application: `EdeApp` owns the open recording and the views; `browser` draws the
//! channel browser; `traces` turns a recording into per-pixel columns.

pub mod browser;
pub mod traces;
pub mod xapen_view;

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;
use serde::{Deserialize, Serialize};

use crate::cli::{GuiArgs, Span};
use crate::gpu::GpuContext;
use crate::recording::{OpenOptions, Recording};
use browser::{Browser, BrowserSettings};
use xapen_view::XapenView;

/// The views the window switches between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    Browser,
    Xapen,
}

impl ViewKind {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "browser" => Some(ViewKind::Browser),
            "xapen" => Some(ViewKind::Xapen),
            _ => None,
        }
    }
}

/// What persists between runs (eframe storage).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub recent: Vec<PathBuf>,
    pub browser: BrowserSettings,
}

pub struct EdeApp {
    /// The channel browser (public for UI tests and benchmarks).
    pub browser: Browser,
    /// The Cross-ApEn view, made when first shown for the open recording.
    pub xapen: Option<XapenView>,
    pub view: ViewKind,
    /// The render device, when it passed its self-test; analyses fall back to the CPU without.
    gpu: Option<GpuContext>,
    settings: Settings,
    error: Option<String>,
    gpu_status: String,
    screenshot: Option<PathBuf>,
    frames: u32,
    shot_requested: bool,
    styled: bool,
    shot_taken: Arc<std::sync::Mutex<bool>>,
}

impl EdeApp {
    /// Opens `file` (or the demo) with persisted settings; `gpu` is the render device.
    pub fn new(
        file: Option<PathBuf>,
        fs: Option<f64>,
        settings: Settings,
        gpu: Option<GpuContext>,
    ) -> Self {
        let (gpu, gpu_status) = match gpu {
            Some(ctx) => match ctx.self_test() {
                Ok(()) => {
                    let status = format!("GPU: {}", ctx.describe());
                    (Some(ctx), status)
                }
                Err(e) => (None, format!("{e}")),
            },
            None => (None, "No GPU adapter: analyses run on the CPU".into()),
        };
        let mut error = None;
        let rec = match &file {
            Some(p) => match Recording::open(p, &OpenOptions { csv_fs: fs }) {
                Ok(r) => r,
                Err(e) => {
                    error = Some(e.to_string());
                    crate::recording::demo::demo_recording()
                }
            },
            None => crate::recording::demo::demo_recording(),
        };
        let mut app = Self {
            browser: Browser::new(Arc::new(rec), settings.browser.clone()),
            xapen: None,
            view: ViewKind::Browser,
            gpu,
            settings,
            error,
            gpu_status,
            screenshot: None,
            frames: 0,
            shot_requested: false,
            styled: false,
            shot_taken: Arc::new(std::sync::Mutex::new(false)),
        };
        if let Some(p) = file.filter(|_| app.error.is_none()) {
            app.remember(p);
        }
        app
    }

    fn remember(&mut self, p: PathBuf) {
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        self.settings.recent.retain(|r| r != &p);
        self.settings.recent.insert(0, p);
        self.settings.recent.truncate(10);
    }

    /// Shows `rec` in every view: the browser is rebuilt, analysis views start afresh.
    fn show(&mut self, rec: Recording) {
        self.browser = Browser::new(Arc::new(rec), self.browser.settings.clone());
        self.xapen = None;
    }

    pub fn open(&mut self, path: PathBuf) {
        match Recording::open(&path, &OpenOptions::default()) {
            Ok(rec) => {
                self.show(rec);
                self.error = None;
                self.remember(path);
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    /// The whole window; `ui` is the root. Shared by eframe and the UI tests.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        if !self.styled {
            // Clinical viewers are light: traces on paper-white.
            ctx.set_theme(egui::Theme::Light);
            self.styled = true;
        }
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        if let Some(p) = dropped.into_iter().next() {
            self.open(p);
        }
        egui::Panel::top("menu").show(ui, |ui| {
            egui::MenuBar::new().ui(ui, |ui| {
                ui.menu_button("File", |ui| {
                    if ui.button("Open…").clicked() {
                        ui.close();
                        if let Some(p) = rfd::FileDialog::new()
                            .add_filter("Recordings", &["edf", "bdf", "rec", "hea", "csv"])
                            .pick_file()
                        {
                            self.open(p);
                        }
                    }
                    ui.menu_button("Open recent", |ui| {
                        let mut chosen = None;
                        for p in &self.settings.recent {
                            if ui.button(p.display().to_string()).clicked() {
                                chosen = Some(p.clone());
                            }
                        }
                        if self.settings.recent.is_empty() {
                            ui.label("(none yet)");
                        }
                        if let Some(p) = chosen {
                            ui.close();
                            self.open(p);
                        }
                    });
                    if ui.button("Demo recording").clicked() {
                        ui.close();
                        self.show(crate::recording::demo::demo_recording());
                    }
                    if ui.button("Quit").clicked() {
                        ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                    }
                });
                self.browser.menus(ui);
                ui.separator();
                ui.selectable_value(&mut self.view, ViewKind::Browser, "Browser");
                ui.selectable_value(&mut self.view, ViewKind::Xapen, "Cross-ApEn");
            });
        });
        egui::Panel::bottom("status").show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.label(&self.gpu_status);
                ui.separator();
                self.browser.status(ui);
                if let Some(e) = &self.error {
                    ui.separator();
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
            });
        });
        match self.view {
            ViewKind::Browser => self.browser.ui(ui),
            ViewKind::Xapen => self
                .xapen
                .get_or_insert_with(|| XapenView::new(self.browser.rec.clone(), self.gpu.clone()))
                .ui(ui, self.browser.visible_span(), self.browser.selection),
        }
        self.settings.browser = self.browser.settings.clone();
    }

    /// Whether the current view shows what it was asked for (the screenshot waits for this).
    pub fn ready(&self) -> bool {
        match self.view {
            ViewKind::Browser => self.browser.ready(),
            ViewKind::Xapen => self.xapen.as_ref().is_some_and(XapenView::ready),
        }
    }
}

impl eframe::App for EdeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.ui(ui);
        let ctx = ui.ctx().clone();
        if let Some((path, rect)) = self.xapen.as_mut().and_then(XapenView::take_png_request) {
            // The view's PNG export: the next frame, cropped to the matrix panel.
            let ppp = ctx.pixels_per_point();
            ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
                egui::ScreenshotCallback::new(move |image| {
                    let crop = image.region(&rect, Some(ppp));
                    if let Err(e) = save_png(&crop, &path) {
                        eprintln!("ede: {e}");
                    }
                }),
            ));
        }
        if let Some(path) = self.screenshot.clone() {
            self.frames += 1;
            let taken = self.shot_taken.lock().map(|t| *t).unwrap_or(true);
            if taken {
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            } else if self.frames >= 3 && self.ready() && !self.shot_requested {
                self.shot_requested = true;
                let done = self.shot_taken.clone();
                let repaint = ctx.clone();
                ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
                    egui::ScreenshotCallback::new(move |image| {
                        if let Err(e) = save_png(&image, &path) {
                            eprintln!("ede: {e}");
                        }
                        if let Ok(mut d) = done.lock() {
                            *d = true;
                        }
                        repaint.request_repaint();
                    }),
                ));
            }
            ctx.request_repaint();
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.settings);
    }
}

pub fn save_png(image: &egui::ColorImage, path: &std::path::Path) -> anyhow::Result<()> {
    let [w, h] = image.size;
    let bytes: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    image::save_buffer(
        path,
        &bytes,
        w as u32,
        h as u32,
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Runs the GUI (or renders one screenshot and exits).
pub fn run(args: GuiArgs) -> anyhow::Result<()> {
    if let Some(f) = &args.file {
        // Fail early, on the terminal, for a file that cannot be opened.
        Recording::open(f, &OpenOptions { csv_fs: args.fs })?;
    }
    let view = ViewKind::parse(&args.view).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown view {:?}; the views are: browser, xapen",
            args.view
        )
    })?;
    let (w, h) = args
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<f32>().ok()?, h.parse::<f32>().ok()?)))
        .ok_or_else(|| anyhow::anyhow!("--size must be WIDTHxHEIGHT, got {:?}", args.size))?;
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_inner_size([w, h])
            .with_title("ede")
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Wgpu,
        persist_window: args.screenshot.is_none(),
        ..Default::default()
    };
    let screenshot = args.screenshot.clone();
    eframe::run_native(
        "ede",
        options,
        Box::new(move |cc| {
            let settings: Settings = match (&screenshot, cc.storage) {
                (None, Some(s)) => eframe::get_value(s, eframe::APP_KEY).unwrap_or_default(),
                _ => Settings::default(),
            };
            let gpu = cc
                .wgpu_render_state
                .as_ref()
                .map(GpuContext::from_render_state);
            let mut app = EdeApp::new(args.file.clone(), args.fs, settings, gpu);
            if args.start.is_some() || args.span.is_some() {
                let (t0, t1) = app.browser.visible_span();
                let span = match args.span {
                    Some(Span::All) => None,
                    Some(Span::Seconds(s)) => Some(s),
                    None => Some(t1 - t0),
                };
                app.browser.show(args.start.unwrap_or(t0), span);
            }
            app.screenshot = screenshot;
            app.view = view;
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("the window could not start: {e}"))
}
