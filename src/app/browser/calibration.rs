//! The page as read on paper: amplitudes in uV/mm (fT/mm, fT/cm per mm for MEG) and time in
//! mm/s, against the screen's size measured with a ruler (Page > Calibrate the screen: a bar
//! drawn 100 mm long by the current calibration is measured and the true length typed in,
//! as EDFbrowser calibrates).

use eframe::egui;
use serde::{Deserialize, Serialize};

use super::Browser;

/// Millimetres per inch: without a calibration, a point is taken as 1/96 inch.
const MM_PER_INCH: f32 = 25.4;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Calibration {
    /// egui points per millimetre of the screen.
    pub points_per_mm: f32,
    /// Sensitivity of channels in volts (EEG, EOG, ECG, EMG) in uV/mm; `None`: the data's scale.
    pub uv_per_mm: Option<f32>,
    /// Sensitivity of magnetometers in fT/mm (gradiometers read it as fT/cm per mm).
    pub ft_per_mm: Option<f32>,
    /// Paper speed in mm/s; `None`: the timebase chosen in seconds a page.
    pub mm_per_s: Option<f32>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            points_per_mm: 96.0 / MM_PER_INCH,
            uv_per_mm: None,
            ft_per_mm: None,
            mm_per_s: None,
        }
    }
}

impl Calibration {
    /// The amplitude of a lane `lane_points` high for a channel in `unit`, when a sensitivity
    /// is set for it: in the channel's own unit.
    pub fn lane_scale(&self, unit: &str, lane_points: f32) -> Option<f32> {
        let mm = lane_points / self.points_per_mm;
        let volts = |uv: f32| uv * mm * 1e-6;
        match unit.trim() {
            "uV" | "µV" | "microvolt" => self.uv_per_mm.map(|s| s * mm),
            "mV" => self.uv_per_mm.map(|s| volts(s) * 1e3),
            "V" => self.uv_per_mm.map(volts),
            "nV" => self.uv_per_mm.map(|s| volts(s) * 1e9),
            "T" => self.ft_per_mm.map(|s| s * mm * 1e-15),
            "fT" => self.ft_per_mm.map(|s| s * mm),
            "T/m" => self.ft_per_mm.map(|s| s * mm * 1e-13),
            "fT/cm" => self.ft_per_mm.map(|s| s * mm),
            _ => None,
        }
    }

    /// Seconds on a plot `width_points` wide at the paper speed, when one is set.
    pub fn span_s(&self, width_points: f32) -> Option<f64> {
        self.mm_per_s
            .filter(|&v| v > 0.0)
            .map(|v| (width_points / self.points_per_mm / v) as f64)
    }

    /// "7 µV/mm · 30 mm/s", or empty when nothing is calibrated.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.uv_per_mm {
            parts.push(format!("{s} µV/mm"));
        }
        if let Some(s) = self.ft_per_mm {
            parts.push(format!("{s} fT/mm"));
        }
        if let Some(v) = self.mm_per_s {
            parts.push(format!("{v} mm/s"));
        }
        parts.join(" · ")
    }
}

impl Browser {
    /// The Page menu: sensitivity, paper speed, clipping and the screen's calibration.
    pub(super) fn page_menu(&mut self, ui: &mut egui::Ui) {
        ui.checkbox(&mut self.scalp.map, "Scalp map at the cursor")
            .on_hover_text("the scalp electrodes under the page's reference and EEG filter, at the pointer's time (or the selection's mean)");
        ui.checkbox(&mut self.scalp.gfp, "GFP lane")
            .on_hover_text("global field power: the scalp electrodes' standard deviation at each instant, as MNE's");
        ui.separator();
        let c = &mut self.settings.calibration;
        let choice = |ui: &mut egui::Ui, v: &mut Option<f32>, presets: &[f32], unit: &str| {
            ui.horizontal_wrapped(|ui| {
                if ui.selectable_label(v.is_none(), "from the data").clicked() {
                    *v = None;
                }
                for &p in presets {
                    if ui.selectable_label(*v == Some(p), format!("{p}")).clicked() {
                        *v = Some(p);
                    }
                }
                let mut x = v.unwrap_or(presets[presets.len() / 2]);
                if ui
                    .add(egui::DragValue::new(&mut x).range(0.001..=1e6).suffix(unit))
                    .changed()
                {
                    *v = Some(x);
                }
            });
        };
        ui.label("EEG, EOG, ECG, EMG sensitivity (µV/mm)");
        choice(
            ui,
            &mut c.uv_per_mm,
            &[3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0],
            " µV/mm",
        );
        ui.separator();
        ui.label("MEG sensitivity (fT/mm; fT/cm per mm for gradiometers)");
        choice(
            ui,
            &mut c.ft_per_mm,
            &[20.0, 50.0, 100.0, 200.0, 500.0],
            " fT/mm",
        );
        ui.separator();
        ui.label("Paper speed (mm/s)");
        choice(ui, &mut c.mm_per_s, &[15.0, 30.0, 60.0], " mm/s");
        ui.separator();
        ui.checkbox(
            &mut self.settings.centre,
            "Centre each trace on its level in the window",
        )
        .on_hover_text("off: zero at the lane's centre, offsets as recorded");
        ui.horizontal(|ui| {
            ui.label("Clip traces at");
            for lanes in [1.0, 1.5, 2.0, 3.0] {
                let on = !self.settings.overlap && self.settings.clip_lanes == lanes;
                if ui
                    .selectable_label(on, format!("{lanes} lane(s)"))
                    .clicked()
                {
                    self.settings.clip_lanes = lanes;
                    self.settings.overlap = false;
                }
            }
            if ui
                .selectable_label(self.settings.overlap, "never")
                .clicked()
            {
                self.settings.overlap = true;
            }
        });
        ui.separator();
        if ui
            .button("Select the visible window (shift+drag selects a stretch)")
            .clicked()
        {
            self.selection = Some(self.visible_span());
            ui.close();
        }
        if ui
            .button("Clear the selection and the measurement (Esc)")
            .clicked()
        {
            self.selection = None;
            self.measure.clear();
            ui.close();
        }
        ui.separator();
        if ui.button("Calibrate the screen…").clicked() {
            self.calibrating = Some(100.0);
            ui.close();
        }
    }

    /// The calibration window: a bar 100 mm long as the screen is calibrated now; the user
    /// types the length a ruler gives.
    pub(super) fn calibration_window(&mut self, ctx: &egui::Context) {
        let Some(mut measured) = self.calibrating else {
            return;
        };
        let mut open = true;
        let mut done = false;
        let c = self.settings.calibration;
        egui::Window::new("Calibrate the screen")
            .open(&mut open)
            .collapsible(false)
            .show(ctx, |ui| {
                ui.label("Measure the black bar with a ruler and type its length:");
                let (rect, _) = ui.allocate_exact_size(
                    egui::vec2(100.0 * c.points_per_mm, 14.0),
                    egui::Sense::hover(),
                );
                ui.painter().rect_filled(rect, 0.0, egui::Color32::BLACK);
                ui.horizontal(|ui| {
                    ui.add(
                        egui::DragValue::new(&mut measured)
                            .range(10.0..=1000.0)
                            .suffix(" mm"),
                    );
                    if ui.button("Apply").clicked() {
                        done = true;
                    }
                });
            });
        if done {
            self.settings.calibration.points_per_mm *= 100.0 / measured;
            self.calibrating = None;
        } else {
            self.calibrating = open.then_some(measured);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitivities_and_speeds_follow_the_calibration() {
        let c = Calibration {
            points_per_mm: 4.0,
            uv_per_mm: Some(7.0),
            ft_per_mm: Some(100.0),
            mm_per_s: Some(30.0),
        };
        // A lane 40 points high is 10 mm: 70 uV at 7 uV/mm, in the channel's own unit.
        assert_eq!(c.lane_scale("uV", 40.0), Some(70.0));
        assert!((c.lane_scale("V", 40.0).unwrap() - 70e-6).abs() < 1e-12);
        assert!((c.lane_scale("T", 40.0).unwrap() - 1000e-15).abs() < 1e-20);
        assert!((c.lane_scale("T/m", 40.0).unwrap() - 1000e-13).abs() < 1e-18);
        assert_eq!(c.lane_scale("degC", 40.0), None);
        // 1200 points are 300 mm: 10 s at 30 mm/s.
        assert_eq!(c.span_s(1200.0), Some(10.0));
        assert_eq!(c.describe(), "7 µV/mm · 100 fT/mm · 30 mm/s");
        assert_eq!(Calibration::default().lane_scale("uV", 40.0), None);
    }
}
