//! Choosing a file or folder to open: the system's dialog on a thread of its own (rfd blocks
//! while it is open and the window must keep drawing), and the typed path field where no
//! dialog can start.

use std::path::PathBuf;

use eframe::egui;

use super::EdeApp;

/// A dialog that answers "nothing chosen" faster than this could not be shown at all.
const NO_DIALOG: std::time::Duration = std::time::Duration::from_millis(400);

/// What a chosen path is for.
#[derive(Clone, Copy, PartialEq)]
pub enum Purpose {
    /// A recording (or a BIDS folder) to open.
    Open,
    /// An annotation file whose events join the open recording's (File > Load annotations).
    Annotations,
}

/// A dialog open on its own thread.
pub(super) struct Pending {
    answer: std::sync::mpsc::Receiver<Option<PathBuf>>,
    since: std::time::Instant,
    purpose: Purpose,
}

impl EdeApp {
    /// Opens the system's file dialog on a thread: rfd blocks while it is open, and the window
    /// must keep drawing (the desktop portal, or zenity where there is none).
    pub(super) fn start_dialog(&mut self, purpose: Purpose) {
        self.spawn_dialog(purpose, move || {
            let extensions: Vec<&str> = (crate::recording::READERS.iter())
                .flat_map(|r| r.extensions.iter().copied())
                .collect();
            let title = match purpose {
                Purpose::Open => "Recordings",
                Purpose::Annotations => "Annotations (EDF+, BDF+, BIDS events, ...)",
            };
            rfd::FileDialog::new()
                .add_filter(title, &extensions)
                .add_filter("All files", &["*"])
                .pick_file()
        });
    }

    /// As `start_dialog`, for a folder (a BIDS dataset).
    pub(super) fn start_folder_dialog(&mut self) {
        self.spawn_dialog(Purpose::Open, || rfd::FileDialog::new().pick_folder());
    }

    fn spawn_dialog(
        &mut self,
        purpose: Purpose,
        pick: impl FnOnce() -> Option<PathBuf> + Send + 'static,
    ) {
        if self.dialog.is_some() {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let started = std::thread::Builder::new()
            .name("ede file dialog".into())
            .spawn(move || {
                let _ = tx.send(pick());
            });
        match started {
            Ok(_) => {
                self.dialog = Some(Pending {
                    answer: rx,
                    since: std::time::Instant::now(),
                    purpose,
                })
            }
            Err(e) => self.show_path_field(purpose, Some(format!("the dialog did not start: {e}"))),
        }
    }

    pub(super) fn poll_dialog(&mut self, ctx: &egui::Context) {
        let Some(pending) = &self.dialog else {
            return;
        };
        let answer = match pending.answer.try_recv() {
            Ok(answer) => answer,
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                ctx.request_repaint_after(std::time::Duration::from_millis(100));
                return;
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => None,
        };
        let (quick, purpose) = (pending.since.elapsed() < NO_DIALOG, pending.purpose);
        self.dialog = None;
        match answer {
            Some(p) => self.chosen(purpose, p),
            None if quick => self.show_path_field(
                purpose,
                Some(
                    "No file dialog could be shown: this desktop has neither the XDG desktop \
                     portal nor zenity (./setup.sh installs zenity). Type the file's path instead."
                        .into(),
                ),
            ),
            None => {}
        }
    }

    fn chosen(&mut self, purpose: Purpose, path: PathBuf) {
        match purpose {
            Purpose::Open => self.open(path),
            Purpose::Annotations => {
                let b = &mut self.browser;
                b.message = Some(super::night::load_annotations(b, &path));
            }
        }
    }

    /// Shows the path field, with the reason when no dialog could be shown.
    pub fn show_path_field(&mut self, purpose: Purpose, why: Option<String>) {
        let text = self
            .browser
            .rec
            .path
            .as_ref()
            .and_then(|p| p.parent())
            .map(|d| format!("{}/", d.display()))
            .unwrap_or_default();
        self.path_field = Some((text, why, purpose));
    }

    pub(super) fn path_window(&mut self, ctx: &egui::Context) {
        let Some((text, why, purpose)) = &mut self.path_field else {
            return;
        };
        let purpose = *purpose;
        let (mut open, mut close) = (false, false);
        let title = match purpose {
            Purpose::Open => "Open a recording",
            Purpose::Annotations => "Load annotations",
        };
        egui::Window::new(title)
            .collapsible(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
            .show(ctx, |ui| {
                if let Some(why) = why {
                    ui.label(why.as_str());
                    ui.add_space(4.0);
                }
                let field = ui
                    .horizontal(|ui| {
                        let label = ui.label("Path");
                        ui.add(
                            egui::TextEdit::singleline(text)
                                .hint_text("/path/to/recording.edf")
                                .desired_width(420.0),
                        )
                        .labelled_by(label.id)
                    })
                    .inner;
                let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                ui.horizontal(|ui| {
                    let verb = match purpose {
                        Purpose::Open => "Open",
                        Purpose::Annotations => "Load",
                    };
                    open = ui.button(verb).clicked() || entered;
                    close = ui.button("Cancel").clicked();
                });
            });
        if open {
            let path = PathBuf::from(text.trim());
            self.path_field = None;
            self.chosen(purpose, path);
        } else if close {
            self.path_field = None;
        }
    }
}
