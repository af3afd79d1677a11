//! The egui application: `EdeApp` owns the open recording and the views; `browser` draws the
//! channel browser; `traces` turns a recording into per-pixel columns. Analysis views are types
//! behind `AnalysisView`, listed once in `VIEWS`, and share `worker`, `colormap` and `export`.

pub mod blink_view;
pub mod browser;
pub mod colormap;
pub mod dataset_view;
mod dialogs;
pub use dialogs::Purpose;
pub mod envelope;
pub mod erp_view;
pub mod events;
pub mod export;
pub mod hermite_view;
pub mod ica_view;
pub mod lanes;
pub mod live_view;
pub mod night;
mod page_png;
pub mod scalogram_view;
pub mod scalp_map;
mod sessions;
mod view_parameters;
pub(crate) use view_parameters::{saved, saved_backend, to_saved};

use page_png::PagePng;
pub use page_png::save_png;
pub mod shortcuts;
pub mod system_libraries;
pub mod traces;
pub mod unsaved;
pub mod worker;
pub mod xapen_view;

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;
use serde::{Deserialize, Serialize};

use crate::gpu::GpuContext;
use crate::recording::{OpenOptions, Recording};
use browser::{Browser, BrowserSettings};
use eframe::egui::Rect;

/// An analysis view: a tab beside the browser, made for the open recording when first shown.
/// Adding one is its file and one line in `VIEWS`.
pub trait AnalysisView: std::any::Any {
    /// The whole view; it may draw the browser too (`browser` is the open recording's).
    fn ui(&mut self, ui: &mut egui::Ui, browser: &mut Browser);
    /// True once what it shows is what it was asked for (or failed): screenshots wait for it.
    fn ready(&self) -> bool;
    /// A PNG export asked for: the file, and the screen rectangle to crop to.
    fn take_png_request(&mut self) -> Option<(PathBuf, Rect)> {
        None
    }
    /// A live stream's newest samples replace the recording (live mode's "other tabs follow
    /// the stream" on an LSL stream): a view that can follow one keeps its parameters,
    /// recomputes and returns true; the others return false (the app makes them again on the
    /// stream's copy, or the file, when following starts or stops).
    fn follow_recording(&mut self, _rec: Arc<Recording>) -> bool {
        false
    }
    /// Its parameters as a session keeps them (`Null`: none).
    fn parameters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Puts a session's parameters back. They may be another recording's or another version's:
    /// what does not parse or fit (a channel this recording lacks) is passed over, and numbers
    /// are clamped to the controls' ranges.
    fn set_parameters(&mut self, _parameters: &serde_json::Value) {}
}

/// Whether two recordings have the same signals (labels and rates): a view's channel choice
/// carries over from one to the other.
fn same_channels(a: &Recording, b: &Recording) -> bool {
    a.signals.len() == b.signals.len()
        && (a.signals.iter().zip(&b.signals)).all(|(x, y)| x.label == y.label && x.fs == y.fs)
}

/// A kind of analysis view: its `--view` name, its tab title and how it is made.
pub struct ViewInfo {
    pub id: &'static str,
    pub title: &'static str,
    pub make: fn(Arc<Recording>, Option<GpuContext>) -> Box<dyn AnalysisView>,
}

/// Every analysis view, in tab order.
pub const VIEWS: &[ViewInfo] = &[
    ViewInfo {
        id: "xapen",
        title: "Cross-ApEn",
        make: |rec, gpu| Box::new(xapen_view::XapenView::new(rec, gpu)),
    },
    ViewInfo {
        id: "scalogram",
        title: "Scalogram",
        make: |rec, gpu| Box::new(scalogram_view::ScalogramView::new(rec, gpu)),
    },
    ViewInfo {
        id: "beats",
        title: "Beats",
        make: |rec, gpu| Box::new(hermite_view::HermiteView::new(rec, gpu)),
    },
    ViewInfo {
        id: "blinks",
        title: "Blinks",
        make: |rec, gpu| Box::new(blink_view::BlinkView::new(rec, gpu)),
    },
    ViewInfo {
        id: "ica",
        title: "ICA",
        make: |rec, gpu| Box::new(ica_view::IcaView::new(rec, gpu)),
    },
    ViewInfo {
        id: "erp",
        title: "ERP",
        make: |rec, _gpu| Box::new(erp_view::ErpView::new(rec, None)),
    },
    ViewInfo {
        id: "live",
        title: "Live",
        make: |rec, gpu| Box::new(live_view::LiveView::new(rec, gpu)),
    },
];

/// The window icon, assets/icon.png (compiled in).
pub fn window_icon() -> Arc<egui::IconData> {
    let image = image::load_from_memory(include_bytes!("../../assets/icon.png"))
        .expect("assets/icon.png is a valid PNG")
        .into_rgba8();
    Arc::new(egui::IconData {
        width: image.width(),
        height: image.height(),
        rgba: image.into_raw(),
    })
}

/// Where a view runs at first: the GPU, unless there is none or it is a software adapter
/// (lavapipe), which is correct but slower than the CPU paths.
pub(crate) fn default_backend(gpu: Option<&GpuContext>) -> crate::analysis::Backend {
    use crate::analysis::Backend;
    match gpu {
        Some(g) if !g.is_software() => Backend::Gpu,
        _ => Backend::Cpu,
    }
}

/// "Run on GPU / CPU" for an analysis view (GPU greyed out without an adapter).
pub(crate) fn backend_picker(
    ui: &mut egui::Ui,
    backend: &mut crate::analysis::Backend,
    gpu: Option<&GpuContext>,
) {
    use crate::analysis::Backend;
    ui.horizontal(|ui| {
        ui.label("Run on");
        ui.add_enabled_ui(gpu.is_some(), |ui| {
            ui.radio_value(backend, Backend::Gpu, "GPU");
        })
        .response
        .on_disabled_hover_text("no GPU adapter");
        ui.radio_value(backend, Backend::Cpu, "CPU");
    });
    if gpu.is_some_and(GpuContext::is_software) {
        ui.small("The GPU is a software adapter: the CPU path is faster here.");
    }
}

/// Where traces are cut at start: never, or at this many lanes centred on their own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clip {
    Off,
    Lanes(f32),
}

/// The time span of the browser's page at start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Span {
    Seconds(f64),
    All,
}

/// How the GUI starts (the command line fills this in).
#[derive(Debug, Clone, PartialEq)]
pub struct StartOptions {
    pub file: Option<PathBuf>,
    /// Sampling rate of a CSV file without a time column.
    pub fs: Option<f64>,
    /// Save the first complete frame as this PNG and exit.
    pub screenshot: Option<PathBuf>,
    /// "browser" or a `VIEWS` id.
    pub view: String,
    pub size: (f32, f32),
    pub start: Option<f64>,
    pub span: Option<Span>,
    /// An LSL stream for the Live tab (which it then opens on).
    pub lsl: Option<String>,
    /// A built-in montage's name or a montage file to open in.
    pub montage: Option<String>,
    pub reference: Option<crate::dsp::montage::Reference>,
    pub filter: Option<crate::dsp::filter::DisplayFilter>,
    /// uV/mm and mm/s on the calibrated screen.
    pub sensitivity: Option<f32>,
    pub paper_speed: Option<f32>,
    pub clip: Option<Clip>,
    /// Channel types the user sets over the file's (`--types`), by label.
    pub types: Vec<(String, crate::recording::ChannelType)>,
    /// The night's strips and spectrum dock; scoring mode.
    pub night: bool,
    pub score: bool,
}

/// What persists between runs (eframe storage).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub recent: Vec<PathBuf>,
    pub browser: BrowserSettings,
    /// The last state of the recordings read lately (newest first), offered on reopening.
    pub last_sessions: Vec<browser::Session>,
}

pub struct EdeApp {
    /// The channel browser (public for UI tests and benchmarks).
    pub browser: Browser,
    /// The analysis views, by index in `VIEWS`, each made when first shown.
    views: Vec<Option<Box<dyn AnalysisView>>>,
    /// The view shown: `None` for the browser, else an index in `VIEWS`.
    pub view: Option<usize>,
    /// A session's parameters of views not made yet, by `VIEWS` id: given to each when made.
    view_parameters: std::collections::BTreeMap<String, serde_json::Value>,
    /// The render device, when it passed its self-test; analyses fall back to the CPU without.
    gpu: Option<GpuContext>,
    settings: Settings,
    error: Option<String>,
    gpu_status: String,
    /// A PNG of the page being taken (the File menu's, or `--screenshot`'s).
    page_png: Option<PagePng>,
    styled: bool,
    /// A file dialog open on its own thread (the window keeps drawing meanwhile).
    dialog: Option<dialogs::Pending>,
    /// The "type a path" field, when shown, why (no dialog could be shown), and what for.
    path_field: Option<(String, Option<String>, dialogs::Purpose)>,
    /// The open recording while the tabs follow an LSL stream instead.
    followed_file: Option<Arc<Recording>>,
    /// The BIDS dataset the recording is a run of, listed beside the views.
    pub dataset: Option<dataset_view::DatasetPanel>,
    /// Unsaved edits: the autosave, the question before they are dropped, a crash's offer.
    pub guard: unsaved::Guard,
    /// The last state of the file just opened, offered until taken or dismissed.
    pub offered_session: Option<browser::Session>,
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
        let vulkan = system_libraries::vulkan_problem_here;
        let gpu_status = match gpu.is_none().then(vulkan).flatten() {
            Some(problem) => format!("{gpu_status} ({problem})"),
            None => gpu_status,
        };
        let mut error = None;
        let rec = match &file {
            Some(p) if crate::recording::bids::is_dataset(p) => {
                crate::recording::demo::demo_recording()
            }
            Some(p) => match Recording::open(
                p,
                &OpenOptions {
                    csv_fs: fs,
                    ..Default::default()
                },
            ) {
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
            views: VIEWS.iter().map(|_| None).collect(),
            view: None,
            view_parameters: Default::default(),
            gpu,
            settings,
            error,
            gpu_status,
            page_png: None,
            styled: false,
            dialog: None,
            path_field: None,
            followed_file: None,
            dataset: None,
            guard: unsaved::Guard::default(),
            offered_session: None,
        };
        match file {
            Some(p) if crate::recording::bids::is_dataset(&p) => app.open_dataset(p),
            Some(p) if app.error.is_none() => app.remember(p),
            _ => {}
        }
        app.prepare_gpu();
        app
    }

    /// Compiles every analysis's kernels in the background, so that no tab opened on this
    /// recording waits for the compiler (those a closed view had taken are compiled again, from
    /// the pipeline cache).
    fn prepare_gpu(&self) {
        if let Some(gpu) = &self.gpu {
            crate::analysis::prepare_gpu(gpu);
        }
    }

    /// Lists a BIDS dataset beside the views and opens its first run.
    fn open_dataset(&mut self, root: PathBuf) {
        match crate::recording::bids::Dataset::scan(&root) {
            Ok(ds) => {
                let has_runs = !ds.runs.is_empty();
                self.dataset = Some(dataset_view::DatasetPanel::new(ds));
                self.remember(root);
                if has_runs {
                    self.open_run(0);
                } else {
                    self.error = Some(format!(
                        "{}: the dataset has no EEG, MEG or iEEG runs ede reads",
                        self.dataset
                            .as_ref()
                            .map_or(String::new(), |d| d.dataset.name.clone())
                    ));
                }
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    /// Opens run `k` of the listed dataset, with its sidecars.
    pub fn open_run(&mut self, k: usize) {
        let Some(panel) = &mut self.dataset else {
            return;
        };
        let Some(run) = panel.dataset.runs.get(k).cloned() else {
            return;
        };
        match run.open() {
            Ok(rec) => {
                panel.current = Some(k);
                self.show(rec);
                self.error = None;
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    fn remember(&mut self, p: PathBuf) {
        let p = std::fs::canonicalize(&p).unwrap_or(p);
        self.settings.recent.retain(|r| r != &p);
        self.settings.recent.insert(0, p);
        self.settings.recent.truncate(10);
    }

    /// Shows `rec` in every view, once unsaved edits of the open one are saved or discarded
    /// (the user is asked first).
    pub fn show(&mut self, rec: Recording) {
        if unsaved::edits_of(&self.browser).is_some() {
            self.guard.pending = Some(unsaved::Pending::Show(Box::new(rec)));
            return;
        }
        self.show_now(rec);
    }

    /// Shows `rec` in every view: the browser is rebuilt, analysis views start afresh. The
    /// state the recording left is remembered, and the one the new one was last left in is
    /// offered.
    fn show_now(&mut self, rec: Recording) {
        self.remember_session();
        self.offered_session = (rec.path.as_ref())
            .and_then(|p| {
                self.settings
                    .last_sessions
                    .iter()
                    .find(|s| s.file.as_ref() == Some(p))
            })
            .cloned();
        self.browser = Browser::new(Arc::new(rec), self.browser.settings.clone());
        self.views.iter_mut().for_each(|v| *v = None);
        self.view_parameters.clear();
        self.followed_file = None;
        self.prepare_gpu();
    }

    /// Shows the browser ("browser") or the view with this `VIEWS` id; false for no such view.
    pub fn show_view(&mut self, id: &str) -> bool {
        if id == "browser" {
            self.view = None;
            return true;
        }
        match VIEWS.iter().position(|v| v.id == id) {
            Some(k) => {
                self.view = Some(k);
                true
            }
            None => false,
        }
    }

    /// The other tabs follow live mode's newest window: in the recording being played, or in
    /// a recording of an LSL stream's newest samples, which stands in for the file until
    /// following stops.
    fn follow_live(&mut self) {
        // Only a Live tab that exists: looking it up must not make one (or any other view).
        let Some(live) = (self.views.iter_mut().flatten()).find_map(|v| {
            (&mut **v as &mut dyn std::any::Any).downcast_mut::<live_view::LiveView>()
        }) else {
            return;
        };
        let (stream, played) = (live.follow_stream(), live.follow_span());
        match stream {
            Some((rec, t0, span)) => {
                if !Arc::ptr_eq(&rec, &self.browser.rec) {
                    let starts = self.followed_file.is_none();
                    self.followed_file
                        .get_or_insert_with(|| self.browser.rec.clone());
                    self.replace_recording(rec, starts);
                }
                self.browser.show(t0, Some(span));
                return;
            }
            // Following an LSL stream stopped (or the Live tab went back to the file).
            None => {
                if let Some(file) = self.followed_file.take() {
                    self.replace_recording(file, true);
                }
            }
        }
        if let Some((t0, span)) = played {
            self.browser.show(t0, Some(span));
        }
    }

    /// The browser and the views that follow (`AnalysisView::follow_recording`) on `rec`, the
    /// browser's settings kept. With `remake`, the views that cannot follow are made again on
    /// `rec` when next shown (as following starts and ends; in between they keep the copy they
    /// were made on).
    fn replace_recording(&mut self, rec: Arc<Recording>, remake: bool) {
        self.browser = Browser::new(rec.clone(), self.browser.settings.clone());
        self.hand_views(rec, remake);
    }

    /// Hands `rec` to the views other than Live that follow a recording; with `remake`, the
    /// others are made again on it when next shown.
    fn hand_views(&mut self, rec: Arc<Recording>, remake: bool) {
        let live = VIEWS.iter().position(|v| v.id == "live");
        for (k, view) in self.views.iter_mut().enumerate() {
            let Some(v) = view.as_mut().filter(|_| Some(k) != live) else {
                continue;
            };
            if !v.follow_recording(rec.clone()) && remake {
                *view = None;
            }
        }
    }

    /// View `k`, made for the open recording if it was not yet.
    fn view_at(&mut self, k: usize) -> &mut Box<dyn AnalysisView> {
        let (rec, gpu) = (self.browser.rec.clone(), self.gpu.clone());
        let parameters = self.view_parameters.remove(VIEWS[k].id);
        self.views[k].get_or_insert_with(|| {
            let mut view = (VIEWS[k].make)(rec, gpu);
            if let Some(p) = parameters {
                view.set_parameters(&p);
            }
            view
        })
    }

    /// The view of type `T`, made if needed (tests and benchmarks drive views through this).
    pub fn view_mut<T: AnalysisView>(&mut self) -> Option<&mut T> {
        let k = (0..VIEWS.len()).find(|&k| {
            let view: &dyn std::any::Any = &**self.view_at(k);
            view.is::<T>()
        })?;
        let view: &mut dyn std::any::Any = &mut **self.view_at(k);
        view.downcast_mut::<T>()
    }

    /// The view of type `T`, if it has been made.
    pub fn view_ref<T: AnalysisView>(&self) -> Option<&T> {
        self.views.iter().flatten().find_map(|v| {
            let view: &dyn std::any::Any = &**v;
            view.downcast_ref::<T>()
        })
    }

    pub fn open(&mut self, path: PathBuf) {
        if crate::recording::bids::is_dataset(&path) {
            self.open_dataset(path);
            return;
        }
        self.open_with(path, OpenOptions::default());
    }

    /// Opens `path` with options the file cannot tell (an XDF file's stream).
    pub fn open_with(&mut self, path: PathBuf, options: OpenOptions) {
        match crate::recording::bids::open_file(&path, &options) {
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
                        self.start_dialog(dialogs::Purpose::Open);
                    }
                    if ui
                        .button("Open folder (BIDS dataset, CTF .ds, EGI .mff)…")
                        .on_hover_text("a BIDS dataset (its runs listed beside the views), or a recording that is a folder: CTF's .ds, EGI's .mff")
                        .clicked()
                    {
                        ui.close();
                        self.start_folder_dialog();
                    }
                    if ui.button("Open a path…").clicked() {
                        ui.close();
                        self.show_path_field(dialogs::Purpose::Open, None);
                    }
                    if ui
                        .button("Load annotations…")
                        .on_hover_text("add the events of an annotation file (EDF+, BIDS events, a Sleep-EDF hypnogram) to this recording's")
                        .clicked()
                    {
                        ui.close();
                        self.start_dialog(dialogs::Purpose::Annotations);
                    }
                    if ui.button("Save session…").clicked() {
                        ui.close();
                        let name = format!("{}.ede-session.json", self.browser.rec.display_name());
                        if let Some(p) = rfd::FileDialog::new()
                            .set_file_name(name)
                            .add_filter("ede session", &["json"])
                            .save_file()
                        {
                            self.browser.message = Some(
                                export::write_atomic(&p, self.session().to_json().as_bytes())
                                    .map(|()| format!("session saved to {}", p.display())),
                            );
                        }
                    }
                    if ui.button("Open session…").clicked() {
                        ui.close();
                        if let Some(p) = rfd::FileDialog::new()
                            .add_filter("ede session", &["json"])
                            .pick_file()
                        {
                            match browser::Session::load(&p) {
                                Ok(s) => self.open_session(&s),
                                Err(e) => self.error = Some(e),
                            }
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
                    let family = self.browser.rec.format.edf_family();
                    let from_edf = self.browser.rec.path.is_some() && family.is_some();
                    if ui
                        .add_enabled(from_edf, egui::Button::new("Export the window as EDF+…"))
                        .on_hover_text(
                            "the shown channels, the data records covering the window, \
                             samples as recorded, with the events inside",
                        )
                        .on_disabled_hover_text("for recordings opened from EDF or BDF files")
                        .clicked()
                    {
                        ui.close();
                        let ext = family.unwrap_or("edf");
                        let (t0, _) = self.browser.visible_span();
                        let name =
                            format!("{}_clip_{:.0}s.{ext}", self.browser.rec.display_name(), t0);
                        if let Some(p) = rfd::FileDialog::new()
                            .set_file_name(name)
                            .add_filter(ext, &[ext])
                            .save_file()
                        {
                            self.browser.message = Some(
                                self.browser
                                    .export_visible_clip(&p)
                                    .map(|()| format!("saved {}", p.display())),
                            );
                        }
                    }
                    ui.menu_button("Save the page as PNG", |ui| {
                        let sizes = [
                            ("at the window's size…", None),
                            ("1920 x 1080…", Some([1920, 1080])),
                            ("2560 x 1440…", Some([2560, 1440])),
                            ("3840 x 2160…", Some([3840, 2160])),
                        ];
                        for (label, size) in sizes {
                            if ui.button(label).clicked() {
                                ui.close();
                                if let Some(p) = rfd::FileDialog::new()
                                    .set_file_name("page.png")
                                    .add_filter("png", &["png"])
                                    .save_file()
                                {
                                    self.page_png = Some(PagePng::new(p, size, false));
                                }
                            }
                        }
                    });
                    if self.browser.rec.streams.len() > 1
                        && let Some(path) = self.browser.rec.path.clone()
                    {
                        ui.menu_button("XDF stream", |ui| {
                            for name in self.browser.rec.streams.clone() {
                                if ui.button(&name).clicked() {
                                    ui.close();
                                    self.open_with(
                                        path.clone(),
                                        OpenOptions {
                                            xdf_stream: Some(name),
                                            ..Default::default()
                                        },
                                    );
                                }
                            }
                        });
                    }
                    if let Some(panel) = self.dataset.as_mut() {
                        ui.checkbox(&mut panel.open, "Dataset panel");
                    }
                    if ui.button("Demo recording").clicked() {
                        ui.close();
                        self.show(crate::recording::demo::demo_recording());
                    }
                    if ui.button("Quit").clicked() {
                        ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                    }
                });
                self.browser.menus(ui);
                ui.menu_button("Help", |ui| {
                    if ui
                        .add(egui::Button::new("Keyboard and mouse").shortcut_text("?"))
                        .clicked()
                    {
                        shortcuts::toggle(ui.ctx());
                        ui.close();
                    }
                });
                ui.separator();
                ui.selectable_value(&mut self.view, None, "Browser");
                for (k, v) in VIEWS.iter().enumerate() {
                    ui.selectable_value(&mut self.view, Some(k), v.title);
                }
            });
        });
        self.poll_dialog(&ctx);
        self.path_window(&ctx);
        shortcuts::show(&ctx);
        self.guard_edits(&ctx);
        self.offer_session(ui);
        if let Some(e) = self.error.clone() {
            // A file that failed to open is said where the user looks, not only in the status.
            egui::Window::new("Cannot open the file")
                .collapsible(false)
                .resizable(false)
                .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
                .show(&ctx, |ui| {
                    ui.label(e);
                    ui.add_space(6.0);
                    ui.label("The recording shown is the one open before (or the demo).");
                    if ui.button("OK").clicked() {
                        self.error = None;
                    }
                });
        }
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
        let mut picked = None;
        if let Some(panel) = self.dataset.as_mut().filter(|p| p.open) {
            egui::Panel::left("dataset")
                .resizable(true)
                .default_size(360.0)
                .show(ui, |ui| picked = panel.ui(ui));
        }
        if let Some(k) = picked {
            self.open_run(k);
        }
        // Live mode can lead the other tabs: they show its newest window.
        let live = VIEWS.iter().position(|v| v.id == "live");
        if self.view != live {
            self.follow_live();
        }
        match self.view {
            None => {
                self.browser.night.use_gpu(self.gpu.as_ref());
                self.browser.ui(ui)
            }
            Some(k) => {
                self.view_at(k);
                let view = self.views[k].as_mut().expect("made just above");
                view.ui(ui, &mut self.browser);
            }
        }
        // Channels marked bad change the recording: the views are made again on it (their
        // default picks leave bad channels out) unless they follow it themselves.
        if self.browser.take_recording_changed() {
            self.hand_views(self.browser.rec.clone(), true);
        }
        self.settings.browser = self.browser.settings.clone();
    }

    /// The message of a file that failed to open, until dismissed.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether the current view shows what it was asked for (the screenshot waits for this).
    pub fn ready(&self) -> bool {
        match self.view {
            None => self.browser.ready(),
            Some(k) => self.views[k].as_ref().is_some_and(|v| v.ready()),
        }
    }
}

impl eframe::App for EdeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.ui(ui);
        let ctx = ui.ctx().clone();
        let png = self
            .views
            .iter_mut()
            .flatten()
            .find_map(|v| v.take_png_request());
        if let Some((path, rect)) = png {
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
        self.page_png_frame(&ctx);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        self.remember_session();
        eframe::set_value(storage, eframe::APP_KEY, &self.settings);
    }
}

/// Turns transparent huge pages off for this process. The allocator asks for them, so a
/// frame whose meshes land on freshly returned memory stalls while the kernel clears 2 MiB
/// pages: with the Live tab at maximum speed on 64 x 512 Hz, 2-6 frames in 500 went over
/// 16 ms (up to 35 ms), none without; the pipeline's hops took the same time either way.
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes a flag and no pointers; failure leaves things as they
    // were.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Runs the GUI (or renders one screenshot and exits). A file that cannot be opened opens the
/// window all the same, with the error shown in it and the demo recording behind.
pub fn run(args: StartOptions) -> anyhow::Result<()> {
    without_huge_pages();
    if args.view != "browser" && !VIEWS.iter().any(|v| v.id == args.view) {
        let names: Vec<&str> = VIEWS.iter().map(|v| v.id).collect();
        anyhow::bail!(
            "unknown view {:?}; the views are: browser, {}",
            args.view,
            names.join(", ")
        );
    }
    let (w, h) = args.size;
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_inner_size([w, h])
            .with_title("ede")
            .with_icon(window_icon())
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Wgpu,
        // The pipeline cache, where the adapter has one (gpu::pipeline_cache).
        wgpu_options: eframe::egui_wgpu::WgpuConfiguration {
            wgpu_setup: eframe::egui_wgpu::WgpuSetup::CreateNew(
                eframe::egui_wgpu::WgpuSetupCreateNew {
                    device_descriptor: Arc::new(GpuContext::device_descriptor),
                    ..eframe::egui_wgpu::WgpuSetupCreateNew::without_display_handle()
                },
            ),
            ..Default::default()
        },
        persist_window: args.screenshot.is_none(),
        ..Default::default()
    };
    let screenshot = args.screenshot.clone();
    let failed_open = Arc::new(std::sync::Mutex::new(None::<String>));
    let failed = failed_open.clone();
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
            if let Some(e) = &app.error {
                // A screenshot of the demo in place of the file asked for would pass for it.
                if screenshot.is_some() {
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
                    return Err(e.clone().into());
                }
                eprintln!("ede: {e}");
            }
            for (label, kind) in &args.types {
                match app.browser.rec.signal_index(label) {
                    Some(c) => app.browser.set_type(c, *kind),
                    None => return Err(format!("--types: no channel {label:?}").into()),
                }
            }
            if let Some(r) = &args.reference {
                app.browser.set_reference(r.clone());
            }
            if let Some(m) = &args.montage {
                app.browser.open_montage(m);
            }
            if let Some(f) = args.filter {
                app.browser.set_filter(f);
            }
            match args.clip {
                Some(Clip::Off) => app.browser.settings.overlap = true,
                Some(Clip::Lanes(lanes)) => {
                    app.browser.settings.overlap = false;
                    app.browser.settings.clip_lanes = lanes;
                }
                None => {}
            }
            let calibration = &mut app.browser.settings.calibration;
            calibration.uv_per_mm = args.sensitivity.or(calibration.uv_per_mm);
            calibration.mm_per_s = args.paper_speed.or(calibration.mm_per_s);
            if args.start.is_some() || args.span.is_some() {
                let (t0, t1) = app.browser.visible_span();
                let span = match args.span {
                    Some(Span::All) => None,
                    Some(Span::Seconds(s)) => Some(s),
                    None => Some(t1 - t0),
                };
                app.browser.show(args.start.unwrap_or(t0), span);
            }
            night::Night::open_with(&mut app.browser, args.night, args.score);
            if screenshot.is_none()
                && let Some(dir) = std::env::var_os("EDE_AUTOSAVE_DIR")
                    .map(PathBuf::from)
                    .or_else(|| eframe::storage_dir("ede"))
            {
                app.guard.enable(dir);
            }
            app.page_png = screenshot.map(|p| PagePng::new(p, None, true));
            match &args.lsl {
                Some(query) => {
                    app.show_view("live");
                    if let Some(live) = app.view_mut::<live_view::LiveView>() {
                        live.use_lsl(Some(query.clone()));
                    }
                }
                None => {
                    app.show_view(&args.view);
                }
            }
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| {
        // The file's own error, not the window's, where that is what stopped it.
        match failed_open.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(file) => anyhow::anyhow!(file),
            None => anyhow::anyhow!(
                "the window could not start: {}",
                system_libraries::explain(&e.to_string())
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_window_icon_decodes() {
        let icon = super::window_icon();
        assert_eq!((icon.width, icon.height), (128, 128));
        assert_eq!(icon.rgba.len(), 128 * 128 * 4);
    }
}
