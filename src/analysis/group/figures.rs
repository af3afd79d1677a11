//! The figures of a study's first report, as PNG: the group mean Cross-ApEn matrices and their
//! difference, band power per channel and group, Hermite sigma and MSE per beat label and
//! group, blinks per minute and blink residual per subject. Drawn with plotters on a bitmap,
//! with egui's own font, and encoded by the `image` crate the app already uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::FontStyle;

use super::{BANDS, Group, Key, beats_by_label, quantile};

const FONT: &str = "sans-serif";
/// Colours of groups, in order (colour-blind safe, Okabe-Ito).
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

/// Which group each recording belongs to: the participant column `column`, or one group.
pub struct Grouping {
    index: Option<usize>,
}

impl Grouping {
    pub fn new(g: &Group, column: Option<&str>) -> Self {
        let index = column.and_then(|c| g.participant_columns.iter().position(|p| p == c));
        Grouping { index }
    }

    pub fn of(&self, key: &Key) -> String {
        match self.index {
            Some(i) => key
                .participant
                .get(i)
                .cloned()
                .unwrap_or_else(|| "n/a".into()),
            None => "all".into(),
        }
    }
}

/// Draws every figure there are outputs for into `dir`; returns the paths written.
pub fn draw_all(g: &Group, dir: &Path, column: Option<&str>) -> anyhow::Result<Vec<PathBuf>> {
    static FONT_ONCE: std::sync::Once = std::sync::Once::new();
    FONT_ONCE.call_once(|| {
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        );
    });
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let groups = Grouping::new(g, column);
    let mut written = Vec::new();
    let figures: [(&str, (u32, u32), Figure); 4] = [
        ("xapen.png", (1500, 560), xapen),
        ("bandpower.png", (1400, 1300), band_power),
        ("hermite.png", (1400, 600), hermite),
        ("blinks.png", (1400, 600), blinks),
    ];
    for (name, size, draw) in figures {
        let mut buf = vec![255u8; (size.0 * size.1 * 3) as usize];
        let drawn = {
            let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
            let drawn = draw(g, &groups, &root).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            root.present().map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            drawn
        };
        if drawn {
            let path = dir.join(name);
            let mut png = Vec::new();
            image::ImageEncoder::write_image(
                image::codecs::png::PngEncoder::new(&mut png),
                &buf,
                size.0,
                size.1,
                image::ExtendedColorType::Rgb8,
            )?;
            crate::recording::write_whole(&path, &png)
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// A white figure with `title` across its top; the area below it.
fn titled<'a>(root: &Area<'a>, title: &str) -> Result<Area<'a>, Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let (top, body) = root.split_vertically(40);
    top.titled(title, (FONT, 24))?;
    Ok(body)
}
type DrawResult = Result<bool, Box<dyn std::error::Error>>;
/// Draws a figure; `Ok(false)` where there is nothing to draw.
type Figure = fn(&Group, &Grouping, &Area<'_>) -> DrawResult;

fn group_colour(names: &[String], name: &str) -> RGBColor {
    let i = names.iter().position(|n| n == name).unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

/// Viridis-like map of 0..1.
fn sequential(t: f64) -> RGBColor {
    let stops = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let x = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let (i, f) = ((x.floor() as usize).min(stops.len() - 2), x - x.floor());
    let (a, b) = (stops[i], stops[i + 1]);
    let mix = |u: f64, v: f64| (u + (v - u) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Blue-white-red map of -1..1.
fn diverging(t: f64) -> RGBColor {
    let t = t.clamp(-1.0, 1.0);
    let (r, g, b) = if t < 0.0 {
        (1.0 + t, 1.0 + t * 0.6, 1.0)
    } else {
        (1.0, 1.0 - t * 0.6, 1.0 - t)
    };
    RGBColor((r * 255.0) as u8, (g * 255.0) as u8, (b * 255.0) as u8)
}

/// The group mean Cross-ApEn matrix of each group (over the recordings with the most common
/// channel list) and the difference of the first two groups.
fn xapen(g: &Group, groups: &Grouping, root: &Area<'_>) -> DrawResult {
    let mut lists: BTreeMap<&[String], usize> = BTreeMap::new();
    for x in &g.xapen {
        *lists.entry(x.channels.as_slice()).or_default() += 1;
    }
    let Some((&channels, _)) = lists.iter().max_by_key(|(_, n)| **n) else {
        return Ok(false);
    };
    let n = channels.len();
    let mut sums: BTreeMap<String, (Vec<f64>, usize)> = BTreeMap::new();
    for x in g.xapen.iter().filter(|x| x.channels == channels) {
        let e = (sums.entry(groups.of(&x.key))).or_insert((vec![0.0; n * n], 0));
        e.0.iter_mut().zip(&x.matrix).for_each(|(a, v)| *a += v);
        e.1 += 1;
    }
    let means: Vec<(String, Vec<f64>, usize)> = (sums.into_iter())
        .map(|(k, (s, c))| (k, s.iter().map(|v| v / c as f64).collect(), c))
        .collect();
    let (lo, hi) = (means.iter().flat_map(|m| m.1.iter().copied()))
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    let mut panels: Vec<(String, Vec<f64>, bool)> = (means.iter())
        .map(|(k, m, c)| (format!("{k}: mean of {c}"), m.clone(), false))
        .collect();
    if means.len() >= 2 {
        let d: Vec<f64> = means[0]
            .1
            .iter()
            .zip(&means[1].1)
            .map(|(a, b)| a - b)
            .collect();
        panels.push((format!("{} - {}", means[0].0, means[1].0), d, true));
    }
    let body = titled(
        root,
        &format!("Cross-ApEn, {n} channels ({} recordings)", g.xapen.len()),
    )?;
    let cells = body.split_evenly((1, panels.len()));
    for ((title, m, diff), area) in panels.iter().zip(&cells) {
        let span = m.iter().map(|v| v.abs()).fold(0.0f64, f64::max).max(1e-12);
        let scale = if *diff {
            format!("blue -{span:.3} .. red +{span:.3}")
        } else {
            format!("{lo:.3} .. {hi:.3}")
        };
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{title} ({scale})"), (FONT, 16))
            .margin(10)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n - 1).into_segmented(), (0..n - 1).into_segmented())?;
        // Rows top to bottom as in a matrix: row i is drawn at n - 1 - i.
        let label = |flip: bool| {
            move |v: &SegmentValue<usize>| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    let i = if flip { (n - 1).saturating_sub(*i) } else { *i };
                    channels.get(i).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(n.min(32))
            .y_labels(n.min(32))
            .x_label_formatter(&label(false))
            .y_label_formatter(&label(true))
            .label_style((FONT, 11))
            .draw()?;
        chart.draw_series((0..n * n).map(|k| {
            let (i, j) = (k / n, k % n);
            let v = m[k];
            let colour = if *diff {
                diverging(v / span)
            } else {
                sequential((v - lo) / (hi - lo).max(1e-12))
            };
            let at = |c: usize, r: usize| (SegmentValue::Exact(c), SegmentValue::Exact(r));
            Rectangle::new([at(j, n - 1 - i), at(j + 1, n - i)], colour.filled())
        }))?;
    }
    Ok(true)
}

type Categorical<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// A chart of one column per category, named under it, over `y`.
fn categorical<'a, 'b>(
    area: &'a Area<'b>,
    title: &str,
    categories: &[String],
    y: std::ops::Range<f64>,
) -> Result<Categorical<'a, 'b>, Box<dyn std::error::Error + 'a>> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..categories.len() as f64 - 0.5, y)?;
    // Ticks at every half column, named at the whole ones (the columns' centres).
    let label = |x: &f64| {
        let i = x.round();
        match categories.get(i as usize) {
            Some(c) if (x - i).abs() < 1e-6 && i >= 0.0 => c.clone(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&label)
        .label_style((FONT, 12))
        .draw()?;
    Ok(chart)
}

/// Each group's mean log10 band power per channel, one panel per band.
fn band_power(g: &Group, groups: &Grouping, root: &Area<'_>) -> DrawResult {
    if g.band_power.is_empty() {
        return Ok(false);
    }
    let mut channels: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    // (band, group, channel) -> (sum of log10 power, count)
    let mut sums: BTreeMap<(&str, String, String), (f64, usize)> = BTreeMap::new();
    for b in &g.band_power {
        let group = groups.of(&b.key);
        if !names.contains(&group) {
            names.push(group.clone());
        }
        for (c, band, p) in &b.rows {
            if !channels.contains(c) {
                channels.push(c.clone());
            }
            if *p > 0.0 {
                let e = sums.entry((band, group.clone(), c.clone())).or_default();
                e.0 += p.log10();
                e.1 += 1;
            }
        }
    }
    names.sort();
    let body = titled(
        root,
        &format!(
            "Band power per channel and group ({} recordings)",
            g.band_power.len()
        ),
    )?;
    let bands: Vec<&str> = (BANDS.iter().map(|b| b.0))
        .filter(|b| sums.keys().any(|k| k.0 == *b))
        .collect();
    let panels = body.split_evenly((bands.len().max(1), 1));
    let width = 0.8 / names.len().max(1) as f64;
    for (band, area) in bands.iter().zip(&panels) {
        let values: Vec<f64> = (sums.iter())
            .filter(|(k, _)| k.0 == *band)
            .map(|(_, (s, c))| s / *c as f64)
            .collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let pad = ((hi - lo) * 0.1).max(0.1);
        let title = format!("{band} (log10 power)");
        let mut chart = categorical(area, &title, &channels, (lo - pad)..(hi + pad))
            .map_err(|e| e.to_string())?;
        for (k, name) in names.iter().enumerate() {
            let colour = group_colour(&names, name);
            let bars = (channels.iter().enumerate()).filter_map(|(i, c)| {
                let (s, n) = sums.get(&(*band, name.clone(), c.clone()))?;
                let x0 = i as f64 - 0.4 + k as f64 * width;
                Some(Rectangle::new(
                    [(x0, lo - pad), (x0 + width * 0.9, s / *n as f64)],
                    colour.filled(),
                ))
            });
            let series = chart.draw_series(bars)?;
            if band == &bands[0] {
                series.label(name.as_str()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled())
                });
            }
        }
        if band == &bands[0] {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .label_font((FONT, 13))
                .draw()?;
        }
    }
    Ok(true)
}

/// Box plots (quartiles, 5-95 % whiskers, median) of a value per category.
fn boxes(
    area: &Area<'_>,
    title: &str,
    categories: &[(String, String, Vec<f64>)],
    names: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<f64> = categories
        .iter()
        .flat_map(|c| c.2.iter().copied())
        .collect();
    let (lo, hi) = (quantile(&all, 0.0), quantile(&all, 1.0));
    let pad = ((hi - lo) * 0.05).max(1e-9);
    let names_of: Vec<String> = (categories.iter())
        .map(|c| format!("{} {}", c.0, c.1))
        .collect();
    let mut chart =
        categorical(area, title, &names_of, (lo - pad)..(hi + pad)).map_err(|e| e.to_string())?;
    for (i, (_, group, v)) in categories.iter().enumerate() {
        let colour = group_colour(names, group);
        let x = i as f64;
        let q = |p| quantile(v, p);
        chart.draw_series([
            Rectangle::new(
                [(x - 0.3, q(0.25)), (x + 0.3, q(0.75))],
                colour.mix(0.35).filled(),
            ),
            Rectangle::new(
                [(x - 0.3, q(0.25)), (x + 0.3, q(0.75))],
                colour.stroke_width(2),
            ),
        ])?;
        chart.draw_series([
            PathElement::new(
                vec![(x - 0.3, q(0.5)), (x + 0.3, q(0.5))],
                colour.stroke_width(3),
            ),
            PathElement::new(vec![(x, q(0.05)), (x, q(0.25))], colour.stroke_width(1)),
            PathElement::new(vec![(x, q(0.75)), (x, q(0.95))], colour.stroke_width(1)),
        ])?;
    }
    Ok(())
}

/// Hermite sigma and MSE per beat label and group.
fn hermite(g: &Group, groups: &Grouping, root: &Area<'_>) -> DrawResult {
    if g.hermite.is_empty() {
        return Ok(false);
    }
    // (label, group) -> (sigmas in ms, mses)
    type Values = (Vec<f64>, Vec<f64>);
    let mut by: BTreeMap<(String, String), Values> = BTreeMap::new();
    for h in &g.hermite {
        for (label, beats) in beats_by_label(&h.beats) {
            let e = by.entry((label, groups.of(&h.key))).or_default();
            e.0.extend(beats.iter().map(|b| b.0 * 1e3));
            e.1.extend(beats.iter().map(|b| b.1));
        }
    }
    let mut names: Vec<String> = by.keys().map(|k| k.1.clone()).collect();
    names.sort();
    names.dedup();
    let unit = g.hermite.first().map_or("", |h| h.unit.as_str());
    let beats: usize = g.hermite.iter().map(|h| h.beats.len()).sum();
    let body = titled(
        root,
        &format!(
            "Hermite fits per beat label and group ({beats} beats, {} recordings)",
            g.hermite.len()
        ),
    )?;
    let (left, right) = body.split_horizontally(700);
    let cats = |pick: fn(&Values) -> &Vec<f64>| -> Vec<(String, String, Vec<f64>)> {
        (by.iter())
            .map(|((l, g), v)| (l.clone(), g.clone(), pick(v).clone()))
            .collect()
    };
    boxes(&left, "sigma (ms)", &cats(|v| &v.0), &names)?;
    boxes(&right, &format!("MSE ({unit}^2)"), &cats(|v| &v.1), &names)?;
    Ok(true)
}

/// Blinks per minute and blink-locked residual per subject, coloured by group.
fn blinks(g: &Group, groups: &Grouping, root: &Area<'_>) -> DrawResult {
    if g.blinks.is_empty() {
        return Ok(false);
    }
    // subject -> (group, blinks, seconds, residuals)
    type Subject = (String, usize, f64, Vec<f64>);
    let mut by: BTreeMap<String, Subject> = BTreeMap::new();
    for b in &g.blinks {
        let e = (by.entry(b.key.subject.clone())).or_insert((groups.of(&b.key), 0, 0.0, vec![]));
        if let Some(d) = b.duration_s {
            e.1 += b.blinks;
            e.2 += d;
        }
        e.3.extend(b.frontal_residual_pct);
    }
    let mut names: Vec<String> = by.values().map(|v| v.0.clone()).collect();
    names.sort();
    names.dedup();
    let subjects: Vec<&String> = by.keys().collect();
    let body = titled(
        root,
        &format!("Blinks per subject ({} recordings)", g.blinks.len()),
    )?;
    let (left, right) = body.split_horizontally(700);
    let panel = |area: &Area<'_>,
                 title: &str,
                 value: &dyn Fn(&Subject) -> Option<f64>|
     -> Result<(), Box<dyn std::error::Error>> {
        let vals: Vec<Option<f64>> = by.values().map(value).collect();
        if vals.iter().all(Option::is_none) {
            area.titled(title, (FONT, 16))?;
            let note = "none: no `ede blinks measure` output (_desc-blinkquality.json)";
            area.draw_text(note, &(FONT, 14).into_text_style(area), (60, 80))?;
            return Ok(());
        }
        let hi = vals
            .iter()
            .flatten()
            .copied()
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.1;
        let names_of: Vec<String> = subjects.iter().map(|s| format!("sub-{s}")).collect();
        let mut chart = categorical(area, title, &names_of, 0.0..hi).map_err(|e| e.to_string())?;
        for (i, (v, e)) in vals.iter().zip(by.values()).enumerate() {
            if let Some(v) = v {
                let colour = group_colour(&names, &e.0);
                let x = i as f64;
                chart.draw_series([Rectangle::new(
                    [(x - 0.35, 0.0), (x + 0.35, *v)],
                    colour.filled(),
                )])?;
            }
        }
        for (k, name) in names.iter().enumerate() {
            let colour = group_colour(&names, name);
            area.draw(&Rectangle::new(
                [(80, 40 + 20 * k as i32), (92, 52 + 20 * k as i32)],
                colour.filled(),
            ))?;
            area.draw_text(
                name,
                &(FONT, 13).into_text_style(area),
                (98, 39 + 20 * k as i32),
            )?;
        }
        Ok(())
    };
    panel(&left, "blinks per minute", &|e| {
        (e.2 > 0.0).then(|| e.1 as f64 * 60.0 / e.2)
    })?;
    panel(&right, "frontal blink-locked residual (%)", &|e| {
        (!e.3.is_empty()).then(|| e.3.iter().sum::<f64>() / e.3.len() as f64)
    })?;
    Ok(true)
}
