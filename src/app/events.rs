//! The reviewer's events: the recording's annotations as an editable list (add, edit, move,
//! delete, each undoable), saved into a copy of the recording as EDF+/BDF+ annotations or as a
//! BIDS-style events TSV beside it. The recording itself is never written to.

use std::path::{Path, PathBuf};

use eframe::egui;

use crate::recording::{Annotation, Recording};

/// At most this many steps can be undone.
const UNDO_DEPTH: usize = 200;

pub struct Events {
    list: Vec<Annotation>,
    undo: Vec<Vec<Annotation>>,
    redo: Vec<Vec<Annotation>>,
    /// The event being edited (an index in `list`).
    pub selected: Option<usize>,
    /// Changed since opened or last saved.
    pub unsaved: bool,
    /// The labels keys 1 to 9 add, comma-separated as typed.
    pub shortcuts: String,
    /// Counts changes, so that views caching over the list know when to look again.
    pub version: u64,
}

/// What the event editor asks of the browser.
pub enum EventAction {
    Jump(f64),
    SaveCopy(PathBuf),
    SaveTsv(PathBuf),
}

impl Events {
    pub fn new(annotations: Vec<Annotation>) -> Self {
        let mut list = annotations;
        list.sort_by(|a, b| a.onset.total_cmp(&b.onset));
        Events {
            list,
            undo: Vec::new(),
            redo: Vec::new(),
            selected: None,
            unsaved: false,
            shortcuts: "spike, sharp wave, seizure, artifact".into(),
            version: 0,
        }
    }

    pub fn list(&self) -> &[Annotation] {
        &self.list
    }

    /// The label key `k` (1 to 9) adds.
    pub fn shortcut(&self, k: usize) -> Option<String> {
        let label = self.shortcuts.split(',').nth(k.checked_sub(1)?)?.trim();
        (!label.is_empty()).then(|| label.to_string())
    }

    /// Remembers the list as it is, as one undo step.
    pub fn checkpoint(&mut self) {
        self.undo.push(self.list.clone());
        if self.undo.len() > UNDO_DEPTH {
            self.undo.remove(0);
        }
        self.redo.clear();
    }

    /// Applies a change without a new undo step (during a drag or while typing, after a
    /// `checkpoint`), keeps the list in time order and the changed event selected.
    fn apply(&mut self, at: Option<usize>, value: Option<Annotation>) {
        match (at, &value) {
            (Some(i), Some(a)) if i < self.list.len() => self.list[i] = a.clone(),
            (Some(i), None) if i < self.list.len() => {
                self.list.remove(i);
            }
            (None, Some(a)) => self.list.push(a.clone()),
            _ => return,
        }
        self.list.sort_by(|a, b| a.onset.total_cmp(&b.onset));
        self.selected = value.and_then(|v| self.list.iter().position(|a| *a == v));
        self.unsaved = true;
        self.version += 1;
    }

    pub fn add(&mut self, event: Annotation) {
        self.checkpoint();
        self.apply(None, Some(event));
    }

    /// Replaces event `i` (an edit, or a move), as one undo step.
    pub fn set(&mut self, i: usize, event: Annotation) {
        self.checkpoint();
        self.apply(Some(i), Some(event));
    }

    /// Replaces event `i` within the current undo step (see `checkpoint`).
    pub fn set_quietly(&mut self, i: usize, event: Annotation) {
        self.apply(Some(i), Some(event));
    }

    pub fn delete(&mut self, i: usize) {
        self.checkpoint();
        self.apply(Some(i), None);
    }

    /// Replaces every event (edits recovered after a crash), as one undo step.
    pub fn replace_all(&mut self, mut list: Vec<Annotation>) {
        self.checkpoint();
        list.sort_by(|a, b| a.onset.total_cmp(&b.onset));
        self.list = list;
        self.selected = None;
        self.unsaved = true;
        self.version += 1;
    }

    pub fn undo(&mut self) -> bool {
        self.step(true)
    }

    pub fn redo(&mut self) -> bool {
        self.step(false)
    }

    fn step(&mut self, back: bool) -> bool {
        let (from, to) = if back {
            (&mut self.undo, &mut self.redo)
        } else {
            (&mut self.redo, &mut self.undo)
        };
        let Some(list) = from.pop() else {
            return false;
        };
        to.push(std::mem::replace(&mut self.list, list));
        self.selected = None;
        self.unsaved = true;
        self.version += 1;
        true
    }

    /// The BIDS events table: onset, duration (seconds), trial_type.
    pub fn tsv(&self) -> String {
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        // BIDS' optional `channel` column, where any event belongs to a channel.
        let channels = self.list.iter().any(|a| a.channel().is_some());
        let mut out = String::from("onset\tduration\ttrial_type");
        out += if channels { "\tchannel\n" } else { "\n" };
        for a in &self.list {
            out += &format!("{:.6}\t{:.6}\t", a.onset, a.duration);
            if channels {
                let channel = a.channel().map_or("n/a".into(), clean);
                out += &format!("{}\t{channel}\n", clean(a.description()));
            } else {
                out += &format!("{}\n", clean(&a.text));
            }
        }
        out
    }

    /// Writes the events into a copy of `rec` (EDF+/BDF+) at `path`.
    pub fn save_copy(&mut self, rec: &Recording, path: &Path) -> Result<(), String> {
        crate::recording::edf_write::write_with_annotations(rec, path, &self.list)
            .map_err(|e| e.to_string())?;
        self.unsaved = false;
        Ok(())
    }

    /// Writes the events as a TSV file at `path`.
    pub fn save_tsv(&mut self, path: &Path) -> Result<(), String> {
        super::export::write_atomic(path, self.tsv().as_bytes())?;
        self.unsaved = false;
        Ok(())
    }

    /// The editor above the annotation list: the selected event's text, onset and duration,
    /// delete, undo, redo, the shortcut labels and saving.
    pub fn editor_ui(&mut self, ui: &mut egui::Ui, rec: &Recording) -> Option<EventAction> {
        let mut action = None;
        ui.horizontal(|ui| {
            if ui
                .add_enabled(!self.undo.is_empty(), egui::Button::new("Undo"))
                .clicked()
            {
                self.undo();
            }
            if ui
                .add_enabled(!self.redo.is_empty(), egui::Button::new("Redo"))
                .clicked()
            {
                self.redo();
            }
            ui.menu_button("Save…", |ui| {
                let stem = rec
                    .path
                    .as_deref()
                    .and_then(Path::file_stem)
                    .map_or("recording".into(), |s| s.to_string_lossy().to_string());
                let copy_ext = rec.format.edf_family();
                if let Some(ext) = copy_ext
                    && ui.button("a copy with these events (EDF+/BDF+)…").clicked()
                {
                    ui.close();
                    if let Some(p) = save_dialog(rec, &format!("{stem}_events.{ext}"), ext) {
                        action = Some(EventAction::SaveCopy(p));
                    }
                }
                if ui.button("events TSV beside the recording…").clicked() {
                    ui.close();
                    if let Some(p) = save_dialog(rec, &format!("{stem}_events.tsv"), "tsv") {
                        action = Some(EventAction::SaveTsv(p));
                    }
                }
            });
            if self.unsaved {
                ui.colored_label(egui::Color32::from_rgb(200, 120, 0), "unsaved");
            }
        });
        ui.horizontal(|ui| {
            ui.label("keys 1-9:");
            ui.add(egui::TextEdit::singleline(&mut self.shortcuts).desired_width(f32::INFINITY))
                .on_hover_text(
                    "labels, comma-separated; a key adds its label at the cursor; \
                     double-click adds the first",
                );
        });
        let Some(i) = self.selected.filter(|&i| i < self.list.len()) else {
            ui.small("double-click the traces or press 1-9 to add an event; alt+drag moves one");
            return action;
        };
        let mut a = self.list[i].clone();
        let mut changed = false;
        let mut started = false;
        ui.horizontal(|ui| {
            let r = ui.add(egui::TextEdit::singleline(&mut a.text).desired_width(140.0));
            started |= r.gained_focus();
            changed |= r.changed();
            if ui.button("Delete").clicked() {
                self.delete(i);
            }
        });
        if i >= self.list.len() || self.selected != Some(i) {
            return action;
        }
        ui.horizontal(|ui| {
            let r = ui.add(
                egui::DragValue::new(&mut a.onset)
                    .speed(0.01)
                    .range(0.0..=rec.time_span_s())
                    .prefix("at ")
                    .suffix(" s"),
            );
            started |= r.gained_focus() || r.drag_started();
            changed |= r.changed();
            let r = ui.add(
                egui::DragValue::new(&mut a.duration)
                    .speed(0.01)
                    .range(0.0..=rec.time_span_s())
                    .prefix("lasting ")
                    .suffix(" s"),
            );
            started |= r.gained_focus() || r.drag_started();
            changed |= r.changed();
            if ui.button("Go").clicked() {
                action = Some(EventAction::Jump(a.onset));
            }
        });
        if started {
            self.checkpoint();
        }
        if changed {
            self.set_quietly(i, a);
        }
        action
    }
}

fn save_dialog(rec: &Recording, name: &str, ext: &str) -> Option<PathBuf> {
    let mut d = rfd::FileDialog::new()
        .set_file_name(name)
        .add_filter(ext, &[ext]);
    if let Some(dir) = rec.path.as_deref().and_then(Path::parent) {
        d = d.set_directory(dir);
    }
    d.save_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(onset: f64, text: &str) -> Annotation {
        Annotation {
            onset,
            duration: 0.0,
            text: text.into(),
        }
    }

    #[test]
    fn edits_keep_time_order_and_undo_redo_step_by_step() {
        let mut e = Events::new(vec![ev(5.0, "b"), ev(1.0, "a")]);
        assert_eq!(e.list()[0].text, "a");
        e.add(ev(3.0, "spike"));
        assert_eq!(e.selected, Some(1));
        e.set(1, ev(9.0, "spike"));
        assert_eq!((e.selected, e.list()[2].text.as_str()), (Some(2), "spike"));
        e.delete(0);
        assert_eq!(e.list().len(), 2);
        assert!(e.unsaved);
        assert!(e.undo() && e.list().len() == 3);
        assert!(e.undo() && e.list()[1].onset == 3.0);
        assert!(e.undo() && e.list().len() == 2);
        assert!(!e.undo());
        assert!(e.redo() && e.list().len() == 3);
        e.add(ev(0.5, "new"));
        assert!(!e.redo(), "a new change drops the redo steps");
        assert_eq!(e.shortcut(2).as_deref(), Some("sharp wave"));
        assert_eq!(e.shortcut(9), None);
        let tsv = e.tsv();
        assert!(
            tsv.starts_with("onset\tduration\ttrial_type\n0.500000\t0.000000\tnew\n"),
            "{tsv}"
        );
    }
}
