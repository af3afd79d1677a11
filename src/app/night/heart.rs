//! The heart strip (instantaneous heart rate over the whole recording, or the RR tachogram)
//! and the HRV window, from the first ECG channel's beats (`analysis::heart`: the record's beat
//! annotations, else the QRS detector), measured on the background worker.

use std::sync::Arc;

use eframe::egui::{self, Color32, Pos2, Rect, Stroke};

use super::{TimeAxis, clicked_time, strip_frame};
use crate::analysis::heart::HeartReport;
use crate::analysis::hermite::default_ecg_channel;
use crate::app::browser::Browser;
use crate::app::worker::{Outcome, Worker};
use crate::recording::Recording;

#[derive(Clone)]
pub struct HeartRequest {
    rec: Arc<Recording>,
    channel: usize,
}

impl PartialEq for HeartRequest {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.rec, &other.rec) && self.channel == other.channel
    }
}

#[derive(Default)]
pub struct Heart {
    worker: Option<Worker<HeartRequest, HeartReport>>,
    shown: Option<HeartReport>,
    error: Option<String>,
    /// Draw RR intervals (ms) instead of the rate (bpm).
    tachogram: bool,
    channel: Option<usize>,
    message: Option<Result<String, String>>,
}

impl Heart {
    /// Nothing to wait for: no ECG, or its beats measured (or failed).
    pub fn ready(&self) -> bool {
        self.channel.is_none()
            || ((self.shown.is_some() || self.error.is_some())
                && self.worker.as_ref().is_none_or(|w| w.pending().is_none()))
    }

    pub fn available(&self) -> bool {
        self.channel.is_some()
    }

    pub fn update(&mut self, b: &Browser, ctx: &egui::Context) {
        self.channel = default_ecg_channel(&b.rec);
        let Some(channel) = self.channel else {
            return;
        };
        let worker = self.worker.get_or_insert_with(|| {
            Worker::new("ede heart", || {
                Box::new(|req: &HeartRequest, _| {
                    HeartReport::measure(&req.rec, req.channel, false)
                        .map(Some)
                        .map_err(|e| e.to_string())
                })
            })
        });
        worker.request(
            ctx,
            HeartRequest {
                rec: b.rec.clone(),
                channel,
            },
        );
        match worker.poll() {
            Some(Outcome::Done { output, .. }) => {
                self.shown = Some(output);
                self.error = None;
            }
            Some(Outcome::Failed { message, .. }) => self.error = Some(message),
            None => {}
        }
    }

    pub fn strip(&mut self, ui: &mut egui::Ui, rect: Rect, axis: TimeAxis) -> Option<f64> {
        let label = if self.tachogram {
            "RR ms"
        } else {
            "Heart rate"
        };
        let (area, response) = strip_frame(ui, rect, axis, label);
        let toggle = Rect::from_min_size(
            Pos2::new(rect.left() + 4.0, rect.bottom() - 18.0),
            egui::vec2(90.0, 16.0),
        );
        let mut tach = self.tachogram;
        ui.put(toggle, egui::Checkbox::new(&mut tach, "RR"));
        self.tachogram = tach;
        let p = ui.painter_at(area);
        let Some(report) = &self.shown else {
            let text = self
                .error
                .clone()
                .unwrap_or_else(|| "finding the beats...".into());
            p.text(
                area.center(),
                egui::Align2::CENTER_CENTER,
                text,
                egui::FontId::proportional(12.0),
                Color32::from_gray(120),
            );
            return clicked_time(&response, axis);
        };
        let (lo, hi, ticks): (f64, f64, &[f64]) = if self.tachogram {
            (300.0, 1500.0, &[500.0, 1000.0])
        } else {
            (40.0, 180.0, &[60.0, 100.0, 140.0])
        };
        let y =
            |v: f64| area.bottom() - ((v - lo) / (hi - lo)).clamp(0.0, 1.0) as f32 * area.height();
        for &v in ticks {
            p.line_segment(
                [Pos2::new(area.left(), y(v)), Pos2::new(area.right(), y(v))],
                Stroke::new(0.5, Color32::from_gray(210)),
            );
            p.text(
                Pos2::new(area.left() + 2.0, y(v)),
                egui::Align2::LEFT_BOTTOM,
                format!("{v:.0}"),
                egui::FontId::proportional(9.0),
                Color32::from_gray(120),
            );
        }
        // One point per pixel column at most: the median of the beats it holds.
        let width = area.width().max(1.0) as usize;
        let mut columns: Vec<Vec<f64>> = vec![Vec::new(); width];
        for r in &report.rr {
            let col = (axis.x(r.time_s) - area.left()) as usize;
            let v = if self.tachogram {
                r.rr_ms
            } else {
                60_000.0 / r.rr_ms
            };
            if let Some(c) = columns.get_mut(col)
                && r.normal
            {
                c.push(v);
            }
        }
        let red = Color32::from_rgb(190, 30, 40);
        let mut last: Option<Pos2> = None;
        for (col, mut vs) in columns.into_iter().enumerate() {
            if vs.is_empty() {
                last = None;
                continue;
            }
            let k = vs.len() / 2;
            let v = *vs.select_nth_unstable_by(k, f64::total_cmp).1;
            let pt = Pos2::new(area.left() + col as f32 + 0.5, y(v));
            if let Some(l) = last {
                p.line_segment([l, pt], Stroke::new(1.0, red));
            }
            last = Some(pt);
        }
        if let Some(pos) = response.hover_pos() {
            let t = axis.t(pos.x);
            let i = report.rr.partition_point(|r| r.time_s < t);
            if let Some(r) = report.rr.get(i) {
                response.clone().on_hover_text(format!(
                    "{}: RR {:.0} ms, {:.0} bpm{}",
                    super::clock(r.time_s),
                    r.rr_ms,
                    60_000.0 / r.rr_ms,
                    if r.normal { "" } else { " (not NN)" }
                ));
            }
        }
        clicked_time(&response, axis)
    }

    pub fn hrv_window(&mut self, b: &Browser, ctx: &egui::Context, open: &mut bool) {
        egui::Window::new("Heart rate variability")
            .open(open)
            .default_width(320.0)
            .show(ctx, |ui| {
                let Some(r) = &self.shown else {
                    ui.label(self.error.clone().unwrap_or_else(|| match self.channel {
                        None => "The recording has no ECG channel.".into(),
                        Some(_) => "Finding the beats...".into(),
                    }));
                    return;
                };
                let h = &r.hrv;
                ui.label(format!(
                    "{}: {} beats ({:?}), {} NN intervals",
                    r.channel, h.beats, r.source, h.nn_intervals
                ));
                let opt = |v: Option<f64>| {
                    v.map_or("- (under 64 s of NN)".to_string(), |x| format!("{x:.2}"))
                };
                egui::Grid::new("hrv").striped(true).show(ui, |ui| {
                    for (k, v) in [
                        ("mean NN, ms", format!("{:.1}", h.mean_nn_ms)),
                        ("SDNN, ms", format!("{:.1}", h.sdnn_ms)),
                        ("RMSSD, ms", format!("{:.1}", h.rmssd_ms)),
                        ("pNN50, %", format!("{:.1}", h.pnn50_pct)),
                        ("mean HR, bpm", format!("{:.1}", h.mean_hr_bpm)),
                        ("LF 0.04-0.15 Hz, ms2", opt(h.lf_ms2)),
                        ("HF 0.15-0.4 Hz, ms2", opt(h.hf_ms2)),
                        ("LF/HF", opt(h.lf_hf)),
                    ] {
                        ui.label(k);
                        ui.label(v);
                        ui.end_row();
                    }
                });
                if ui.button("Save the RR intervals as CSV").clicked() {
                    let path = super::psd::beside(b, "rr.csv");
                    self.message = Some(
                        crate::recording::write_whole(&path, r.rr_csv().as_bytes())
                            .map(|()| format!("saved {}", path.display()))
                            .map_err(|e| format!("cannot write {}: {e}", path.display())),
                    );
                }
                super::show_message(ui, &self.message);
            });
    }
}
