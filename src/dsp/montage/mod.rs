//! Montages as data: a montage is a list of derivations `plus - minus`, where minus is nothing,
//! a channel, the mean of several (a Hjorth Laplacian is `C3 - [FC1, FC5, CP1, CP5]`), the
//! average of the good channels of the plus channel's type, or the mastoids. A reference
//! (average, linked mastoids, any channels) re-references the recorded EEG channels first, as
//! MNE-Python's `set_eeg_reference` does; other channel types are never re-referenced.
//!
//! The browser, `ede export` and the analyses' picks all go through `resolve`, which turns a
//! montage and a reference into recorded channels and weights: every derivation is
//! `x[plus] - sum(w * x[c])`. Built-in montages are the same data (`builtin`), and EDFbrowser's
//! `.mtg` files are read into it (`mtg`).

pub mod apply;
pub mod builtin;
pub mod mtg;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dsp::spline::BadInterpolation;
use crate::recording::electrodes::electrode_name;
use crate::recording::{ChannelType, Recording};

pub use apply::{derive, derive_filtered};
pub use builtin::BuiltIn;

/// A named list of derivations, as saved in the user's settings and in shared JSON files:
/// `{"name", "derivations": [{"label", "plus", "minus"}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Montage {
    pub name: String,
    pub derivations: Vec<DerivationSpec>,
}

impl Montage {
    /// A montage file: `.mtg` as EDFbrowser writes it (what does not map is said in the
    /// second value), anything else as ede's JSON.
    pub fn load(path: &std::path::Path) -> Result<(Montage, Vec<String>), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let context = |e: String| format!("{}: {e}", path.display());
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("mtg"))
        {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            let m = mtg::read(&text, &name).map_err(context)?;
            return Ok((m.montage, m.left_out));
        }
        let m: Montage = serde_json::from_str(&text).map_err(|e| context(e.to_string()))?;
        if m.derivations.is_empty() {
            return Err(context("the montage has no derivations".into()));
        }
        Ok((m, Vec::new()))
    }

    /// As ede's JSON, pretty-printed (to share, or to keep in the settings).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// One trace of a montage, by channel labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DerivationSpec {
    pub label: String,
    pub plus: String,
    #[serde(default, skip_serializing_if = "Minus::is_none")]
    pub minus: Minus,
    /// The trace's colour (sRGB); the channel type's colour when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colour: Option<[u8; 3]>,
}

impl DerivationSpec {
    pub fn new(label: impl Into<String>, plus: impl Into<String>, minus: Minus) -> Self {
        DerivationSpec {
            label: label.into(),
            plus: plus.into(),
            minus,
            colour: None,
        }
    }
}

/// What a derivation subtracts from its plus channel. In JSON: absent or `null` (nothing), a
/// label, a list of labels (their mean), `"average"` or `"mastoids"`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Minus {
    #[default]
    None,
    Channel(String),
    Mean(Vec<String>),
    /// The mean of the good channels of the plus channel's type and rate.
    Average,
    /// The mean of the mastoid (or earlobe) pair the file has: A1/A2, M1/M2 or TP9/TP10.
    Mastoids,
}

impl Minus {
    pub fn is_none(&self) -> bool {
        *self == Minus::None
    }

    /// How it is written in a label or a menu: `C3`, `[FC1, FC5]`, `average`, `mastoids`.
    pub fn describe(&self) -> String {
        match self {
            Minus::None => String::new(),
            Minus::Channel(c) => c.clone(),
            Minus::Mean(cs) => format!("[{}]", cs.join(", ")),
            Minus::Average => "average".into(),
            Minus::Mastoids => "mastoids".into(),
        }
    }

    /// Parses what `describe` writes (an empty string is nothing).
    pub fn parse(text: &str) -> Minus {
        let t = text.trim();
        if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let names: Vec<String> = inner
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            return match names.len() {
                0 => Minus::None,
                1 => Minus::Channel(names[0].clone()),
                _ => Minus::Mean(names),
            };
        }
        match t.to_ascii_lowercase().as_str() {
            "" => Minus::None,
            "average" | "avg" => Minus::Average,
            "mastoids" => Minus::Mastoids,
            _ => Minus::Channel(t.to_string()),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum MinusJson {
    One(String),
    Many(Vec<String>),
}

impl Serialize for Minus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Minus::None => s.serialize_none(),
            Minus::Channel(c) => MinusJson::One(c.clone()).serialize(s),
            Minus::Mean(cs) => MinusJson::Many(cs.clone()).serialize(s),
            Minus::Average => s.serialize_str("average"),
            Minus::Mastoids => s.serialize_str("mastoids"),
        }
    }
}

impl<'de> Deserialize<'de> for Minus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<MinusJson>::deserialize(d)? {
            None => Minus::None,
            Some(MinusJson::One(s)) => match s.as_str() {
                "average" => Minus::Average,
                "mastoids" => Minus::Mastoids,
                _ => Minus::Channel(s),
            },
            Some(MinusJson::Many(v)) => Minus::Mean(v),
        })
    }
}

/// How the recorded EEG channels are re-referenced before a montage is applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Reference {
    /// As the amplifier recorded them.
    #[default]
    AsRecorded,
    /// The mean of the good EEG channels of the same rate.
    Average,
    /// Linked mastoids (or earlobes): A1/A2, M1/M2 or TP9/TP10.
    Mastoids,
    /// The mean of these channels.
    Channels(Vec<String>),
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::AsRecorded => f.write_str("as-recorded"),
            Reference::Average => f.write_str("average"),
            Reference::Mastoids => f.write_str("mastoids"),
            Reference::Channels(c) => f.write_str(&c.join(",")),
        }
    }
}

impl FromStr for Reference {
    type Err = String;

    /// `as-recorded` (or `none`), `average`, `mastoids`, or channel labels `CH[,CH...]`.
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "" => return Err("an empty reference: use average, mastoids or channel labels".into()),
            "as-recorded" | "none" | "recorded" => Reference::AsRecorded,
            "average" | "avg" | "car" => Reference::Average,
            "mastoids" | "linked-mastoids" => Reference::Mastoids,
            _ => Reference::Channels(
                s.split(',')
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty())
                    .collect(),
            ),
        })
    }
}

impl Serialize for Reference {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Reference {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A derivation resolved against a recording: `x[plus] - sum(w * x[c])` over `minus`.
#[derive(Debug, Clone, PartialEq)]
pub struct Derivation {
    pub label: String,
    /// The channel whose rate, type and unit the trace has.
    pub plus: usize,
    /// Recorded channels and weights subtracted from `plus`, by channel index; empty for a
    /// channel shown as recorded. Traces that share it (an average) compute it once.
    pub minus: Vec<(usize, f32)>,
    pub colour: Option<[u8; 3]>,
    /// `plus` is a bad electrode replaced by its interpolation from the good ones: the trace
    /// is `-sum(w * x[c])` over `minus` alone (the spline's weights folded in), and `plus`
    /// gives only its rate, type and unit. Lanes draw it as interpolated.
    pub interpolated: bool,
}

impl Derivation {
    /// The channel alone.
    pub fn recorded(rec: &Recording, channel: usize) -> Self {
        Derivation {
            label: rec.signals[channel].label.clone(),
            plus: channel,
            minus: Vec::new(),
            colour: None,
            interpolated: false,
        }
    }

    /// Every recorded channel it reads.
    pub fn sources(&self) -> impl Iterator<Item = usize> + '_ {
        let plus = (!self.interpolated).then_some(self.plus);
        plus.into_iter().chain(self.minus.iter().map(|&(c, _)| c))
    }
}

/// Why a montage or reference cannot be applied to a recording.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MontageError {
    #[error("the recording has no channel {0:?}")]
    MissingChannel(String),
    #[error("no mastoid or earlobe electrodes (A1/A2, M1/M2 or TP9/TP10) in the recording")]
    NoMastoids,
    #[error("{label}: {other} is sampled at {other_fs} Hz, {plus} at {plus_fs} Hz")]
    MixedRates {
        label: String,
        plus: String,
        plus_fs: f64,
        other: String,
        other_fs: f64,
    },
    #[error("no good {0} to average")]
    NothingToAverage(String),
    #[error("montage {0:?}: none of its derivations fits this recording ({1})")]
    NothingFits(String, String),
}

/// A montage resolved against a recording; derivations whose channels the recording lacks are
/// left out and said in `skipped`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub derivations: Vec<Derivation>,
    pub skipped: Vec<String>,
}

/// The channel a montage's label names: the same label (case aside), else the same
/// 10-20/10-10 electrode ("Fp1" finds "EEG Fp1-Ref", "T7" finds "T3").
pub fn find_channel(rec: &Recording, name: &str) -> Option<usize> {
    let name = name.trim();
    rec.signals
        .iter()
        .position(|s| s.label.trim().eq_ignore_ascii_case(name))
        .or_else(|| {
            let want = electrode_name(name);
            rec.signals
                .iter()
                .position(|s| electrode_name(&s.label) == want)
        })
}

/// The mastoid (or earlobe) pair of a recording, the first the file has of A1/A2, M1/M2,
/// TP9/TP10.
pub fn mastoids(rec: &Recording) -> Option<[usize; 2]> {
    [("A1", "A2"), ("M1", "M2"), ("TP9", "TP10")]
        .iter()
        .find_map(|&(l, r)| Some([find_channel(rec, l)?, find_channel(rec, r)?]))
}

/// Linear combinations of recorded channels, keyed by channel index.
type Weights = BTreeMap<usize, f64>;

fn add(into: &mut Weights, from: &Weights, scale: f64) {
    for (&c, &w) in from {
        *into.entry(c).or_insert(0.0) += scale * w;
    }
}

fn mean_of(channels: &[usize]) -> Weights {
    let w = 1.0 / channels.len() as f64;
    channels.iter().map(|&c| (c, w)).collect()
}

/// Resolves `montage` under `reference` (bad channels are the recording's `bad` marks).
pub fn resolve(
    rec: &Recording,
    montage: &Montage,
    reference: &Reference,
) -> Result<Resolved, MontageError> {
    // A reference the recording cannot give is an error of its own, not a missing trace.
    match reference {
        Reference::Channels(names) => {
            for n in names {
                find_channel(rec, n).ok_or_else(|| MontageError::MissingChannel(n.clone()))?;
            }
        }
        Reference::Mastoids => {
            mastoids(rec).ok_or(MontageError::NoMastoids)?;
        }
        _ => {}
    }
    let mut derivations = Vec::new();
    let mut skipped = Vec::new();
    // Worked out once: every average of every derivation asks for them.
    let scalp = rec.scalp_electrodes();
    let interpolation = rec.interpolate_bads.then(|| BadInterpolation::of(rec));
    for spec in &montage.derivations {
        match resolve_one(rec, spec, reference, &scalp, interpolation.as_ref()) {
            Ok(d) => derivations.push(d),
            // A channel the file lacks leaves that trace out; anything else is the montage's
            // or the reference's error, said as is.
            Err(MontageError::MissingChannel(c)) => {
                skipped.push(format!("{}: no channel {c:?}", spec.label))
            }
            // A channel at a rate no scalp electrode shares has no average to take.
            Err(e @ MontageError::NothingToAverage(_)) => {
                skipped.push(format!("{}: {e} at its rate", spec.label))
            }
            Err(e) => return Err(e),
        }
    }
    if derivations.is_empty() && !montage.derivations.is_empty() {
        return Err(MontageError::NothingFits(
            montage.name.clone(),
            skipped.join("; "),
        ));
    }
    Ok(Resolved {
        derivations,
        skipped,
    })
}

fn resolve_one(
    rec: &Recording,
    spec: &DerivationSpec,
    reference: &Reference,
    scalp: &[usize],
    interpolation: Option<&BadInterpolation>,
) -> Result<Derivation, MontageError> {
    let find = |name: &str| {
        find_channel(rec, name).ok_or_else(|| MontageError::MissingChannel(name.to_string()))
    };
    let plus = find(&spec.plus)?;
    let rereferenced = |c: usize| -> Result<Weights, MontageError> {
        // An interpolated bad electrode is the spline's sum of the good ones, and is
        // re-referenced like them.
        let spline = interpolation.and_then(|i| i.weights_of(c));
        let interpolated = spline.is_some();
        let mut w: Weights = match spline {
            Some(weights) => weights.collect(),
            None => Weights::from([(c, 1.0)]),
        };
        // As MNE-Python does, a bad channel is neither in a reference nor re-referenced.
        if rec.signals[c].kind == ChannelType::Eeg && (!rec.signals[c].bad || interpolated) {
            let r = reference_channels(rec, reference, c, scalp)?;
            if !r.is_empty() {
                add(&mut w, &mean_of(&r), -1.0);
            }
        }
        Ok(w)
    };
    let mut weights = rereferenced(plus)?;
    let subtract = |weights: &mut Weights, channels: &[usize]| -> Result<(), MontageError> {
        for &c in channels {
            add(weights, &rereferenced(c)?, -1.0 / channels.len() as f64);
        }
        Ok(())
    };
    match &spec.minus {
        Minus::None => {}
        Minus::Channel(c) => subtract(&mut weights, &[find(c)?])?,
        Minus::Mean(cs) => {
            let cs: Vec<usize> = cs.iter().map(|c| find(c)).collect::<Result<_, _>>()?;
            subtract(&mut weights, &cs)?
        }
        Minus::Average => subtract(&mut weights, &average_group(rec, plus, scalp)?)?,
        Minus::Mastoids => subtract(
            &mut weights,
            &mastoids(rec).ok_or(MontageError::NoMastoids)?,
        )?,
    }
    // minus = e_plus - weights, without the terms that cancel (a bipolar pair under any
    // reference is the pair alone); each channel taken into the plus channel's unit (a mV
    // channel in a uV trace counts a thousand times its number).
    let interpolated = interpolation.is_some_and(|i| i.weights_of(plus).is_some());
    let mut minus = Vec::new();
    for (&c, &w) in &weights {
        let m = if c == plus && !interpolated {
            1.0 - w
        } else {
            -w * rec.unit_factor(c, plus)
        };
        if m.abs() > 1e-9 {
            if rec.signals[c].fs != rec.signals[plus].fs {
                return Err(MontageError::MixedRates {
                    label: spec.label.clone(),
                    plus: rec.signals[plus].label.clone(),
                    plus_fs: rec.signals[plus].fs,
                    other: rec.signals[c].label.clone(),
                    other_fs: rec.signals[c].fs,
                });
            }
            minus.push((c, m as f32));
        }
    }
    Ok(Derivation {
        label: spec.label.clone(),
        plus,
        minus,
        colour: spec.colour,
        interpolated,
    })
}

/// What `average` means for `channel`: for EEG the good ones of the scalp electrodes `scalp`
/// (`Recording::scalp_electrodes`) at its rate, for other types the good channels of its type
/// and rate.
pub fn average_group(
    rec: &Recording,
    channel: usize,
    scalp: &[usize],
) -> Result<Vec<usize>, MontageError> {
    let s = &rec.signals[channel];
    let pool: Vec<usize> = if s.kind == ChannelType::Eeg {
        scalp.to_vec()
    } else {
        (0..rec.signals.len())
            .filter(|&i| rec.signals[i].kind == s.kind)
            .collect()
    };
    let group: Vec<usize> = (pool.into_iter())
        .filter(|&i| rec.signals[i].fs == s.fs && !rec.signals[i].bad)
        .collect();
    if group.is_empty() {
        let what = match s.kind {
            ChannelType::Eeg => "scalp electrodes".to_string(),
            k => format!("{} channels", k.name()),
        };
        return Err(MontageError::NothingToAverage(what));
    }
    Ok(group)
}

/// The channels whose mean `reference` subtracts from EEG channel `channel` (none for as
/// recorded).
fn reference_channels(
    rec: &Recording,
    reference: &Reference,
    channel: usize,
    scalp: &[usize],
) -> Result<Vec<usize>, MontageError> {
    Ok(match reference {
        Reference::AsRecorded => Vec::new(),
        Reference::Average => average_group(rec, channel, scalp)?,
        Reference::Mastoids => mastoids(rec).ok_or(MontageError::NoMastoids)?.to_vec(),
        Reference::Channels(names) => names
            .iter()
            .map(|n| find_channel(rec, n).ok_or_else(|| MontageError::MissingChannel(n.clone())))
            .collect::<Result<_, _>>()?,
    })
}

#[cfg(test)]
mod tests;
