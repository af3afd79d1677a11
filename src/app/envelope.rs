//! Many traces in one plot, drawn as the browser draws them: each trace's extent over every
//! pixel column, joined column to column into one mesh of two vertices a column. egui_plot's
//! lines transform, stroke and feather every point instead; at 64 lanes of 5120 samples that
//! was most of a Live-tab frame.

use std::collections::VecDeque;
use std::ops::{Range, RangeInclusive};

use eframe::egui::{Color32, Mesh, Pos2, Shape, Ui};
use egui_plot::{PlotBounds, PlotGeometry, PlotItem, PlotItemBase, PlotTransform};

/// One trace: the stretches `runs` of its samples drawn at `offset + value * gain` on the
/// plot's y axis, `width` points thick.
pub struct Lane<'a> {
    /// The samples, in two parts (a ring buffer's halves; the second may be empty).
    pub samples: [&'a [f32]; 2],
    /// The stretches drawn (each joined within, apart from the others).
    pub runs: Vec<Range<usize>>,
    pub offset: f64,
    pub gain: f64,
    pub color: Color32,
    pub width: f32,
}

impl<'a> Lane<'a> {
    /// A lane of a ring buffer's samples, 1 point thick.
    pub fn of(samples: &'a VecDeque<f32>, runs: Vec<Range<usize>>, color: Color32) -> Self {
        let (a, b) = samples.as_slices();
        Lane {
            samples: [a, b],
            runs,
            offset: 0.0,
            gain: 1.0,
            color,
            width: 1.0,
        }
    }

    pub fn at(self, offset: f64, gain: f64) -> Self {
        Lane {
            offset,
            gain,
            ..self
        }
    }

    /// The samples of `run`, as one slice: borrowed where they lie in one part, else
    /// copied into `scratch`.
    fn slice<'s>(&'s self, run: Range<usize>, scratch: &'s mut Vec<f32>) -> &'s [f32] {
        let [a, b] = self.samples;
        if run.end <= a.len() {
            return &a[run];
        }
        if run.start >= a.len() {
            return &b[run.start - a.len()..run.end - a.len()];
        }
        scratch.clear();
        scratch.extend_from_slice(&a[run.start..]);
        scratch.extend_from_slice(&b[..run.end - a.len()]);
        scratch
    }
}

/// Lanes sampled at `fs` from time `t0` (their sample 0), drawn in order (later ones on
/// top); the y bounds hold the lanes' offsets, `margin` either side, and their values.
pub struct Envelopes<'a> {
    base: PlotItemBase,
    lanes: Vec<Lane<'a>>,
    t0: f64,
    fs: f64,
    bounds: PlotBounds,
}

impl<'a> Envelopes<'a> {
    pub fn new(name: &str, lanes: Vec<Lane<'a>>, (t0, fs): (f64, f64), margin: f64) -> Self {
        let mut bounds = PlotBounds::NOTHING;
        let mut scratch = Vec::new();
        for lane in &lanes {
            for run in lane.runs.iter().filter(|r| !r.is_empty()) {
                bounds.extend_with_x(t0 + run.start as f64 / fs);
                bounds.extend_with_x(t0 + (run.end - 1) as f64 / fs);
                let (lo, hi) = extent(lane.slice(run.clone(), &mut scratch));
                if lo <= hi {
                    bounds.extend_with_y(lane.offset + lo as f64 * lane.gain);
                    bounds.extend_with_y(lane.offset + hi as f64 * lane.gain);
                }
            }
            bounds.extend_with_y(lane.offset - margin);
            bounds.extend_with_y(lane.offset + margin);
        }
        Envelopes {
            base: PlotItemBase::new(name.to_string()),
            lanes,
            t0,
            fs,
            bounds,
        }
    }
}

/// The smallest and largest of `values` (infinite and reversed when there are none; NaNs are
/// passed over). Comparisons rather than `f32::min`, whose NaN rule costs a third of the loop.
fn extent(values: &[f32]) -> (f32, f32) {
    (values.iter()).fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
        (if v < lo { v } else { lo }, if v > hi { v } else { hi })
    })
}

/// The extent of the polyline through `values` (sample k at pixel `p0 + k dp` from the plot's
/// left edge) over each pixel column of `columns` it reaches: the samples in the column and
/// the line's values where it crosses the column's edges. Gives the first column's number
/// and the extents from it.
fn column_extents(
    values: &[f32],
    (p0, dp): (f64, f64),
    columns: Range<i64>,
) -> (i64, Vec<(f32, f32)>) {
    let n = values.len();
    let first = (p0.floor() as i64).max(columns.start);
    let last = ((p0 + n.saturating_sub(1) as f64 * dp).floor() as i64).min(columns.end - 1);
    if n == 0 || last < first {
        return (first, Vec::new());
    }
    // The first sample at or right of pixel position `x`, and the line's value there.
    let index = |x: f64| (((x - p0) / dp).ceil().max(0.0) as usize).min(n);
    let at = |x: f64, k: usize| {
        (k > 0 && k < n).then(|| {
            let f = (x - p0) / dp - (k - 1) as f64;
            values[k - 1] + (values[k] - values[k - 1]) * f as f32
        })
    };
    let mut out = Vec::with_capacity((last - first + 1) as usize);
    let mut left = index(first as f64);
    let mut left_value = at(first as f64, left);
    for c in first..=last {
        let right = index((c + 1) as f64);
        let right_value = at((c + 1) as f64, right);
        let (mut lo, mut hi) = extent(&values[left..right]);
        for v in [left_value, right_value].into_iter().flatten() {
            (lo, hi) = (lo.min(v), hi.max(v));
        }
        out.push((lo, hi));
        (left, left_value) = (right, right_value);
    }
    (first, out)
}

impl PlotItem for Envelopes<'_> {
    fn shapes(&self, ui: &Ui, transform: &PlotTransform, shapes: &mut Vec<Shape>) {
        let ppp = ui.ctx().pixels_per_point();
        let frame = *transform.frame();
        let clip = frame.intersect(ui.clip_rect());
        let columns = (((clip.left() - frame.left()) * ppp).floor() as i64)
            ..(((clip.right() - frame.left()) * ppp).ceil() as i64);
        // Sample k of the lanes in pixels from the frame's left edge.
        let x_of = |k: usize| transform.position_from_point_x(self.t0 + k as f64 / self.fs);
        let dp = transform.dpos_dvalue_x() / self.fs * ppp as f64;
        // Two vertices and two triangles a column, allocated once rather than grown as the
        // mesh fills (at 64 lanes it is about 100,000 vertices).
        let width = (columns.end - columns.start).max(0) as usize;
        let spanned = |r: &Range<usize>| ((r.len() as f64 * dp) as usize + 2).min(width);
        let most: usize = (self.lanes.iter())
            .flat_map(|l| l.runs.iter().map(spanned))
            .sum();
        let mut mesh = Mesh::default();
        mesh.reserve_vertices(2 * most);
        mesh.reserve_triangles(2 * most);
        let mut scratch = Vec::new();
        for lane in &self.lanes {
            let half = 0.5 * lane.width;
            let y0 = transform.position_from_point_y(lane.offset);
            let dy = transform.position_from_point_y(lane.offset + lane.gain) - y0;
            let y_of = |v: f32| y0 + v * dy;
            for run in lane.runs.iter().filter(|r| !r.is_empty()) {
                let p0 = ((x_of(run.start) - frame.left()) * ppp) as f64;
                let values = lane.slice(run.clone(), &mut scratch);
                let (first, extents) = column_extents(values, (p0, dp), columns.clone());
                let base = mesh.vertices.len() as u32;
                for (i, &(a, b)) in extents.iter().enumerate() {
                    let (a, b) = (y_of(a), y_of(b));
                    let (lo, hi) = (a.min(b), a.max(b));
                    let x = frame.left() + ((first + i as i64) as f32 + 0.5) / ppp;
                    let mid = 0.5 * (lo + hi);
                    let reach = (0.5 * (hi - lo) + half).max(half);
                    mesh.colored_vertex(Pos2::new(x, mid - reach), lane.color);
                    mesh.colored_vertex(Pos2::new(x, mid + reach), lane.color);
                    if i > 0 {
                        let v = base + 2 * i as u32;
                        mesh.add_triangle(v - 2, v - 1, v);
                        mesh.add_triangle(v - 1, v + 1, v);
                    }
                }
            }
        }
        if !mesh.is_empty() {
            shapes.push(Shape::mesh(mesh));
        }
    }

    fn initialize(&mut self, _x_range: RangeInclusive<f64>) {}

    fn color(&self) -> Color32 {
        self.lanes.first().map_or(Color32::GRAY, |l| l.color)
    }

    fn allow_hover(&self) -> bool {
        false
    }

    fn geometry(&self) -> PlotGeometry<'_> {
        PlotGeometry::None
    }

    fn bounds(&self) -> PlotBounds {
        self.bounds
    }

    fn base(&self) -> &PlotItemBase {
        &self.base
    }

    fn base_mut(&mut self) -> &mut PlotItemBase {
        &mut self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_samples_give_each_column_their_extent_and_the_joins() {
        // Four samples a column: column 0 holds 0..4, column 1 holds 4..8 and the line's
        // value at its left edge, which is sample 4's own.
        let ys = [0.0, 1.0, -1.0, 2.0, 10.0, 9.0, 9.5, 8.0];
        let (first, e) = column_extents(&ys, (0.0, 0.25), 0..1000);
        assert_eq!(first, 0);
        assert_eq!(e, vec![(-1.0, 10.0), (8.0, 10.0)]);
        // Shifted by half a column: column 0 holds samples 0 and 1 and meets sample 2 at its
        // right edge.
        let (first, e) = column_extents(&ys, (0.5, 0.25), 0..1000);
        assert_eq!(first, 0);
        assert_eq!(e, vec![(-1.0, 1.0), (-1.0, 10.0), (8.0, 9.5)]);
        // Between samples, an edge takes the line's value there.
        let (_, e) = column_extents(&[0.0, 4.0, 0.0], (0.5, 1.0), 0..1000);
        assert_eq!(e, vec![(0.0, 2.0), (2.0, 4.0), (0.0, 2.0)]);
    }

    #[test]
    fn sparse_samples_fill_every_column_between_them() {
        // A sample every four columns: a steep line passes through each column between.
        let (first, e) = column_extents(&[0.0, 8.0], (0.0, 4.0), 0..1000);
        assert_eq!(first, 0);
        assert_eq!(
            e,
            vec![(0.0, 2.0), (2.0, 4.0), (4.0, 6.0), (6.0, 8.0), (8.0, 8.0)]
        );
    }

    #[test]
    fn columns_outside_the_plot_are_left_out() {
        let ys: Vec<f32> = (0..10).map(|k| k as f32).collect();
        let (first, e) = column_extents(&ys, (-3.0, 1.0), 0..4);
        assert_eq!(first, 0);
        // Column c holds sample c + 3 and the line at its right edge.
        assert_eq!(e, vec![(3.0, 4.0), (4.0, 5.0), (5.0, 6.0), (6.0, 7.0)]);
    }

    #[test]
    fn a_ring_buffers_two_parts_read_as_one() {
        let mut q = VecDeque::with_capacity(8);
        q.extend((0..8).map(|k| k as f32));
        q.drain(..3);
        q.extend([8.0, 9.0]);
        assert!(!q.as_slices().1.is_empty(), "the buffer wraps");
        let lane = Lane::of(&q, vec![], Color32::GRAY);
        let mut scratch = Vec::new();
        for run in [0..7, 0..1, 1..7, 2..5] {
            let want: Vec<f32> = q.range(run.clone()).copied().collect();
            assert_eq!(lane.slice(run, &mut scratch), want.as_slice());
        }
    }
}
