//! Reading values off the traces: the cursor (time and value under the pointer), the
//! two-point measurement (ctrl+click) and the statistics of the shown traces over a selection.

use eframe::egui::{self, Color32, Pos2, Rect, Stroke};

use super::format::{fmt_value, format_span, format_time, shown_in};
use super::{Browser, MAX_STATS_SAMPLES, MeasurePoint, Measurement, TraceStats};

impl Browser {
    /// The value of trace `d` (montage applied, display filters not) at the sample nearest to
    /// time `t`; `None` in a gap or outside the recording.
    pub fn value_at(&self, d: usize, t: f64) -> Option<f32> {
        let der = self.traces.spec.derivations.get(d)?;
        let k = self.rec.sample_at(der.plus, t)?;
        let v = *self.traces.spec.derive(&[d], k, 1).ok()?.first()?.first()?;
        v.is_finite().then_some(v)
    }

    /// Adds a point to the two-point measurement (a third starts a new one).
    pub fn add_measure_point(&mut self, d: usize, t: f64) {
        if let Some(value) = self.value_at(d, t) {
            if self.measure.len() == 2 {
                self.measure.clear();
            }
            self.measure.push(MeasurePoint { t, trace: d, value });
        }
    }

    /// The two points against each other, once both are set.
    pub fn measurement(&self) -> Option<Measurement> {
        let [a, b] = self.measure.as_slice() else {
            return None;
        };
        let dt = b.t - a.t;
        Some(Measurement {
            dt,
            hz: 1.0 / dt.abs(),
            dv: (self.trace_unit(a.trace) == self.trace_unit(b.trace)).then_some(b.value - a.value),
        })
    }

    /// The cursor (time and the value of the trace under the pointer) and the measured points;
    /// ctrl+click sets a point.
    pub(super) fn cursor_and_measure(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        painter: &egui::Painter,
        plot: Rect,
        visible: &[usize],
        row_h: f32,
    ) {
        let (t0, span) = (self.t0, self.settings.span_s);
        let x_of = |t: f64| plot.left() + ((t - t0) / span) as f32 * plot.width();
        let orange = Color32::from_rgb(230, 120, 0);
        for (k, p) in self.measure.iter().enumerate() {
            let x = x_of(p.t);
            if x >= plot.left() && x <= plot.right() {
                painter.line_segment(
                    [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                    Stroke::new(1.5, orange),
                );
                painter.text(
                    Pos2::new(x + 3.0, plot.bottom() - 3.0),
                    egui::Align2::LEFT_BOTTOM,
                    ["A", "B"][k],
                    egui::FontId::proportional(12.0),
                    orange,
                );
            }
        }
        let Some(pos) = response.hover_pos().filter(|p| plot.contains(*p)) else {
            return;
        };
        let row = (((pos.y - plot.top()) / row_h) as usize).min(visible.len().saturating_sub(1));
        let Some(&d) = visible.get(row) else {
            return;
        };
        let t = t0 + ((pos.x - plot.left()) / plot.width()) as f64 * span;
        // The modifiers the click itself carried (they may have changed since in this frame).
        let ctrl_click = ui.input(|i| {
            i.events.iter().any(|e| {
                matches!(e, egui::Event::PointerButton { pressed: false, modifiers, .. }
                    if modifiers.command || modifiers.ctrl)
            })
        });
        if response.clicked() && ctrl_click {
            self.add_measure_point(d, t);
        }
        painter.line_segment(
            [
                Pos2::new(pos.x, plot.top()),
                Pos2::new(pos.x, plot.bottom()),
            ],
            Stroke::new(1.0, Color32::from_gray(150)),
        );
        let value = match self.value_at(d, t) {
            Some(v) => {
                let (v, unit) = shown_in(v, self.trace_unit(d));
                format!("{} {unit}", fmt_value(v))
            }
            None => "no data".into(),
        };
        let text = format!("{} · {} · {value}", self.clock(t), self.trace_label(d));
        let font = egui::FontId::proportional(12.0);
        let galley = painter.layout_no_wrap(text, font, Color32::from_gray(20));
        let at = Pos2::new(
            (pos.x + 10.0).min(plot.right() - galley.size().x - 4.0),
            (pos.y - galley.size().y - 8.0).max(plot.top() + 2.0),
        );
        painter.rect_filled(
            Rect::from_min_size(at, galley.size()).expand(3.0),
            3.0,
            Color32::from_rgba_unmultiplied(255, 255, 240, 235),
        );
        painter.galley(at, galley, Color32::from_gray(20));
    }

    /// Each shown trace's statistics over the selection (recomputed when either changes).
    pub fn selection_stats(&mut self) -> Option<&[TraceStats]> {
        let (a, b) = self.selection?;
        let visible = self.lanes.shown(self.traces.spec.derivations.len());
        let fresh = self
            .stats
            .as_ref()
            .is_some_and(|(sel, v, _)| *sel == (a, b) && *v == visible);
        if !fresh {
            let spec = self.traces.spec.clone();
            let total: usize = (visible.iter())
                .map(|&d| ((b - a) * spec.fs(d)) as usize)
                .sum();
            let stats = visible
                .iter()
                .map(|&d| {
                    let plus = spec.derivations[d].plus;
                    let summary = (total <= MAX_STATS_SAMPLES)
                        .then(|| {
                            let k0 = self.rec.sample_at(plus, a)?;
                            let k1 = self.rec.sample_at(plus, b)?;
                            let x = spec.derive(&[d], k0, k1.saturating_sub(k0) + 1).ok()?;
                            crate::dsp::stats::Summary::of(x.first()?)
                        })
                        .flatten();
                    TraceStats {
                        label: spec.derivations[d].label.clone(),
                        unit: self.rec.signals[plus].unit.trim().to_string(),
                        summary,
                    }
                })
                .collect();
            self.stats = Some(((a, b), visible, stats));
        }
        self.stats.as_ref().map(|(_, _, s)| s.as_slice())
    }

    pub(super) fn stats_window(&mut self, ctx: &egui::Context) {
        if !self.show_stats || self.selection.is_none() {
            return;
        }
        let mut open = true;
        let (a, b) = self.selection.unwrap_or_default();
        let range = format!(
            "{} – {} ({})",
            format_time(a),
            format_time(b),
            format_span(b - a)
        );
        let rows = self
            .selection_stats()
            .map(<[TraceStats]>::to_vec)
            .unwrap_or_default();
        egui::Window::new("Selection statistics")
            .open(&mut open)
            .default_pos(self.plot_rect.center())
            .show(ctx, |ui| {
                ui.label(range);
                egui::ScrollArea::vertical()
                    .max_height(400.0)
                    .show(ui, |ui| {
                        egui::Grid::new("stats grid").striped(true).show(ui, |ui| {
                            for h in ["channel", "mean", "SD", "min", "max", "p-p", "RMS", ""] {
                                ui.strong(h);
                            }
                            ui.end_row();
                            for r in &rows {
                                ui.label(&r.label);
                                match &r.summary {
                                    Some(s) => {
                                        for v in
                                            [s.mean, s.sd, s.min, s.max, s.peak_to_peak(), s.rms]
                                        {
                                            ui.label(fmt_value(v as f32));
                                        }
                                    }
                                    None => {
                                        for _ in 0..6 {
                                            ui.label("–");
                                        }
                                    }
                                }
                                ui.label(&r.unit);
                                ui.end_row();
                            }
                        });
                    });
                if rows.iter().all(|r| r.summary.is_none()) {
                    ui.label(format!(
                        "no samples: the selection is empty, in a gap, or over \
                         {MAX_STATS_SAMPLES} samples"
                    ));
                }
            });
        self.show_stats = open;
    }
}
