//! The channels of a blink removal: which detect (EOG, frontal pairs) and which are kept.

use super::*;
use crate::recording::channel::is_eog;

/// The frontal derivations the thesis recommends, in 10-20 names (after `electrode_name`).
pub const FRONTAL_PAIRS: [(&str, &str); 4] =
    [("FP1", "F3"), ("FP1", "F7"), ("FP2", "F4"), ("FP2", "F8")];
/// Used when none of `FRONTAL_PAIRS` exists: midline and 10-10 anterior-frontal sites.
pub const FALLBACK_PAIRS: [(&str, &str); 7] = [
    ("FPZ", "FZ"),
    ("FPZ", "F3"),
    ("FPZ", "F4"),
    ("AF3", "F3"),
    ("AF4", "F4"),
    ("AF7", "F7"),
    ("AF8", "F8"),
];

/// The channels of a blink removal: ICA runs on all of them; detection on `derivations`
/// (anode, optional cathode, indices into the channels); `keep[i]` channels are not changed;
/// `eog[i]` says channel `i` is an EOG channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Channels {
    pub labels: Vec<String>,
    pub derivations: Vec<(usize, Option<usize>)>,
    pub keep: Vec<bool>,
    pub eog: Vec<bool>,
}

impl Channels {
    /// The EOG channels (vertical first, see `detection_eog`) and the frontal pairs present
    /// among `labels` (`FRONTAL_PAIRS`, else `FALLBACK_PAIRS`), or the named ones: each entry
    /// a label or "A-B" of two labels. `eog` flags the EOG channels by their channel type
    /// (`None`: by label). `keep` names channels to leave as they are; by default EOG channels.
    pub fn resolve(
        labels: &[String],
        eog: Option<&[bool]>,
        detect: Option<&[String]>,
        keep: Option<&[String]>,
    ) -> Result<Self, BlinkError> {
        let eog: Vec<bool> = match eog {
            Some(flags) if flags.len() == labels.len() => flags.to_vec(),
            _ => labels.iter().map(|l| is_eog(l)).collect(),
        };
        let find = |name: &str| -> Option<usize> {
            let exact = labels
                .iter()
                .position(|l| l.trim().eq_ignore_ascii_case(name.trim()));
            exact.or_else(|| {
                let want = electrode_name(name);
                labels.iter().position(|l| electrode_name(l) == want)
            })
        };
        let derivations = match detect {
            Some(names) => names
                .iter()
                .map(|n| {
                    if let Some(i) = find(n) {
                        return Ok((i, None));
                    }
                    match n.split_once('-') {
                        Some((a, b)) => match (find(a), find(b)) {
                            (Some(a), Some(b)) => Ok((a, Some(b))),
                            _ => Err(BlinkError::UnknownChannel(n.clone())),
                        },
                        None => Err(BlinkError::UnknownChannel(n.clone())),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => {
                let present = |pairs: &[(&str, &str)]| -> Vec<(usize, Option<usize>)> {
                    let by_name = |n: &str| labels.iter().position(|l| electrode_name(l) == n);
                    (pairs.iter())
                        .filter_map(|(a, b)| Some((by_name(a)?, Some(by_name(b)?))))
                        .collect()
                };
                let mut frontal = present(&FRONTAL_PAIRS);
                if frontal.is_empty() {
                    frontal = present(&FALLBACK_PAIRS);
                }
                let detecting = detection_eog(labels, &eog);
                (detecting.iter().map(|&i| (i, None)).chain(frontal)).collect()
            }
        };
        if derivations.is_empty() {
            return Err(BlinkError::NoFrontal {
                labels: summarize(labels),
            });
        }
        let keep = match keep {
            Some(names) => {
                let mut k = vec![false; labels.len()];
                for n in names.iter().filter(|n| !n.trim().is_empty()) {
                    k[find(n).ok_or_else(|| BlinkError::UnknownChannel(n.clone()))?] = true;
                }
                k
            }
            None => eog.clone(),
        };
        Ok(Channels {
            labels: labels.to_vec(),
            derivations,
            keep,
            eog,
        })
    }

    /// "FP1-F3" style names of the derivations.
    pub fn derivation_names(&self) -> Vec<String> {
        (self.derivations.iter())
            .map(|&(a, b)| match b {
                Some(b) => format!("{}-{}", self.labels[a], self.labels[b]),
                None => self.labels[a].clone(),
            })
            .collect()
    }
}

/// Which way an EOG channel's label says it measures: `Some(true)` vertical, `Some(false)`
/// horizontal, `None` unsaid (EOG1, LOC: blinks show on it all the same).
pub(super) fn eog_is_vertical(label: &str) -> Option<bool> {
    let l: String = (label.to_ascii_uppercase().chars())
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let says = |a: &str, b: &str, c: &str| l.contains(a) || l.contains(b) || l == c;
    if says("VEOG", "EOGV", "VEO") {
        Some(true)
    } else if says("HEOG", "EOGH", "HEO") {
        Some(false)
    } else {
        None
    }
}

/// The EOG channels blink detection uses: the vertical ones where a label says so, else
/// every EOG channel not labelled horizontal (a horizontal EOG shows saccades, hardly blinks).
pub fn detection_eog(labels: &[String], is_eog: &[bool]) -> Vec<usize> {
    let eog: Vec<usize> = (0..labels.len()).filter(|&i| is_eog[i]).collect();
    let vertical: Vec<usize> = (eog.iter().copied())
        .filter(|&i| eog_is_vertical(&labels[i]) == Some(true))
        .collect();
    if !vertical.is_empty() {
        return vertical;
    }
    (eog.into_iter())
        .filter(|&i| eog_is_vertical(&labels[i]).is_none())
        .collect()
}

pub(super) fn summarize(labels: &[String]) -> String {
    let shown: Vec<&str> = labels.iter().take(12).map(String::as_str).collect();
    let more = labels.len().saturating_sub(12);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}
