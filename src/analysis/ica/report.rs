//! A fitted decomposition with its judgements, as one job gives them to the CLI, the ICA tab
//! and Python: the data, the decomposition, the EOG/ECG scores, the components marked, and
//! the labels file (`ede ica --labels`).

use serde::Serialize;

use super::marks::{ArtifactScores, artifact_channels, artifact_scores};
use super::{Decomposition, IcaData, IcaJobError, IcaSettings, decompose};
use crate::analysis::Backend;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::Reference;
use crate::gpu::GpuContext;
use crate::recording::Recording;

/// ICLabel's seven classes, in its order.
pub const ICLABEL_CLASSES: [&str; 7] = [
    "brain",
    "muscle artifact",
    "eye blink",
    "heart beat",
    "line noise",
    "channel noise",
    "other",
];

/// One fit of a recording.
pub struct Fitted {
    /// Shared: a refit of the same data (the tab's) does not copy it.
    pub data: std::sync::Arc<IcaData>,
    pub decomposition: Decomposition,
    pub scores: Vec<ArtifactScores>,
    /// Seconds the decomposition took (reading and scoring aside).
    pub seconds: f64,
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
        let scores = Fitted::score(rec, &data, &decomposition)?;
        Ok(Fitted {
            data,
            decomposition,
            scores,
            seconds,
        })
    }

    /// The EOG/ECG scores of `d`'s components over the whole of `data`.
    pub fn score(
        rec: &Recording,
        data: &IcaData,
        d: &Decomposition,
    ) -> Result<Vec<ArtifactScores>, IcaJobError> {
        let channels = artifact_channels(rec, data)?;
        if channels.is_empty() {
            return Ok(Vec::new());
        }
        let all: Vec<usize> = (0..d.components()).collect();
        Ok(artifact_scores(
            &d.sources(&all, &data.data),
            &channels,
            data.fs,
        ))
    }

    /// The components the EOG and ECG scores mark, ascending.
    pub fn auto_excluded(&self) -> Vec<usize> {
        auto_excluded(&self.scores)
    }
}

/// The union of the marks of `scores`, ascending.
pub fn auto_excluded(scores: &[ArtifactScores]) -> Vec<usize> {
    let mut all: Vec<usize> = scores.iter().flat_map(|s| s.marked.clone()).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// MNE's `ICA.labels_`: per kind the components marked by any channel ("eog": [0]), and per
/// channel ("eog/0/EOG1": [0]), as `find_bads_eog` leaves them.
pub fn mne_labels(scores: &[ArtifactScores]) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    for kind in ["eog", "ecg"] {
        let of: Vec<&ArtifactScores> = scores.iter().filter(|s| s.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let union = auto_excluded(&of.iter().map(|s| (*s).clone()).collect::<Vec<_>>());
        out.insert(kind.into(), serde_json::json!(union));
        for (k, s) in of.iter().enumerate() {
            out.insert(
                format!("{kind}/{k}/{}", s.channel),
                serde_json::json!(s.marked),
            );
        }
    }
    out
}

/// The labels file: `{"classes": [7 names], "components": [{"index", "explained_variance",
/// "iclabel", "excluded", ...}], ...}`. `iclabel` is null: ede does not run the ICLabel
/// network yet, and says so rather than guess.
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
}

#[derive(Serialize)]
pub struct ComponentLabels {
    pub index: usize,
    pub explained_variance: f64,
    pub iclabel: Option<[f64; 7]>,
    pub excluded: bool,
    /// The EOG/ECG channels whose correlation marks it.
    pub marked_by: Vec<String>,
}

impl Fitted {
    pub fn labels_file<'a>(&'a self, excluded: &[usize]) -> LabelsFile<'a> {
        let d = &self.decomposition;
        LabelsFile {
            classes: ICLABEL_CLASSES,
            components: (0..d.components())
                .map(|c| ComponentLabels {
                    index: c,
                    explained_variance: d.explained_variance[c],
                    iclabel: None,
                    excluded: excluded.contains(&c),
                    marked_by: (self.scores.iter())
                        .filter(|s| s.marked.contains(&c))
                        .map(|s| s.channel.clone())
                        .collect(),
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
        }
    }
}
