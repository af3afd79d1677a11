//! The Channels dialog (Channels > Types and units…): every recorded channel's type, unit,
//! whether it is a scalp electrode (what every average and montage takes) and its bad mark,
//! the type and mark changed here. A changed type is the recording's state, as a bad mark:
//! kept in the session and written to `_channels.tsv` by File > Save edits.

use eframe::egui;

use super::Browser;
use crate::recording::ChannelType;

impl Browser {
    pub(super) fn channels_dialog(&mut self, ctx: &egui::Context) {
        if !self.channels_open {
            return;
        }
        let mut open = true;
        let scalp = self.rec.scalp_electrodes();
        let mut retype: Option<(usize, ChannelType)> = None;
        let mut mark: Option<(usize, bool)> = None;
        egui::Window::new("Channels: types and units")
            .open(&mut open)
            .default_height(480.0)
            .show(ctx, |ui| {
                ui.label(format!(
                    "{} channels, {} of them scalp electrodes: the average reference and \
                     every montage take only these, each in the trace's unit.",
                    self.rec.signals.len(),
                    scalp.len()
                ));
                ui.separator();
                egui::ScrollArea::vertical().show(ui, |ui| {
                    egui::Grid::new("channel types")
                        .striped(true)
                        .num_columns(5)
                        .show(ui, |ui| {
                            for h in ["channel", "type", "unit", "scalp electrode", "bad"] {
                                ui.strong(h);
                            }
                            ui.end_row();
                            for (c, s) in self.rec.signals.iter().enumerate() {
                                ui.label(s.label.trim());
                                let mut kind = s.kind;
                                egui::ComboBox::from_id_salt(("channel type", c))
                                    .selected_text(kind.name())
                                    .show_ui(ui, |ui| {
                                        for t in ChannelType::ALL {
                                            ui.selectable_value(&mut kind, t, t.name());
                                        }
                                    });
                                if kind != s.kind {
                                    retype = Some((c, kind));
                                }
                                ui.label(match s.unit.trim() {
                                    "" => "(none)",
                                    u => u,
                                });
                                ui.label(if scalp.contains(&c) { "yes" } else { "no" });
                                let mut bad = s.bad;
                                if ui.checkbox(&mut bad, "").changed() {
                                    mark = Some((c, bad));
                                }
                                ui.end_row();
                            }
                        });
                });
            });
        if let Some((c, kind)) = retype {
            self.set_type(c, kind);
        }
        if let Some((c, bad)) = mark {
            self.set_bad(c, bad);
        }
        self.channels_open = open;
    }
}
