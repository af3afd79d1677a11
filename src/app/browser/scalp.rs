//! The browser's scalp map and GFP lane (Page menu). The map shows the scalp electrodes under
//! the page's reference and EEG filter (a bipolar montage's traces are no potentials to map):
//! at the time under the pointer while it is over the traces, else the mean over the selection
//! (shift+drag), else where the pointer last was. The GFP lane under the traces is their
//! spatial standard deviation (ddof 0), as MNE's. Both come from the page's samples, read once
//! per page; a frame only interpolates one map (64 x 64 pixels).

use std::sync::Arc;

use eframe::egui::{self, Color32, Pos2, Rect, Stroke};
use nalgebra::DMatrix;

use super::Browser;
use crate::app::scalp_map::{Caption, Scale, ScalpMaps};
use crate::dsp::montage::{self, DerivationSpec, Minus, Montage};
use crate::recording::ChannelType;
use crate::recording::channel::reading_unit;

/// The page's scalp electrodes as read for the map and the GFP.
struct Page {
    /// What they were read for: the traces' spec, the page start and span.
    key: (usize, u64, u64),
    t0: f64,
    fs: f64,
    labels: Vec<String>,
    positions: Vec<Option<[f64; 3]>>,
    unit: String,
    /// Per electrode, the page's samples (reading unit).
    data: Vec<Vec<f32>>,
    gfp: Vec<f32>,
}

#[derive(Default)]
pub struct ScalpPanel {
    pub map: bool,
    pub gfp: bool,
    page: Option<Page>,
    /// The last time mapped (seconds), kept when the pointer leaves the traces.
    at: Option<f64>,
    maps: ScalpMaps,
    /// Why there is nothing to map, said in the panel.
    problem: Option<String>,
}

impl ScalpPanel {
    fn page(&mut self, b: &Browser) -> Option<&Page> {
        let key = (
            Arc::as_ptr(&b.traces.spec) as usize,
            b.t0.to_bits(),
            b.settings.span_s.to_bits(),
        );
        if self.page.as_ref().is_some_and(|p| p.key == key) {
            return self.page.as_ref();
        }
        match read_page(b, key) {
            Ok(p) => {
                self.problem = None;
                self.page = Some(p);
            }
            Err(e) => {
                self.problem = Some(e);
                self.page = None;
            }
        }
        self.page.as_ref()
    }

    /// The map's side panel (call before the traces' central panel).
    pub(super) fn panels(&mut self, b: &Browser, ui: &mut egui::Ui) {
        if self.gfp {
            egui::Panel::bottom("gfp lane")
                .exact_size(70.0)
                .show(ui, |ui| self.gfp_lane(b, ui));
        }
        if !self.map {
            return;
        }
        let pointer = ui.ctx().pointer_hover_pos();
        egui::Panel::right("scalp map")
            .exact_size(230.0)
            .show(ui, |ui| {
                ui.strong("Scalp map");
                let plot = b.plot_rect;
                let over = pointer.filter(|p| plot.contains(*p));
                if let Some(p) = over {
                    self.at = Some(
                        b.t0 + ((p.x - plot.left()) / plot.width()) as f64 * b.settings.span_s,
                    );
                }
                let at = self.at;
                let selection = b.selection;
                let reference = b.traces.spec.reference.clone();
                let Some(page) = self.page(b) else {
                    ui.small(self.problem.clone().unwrap_or_default());
                    return;
                };
                let n = page.data.first().map_or(0, Vec::len);
                let index = |t: f64| {
                    ((t - page.t0) * page.fs)
                        .round()
                        .clamp(0.0, n.saturating_sub(1) as f64) as usize
                };
                let (values, caption): (Vec<f64>, String) = match (over, selection, at) {
                    (None, Some((a, z)), _) if z > a => {
                        let (i, j) = (index(a), index(z).max(index(a) + 1).min(n));
                        let mean = (page.data.iter())
                            .map(|x| {
                                x[i..j].iter().map(|&v| v as f64).sum::<f64>()
                                    / (j - i).max(1) as f64
                            })
                            .collect();
                        (mean, format!("mean {:.2}–{:.2} s", a, z))
                    }
                    (_, _, Some(t)) if n > 0 => {
                        let i = index(t);
                        (
                            page.data.iter().map(|x| x[i] as f64).collect(),
                            format!("{t:.3} s"),
                        )
                    }
                    _ => {
                        ui.small("point at the traces");
                        return;
                    }
                };
                let limit = values.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-9);
                // Steps of the scale, so that the bar does not change at every pixel.
                let limit = nice_ceiling(limit);
                let column = DMatrix::from_column_slice(values.len(), 1, &values);
                let (labels, positions, unit) = (
                    page.labels.clone(),
                    page.positions.clone(),
                    page.unit.clone(),
                );
                self.maps.set_scale(Scale::Shared { limit, unit });
                let caption = Caption {
                    text: format!("{caption}\nreference: {reference}"),
                    gone: false,
                };
                let side = (ui.available_width() - 50.0).clamp(60.0, 200.0);
                self.maps
                    .one(ui, (&labels, &positions), &column, 0, (side, &caption));
            });
    }

    /// The GFP of the page, aligned with the traces' time axis.
    fn gfp_lane(&mut self, b: &Browser, ui: &mut egui::Ui) {
        let plot = b.plot_rect;
        let rect = ui.max_rect();
        let painter = ui.painter_at(rect);
        let ink = ui.visuals().text_color();
        let Some(page) = self.page(b) else {
            painter.text(
                rect.left_center(),
                egui::Align2::LEFT_CENTER,
                self.problem.clone().unwrap_or_default(),
                egui::FontId::proportional(11.0),
                ink,
            );
            return;
        };
        let lane = Rect::from_x_y_ranges(plot.x_range(), rect.top() + 6.0..=rect.bottom() - 6.0);
        let top = page.gfp.iter().fold(0f32, |m, &v| m.max(v)).max(1e-9);
        let top = nice_ceiling(top as f64) as f32;
        painter.text(
            Pos2::new(rect.left() + 6.0, lane.center().y),
            egui::Align2::LEFT_CENTER,
            format!("GFP\n0–{top} {}", page.unit),
            egui::FontId::proportional(11.0),
            ink,
        );
        painter.line_segment(
            [lane.left_bottom(), lane.right_bottom()],
            Stroke::new(1.0, Color32::from_gray(190)),
        );
        let span = b.settings.span_s;
        let cols = lane.width().max(1.0) as usize;
        let n = page.gfp.len();
        let mut points = Vec::with_capacity(2 * cols);
        // Per pixel column its largest GFP (a page holds more samples than pixels).
        for c in 0..cols {
            let t = |x: usize| b.t0 + x as f64 / cols as f64 * span;
            let (i, j) = (
                ((t(c) - page.t0) * page.fs) as usize,
                ((t(c + 1) - page.t0) * page.fs).ceil() as usize,
            );
            let (i, j) = (i.min(n), j.min(n).max(i.min(n) + 1).min(n));
            if i >= j {
                continue;
            }
            let v = page.gfp[i..j].iter().fold(0f32, |m, &v| m.max(v));
            let x = lane.left() + c as f32;
            points.push(Pos2::new(
                x,
                lane.bottom() - (v / top).min(1.0) * lane.height(),
            ));
        }
        painter.add(egui::Shape::line(
            points,
            Stroke::new(1.2, Color32::from_rgb(30, 30, 30)),
        ));
        if let Some(t) = self.at.filter(|_| self.map) {
            let x = lane.left() + ((t - b.t0) / span) as f32 * lane.width();
            painter.line_segment(
                [Pos2::new(x, lane.top()), Pos2::new(x, lane.bottom())],
                Stroke::new(1.0, Color32::from_rgb(200, 60, 60)),
            );
        }
    }
}

/// The smallest of 1, 2, 5 times a power of ten at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&x| x >= v * (1.0 - 1e-12))
        .unwrap_or(10.0 * p)
}

/// The scalp electrodes (good or interpolated) under the page's reference, over the page,
/// filtered as the page's EEG, in their reading unit; and their GFP.
fn read_page(b: &Browser, key: (usize, u64, u64)) -> Result<Page, String> {
    let spec = &b.traces.spec;
    let rec = &spec.rec;
    let scalp = rec.scalp_electrodes();
    let m = Montage {
        name: "scalp".into(),
        derivations: (scalp.iter())
            .map(|&c| {
                DerivationSpec::new(
                    rec.signals[c].label.clone(),
                    rec.signals[c].label.clone(),
                    Minus::None,
                )
            })
            .collect(),
    };
    let resolved = montage::resolve(rec, &m, &spec.reference).map_err(|e| e.to_string())?;
    let derivations: Vec<montage::Derivation> = (resolved.derivations.into_iter())
        .filter(|d| !rec.signals[d.plus].bad || d.interpolated)
        .collect();
    let Some(plus) = derivations.first().map(|d| d.plus) else {
        return Err("no scalp electrodes to map".into());
    };
    let fs = rec.signals[plus].fs;
    let derivations: Vec<_> = derivations
        .into_iter()
        .filter(|d| rec.signals[d.plus].fs == fs)
        .collect();
    if derivations.len() < 3 {
        return Err("fewer than three scalp electrodes to map".into());
    }
    let filter = (spec.type_filters.iter())
        .find(|(k, _)| *k == ChannelType::Eeg)
        .map_or(spec.filter, |(_, f)| *f);
    let (seg_start, seg_first, seg_len) = (rec.signal_segments(plus).into_iter())
        .find(|s| b.t0 < s.0 + s.2 as f64 / fs)
        .ok_or("the page is past the recording's end")?;
    let from = ((b.t0 - seg_start).max(0.0) * fs).floor() as usize;
    let len = ((b.settings.span_s * fs).ceil() as usize + 1).min(seg_len.saturating_sub(from));
    let group: Vec<usize> = (0..derivations.len()).collect();
    let mut data = montage::derive_filtered(
        rec,
        &derivations,
        &group,
        seg_first + from,
        len,
        (seg_first, seg_first + seg_len),
        |_| filter,
    )
    .map_err(|e| e.to_string())?;
    let unit = reading_unit(&rec.signals[plus].unit).0;
    for (x, d) in data.iter_mut().zip(&derivations) {
        let own = reading_unit(&rec.signals[d.plus].unit).1;
        x.iter_mut().for_each(|v| *v *= own as f32);
    }
    let count = data.len() as f32;
    let gfp = (0..len)
        .map(|t| {
            let mean = data.iter().map(|x| x[t]).sum::<f32>() / count;
            (data.iter().map(|x| (x[t] - mean).powi(2)).sum::<f32>() / count).sqrt()
        })
        .collect();
    Ok(Page {
        key,
        t0: seg_start + from as f64 / fs,
        fs,
        labels: derivations.iter().map(|d| d.label.clone()).collect(),
        positions: derivations
            .iter()
            .map(|d| rec.signals[d.plus].position)
            .collect(),
        unit,
        data,
        gfp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_round_up_to_one_two_five() {
        assert_eq!(nice_ceiling(7.3), 10.0);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(1.2), 2.0);
        assert_eq!(nice_ceiling(0.031), 0.05);
        assert_eq!(nice_ceiling(480.0), 500.0);
    }
}
