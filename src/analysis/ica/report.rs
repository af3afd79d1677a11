//! A fitted decomposition with its judgements, as one job gives them to the CLI, the ICA tab
//! and Python: the data, the decomposition, the EOG/ECG scores, the components marked, and
//! the labels file (`ede ica --labels`).

use serde::Serialize;
use serde_json::json;

use super::iclabel::{self, CLASSES, SHORT, Thresholds};
use super::marks::{ArtifactScores, artifact_channels, artifact_scores};
use super::muscle::{THRESHOLD as MUSCLE_THRESHOLD, muscle_scores};
use super::{Decomposition, IcaData, IcaJobError, IcaSettings, decompose};
use crate::analysis::Backend;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::Reference;
use crate::gpu::GpuContext;
use crate::recording::{ChannelType, Recording};

/// One fit of a recording.
pub struct Fitted {
    /// Shared: a refit of the same data (the tab's) does not copy it.
    pub data: std::sync::Arc<IcaData>,
    pub decomposition: Decomposition,
    pub scores: Vec<ArtifactScores>,
    /// ICLabel's probabilities per component, or why there are none.
    pub iclabel: Result<Vec<[f64; 7]>, String>,
    /// Seconds the decomposition took (reading and scoring aside), and ICLabel.
    pub seconds: f64,
    pub label_seconds: f64,
}

impl Fitted {
    /// Reads `rec` under `reference` and `filter`, decomposes it and scores the components
    /// against its EOG and ECG channels.
    pub fn run(
        rec: &Recording,
        (reference, filter): (&Reference, &DisplayFilter),
        settings: &IcaSettings,
        backend: (Backend, Option<&GpuContext>),
    ) -> Result<Fitted, IcaJobError> {
        let data = std::sync::Arc::new(IcaData::load(rec, reference, filter)?);
        let started = std::time::Instant::now();
        let decomposition = decompose(&data, settings, backend, None)?;
        let seconds = started.elapsed().as_secs_f64();
        Fitted::judged(rec, data, decomposition, seconds)
    }

    /// `decomposition` of `data` with its EOG/ECG scores and ICLabel's probabilities.
    pub fn judged(
        rec: &Recording,
        data: std::sync::Arc<IcaData>,
        decomposition: Decomposition,
        seconds: f64,
    ) -> Result<Fitted, IcaJobError> {
        let scores = Fitted::score(rec, &data, &decomposition)?;
        let started = std::time::Instant::now();
        let iclabel = iclabel::label(&data, &decomposition);
        Ok(Fitted {
            label_seconds: started.elapsed().as_secs_f64(),
            data,
            decomposition,
            scores,
            iclabel,
            seconds,
        })
    }

    /// The EOG/ECG scores of `d`'s components over the whole of `data`, then the muscle
    /// score over its good spans (positions: the file's, else the 10-05 template's, for EEG).
    pub fn score(
        rec: &Recording,
        data: &IcaData,
        d: &Decomposition,
    ) -> Result<Vec<ArtifactScores>, IcaJobError> {
        let channels = artifact_channels(rec, data)?;
        let all: Vec<usize> = (0..d.components()).collect();
        let whole = d.sources(&all, &data.data);
        let mut out = match channels.is_empty() {
            true => Vec::new(),
            false => artifact_scores(&whole, &channels, data.fs),
        };
        let good = match data.fitted() {
            std::borrow::Cow::Borrowed(_) => whole,
            std::borrow::Cow::Owned(x) => d.sources(&all, &x),
        };
        let eeg = data.kinds.iter().all(|k| *k == ChannelType::Eeg);
        let positions = eeg.then(|| iclabel::positions(data).ok()).flatten();
        let muscle = muscle_scores(
            &d.mixing,
            &good,
            d.fs,
            positions.as_deref(),
            MUSCLE_THRESHOLD,
        );
        if let Some(m) = muscle {
            out.push(ArtifactScores {
                channel: "muscle".into(),
                kind: "muscle",
                scores: m.scores,
                marked: m.marked,
            });
        }
        Ok(out)
    }

    /// The components the EOG and ECG scores or ICLabel's classes mark, ascending.
    pub fn auto_excluded(&self, thresholds: &Thresholds) -> Vec<usize> {
        let labels = self.iclabel.as_deref().unwrap_or_default();
        auto_excluded(&self.scores, labels, thresholds)
    }
}

/// The union of the marks of `scores` and of `thresholds` on ICLabel's `labels`, ascending.
pub fn auto_excluded(
    scores: &[ArtifactScores],
    labels: &[[f64; 7]],
    thresholds: &Thresholds,
) -> Vec<usize> {
    let mut all: Vec<usize> = scores.iter().flat_map(|s| s.marked.clone()).collect();
    all.extend(thresholds.marked(labels));
    all.sort_unstable();
    all.dedup();
    all
}

/// MNE's `ICA.labels_`: per kind the components marked by any channel ("eog": [0]), and per
/// channel ("eog/0/EOG1": [0]), as `find_bads_eog` leaves them, and "muscle" as
/// `find_bads_muscle` does; then each component under its
/// most probable ICLabel class as mne-icalabel's `label_components` adds them ("brain",
/// "muscle", "eog", "ecg", "line_noise", "ch_noise", "other").
pub fn mne_labels(
    scores: &[ArtifactScores],
    iclabel: Option<&[[f64; 7]]>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    for kind in ["eog", "ecg", "muscle"] {
        let of: Vec<&ArtifactScores> = scores.iter().filter(|s| s.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let mut union: Vec<usize> = of.iter().flat_map(|s| s.marked.clone()).collect();
        union.sort_unstable();
        union.dedup();
        out.insert(kind.into(), json!(union));
        // find_bads_muscle leaves only the union; find_bads_eog/ecg one list per channel too.
        for (k, s) in of.iter().enumerate().filter(|_| kind != "muscle") {
            out.insert(format!("{kind}/{k}/{}", s.channel), json!(s.marked));
        }
    }
    const MNE: [&str; 7] = [
        "brain",
        "muscle",
        "eog",
        "ecg",
        "line_noise",
        "ch_noise",
        "other",
    ];
    for (k, p) in iclabel.unwrap_or_default().iter().enumerate() {
        let class = iclabel::top_class(p);
        let list = out.entry(MNE[class]).or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut()
            && !list.contains(&json!(k))
        {
            list.push(json!(k));
        }
    }
    out
}

/// The labels file: `{"classes": [7 names], "components": [{"index", "explained_variance",
/// "iclabel", "excluded", ...}], ...}`. `iclabel` is null for every component where ICLabel
/// cannot run (MEG, a channel without a position, a rate below 100 Hz); `iclabel_error` says
/// why.
#[derive(Serialize)]
pub struct LabelsFile<'a> {
    pub classes: [&'static str; 7],
    pub components: Vec<ComponentLabels>,
    pub channels: &'a [String],
    pub sampling_rate_hz: f64,
    pub method: String,
    pub reference: String,
    pub filter: String,
    pub iterations: usize,
    pub converged: bool,
    pub fit_seconds: f64,
    pub artifact_scores: &'a [ArtifactScores],
    pub iclabel_error: Option<&'a str>,
    pub iclabel_seconds: f64,
    /// The classes and probabilities that mark components (`--iclabel-marks`).
    pub iclabel_marks: String,
}

#[derive(Serialize)]
pub struct ComponentLabels {
    pub index: usize,
    pub explained_variance: f64,
    pub iclabel: Option<[f64; 7]>,
    pub excluded: bool,
    /// What marks it: the EOG/ECG channels whose correlation does, and "ICLabel CLASS" where
    /// a class's probability reaches its threshold.
    pub marked_by: Vec<String>,
}

impl Fitted {
    pub fn labels_file<'a>(
        &'a self,
        excluded: &[usize],
        thresholds: &Thresholds,
    ) -> LabelsFile<'a> {
        let d = &self.decomposition;
        let labels = self.iclabel.as_deref().ok();
        LabelsFile {
            classes: CLASSES,
            components: (0..d.components())
                .map(|c| {
                    let p = labels.map(|l| l[c]);
                    let mut marked_by: Vec<String> = (self.scores.iter())
                        .filter(|s| s.marked.contains(&c))
                        .map(|s| s.channel.clone())
                        .collect();
                    if let Some((class, _)) = p.and_then(|p| thresholds.mark(&p)) {
                        marked_by.push(format!("ICLabel {}", SHORT[class]));
                    }
                    ComponentLabels {
                        index: c,
                        explained_variance: d.explained_variance[c],
                        iclabel: p,
                        excluded: excluded.contains(&c),
                        marked_by,
                    }
                })
                .collect(),
            channels: &d.labels,
            sampling_rate_hz: d.fs,
            method: d.settings.describe(),
            reference: self.data.reference.to_string(),
            filter: self.data.filter.describe(),
            iterations: d.iterations,
            converged: d.converged,
            fit_seconds: self.seconds,
            artifact_scores: &self.scores,
            iclabel_error: self.iclabel.as_ref().err().map(String::as_str),
            iclabel_seconds: self.label_seconds,
            iclabel_marks: thresholds.to_string(),
        }
    }
}
