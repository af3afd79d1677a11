//! ICLabel (Pion-Tonachini et al. 2019) in ede: each component's probabilities of being brain,
//! muscle, eye, heart, line noise, channel noise or other, computed as mne-icalabel 0.10 does
//! (features, network), so that the numbers equal its `label_components(raw, ica, 'iclabel')`.

mod features;
mod net;

pub use features::features;
pub use net::Net;

use super::{Decomposition, IcaData};
use crate::recording::ChannelType;
use crate::recording::electrodes::template_1005_position;

/// The network's three inputs for every component.
pub struct Features {
    /// 32 x 32 scalp images, row-major as mne-icalabel's `topo[:, :, 0, k]`.
    pub topo: Vec<[f32; 1024]>,
    pub psd: Vec<[f32; 100]>,
    pub autocorr: Vec<[f32; 100]>,
}

/// ICLabel's probabilities for every component of `d`, fitted on `data`; or why they cannot
/// be computed (MEG channels, a channel without a position, a rate below 100 Hz).
pub fn label(data: &IcaData, d: &Decomposition) -> Result<Vec<[f64; 7]>, String> {
    Ok(Net::get().classify(&inputs(data, d)?))
}

/// The network's inputs for `d`'s components. Positions: the file's, else MNE's 10-05
/// template by label.
pub fn inputs(data: &IcaData, d: &Decomposition) -> Result<Features, String> {
    if let Some(i) = (data.kinds.iter()).position(|k| *k != ChannelType::Eeg) {
        return Err(format!(
            "ICLabel classifies EEG components; {} is {}",
            data.labels[i],
            data.kinds[i].name()
        ));
    }
    let positions = positions(data)
        .map_err(|l| format!("ICLabel needs every channel's position; {l} has none"))?;
    let r = d.components();
    let weights = &d.mne_unmixing * d.pca_components.rows(0, r);
    features(&weights, &data.data, &positions, data.fs)
}

/// Every fitted channel's position, the file's, else MNE's 10-05 template's by label (the
/// head frame `raw.set_montage('standard_1005')` gives), or the first label with none.
pub fn positions(data: &IcaData) -> Result<Vec<[f64; 3]>, String> {
    (data.positions.iter().zip(&data.labels))
        .map(|(p, l)| {
            p.filter(|p| p.iter().all(|v| v.is_finite()))
                .or_else(|| template_1005_position(l))
                .ok_or_else(|| l.clone())
        })
        .collect()
}

/// ICLabel's seven classes, in its order.
pub const CLASSES: [&str; 7] = [
    "brain",
    "muscle artifact",
    "eye blink",
    "heart beat",
    "line noise",
    "channel noise",
    "other",
];

/// The most probable class of probabilities `p`.
pub fn top_class(p: &[f64; 7]) -> usize {
    (0..7).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap_or(6)
}

/// Short names for the classes, as `--iclabel-marks` takes them and the grid shows them.
pub const SHORT: [&str; 7] = [
    "brain", "muscle", "eye", "heart", "line", "channel", "other",
];

/// The probability at or above which a class marks a component, per class (`None`: never).
/// Default: muscle and eye at 0.9, as EEGLAB's tutorial flags components (`pop_icflag`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Thresholds(pub [Option<f64>; 7]);

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds([None, Some(0.9), Some(0.9), None, None, None, None])
    }
}

impl Thresholds {
    /// The components some class marks, ascending.
    pub fn marked(&self, probabilities: &[[f64; 7]]) -> Vec<usize> {
        (0..probabilities.len())
            .filter(|&k| self.mark(&probabilities[k]).is_some())
            .collect()
    }

    /// The most probable class at or above its threshold, with its probability.
    pub fn mark(&self, p: &[f64; 7]) -> Option<(usize, f64)> {
        (0..7)
            .filter(|&c| self.0[c].is_some_and(|t| p[c] >= t))
            .map(|c| (c, p[c]))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

impl std::fmt::Display for Thresholds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set: Vec<String> = (0..7)
            .filter_map(|c| self.0[c].map(|t| format!("{}={t}", SHORT[c])))
            .collect();
        if set.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&set.join(","))
        }
    }
}

impl std::str::FromStr for Thresholds {
    type Err = String;

    /// `eye=0.9,muscle=0.8` (classes by their short names) or `none`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut t = Thresholds([None; 7]);
        if s.trim() == "none" {
            return Ok(t);
        }
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?}: expected CLASS=PROBABILITY"))?;
            let c = (SHORT.iter())
                .position(|s| s.eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| format!("{name:?} is not one of {}", SHORT.join(", ")))?;
            let v: f64 = (value.trim().parse().ok())
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| format!("{item:?}: the probability must be between 0 and 1"))?;
            t.0[c] = Some(v);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_and_mark() {
        let t: Thresholds = "eye=0.8, heart=0.5".parse().unwrap();
        assert_eq!(t.to_string(), "eye=0.8,heart=0.5");
        let p = [
            [0.1, 0.0, 0.85, 0.05, 0.0, 0.0, 0.0],
            [0.9, 0.0, 0.05, 0.05, 0.0, 0.0, 0.0],
        ];
        assert_eq!(t.marked(&p), vec![0]);
        assert_eq!(t.mark(&p[0]), Some((2, 0.85)));
        assert_eq!(
            "none".parse::<Thresholds>().unwrap().marked(&p),
            Vec::<usize>::new()
        );
        assert!("eye=1.5".parse::<Thresholds>().is_err());
        assert!("blink=0.5".parse::<Thresholds>().is_err());
        assert_eq!(Thresholds::default().to_string(), "muscle=0.9,eye=0.9");
    }
}
