//! Which traces the browser shows: a page of lanes out of many (MEG has 148 to 306 channels,
//! HD-EEG 128 to 256), scrolled with the wheel, Shift+PageUp/PageDown or a scrollbar, and the
//! Channels menu that shows or hides them by type (magnetometers, gradiometers, EEG, EOG ...).

use std::collections::HashSet;

use eframe::egui::{self, Color32, Pos2, Rect, Sense};

use crate::recording::ChannelType;

/// The choices of the channels-per-page menu (0: all).
pub const PER_PAGE_CHOICES: [usize; 6] = [10, 20, 32, 64, 128, 0];

/// The page of lanes shown: `per_page` traces (0: all) from the `first` shown one.
#[derive(Debug, Clone, Default)]
pub struct Lanes {
    pub first: usize,
    /// Traces the user hid.
    pub hidden: HashSet<usize>,
}

impl Lanes {
    /// The traces not hidden, out of `total`.
    pub fn shown(&self, total: usize) -> Vec<usize> {
        (0..total).filter(|i| !self.hidden.contains(i)).collect()
    }

    /// The traces on the current page (the first moved back where fewer remain).
    pub fn page(&mut self, total: usize, per_page: usize) -> Vec<usize> {
        let shown = self.shown(total);
        let per = if per_page == 0 {
            shown.len()
        } else {
            per_page.min(shown.len())
        };
        self.first = self.first.min(shown.len() - per);
        shown[self.first..self.first + per].to_vec()
    }

    /// Moves the page by `rows` lanes (negative: up).
    pub fn scroll(&mut self, rows: isize) {
        self.first = self.first.saturating_add_signed(rows);
    }

    /// A vertical scrollbar in `track` for a page of `page` lanes out of `shown`; dragging the
    /// thumb or clicking the track moves the page.
    pub fn scrollbar(&mut self, ui: &mut egui::Ui, track: Rect, page: usize, shown: usize) {
        if page >= shown || shown == 0 {
            return;
        }
        let painter = ui.painter_at(track);
        painter.rect_filled(track, 3.0, Color32::from_gray(225));
        let h = track.height();
        let thumb_h = (h * page as f32 / shown as f32).max(16.0).min(h);
        let room = (shown - page) as f32;
        let y = track.top() + (h - thumb_h) * self.first as f32 / room;
        let thumb = Rect::from_min_size(
            Pos2::new(track.left(), y),
            egui::vec2(track.width(), thumb_h),
        );
        let response = ui.interact(
            track,
            ui.scope_id().with("lane scrollbar"),
            Sense::click_and_drag(),
        );
        let colour = if response.dragged() || response.hovered() {
            Color32::from_gray(120)
        } else {
            Color32::from_gray(160)
        };
        painter.rect_filled(thumb, 3.0, colour);
        if let Some(p) = response.interact_pointer_pos()
            && (response.dragged() || response.clicked())
        {
            let at = ((p.y - track.top() - thumb_h / 2.0) / (h - thumb_h).max(1.0)).clamp(0.0, 1.0);
            self.first = (at * room).round() as usize;
        }
        response.on_hover_text(format!(
            "lanes {}-{} of {shown} (wheel, Shift+PageUp/PageDown)",
            self.first + 1,
            self.first + page
        ));
    }

    /// The Channels menu: each type present with show/hide/only, then its channels.
    pub fn menu(&mut self, ui: &mut egui::Ui, labels: &[String], kinds: &[ChannelType]) {
        let present: Vec<ChannelType> = (ChannelType::ALL.into_iter())
            .filter(|t| kinds.contains(t))
            .collect();
        if ui.button("Show all").clicked() {
            self.hidden.clear();
        }
        ui.separator();
        for t in present {
            let members: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == t).collect();
            let on = members.iter().filter(|i| !self.hidden.contains(i)).count();
            ui.horizontal(|ui| {
                ui.label(format!("{} ({on}/{})", group_name(t), members.len()));
                if ui.small_button("show").clicked() {
                    members.iter().for_each(|i| {
                        self.hidden.remove(i);
                    });
                }
                if ui.small_button("hide").clicked() {
                    self.hidden.extend(members.iter().copied());
                }
                if ui.small_button("only").clicked() {
                    self.hidden = (0..kinds.len()).filter(|i| kinds[*i] != t).collect();
                }
            });
            ui.collapsing(format!("{} channels", group_name(t)), |ui| {
                egui::ScrollArea::vertical()
                    .max_height(300.0)
                    .show(ui, |ui| {
                        for &i in &members {
                            let mut shown = !self.hidden.contains(&i);
                            if ui.checkbox(&mut shown, &labels[i]).changed() {
                                if shown {
                                    self.hidden.remove(&i);
                                } else {
                                    self.hidden.insert(i);
                                }
                            }
                        }
                    });
            });
        }
    }
}

/// Buttons that select the channels of one type (only those `allowed`), one per type present:
/// the views' channel pickers use them beside "all" and "none".
pub fn select_by_type(
    ui: &mut egui::Ui,
    kinds: &[ChannelType],
    selected: &mut [bool],
    allowed: impl Fn(usize) -> bool,
) {
    for t in ChannelType::ALL.into_iter().filter(|t| kinds.contains(t)) {
        if ui
            .small_button(t.name())
            .on_hover_text(format!("only the {}", group_name(t).to_lowercase()))
            .clicked()
        {
            for (c, s) in selected.iter_mut().enumerate() {
                *s = kinds[c] == t && allowed(c);
            }
        }
    }
}

/// A type's name as a group of channels.
pub fn group_name(t: ChannelType) -> &'static str {
    match t {
        ChannelType::Mag => "Magnetometers",
        ChannelType::Grad => "Gradiometers",
        ChannelType::RefMeg => "MEG references",
        ChannelType::Eeg => "EEG",
        ChannelType::Eog => "EOG",
        ChannelType::Ecg => "ECG",
        ChannelType::Emg => "EMG",
        ChannelType::Stim => "Stimulus",
        ChannelType::Resp => "Respiration",
        ChannelType::Misc => "Other",
    }
}

/// The colour of a type's traces: brain signals dark blue (MEG sensor kinds told apart), the
/// rest in their own hues, as MNE-Python's browser tells them apart.
pub fn trace_colour(t: ChannelType) -> Color32 {
    match t {
        ChannelType::Eeg => Color32::from_rgb(20, 30, 90),
        ChannelType::Mag => Color32::from_rgb(30, 60, 140),
        ChannelType::Grad => Color32::from_rgb(70, 40, 120),
        ChannelType::RefMeg => Color32::from_rgb(90, 90, 90),
        ChannelType::Eog => Color32::from_rgb(0, 110, 60),
        ChannelType::Ecg => Color32::from_rgb(150, 60, 20),
        ChannelType::Emg => Color32::from_rgb(110, 80, 0),
        ChannelType::Stim => Color32::from_rgb(120, 20, 120),
        ChannelType::Resp | ChannelType::Misc => Color32::from_rgb(60, 90, 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_stay_inside_the_shown_traces() {
        let mut l = Lanes::default();
        assert_eq!(l.page(50, 20), (0..20).collect::<Vec<_>>());
        l.scroll(45);
        assert_eq!(l.page(50, 20), (30..50).collect::<Vec<_>>());
        l.scroll(-100);
        assert_eq!(l.first, 0);
        l.hidden.extend([0, 1, 2]);
        assert_eq!(l.page(50, 0).len(), 47);
        assert_eq!(l.page(5, 20), vec![3, 4]);
    }
}
