//! Scalp maps: values at the electrodes the file places (positions from FIF, BrainVision,
//! EEGLAB or BIDS), or at MNE's `standard_1005` template position of their 10-05 label
//! (`recording::electrodes::head_position`), spread over the head by spherical splines
//! (`dsp::spline`, the interpolation of bad channels too) and drawn in a diverging colour map
//! with the head's outline, nose, ears and electrodes, and a colour bar. ICA components, blink and
//! live components, ERPs and the browser's cursor all draw through here. Textures are made once
//! per map, not every frame.

use eframe::egui::{self, Color32, ColorImage, Pos2, Stroke, TextureHandle, TextureOptions, Vec2};

use super::colormap::ColourMap;
use crate::dsp::ica::Ica;
use crate::dsp::spline::{SphericalSpline, direction};
use crate::recording::electrodes::head_position;
use nalgebra::DMatrix;

/// The smallest map drawn, points across.
const MIN_SIDE: f32 = 30.0;
/// Points beside the maps for their colour bar.
const BAR_WIDTH: f32 = 40.0;

/// Pixels across a map's texture.
pub const SIZE: usize = 64;

/// Where electrodes sit on the flat map: an azimuthal equidistant projection from the vertex,
/// scaled so that the lowest electrode sits at radius `RIM`.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Per channel, its point on the map (x right, y front; the head's outline is the unit
    /// circle); `None` for a channel without a scalp position.
    pub at: Vec<Option<[f64; 2]>>,
    /// The lowest electrode's angle from the vertex (radians): the map's radius `RIM`.
    reach: f64,
}

/// The layout of `labels`, or `None` where fewer than three electrodes have a position. The
/// file's position (head coordinates: x right, y front, z up) comes first, the label's
/// template one otherwise.
pub fn layout(labels: &[String], positions: &[Option<[f64; 3]>]) -> Option<Layout> {
    let polar: Vec<Option<(f64, f64, f64)>> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let own = positions.get(i).copied().flatten();
            let [x, y, z] = head_position(l, own).and_then(direction)?;
            let theta = z.clamp(-1.0, 1.0).acos();
            let r = (x * x + y * y).sqrt().max(1e-12);
            Some((theta, x / r, y / r))
        })
        .collect();
    if polar.iter().flatten().count() < 3 {
        return None;
    }
    let reach = (polar.iter().flatten())
        .map(|p| p.0)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let at = (polar.into_iter())
        .map(|p| p.map(|(t, cx, cy)| [RIM * t / reach * cx, RIM * t / reach * cy]))
        .collect();
    Some(Layout { at, reach })
}

impl Layout {
    /// The direction on the sphere that a point of the map shows (the projection undone).
    fn direction_at(&self, x: f64, y: f64) -> [f64; 3] {
        let rho = (x * x + y * y).sqrt();
        if rho < 1e-12 {
            return [0.0, 0.0, 1.0];
        }
        let theta = rho / RIM * self.reach;
        let s = theta.sin();
        [s * x / rho, s * y / rho, theta.cos()]
    }
}

/// The lowest electrodes' radius on a map of radius 1 (the head's outline).
const RIM: f64 = 0.92;

/// Values on a `size` x `size` grid over the unit disk (row 0 at the front), by the spherical
/// spline through the electrodes; `None` outside the head.
pub fn interpolate(values: &[f64], layout: &Layout, size: usize) -> Vec<Option<f64>> {
    Interpolation::new(layout, size).apply(values)
}

/// `interpolate`'s weights for one layout, worked out once: a map is then one weighted sum per
/// pixel (the spline costs a hundred times more, and the Live tab draws a dozen maps for every
/// new window, the browser one every frame the cursor moves).
pub struct Interpolation {
    /// The electrodes with a position (indices into the channels).
    known: Vec<usize>,
    /// Per cell inside the head, its index and the weights of `known`.
    cells: Vec<(usize, Vec<f64>)>,
    size: usize,
}

impl Interpolation {
    pub fn new(layout: &Layout, size: usize) -> Self {
        let known: Vec<usize> = (0..layout.at.len())
            .filter(|&i| layout.at[i].is_some())
            .collect();
        let electrodes: Vec<[f64; 3]> = (known.iter())
            .filter_map(|&i| layout.at[i].map(|[x, y]| layout.direction_at(x, y)))
            .collect();
        let inside: Vec<(usize, [f64; 3])> = (0..size * size)
            .filter_map(|k| {
                let (row, col) = (k / size, k % size);
                let x = (col as f64 + 0.5) / size as f64 * 2.0 - 1.0;
                let y = 1.0 - (row as f64 + 0.5) / size as f64 * 2.0;
                (x * x + y * y <= 1.0).then(|| (k, layout.direction_at(x, y)))
            })
            .collect();
        let cells = match SphericalSpline::new(&electrodes) {
            Some(spline) => {
                let to: Vec<[f64; 3]> = inside.iter().map(|c| c.1).collect();
                let m = spline.matrix(&to);
                (inside.iter().enumerate())
                    .map(|(r, &(k, _))| (k, m.row(r).iter().copied().collect()))
                    .collect()
            }
            // Coincident electrodes everywhere: their mean.
            None => (inside.iter())
                .map(|&(k, _)| (k, vec![1.0 / known.len().max(1) as f64; known.len()]))
                .collect(),
        };
        Interpolation { known, cells, size }
    }

    /// The grid for one value per channel.
    pub fn apply(&self, values: &[f64]) -> Vec<Option<f64>> {
        let mut out = vec![None; self.size * self.size];
        for (k, w) in &self.cells {
            out[*k] = Some(self.known.iter().zip(w).map(|(&i, w)| w * values[i]).sum());
        }
        out
    }
}

/// Blue for negative, white for zero, red for positive, over `-scale..scale`.
fn diverging(v: f64, scale: f64) -> Color32 {
    let s = scale.max(1e-30);
    ColourMap::RdBu.colour(v, (-s, s))
}

/// How a set of maps is coloured.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Scale {
    /// Each map over its own largest value, drawn positive: ICA leaves a component's sign and
    /// scale free.
    #[default]
    OwnPeak,
    /// Every map on one scale, -limit..limit in `unit` (voltages: an ERP, the cursor's map).
    Shared { limit: f64, unit: String },
}

/// One map as an image, coloured by `scale`.
fn image(values: &[f64], layout: &Layout, grid: &Interpolation, scale: &Scale) -> ColorImage {
    let (sign, limit) = match scale {
        Scale::OwnPeak => {
            let peak = (layout.at.iter().zip(values))
                .filter(|(p, _)| p.is_some())
                .map(|(_, &v)| v)
                .fold(0.0f64, |m, v| if v.abs() > m.abs() { v } else { m });
            (if peak < 0.0 { -1.0 } else { 1.0 }, peak.abs())
        }
        Scale::Shared { limit, .. } => (1.0, *limit),
    };
    let signed: Vec<f64> = values.iter().map(|v| v * sign).collect();
    let pixels = (grid.apply(&signed).iter())
        .map(|g| g.map_or(Color32::TRANSPARENT, |v| diverging(v, limit)))
        .collect();
    ColorImage::new([SIZE, SIZE], pixels)
}

/// Maps of the columns of a matrix (an ICA's components, an ERP at several latencies), kept as
/// textures until the matrix, the channels or the scale change.
#[derive(Default)]
pub struct ScalpMaps {
    /// A fingerprint of the matrix and scale they were made for, and the textures.
    made_for: Option<u64>,
    textures: Vec<TextureHandle>,
    layout: Option<(Layout, Interpolation)>,
    labels: Vec<String>,
    positions: Vec<Option<[f64; 3]>>,
    scale: Scale,
}

/// A click on a map of the grid: the component, and whether it was the secondary button.
pub struct MapClick {
    pub component: usize,
    pub secondary: bool,
}

/// What is written under a map, and whether the component is removed (drawn in red).
pub struct Caption {
    pub text: String,
    pub gone: bool,
}

impl ScalpMaps {
    /// Draws the first `shown` components' maps, `per_row` to a row, the removed ones in red.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        channels: (&[String], &[Option<[f64; 3]>]),
        ica: &Ica,
        removed: &[usize],
        (shown, per_row): (usize, usize),
    ) {
        let captions: Vec<Caption> = (0..ica.mixing.ncols())
            .map(|k| {
                let gone = removed.contains(&k);
                Caption {
                    text: if gone {
                        format!("IC {k} removed")
                    } else {
                        format!("IC {k}")
                    },
                    gone,
                }
            })
            .collect();
        self.grid(
            ui,
            channels,
            &ica.mixing,
            &captions,
            (shown, per_row, false),
            None,
        );
    }

    /// The maps of the columns of `mixing` (channels x components) with their `captions`, in
    /// rows as `ui` draws them (two rows in view, or as many as the height holds where `fill`);
    /// the `selected` one outlined. Returns the map clicked.
    pub fn grid(
        &mut self,
        ui: &mut egui::Ui,
        (labels, positions): (&[String], &[Option<[f64; 3]>]),
        mixing: &DMatrix<f64>,
        captions: &[Caption],
        (shown, per_row, fill): (usize, usize, bool),
        selected: Option<usize>,
    ) -> Option<MapClick> {
        let shown = shown.min(mixing.ncols());
        if !self.prepare(ui, (labels, positions), mixing, shown) {
            ui.small("no scalp maps: no channel has a position (in the file or by a 10-10 label)");
            return None;
        }
        let Some((layout, _)) = &self.layout else {
            return None;
        };
        let at = &layout.at;
        let mut clicked = None;
        let red = Color32::from_rgb(220, 50, 47);
        let line = ui.visuals().text_color();
        let width = ui.available_width() - BAR_WIDTH;
        let gap = ui.spacing().item_spacing.x;
        // As many to a row as fit at the smallest size readable: no map cut off at the edge.
        let fits = (width / (MIN_SIDE + gap)).floor().max(1.0) as usize;
        // One row where the caller asks for every map in one (a short panel): it scrolls
        // sideways; otherwise as many to a row as fit.
        let per_row = match per_row >= shown {
            true => shown.max(1),
            false => per_row.min(fits),
        };
        let side = (width / per_row as f32 - gap).clamp(MIN_SIDE, 110.0);
        let lines = (captions.iter().take(shown))
            .map(|c| c.text.lines().count())
            .max()
            .unwrap_or(1);
        let row_h = side + 7.0 + 13.0 * lines as f32;
        let visible_rows = match (per_row >= shown, fill) {
            (true, _) => 1,
            (false, true) => ((ui.available_height() / row_h).floor() as usize).max(2),
            (false, false) => 2,
        };
        // Every component has its map, in rows of `per_row`; what the panel cannot show
        // scrolls, so that the traces below keep their room (and their labels).
        let rows = shown.div_ceil(per_row).max(1);
        let height = (row_h * rows.min(visible_rows) as f32).min(ui.available_height().max(row_h));
        let textures = &self.textures[..shown];
        ui.horizontal_top(|ui| {
            let down = egui::Layout::top_down(egui::Align::Min);
            ui.allocate_ui_with_layout(Vec2::new(width, height), down, |ui| {
                ui.set_width(width);
                ui.set_max_height(height);
                egui::ScrollArea::both()
                    .id_salt("scalp maps")
                    .max_height(height)
                    .max_width(width)
                    .show(ui, |ui| {
                        for (r, row) in textures.chunks(per_row).enumerate() {
                            ui.horizontal(|ui| {
                                for (j, tex) in row.iter().enumerate() {
                                    let k = r * per_row + j;
                                    let caption = &captions[k];
                                    let response = map(
                                        ui,
                                        (tex, at, side),
                                        caption,
                                        selected == Some(k),
                                        (red, line),
                                    );
                                    if response.clicked() || response.secondary_clicked() {
                                        clicked = Some(MapClick {
                                            component: k,
                                            secondary: response.secondary_clicked(),
                                        });
                                    }
                                }
                            });
                        }
                    });
            });
            bar(ui, height, line, &self.scale);
        });
        clicked
    }

    /// Component `k`'s map alone, `side` points across, with the colour bar beside it.
    pub fn one(
        &mut self,
        ui: &mut egui::Ui,
        channels: (&[String], &[Option<[f64; 3]>]),
        mixing: &DMatrix<f64>,
        k: usize,
        (side, caption): (f32, &Caption),
    ) {
        if k >= mixing.ncols() || !self.prepare(ui, channels, mixing, k + 1) {
            return;
        }
        let Some((layout, _)) = &self.layout else {
            return;
        };
        let at = &layout.at;
        let red = Color32::from_rgb(220, 50, 47);
        let line = ui.visuals().text_color();
        ui.horizontal_top(|ui| {
            map(
                ui,
                (&self.textures[k], at, side),
                caption,
                false,
                (red, line),
            );
            bar(ui, side, line, &self.scale);
        });
    }

    /// Colours the maps by `scale` from now on (ICA's maps by their own peaks by default).
    pub fn set_scale(&mut self, scale: Scale) {
        if self.scale != scale {
            self.scale = scale;
            self.made_for = None;
        }
    }

    /// Makes the layout, and the textures of at least the first `count` maps, where the
    /// channels or the maps changed (the Live tab draws a dozen maps of every new window);
    /// false where no channel has a position.
    fn prepare(
        &mut self,
        ui: &egui::Ui,
        (labels, positions): (&[String], &[Option<[f64; 3]>]),
        mixing: &DMatrix<f64>,
        count: usize,
    ) -> bool {
        // A new ICA has a new mixing matrix: its bits tell windows (and refits) apart.
        let made_for =
            (mixing.iter()).fold(mixing.ncols() as u64, |h, v| h.rotate_left(5) ^ v.to_bits());
        if self.labels != labels || self.positions != positions {
            self.labels = labels.to_vec();
            self.positions = positions.to_vec();
            self.layout = layout(labels, positions).map(|at| {
                let grid = Interpolation::new(&at, SIZE);
                (at, grid)
            });
            self.made_for = None;
        }
        let Some((at, grid)) = &self.layout else {
            return false;
        };
        if self.made_for != Some(made_for) || self.textures.len() < count {
            self.textures = (0..count.min(mixing.ncols()))
                .map(|k| {
                    let column: Vec<f64> = mixing.column(k).iter().copied().collect();
                    ui.ctx().load_texture(
                        format!("scalp map {k}"),
                        image(&column, at, grid, &self.scale),
                        TextureOptions::LINEAR,
                    )
                })
                .collect();
            self.made_for = Some(made_for);
        }
        true
    }
}

/// One bar for every map, by their `scale`.
fn bar(ui: &mut egui::Ui, height: f32, line: Color32, scale: &Scale) {
    let (rect, response) =
        ui.allocate_exact_size(Vec2::new(BAR_WIDTH, height), egui::Sense::hover());
    let top = if matches!(scale, Scale::Shared { .. }) {
        16.0
    } else {
        8.0
    };
    let bar = egui::Rect::from_min_size(
        rect.min + Vec2::new(4.0, top),
        Vec2::new(9.0, (height - top - 8.0).max(10.0)),
    );
    match scale {
        Scale::OwnPeak => {
            ColourMap::RdBu.bar(ui.painter(), bar, (-1.0, 1.0), line, |v| match v {
                0.0 => "0".into(),
                v if v.fract() == 0.0 => format!("{v:+.0}"),
                v => format!("{v:+.1}"),
            });
            response.on_hover_text(
                "each map's weights over its largest one (ICA leaves a component's sign and \
                 scale free: the largest weight is drawn positive)",
            );
        }
        Scale::Shared { limit, unit } => {
            let digits = if *limit >= 10.0 { 0 } else { 1 };
            let range = (-limit, *limit);
            ColourMap::RdBu.bar_with_unit(ui.painter(), (rect, bar), range, (line, unit), |v| {
                match v {
                    0.0 => "0".into(),
                    v => format!("{v:+.digits$}"),
                }
            });
            response.on_hover_text(format!("every map on one scale, in {unit}"));
        }
    }
}

/// One map: the image in the head's outline with the nose and electrodes, and its caption;
/// clickable.
fn map(
    ui: &mut egui::Ui,
    (tex, at, side): (&TextureHandle, &[Option<[f64; 2]>], f32),
    caption: &Caption,
    selected: bool,
    (red, line): (Color32, Color32),
) -> egui::Response {
    ui.vertical(|ui| {
        let (rect, response) = ui.allocate_exact_size(Vec2::splat(side), egui::Sense::click());
        let p = ui.painter_at(rect.expand(2.0));
        if selected {
            p.rect_stroke(
                rect,
                3.0,
                Stroke::new(2.0, ui.visuals().selection.bg_fill),
                egui::StrokeKind::Inside,
            );
        }
        let c = rect.center();
        let r = side * 0.5 - 4.0;
        let uv = egui::Rect::from_min_max(Pos2::ZERO, Pos2::new(1.0, 1.0));
        let head = egui::Rect::from_center_size(c, Vec2::splat(2.0 * r));
        p.image(tex.id(), head, uv, Color32::WHITE);
        let gone = caption.gone;
        let colour = if gone { red } else { line };
        let stroke = Stroke::new(if gone { 2.0 } else { 1.0 }, colour);
        p.circle_stroke(c, r, stroke);
        // The nose, at the front (up).
        let nose = vec![
            c + Vec2::new(-r * 0.15, -r * 0.98),
            c + Vec2::new(0.0, -r * 1.12),
            c + Vec2::new(r * 0.15, -r * 0.98),
        ];
        p.line(nose, stroke);
        // The ears, at the sides: a half-oval each, outside the outline.
        for side in [-1.0f32, 1.0] {
            let ear: Vec<Pos2> = (0..=8)
                .map(|k| {
                    let a = std::f32::consts::PI * (k as f32 / 8.0 - 0.5);
                    c + Vec2::new(side * r * (1.0 + 0.07 * a.cos()), r * 0.16 * a.sin())
                })
                .collect();
            p.line(ear, stroke);
        }
        for q in at.iter().flatten() {
            let e = c + Vec2::new(q[0] as f32 * r, -q[1] as f32 * r);
            p.circle_filled(e, 1.2, Color32::from_gray(40));
        }
        // Each line of the caption cut to the map's width: neighbours never overprint.
        ui.set_max_width(side);
        ui.spacing_mut().item_spacing.y = 0.0;
        for line in caption.text.lines() {
            ui.add(egui::Label::new(egui::RichText::new(line).small().color(colour)).truncate());
        }
        response
    })
    .inner
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_frontal_topography_is_strongest_at_the_front() {
        let labels = names(&["Fp1", "Fp2", "Fz", "Cz", "Pz", "O1", "O2", "EOG1"]);
        let lay = layout(&labels, &[]).unwrap();
        let at = &lay.at;
        assert!(at[7].is_none(), "EOG has no scalp position");
        // Front is +y on the map; Cz near the centre (the template's Cz leans back a little).
        assert!(at[0].unwrap()[1] > 0.5 && at[5].unwrap()[1] < -0.5);
        assert!(at[3].unwrap()[0].abs() < 0.05 && at[3].unwrap()[1].abs() < 0.15);
        let values = [10.0, 10.0, 4.0, 1.0, 0.5, 0.2, 0.2, 99.0];
        let grid = interpolate(&values, &lay, 32);
        let row_mean = |row: usize| {
            let v: Vec<f64> = grid[row * 32..(row + 1) * 32]
                .iter()
                .flatten()
                .copied()
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        assert!(
            row_mean(4) > 5.0 * row_mean(27),
            "{} {}",
            row_mean(4),
            row_mean(27)
        );
        assert!(grid[0].is_none(), "corners are outside the head");
        // EOG's 99 has no place on the scalp and must not leak in.
        assert!(grid.iter().flatten().all(|&v| v < 20.0));
        assert!(layout(&names(&["EOG1", "X"]), &[]).is_none());
        // Labels no montage knows, placed by the file: the frontal one maps to the front.
        let labels = names(&["E1", "E2", "E3", "E4"]);
        let at = [
            Some([0.0, 0.09, 0.03]),
            Some([0.0, 0.0, 0.1]),
            Some([-0.08, 0.0, 0.02]),
            Some([0.0, -0.09, 0.03]),
        ];
        let flat = layout(&labels, &at).expect("placed by the file").at;
        let front = flat[0].unwrap();
        assert!(front[1].abs() > 0.5 && front[0].abs() < 1e-9, "{front:?}");
        assert!(flat[1].unwrap()[0].abs() < 1e-9 && flat[1].unwrap()[1].abs() < 1e-9);
    }

    /// The spline solved plainly: the bordered system by LU (no pseudo-inverse), evaluated
    /// at one direction.
    fn spline_at(electrodes: &[[f64; 3]], values: &[f64], at: [f64; 3]) -> f64 {
        use crate::dsp::spline::green;
        let n = electrodes.len();
        let unit = |p: [f64; 3]| {
            let r = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            [p[0] / r, p[1] / r, p[2] / r]
        };
        let e: Vec<[f64; 3]> = electrodes.iter().map(|&p| unit(p)).collect();
        let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let mut c = DMatrix::<f64>::zeros(n + 1, n + 1);
        let mut rhs = nalgebra::DVector::<f64>::zeros(n + 1);
        for i in 0..n {
            for j in 0..n {
                c[(i, j)] = green(dot(e[i], e[j])) + if i == j { 1e-5 } else { 0.0 };
            }
            c[(i, n)] = 1.0;
            c[(n, i)] = 1.0;
            rhs[i] = values[i];
        }
        let coef = c.lu().solve(&rhs).unwrap();
        let a = unit(at);
        (0..n).map(|j| coef[j] * green(dot(a, e[j]))).sum::<f64>() + coef[n]
    }

    #[test]
    fn precomputed_weights_equal_the_spline_solved_plainly() {
        let labels = names(&["Fp1", "Fp2", "F7", "Fz", "Cz", "T8", "Pz", "O1", "EOG"]);
        let lay = layout(&labels, &[]).unwrap();
        let values = [3.0, -1.0, 0.5, 2.0, -4.0, 1.5, 0.25, -2.0, 50.0];
        let size = 24;
        let grid = interpolate(&values, &lay, size);
        let known: Vec<usize> = (0..9).filter(|&i| lay.at[i].is_some()).collect();
        let electrodes: Vec<[f64; 3]> = (known.iter())
            .map(|&i| lay.direction_at(lay.at[i].unwrap()[0], lay.at[i].unwrap()[1]))
            .collect();
        let v: Vec<f64> = known.iter().map(|&i| values[i]).collect();
        for (k, cell) in grid.iter().enumerate() {
            let x = ((k % size) as f64 + 0.5) / size as f64 * 2.0 - 1.0;
            let y = 1.0 - ((k / size) as f64 + 0.5) / size as f64 * 2.0;
            if x * x + y * y > 1.0 {
                assert!(cell.is_none());
                continue;
            }
            let want = spline_at(&electrodes, &v, lay.direction_at(x, y));
            assert!((cell.unwrap() - want).abs() < 1e-8, "cell {k}");
        }
        // The projection undone gives back the electrodes' own directions.
        for &i in &known {
            let own =
                crate::dsp::spline::direction(head_position(&labels[i], None).unwrap()).unwrap();
            let back = lay.direction_at(lay.at[i].unwrap()[0], lay.at[i].unwrap()[1]);
            for d in 0..3 {
                assert!((own[d] - back[d]).abs() < 1e-9, "{}", labels[i]);
            }
        }
    }

    #[test]
    fn a_topography_of_both_signs_draws_red_and_blue() {
        let labels = names(&["Fp1", "Fp2", "Fz", "Cz", "Pz", "O1", "O2"]);
        let lay = layout(&labels, &[]).unwrap();
        let grid = Interpolation::new(&lay, SIZE);
        // Frontal positive, occipital negative: a blink-like dipole.
        let values = [3.0, 3.0, 1.0, 0.0, -1.0, -2.0, -2.0];
        for scale in [
            Scale::OwnPeak,
            Scale::Shared {
                limit: 3.0,
                unit: "uV".into(),
            },
        ] {
            let img = image(&values, &lay, &grid, &scale);
            let red = (img.pixels.iter())
                .filter(|c| c.r() as i32 > c.b() as i32 + 40)
                .count();
            let blue = (img.pixels.iter())
                .filter(|c| c.b() as i32 > c.r() as i32 + 40)
                .count();
            assert!(red > 100 && blue > 100, "red {red}, blue {blue}");
        }
    }
}
