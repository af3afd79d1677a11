//! What a decomposition's components are judged by, besides their maps:
//! - automatic marks from the EOG and ECG channels, as MNE's `find_bads_eog` and
//!   `find_bads_ecg(method="correlation")` make them: each source and the channel band-passed
//!   (1-10 Hz for the eye, 8-16 Hz for the heart), their Pearson correlations z-scored over the
//!   components, and those beyond 3 marked (twice: the second pass without the first's);
//! - one-to-one matching of two decompositions' maps by correlation, so that a refit keeps a
//!   component's place and its mark, and two fits can be compared.

use nalgebra::DMatrix;

use super::{Decomposition, IcaData};
use crate::dsp::filter::{DisplayFilter, zero_phase};
use crate::dsp::ica::Observations;
use crate::recording::{ChannelType, Recording};

/// z-scores beyond this mark a component (MNE's default for both).
pub const THRESHOLD: f64 = 3.0;

/// One criterion's score of every component, and the components it marks: an EOG or ECG
/// channel's correlations (`kind` "eog", "ecg"), or MNE's muscle score (`kind` "muscle",
/// `super::muscle`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ArtifactScores {
    /// The channel's label, or "muscle".
    pub channel: String,
    pub kind: &'static str,
    /// Per component: the Pearson correlation of its source with the channel, both
    /// band-passed, or its muscle score.
    pub scores: Vec<f64>,
    pub marked: Vec<usize>,
}

/// The recording's good EOG and ECG channels at the decomposition's rate, read whole (as long
/// as the fitted channels), under no reference.
pub fn artifact_channels(
    rec: &Recording,
    data: &IcaData,
) -> Result<Vec<(String, ChannelType, Vec<f32>)>, crate::recording::ReadError> {
    let mut out = Vec::new();
    for (i, s) in rec.signals.iter().enumerate() {
        let wanted = matches!(s.kind, ChannelType::Eog | ChannelType::Ecg);
        if !wanted || s.bad || (s.fs - data.fs).abs() > 1e-9 || s.samples < data.data.cols {
            continue;
        }
        let mut x = vec![0.0f32; data.data.cols];
        rec.read(i, 0, &mut x)?;
        out.push((s.label.clone(), s.kind, x));
    }
    Ok(out)
}

/// The scores of every artifact channel against `sources` (all components, the whole run).
pub fn artifact_scores(
    sources: &Observations,
    channels: &[(String, ChannelType, Vec<f32>)],
    fs: f64,
) -> Vec<ArtifactScores> {
    let band = |lo: f32, hi: f32| DisplayFilter {
        highpass: Some(lo),
        lowpass: Some(hi),
        highpass_order: 4,
        lowpass_order: 4,
        ..Default::default()
    };
    let filtered = |x: &[f32], f: &DisplayFilter| {
        let mut x = x.to_vec();
        if f.validate_at(fs).is_ok() {
            zero_phase(&mut x, fs, f);
        }
        x
    };
    let (eye, heart) = (band(1.0, 10.0), band(8.0, 16.0));
    let bands: Vec<Vec<Vec<f32>>> = [eye, heart]
        .iter()
        .map(|f| {
            (0..sources.rows)
                .map(|c| filtered(sources.row(c), f))
                .collect()
        })
        .collect();
    channels
        .iter()
        .map(|(label, kind, x)| {
            let (b, kind) = match kind {
                ChannelType::Ecg => (1, "ecg"),
                _ => (0, "eog"),
            };
            let target = filtered(x, if b == 0 { &eye } else { &heart });
            let scores: Vec<f64> = bands[b].iter().map(|s| pearson(s, &target)).collect();
            ArtifactScores {
                channel: label.clone(),
                kind,
                marked: outliers(&scores, THRESHOLD),
                scores,
            }
        })
        .collect()
}

/// Pearson's r of two equally long series (0 where either is flat).
pub fn pearson(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len().min(b.len()) as f64;
    if n < 2.0 {
        return 0.0;
    }
    let ma = a.iter().map(|&v| v as f64).sum::<f64>() / n;
    let mb = b.iter().map(|&v| v as f64).sum::<f64>() / n;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (x as f64 - ma, y as f64 - mb);
        sab += x * y;
        saa += x * x;
        sbb += y * y;
    }
    if saa > 0.0 && sbb > 0.0 {
        sab / (saa * sbb).sqrt()
    } else {
        0.0
    }
}

/// MNE's `_find_outliers`: |z| > `threshold` over the scores, then again over those left.
pub fn outliers(scores: &[f64], threshold: f64) -> Vec<usize> {
    let mut marked = vec![false; scores.len()];
    for _ in 0..2 {
        let left: Vec<f64> = (scores.iter().zip(&marked))
            .filter(|(_, m)| !**m)
            .map(|(s, _)| *s)
            .collect();
        let n = left.len() as f64;
        if n < 2.0 {
            break;
        }
        let mean = left.iter().sum::<f64>() / n;
        let sd = (left.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n).sqrt();
        if sd <= 0.0 {
            break;
        }
        let mut any = false;
        for (s, m) in scores.iter().zip(marked.iter_mut()) {
            if !*m && ((s - mean) / sd).abs() > threshold {
                *m = true;
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    (0..scores.len()).filter(|&i| marked[i]).collect()
}

/// Pairs of columns of `a` and `b` (maps over the same channels), one to one, greedily by
/// the largest absolute correlation first: (column of a, column of b, |r|).
pub fn match_maps(a: &DMatrix<f64>, b: &DMatrix<f64>) -> Vec<(usize, usize, f64)> {
    let corr = |x: nalgebra::DVectorView<f64>, y: nalgebra::DVectorView<f64>| {
        let (mx, my) = (x.mean(), y.mean());
        let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
        for (u, v) in x.iter().zip(y.iter()) {
            sxy += (u - mx) * (v - my);
            sxx += (u - mx) * (u - mx);
            syy += (v - my) * (v - my);
        }
        if sxx > 0.0 && syy > 0.0 {
            (sxy / (sxx * syy).sqrt()).abs()
        } else {
            0.0
        }
    };
    let mut all: Vec<(usize, usize, f64)> = (0..a.ncols())
        .flat_map(|i| (0..b.ncols()).map(move |j| (i, j)))
        .map(|(i, j)| (i, j, corr(a.column(i), b.column(j))))
        .collect();
    all.sort_by(|x, y| y.2.total_cmp(&x.2));
    let (mut used_a, mut used_b) = (vec![false; a.ncols()], vec![false; b.ncols()]);
    let mut pairs = Vec::new();
    for (i, j, r) in all {
        if !used_a[i] && !used_b[j] {
            used_a[i] = true;
            used_b[j] = true;
            pairs.push((i, j, r));
        }
    }
    pairs
}

/// A match of two maps counts as the same component from this correlation on.
pub const SAME_COMPONENT: f64 = 0.9;

impl Decomposition {
    /// This decomposition with its components in `order` (component k becomes order[k]'s).
    pub fn reordered(&self, order: &[usize]) -> Decomposition {
        Decomposition {
            unmixing: self.unmixing.select_rows(order),
            mixing: self.mixing.select_columns(order),
            mne_unmixing: self.mne_unmixing.select_rows(order),
            explained_variance: order.iter().map(|&c| self.explained_variance[c]).collect(),
            ..self.clone()
        }
    }

    /// The order of this refit's components (order[k]: the component shown at k) that gives
    /// each component matching one of `previous`'s (|r| of the maps at least `SAME_COMPONENT`)
    /// its place; the others follow in their own order. Also, per place, whether it continues
    /// the previous component there.
    pub fn following(&self, previous: &Decomposition) -> (Vec<usize>, Vec<bool>) {
        if previous.labels != self.labels {
            return (
                (0..self.components()).collect(),
                vec![false; self.components()],
            );
        }
        let pairs = match_maps(&previous.mixing, &self.mixing);
        let r = self.components();
        let mut slot: Vec<Option<usize>> = vec![None; r.max(previous.components())];
        let mut placed = vec![false; r];
        for &(old, new, corr) in &pairs {
            if corr >= SAME_COMPONENT && old < r {
                slot[old] = Some(new);
                placed[new] = true;
            }
        }
        let mut rest = (0..r).filter(|&c| !placed[c]);
        let mut order = Vec::with_capacity(r);
        let mut continues = Vec::with_capacity(r);
        for s in slot.iter().take(r) {
            order.push(s.unwrap_or_else(|| rest.next().expect("as many slots as components")));
            continues.push(s.is_some());
        }
        (order, continues)
    }
}

impl ArtifactScores {
    /// The scores of the components in `order` (as `Decomposition::reordered`).
    pub fn reordered(&self, order: &[usize]) -> ArtifactScores {
        ArtifactScores {
            scores: order.iter().map(|&c| self.scores[c]).collect(),
            marked: (0..order.len())
                .filter(|&k| self.marked.contains(&order[k]))
                .collect(),
            ..self.clone()
        }
    }
}
