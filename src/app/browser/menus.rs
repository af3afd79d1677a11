//! The browser's menus for the menu bar (montage, filter, channels, timebase, amplitude), its
//! status line, and the display filters' choices and description.

use eframe::egui::{self, Color32};

use super::MontageChoice;
use super::format::{fmt_value, format_span, format_time, hz, shown_in};
use super::{Browser, TIMEBASES_S};
use crate::app::lanes::PER_PAGE_CHOICES;
use crate::dsp::filter::{DisplayFilter, MAX_ORDER};
use crate::dsp::montage::{BuiltIn, Montage, Reference, mastoids};
use crate::recording::ChannelType;

impl Browser {
    /// Montage, reference, filter and timebase menus for the menu bar.
    pub fn menus(&mut self, ui: &mut egui::Ui) {
        ui.menu_button("Montage", |ui| self.montage_menu(ui));
        ui.menu_button("Reference", |ui| self.reference_menu(ui));
        ui.menu_button("Page", |ui| self.page_menu(ui));
        ui.menu_button("Filter", |ui| self.filter_menu(ui));
        let mut night = std::mem::take(&mut self.night);
        night.menu(self, ui);
        self.night = night;
        ui.menu_button("Channels", |ui| {
            if ui.button("Types and units…").clicked() {
                self.channels_open = true;
                ui.close();
            }
            let mut interpolate = self.rec.interpolate_bads;
            if ui
                .checkbox(&mut interpolate, "Interpolate bad channels")
                .on_hover_text(
                    "draw and analyse bad scalp electrodes as the spherical-spline interpolation \
                     of the good ones (MNE's interpolate_bads)",
                )
                .changed()
            {
                self.set_interpolate_bads(interpolate);
            }
            ui.separator();
            let labels = self.trace_labels();
            let kinds: Vec<ChannelType> = (self.traces.spec.derivations.iter())
                .map(|d| self.rec.signals[d.plus].kind)
                .collect();
            self.lanes.menu(ui, &labels, &kinds);
        });
        egui::ComboBox::from_id_salt("channels per page")
            .selected_text(match self.settings.channels_per_page {
                0 => "all channels".to_string(),
                n => format!("{n} channels"),
            })
            .show_ui(ui, |ui| {
                for n in PER_PAGE_CHOICES {
                    let text = if n == 0 {
                        "all".to_string()
                    } else {
                        n.to_string()
                    };
                    ui.selectable_value(&mut self.settings.channels_per_page, n, text);
                }
            })
            .response
            .on_hover_text(
                "lanes on one page (Shift+PageUp/PageDown, the wheel or the scrollbar move it)",
            );
        ui.separator();
        egui::ComboBox::from_label("per page")
            .selected_text(format_span(self.settings.span_s))
            .show_ui(ui, |ui| {
                let longest = self.total_s().max(1.0) * 1.01;
                for s in TIMEBASES_S.into_iter().filter(|&s| s <= longest) {
                    if ui
                        .selectable_label(self.settings.span_s == s, format_span(s))
                        .clicked()
                    {
                        self.settings.span_s = s;
                        self.clamp_view();
                    }
                }
                if ui.selectable_label(false, "whole recording").clicked() {
                    self.settings.span_s = self.total_s().max(0.1);
                    self.t0 = 0.0;
                }
            });
        if ui.button("Amplitude −").clicked() {
            self.settings.gain /= 1.25;
        }
        if ui.button("Amplitude +").clicked() {
            self.settings.gain *= 1.25;
        }
        if ui
            .button("Fit")
            .on_hover_text("scale each channel to its own range in this window (F)")
            .clicked()
        {
            self.fit_requested = true;
        }
        ui.toggle_value(&mut self.settings.show_annotations, "Annotations");
    }

    /// The filter of every channel, or of the channels of one type (right-click a label for a
    /// channel's own).
    fn filter_menu(&mut self, ui: &mut egui::Ui) {
        let id = ui.make_persistent_id("filter scope");
        let mut scope: Option<ChannelType> = ui.data_mut(|d| d.get_temp(id)).unwrap_or(None);
        ui.horizontal_wrapped(|ui| {
            ui.label("Filter");
            ui.selectable_value(&mut scope, None, "every channel");
            for kind in FILTER_TYPES {
                let own = self.settings.type_filters.iter().any(|(k, _)| *k == kind);
                let text = if own {
                    format!("{} *", kind.name())
                } else {
                    kind.name().to_string()
                };
                ui.selectable_value(&mut scope, Some(kind), text);
            }
        });
        ui.data_mut(|d| d.insert_temp(id, scope));
        ui.label("(right-click a channel's label for its own)");
        ui.separator();
        match scope {
            None => {
                let mut f = self.settings.filter;
                filter_choices(ui, &mut f);
                self.set_filter(f);
            }
            Some(kind) => {
                let current = (self.settings.type_filters.iter())
                    .find(|(k, _)| *k == kind)
                    .map(|(_, f)| *f);
                let mut own = current.is_some();
                ui.checkbox(
                    &mut own,
                    format!("{} channels their own filter", kind.name()),
                );
                let mut f = current.unwrap_or(self.settings.filter);
                if own {
                    filter_choices(ui, &mut f);
                }
                self.set_type_filter(kind, own.then_some(f));
            }
        }
    }

    /// The montages (F1-F12 in this order), and loading and saving montage files.
    fn montage_menu(&mut self, ui: &mut egui::Ui) {
        for (k, (choice, name)) in self.montage_choices().into_iter().enumerate() {
            let key = if k < 12 {
                format!("F{}", k + 1)
            } else {
                String::new()
            };
            let button =
                egui::Button::selectable(self.settings.montage == choice, name).shortcut_text(key);
            if ui.add(button).clicked() {
                self.set_montage(choice);
                ui.close();
            }
        }
        ui.separator();
        if ui.button("Edit montages…").clicked() {
            self.edit_montage();
            ui.close();
        }
        if ui
            .button("Load montage file… (.json, EDFbrowser .mtg)")
            .clicked()
        {
            ui.close();
            if let Some(path) = rfd::FileDialog::new()
                .add_filter("montage", &["json", "mtg"])
                .pick_file()
            {
                self.load_montage_file(&path);
            }
        }
        if ui.button("Save this montage as…").clicked() {
            ui.close();
            let m = &self.traces.spec.montage;
            if let Some(path) = rfd::FileDialog::new()
                .set_file_name(format!("{}.json", m.name))
                .add_filter("montage", &["json"])
                .save_file()
            {
                self.message = Some(
                    crate::app::export::write_atomic(&path, m.to_json().as_bytes())
                        .map(|()| format!("montage saved to {}", path.display())),
                );
            }
        }
        if let MontageChoice::User { user } = self.settings.montage.clone()
            && ui.button(format!("Forget \"{user}\"")).clicked()
        {
            self.settings.user_montages.retain(|m| m.name != user);
            self.set_montage(MontageChoice::BuiltIn(BuiltIn::AsRecorded));
            ui.close();
        }
    }

    /// A built-in montage by name, or a montage file (`--montage`).
    pub fn open_montage(&mut self, name: &str) {
        let path = std::path::Path::new(name);
        if path.is_file() {
            self.load_montage_file(path);
        } else if let Some(b) = BuiltIn::from_name(name) {
            self.set_montage(MontageChoice::BuiltIn(b));
        } else {
            self.message = Some(Err(format!(
                "no montage file or built-in montage {name:?} (built in: {})",
                BuiltIn::ALL.map(|b| b.name()).join(", ")
            )));
        }
    }

    /// Reads a montage file into the user's montages and shows it; what it cannot take over
    /// is said.
    pub fn load_montage_file(&mut self, path: &std::path::Path) {
        match Montage::load(path) {
            Ok((m, left_out)) => {
                let name = m.name.clone();
                self.add_user_montage(m);
                if self.message.as_ref().is_none_or(|m| m.is_ok()) {
                    self.message = Some(Ok(if left_out.is_empty() {
                        format!("montage \"{name}\" loaded")
                    } else {
                        format!(
                            "montage \"{name}\" loaded; left out {}",
                            left_out.join("; ")
                        )
                    }));
                }
            }
            Err(e) => self.message = Some(Err(e)),
        }
    }

    fn reference_menu(&mut self, ui: &mut egui::Ui) {
        ui.label("Re-references the EEG channels (other types never)");
        ui.separator();
        let has_mastoids = mastoids(&self.rec).is_some();
        let mut r = self.settings.reference.clone();
        ui.radio_value(&mut r, Reference::AsRecorded, "As recorded");
        ui.radio_value(&mut r, Reference::Average, "Average (good EEG channels)");
        ui.add_enabled_ui(has_mastoids, |ui| {
            ui.radio_value(
                &mut r,
                Reference::Mastoids,
                "Linked mastoids (A1/A2, M1/M2, TP9/TP10)",
            );
        });
        ui.horizontal(|ui| {
            ui.label("Channels:");
            let id = ui.make_persistent_id("reference channels");
            let mut text: String = ui.data_mut(|d| d.get_temp(id)).unwrap_or_else(|| match &r {
                Reference::Channels(c) => c.join(", "),
                _ => String::new(),
            });
            let edit = ui.add(
                egui::TextEdit::singleline(&mut text)
                    .hint_text("Cz or A1, A2")
                    .desired_width(90.0),
            );
            if edit.lost_focus()
                && ui.input(|i| i.key_pressed(egui::Key::Enter))
                && !text.trim().is_empty()
                && let Ok(parsed) = text.parse::<Reference>()
            {
                r = parsed;
            }
            ui.data_mut(|d| d.insert_temp(id, text));
        });
        self.set_reference(r);
    }

    pub fn status(&mut self, ui: &mut egui::Ui) {
        let rec = &self.rec;
        let what = match rec.signals.len() {
            0 => format!("{} annotations", rec.annotations.len()),
            n => format!("{n} signals"),
        };
        ui.label(format!(
            "{} · {} · {what} · {}",
            rec.display_name(),
            rec.format,
            format_span(rec.time_span_s())
        ));
        ui.separator();
        ui.label(format!(
            "{} – {}",
            self.clock(self.t0),
            self.clock(self.t0 + self.settings.span_s)
        ));
        ui.separator();
        let reference = match &self.traces.spec.reference {
            Reference::AsRecorded => String::new(),
            r => format!(" · ref {r}"),
        };
        let calibrated = self.settings.calibration.describe();
        if !calibrated.is_empty() {
            ui.label(calibrated);
            ui.separator();
        }
        // A derivation the recording cannot make is said on the page, not only on hover.
        let spec = &self.traces.spec;
        let left_out = match (spec.left_out.len(), &spec.problem) {
            (0, Some(_)) => " · not applied".to_string(),
            (0, None) => String::new(),
            (n, _) => format!(" · {n} left out"),
        };
        let text = format!("{}{reference}{left_out}", self.traces.spec.montage.name);
        let montage = match left_out.is_empty() {
            true => ui.label(text),
            false => ui.colored_label(egui::Color32::from_rgb(170, 60, 0), text),
        };
        if let Some(p) = &self.traces.spec.problem {
            montage.on_hover_text(p);
        }
        ui.separator();
        let own = &self.traces.spec.channel_filters;
        let by_type: String = (self.settings.type_filters.iter())
            .map(|(k, f)| format!(" · {}: {}", k.name(), f.describe()))
            .collect();
        let text = match own.len() {
            0 => format!("{}{by_type}", self.settings.filter.describe()),
            n => format!(
                "{}{by_type} ({n} channel(s) their own)",
                self.settings.filter.describe()
            ),
        };
        let details: Vec<String> = (own.iter())
            .map(|(&d, f)| format!("{}: {}", self.trace_label(d), f.describe()))
            .collect();
        let label = ui.label(text);
        if !details.is_empty() {
            label.on_hover_text(details.join("\n"));
        }
        if let Some((a, b)) = self.selection {
            ui.separator();
            ui.label(format!(
                "selection {} – {} ({})",
                format_time(a),
                format_time(b),
                format_span(b - a)
            ))
            .on_hover_text("shift+drag selects a time range; Esc clears it");
            ui.toggle_value(&mut self.show_stats, "statistics")
                .on_hover_text("per channel: mean, SD, min, max, peak to peak, RMS");
        }
        if let Some(m) = self.measurement() {
            ui.separator();
            let dv = match m.dv {
                Some(v) => {
                    let (v, unit) = shown_in(v, self.trace_unit(self.measure[1].trace));
                    format!(" · Δ {} {unit}", fmt_value(v))
                }
                None => String::new(),
            };
            ui.label(format!("Δt {:.3} s · {:.2} Hz{dv}", m.dt, m.hz))
                .on_hover_text("ctrl+click two points on the traces; Esc clears");
        }
        if !self.traces.overview_ready() {
            ui.separator();
            ui.add(
                egui::ProgressBar::new(self.traces.overview_progress())
                    .desired_width(140.0)
                    .text("building overview"),
            );
        }
        if self.file_bytes > 64 << 20
            && let Some(m) = ProcessMemory::now()
        {
            ui.separator();
            ui.label(format!("memory {} MB", m.own >> 20))
                .on_hover_text(format!(
                    "{} MB of ede's own, plus {} MB of the file's pages the system keeps cached \
                 (handed back after the overview; reclaimed whenever memory is needed)",
                    m.own >> 20,
                    m.file_pages >> 20
                ));
        }
        if !rec.warnings.is_empty() {
            ui.separator();
            ui.colored_label(
                Color32::from_rgb(200, 140, 0),
                // No warning sign: egui's fonts have none (a UI test drew tofu and failed).
                match rec.warnings.len() {
                    1 => "1 warning".to_string(),
                    n => format!("{n} warnings"),
                },
            )
            .on_hover_text(rec.warnings.join("\n"));
        }
    }
}

/// The channel types a filter can be set for apart from every channel's.
const FILTER_TYPES: [ChannelType; 4] = [
    ChannelType::Eeg,
    ChannelType::Eog,
    ChannelType::Emg,
    ChannelType::Ecg,
];

/// The filter as typed: high-pass and low-pass corners and orders, a band-stop, the mains notch
/// and the direction, with the usual corners one click away.
pub(super) fn filter_choices(ui: &mut egui::Ui, f: &mut DisplayFilter) {
    let corner = |ui: &mut egui::Ui,
                  name: &str,
                  on: &mut Option<f32>,
                  order: &mut u8,
                  presets: &[f32],
                  default: f32| {
        ui.horizontal(|ui| {
            let mut enabled = on.is_some();
            ui.checkbox(&mut enabled, name);
            let mut hz_value = on.unwrap_or(default);
            ui.add_enabled(
                enabled,
                egui::DragValue::new(&mut hz_value)
                    .speed(0.05)
                    .range(0.01..=5000.0)
                    .suffix(" Hz"),
            );
            ui.add_enabled(
                enabled,
                egui::DragValue::new(order)
                    .range(1..=MAX_ORDER)
                    .prefix("order "),
            );
            *on = enabled.then_some(hz_value);
        });
        ui.horizontal(|ui| {
            for &p in presets {
                if ui.selectable_label(*on == Some(p), hz(Some(p))).clicked() {
                    *on = Some(p);
                }
            }
            if ui.selectable_label(on.is_none(), "off").clicked() {
                *on = None;
            }
        });
    };
    corner(
        ui,
        "High-pass",
        &mut f.highpass,
        &mut f.highpass_order,
        &[0.1, 0.3, 0.5, 1.0, 5.0],
        0.5,
    );
    ui.separator();
    corner(
        ui,
        "Low-pass",
        &mut f.lowpass,
        &mut f.lowpass_order,
        &[15.0, 35.0, 40.0, 70.0],
        35.0,
    );
    ui.separator();
    ui.horizontal(|ui| {
        let mut enabled = f.bandstop.is_some();
        ui.checkbox(&mut enabled, "Band-stop");
        let [mut lo, mut hi] = f.bandstop.unwrap_or([45.0, 55.0]);
        ui.add_enabled(
            enabled,
            egui::DragValue::new(&mut lo)
                .speed(0.1)
                .range(0.01..=5000.0),
        );
        ui.label("–");
        ui.add_enabled(
            enabled,
            egui::DragValue::new(&mut hi)
                .speed(0.1)
                .range(0.01..=5000.0)
                .suffix(" Hz"),
        );
        ui.add_enabled(
            enabled,
            egui::DragValue::new(&mut f.bandstop_order)
                .range(1..=MAX_ORDER)
                .prefix("order "),
        );
        f.bandstop = enabled.then_some([lo, hi]);
    });
    ui.separator();
    ui.horizontal(|ui| {
        ui.label("Notch");
        for n in [None, Some(50.0), Some(60.0)] {
            ui.radio_value(&mut f.notch, n, hz(n));
        }
        ui.checkbox(&mut f.notch_harmonics, "harmonics");
    });
    ui.separator();
    ui.horizontal(|ui| {
        ui.radio_value(&mut f.zero_phase, false, "causal")
            .on_hover_text("one direction, as clinical viewers draw: no look-ahead, some delay");
        ui.radio_value(&mut f.zero_phase, true, "zero phase")
            .on_hover_text("forward and backward: no delay, twice the attenuation");
    });
}

/// The process's resident memory, split as `top` does not: its own (heap, stacks) and the
/// pages of mapped files, which the system may take back at any time.
struct ProcessMemory {
    own: u64,
    file_pages: u64,
}

impl ProcessMemory {
    /// From /proc/self/status, read at most once a second (the status line draws every frame).
    fn now() -> Option<Self> {
        use std::sync::Mutex;
        use std::time::Instant;
        static LAST: Mutex<Option<(Instant, u64, u64)>> = Mutex::new(None);
        let mut last = LAST.lock().ok()?;
        if last.is_none_or(|(t, _, _)| t.elapsed().as_secs_f64() > 1.0) {
            let text = std::fs::read_to_string("/proc/self/status").ok()?;
            let kb = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                    .map(|k| k * 1024)
            };
            let own = kb("RssAnon:")? + kb("RssShmem:").unwrap_or(0);
            *last = Some((Instant::now(), own, kb("RssFile:")?));
        }
        let (_, own, file_pages) = (*last)?;
        Some(ProcessMemory { own, file_pages })
    }
}
