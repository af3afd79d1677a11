//! Drawing the lanes: every trace in its lane with its label (click to select, right-click to
//! hide or give it its own filters), the time grid with gaps, annotation markers and the
//! selection; and Fit, which scales each lane to what it shows.

use eframe::egui::{self, Color32, Pos2, Rect, Sense, Stroke, Vec2};

use super::format::{fmt_amp, format_time, nice_step, shown_in};
use super::menus::filter_choices;
use super::{AXIS_HEIGHT, Browser, LABEL_WIDTH};
use crate::app::lanes::trace_colour;
use crate::app::traces::Screen;

impl Browser {
    pub(super) fn traces_ui(&mut self, ui: &mut egui::Ui) {
        let full = ui.available_rect_before_wrap();
        let response = ui.allocate_rect(full, Sense::click_and_drag());
        let total = self.traces.spec.derivations.len();
        let per_page = self.settings.channels_per_page;
        let visible = self.lanes.page(total, per_page);
        let shown = self.lanes.shown(total).len();
        let paged = visible.len() < shown;
        let plot = Rect::from_min_max(
            Pos2::new(full.left() + LABEL_WIDTH, full.top() + 4.0),
            Pos2::new(
                full.right() - if paged { 16.0 } else { 6.0 },
                full.bottom() - AXIS_HEIGHT,
            ),
        );
        if plot.width() < 20.0 || plot.height() < 20.0 {
            return;
        }
        if self.plot_rect != plot {
            // Views aligned with the traces draw with this next frame.
            ui.ctx().request_repaint();
        }
        self.plot_rect = plot;
        let row_h = plot.height() / visible.len().max(1) as f32;
        self.lane_points = row_h;
        // At a paper speed, the page holds what the plot's width in mm covers.
        if let Some(span) = self.settings.calibration.span_s(plot.width()) {
            self.settings.span_s = span;
        }
        let montage = self.handle_input(ui, &response, plot, (paged, row_h));
        self.clamp_view();
        let track = Rect::from_min_max(
            Pos2::new(plot.right() + 4.0, plot.top()),
            Pos2::new(full.right() - 2.0, plot.bottom()),
        );
        self.lanes.scrollbar(ui, track, visible.len(), shown);
        let ppp = ui.ctx().pixels_per_point();
        let columns = (plot.width() * ppp).round().max(1.0) as usize;
        let screen = self.screen(columns);
        if !screen.exact {
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(100));
        }
        let painter = ui.painter_at(full);
        if std::mem::take(&mut self.fit_requested) {
            self.fit(&screen, &visible);
        }
        self.draw_time_grid(&painter, plot, full);
        let annotation_labels = self.draw_annotations(&painter, plot, &visible, row_h);
        let mut mesh = egui::Mesh::default();
        let col_w = plot.width() / columns as f32;
        let label_font = egui::FontId::proportional(12.0_f32.min(row_h * 0.8).max(7.0));
        let mut mark_bad = None;
        let mut retype = None;
        for (row, &d) in visible.iter().enumerate() {
            let der = &self.traces.spec.derivations[d].clone();
            let sig = &self.rec.signals[der.plus];
            let center = plot.top() + (row as f32 + 0.5) * row_h;
            let selected = self.selected == Some(d);
            // A bad channel's trace is greyed: it stays readable but out of the way.
            let color = if selected {
                Color32::from_rgb(200, 30, 30)
            } else if der.interpolated {
                // Interpolated from its neighbours: drawn, but not as a recorded trace.
                Color32::from_rgb(20, 150, 150)
            } else if sig.bad {
                Color32::from_gray(175)
            } else {
                der.colour.map_or_else(
                    || trace_colour(sig.kind),
                    |[r, g, b]| Color32::from_rgb(r, g, b),
                )
            };
            let scale = self.lane_scale(d);
            let cols = &screen.columns[d];
            let baseline = if self.settings.centre {
                screen.baselines[d]
            } else {
                0.0
            };
            let px_per_unit = row_h / scale;
            let mut prev: Option<(f32, f32)> = None;
            for (c, v) in cols.iter().enumerate() {
                if v[0].is_nan() {
                    prev = None;
                    continue;
                }
                let mut lo = center - (v[1] - baseline) * px_per_unit;
                let mut hi = center - (v[0] - baseline) * px_per_unit;
                if let Some((plo, phi)) = prev {
                    // Join neighbouring columns so steep edges stay connected.
                    lo = lo.min(phi);
                    hi = hi.max(plo);
                }
                prev = Some((
                    center - (v[1] - baseline) * px_per_unit,
                    center - (v[0] - baseline) * px_per_unit,
                ));
                let x = plot.left() + c as f32 * col_w;
                // Each trace is clipped at its stated number of lanes unless overlapping is
                // asked for.
                let (slot_top, slot_bottom) = if self.settings.overlap {
                    (plot.top(), plot.bottom())
                } else {
                    let half = row_h / 2.0 * self.settings.clip_lanes.max(0.1);
                    (
                        (center - half).max(plot.top()),
                        (center + half).min(plot.bottom()),
                    )
                };
                let top = lo.clamp(slot_top, slot_bottom);
                let bottom = hi.clamp(slot_top, slot_bottom).max(top + 1.0 / ppp);
                mesh.add_colored_rect(
                    Rect::from_min_max(
                        Pos2::new(x, top),
                        Pos2::new(x + col_w.max(1.0 / ppp), bottom),
                    ),
                    color,
                );
            }
            // The label, with the amplitude of a slot.
            let label_rect = Rect::from_min_max(
                Pos2::new(full.left(), center - row_h / 2.0),
                Pos2::new(plot.left() - 4.0, center + row_h / 2.0),
            );
            if selected {
                painter.rect_filled(label_rect, 2.0, Color32::from_rgb(255, 225, 225));
            }
            // A channel the file marks bad keeps its lane, its label struck in red.
            let (text, ink) = if der.interpolated {
                (
                    format!("{} (interpolated)", der.label),
                    Color32::from_rgb(20, 120, 120),
                )
            } else if sig.bad {
                (
                    format!("{} (bad)", der.label),
                    Color32::from_rgb(190, 40, 40),
                )
            } else {
                (der.label.clone(), Color32::from_gray(20))
            };
            painter.text(
                Pos2::new(full.left() + 6.0, center),
                egui::Align2::LEFT_CENTER,
                text,
                label_font.clone(),
                ink,
            );
            if row_h > 26.0 {
                painter.text(
                    Pos2::new(plot.left() - 6.0, center + row_h * 0.25),
                    egui::Align2::RIGHT_CENTER,
                    {
                        let (v, unit) = shown_in(scale, &sig.unit);
                        format!("{} {unit}", fmt_amp(v))
                    },
                    egui::FontId::proportional(9.0),
                    Color32::from_gray(120),
                );
            }
            let id = ui.scope_id().with(("label", d));
            let r = ui.interact(label_rect, id, Sense::click());
            if r.clicked() {
                self.selected = if selected { None } else { Some(d) };
            }
            let r = r.on_hover_text(format!(
                "{} · {} Hz · {}\nclick: select (shift+up/down scales it) · right-click: hide, \
                 this channel's filters",
                der.label, sig.fs, sig.unit
            ));
            let mut own = self.traces.spec.channel_filters.get(&d).copied();
            let before = own;
            r.context_menu(|ui| {
                if ui.button("Hide").clicked() {
                    self.lanes.hidden.insert(d);
                    ui.close();
                }
                let bad = sig.bad;
                let text = if bad { "Mark good (B)" } else { "Mark bad (B)" };
                if ui
                    .button(text)
                    .on_hover_text("bad: out of every average and of the analyses' default picks")
                    .clicked()
                {
                    mark_bad = Some((der.plus, !bad));
                    ui.close();
                }
                ui.menu_button(format!("Type: {}", sig.kind.name()), |ui| {
                    for t in crate::recording::ChannelType::ALL {
                        if ui.selectable_label(sig.kind == t, t.name()).clicked() {
                            retype = Some((der.plus, t));
                            ui.close();
                        }
                    }
                });
                ui.separator();
                let mut custom = own.is_some();
                ui.checkbox(&mut custom, "own filters")
                    .on_hover_text("off: the Filter menu's, as every channel");
                own = match (custom, own) {
                    (false, _) => None,
                    (true, None) => Some(self.settings.filter),
                    (true, Some(f)) => Some(f),
                };
                if let Some(f) = own.as_mut() {
                    filter_choices(ui, f);
                }
            });
            if own != before {
                self.set_channel_filter(d, own);
            }
        }
        painter.add(egui::Shape::mesh(mesh));
        if let Some((c, bad)) = mark_bad {
            self.set_bad(c, bad);
        }
        if let Some((c, kind)) = retype {
            self.set_type(c, kind);
        }
        if let Some(choice) = montage {
            self.set_montage(choice);
        }
        // Labels go over the traces so that a large deflection cannot hide them.
        painter.extend(annotation_labels);
        self.cursor_and_measure(ui, &response, &painter, plot, &visible, row_h);
        painter.rect_stroke(
            plot,
            0.0,
            Stroke::new(1.0, Color32::from_gray(170)),
            egui::StrokeKind::Outside,
        );
    }

    /// Sets each shown trace's gain so that its deflections in `screen` (the 99th percentile
    /// of the columns' distances from its baseline, so one spike does not flatten the rest)
    /// fill 45 % of the lane each side of its centre. Flat traces keep their gain.
    fn fit(&mut self, screen: &Screen, visible: &[usize]) {
        for &d in visible {
            let base = if self.settings.centre {
                screen.baselines[d]
            } else {
                0.0
            };
            let mut extents: Vec<f32> = screen.columns[d]
                .iter()
                .filter(|v| v[0].is_finite() && v[1].is_finite())
                .map(|v| (v[1] - base).max(base - v[0]))
                .collect();
            if extents.is_empty() {
                continue;
            }
            let k = ((extents.len() - 1) as f32 * 0.99).round() as usize;
            let (_, &mut extent, _) = extents.select_nth_unstable_by(k, f32::total_cmp);
            if !(extent.is_finite() && extent > 0.0) {
                continue;
            }
            let unit_scale = self.type_lane_scale(d);
            // px_per_unit = row_h / scale and extent * px_per_unit = 0.45 row_h.
            self.channel_gain[d] = unit_scale * 0.45 / (extent * self.settings.gain);
        }
    }

    fn draw_time_grid(&self, painter: &egui::Painter, plot: Rect, full: Rect) {
        let span = self.settings.span_s;
        let step = nice_step(span / 10.0);
        let first = (self.t0 / step).ceil() as i64;
        let last = ((self.t0 + span) / step).floor() as i64;
        let x_of = |t: f64| plot.left() + ((t - self.t0) / span) as f32 * plot.width();
        // One-second minor lines when they are at least 8 px apart.
        if step > 1.0 && plot.width() / span as f32 >= 8.0 {
            for s in (self.t0.ceil() as i64)..=((self.t0 + span) as i64) {
                let x = x_of(s as f64);
                painter.line_segment(
                    [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                    Stroke::new(0.5, Color32::from_gray(235)),
                );
            }
        }
        for k in first..=last {
            let t = k as f64 * step;
            let x = x_of(t);
            painter.line_segment(
                [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                Stroke::new(1.0, Color32::from_gray(215)),
            );
            painter.text(
                Pos2::new(x, plot.bottom() + 3.0),
                egui::Align2::CENTER_TOP,
                format_time(t),
                egui::FontId::proportional(11.0),
                Color32::from_gray(40),
            );
            painter.text(
                Pos2::new(x, plot.bottom() + 18.0),
                egui::Align2::CENTER_TOP,
                self.clock(t),
                egui::FontId::proportional(10.0),
                Color32::from_gray(110),
            );
        }
        // Gaps of discontinuous recordings.
        let segs = &self.rec.segments;
        for w in segs.windows(2) {
            let end = w[0].start_s + w[0].records as f64 * self.rec.record_duration;
            let (a, b) = (
                x_of(end).max(plot.left()),
                x_of(w[1].start_s).min(plot.right()),
            );
            if b > a {
                painter.rect_filled(
                    Rect::from_min_max(Pos2::new(a, plot.top()), Pos2::new(b, plot.bottom())),
                    0.0,
                    Color32::from_gray(225),
                );
                painter.text(
                    Pos2::new((a + b) / 2.0, plot.top() + 4.0),
                    egui::Align2::CENTER_TOP,
                    "gap",
                    egui::FontId::proportional(10.0),
                    Color32::from_gray(100),
                );
            }
        }
        let _ = full;
    }

    /// Draws the selection, annotation bands and markers (under the traces) and returns the
    /// labels, to be drawn over them.
    /// The selection and the events: an event of the whole recording spans every lane, one
    /// tied to a channel (`text@@channel`) only that channel's lane, and only where it is shown.
    fn draw_annotations(
        &self,
        painter: &egui::Painter,
        plot: Rect,
        lanes: &[usize],
        row_h: f32,
    ) -> Vec<egui::Shape> {
        let (t0, t1) = self.visible_span();
        let span = self.settings.span_s;
        let x_of = |t: f64| plot.left() + ((t - t0) / span) as f32 * plot.width();
        // A channel event being marked: its lane over the stretch dragged so far.
        if let Some((d, a, b)) = self.marking
            && let Some(r) = lanes.iter().position(|&l| l == d)
        {
            let top = plot.top() + r as f32 * row_h;
            let (xa, xb) = (x_of(a.min(b)), x_of(a.max(b)));
            painter.rect_filled(
                Rect::from_min_max(Pos2::new(xa, top), Pos2::new(xb.max(xa + 1.0), top + row_h)),
                0.0,
                Color32::from_rgba_unmultiplied(30, 120, 200, 60),
            );
        }
        if let Some((a, b)) = self.selection.filter(|&(a, b)| b >= t0 && a <= t1) {
            let (xa, xb) = (x_of(a).max(plot.left()), x_of(b).min(plot.right()));
            painter.rect_filled(
                Rect::from_min_max(Pos2::new(xa, plot.top()), Pos2::new(xb, plot.bottom())),
                0.0,
                Color32::from_rgba_unmultiplied(255, 200, 60, 50),
            );
        }
        let color = Color32::from_rgb(30, 120, 200);
        let chosen = self.events.selected.and_then(|i| self.events.list().get(i));
        let visible: Vec<_> = (self.events.list().iter())
            .filter(|a| a.onset + a.duration >= t0 && a.onset <= t1)
            .collect();
        // Dense markers (the beats of an ECG seen over minutes) would hide the traces: they
        // become ticks along the top edge, one per pixel column, without labels.
        let dense = visible.len() as f32 > plot.width() / 6.0;
        let marker_bottom = if dense {
            plot.top() + 8.0
        } else {
            plot.bottom()
        };
        let mut last_column = f32::NEG_INFINITY;
        let mut label_end = f32::NEG_INFINITY;
        let mut labels = Vec::new();
        // The vertical extent of an event: every lane, its channel's lane, or none shown.
        let extent = |a: &crate::recording::Annotation| match a.channel() {
            None => Some((plot.top(), plot.bottom())),
            Some(ch) => lanes
                .iter()
                .position(|&d| {
                    let plus = self.traces.spec.derivations[d].plus;
                    self.trace_label(d) == ch || self.rec.signals[plus].label.trim() == ch
                })
                .map(|r| {
                    let top = plot.top() + r as f32 * row_h;
                    (top, top + row_h)
                }),
        };
        for a in visible {
            let Some((top, bottom)) = extent(a) else {
                continue;
            };
            let marker_bottom = if a.channel().is_some() {
                bottom
            } else {
                marker_bottom
            };
            let x = x_of(a.onset);
            if a.duration > 0.0 {
                let x2 = x_of(a.onset + a.duration).min(plot.right());
                painter.rect_filled(
                    Rect::from_min_max(Pos2::new(x.max(plot.left()), top), Pos2::new(x2, bottom)),
                    0.0,
                    Color32::from_rgba_unmultiplied(30, 120, 200, 18),
                );
            }
            if x < plot.left() {
                continue;
            }
            if chosen.is_some_and(|c| std::ptr::eq(c, a)) {
                painter.line_segment(
                    [Pos2::new(x, top), Pos2::new(x, bottom)],
                    Stroke::new(2.5, Color32::from_rgb(220, 60, 140)),
                );
            } else if x.round() != last_column || a.channel().is_some() {
                last_column = x.round();
                painter.line_segment(
                    [Pos2::new(x, top), Pos2::new(x, marker_bottom)],
                    Stroke::new(1.0, color.gamma_multiply(0.6)),
                );
            }
            // A label that would overlap the one before is left out (the list has them all).
            if dense || (a.channel().is_none() && x + 2.0 < label_end) {
                continue;
            }
            let galley_pos = Pos2::new(x + 2.0, top + 1.0);
            let text = painter.layout_no_wrap(
                a.description().to_string(),
                egui::FontId::proportional(11.0),
                color,
            );
            if a.channel().is_none() {
                label_end = galley_pos.x + text.size().x + 6.0;
            }
            labels.push(egui::Shape::rect_filled(
                Rect::from_min_size(galley_pos, text.size() + Vec2::new(4.0, 0.0)),
                2.0,
                Color32::from_rgba_unmultiplied(255, 255, 255, 220),
            ));
            labels.push(egui::Shape::galley(
                galley_pos + Vec2::new(2.0, 0.0),
                text,
                color,
            ));
        }
        labels
    }
}
