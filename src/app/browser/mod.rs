//! The channel browser: every trace stacked with its label, a time axis in seconds and clock
//! time, annotations on the axis and in a side panel, montages, display filters, and
//! EDFbrowser-like navigation (PageUp/PageDown, arrows, wheel, ctrl+wheel or pinch to zoom,
//! up/down for amplitude, click a label to select, right-click to hide).
//!
//! The files: `mod.rs` the state (settings, the browser, measurements, statistics) with its
//! constructor, navigation and the shared helpers; `menus` the menu bar's menus, the status
//! line and the filter controls (`filter_choices`); `annotations` the annotation side panel;
//! `draw` the lanes (traces, labels, the time grid, annotation markers) and Fit; `input`
//! keyboard and mouse (navigation, zoom, selections, event gestures); `measure` the cursor,
//! the two-point measurement and the selection's statistics; `format` number and time
//! formatting.

mod annotations;
mod calibration;
mod draw;
pub(crate) mod format;
mod input;
pub use input::FUNCTION_KEYS;
mod channels_dialog;
mod measure;
mod menus;
mod montage_editor;
pub mod scalp;
mod session;

pub use calibration::Calibration;
pub use session::Session;

use std::collections::HashMap;
use std::sync::Arc;

use eframe::egui::{self, Color32, Rect};
use serde::{Deserialize, Serialize};

use super::events::Events;
use super::lanes::Lanes;
use super::traces::{Screen, Traces};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{BuiltIn, Montage, Reference};
use crate::recording::{ChannelType, Recording};

const LABEL_WIDTH: f32 = 110.0;
const AXIS_HEIGHT: f32 = 38.0;
const TIMEBASES_S: [f64; 16] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0,
    28800.0, 86400.0,
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserSettings {
    pub montage: MontageChoice,
    /// How the EEG channels are re-referenced before the montage.
    pub reference: Reference,
    /// The user's own montages (kept with the settings; File > Load montage adds one).
    pub user_montages: Vec<Montage>,
    pub filter: DisplayFilter,
    /// Channel types filtered their own way (EOG, ECG, EMG ...): before `filter`.
    pub type_filters: Vec<(ChannelType, DisplayFilter)>,
    /// Centre each trace on its level in the window (off: on zero, as recorded).
    pub centre: bool,
    /// Sensitivity and paper speed against the screen's measured size.
    pub calibration: Calibration,
    /// Seconds on one screen.
    pub span_s: f64,
    /// Multiplies every channel's amplitude.
    pub gain: f32,
    pub show_annotations: bool,
    /// Let traces leave their lanes, as EDFbrowser draws them (on by default: a page must never
    /// hide a waveform's peaks; off: each is clipped at `clip_lanes` lanes, as MNE's browser).
    pub overlap: bool,
    /// Where a trace is clipped, in lanes centred on its own (1: its lane; MNE's browser
    /// clips at 3).
    pub clip_lanes: f32,
    /// Lanes on one page (0: all), as MNE-Python's and EDFbrowser's browsers page them.
    pub channels_per_page: usize,
    /// The lab's own sleep stage labels (Night menu), besides AASM's and R&K's.
    pub stage_labels: Vec<(String, crate::dsp::sleep::Stage)>,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        Self {
            montage: MontageChoice::BuiltIn(BuiltIn::AsRecorded),
            reference: Reference::AsRecorded,
            user_montages: Vec::new(),
            filter: DisplayFilter::default(),
            type_filters: Vec::new(),
            centre: true,
            calibration: Calibration::default(),
            span_s: 10.0,
            gain: 1.0,
            show_annotations: true,
            overlap: true,
            clip_lanes: 1.5,
            channels_per_page: 20,
            stage_labels: Vec::new(),
        }
    }
}

/// Which montage the browser shows: a built-in one, or one of the user's by name. (Untagged,
/// so that settings saved as a built-in's bare name still read.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MontageChoice {
    BuiltIn(BuiltIn),
    User { user: String },
}

pub struct Browser {
    pub rec: Arc<Recording>,
    pub settings: BrowserSettings,
    pub traces: Traces,
    /// Left edge of the window, seconds from the recording start.
    pub t0: f64,
    /// Per-trace amplitude multiplier on top of its type's scale.
    channel_gain: Vec<f32>,
    /// The amplitude of one lane per channel type, from the data's spread when the montage
    /// was applied (types without data keep their unit's default).
    type_scale: HashMap<ChannelType, f32>,
    /// Channels were marked bad or good since the app last looked.
    recording_changed: bool,
    /// The bad marks as last saved (or as the file has them).
    saved_bad: Vec<bool>,
    /// The channel types as last saved (or as the file has them).
    saved_types: Vec<ChannelType>,
    /// The height of a lane last frame, in points (calibrated sensitivities need it).
    lane_points: f32,
    /// The calibration window's typed length while it is open.
    calibrating: Option<f32>,
    /// A channel event being marked with ctrl+drag: (trace, start, current end) in seconds.
    marking: Option<(usize, f64, f64)>,
    /// The montage editor's state while it is open.
    editing: Option<montage_editor::Editing>,
    /// The Channels dialog is open.
    pub channels_open: bool,
    /// Fit every shown trace to its lane from the next screen's values.
    fit_requested: bool,
    /// The page of lanes shown and the traces hidden.
    lanes: Lanes,
    /// Wheel movement not yet a whole lane.
    lane_wheel: f32,
    selected: Option<usize>,
    /// A time range (seconds) chosen with shift+drag, for analyses of a stretch.
    pub selection: Option<(f64, f64)>,
    /// Where a shift+drag started.
    selecting_from: Option<f64>,
    cache: Option<(CacheKey, Arc<Screen>)>,
    /// The annotation list's filter text, and the indices of the annotations matching the
    /// filter they were computed for.
    annotation_filter: String,
    annotation_matches: (String, u64, Vec<usize>),
    /// The annotations as the reviewer edits them (the recording keeps the originals).
    pub events: Events,
    /// The last save's outcome, shown above the annotation list.
    pub message: Option<Result<String, String>>,
    /// Where an alt+drag of the selected event started: (pointer time, event onset).
    moving: Option<(f64, f64)>,
    /// Where the traces were drawn last frame (views align their time axes with it).
    pub plot_rect: Rect,
    /// Size of the recording's file: large files get a memory figure in the status line.
    file_bytes: u64,
    /// The two-point measurement: up to two points, set with ctrl+click on a trace.
    pub measure: Vec<MeasurePoint>,
    /// Whether the selection's statistics window is open.
    pub show_stats: bool,
    /// The statistics shown, and the selection and traces they are of.
    stats: Option<SelectionStats>,
    /// The night's strips, spectrum dock and scoring.
    pub night: crate::app::night::Night,
    /// The scalp map at the cursor and the GFP lane.
    pub scalp: scalp::ScalpPanel,
}

/// Statistics of the shown traces over a selection: `(selection, traces, per trace)`.
type SelectionStats = ((f64, f64), Vec<usize>, Vec<TraceStats>);

/// A point of a two-point measurement: a time, a trace and the trace's value there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasurePoint {
    pub t: f64,
    pub trace: usize,
    pub value: f32,
}

/// Two points measured against each other.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Seconds from the first point to the second.
    pub dt: f64,
    /// The frequency that time difference implies (1 / |dt|).
    pub hz: f64,
    /// Second value minus first; `None` when the traces have different units.
    pub dv: Option<f32>,
}

/// One trace's statistics over the selection.
#[derive(Debug, Clone)]
pub struct TraceStats {
    pub label: String,
    pub unit: String,
    pub summary: Option<crate::dsp::stats::Summary>,
}

/// Statistics are computed for selections of at most this many samples in all.
const MAX_STATS_SAMPLES: usize = 50_000_000;

#[derive(Debug, Clone, Copy, PartialEq)]
struct CacheKey {
    t0: f64,
    span: f64,
    columns: usize,
    exact_possible: bool,
}

/// The montage `choice` names for `rec` (as recorded where it names none the recording has).
fn montage_of(rec: &Recording, settings: &BrowserSettings, choice: &MontageChoice) -> Montage {
    let plain = || BuiltIn::as_recorded(rec);
    match choice {
        MontageChoice::BuiltIn(b) => b.montage(rec).unwrap_or_else(plain),
        MontageChoice::User { user } => (settings.user_montages.iter())
            .find(|m| &m.name == user)
            .cloned()
            .unwrap_or_else(plain),
    }
}

/// Physical amplitude of one channel slot before gains: what clinicians expect per unit.
fn default_scale(unit: &str, physical_range: f64, kind: ChannelType) -> f32 {
    // An ECG is millivolts where EEG is tens of microvolts: 2 mV a slot, in its own unit.
    let volts = crate::recording::volts_per_unit(unit);
    match (kind, volts) {
        (ChannelType::Ecg, Some(v)) => (2e-3 / v) as f32,
        (_, Some(v)) => (100e-6 / v) as f32,
        (_, None) => match unit.trim() {
            "T" => 1e-12,
            "T/m" => 4e-11,
            _ if physical_range.is_finite() && physical_range > 0.0 => {
                (physical_range / 2.0) as f32
            }
            _ => 1.0,
        },
    }
}

impl Browser {
    pub fn new(rec: Arc<Recording>, settings: BrowserSettings) -> Self {
        let traces = Traces::new(
            rec.clone(),
            montage_of(&rec, &settings, &settings.montage),
            settings.reference.clone(),
            settings.filter,
        );
        let n = traces.spec.derivations.len();
        let n_annotations = rec.annotations.len();
        let mut b = Self {
            rec: rec.clone(),
            settings,
            traces,
            t0: 0.0,
            channel_gain: vec![1.0; n],
            type_scale: HashMap::new(),
            recording_changed: false,
            saved_bad: rec.signals.iter().map(|s| s.bad).collect(),
            saved_types: rec.signals.iter().map(|s| s.kind).collect(),
            lane_points: 40.0,
            calibrating: None,
            editing: None,
            channels_open: false,
            marking: None,
            fit_requested: false,
            lanes: Lanes::default(),
            lane_wheel: 0.0,
            selected: None,
            selection: None,
            selecting_from: None,
            cache: None,
            annotation_filter: String::new(),
            annotation_matches: (String::new(), 0, (0..n_annotations).collect()),
            events: Events::new(rec.annotations.clone()),
            message: None,
            moving: None,
            plot_rect: Rect::NOTHING,
            file_bytes: 0,
            measure: Vec::new(),
            show_stats: false,
            stats: None,
            night: Default::default(),
            scalp: Default::default(),
        };
        b.file_bytes = (b.rec.path.as_ref())
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        b.settings.span_s = b.settings.span_s.clamp(0.1, b.total_s().max(1.0));
        b.type_scale = b.data_scales();
        b
    }

    /// Each channel type's lane amplitude from what the traces do in the window (up to 30 s
    /// of it): 1.5 times the median over the type's traces of their 2nd-98th percentile range,
    /// rounded up to 1, 2 or 5 times a power of ten, so that a typical trace fills two thirds of
    /// its lane whatever its offset and units (a Neuromag magnetometer's -2 pT offset and 3.5 pT swings, an
    /// ECG's millivolts beside EEG's microvolts).
    fn data_scales(&self) -> HashMap<ChannelType, f32> {
        let screen = self
            .traces
            .screen(self.t0, self.settings.span_s.min(30.0), 600);
        let mut spreads: HashMap<ChannelType, Vec<f32>> = HashMap::new();
        for (der, cols) in self.traces.spec.derivations.iter().zip(&screen.columns) {
            let values: Vec<f32> = cols.iter().flat_map(|c| [c[0], c[1]]).collect();
            let kind = self.rec.signals[der.plus].kind;
            // A trigger's codes are brief steps the percentiles pass over: its lane is from the
            // largest code in the window, which then reaches half a lane.
            let spread = match kind {
                ChannelType::Stim => Some(values.iter().fold(0f32, |m, v| m.max(v.abs())))
                    .filter(|&m| m > 0.0)
                    .map(|m| 4.0 / 3.0 * m),
                _ => crate::dsp::stats::robust_spread(&values),
            };
            if let Some(s) = spread {
                spreads.entry(kind).or_default().push(s);
            }
        }
        spreads
            .into_iter()
            .map(|(kind, mut v)| {
                let k = v.len() / 2;
                let median = *v.select_nth_unstable_by(k, f32::total_cmp).1;
                (kind, format::nice_amplitude(1.5 * median as f64) as f32)
            })
            .collect()
    }

    /// The montages offered, in menu (and F1-F12) order: the user's, then the built-in ones
    /// this recording has the electrodes for.
    pub fn montage_choices(&self) -> Vec<(MontageChoice, String)> {
        let user = self.settings.user_montages.iter().map(|m| {
            (
                MontageChoice::User {
                    user: m.name.clone(),
                },
                m.name.clone(),
            )
        });
        let built_in = BuiltIn::ALL
            .into_iter()
            .filter(|b| b.montage(&self.rec).is_some())
            .map(|b| (MontageChoice::BuiltIn(b), b.name().to_string()));
        user.chain(built_in).collect()
    }

    /// Shows `choice` under the current reference.
    pub fn set_montage(&mut self, choice: MontageChoice) {
        if choice != self.settings.montage {
            self.settings.montage = choice;
            self.rebuild(true);
        }
    }

    /// Adds (or replaces, by name) a user montage and shows it.
    pub fn add_user_montage(&mut self, montage: Montage) {
        let name = montage.name.clone();
        let list = &mut self.settings.user_montages;
        match list.iter_mut().find(|m| m.name == name) {
            Some(m) => *m = montage,
            None => list.push(montage),
        }
        self.settings.montage = MontageChoice::User { user: name };
        self.rebuild(true);
    }

    /// Re-references the EEG channels.
    pub fn set_reference(&mut self, reference: Reference) {
        if reference != self.settings.reference {
            self.settings.reference = reference;
            self.rebuild(true);
        }
    }

    /// Marks recorded channel `c` bad (or good again): greyed, out of every average (so the
    /// traces are made again) and of the analyses' default picks. The recording's bad marks
    /// are its state: the app hands the marked recording to the other views
    /// (`take_recording_changed`).
    pub fn set_bad(&mut self, c: usize, bad: bool) {
        if c >= self.rec.signals.len() || self.rec.signals[c].bad == bad {
            return;
        }
        let mut rec = (*self.rec).clone();
        rec.signals[c].bad = bad;
        self.rec = Arc::new(rec);
        self.recording_changed = true;
        self.rebuild(false);
    }

    /// Draws (or stops drawing) bad scalp electrodes as the spherical-spline interpolation of
    /// the good ones: recording state like the bad marks, handed to the other views.
    pub fn set_interpolate_bads(&mut self, on: bool) {
        if self.rec.interpolate_bads == on {
            return;
        }
        let mut rec = (*self.rec).clone();
        rec.interpolate_bads = on;
        self.rec = Arc::new(rec);
        self.recording_changed = true;
        self.rebuild(false);
    }

    /// Gives recorded channel `c` another type (the Channels dialog, a label's menu, a
    /// session, `--types`): what it is decides whether it is a scalp electrode, so every
    /// average and montage is made again, and its lane takes its type's scale.
    pub fn set_type(&mut self, c: usize, kind: ChannelType) {
        if c >= self.rec.signals.len() || self.rec.signals[c].kind == kind {
            return;
        }
        let mut rec = (*self.rec).clone();
        rec.signals[c].kind = kind;
        self.rec = Arc::new(rec);
        self.recording_changed = true;
        self.rebuild(true);
    }

    /// The channels whose type the user changed from the file's (as last saved).
    pub fn changed_types(&self) -> Vec<(String, ChannelType)> {
        (self.rec.signals.iter().zip(&self.saved_types))
            .filter(|(s, t)| s.kind != **t)
            .map(|(s, _)| (s.label.clone(), s.kind))
            .collect()
    }

    /// Whether channels are marked bad or good, or typed, otherwise than last saved.
    pub fn bad_marks_changed(&self) -> bool {
        let bad = (self.rec.signals.iter().zip(&self.saved_bad)).any(|(s, &b)| s.bad != b);
        bad || !self.changed_types().is_empty()
    }

    /// The bad marks and types are saved as they are now.
    pub fn bad_marks_saved(&mut self) {
        self.saved_bad = self.rec.signals.iter().map(|s| s.bad).collect();
        self.saved_types = self.rec.signals.iter().map(|s| s.kind).collect();
    }

    /// Whether the recording changed (bad marks) since the last call.
    pub fn take_recording_changed(&mut self) -> bool {
        std::mem::take(&mut self.recording_changed)
    }

    /// The filter of channels of `kind` (`None`: as every channel's).
    pub fn set_type_filter(&mut self, kind: ChannelType, filter: Option<DisplayFilter>) {
        if filter.is_some_and(|f| self.refuses(&f)) {
            return;
        }
        let mut list = self.settings.type_filters.clone();
        list.retain(|(k, _)| *k != kind);
        list.extend(filter.map(|f| (kind, f)));
        if list != self.settings.type_filters {
            self.settings.type_filters = list;
            self.rebuild(false);
        }
    }

    /// The filter of every trace without its own.
    pub fn set_filter(&mut self, filter: DisplayFilter) {
        if filter != self.settings.filter && !self.refuses(&filter) {
            self.settings.filter = filter;
            self.rebuild(false);
        }
    }

    /// A filter no channel of the recording can have is refused, the reason said and the last
    /// valid filter kept: the status line names only what is applied. (A corner above the
    /// Nyquist frequency of some channels only leaves those unfiltered, as EDFbrowser does.)
    fn refuses(&mut self, filter: &DisplayFilter) -> bool {
        let fastest = (self.rec.signals.iter().map(|s| s.fs)).fold(0.0, f64::max);
        match filter.validate_at(fastest) {
            Ok(()) => false,
            Err(e) => {
                self.message = Some(Err(format!("filter refused: {e}")));
                true
            }
        }
    }

    /// The visible window `(start, end)` in seconds.
    pub fn visible_span(&self) -> (f64, f64) {
        (self.t0, self.t0 + self.settings.span_s)
    }

    /// True once what the screen shows is exact (the overview is built or not needed).
    pub fn ready(&self) -> bool {
        (self.traces.overview_ready() || self.cache.as_ref().is_some_and(|(_, s)| s.exact))
            && self.night.ready()
    }

    /// The trace clicked last (an index in `traces.spec.derivations`).
    pub fn selected_trace(&self) -> Option<usize> {
        self.selected
    }

    /// The label of trace `d` (empty for an index past the traces).
    pub fn trace_label(&self, d: usize) -> &str {
        self.traces
            .spec
            .derivations
            .get(d)
            .map_or("", |der| der.label.as_str())
    }

    /// The traces (derivation indices) of the lanes on the current page.
    pub fn page_traces(&mut self) -> Vec<usize> {
        let total = self.traces.spec.derivations.len();
        self.lanes.page(total, self.settings.channels_per_page)
    }

    /// The labels of the lanes on the current page.
    pub fn page_labels(&mut self) -> Vec<String> {
        (self.page_traces().into_iter())
            .map(|d| self.trace_label(d).to_string())
            .collect()
    }

    pub fn trace_labels(&self) -> Vec<String> {
        self.traces
            .spec
            .derivations
            .iter()
            .map(|d| d.label.clone())
            .collect()
    }

    fn total_s(&self) -> f64 {
        self.rec.time_span_s()
    }

    /// New traces for the settings; a new montage also resets what belongs to its traces
    /// (gains, hidden traces, their own filters, the selected trace).
    fn rebuild(&mut self, montage_changed: bool) {
        let own = if montage_changed {
            HashMap::new()
        } else {
            self.traces.spec.channel_filters.clone()
        };
        self.new_traces(own);
        if !montage_changed {
            return;
        }
        self.channel_gain = vec![1.0; self.traces.spec.derivations.len()];
        self.lanes = Lanes::default();
        self.selected = None;
        self.type_scale = self.data_scales();
    }

    fn clamp_view(&mut self) {
        let total = self.total_s().max(0.1);
        self.settings.span_s = self.settings.span_s.clamp(0.05, total.max(1.0) * 1.05);
        self.t0 = self.t0.clamp(0.0, (total - self.settings.span_s).max(0.0));
    }

    /// Shows `span` seconds (the whole recording when `None`) from `start`, within the recording.
    pub fn show(&mut self, start: f64, span: Option<f64>) {
        self.settings.span_s = span.unwrap_or_else(|| self.total_s());
        self.clamp_view();
        self.t0 = start;
        self.clamp_view();
    }

    /// Scrolls by `seconds` (positive: later).
    pub fn scroll(&mut self, seconds: f64) {
        self.t0 += seconds;
        self.clamp_view();
    }

    /// Zooms the time axis by `factor` (>1 shows more time) keeping `anchor` (0..1) fixed.
    pub fn zoom(&mut self, factor: f64, anchor: f64) {
        let at = self.t0 + anchor * self.settings.span_s;
        self.settings.span_s *= factor;
        self.clamp_view();
        self.t0 = at - anchor * self.settings.span_s;
        self.clamp_view();
    }

    fn clock(&self, t: f64) -> String {
        let at = self.rec.start + chrono::Duration::milliseconds((t * 1000.0).round() as i64);
        at.format("%H:%M:%S%.3f").to_string()
    }

    /// Side panel (annotations) and the traces.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if self.settings.show_annotations {
            egui::Panel::right("annotations")
                .default_size(230.0)
                .show(ui, |ui| self.annotation_list(ui));
        }
        let mut night = std::mem::take(&mut self.night);
        night.panels(self, ui);
        let mut scalp = std::mem::take(&mut self.scalp);
        scalp.panels(self, ui);
        self.scalp = scalp;
        egui::CentralPanel::default()
            .frame(egui::Frame::new().fill(Color32::from_rgb(252, 252, 250)))
            .show(ui, |ui| self.traces_ui(ui));
        night.windows(self, ui.ctx());
        self.night = night;
        self.stats_window(ui.ctx());
        self.calibration_window(ui.ctx());
        self.montage_editor(ui.ctx());
        self.channels_dialog(ui.ctx());
    }

    /// The amplitude of one lane of trace `d` (physical units), gains applied.
    pub fn lane_scale(&self, d: usize) -> f32 {
        self.type_lane_scale(d) / (self.settings.gain * self.channel_gain[d])
    }

    /// The amplitude of one lane of trace `d`'s type, before gains.
    fn type_lane_scale(&self, d: usize) -> f32 {
        let sig = &self.rec.signals[self.traces.spec.derivations[d].plus];
        if let Some(s) = self
            .settings
            .calibration
            .lane_scale(&sig.unit, self.lane_points)
        {
            return s;
        }
        (self.type_scale.get(&sig.kind).copied()).unwrap_or_else(|| {
            default_scale(&sig.unit, sig.physical_max - sig.physical_min, sig.kind)
        })
    }

    /// Gives trace `d` its own display filter (`None`: the Filter menu's again).
    pub fn set_channel_filter(&mut self, d: usize, filter: Option<DisplayFilter>) {
        if filter.is_some_and(|f| self.refuses(&f)) {
            return;
        }
        let mut own = self.traces.spec.channel_filters.clone();
        match filter {
            Some(f) => own.insert(d, f),
            None => own.remove(&d),
        };
        self.new_traces(own);
    }

    /// Traces for the current montage and filters, with `own` filters for some of them.
    fn new_traces(&mut self, own: HashMap<usize, DisplayFilter>) {
        self.traces = Traces::with_channel_filters(
            self.rec.clone(),
            montage_of(&self.rec, &self.settings, &self.settings.montage),
            self.settings.reference.clone(),
            self.settings.filter,
            self.settings.type_filters.clone(),
            own,
        );
        if let Some(problem) = &self.traces.spec.problem
            && self.traces.spec.montage.name == BuiltIn::AsRecorded.name()
        {
            // The montage or reference cannot be had here: say why, show the channels.
            self.message = Some(Err(problem.clone()));
            self.settings.montage = MontageChoice::BuiltIn(BuiltIn::AsRecorded);
            self.settings.reference = Reference::AsRecorded;
        }
        self.cache = None;
    }

    /// The recording's signals behind the shown traces (each trace's electrode and, for a
    /// bipolar montage, its reference), in recording order.
    pub fn shown_signals(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for (d, der) in self.traces.spec.derivations.iter().enumerate() {
            if self.lanes.hidden.contains(&d) {
                continue;
            }
            out.extend(der.sources());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Writes the visible window (the whole data records covering it) of the shown traces'
    /// signals, with the events inside it, as EDF+/BDF+ at `path`.
    pub fn export_visible_clip(&self, path: &std::path::Path) -> Result<(), String> {
        use crate::recording::edf_write::{Clip, write_clip};
        let clip = Clip::covering(&self.rec, self.visible_span(), self.shown_signals());
        write_clip(&self.rec, path, self.events.list(), Some(&clip)).map_err(|e| e.to_string())
    }

    /// The unit of trace `d`.
    fn trace_unit(&self, d: usize) -> &str {
        self.rec.signals[self.traces.spec.derivations[d].plus]
            .unit
            .trim()
    }

    /// Asks for "Fit" at the next frame (as the button and the F key do).
    pub fn request_fit(&mut self) {
        self.fit_requested = true;
    }

    fn screen(&mut self, columns: usize) -> Arc<Screen> {
        let key = CacheKey {
            t0: self.t0,
            span: self.settings.span_s,
            columns,
            exact_possible: self.traces.overview_ready(),
        };
        if let Some((k, s)) = &self.cache
            && *k == key
            && (s.exact || !key.exact_possible)
        {
            return s.clone();
        }
        let s = Arc::new(self.traces.screen(self.t0, self.settings.span_s, columns));
        self.cache = Some((key, s.clone()));
        s
    }
}
