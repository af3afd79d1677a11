//! No edit lost: opening another recording, or closing the window, with unsaved events or
//! bad-channel marks asks to save, discard or cancel; and every few seconds the edits are
//! written to an autosave file beside the settings, which a clean exit, a save or a discard
//! removes, so that one found at the next start was left by a crash and is offered back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eframe::egui;
use serde::{Deserialize, Serialize};

use super::browser::Browser;
use super::{EdeApp, OpenOptions};
use crate::recording::{Annotation, Recording};

/// How often edits are written to the autosave, at most.
const AUTOSAVE_EVERY: Duration = Duration::from_secs(2);
const AUTOSAVE_FILE: &str = "autosave.json";

/// What waits for the user's answer.
pub enum Pending {
    /// Show this recording (opened from `path`, when it came from a file).
    Show(Box<Recording>),
    Quit,
}

/// The edits of one recording as the autosave keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Autosave {
    /// The recording's file; `None` for the demo.
    pub file: Option<PathBuf>,
    /// When it was written (UTC).
    pub saved_at: String,
    /// Every event, when they were edited.
    pub events: Option<Vec<SavedEvent>>,
    /// The labels of the channels marked bad (when the marks were changed).
    pub bad: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedEvent {
    pub onset: f64,
    pub duration: f64,
    pub text: String,
}

impl SavedEvent {
    pub fn annotation(&self) -> Annotation {
        Annotation {
            onset: self.onset,
            duration: self.duration,
            text: self.text.clone(),
        }
    }
}

/// The autosave, the question of unsaved edits and the offer of a crash's edits.
#[derive(Default)]
pub struct Guard {
    /// Where the autosave lives; `None`: no autosave (tests, screenshots).
    dir: Option<PathBuf>,
    last_write: Option<(Instant, Autosave)>,
    pub pending: Option<Pending>,
    /// A crash's edits found at start, until recovered or discarded.
    pub recovered: Option<Autosave>,
    /// The user chose to close without saving.
    pub close_confirmed: bool,
}

impl Guard {
    /// Autosaves into `dir` from now on, and takes up the edits a crash left there.
    pub fn enable(&mut self, dir: PathBuf) {
        let path = dir.join(AUTOSAVE_FILE);
        self.recovered = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        self.dir = Some(dir);
    }

    fn path(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(AUTOSAVE_FILE))
    }

    /// Writes the browser's edits when they changed (at most every `AUTOSAVE_EVERY`), and
    /// removes the autosave when there are none. A crash's edits not yet answered for are
    /// left alone.
    pub fn tick(&mut self, browser: &Browser) {
        let Some(path) = self.path().filter(|_| self.recovered.is_none()) else {
            return;
        };
        let now = edits_of(browser);
        match now {
            None => {
                if self.last_write.take().is_some() {
                    let _ = std::fs::remove_file(&path);
                }
            }
            Some(edits) => {
                let changed = self.last_write.as_ref().is_none_or(|(_, last)| {
                    (last.events.as_ref(), last.bad.as_ref())
                        != (edits.events.as_ref(), edits.bad.as_ref())
                });
                let due = self
                    .last_write
                    .as_ref()
                    .is_none_or(|(at, _)| at.elapsed() >= AUTOSAVE_EVERY);
                if changed && due {
                    let json = serde_json::to_string_pretty(&edits).unwrap_or_default();
                    if let Some(dir) = &self.dir {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    if crate::recording::write_whole(&path, json.as_bytes()).is_ok() {
                        self.last_write = Some((Instant::now(), edits));
                    }
                }
            }
        }
    }

    /// Forgets the autosave (the edits were saved or discarded, or the app closes cleanly).
    pub fn clear(&mut self) {
        if let Some(path) = self.path() {
            let _ = std::fs::remove_file(path);
        }
        self.last_write = None;
    }
}

/// The browser's unsaved edits, or `None`.
pub fn edits_of(browser: &Browser) -> Option<Autosave> {
    let events = browser.events.unsaved.then(|| {
        (browser.events.list().iter())
            .map(|a| SavedEvent {
                onset: a.onset,
                duration: a.duration,
                text: a.text.clone(),
            })
            .collect()
    });
    let bad = browser.bad_marks_changed().then(|| {
        (browser.rec.signals.iter())
            .filter(|s| s.bad)
            .map(|s| s.label.clone())
            .collect()
    });
    if events.is_none() && bad.is_none() {
        return None;
    }
    Some(Autosave {
        file: browser.rec.path.clone(),
        saved_at: chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        events,
        bad,
    })
}

/// Puts `edits` back into `browser` (the recording they belong to must be open).
pub fn restore(browser: &mut Browser, edits: &Autosave) {
    if let Some(events) = &edits.events {
        browser
            .events
            .replace_all(events.iter().map(SavedEvent::annotation).collect());
    }
    if let Some(bad) = &edits.bad {
        for c in 0..browser.rec.signals.len() {
            let is_bad = bad.contains(&browser.rec.signals[c].label);
            browser.set_bad(c, is_bad);
        }
    }
}

/// What the edits are, in words: "the events, and Fp1 and T7 marked bad".
pub fn describe(edits: &Autosave) -> String {
    let mut parts = Vec::new();
    if let Some(e) = &edits.events {
        parts.push(format!("the events ({} in all)", e.len()));
    }
    if let Some(b) = &edits.bad {
        parts.push(if b.is_empty() {
            "the bad channels (none now)".to_string()
        } else {
            format!("the bad channels ({})", b.join(", "))
        });
    }
    parts.join(" and ")
}

/// Saves the browser's edits beside its recording: the events as `<stem>_events.tsv` and the
/// channels with their status as `<stem>_channels.tsv` (BIDS' sidecars; `<stem>` is the BIDS
/// run's, or the file's name without its extension). Returns what was written.
pub fn save_beside(browser: &mut Browser) -> Result<String, String> {
    let Some(path) = browser.rec.path.clone() else {
        return Err("the demo recording has no folder to save beside".into());
    };
    let stem = sidecar_stem(&path);
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut written = Vec::new();
    if browser.events.unsaved {
        let p = dir.join(format!("{stem}_events.tsv"));
        browser.events.save_tsv(&p)?;
        written.push(p);
    }
    if browser.bad_marks_changed() {
        let p = dir.join(format!("{stem}_channels.tsv"));
        let mut tsv = String::from("name\ttype\tunits\tstatus\n");
        for s in &browser.rec.signals {
            let status = if s.bad { "bad" } else { "good" };
            tsv += &format!(
                "{}\t{}\t{}\t{status}\n",
                s.label.replace(['\t', '\n'], " "),
                s.kind.bids_name(),
                s.unit
            );
        }
        super::export::write_atomic(&p, tsv.as_bytes())?;
        browser.bad_marks_saved();
        written.push(p);
    }
    Ok(format!(
        "saved {}",
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    ))
}

fn sidecar_stem(path: &Path) -> String {
    crate::recording::bids::Run::of_file(path)
        .map(|r| r.stem())
        .unwrap_or_else(|| {
            path.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into()
        })
}

/// The question, while something waits for it: returns the answer once given.
pub enum Answer {
    Save,
    Discard,
    Cancel,
}

pub fn ask(ctx: &egui::Context, browser: &Browser) -> Option<Answer> {
    let edits = edits_of(browser)?;
    let mut answer = None;
    egui::Modal::new(egui::Id::unique("unsaved edits")).show(ctx, |ui| {
        ui.heading("Unsaved edits");
        ui.label(format!(
            "{} of {} changed and are not saved.",
            capitalised(&describe(&edits)),
            browser.rec.display_name()
        ));
        ui.add_space(8.0);
        ui.horizontal(|ui| {
            let beside = browser.rec.path.is_some();
            if ui
                .add_enabled(beside, egui::Button::new("Save beside the recording"))
                .on_hover_text("the events as _events.tsv, the channels as _channels.tsv")
                .clicked()
            {
                answer = Some(Answer::Save);
            }
            if ui.button("Discard").clicked() {
                answer = Some(Answer::Discard);
            }
            if ui.button("Cancel").clicked() {
                answer = Some(Answer::Cancel);
            }
        });
    });
    answer
}

/// The offer of a crash's edits: true to recover, false to discard, `None` while unanswered.
pub fn offer(ctx: &egui::Context, edits: &Autosave) -> Option<bool> {
    let mut answer = None;
    egui::Modal::new(egui::Id::unique("recover edits")).show(ctx, |ui| {
        ui.heading("Recover unsaved edits?");
        let file = edits
            .file
            .as_ref()
            .map_or("the demo recording".into(), |p| p.display().to_string());
        ui.label(format!(
            "ede stopped at {} with {} of {file} unsaved.",
            edits.saved_at,
            describe(edits)
        ));
        ui.horizontal(|ui| {
            if ui.button("Recover").clicked() {
                answer = Some(true);
            }
            if ui.button("Discard").clicked() {
                answer = Some(false);
            }
        });
    });
    answer
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

impl EdeApp {
    /// Autosaves the edits, asks before unsaved edits would be dropped (another recording, a
    /// closing window) and offers a crash's edits back.
    pub(super) fn guard_edits(&mut self, ctx: &egui::Context) {
        self.guard.tick(&self.browser);
        let edits = edits_of(&self.browser).is_some();
        if ctx.input(|i| i.viewport().close_requested()) && edits && !self.guard.close_confirmed {
            ctx.send_viewport_cmd(egui::ViewportCommand::CancelClose);
            self.guard.pending = Some(Pending::Quit);
        }
        if self.guard.pending.is_some() {
            let go_on = match (edits, ask(ctx, &self.browser)) {
                (false, _) | (_, Some(Answer::Discard)) => true,
                (true, Some(Answer::Save)) => match save_beside(&mut self.browser) {
                    Ok(saved) => {
                        self.browser.message = Some(Ok(saved));
                        true
                    }
                    Err(e) => {
                        self.browser.message = Some(Err(e));
                        self.guard.pending = None;
                        false
                    }
                },
                (true, Some(Answer::Cancel)) => {
                    self.guard.pending = None;
                    false
                }
                (true, None) => false,
            };
            if go_on {
                self.guard.clear();
                match self.guard.pending.take() {
                    Some(Pending::Show(rec)) => self.show_now(*rec),
                    Some(Pending::Quit) => {
                        self.guard.close_confirmed = true;
                        ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                    }
                    None => {}
                }
            }
        }
        if let Some(edits) = self.guard.recovered.clone()
            && let Some(recover) = offer(ctx, &edits)
        {
            self.guard.recovered = None;
            if !recover {
                self.guard.clear();
                return;
            }
            if edits.file.is_some() && edits.file != self.browser.rec.path {
                let path = edits.file.clone().unwrap_or_default();
                match crate::recording::bids::open_file(&path, &OpenOptions::default()) {
                    Ok(rec) => self.show_now(rec),
                    Err(e) => {
                        self.error = Some(format!("the edits' recording: {e}"));
                        return;
                    }
                }
            }
            restore(&mut self.browser, &edits);
        }
    }
}
