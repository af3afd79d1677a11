//! Keyboard and mouse over the traces: paging, scrolling and zooming, amplitude, undo/redo,
//! the time selection (shift+drag), panning, and events added (double-click, keys 1-9),
//! moved (alt+drag) and deleted.

use eframe::egui::{self, Rect};

use super::{Browser, MontageChoice};
use crate::recording::Annotation;

/// The keys that switch montages, in the Montage menu's order.
pub const FUNCTION_KEYS: [egui::Key; 12] = [
    egui::Key::F1,
    egui::Key::F2,
    egui::Key::F3,
    egui::Key::F4,
    egui::Key::F5,
    egui::Key::F6,
    egui::Key::F7,
    egui::Key::F8,
    egui::Key::F9,
    egui::Key::F10,
    egui::Key::F11,
    egui::Key::F12,
];

impl Browser {
    /// `paged`: more lanes than one page holds (the vertical wheel then moves the lanes);
    /// `row_h`: a lane's height.
    pub(super) fn handle_input(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        plot: Rect,
        (paged, row_h): (bool, f32),
    ) -> Option<MontageChoice> {
        let span = self.settings.span_s;
        // Keys typed into a text field (the annotation filter) are not navigation.
        let typing = ui.ctx().egui_wants_keyboard_input();
        // F1-F12: the montages in the Montage menu's order.
        let f_key = ui.input(|i| {
            FUNCTION_KEYS
                .iter()
                .position(|&k| i.key_pressed(k) && !i.modifiers.any())
        });
        // Applied after the frame's lanes are drawn: they were laid out for this montage.
        let montage = f_key
            .filter(|_| !typing)
            .and_then(|k| self.montage_choices().into_iter().nth(k))
            .map(|(choice, _)| choice);
        let mut mark_bad = None;
        ui.input(|i| {
            if typing {
                return;
            }
            let page = self.settings.channels_per_page.max(1) as isize;
            match (
                i.key_pressed(egui::Key::PageDown),
                i.key_pressed(egui::Key::PageUp),
            ) {
                (true, _) if i.modifiers.shift => self.lanes.scroll(page),
                (_, true) if i.modifiers.shift => self.lanes.scroll(-page),
                (true, _) => self.scroll(span),
                (_, true) => self.scroll(-span),
                _ => {}
            }
            if i.key_pressed(egui::Key::ArrowRight) {
                self.scroll(span / 10.0);
            }
            if i.key_pressed(egui::Key::ArrowLeft) {
                self.scroll(-span / 10.0);
            }
            if i.key_pressed(egui::Key::Home) {
                self.t0 = 0.0;
            }
            if i.key_pressed(egui::Key::End) {
                self.t0 = self.total_s();
                self.clamp_view();
            }
            for (key, f) in [(egui::Key::ArrowUp, 1.25f32), (egui::Key::ArrowDown, 0.8)] {
                if i.key_pressed(key) {
                    match (i.modifiers.shift, self.selected) {
                        (true, Some(s)) => self.channel_gain[s] *= f,
                        _ => self.settings.gain *= f,
                    }
                }
            }
            if i.key_pressed(egui::Key::Plus) || i.key_pressed(egui::Key::Equals) {
                self.zoom(0.5, 0.5);
            }
            if i.key_pressed(egui::Key::Minus) {
                self.zoom(2.0, 0.5);
            }
            if i.key_pressed(egui::Key::Escape) {
                self.selection = None;
                self.measure.clear();
            }
            if i.key_pressed(egui::Key::F) && !i.modifiers.any() {
                self.fit_requested = true;
            }
            if i.key_pressed(egui::Key::B) && !i.modifiers.any() {
                mark_bad = self.selected.map(|d| self.traces.spec.derivations[d].plus);
            }
            if i.modifiers.command && i.key_pressed(egui::Key::Z) {
                if i.modifiers.shift {
                    self.events.redo();
                } else {
                    self.events.undo();
                }
            }
            if i.modifiers.command && i.key_pressed(egui::Key::Y) {
                self.events.redo();
            }
            if (i.key_pressed(egui::Key::Delete) || i.key_pressed(egui::Key::Backspace))
                && let Some(k) = self.events.selected
            {
                self.events.delete(k);
            }
        });
        if let Some(c) = mark_bad {
            self.set_bad(c, !self.rec.signals[c].bad);
        }
        if response.hovered() {
            let (scroll, zoom, ctrl, pointer) = ui.input(|i| {
                (
                    i.smooth_scroll_delta,
                    i.zoom_delta(),
                    i.modifiers.ctrl || i.modifiers.command,
                    i.pointer.hover_pos(),
                )
            });
            let anchor = pointer
                .map(|p| ((p.x - plot.left()) / plot.width()).clamp(0.0, 1.0) as f64)
                .unwrap_or(0.5);
            if zoom != 1.0 {
                self.zoom(1.0 / zoom as f64, anchor);
            } else if !ctrl && paged && scroll.y != 0.0 {
                self.lane_wheel -= scroll.y / row_h.max(1.0);
                let rows = self.lane_wheel.trunc();
                self.lane_wheel -= rows;
                self.lanes.scroll(rows as isize);
            } else if !ctrl {
                let d = if scroll.x != 0.0 { scroll.x } else { scroll.y };
                if d != 0.0 {
                    self.scroll(-(d as f64) / plot.width() as f64 * span);
                }
            }
        }
        // Shift+drag selects a time range; alt+drag moves the selected event; a plain drag pans.
        let (t0, total) = (self.t0, self.total_s());
        let time_at =
            |x: f32| (t0 + ((x - plot.left()) / plot.width()) as f64 * span).clamp(0.0, total);
        // Events: double-click adds one with the first label, keys 1-9 their labels.
        let latest = ui.input(|i| i.pointer.latest_pos());
        if let Some(p) = latest.filter(|p| plot.contains(*p) && response.contains_pointer()) {
            let t = time_at(p.x);
            let mut add = None;
            if response.double_clicked() {
                add = Some(self.events.shortcut(1).unwrap_or_else(|| "event".into()));
            }
            let typing = ui.ctx().egui_wants_keyboard_input();
            const KEYS: [egui::Key; 9] = [
                egui::Key::Num1,
                egui::Key::Num2,
                egui::Key::Num3,
                egui::Key::Num4,
                egui::Key::Num5,
                egui::Key::Num6,
                egui::Key::Num7,
                egui::Key::Num8,
                egui::Key::Num9,
            ];
            for (k, key) in KEYS.iter().enumerate() {
                if !typing && ui.input(|i| i.key_pressed(*key) && !i.modifiers.any()) {
                    add = add.or(self.events.shortcut(k + 1));
                }
            }
            if let Some(text) = add {
                self.events.add(Annotation {
                    onset: t,
                    duration: 0.0,
                    text,
                });
            }
        }
        let pointer = response.interact_pointer_pos();
        let alt = ui.input(|i| i.modifiers.alt);
        if response.drag_started()
            && alt
            && let (Some(k), Some(p)) = (self.events.selected, pointer)
            && let Some(a) = self.events.list().get(k)
        {
            self.moving = Some((time_at(p.x), a.onset));
            self.events.checkpoint();
        }
        if let (Some((from, onset)), Some(p), Some(k)) =
            (self.moving, pointer, self.events.selected)
        {
            if response.dragged()
                && let Some(a) = self.events.list().get(k)
            {
                let moved = Annotation {
                    onset: (onset + time_at(p.x) - from).clamp(0.0, total),
                    ..a.clone()
                };
                self.events.set_quietly(k, moved);
            }
            if response.drag_stopped() {
                self.moving = None;
            }
            return montage;
        }
        if response.drag_started() && ui.input(|i| i.modifiers.shift) {
            self.selecting_from = pointer.map(|p| time_at(p.x));
        }
        // ctrl+drag on a lane: an event of that trace's channel over the stretch dragged.
        if response.drag_started()
            && ui.input(|i| i.modifiers.ctrl || i.modifiers.command)
            && let Some(p) = pointer
        {
            let total_traces = self.traces.spec.derivations.len();
            let lanes = self
                .lanes
                .page(total_traces, self.settings.channels_per_page);
            let row = ((p.y - plot.top()) / row_h).floor();
            if row >= 0.0
                && let Some(&d) = lanes.get(row as usize)
            {
                let t = time_at(p.x);
                self.marking = Some((d, t, t));
            }
        }
        if let Some((d, a, _)) = self.marking {
            if let Some(p) = pointer.filter(|_| response.dragged()) {
                self.marking = Some((d, a, time_at(p.x)));
            }
            if response.drag_stopped() {
                self.marking = None;
                if let Some(p) = pointer {
                    let b = time_at(p.x);
                    let text = self.events.shortcut(1).unwrap_or_else(|| "event".into());
                    self.events.add(Annotation {
                        onset: a.min(b),
                        duration: (b - a).abs(),
                        text: Annotation::on_channel(&text, self.trace_label(d)),
                    });
                }
            }
            return montage;
        }
        if response.dragged() {
            match (self.selecting_from, pointer) {
                (Some(a), Some(p)) => {
                    let b = time_at(p.x);
                    self.selection = Some((a.min(b), a.max(b)));
                }
                _ => {
                    let dx = response.drag_delta().x as f64;
                    self.scroll(-dx / plot.width() as f64 * span);
                }
            }
        }
        if response.drag_stopped() && self.selecting_from.take().is_some() {
            self.selection = self.selection.filter(|(a, b)| b > a);
        }
        montage
    }
}
