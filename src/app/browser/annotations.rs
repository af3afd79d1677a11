//! The annotation side panel: the event editor, the list filtered by text, and jumps to the
//! previous or next match.

use eframe::egui;

use super::Browser;
use super::format::format_time;
use crate::app::events::EventAction;

impl Browser {
    /// Recomputes which annotations contain the filter text (any case) when it changed.
    fn refresh_annotation_matches(&mut self) {
        let filter = self.annotation_filter.trim().to_lowercase();
        let version = self.events.version;
        if (&self.annotation_matches.0, self.annotation_matches.1) != (&filter, version) {
            let matches = (self.events.list().iter().enumerate())
                .filter(|(_, a)| filter.is_empty() || a.text.to_lowercase().contains(&filter))
                .map(|(k, _)| k)
                .collect();
            self.annotation_matches = (filter, version, matches);
        }
    }

    /// Puts annotation time `t` near the left edge, as a click in the list does.
    fn jump_to(&mut self, t: f64) {
        self.t0 = t - 0.1 * self.settings.span_s;
        self.clamp_view();
    }

    pub(super) fn annotation_list(&mut self, ui: &mut egui::Ui) {
        match self.events.editor_ui(ui, &self.rec) {
            Some(EventAction::Jump(t)) => self.jump_to(t),
            Some(EventAction::SaveCopy(p)) => {
                let r = self.events.save_copy(&self.rec, &p);
                self.message = Some(r.map(|()| format!("saved {}", p.display())));
            }
            Some(EventAction::SaveTsv(p)) => {
                let r = self.events.save_tsv(&p);
                self.message = Some(r.map(|()| format!("saved {}", p.display())));
            }
            None => {}
        }
        // The menu forms of double-click and ctrl+drag: at the window's centre.
        ui.horizontal(|ui| {
            let label = self.events.shortcut(1).unwrap_or_else(|| "event".into());
            let centre = self.t0 + self.settings.span_s / 2.0;
            if ui
                .small_button("add at the centre")
                .on_hover_text("as a double-click on the traces")
                .clicked()
            {
                self.events.add(crate::recording::Annotation {
                    onset: centre,
                    duration: 0.0,
                    text: label.clone(),
                });
            }
            let channel = self.selected.map(|d| self.trace_label(d).to_string());
            if ui
                .add_enabled(
                    channel.is_some(),
                    egui::Button::new("… on the selected channel").small(),
                )
                .on_hover_text("as a ctrl+drag on its lane (click a label to select it)")
                .clicked()
                && let Some(ch) = channel
            {
                self.events.add(crate::recording::Annotation {
                    onset: centre,
                    duration: 0.0,
                    text: crate::recording::Annotation::on_channel(&label, &ch),
                });
            }
        });
        match &self.message {
            Some(Ok(m)) => {
                ui.small(m);
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            None => {}
        }
        ui.separator();
        self.refresh_annotation_matches();
        let total = self.events.list().len();
        let shown = self.annotation_matches.2.len();
        if shown == total {
            ui.heading(format!("Annotations ({total})"));
        } else {
            ui.heading(format!("Annotations ({shown} of {total})"));
        }
        let edit = ui.add(
            egui::TextEdit::singleline(&mut self.annotation_filter)
                .hint_text("filter, e.g. V or spindle")
                .desired_width(f32::INFINITY),
        );
        if edit.changed() {
            // The list above was made with the old text: show the new one's next frame.
            ui.ctx().request_repaint();
        }
        let (annotations, matches) = (self.events.list(), &self.annotation_matches.2);
        let onsets = || matches.iter().map(|&k| annotations[k].onset);
        // Previous/next matching annotation relative to where a jump puts one.
        let here = self.t0 + 0.1 * self.settings.span_s;
        let mut jump = None;
        ui.horizontal(|ui| {
            if ui.button("< Previous").clicked() {
                jump = onsets().filter(|&t| t < here - 1e-6).max_by(f64::total_cmp);
            }
            if ui.button("Next >").clicked() {
                jump = onsets().filter(|&t| t > here + 1e-6).min_by(f64::total_cmp);
            }
        });
        ui.separator();
        let (t0, t1) = (self.t0, self.t0 + self.settings.span_s);
        let mut select = None;
        egui::ScrollArea::vertical().show_rows(ui, 18.0, matches.len(), |ui, rows| {
            for &k in &matches[rows] {
                let a = &annotations[k];
                let visible = a.onset >= t0 && a.onset < t1;
                // A channel's event names its channel after the text, not EDF+'s "@@".
                let text = match a.channel() {
                    Some(c) => format!("{}  {} ({c})", format_time(a.onset), a.description()),
                    None => format!("{}  {}", format_time(a.onset), a.text),
                };
                let chosen = self.events.selected == Some(k);
                if ui.selectable_label(visible || chosen, text).clicked() {
                    jump = Some(a.onset);
                    select = Some(k);
                }
            }
        });
        if let Some(t) = jump {
            self.jump_to(t);
        }
        if select.is_some() {
            self.events.selected = select;
        }
    }
}
