//! The browser's page seen through the decomposition: the components as lanes (Sources), or
//! the fitted channels cleaned of the rejected components drawn over the original (Cleaned),
//! over the browser's time span, paged with it.

use eframe::egui::{self, Color32};
use egui_plot::Plot;

use super::Shown;
use crate::app::browser::Browser;
use crate::app::envelope::{Envelopes, Lane};
use crate::dsp::ica::Observations;
use crate::dsp::stats::robust_spread;

/// Lanes are this far apart; a source's spread (2nd to 98th percentile) spans 2/3 of one.
const LANE: f64 = 8.0;

pub fn page(
    ui: &mut egui::Ui,
    browser: &mut Browser,
    v: &Shown,
    rejected: &[usize],
    sources: bool,
) {
    let data = &v.fitted.data;
    let d = &v.decomposition;
    let fs = data.fs;
    let (t0, t1) = browser.visible_span();
    let span = t1 - t0;
    ui.horizontal(|ui| {
        if ui.button("< page").clicked() {
            browser.scroll(-span);
        }
        if ui.button("page >").clicked() {
            browser.scroll(span);
        }
        ui.label(format!("{t0:.1}-{t1:.1} s (the browser's page)"));
    });
    let a = ((t0 * fs).floor().max(0.0) as usize).min(data.data.cols);
    let b = ((t1 * fs).ceil().max(0.0) as usize).min(data.data.cols);
    if b <= a + 1 {
        ui.label("the page is past the fitted data");
        return;
    }
    let window = data.data.block(data.data.rows, a..b);
    let red = Color32::from_rgb(220, 50, 47);
    let grey = ui.visuals().weak_text_color();
    let blue = Color32::from_rgb(40, 110, 200);
    let text = ui.visuals().text_color();
    if sources {
        let all: Vec<usize> = (0..d.components()).collect();
        let s = d.sources(&all, &window);
        let names: Vec<String> = all.iter().map(|k| format!("IC{k}")).collect();
        let gains = gains(&s, &all);
        lanes_plot(
            "ica sources",
            "s · rejected components in red".into(),
            names,
        )
        .show(ui, |p| {
            let lanes = (all.iter())
                .map(|&k| {
                    let colour = if rejected.contains(&k) { red } else { text };
                    lane(&s, k, colour, gains[k])
                })
                .collect();
            p.add(Envelopes::new(
                "sources",
                lanes,
                (a as f64 / fs, fs),
                LANE / 2.0,
            ));
        });
    } else {
        let cleaned = d.clean(&window, rejected);
        let rows: Vec<usize> = (0..window.rows).collect();
        // One scale for every channel (microvolts compare across the head): a lane is six
        // times the original's median spread, so that blinks and their removal both show.
        let mut spreads: Vec<f32> = (rows.iter())
            .filter_map(|&i| robust_spread(window.row(i)))
            .collect();
        spreads.sort_by(f32::total_cmp);
        let common = spreads
            .get(spreads.len() / 2)
            .copied()
            .unwrap_or(1.0)
            .max(1e-6) as f64;
        let gain = LANE / 1.5 / common;
        let unit = data.units.first().map_or("uV", |u| u.0);
        let label = format!(
            "s · original grey, cleaned blue (without {rejected:?}) · {:.0} {unit} per lane",
            LANE / gain
        );
        lanes_plot("ica cleaned page", label, d.labels.clone()).show(ui, |p| {
            let lanes = (rows.iter())
                .flat_map(|&i| [lane(&window, i, grey, gain), lane(&cleaned, i, blue, gain)])
                .collect();
            p.add(Envelopes::new(
                "cleaned",
                lanes,
                (a as f64 / fs, fs),
                LANE / 2.0,
            ));
        });
    }
}

/// Row `i` of `x` as lane `i`.
fn lane(x: &Observations, i: usize, color: Color32, gain: f64) -> Lane<'_> {
    Lane {
        samples: [x.row(i), &[]],
        runs: std::iter::once(0..x.cols).collect(),
        offset: -(i as f64) * LANE,
        gain,
        color,
        width: 1.0,
    }
}

/// A plot of lanes `LANE` apart, named on the y axis.
fn lanes_plot(id: &str, x_label: String, names: Vec<String>) -> Plot<'static> {
    Plot::new(id.to_string())
        .x_axis_label(x_label)
        .y_axis_formatter(lane_names(names))
        .y_grid_spacer(egui_plot::uniform_grid_spacer(|_| [LANE, LANE, LANE]))
        .y_axis_min_width(44.0)
        .allow_scroll(false)
}

/// The y axis's labels: lane k's name at -k LANE, nothing between.
fn lane_names(
    names: Vec<String>,
) -> impl Fn(egui_plot::GridMark, &std::ops::RangeInclusive<f64>) -> String {
    move |mark, _| {
        let k = (-mark.value / LANE).round();
        match (mark.value + k * LANE).abs() < 1e-6 && k >= 0.0 {
            true => names.get(k as usize).cloned().unwrap_or_default(),
            false => String::new(),
        }
    }
}

/// Each lane's gain: its spread over the page makes 2/3 of a lane.
fn gains(x: &Observations, rows: &[usize]) -> Vec<f64> {
    rows.iter()
        .map(|&i| LANE / 1.5 / robust_spread(x.row(i)).map_or(1.0, |s| s.max(1e-12) as f64))
        .collect()
}
