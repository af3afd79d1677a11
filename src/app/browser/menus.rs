//! The browser's menus for the menu bar (montage, filter, channels, timebase, amplitude), its
//! status line, and the display filters' choices and description.

use eframe::egui::{self, Color32};

use super::format::{fmt_value, format_span, format_time, hz, shown_in};
use super::{Browser, TIMEBASES_S};
use crate::app::lanes::PER_PAGE_CHOICES;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::MontageKind;
use crate::recording::ChannelType;

impl Browser {
    /// Montage, filter and timebase menus for the menu bar.
    pub fn menus(&mut self, ui: &mut egui::Ui) {
        let before = (self.settings.montage, self.settings.filter);
        ui.menu_button("Montage", |ui| {
            for m in MontageKind::ALL {
                let available = crate::dsp::montage::derivations(&self.rec, m).is_some();
                ui.add_enabled_ui(available, |ui| {
                    ui.radio_value(&mut self.settings.montage, m, m.name());
                });
            }
        });
        ui.menu_button("Filter", |ui| {
            ui.label("Every channel (right-click a channel's label for its own)");
            ui.separator();
            filter_choices(ui, &mut self.settings.filter);
        });
        ui.menu_button("Channels", |ui| {
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
        ui.toggle_value(&mut self.settings.overlap, "Overlap")
            .on_hover_text("let traces leave their lanes (off: each is clipped to its own)");
        ui.toggle_value(&mut self.settings.show_annotations, "Annotations");
        if before != (self.settings.montage, self.settings.filter) {
            self.rebuild(before.0 != self.settings.montage);
        }
    }

    pub fn status(&mut self, ui: &mut egui::Ui) {
        let rec = &self.rec;
        ui.label(format!(
            "{} · {} · {} signals · {}",
            rec.display_name(),
            rec.format,
            rec.signals.len(),
            format_span(rec.duration_s())
        ));
        ui.separator();
        ui.label(format!(
            "{} – {}",
            self.clock(self.t0),
            self.clock(self.t0 + self.settings.span_s)
        ));
        ui.separator();
        ui.label(self.traces.spec.montage.name());
        ui.separator();
        let own = &self.traces.spec.channel_filters;
        let text = match own.len() {
            0 => describe_filter(&self.settings.filter),
            n => format!(
                "{} ({n} channel(s) their own)",
                describe_filter(&self.settings.filter)
            ),
        };
        let details: Vec<String> = (own.iter())
            .map(|(&d, f)| format!("{}: {}", self.trace_label(d), describe_filter(f)))
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

/// High-pass, low-pass and notch choices, as in the Filter menu.
pub(super) fn filter_choices(ui: &mut egui::Ui, f: &mut DisplayFilter) {
    ui.label("High-pass");
    for hp in [None, Some(0.1), Some(0.5), Some(1.0), Some(5.0)] {
        ui.radio_value(&mut f.highpass, hp, hz(hp));
    }
    ui.separator();
    ui.label("Low-pass");
    for lp in [None, Some(15.0), Some(35.0), Some(70.0)] {
        ui.radio_value(&mut f.lowpass, lp, hz(lp));
    }
    ui.separator();
    ui.label("Notch");
    for n in [None, Some(50.0), Some(60.0)] {
        ui.radio_value(&mut f.notch, n, hz(n));
    }
}

/// "HP 0.5 Hz · LP 35 Hz · notch 50 Hz", or "no filter".
pub fn describe_filter(f: &DisplayFilter) -> String {
    let parts: Vec<String> = [("HP", f.highpass), ("LP", f.lowpass), ("notch", f.notch)]
        .iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name} {v} Hz")))
        .collect();
    if parts.is_empty() {
        "no filter".into()
    } else {
        parts.join(" · ")
    }
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
