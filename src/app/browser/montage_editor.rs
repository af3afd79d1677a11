//! The montage editor (Montage > Edit montages…): a montage's derivations as rows of label,
//! plus channel, minus (a channel, `[A, B, ...]` for their mean, `average`, `mastoids`, or
//! nothing) and colour, added, removed and reordered; applied, it joins the user's montages
//! (kept with the settings) and is shown; saved, it is a JSON file to share.

use eframe::egui;

use super::Browser;
use crate::dsp::montage::{DerivationSpec, Minus, Montage};

/// The montage being edited, with each row's minus as typed (parsed when applied).
pub(super) struct Editing {
    montage: Montage,
    minus_text: Vec<String>,
    problem: Option<String>,
}

impl Editing {
    fn new(mut montage: Montage, is_user: bool) -> Self {
        if !is_user {
            montage.name = format!("{} (mine)", montage.name);
        }
        let minus_text = montage
            .derivations
            .iter()
            .map(|d| d.minus.describe())
            .collect();
        Editing {
            montage,
            minus_text,
            problem: None,
        }
    }

    /// The montage with the typed minus parsed.
    fn montage(&self) -> Montage {
        let mut m = self.montage.clone();
        for (d, text) in m.derivations.iter_mut().zip(&self.minus_text) {
            d.minus = Minus::parse(text);
        }
        m
    }
}

impl Browser {
    /// Opens the editor on the montage shown (a built-in one as a copy of the user's).
    pub fn edit_montage(&mut self) {
        let is_user = matches!(self.settings.montage, super::MontageChoice::User { .. });
        self.editing = Some(Editing::new(self.traces.spec.montage.clone(), is_user));
    }

    pub(super) fn montage_editor(&mut self, ctx: &egui::Context) {
        let Some(mut ed) = self.editing.take() else {
            return;
        };
        let labels: Vec<String> = self.rec.signals.iter().map(|s| s.label.clone()).collect();
        let mut open = true;
        let mut apply = false;
        egui::Window::new("Edit montage")
            .open(&mut open)
            .default_width(680.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    let name = ui.label("Name");
                    ui.text_edit_singleline(&mut ed.montage.name)
                        .labelled_by(name.id);
                });
                ui.label("minus: a channel, [A, B, …] for their mean, average, mastoids, or empty");
                ui.horizontal(|ui| {
                    if ui.button("Add a derivation").clicked() {
                        let plus = labels.first().cloned().unwrap_or_default();
                        ed.montage.derivations.push(DerivationSpec::new(
                            plus.clone(),
                            plus,
                            Minus::None,
                        ));
                        ed.minus_text.push(String::new());
                    }
                    if ui.button("Apply").clicked() {
                        apply = true;
                    }
                    if ui.button("Save as file…").clicked()
                        && let Some(path) = rfd::FileDialog::new()
                            .set_file_name(format!("{}.json", ed.montage.name))
                            .add_filter("montage", &["json"])
                            .save_file()
                    {
                        let json = ed.montage().to_json();
                        self.message = Some(
                            crate::app::export::write_atomic(&path, json.as_bytes())
                                .map(|()| format!("montage saved to {}", path.display())),
                        );
                    }
                });
                if let Some(p) = &ed.problem {
                    ui.colored_label(egui::Color32::from_rgb(190, 40, 40), p);
                }
                egui::ScrollArea::vertical()
                    .max_height(420.0)
                    .show(ui, |ui| {
                        rows(ui, &mut ed, &labels);
                    });
            });
        if apply {
            let m = ed.montage();
            match crate::dsp::montage::resolve(&self.rec, &m, &self.settings.reference) {
                Err(e) => ed.problem = Some(e.to_string()),
                Ok(_) if m.name.trim().is_empty() => ed.problem = Some("name the montage".into()),
                Ok(r) => {
                    ed.problem = (!r.skipped.is_empty())
                        .then(|| format!("left out here: {}", r.skipped.join("; ")));
                    self.add_user_montage(m);
                }
            }
        }
        if open {
            self.editing = Some(ed);
        }
    }
}

/// One row per derivation: label, plus, minus, colour, and move up, down, remove.
fn rows(ui: &mut egui::Ui, ed: &mut Editing, labels: &[String]) {
    let mut action: Option<(usize, i32)> = None;
    egui::Grid::new("derivations").striped(true).show(ui, |ui| {
        let label_head = ui.strong("label").id;
        let plus_head = ui.strong("plus").id;
        let minus_head = ui.strong("minus").id;
        ui.strong("colour");
        ui.end_row();
        for (k, (d, minus)) in ed
            .montage
            .derivations
            .iter_mut()
            .zip(ed.minus_text.iter_mut())
            .enumerate()
        {
            ui.add_sized([120.0, 20.0], egui::TextEdit::singleline(&mut d.label))
                .labelled_by(label_head);
            egui::ComboBox::from_id_salt(("plus", k))
                .selected_text(d.plus.clone())
                .width(90.0)
                .show_ui(ui, |ui| {
                    for l in labels {
                        ui.selectable_value(&mut d.plus, l.clone(), l);
                    }
                })
                .response
                .labelled_by(plus_head);
            ui.add_sized([170.0, 20.0], egui::TextEdit::singleline(minus))
                .labelled_by(minus_head);
            ui.horizontal(|ui| {
                let mut own = d.colour.is_some();
                ui.checkbox(&mut own, "own");
                let mut c = d.colour.unwrap_or([20, 40, 120]);
                if own {
                    ui.color_edit_button_srgb(&mut c);
                }
                d.colour = own.then_some(c);
            });
            ui.horizontal(|ui| {
                if ui.small_button("up").clicked() {
                    action = Some((k, -1));
                }
                if ui.small_button("down").clicked() {
                    action = Some((k, 1));
                }
                if ui.small_button("remove").clicked() {
                    action = Some((k, 0));
                }
            });
            ui.end_row();
        }
    });
    let n = ed.montage.derivations.len();
    match action {
        Some((k, 0)) => {
            ed.montage.derivations.remove(k);
            ed.minus_text.remove(k);
        }
        Some((k, step)) => {
            let to = k as i64 + step as i64;
            if (0..n as i64).contains(&to) {
                ed.montage.derivations.swap(k, to as usize);
                ed.minus_text.swap(k, to as usize);
            }
        }
        None => {}
    }
}
