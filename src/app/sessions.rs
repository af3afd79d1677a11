//! The app's side of sessions (`browser::Session`): File > Save session and Open session, the
//! last state of each file kept in the settings, and the offer to restore it on reopening.

use eframe::egui;

use super::{EdeApp, OpenOptions, VIEWS, browser, unsaved};

impl EdeApp {
    /// The state of the open recording as a session, with the tab shown.
    pub fn session(&self) -> browser::Session {
        let mut s = self.browser.session();
        s.tab = self.view.map_or("browser", |k| VIEWS[k].id).to_string();
        s.views = self.view_parameters.clone();
        for (k, view) in self.views.iter().enumerate() {
            if let Some(v) = view {
                s.views.insert(VIEWS[k].id.to_string(), v.parameters());
            }
        }
        s.views.retain(|_, p| !p.is_null());
        s
    }

    /// Keeps the open recording's state among the last sessions (a file's only).
    pub(super) fn remember_session(&mut self) {
        let session = self.session();
        if session.file.is_none() {
            return;
        }
        self.settings
            .last_sessions
            .retain(|s| s.file != session.file);
        self.settings.last_sessions.insert(0, session);
        self.settings.last_sessions.truncate(20);
    }

    /// Opens a session: its recording (unless open) in its state. Unsaved edits of the open
    /// recording must be saved or discarded first.
    pub fn open_session(&mut self, session: &browser::Session) {
        if session.file != self.browser.rec.path {
            if unsaved::edits_of(&self.browser).is_some() {
                self.browser.message = Some(Err(
                    "save or discard the edits of the open recording before opening a session"
                        .into(),
                ));
                return;
            }
            let Some(path) = &session.file else {
                self.show_now(crate::recording::demo::demo_recording());
                return self.apply_session(session);
            };
            match crate::recording::bids::open_file(path, &OpenOptions::default()) {
                Ok(rec) => self.show_now(rec),
                Err(e) => {
                    self.error = Some(format!("the session's recording: {e}"));
                    return;
                }
            }
        }
        self.apply_session(session);
    }

    fn apply_session(&mut self, session: &browser::Session) {
        self.offered_session = None;
        self.browser.apply_session(session);
        for (id, parameters) in &session.views {
            let Some(k) = VIEWS.iter().position(|v| v.id == id) else {
                continue;
            };
            match &mut self.views[k] {
                Some(view) => view.set_parameters(parameters),
                None => {
                    self.view_parameters.insert(id.clone(), parameters.clone());
                }
            }
        }
        self.show_view(&session.tab);
    }

    /// The state a reopened file was last left in, offered in a bar under the menus.
    pub(super) fn offer_session(&mut self, ui: &mut egui::Ui) {
        let Some(session) = self.offered_session.clone() else {
            return;
        };
        let mut answer = None;
        egui::Panel::top("last session").show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.label(format!(
                    "Last time this recording was read in {} at {:.0} s.",
                    session.montage.name, session.start_s
                ));
                if ui.button("Restore that state").clicked() {
                    answer = Some(true);
                }
                if ui.button("Dismiss").clicked() {
                    answer = Some(false);
                }
            });
        });
        match answer {
            Some(true) => self.apply_session(&session),
            Some(false) => self.offered_session = None,
            None => {}
        }
    }
}
