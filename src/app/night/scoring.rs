//! Sleep scoring: in scoring mode a page is one 30 s epoch and a key scores it and moves on
//! (W or 0 wake, 1-3 N1-N3 and 4 N3 as R&K's 4, R or 5 REM, ? unscored, M movement time;
//! Backspace undoes and steps back). Scores are events (`dsp::sleep::score`), so they undo,
//! survive a crash and save as EDF+ annotations or BIDS events like any other; the hypnogram
//! strip draws them, the statistics window counts them as YASA does, and the YASA CSV writes
//! them one epoch a line.

use std::sync::Arc;

use eframe::egui::{self, Color32, Key, Modifiers, Pos2, Rect, Stroke};

use super::{TimeAxis, clicked_time, strip_frame};
use crate::app::browser::Browser;
use crate::dsp::sleep::{self, Stage};

pub const EPOCH_S: f64 = 30.0;

/// The keys and the stages they score.
const KEYS: [(Key, Stage); 12] = [
    (Key::W, Stage::Wake),
    (Key::Num0, Stage::Wake),
    (Key::Num1, Stage::N1),
    (Key::Num2, Stage::N2),
    (Key::Num3, Stage::N3),
    (Key::Num4, Stage::N3),
    (Key::R, Stage::Rem),
    (Key::Num5, Stage::Rem),
    (Key::N, Stage::N1),
    (Key::Questionmark, Stage::Uns),
    (Key::M, Stage::Art),
    (Key::A, Stage::Art),
];

/// Pages of one epoch, starting on the epoch the window starts in.
pub fn start(b: &mut Browser) {
    let (t0, _) = b.visible_span();
    b.show((t0 / EPOCH_S + 1e-6).floor() * EPOCH_S, Some(EPOCH_S));
}

/// The scoring keys (taken before the browser sees them).
pub fn keys(b: &mut Browser, ctx: &egui::Context) {
    if ctx.egui_wants_keyboard_input() {
        return;
    }
    let pressed = ctx.input_mut(|i| {
        KEYS.iter()
            .find(|(k, _)| {
                i.consume_key(Modifiers::NONE, *k) || i.consume_key(Modifiers::SHIFT, *k)
            })
            .map(|&(_, s)| s)
    });
    let back = ctx.input_mut(|i| i.consume_key(Modifiers::NONE, Key::Backspace));
    let (t0, _) = b.visible_span();
    let epoch = (t0 / EPOCH_S + 1e-6).floor() as usize;
    if let Some(stage) = pressed {
        let labels = &b.settings.stage_labels;
        let scored = sleep::score(b.events.list(), epoch, EPOCH_S, stage, labels);
        b.events.replace_all(scored);
        b.show((epoch + 1) as f64 * EPOCH_S, Some(EPOCH_S));
    } else if back && b.events.undo() {
        b.show(epoch.saturating_sub(1) as f64 * EPOCH_S, Some(EPOCH_S));
    }
}

type HypnogramKey = (usize, u64, Vec<(String, Stage)>);

/// The hypnogram of the browser's events, one stage per 30 s epoch, made again only when the
/// events, the recording or the stage labels change (not every frame).
#[derive(Default)]
pub struct Hypnogram {
    /// The recording, the events' version and the labels it was made of.
    key: Option<HypnogramKey>,
    stages: Vec<Stage>,
}

impl Hypnogram {
    pub fn of(&mut self, b: &Browser) -> &[Stage] {
        let labels = &b.settings.stage_labels;
        let key = (
            Arc::as_ptr(&b.rec) as usize,
            b.events.version,
            labels.clone(),
        );
        if self.key.as_ref() != Some(&key) {
            self.stages = sleep::hypnogram(b.events.list(), EPOCH_S, labels);
            self.key = Some(key);
        }
        &self.stages
    }
}

fn row_of(s: Stage) -> Option<usize> {
    Stage::ROWS.iter().position(|&r| r == s)
}

/// The hypnogram strip: a row per stage (W, R, N1, N2, N3), REM drawn thick; artefact and
/// unscored epochs as grey ticks. Returns the time clicked.
pub fn hypnogram_strip(
    ui: &mut egui::Ui,
    rect: Rect,
    axis: TimeAxis,
    stages: &[Stage],
) -> Option<f64> {
    let (area, response) = strip_frame(ui, rect, axis, "Hypnogram");
    let p = ui.painter_at(area);
    let row_h = area.height() / Stage::ROWS.len() as f32;
    let y = |row: usize| area.top() + (row as f32 + 0.5) * row_h;
    for (k, s) in Stage::ROWS.iter().enumerate() {
        p.text(
            Pos2::new(area.left() + 3.0, y(k)),
            egui::Align2::LEFT_CENTER,
            s.short(),
            egui::FontId::proportional(9.0),
            Color32::from_gray(120),
        );
    }
    let blue = Color32::from_rgb(30, 70, 200);
    let mut last: Option<(f32, f32)> = None;
    // One segment per run of a stage: epochs narrower than a pixel drew as dashes.
    let mut e = 0;
    while e < stages.len() {
        let s = stages[e];
        let run = stages[e..].iter().take_while(|&&x| x == s).count();
        let (x0, x1) = (
            axis.x(e as f64 * EPOCH_S),
            axis.x((e + run) as f64 * EPOCH_S),
        );
        e += run;
        match row_of(s) {
            Some(row) => {
                let yy = y(row);
                let width = if s == Stage::Rem { 3.0 } else { 1.5 };
                p.line_segment(
                    [Pos2::new(x0, yy), Pos2::new(x1, yy)],
                    Stroke::new(width, blue),
                );
                if let Some((lx, ly)) = last {
                    p.line_segment(
                        [Pos2::new(lx, ly), Pos2::new(x0, yy)],
                        Stroke::new(1.0, blue),
                    );
                }
                last = Some((x1, yy));
            }
            None => {
                let colour = if s == Stage::Art {
                    Color32::from_rgb(200, 120, 40)
                } else {
                    Color32::from_gray(170)
                };
                let band = area.bottom() - 5.0..=area.bottom();
                p.rect_filled(
                    Rect::from_x_y_ranges(x0..=x1.max(x0 + 1.0), band),
                    0.0,
                    colour,
                );
                last = None;
            }
        }
    }
    if stages.is_empty() {
        p.text(
            area.center(),
            egui::Align2::CENTER_CENTER,
            "no sleep stages yet: score with the keys, or load a hypnogram",
            egui::FontId::proportional(12.0),
            Color32::from_gray(120),
        );
    }
    if let Some(pos) = response.hover_pos() {
        let t = axis.t(pos.x);
        let e = (t / EPOCH_S).floor().max(0.0) as usize;
        if let Some(s) = stages.get(e) {
            response.clone().on_hover_text(format!(
                "epoch {} at {}: {}",
                e + 1,
                super::clock(t),
                s.yasa()
            ));
        }
    }
    clicked_time(&response, axis)
}

/// YASA's sleep statistics of the hypnogram, in a window.
pub fn statistics_window(stages: &[Stage], ctx: &egui::Context, open: &mut bool) {
    egui::Window::new("Sleep statistics")
        .open(open)
        .default_width(300.0)
        .show(ctx, |ui| {
            let Some(st) = sleep::statistics(stages, EPOCH_S) else {
                ui.label("No sleep stage events: score the recording or load its hypnogram.");
                return;
            };
            ui.label(format!(
                "{} epochs of {EPOCH_S} s, as YASA's Hypnogram.sleep_statistics",
                stages.len()
            ));
            let value = serde_json::to_value(&st).unwrap_or_default();
            egui::Grid::new("sleep stats").striped(true).show(ui, |ui| {
                for (key, v) in value.as_object().into_iter().flatten() {
                    ui.label(key);
                    let unit = if key.starts_with('%') || key == "SE" || key == "SME" {
                        "%"
                    } else if key == "SFI" {
                        "/h"
                    } else {
                        "min"
                    };
                    match v.as_f64() {
                        Some(x) => ui.label(format!("{x:.1} {unit}")),
                        None => ui.label("-"),
                    };
                    ui.end_row();
                }
            });
        });
}

/// The lab's own stage labels, editable: a row per label, its stage, and a remove button.
pub fn labels_editor(b: &mut Browser, ui: &mut egui::Ui) {
    ui.label("Stage labels of your own (besides W, N1-N3, R and Sleep stage W/1-4/R/?):");
    let labels = &mut b.settings.stage_labels;
    let mut remove = None;
    egui::Grid::new("stage labels").show(ui, |ui| {
        for (k, (text, stage)) in labels.iter_mut().enumerate() {
            ui.add(egui::TextEdit::singleline(text).desired_width(140.0));
            egui::ComboBox::from_id_salt(("stage of label", k))
                .selected_text(stage.yasa())
                .show_ui(ui, |ui| {
                    for s in Stage::ALL {
                        ui.selectable_value(stage, s, s.yasa());
                    }
                });
            if ui.button("remove").clicked() {
                remove = Some(k);
            }
            ui.end_row();
        }
    });
    if let Some(k) = remove {
        labels.remove(k);
    }
    if ui.button("add a label").clicked() {
        labels.push((String::new(), Stage::N2));
    }
}

/// Writes the hypnogram beside the recording as `NAME.hypnogram.csv` (YASA's stage names).
pub fn save_csv(b: &Browser, stages: &[Stage]) -> Result<String, String> {
    if stages.is_empty() {
        return Err("no sleep stages to save".into());
    }
    let path = super::psd::beside(b, "hypnogram.csv");
    crate::recording::write_whole(&path, sleep::yasa_csv(stages).as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(format!("saved {}", path.display()))
}
