//! Summary statistics of a stretch of samples (SD with ddof = 0, as everywhere in ede).

use serde::Serialize;

/// Mean and SD (ddof = 0); zeros for no values.
pub fn mean_sd(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = values.clone().count();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = values.clone().sum::<f64>() / n as f64;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    (mean, var.sqrt())
}

/// What a reviewer reads off a selection of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Finite samples (gaps left out).
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub max: f64,
    pub rms: f64,
}

impl Summary {
    /// The summary of the finite samples of `x`, or `None` when there are none.
    pub fn of(x: &[f32]) -> Option<Self> {
        let finite = x.iter().filter(|v| v.is_finite()).map(|&v| v as f64);
        let n = finite.clone().count();
        if n == 0 {
            return None;
        }
        let (mean, sd) = mean_sd(finite.clone());
        Some(Summary {
            n,
            mean,
            sd,
            min: finite.clone().fold(f64::INFINITY, f64::min),
            max: finite.clone().fold(f64::NEG_INFINITY, f64::max),
            rms: (finite.map(|v| v * v).sum::<f64>() / n as f64).sqrt(),
        })
    }

    pub fn peak_to_peak(&self) -> f64 {
        self.max - self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_by_hand() {
        let s = Summary::of(&[1.0, f32::NAN, -3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(
            (s.mean, s.min, s.max, s.peak_to_peak()),
            (1.0, -3.0, 4.0, 7.0)
        );
        assert!((s.sd - (30f64 / 4.0 - 1.0).sqrt()).abs() < 1e-12);
        assert!((s.rms - (30f64 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(Summary::of(&[f32::NAN]), None);
        assert_eq!(mean_sd([].into_iter()), (0.0, 0.0));
    }
}

/// How far a trace ranges, robust to its offset, spikes and flat stretches: the distance from
/// its 2nd to its 98th percentile over the finite samples; `None` without any, or for a flat
/// trace.
pub fn robust_spread(x: &[f32]) -> Option<f32> {
    let mut v: Vec<f32> = x.iter().copied().filter(|v| v.is_finite()).collect();
    if v.len() < 2 {
        return None;
    }
    let at = |v: &mut Vec<f32>, q: f64| {
        let k = ((v.len() - 1) as f64 * q).round() as usize;
        *v.select_nth_unstable_by(k, f32::total_cmp).1
    };
    let spread = at(&mut v, 0.98) - at(&mut v, 0.02);
    (spread > 0.0).then_some(spread)
}

#[cfg(test)]
mod spread_tests {
    use super::robust_spread;

    #[test]
    fn the_spread_ignores_offsets_and_rare_spikes() {
        let x: Vec<f32> = (0..1000)
            .map(|i| {
                -2000.0 + (i as f32 * 0.05).sin() * 10.0 + if i % 400 == 7 { 1e4 } else { 0.0 }
            })
            .collect();
        let s = robust_spread(&x).unwrap();
        assert!((s - 20.0).abs() < 0.5, "{s}");
        assert_eq!(robust_spread(&[5.0; 10]), None);
        assert_eq!(robust_spread(&[f32::NAN, 1.0]), None);
    }
}
