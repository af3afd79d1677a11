//! Muscle marks as MNE's `ICA.find_bads_muscle` (1.1+) makes them, after Dharmaprani et al.
//! 2016: three criteria of a typical muscle component, each turned into a score in (0, 1) by a
//! logistic, multiplied, and the product compared with the threshold raised to the number of
//! criteria (0.5^3 with positions):
//! 1. the slope of the log-log spectrum from 7 to 45 Hz (Welch, Hamming segments of
//!    min(2048, T) samples, as `Raw.compute_psd` takes them), positive for muscle:
//!    logistic((slope + 0.5) / 0.25);
//! 2. the focus's distance from the centre: the electrodes' distances on MNE's topomap plane,
//!    weighted by the map's normalised magnitude and summed (MNE sums, not averages),
//!    logistic((d - 0.65) / 0.1);
//! 3. the map's smoothness: electrode pairs' closeness times their values' difference, summed,
//!    1 - logistic((s - 300) / 100) (focal maps are rough).
//!
//! Without every channel's position only the slope counts, as in MNE.

use nalgebra::DMatrix;

use crate::dsp::ica::Observations;
use crate::dsp::spectrum::{Welch, WelchParams, hamming};

/// MNE's default threshold.
pub const THRESHOLD: f64 = 0.5;
/// The band whose spectral slope is measured (MNE's defaults), Hz.
pub const BAND: (f64, f64) = (7.0, 45.0);

/// Each component's criteria and score.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MuscleScores {
    /// The log-log spectral slope over `BAND`.
    pub slopes: Vec<f64>,
    /// The product of the criteria's scores.
    pub scores: Vec<f64>,
    /// How many criteria counted (3 with positions, else 1).
    pub criteria: usize,
    pub marked: Vec<usize>,
}

fn expit(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The scores of the components whose `maps` (channels x components, MNE's
/// `get_components`) and `sources` (components x the fitted samples, any scale) are given, at
/// `fs` Hz, with the channels' head-frame `positions` (metres, MNE's) where every channel has
/// one. `None` where the rate cannot hold the band (Nyquist at or below 45 Hz).
pub fn muscle_scores(
    maps: &DMatrix<f64>,
    sources: &Observations,
    fs: f64,
    positions: Option<&[[f64; 3]]>,
    threshold: f64,
) -> Option<MuscleScores> {
    let n_fft = sources.cols.min(2048);
    if fs / 2.0 <= BAND.1 || n_fft < 2 {
        return None;
    }
    let welch = Welch::with_window(
        fs,
        WelchParams {
            segment: n_fft,
            overlap: 0,
        },
        hamming(n_fft),
    );
    let freqs = welch.frequencies();
    let band: Vec<usize> = (0..freqs.len())
        .filter(|&k| freqs[k] >= BAND.0 && freqs[k] <= BAND.1)
        .collect();
    if band.len() < 2 {
        return None;
    }
    let lx: Vec<f64> = band.iter().map(|&k| freqs[k].log10()).collect();
    let slopes: Vec<f64> = (0..sources.rows)
        .map(|c| {
            let psd = welch.psd(sources.row(c)).unwrap_or_default();
            let ly: Vec<f64> = band.iter().map(|&k| psd[k].log10()).collect();
            least_squares_slope(&lx, &ly)
        })
        .collect();
    let mut scores: Vec<f64> = slopes.iter().map(|s| expit((s + 0.5) / 0.25)).collect();
    let criteria = match positions {
        Some(p) if p.len() == maps.nrows() => {
            let plane = topomap_plane(p);
            for (c, score) in scores.iter_mut().enumerate() {
                let map: Vec<f64> = maps.column(c).iter().copied().collect();
                *score *= expit((focus(&plane, &map) - 0.65) / 0.1);
                *score *= 1.0 - expit((smoothness(&plane, &map) - 300.0) / 100.0);
            }
            3
        }
        _ => 1,
    };
    let bar = threshold.powi(criteria as i32);
    let marked = (0..scores.len()).filter(|&c| scores[c] > bar).collect();
    Some(MuscleScores {
        slopes,
        scores,
        criteria,
        marked,
    })
}

/// The slope of the least-squares line through (x, y) (`numpy.polyfit(x, y, 1)[0]`).
fn least_squares_slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

/// MNE's topomap coordinates (`_auto_topomap_coords` on its default sphere, centred at the
/// head origin): the azimuthal equidistant projection, the polar angle as the radius scaled by
/// the distance from the origin over pi / 2.
fn topomap_plane(positions: &[[f64; 3]]) -> Vec<[f64; 2]> {
    positions
        .iter()
        .map(|&[x, y, z]| {
            let r = (x * x + y * y + z * z).sqrt();
            let azimuth = y.atan2(x);
            let polar = if r > 0.0 { (z / r).acos() } else { 0.0 };
            let scale = r / std::f64::consts::FRAC_PI_2;
            [polar * azimuth.cos() * scale, polar * azimuth.sin() * scale]
        })
        .collect()
}

/// The electrodes' distances from their centroid (the farthest 1), weighted by |map| over its
/// largest magnitude, summed.
fn focus(plane: &[[f64; 2]], map: &[f64]) -> f64 {
    let n = plane.len() as f64;
    let cx = plane.iter().map(|p| p[0]).sum::<f64>() / n;
    let cy = plane.iter().map(|p| p[1]).sum::<f64>() / n;
    let dists: Vec<f64> = (plane.iter())
        .map(|p| ((p[0] - cx).powi(2) + (p[1] - cy).powi(2)).sqrt())
        .collect();
    let far = dists.iter().cloned().fold(0.0, f64::max);
    let big = map.iter().map(|v| v.abs()).fold(0.0, f64::max);
    if far <= 0.0 || big <= 0.0 {
        return 0.0;
    }
    (dists.iter().zip(map))
        .map(|(d, v)| d / far * v.abs() / big)
        .sum()
}

/// Sum over electrode pairs (both orders) of their closeness (1 - distance over the largest)
/// times their values' difference over the largest difference.
fn smoothness(plane: &[[f64; 2]], map: &[f64]) -> f64 {
    let n = plane.len();
    let dist = |i: usize, j: usize| {
        ((plane[i][0] - plane[j][0]).powi(2) + (plane[i][1] - plane[j][1]).powi(2)).sqrt()
    };
    let mut far = 0.0f64;
    let mut wide = 0.0f64;
    for i in 0..n {
        for j in 0..n {
            far = far.max(dist(i, j));
            wide = wide.max((map[i] - map[j]).abs());
        }
    }
    if far <= 0.0 || wide <= 0.0 {
        return 0.0;
    }
    let mut sum = 0.0;
    for i in 0..n {
        for j in 0..n {
            sum += (1.0 - dist(i, j) / far) * (map[i] - map[j]).abs() / wide;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_is_the_least_squares_line_s() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let y = [1.0, 3.2, 4.8, 7.1];
        // numpy.polyfit(x, y, 1)[0]
        assert!((least_squares_slope(&x, &y) - 1.99).abs() < 1e-12);
    }

    #[test]
    fn a_focal_peripheral_map_is_rougher_and_farther_than_a_broad_central_one() {
        let plane: Vec<[f64; 2]> = (0..25)
            .map(|k| [(k % 5) as f64 - 2.0, (k / 5) as f64 - 2.0])
            .collect();
        let focal: Vec<f64> = (0..25).map(|k| if k == 0 { 1.0 } else { 0.0 }).collect();
        let broad: Vec<f64> = (plane.iter())
            .map(|p| (-(p[0] * p[0] + p[1] * p[1]) / 8.0).exp())
            .collect();
        assert!(
            focus(&plane, &focal) < focus(&plane, &broad),
            "MNE sums the focus"
        );
        assert!(smoothness(&plane, &focal) < smoothness(&plane, &broad));
    }
}
