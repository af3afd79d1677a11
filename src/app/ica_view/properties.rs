//! One component's properties, as EEGLAB's pop_prop and MNE's plot_properties show them: its
//! map, its spectrum (Welch, 2 s Hann segments, dB), its time course over the whole run, its
//! variance in consecutive 2 s segments, the segments stacked as an image, and its
//! correlations with the EOG and ECG channels, and ICLabel's seven probabilities. Computed once
//! per component and fit.

use eframe::egui::{self, Color32, ColorImage, TextureHandle, TextureOptions, Vec2};
use egui_plot::{Line, Plot, PlotPoints, Points};

use super::Shown;
use crate::analysis::ica::iclabel::CLASSES;
use crate::app::colormap::ColourMap;
use crate::app::envelope::{Envelopes, Lane};
use crate::app::scalp_map::{Caption, ScalpMaps};
use crate::dsp::spectrum::{Welch, WelchParams};

/// Seconds per segment of the spectrum, the variance and the image.
const SEGMENT_S: f64 = 2.0;
/// Rows of the epochs image at most (a night has thousands of segments).
const MAX_ROWS: usize = 400;

/// What was computed for the component last shown.
#[derive(Default)]
pub struct Cache {
    key: Option<(u64, usize)>,
    source: Vec<f32>,
    spectrum: Vec<[f64; 2]>,
    variance: Vec<[f64; 2]>,
    image: Option<(TextureHandle, f64)>,
}

impl Cache {
    fn update(&mut self, ui: &egui::Ui, v: &Shown, k: usize) {
        let d = &v.decomposition;
        let key = (d.fingerprint(), k);
        if self.key == Some(key) {
            return;
        }
        let data = &v.fitted.data;
        let fs = data.fs;
        self.source = d.sources(&[k], &data.data).data;
        self.spectrum = WelchParams::from_seconds(fs, SEGMENT_S, 0.5)
            .ok()
            .and_then(|p| Welch::new(fs, p).psd(&self.source).map(|psd| (p, psd)))
            .map(|(p, psd)| {
                let freqs = Welch::new(fs, p).frequencies();
                (freqs.into_iter().zip(psd))
                    .skip(1)
                    .map(|(f, v)| [f, 10.0 * v.max(1e-30).log10()])
                    .collect()
            })
            .unwrap_or_default();
        let len = (SEGMENT_S * fs).round() as usize;
        let segments: Vec<&[f32]> = self.source.chunks_exact(len.max(1)).collect();
        self.variance = (segments.iter().enumerate())
            .map(|(i, s)| {
                let m = s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64;
                let var = s.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / s.len() as f64;
                [i as f64 * SEGMENT_S, var]
            })
            .collect();
        self.image = epochs_image(ui, &segments, k);
        self.key = Some(key);
    }
}

/// The segments as rows of an image, blue to red over +-the 99th percentile of |value| (every
/// row when there are at most `MAX_ROWS`, else evenly spaced ones).
fn epochs_image(ui: &egui::Ui, segments: &[&[f32]], k: usize) -> Option<(TextureHandle, f64)> {
    let cols = segments.first()?.len();
    let step = segments.len().div_ceil(MAX_ROWS).max(1);
    let rows: Vec<&[f32]> = segments.iter().step_by(step).copied().collect();
    let mut all: Vec<f32> = rows
        .iter()
        .flat_map(|r| r.iter().map(|v| v.abs()))
        .collect();
    let at = (all.len() * 99 / 100).min(all.len() - 1);
    let (_, scale, _) = all.select_nth_unstable_by(at, f32::total_cmp);
    let scale = (*scale as f64).max(1e-12);
    let colour = ColourMap::RdBu.colours((-scale, scale));
    let pixels = rows
        .iter()
        .flat_map(|r| r.iter().map(|&v| colour(v as f64)))
        .collect();
    let image = ColorImage::new([cols, rows.len()], pixels);
    let tex = ui
        .ctx()
        .load_texture(format!("ica epochs {k}"), image, TextureOptions::NEAREST);
    Some((tex, scale))
}

/// ICLabel's seven probabilities of component `k` as bars, or why there are none.
fn iclabel_bars(ui: &mut egui::Ui, v: &Shown, k: usize) {
    let p = match &v.iclabel {
        Ok(p) => p[k],
        Err(why) => {
            ui.small(format!("ICLabel: {why}"));
            return;
        }
    };
    ui.label("ICLabel");
    let text = ui.visuals().text_color();
    for (c, name) in CLASSES.iter().enumerate() {
        let (rect, _) = ui.allocate_exact_size(Vec2::new(200.0, 14.0), egui::Sense::hover());
        let painter = ui.painter();
        let bar =
            egui::Rect::from_min_size(rect.min + Vec2::new(100.0, 2.0), Vec2::new(60.0, 10.0));
        painter.rect_stroke(bar, 0.0, (1.0, Color32::GRAY), egui::StrokeKind::Inside);
        let filled = egui::Rect::from_min_size(bar.min, Vec2::new(60.0 * p[c] as f32, 10.0));
        painter.rect_filled(filled, 0.0, Color32::from_rgb(38, 139, 210));
        let font = egui::FontId::proportional(11.0);
        painter.text(
            rect.left_center(),
            egui::Align2::LEFT_CENTER,
            *name,
            font.clone(),
            text,
        );
        painter.text(
            rect.right_center(),
            egui::Align2::RIGHT_CENTER,
            format!("{:.0} %", 100.0 * p[c]),
            font,
            text,
        );
    }
}

/// The panel of component `k`; true when its Reject/Keep button was clicked.
pub fn panel(
    ui: &mut egui::Ui,
    (v, k, caption): (&Shown, usize, &Caption),
    big_map: &mut ScalpMaps,
    cache: &mut Cache,
) -> bool {
    let d = &v.decomposition;
    if k >= d.components() {
        return false;
    }
    cache.update(ui, v, k);
    let fs = d.fs;
    let mut toggled = false;
    ui.horizontal(|ui| {
        ui.heading(format!("IC{k}"));
        ui.label(format!(
            "{:.1} % of the variance",
            100.0 * d.explained_variance[k]
        ));
        let text = if caption.gone {
            "Keep (R)"
        } else {
            "Reject (R)"
        };
        toggled = ui.button(text).clicked();
        if caption.gone {
            ui.colored_label(Color32::from_rgb(220, 50, 47), "rejected");
        }
    });
    ui.horizontal_top(|ui| {
        big_map.one(
            ui,
            (&d.labels, &d.positions),
            &d.mixing,
            k,
            (170.0, caption),
        );
        ui.vertical(|ui| {
            ui.label("artifact scores");
            if !v.scores.iter().any(|s| s.kind != "muscle") {
                ui.small("no EOG or ECG channel");
            }
            for s in &v.scores {
                let marked = s.marked.contains(&k);
                let value = match s.kind {
                    "muscle" => format!("muscle score {:.2}", s.scores[k]),
                    kind => format!(
                        "{} ({}) r = {:+.2}",
                        s.channel,
                        kind.to_uppercase(),
                        s.scores[k]
                    ),
                };
                let text = format!("{value}{}", if marked { "  marked" } else { "" });
                match marked {
                    true => ui.colored_label(Color32::from_rgb(220, 50, 47), text),
                    false => ui.label(text),
                };
            }
            ui.add_space(6.0);
            iclabel_bars(ui, v, k);
        });
    });
    let height = 150.0;
    ui.label("spectrum");
    Plot::new(("ica spectrum", k))
        .height(height)
        .x_axis_label("Hz")
        .y_axis_label("dB (a.u.²/Hz)")
        .allow_scroll(false)
        .show(ui, |p| {
            p.line(Line::new("", PlotPoints::from(cache.spectrum.clone())));
        });
    ui.label("time course (the whole run; drag to zoom)");
    let colour = ui.visuals().text_color();
    Plot::new(("ica time course", k))
        .height(height)
        .x_axis_label("s")
        .y_axis_label("a.u.")
        .allow_scroll(false)
        .show(ui, |p| {
            let lane = Lane {
                samples: [&cache.source, &[]],
                runs: std::iter::once(0..cache.source.len()).collect(),
                offset: 0.0,
                gain: 1.0,
                color: colour,
                width: 1.0,
            };
            p.add(Envelopes::new("source", vec![lane], (0.0, fs), 0.5));
        });
    ui.label(format!("variance in {SEGMENT_S} s segments"));
    Plot::new(("ica variance", k))
        .height(110.0)
        .x_axis_label("s")
        .y_axis_label("a.u.²")
        .allow_scroll(false)
        .show(ui, |p| {
            p.points(Points::new("", PlotPoints::from(cache.variance.clone())).radius(1.5));
        });
    if let Some((tex, scale)) = &cache.image {
        ui.label(format!(
            "{SEGMENT_S} s segments, top to bottom (colour: a.u., ±{scale:.2} is the 99th percentile)"
        ));
        ui.horizontal_top(|ui| {
            let w = (ui.available_width() - 60.0).max(100.0);
            let size = Vec2::new(w, 160.0);
            ui.add(egui::Image::new((tex.id(), size)).fit_to_exact_size(size));
            let (rect, _) = ui.allocate_exact_size(Vec2::new(50.0, 160.0), egui::Sense::hover());
            let bar =
                egui::Rect::from_min_size(rect.min + Vec2::new(4.0, 6.0), Vec2::new(9.0, 148.0));
            ColourMap::RdBu.bar(ui.painter(), bar, (-scale, *scale), colour, |v| {
                format!("{v:+.1}")
            });
        });
    }
    toggled
}
