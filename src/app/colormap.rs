//! Colour maps and the colour bar every view shares. Only perceptually uniform maps (matplotlib's
//! viridis, magma and cividis, sampled at nine points and interpolated): even steps of value
//! look like even steps of colour, they read in grey, and cividis suits colour-blind readers.
//! No rainbow. Where sign matters (a topography, a difference), the diverging `RdBu`:
//! ColorBrewer's red-blue, white at zero, over a range symmetric about it.

use eframe::egui::{self, Color32, Pos2, Rect, Stroke};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum ColourMap {
    #[default]
    Viridis,
    Magma,
    Cividis,
    /// Diverging: blue below zero, white at it, red above (not among the sequential `ALL`).
    RdBu,
}

const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 81, 139],
    [44, 113, 142],
    [33, 144, 141],
    [39, 173, 129],
    [92, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];

const MAGMA: [[u8; 3]; 9] = [
    [0, 0, 4],
    [28, 16, 68],
    [79, 18, 123],
    [129, 37, 129],
    [181, 54, 122],
    [229, 80, 100],
    [251, 135, 97],
    [254, 194, 135],
    [252, 253, 191],
];

const CIVIDIS: [[u8; 3]; 9] = [
    [0, 34, 78],
    [18, 53, 112],
    [59, 73, 108],
    [87, 93, 109],
    [112, 113, 115],
    [138, 134, 120],
    [166, 157, 116],
    [197, 181, 105],
    [254, 232, 56],
];

/// ColorBrewer's RdBu (9 classes), from negative blue to positive red.
const RDBU: [[u8; 3]; 9] = [
    [33, 102, 172],
    [67, 147, 195],
    [146, 197, 222],
    [209, 229, 240],
    [247, 247, 247],
    [253, 219, 199],
    [244, 165, 130],
    [214, 96, 77],
    [178, 24, 43],
];

fn table(points: &[[u8; 3]; 9]) -> [Color32; 256] {
    std::array::from_fn(|i| {
        let t = i as f64 / 255.0 * (points.len() - 1) as f64;
        let k = (t.floor() as usize).min(points.len() - 2);
        let f = t - k as f64;
        let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
        let (a, b) = (points[k], points[k + 1]);
        Color32::from_rgb(mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2]))
    })
}

static TABLES: std::sync::LazyLock<[[Color32; 256]; 4]> = std::sync::LazyLock::new(|| {
    [
        table(&VIRIDIS),
        table(&MAGMA),
        table(&CIVIDIS),
        table(&RDBU),
    ]
});

/// The colour of values outside any range (NaN: a flat channel).
pub const MISSING: Color32 = Color32::from_gray(170);

impl ColourMap {
    pub const ALL: [ColourMap; 3] = [ColourMap::Viridis, ColourMap::Magma, ColourMap::Cividis];

    pub fn name(self) -> &'static str {
        match self {
            ColourMap::Viridis => "viridis",
            ColourMap::Magma => "magma",
            ColourMap::Cividis => "cividis",
            ColourMap::RdBu => "red-blue",
        }
    }

    /// The map in 256 steps: colouring is then a lookup a value.
    pub fn table(self) -> &'static [Color32; 256] {
        &TABLES[self as usize]
    }

    /// The table as RGBA8 words (r in the low byte), for GPU paint kernels.
    pub fn packed(self) -> [u32; 256] {
        std::array::from_fn(|i| u32::from_le_bytes(self.table()[i].to_array()))
    }

    /// The colour of `v` over `(lo, hi)`; NaN is grey.
    pub fn colour(self, v: f64, range: (f64, f64)) -> Color32 {
        self.colours(range)(v)
    }

    /// `colour` over one range, for many values: the table and the scale looked up once
    /// (with `finite_range`'s selects, a 148 x 148 matrix image took 0.16 ms, now 0.07).
    pub fn colours(self, (lo, hi): (f64, f64)) -> impl Fn(f64) -> Color32 {
        let (table, scale) = (self.table(), 255.0 / (hi - lo));
        move |v| {
            if !v.is_finite() {
                return MISSING;
            }
            // Rounded as floor(x + 0.5) (x >= 0): `f64::round` is a call into libm on x86-64
            // without SSE4.1.
            table[(((v - lo) * scale).clamp(0.0, 255.0) + 0.5) as usize]
        }
    }

    /// A bar of the map over `range`: vertical with five labels to its right (three on a short
    /// bar), or, in a rect wider than tall, horizontal with three labels under it; each
    /// written by `label`.
    pub fn bar(
        self,
        painter: &egui::Painter,
        rect: Rect,
        range: (f64, f64),
        text: Color32,
        label: impl Fn(f64) -> String,
    ) {
        let steps = 64;
        let across = rect.width() > rect.height();
        let colour = self.colours(range);
        let mut mesh = egui::Mesh::default();
        for k in 0..steps {
            let (f0, f1) = (k as f32 / steps as f32, (k + 1) as f32 / steps as f32);
            let cell = match across {
                true => Rect::from_x_y_ranges(
                    rect.left() + f0 * rect.width()..=rect.left() + f1 * rect.width(),
                    rect.y_range(),
                ),
                false => Rect::from_x_y_ranges(
                    rect.x_range(),
                    rect.bottom() - f1 * rect.height()..=rect.bottom() - f0 * rect.height(),
                ),
            };
            let v = range.0 + (range.1 - range.0) * (k as f64 + 0.5) / steps as f64;
            mesh.add_colored_rect(cell, colour(v));
        }
        painter.add(egui::Shape::mesh(mesh));
        painter.rect_stroke(
            rect,
            0.0,
            Stroke::new(1.0, Color32::from_gray(120)),
            egui::StrokeKind::Outside,
        );
        // Five labels where they fit, else the ends and the middle.
        let ticks = if across || rect.height() < 80.0 { 2 } else { 4 };
        for k in 0..=ticks {
            let f = k as f64 / ticks as f64;
            let (at, align) = match across {
                true => (
                    Pos2::new(rect.left() + f as f32 * rect.width(), rect.bottom() + 2.0),
                    [
                        egui::Align2::LEFT_TOP,
                        egui::Align2::CENTER_TOP,
                        egui::Align2::RIGHT_TOP,
                    ][k],
                ),
                false => (
                    Pos2::new(rect.right() + 4.0, rect.bottom() - f as f32 * rect.height()),
                    egui::Align2::LEFT_CENTER,
                ),
            };
            painter.text(
                at,
                align,
                label(range.0 + (range.1 - range.0) * f),
                egui::FontId::proportional(10.0),
                text,
            );
        }
    }

    /// `bar` with its unit written above it, at the top left of `area` (the bar starts lower).
    pub fn bar_with_unit(
        self,
        painter: &egui::Painter,
        (area, bar): (Rect, Rect),
        range: (f64, f64),
        (text, unit): (Color32, &str),
        label: impl Fn(f64) -> String,
    ) {
        self.bar(painter, bar, range, text, label);
        painter.text(
            area.min + egui::Vec2::new(2.0, 2.0),
            egui::Align2::LEFT_TOP,
            unit,
            egui::FontId::proportional(10.0),
            text,
        );
    }

    /// A combo box choosing the map.
    pub fn picker(&mut self, ui: &mut egui::Ui, id: &str) {
        egui::ComboBox::from_id_salt(id)
            .selected_text(self.name())
            .show_ui(ui, |ui| {
                for m in ColourMap::ALL {
                    ui.selectable_value(self, m, m.name());
                }
            });
    }
}

/// The smallest and largest finite values, widened when they are equal; (0, 1) with none.
pub fn finite_range(values: &[f64]) -> (f64, f64) {
    // Selects rather than a filter and f64::min/max (which handle NaN with branches), so that
    // the loop vectorizes: a 148 x 148 matrix's range in half the time (49 -> 24 us).
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &v in values {
        let finite = v.is_finite();
        lo = if finite && v < lo { v } else { lo };
        hi = if finite && v > hi { v } else { hi };
    }
    if lo.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo - 0.5, lo + 0.5)
    } else {
        (0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_run_from_their_first_to_their_last_colour_and_nan_is_grey() {
        let v = ColourMap::Viridis;
        assert_eq!(v.colour(0.0, (0.0, 1.0)), Color32::from_rgb(68, 1, 84));
        assert_eq!(v.colour(1.0, (0.0, 1.0)), Color32::from_rgb(253, 231, 37));
        assert_eq!(v.colour(f64::NAN, (0.0, 1.0)), MISSING);
        assert_eq!(ColourMap::Magma.table()[0], Color32::from_rgb(0, 0, 4));
        assert_eq!(
            ColourMap::Cividis.packed()[255],
            u32::from_le_bytes([254, 232, 56, 255])
        );
        assert_eq!(finite_range(&[f64::NAN, 2.0, 1.0]), (1.0, 2.0));
    }

    /// Lightness rises monotonically along each map (what makes them readable in grey).
    #[test]
    fn lightness_rises_along_every_map() {
        for m in ColourMap::ALL {
            let luma =
                |c: Color32| 0.299 * c.r() as f64 + 0.587 * c.g() as f64 + 0.114 * c.b() as f64;
            let t = m.table();
            for k in (16..256).step_by(16) {
                assert!(luma(t[k]) > luma(t[k - 16]), "{} at {k}", m.name());
            }
        }
    }
}
