//! The montages ede ships, made as data for a recording: as recorded, average, linked
//! mastoids, the ACNS bipolar montages (double banana, transverse, circumferential), a Hjorth
//! Laplacian from the electrodes' positions, and the frontal pairs of blink review.

use serde::{Deserialize, Serialize};

use super::{DerivationSpec, Minus, Montage, mastoids};
use crate::recording::electrodes::{electrode_label, electrode_position};
use crate::recording::{ChannelType, Recording};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BuiltIn {
    AsRecorded,
    /// Each EEG channel against the average of the good EEG channels.
    #[serde(alias = "CommonAverage")]
    Average,
    LinkedMastoids,
    /// The longitudinal bipolar "double banana".
    DoubleBanana,
    Transverse,
    /// The ring around the head (the "hatband").
    Circumferential,
    /// Each EEG electrode against the mean of its four nearest neighbours (Hjorth).
    Laplacian,
    /// Frontal pairs FP1-F3, FP1-F7, FP2-F4, FP2-F8 (blink and frontal slowing review).
    FrontalPairs,
}

const DOUBLE_BANANA: [(&str, &str); 18] = [
    ("Fp1", "F7"),
    ("F7", "T3"),
    ("T3", "T5"),
    ("T5", "O1"),
    ("Fp2", "F8"),
    ("F8", "T4"),
    ("T4", "T6"),
    ("T6", "O2"),
    ("Fp1", "F3"),
    ("F3", "C3"),
    ("C3", "P3"),
    ("P3", "O1"),
    ("Fp2", "F4"),
    ("F4", "C4"),
    ("C4", "P4"),
    ("P4", "O2"),
    ("Fz", "Cz"),
    ("Cz", "Pz"),
];

/// ACNS guideline 3's transverse bipolar montage, front to back, right to left.
const TRANSVERSE: [(&str, &str); 18] = [
    ("F7", "Fp1"),
    ("Fp1", "Fp2"),
    ("Fp2", "F8"),
    ("F7", "F3"),
    ("F3", "Fz"),
    ("Fz", "F4"),
    ("F4", "F8"),
    ("T3", "C3"),
    ("C3", "Cz"),
    ("Cz", "C4"),
    ("C4", "T4"),
    ("T5", "P3"),
    ("P3", "Pz"),
    ("Pz", "P4"),
    ("P4", "T6"),
    ("T5", "O1"),
    ("O1", "O2"),
    ("O2", "T6"),
];

const CIRCUMFERENTIAL: [(&str, &str); 10] = [
    ("Fp1", "F7"),
    ("F7", "T3"),
    ("T3", "T5"),
    ("T5", "O1"),
    ("O1", "O2"),
    ("O2", "T6"),
    ("T6", "T4"),
    ("T4", "F8"),
    ("F8", "Fp2"),
    ("Fp2", "Fp1"),
];

const FRONTAL_PAIRS: [(&str, &str); 4] =
    [("Fp1", "F3"), ("Fp1", "F7"), ("Fp2", "F4"), ("Fp2", "F8")];

/// Neighbours of a Hjorth Laplacian.
const LAPLACIAN_NEIGHBOURS: usize = 4;

impl BuiltIn {
    pub const ALL: [BuiltIn; 8] = [
        BuiltIn::AsRecorded,
        BuiltIn::Average,
        BuiltIn::LinkedMastoids,
        BuiltIn::DoubleBanana,
        BuiltIn::Transverse,
        BuiltIn::Circumferential,
        BuiltIn::Laplacian,
        BuiltIn::FrontalPairs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BuiltIn::AsRecorded => "As recorded",
            BuiltIn::Average => "Average reference",
            BuiltIn::LinkedMastoids => "Linked mastoids",
            BuiltIn::DoubleBanana => "Bipolar: double banana",
            BuiltIn::Transverse => "Bipolar: transverse",
            BuiltIn::Circumferential => "Bipolar: circumferential",
            BuiltIn::Laplacian => "Laplacian (4 nearest)",
            BuiltIn::FrontalPairs => "Bipolar: frontal pairs",
        }
    }

    /// The built-in montage of this name (as `name` writes it, or the variant's name).
    pub fn from_name(name: &str) -> Option<BuiltIn> {
        let key = |s: &str| {
            s.chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase()
        };
        let want = key(name);
        BuiltIn::ALL.into_iter().find(|b| {
            key(b.name()) == want
                || key(&format!("{b:?}")) == want
                || key(b.name()).ends_with(&want) && want.len() >= 6
        })
    }

    /// Every channel as recorded (a recording without channels gives an empty montage).
    pub fn as_recorded(rec: &Recording) -> Montage {
        BuiltIn::AsRecorded.montage(rec).unwrap_or(Montage {
            name: BuiltIn::AsRecorded.name().into(),
            derivations: Vec::new(),
        })
    }

    /// The montage for `rec`, or `None` when the recording lacks what it needs (fewer than
    /// two pairs of a bipolar montage, no mastoids, no EEG).
    pub fn montage(self, rec: &Recording) -> Option<Montage> {
        let eeg: Vec<usize> = (0..rec.signals.len())
            .filter(|&i| rec.signals[i].kind == ChannelType::Eeg)
            .collect();
        let others = || {
            (0..rec.signals.len())
                .filter(|&i| rec.signals[i].kind != ChannelType::Eeg)
                .map(|i| recorded(rec, i))
        };
        let derivations: Vec<DerivationSpec> = match self {
            BuiltIn::AsRecorded => (0..rec.signals.len()).map(|i| recorded(rec, i)).collect(),
            BuiltIn::Average => {
                // The scalp electrodes against their mean; whatever else the file types EEG
                // (polygraphic inputs, DC, ears) as recorded, after them.
                let scalp = rec.scalp_electrodes();
                if scalp.len() < 3 {
                    return None;
                }
                let rest = (eeg.iter().filter(|i| !scalp.contains(i))).map(|&i| recorded(rec, i));
                scalp
                    .iter()
                    .map(|&i| referred(rec, i, "AVG", Minus::Average))
                    .chain(rest)
                    .chain(others())
                    .collect()
            }
            BuiltIn::LinkedMastoids => {
                let pair = mastoids(rec)?;
                eeg.iter()
                    .filter(|i| !pair.contains(i))
                    .map(|&i| referred(rec, i, "M", Minus::Mastoids))
                    .chain(others())
                    .collect()
            }
            BuiltIn::DoubleBanana => bipolar(rec, &DOUBLE_BANANA)?,
            BuiltIn::Transverse => bipolar(rec, &TRANSVERSE)?,
            BuiltIn::Circumferential => bipolar(rec, &CIRCUMFERENTIAL)?,
            BuiltIn::FrontalPairs => bipolar(rec, &FRONTAL_PAIRS)?,
            BuiltIn::Laplacian => laplacian(rec, &eeg)?,
        };
        (!derivations.is_empty()).then(|| Montage {
            name: self.name().to_string(),
            derivations,
        })
    }
}

fn recorded(rec: &Recording, i: usize) -> DerivationSpec {
    let l = &rec.signals[i].label;
    DerivationSpec::new(l.clone(), l.clone(), Minus::None)
}

fn referred(rec: &Recording, i: usize, suffix: &str, minus: Minus) -> DerivationSpec {
    let l = &rec.signals[i].label;
    DerivationSpec::new(format!("{}-{suffix}", l.trim()), l.clone(), minus)
}

/// Every pair, labelled in the electrode names the file uses ("T7-P7" where it has T7 and
/// P7, "FP1-F7" where it writes FP1); `None` when fewer than two fit. Pairs the recording
/// cannot make stay in, under the template's names, so that `resolve` says which are left out.
fn bipolar(rec: &Recording, pairs: &[(&str, &str)]) -> Option<Vec<DerivationSpec>> {
    let mut fits = 0;
    let v: Vec<DerivationSpec> = pairs
        .iter()
        .filter_map(|&(a, b)| {
            let found = (super::find_channel(rec, a)).zip(super::find_channel(rec, b));
            Some(match found {
                // A pair at two rates cannot be subtracted: left out as before.
                Some((pa, pb)) if rec.signals[pa].fs != rec.signals[pb].fs => return None,
                Some((pa, pb)) => {
                    fits += 1;
                    let name = |i: usize| electrode_label(&rec.signals[i].label).to_string();
                    DerivationSpec::new(
                        format!("{}-{}", name(pa), name(pb)),
                        rec.signals[pa].label.clone(),
                        Minus::Channel(rec.signals[pb].label.clone()),
                    )
                }
                None => DerivationSpec::new(format!("{a}-{b}"), a, Minus::Channel(b.into())),
            })
        })
        .collect();
    (fits >= pairs.len().min(2)).then_some(v)
}

/// Each EEG channel with a position (the file's, else its 10-20/10-10 name's) against the mean
/// of its nearest good neighbours of the same rate.
fn laplacian(rec: &Recording, eeg: &[usize]) -> Option<Vec<DerivationSpec>> {
    let placed: Vec<(usize, [f64; 3])> = eeg
        .iter()
        .filter_map(|&i| {
            let s = &rec.signals[i];
            let p = s
                .position
                .map(unit)
                .or_else(|| electrode_position(&s.label))?;
            Some((i, p))
        })
        .collect();
    let derivations: Vec<DerivationSpec> = placed
        .iter()
        .filter_map(|&(i, p)| {
            let mut near: Vec<(f64, usize)> = placed
                .iter()
                .filter(|&&(j, _)| {
                    j != i && !rec.signals[j].bad && rec.signals[j].fs == rec.signals[i].fs
                })
                .map(|&(j, q)| (dist2(p, q), j))
                .collect();
            near.sort_by(|a, b| a.0.total_cmp(&b.0));
            near.truncate(LAPLACIAN_NEIGHBOURS);
            (near.len() == LAPLACIAN_NEIGHBOURS).then(|| {
                DerivationSpec::new(
                    format!("{}-Lap", rec.signals[i].label.trim()),
                    rec.signals[i].label.clone(),
                    Minus::Mean(
                        near.iter()
                            .map(|&(_, j)| rec.signals[j].label.clone())
                            .collect(),
                    ),
                )
            })
        })
        .collect();
    (!derivations.is_empty()).then_some(derivations)
}

/// A position scaled onto the unit sphere (files give metres; only directions matter here).
fn unit(p: [f64; 3]) -> [f64; 3] {
    let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    if n > 0.0 { p.map(|v| v / n) } else { p }
}

fn dist2(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3).map(|k| (a[k] - b[k]).powi(2)).sum()
}
