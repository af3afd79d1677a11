//! The ERP tab's plots: the maps row, the butterfly with the GFP under it, one channel's
//! average with its 95 % band, and the epochs image.

use eframe::egui::{self, Color32, ColorImage, TextureHandle, TextureOptions, Vec2};
use egui_plot::{Legend, Line, Plot, PlotImage, PlotPoint, PlotPoints, Points, Polygon, VLine};
use nalgebra::DMatrix;

use super::{ErpView, ImageOf, Shown};
use crate::analysis::epochs::Epochs;
use crate::app::colormap::ColourMap;
use crate::app::scalp_map::{Caption, Scale, layout};
use crate::dsp::epochs::gfp;

/// Time ticks every 50, 100 and 200 ms, so that a half-width plot labels its axis (the default
/// spacer labels only every 1000 ms there).
fn time_grid() -> impl Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    egui_plot::uniform_grid_spacer(|_| [50.0, 100.0, 200.0])
}

/// The most maps chosen by clicks.
const MAX_LATENCIES: usize = 6;

/// The average shown and its standard error, channel-major, with a title.
struct Wave {
    title: String,
    mean: Vec<f64>,
    se: Vec<f64>,
}

fn wave(e: &Epochs, shown: Shown) -> Wave {
    let se = |c: usize| -> Vec<f64> {
        let a = &e.conditions[c].average;
        let k = (a.n_epochs as f64).max(1.0).sqrt();
        a.sd.iter().map(|s| s / k).collect()
    };
    match shown {
        Shown::Condition(c) => Wave {
            title: format!(
                "{} (N = {})",
                e.conditions[c].name, e.conditions[c].average.n_epochs
            ),
            mean: e.conditions[c].average.mean.clone(),
            se: se(c),
        },
        Shown::Difference(a, b) => Wave {
            title: format!("{} − {}", e.conditions[a].name, e.conditions[b].name),
            mean: (e.conditions[a].average.mean.iter())
                .zip(&e.conditions[b].average.mean)
                .map(|(x, y)| x - y)
                .collect(),
            se: (se(a).iter().zip(se(b)))
                .map(|(x, y)| (x * x + y * y).sqrt())
                .collect(),
        },
    }
}

/// Each channel's colour by its place on the head (hue: direction from the vertex; strength:
/// distance from it), grey for channels without a place: as MNE's butterfly colours them.
fn channel_colours(e: &Epochs) -> Vec<Color32> {
    let grey = Color32::from_gray(140);
    let Some(lay) = layout(&e.labels, &e.positions) else {
        return vec![grey; e.labels.len()];
    };
    (lay.at.iter())
        .map(|p| match p {
            Some([x, y]) => {
                let h = (y.atan2(*x) / std::f64::consts::TAU).rem_euclid(1.0) as f32;
                let s = (x.hypot(*y) as f32).clamp(0.0, 1.0);
                egui::ecolor::Hsva::new(h, 0.25 + 0.75 * s, 0.85, 1.0).into()
            }
            None => grey,
        })
        .collect()
}

/// The three largest local maxima of the GFP after time zero, in time order (MNE's "peaks").
fn gfp_peaks(g: &[f64], times: &[f64]) -> Vec<f64> {
    let mut peaks: Vec<usize> = (1..g.len().saturating_sub(1))
        .filter(|&i| times[i] >= 0.0 && g[i] > g[i - 1] && g[i] >= g[i + 1])
        .collect();
    peaks.sort_by(|&a, &b| g[b].total_cmp(&g[a]));
    peaks.truncate(3);
    let mut out: Vec<f64> = peaks.into_iter().map(|i| times[i]).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// The sample of `times` nearest `t`.
fn nearest(times: &[f64], t: f64) -> usize {
    let i = times.partition_point(|&x| x < t).min(times.len() - 1);
    match i > 0 && (t - times[i - 1]).abs() < (times[i] - t).abs() {
        true => i - 1,
        false => i,
    }
}

/// The epochs image's texture and what it was made of.
#[derive(Default)]
pub(super) struct ImageCache {
    key: Option<(u64, String, ImageOf, Option<String>, usize)>,
    texture: Option<TextureHandle>,
    /// The colour limit (symmetric), the rows' sort latencies (s; NaN: none) and row count.
    limit: f64,
    latencies: Vec<f64>,
}

impl ErpView {
    pub(super) fn plots(&mut self, ui: &mut egui::Ui) {
        let Some(shown) = self.shown.take() else {
            ui.label("no epochs yet");
            return;
        };
        self.plots_of(ui, &shown.0, &shown.1);
        self.shown = Some(shown);
    }

    fn plots_of(&mut self, ui: &mut egui::Ui, req: &super::Request, c: &super::Computed) {
        let e = &c.epochs;
        let req_id = self.generation;
        let times = e.times_s();
        let n = e.len();
        // The row of choices.
        let names: Vec<String> = e.conditions.iter().map(|c| c.name.clone()).collect();
        let channel = (self.channel.as_ref())
            .and_then(|l| e.labels.iter().position(|x| x == l))
            .or_else(|| e.scalp.first().copied())
            .unwrap_or(0);
        ui.horizontal_wrapped(|ui| {
            let label = |s: Shown| match s {
                Shown::Condition(c) => names[c].clone(),
                Shown::Difference(a, b) => format!("{} − {}", names[a], names[b]),
            };
            ui.label("shown");
            egui::ComboBox::from_id_salt("erp shown")
                .selected_text(label(self.shown_as))
                .show_ui(ui, |ui| {
                    for a in 0..names.len() {
                        ui.selectable_value(
                            &mut self.shown_as,
                            Shown::Condition(a),
                            label(Shown::Condition(a)),
                        );
                    }
                    for a in 0..names.len() {
                        for b in (0..names.len()).filter(|&b| b != a) {
                            let d = Shown::Difference(a, b);
                            ui.selectable_value(&mut self.shown_as, d, label(d));
                        }
                    }
                });
            let mut pick = channel;
            ui.label("channel");
            egui::ComboBox::from_id_salt("erp channel")
                .selected_text(&e.labels[channel])
                .show_ui(ui, |ui| {
                    for (i, l) in e.labels.iter().enumerate() {
                        ui.selectable_value(&mut pick, i, l);
                    }
                });
            if pick != channel || self.channel.is_none() {
                self.channel = Some(e.labels[pick].clone());
            }
            ui.label("image of");
            ui.radio_value(&mut self.image_of, ImageOf::Channel, "channel");
            ui.radio_value(&mut self.image_of, ImageOf::Gfp, "GFP");
            let kinds = req.events.kinds.clone();
            ui.label("image sorted by");
            egui::ComboBox::from_id_salt("erp sort")
                .selected_text(self.sort_by.clone().unwrap_or("event order".into()))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.sort_by, None, "event order");
                    for (k, _) in kinds {
                        ui.selectable_value(
                            &mut self.sort_by,
                            Some(k.clone()),
                            format!("latency of {k}"),
                        );
                    }
                });
            if ui
                .button("maps at GFP peaks")
                .on_hover_text(
                    "click the butterfly to place maps; this puts them back at the peaks",
                )
                .clicked()
            {
                self.latencies.clear();
            }
        });
        let w = wave(e, self.shown_as);
        let gfp_channels = e.gfp_channels();
        let g = gfp(&w.mean, n, &gfp_channels);
        let latencies = match self.latencies.is_empty() {
            true => gfp_peaks(&g, &times),
            false => self.latencies.clone(),
        };
        let unit = e.units.get(channel).cloned().unwrap_or_default();
        let scalp_unit = gfp_channels
            .first()
            .map_or(unit.clone(), |&c| e.units[c].clone());

        // Maps at the latencies, and at the hovered one.
        let mut columns: Vec<(f64, bool)> = latencies.iter().map(|&t| (t, false)).collect();
        if let Some(h) = self.hovered {
            columns.push((h, true));
        }
        let mut m = DMatrix::<f64>::zeros(e.labels.len(), columns.len());
        let mut limit: f64 = 0.0;
        for (k, &(t, _)) in columns.iter().enumerate() {
            let i = nearest(&times, t);
            for ch in 0..e.labels.len() {
                m[(ch, k)] = w.mean[ch * n + i];
            }
            for &ch in &gfp_channels {
                limit = limit.max(m[(ch, k)].abs());
            }
        }
        let captions: Vec<Caption> = (columns.iter())
            .map(|&(t, hovered)| Caption {
                text: format!("{}{:.0} ms", if hovered { "↔ " } else { "" }, t * 1e3),
                gone: false,
            })
            .collect();
        self.maps.set_scale(Scale::Shared {
            limit: limit.max(1e-9),
            unit: scalp_unit.clone(),
        });
        ui.allocate_ui(Vec2::new(ui.available_width(), 120.0), |ui| {
            self.maps.grid(
                ui,
                (&e.labels, &e.positions),
                &m,
                &captions,
                (columns.len(), columns.len(), false),
                None,
            );
        });

        // The butterfly and the GFP, their time axes linked.
        let colours = channel_colours(e);
        let avail = ui.available_height();
        let ms: Vec<f64> = times.iter().map(|t| t * 1e3).collect();
        let butterfly_h = (avail * 0.42).max(120.0);
        let link = egui::Id::unique("erp time");
        let mut hovered = None;
        let mut clicked = None;
        let shown_channels: Vec<usize> = match e.scalp.is_empty() {
            true => (0..e.labels.len()).collect(),
            false => e.scalp.clone(),
        };
        Plot::new("erp butterfly")
            .height(butterfly_h)
            .link_axis(link, [true, false])
            .x_axis_label("time (ms)")
            .y_axis_label(format!("{} ({scalp_unit})", w.title))
            .show(ui, |p| {
                for &ch in &shown_channels {
                    let pts: PlotPoints = (0..n).map(|t| [ms[t], w.mean[ch * n + t]]).collect();
                    p.line(
                        Line::new(e.labels[ch].clone(), pts)
                            .color(colours[ch])
                            .width(1.0),
                    );
                }
                for &t in &latencies {
                    p.vline(VLine::new("", t * 1e3).color(Color32::GRAY));
                }
                hovered = p.pointer_coordinate().map(|c| c.x / 1e3);
                if p.response().clicked() {
                    clicked = hovered;
                }
            });
        self.hovered = hovered.filter(|t| *t >= times[0] && *t <= times[n - 1]);
        if let Some(t) = clicked {
            if self.latencies.is_empty() {
                self.latencies = latencies.clone();
            }
            if self.latencies.len() >= MAX_LATENCIES {
                self.latencies.remove(0);
            }
            self.latencies.push(t);
            self.latencies.sort_by(f64::total_cmp);
        }
        Plot::new("erp gfp")
            .height((avail * 0.14).max(60.0))
            .link_axis(link, [true, false])
            .x_axis_label("time (ms)")
            .y_axis_label(format!("GFP ({scalp_unit})"))
            .show(ui, |p| {
                let pts: PlotPoints = (0..n).map(|t| [ms[t], g[t]]).collect();
                p.line(
                    Line::new("GFP", pts)
                        .color(Color32::from_rgb(30, 30, 30))
                        .width(1.5),
                );
                for &t in &latencies {
                    p.vline(VLine::new("", t * 1e3).color(Color32::GRAY));
                }
            });

        // One channel's average with its band, and the epochs image.
        let rest = ui.available_height().max(120.0);
        ui.horizontal_top(|ui| {
            let half = (ui.available_width() - 60.0) / 2.0;
            ui.allocate_ui(Vec2::new(half, rest), |ui| {
                self.band_plot(ui, e, channel, &ms, &unit);
            });
            ui.allocate_ui(Vec2::new(half + 56.0, rest), |ui| {
                self.image_plot(
                    ui,
                    (e, &req.events.list),
                    (channel, &gfp_channels),
                    &ms,
                    &unit,
                    req_id,
                );
            });
        });
    }

    /// The channel's average per condition shown, with mean ± 1.96 standard errors.
    fn band_plot(&self, ui: &mut egui::Ui, e: &Epochs, ch: usize, ms: &[f64], unit: &str) {
        let n = e.len();
        let parts: Vec<Shown> = match self.shown_as {
            Shown::Condition(c) => vec![Shown::Condition(c)],
            Shown::Difference(a, b) => {
                vec![Shown::Condition(a), Shown::Condition(b), self.shown_as]
            }
        };
        let palette = [
            Color32::from_rgb(31, 119, 180),
            Color32::from_rgb(214, 39, 40),
            Color32::from_rgb(40, 40, 40),
        ];
        Plot::new("erp channel")
            .legend(Legend::default())
            .x_grid_spacer(time_grid())
            .x_axis_label("time (ms)")
            .y_axis_label(format!("{} ({unit}), 95 % band", e.labels[ch]))
            .show(ui, |p| {
                for (k, s) in parts.into_iter().enumerate() {
                    let w = wave(e, s);
                    let colour = palette[k];
                    let row = &w.mean[ch * n..(ch + 1) * n];
                    let se = &w.se[ch * n..(ch + 1) * n];
                    // The band as one quadrilateral per sample step: egui_plot fills a
                    // polygon as if it were convex.
                    for t in 1..n {
                        let quad = vec![
                            [ms[t - 1], row[t - 1] - 1.96 * se[t - 1]],
                            [ms[t], row[t] - 1.96 * se[t]],
                            [ms[t], row[t] + 1.96 * se[t]],
                            [ms[t - 1], row[t - 1] + 1.96 * se[t - 1]],
                        ];
                        p.polygon(
                            Polygon::new("", PlotPoints::from(quad))
                                .fill_color(colour.gamma_multiply(0.2))
                                .stroke(egui::Stroke::NONE)
                                .allow_hover(false),
                        );
                    }
                    let pts: PlotPoints = (0..n).map(|t| [ms[t], row[t]]).collect();
                    p.line(Line::new(w.title, pts).color(colour).width(1.5));
                }
            });
    }

    /// Kept epochs of the condition shown (the first of a difference) as rows, coloured by the
    /// channel's (or the GFP's) value, sorted by the chosen event's latency, with a colour bar.
    fn image_plot(
        &mut self,
        ui: &mut egui::Ui,
        (e, events): (&Epochs, &[crate::recording::Annotation]),
        (ch, gfp_channels): (usize, &[usize]),
        ms: &[f64],
        unit: &str,
        req_id: u64,
    ) {
        let c = match self.shown_as {
            Shown::Condition(c) | Shown::Difference(c, _) => c,
        };
        let key = (
            req_id,
            e.labels[ch].clone(),
            self.image_of,
            self.sort_by.clone(),
            c,
        );
        if self.image.key.as_ref() != Some(&key) {
            let cond = &e.conditions[c];
            let n = e.len();
            let kept: Vec<usize> = (0..cond.events.len()).filter(|&i| cond.kept[i]).collect();
            let span = (e.window.0 as f64 / e.fs, e.window.1 as f64 / e.fs);
            let latency = |i: usize| -> f64 {
                let t = cond.events[i].0;
                let Some(name) = &self.sort_by else {
                    return f64::NAN;
                };
                (events.iter())
                    .filter(|a| {
                        a.description().trim() == name && a.onset > t && a.onset - t <= span.1
                    })
                    .map(|a| a.onset - t)
                    .fold(f64::NAN, f64::min)
            };
            let mut rows: Vec<(f64, Vec<f64>)> = (kept.iter())
                .filter_map(|&i| {
                    let x = e.epoch(c, i)?;
                    let values = match self.image_of {
                        ImageOf::Channel => x[ch * n..(ch + 1) * n].to_vec(),
                        ImageOf::Gfp => gfp(&x, n, gfp_channels),
                    };
                    Some((latency(i), values))
                })
                .collect();
            if self.sort_by.is_some() {
                // Epochs without the event last, the rest by latency.
                rows.sort_by(|a, b| match (a.0.is_nan(), b.0.is_nan()) {
                    (false, false) => a.0.total_cmp(&b.0),
                    (x, y) => x.cmp(&y),
                });
            }
            let mut all: Vec<f64> = rows
                .iter()
                .flat_map(|r| r.1.iter().map(|v| v.abs()))
                .collect();
            all.sort_by(f64::total_cmp);
            let limit = all
                .get(all.len().saturating_sub(1) * 99 / 100)
                .copied()
                .unwrap_or(1.0)
                .max(1e-9);
            let range = match self.image_of {
                ImageOf::Channel => (-limit, limit),
                ImageOf::Gfp => (0.0, limit),
            };
            let map = match self.image_of {
                ImageOf::Channel => ColourMap::RdBu,
                ImageOf::Gfp => ColourMap::Viridis,
            };
            let colour = &map.colours(range);
            let h = rows.len().max(1);
            // Row 0 of the texture is the top: the last epoch.
            let pixels = (0..h)
                .rev()
                .flat_map(|r| {
                    let row = rows.get(r);
                    (0..n).map(move |t| row.map_or(Color32::TRANSPARENT, |row| colour(row.1[t])))
                })
                .collect();
            let tex = ui.ctx().load_texture(
                "erp image",
                ColorImage::new([n, h], pixels),
                TextureOptions::NEAREST,
            );
            self.image = ImageCache {
                key: Some(key),
                texture: Some(tex),
                limit,
                latencies: rows.iter().map(|r| r.0).collect(),
            };
        }
        let Some(tex) = &self.image.texture else {
            return;
        };
        let rows = self.image.latencies.len();
        let (x0, x1) = (ms[0], ms[ms.len() - 1]);
        let what = match self.image_of {
            ImageOf::Channel => e.labels[ch].clone(),
            ImageOf::Gfp => "GFP".into(),
        };
        let height = ui.available_height();
        ui.horizontal_top(|ui| {
            let width = ui.available_width() - 56.0;
            ui.allocate_ui(Vec2::new(width, height), |ui| {
                Plot::new("erp image")
                    .x_grid_spacer(time_grid())
                    .x_axis_label("time (ms)")
                    .y_axis_label(format!("{} epochs: {what}", e.conditions[c].name))
                    .show(ui, |p| {
                        let size = egui::Vec2::new((x1 - x0) as f32, rows.max(1) as f32);
                        let centre = PlotPoint::new((x0 + x1) / 2.0, rows.max(1) as f64 / 2.0);
                        p.image(PlotImage::new("epochs", tex.id(), centre, size));
                        let marks: PlotPoints = (self.image.latencies.iter().enumerate())
                            .filter(|(_, l)| l.is_finite())
                            .map(|(r, l)| [l * 1e3, r as f64 + 0.5])
                            .collect();
                        p.points(
                            Points::new("latency", marks)
                                .color(Color32::BLACK)
                                .radius(1.5),
                        );
                        p.vline(VLine::new("", 0.0).color(Color32::DARK_GRAY));
                    });
            });
            let (rect, _) = ui.allocate_exact_size(Vec2::new(52.0, height), egui::Sense::hover());
            let bar = egui::Rect::from_min_size(
                rect.min + Vec2::new(4.0, 18.0),
                Vec2::new(9.0, (height - 40.0).max(20.0)),
            );
            let line = ui.visuals().text_color();
            let (map, range) = match self.image_of {
                ImageOf::Channel => (ColourMap::RdBu, (-self.image.limit, self.image.limit)),
                ImageOf::Gfp => (ColourMap::Viridis, (0.0, self.image.limit)),
            };
            map.bar_with_unit(ui.painter(), (rect, bar), range, (line, unit), |v| {
                format!("{v:.1}")
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_are_the_largest_maxima_after_zero_in_time_order() {
        let times: Vec<f64> = (-2..10).map(|k| k as f64 / 10.0).collect();
        let g = [9.0, 1.0, 0.0, 2.0, 1.0, 5.0, 1.0, 3.0, 1.0, 4.0, 1.0, 0.0];
        // Maxima after zero: 0.1 (2), 0.3 (5), 0.5 (3), 0.7 (4); the first sample's 9 is
        // before zero and no local maximum.
        assert_eq!(gfp_peaks(&g, &times), vec![0.3, 0.5, 0.7]);
        assert_eq!(nearest(&times, 0.26), 5);
        assert_eq!(nearest(&times, -5.0), 0);
        assert_eq!(nearest(&times, 5.0), 11);
    }
}
