//! Montages: which derived traces the browser shows, each `plus - reference`.

use serde::{Deserialize, Serialize};

use crate::recording::{ChannelType, Recording};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MontageKind {
    AsRecorded,
    CommonAverage,
    /// The longitudinal bipolar "double banana".
    DoubleBanana,
    /// Frontal pairs FP1-F3, FP1-F7, FP2-F4, FP2-F8 (blink and frontal slowing review).
    FrontalPairs,
}

impl MontageKind {
    pub const ALL: [MontageKind; 4] = [
        MontageKind::AsRecorded,
        MontageKind::CommonAverage,
        MontageKind::DoubleBanana,
        MontageKind::FrontalPairs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MontageKind::AsRecorded => "As recorded",
            MontageKind::CommonAverage => "Common average",
            MontageKind::DoubleBanana => "Bipolar: double banana",
            MontageKind::FrontalPairs => "Bipolar: frontal pairs",
        }
    }
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

const FRONTAL_PAIRS: [(&str, &str); 4] =
    [("Fp1", "F3"), ("Fp1", "F7"), ("Fp2", "F4"), ("Fp2", "F8")];

#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    None,
    Channel(usize),
    /// The mean of these channels (common average).
    Average(Vec<usize>),
}

/// One trace of a montage.
#[derive(Debug, Clone, PartialEq)]
pub struct Derivation {
    pub label: String,
    pub plus: usize,
    pub reference: Reference,
}

/// The electrode name of a label: "EEG Fp1-Ref" → "FP1"; 10-10 names map to 10-20 (T7 → T3,
/// T8 → T4, P7 → T5, P8 → T6); "Fc5." style trailing dots are dropped.
pub fn electrode_name(label: &str) -> String {
    let mut s = label.trim().to_ascii_uppercase();
    for prefix in ["EEG ", "EEG:"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest.trim().to_string();
        }
    }
    for suffix in ["-REF", "-LE", "-AVG", "-A1", "-A2", "-M1", "-M2"] {
        if let Some(rest) = s.strip_suffix(suffix) {
            s = rest.to_string();
        }
    }
    let s = s.trim_end_matches('.').to_string();
    match s.as_str() {
        "T7" => "T3".into(),
        "T8" => "T4".into(),
        "P7" => "T5".into(),
        "P8" => "T6".into(),
        _ => s,
    }
}

/// The electrode positions ede ships (assets/electrodes_1010.tsv: an idealized spherical
/// 10-10 model, unit sphere, x right, y front, z up).
const ELECTRODES: &str = include_str!("../../assets/electrodes_1010.tsv");

/// Where a channel's electrode sits, from its label's 10-20/10-10 name; `None` for labels that
/// name no scalp position (EOG, ECG, unknown names).
pub fn electrode_position(label: &str) -> Option<[f64; 3]> {
    let want = electrode_name(label);
    ELECTRODES
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let mut f = line.split('\t');
            let name = f.next()?;
            if electrode_name(name) != want {
                return None;
            }
            let mut xyz = [0.0; 3];
            for v in &mut xyz {
                *v = f.next()?.trim().parse().ok()?;
            }
            Some(xyz)
        })
}

/// The traces of a montage for a recording; `None` when the recording lacks its electrodes.
pub fn derivations(rec: &Recording, kind: MontageKind) -> Option<Vec<Derivation>> {
    let find = |name: &str| {
        let want = electrode_name(name);
        rec.signals
            .iter()
            .position(|s| electrode_name(&s.label) == want)
    };
    let bipolar = |pairs: &[(&str, &str)]| -> Option<Vec<Derivation>> {
        let v: Vec<Derivation> = pairs
            .iter()
            .filter_map(|&(a, b)| {
                let (pa, pb) = (find(a)?, find(b)?);
                (rec.signals[pa].fs == rec.signals[pb].fs).then(|| Derivation {
                    label: format!("{}-{}", a.to_uppercase(), b.to_uppercase()),
                    plus: pa,
                    reference: Reference::Channel(pb),
                })
            })
            .collect();
        (!v.is_empty()).then_some(v)
    };
    match kind {
        MontageKind::AsRecorded => Some(
            (0..rec.signals.len())
                .map(|i| Derivation {
                    label: rec.signals[i].label.clone(),
                    plus: i,
                    reference: Reference::None,
                })
                .collect(),
        ),
        MontageKind::CommonAverage => {
            let eeg: Vec<usize> = (0..rec.signals.len())
                .filter(|&i| rec.signals[i].kind == ChannelType::Eeg)
                .collect();
            // Average only over channels sharing the most common rate.
            let fs = most_common(eeg.iter().map(|&i| rec.signals[i].fs))?;
            let group: Vec<usize> = eeg
                .into_iter()
                .filter(|&i| rec.signals[i].fs == fs)
                .collect();
            if group.len() < 3 {
                return None;
            }
            Some(
                group
                    .iter()
                    .map(|&i| Derivation {
                        label: format!("{}-AVG", rec.signals[i].label),
                        plus: i,
                        reference: Reference::Average(group.clone()),
                    })
                    .collect(),
            )
        }
        MontageKind::DoubleBanana => bipolar(&DOUBLE_BANANA),
        MontageKind::FrontalPairs => bipolar(&FRONTAL_PAIRS),
    }
}

fn most_common(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for v in values {
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, c)) => *c += 1,
            None => counts.push((v, 1)),
        }
    }
    counts.into_iter().max_by_key(|&(_, c)| c).map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn electrode_names_normalise() {
        assert_eq!(electrode_name("EEG Fp1-Ref"), "FP1");
        assert_eq!(electrode_name("T7"), "T3");
        assert_eq!(electrode_name("Fc5."), "FC5");
        let fp1 = electrode_position("EEG Fp1-Ref").unwrap();
        assert!(fp1[1] > 0.9 && fp1[0] < 0.0, "{fp1:?}");
        assert_eq!(electrode_position("P7"), electrode_position("T5"));
        assert!(electrode_position("EOG1").is_none());
    }

    #[test]
    fn demo_montages() {
        let rec = crate::recording::demo::demo_recording();
        assert_eq!(
            derivations(&rec, MontageKind::DoubleBanana).unwrap().len(),
            18
        );
        let pairs = derivations(&rec, MontageKind::FrontalPairs).unwrap();
        let labels: Vec<&str> = pairs.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels, ["FP1-F3", "FP1-F7", "FP2-F4", "FP2-F8"]);
        let avg = derivations(&rec, MontageKind::CommonAverage).unwrap();
        assert_eq!(avg.len(), 19, "the ECG channel is not averaged");
    }
}
